"""The authentication hand-off in the sans-IO core: NULL with authentication, held input,
timeouts, and the AuthRequest / AuthResult types."""

from __future__ import annotations

import pytest

from tests.test_protocol_helpers import failure, peer_greeting, peer_ready, split_commands
from zmtp.protocol import Connection, HandshakeComplete, MessagesReceived, State, commands
from zmtp.protocol.connection import MAX_HELD_DURING_AUTH
from zmtp.protocol.events import AuthenticationRequested
from zmtp.protocol.mechanism import AuthRequest, AuthResult, NullMechanism


def null_auth(socket_type: str = "PULL", zap_domain: str = "", **kwargs: object) -> Connection:
    mech = NullMechanism(b"", as_server=False, authenticate=True, zap_domain=zap_domain)
    conn = Connection(socket_type, mechanism=mech, **kwargs)  # type: ignore[arg-type]
    conn.data_to_send()
    return conn


def test_null_with_authentication_asks_right_after_the_greeting() -> None:
    conn = null_auth(zap_domain="global")
    (requested,) = conn.receive_data(peer_greeting())
    assert isinstance(requested, AuthenticationRequested)
    assert requested.request == AuthRequest(mechanism="NULL", domain="global")
    assert conn.data_to_send() == b""  # READY waits for the decision (libzmq with a ZAP domain)


def test_null_accepted_sends_ready_and_completes_with_held_input() -> None:
    conn = null_auth()
    conn.receive_data(peer_greeting())
    # The peer's READY and a message arrive while we wait: held, then processed in order.
    assert conn.receive_data(peer_ready("PUSH") + b"\x00\x02hi") == []
    events = conn.complete_authentication(AuthResult.allow("carol", {"X-Role": b"reader"}))
    assert [type(e) for e in events] == [HandshakeComplete, MessagesReceived]
    done = events[0]
    assert isinstance(done, HandshakeComplete)
    assert done.user_id == "carol" and done.properties["X-Role"] == b"reader"
    (ready,) = split_commands(conn.data_to_send())
    assert ready.name == b"READY"
    assert conn.state is State.READY


def test_null_accepted_before_the_peer_ready_completes_later() -> None:
    conn = null_auth()
    conn.receive_data(peer_greeting())
    assert conn.complete_authentication(AuthResult.allow()) == []
    assert conn.state is State.HANDSHAKE
    (done,) = conn.receive_data(peer_ready("PUSH"))
    assert isinstance(done, HandshakeComplete)


@pytest.mark.parametrize(("code", "wire"), [(300, b""), (400, b"400"), (500, b"500")])
def test_null_refused(code: int, wire: bytes) -> None:
    conn = null_auth()
    conn.receive_data(peer_greeting())
    fail = failure(conn.complete_authentication(AuthResult(code, "go away")))
    assert fail.kind == "rejected" and fail.during_handshake
    assert fail.reason == AuthResult(code, "go away").describe()
    assert conn.data_to_send() == (commands.error(wire) if wire else b"")


def test_null_without_authentication_is_unchanged() -> None:
    conn = Connection("PULL")
    conn.data_to_send()
    (done,) = conn.receive_data(peer_greeting() + peer_ready("PUSH"))
    assert isinstance(done, HandshakeComplete) and done.user_id == ""


def test_authenticator_metadata_wins_over_peer_properties() -> None:
    conn = null_auth()
    conn.receive_data(peer_greeting())
    conn.receive_data(peer_ready("PUSH"))
    (done,) = conn.complete_authentication(AuthResult.allow(metadata={"socket-type": b"X"}))
    assert isinstance(done, HandshakeComplete)
    # The type check used the peer's own property; the exposed property is the authenticator's.
    assert done.socket_type == "PUSH" and done.properties["Socket-Type"] == b"X"


def test_held_input_is_bounded() -> None:
    conn = null_auth()
    conn.receive_data(peer_greeting())
    assert conn.receive_data(bytes(MAX_HELD_DURING_AUTH // 2)) == []
    fail = failure(conn.receive_data(bytes(MAX_HELD_DURING_AUTH)))
    assert fail.kind == "protocol" and "while authentication was pending" in fail.reason


def test_handshake_timeout_runs_during_authentication() -> None:
    conn = null_auth(handshake_timeout=2.0, now=0.0)
    conn.receive_data(peer_greeting(), 0.5)
    assert conn.next_deadline() == 2.0
    assert conn.handle_timers(1.9) == []
    fail = failure(conn.handle_timers(2.0))
    assert fail.kind == "timeout"
    assert fail.reason == "handshake timed out (waiting for the authentication decision)"
    assert conn.complete_authentication(AuthResult.allow()) == []  # too late: ignored


def test_completing_without_a_request_is_a_driver_bug() -> None:
    conn = Connection("PULL")
    with pytest.raises(RuntimeError):
        conn.complete_authentication(AuthResult.allow())


def test_bad_input_during_held_processing_fails_cleanly() -> None:
    conn = null_auth()
    conn.receive_data(peer_greeting())
    conn.receive_data(b"\x00\x02hi")  # data before READY: a protocol error once processed
    fail = failure(conn.complete_authentication(AuthResult.allow()))
    assert fail.kind == "protocol" and "before the handshake completed" in fail.reason


# ------------------------------------------------------------------ the types


def test_auth_result_validates_the_status_code() -> None:
    with pytest.raises(ValueError):
        AuthResult(201)
    assert AuthResult().accepted and not AuthResult.deny().accepted
    assert AuthResult.deny("x", 500).status_code == 500
    assert AuthResult(400, "bad").describe() == (
        "authentication refused (400 authentication failure): bad"
    )


def test_auth_request_accessors() -> None:
    plain = AuthRequest("PLAIN", credentials=(b"user\xff", b"pw"))
    assert plain.username == "user\ufffd" and plain.password == "pw" and plain.client_key == b""
    curve = AuthRequest("CURVE", credentials=(bytes(32),))
    assert curve.client_key == bytes(32) and curve.username == "" and curve.password == ""
    null = AuthRequest("NULL")
    assert null.username == null.password == "" and null.client_key == b""
