"""PLAIN at the byte level (RFC 24; docs/libzmq-notes.md#plain), including libzmq's malformed
ERROR."""

from __future__ import annotations

import pytest

from tests.test_mechanism_helpers import plain_pair
from tests.test_protocol_helpers import failure, peer_greeting, split_commands, split_frames
from zmtp.protocol import (
    Connection,
    HandshakeComplete,
    MessagesReceived,
    State,
    commands,
    encode_properties,
    parse_properties,
)
from zmtp.protocol.events import AuthenticationRequested
from zmtp.protocol.frames import encode_command
from zmtp.protocol.greeting import GREETING_SIZE
from zmtp.protocol.mechanism import AuthResult
from zmtp.protocol.plain import PlainClient, PlainServer, hello, parse_hello

PLAIN_GREETING = peer_greeting(mechanism=b"PLAIN")
#: What libzmq 4.3.5 sends for a wrong password (observed; docs/libzmq-notes.md#plain).
LIBZMQ_ERROR_400 = bytes.fromhex("04095e52524f5203343030")
PUSH_META = encode_properties({"Socket-Type": b"PUSH"})
PULL_META = encode_properties({"Socket-Type": b"PULL"})


def client(username: bytes = b"admin", password: bytes = b"secret") -> Connection:
    conn = Connection("PUSH", mechanism=PlainClient(b"", username, password))
    conn.data_to_send()
    return conn


def server(zap_domain: str = "") -> Connection:
    conn = Connection("PULL", mechanism=PlainServer(b"", zap_domain))
    conn.data_to_send()
    return conn


# ------------------------------------------------------------------ layouts


def test_client_sends_hello_right_after_the_greeting() -> None:
    conn = Connection("PUSH", mechanism=PlainClient(b"", b"admin", b"secret"))
    greeting = conn.data_to_send()
    assert greeting[12:17] == b"PLAIN" and greeting[32] == 0
    assert conn.receive_data(PLAIN_GREETING) == []
    assert conn.data_to_send() == b"\x04\x13\x05HELLO\x05admin\x06secret"


def test_hello_encoding_round_trips() -> None:
    frame = hello(b"u" * 255, b"")
    (command,) = split_commands(frame)
    assert parse_hello(command.data) == (b"u" * 255, b"")
    with pytest.raises(ValueError):
        hello(b"u" * 256, b"")


def test_server_greeting_says_as_server() -> None:
    conn = Connection("PULL", mechanism=PlainServer(b""))
    assert conn.data_to_send()[32] == 1


def test_full_exchange_bytes() -> None:
    cli, srv = client(), server()
    assert srv.receive_data(PLAIN_GREETING) == []
    cli.receive_data(PLAIN_GREETING)
    (requested,) = srv.receive_data(cli.data_to_send())
    assert isinstance(requested, AuthenticationRequested)
    request = requested.request
    assert (request.mechanism, request.username, request.password) == ("PLAIN", "admin", "secret")
    assert request.credentials == (b"admin", b"secret")
    assert srv.data_to_send() == b""
    assert srv.complete_authentication(AuthResult.allow("admin")) == []
    welcome = srv.data_to_send()
    assert welcome == b"\x04\x08\x07WELCOME"  # libzmq's client insists on exactly 8 bytes
    assert cli.receive_data(welcome) == []
    initiate = cli.data_to_send()
    (command,) = split_commands(initiate)
    assert command.name == b"INITIATE" and command.data == PUSH_META
    (done,) = srv.receive_data(initiate)
    assert isinstance(done, HandshakeComplete)
    assert (done.mechanism, done.user_id, done.socket_type) == ("PLAIN", "admin", "PUSH")
    (ready,) = split_commands(srv.data_to_send())
    assert ready.name == b"READY" and parse_properties(ready.data)["Socket-Type"] == b"PULL"
    (peer,) = cli.receive_data(commands.ready(PULL_META))
    assert isinstance(peer, HandshakeComplete) and peer.socket_type == "PULL"


def test_data_after_ready_flows_in_clear() -> None:
    cli, srv, _, _ = plain_pair("PUSH", "PULL")
    wire = cli.encode_messages([[b"hello"]])
    assert wire == b"\x00\x05hello"
    assert srv.receive_data(wire) == [MessagesReceived([[b"hello"]])]


def test_server_data_pipelined_behind_ready_is_delivered() -> None:
    cli = client()
    cli.receive_data(PLAIN_GREETING)
    cli.data_to_send()
    cli.receive_data(b"\x04\x08\x07WELCOME")
    cli.data_to_send()
    events = cli.receive_data(commands.ready(PULL_META) + b"\x00\x02hi")
    assert [type(e) for e in events] == [HandshakeComplete, MessagesReceived]


# ------------------------------------------------------------------ refusals


def test_libzmq_malformed_error_is_recognised() -> None:
    cli = client()
    cli.receive_data(PLAIN_GREETING)
    fail = failure(cli.receive_data(LIBZMQ_ERROR_400))
    assert fail.kind == "peer-error"
    assert fail.reason == "peer refused us: 400 (authentication failure)"


def test_libzmq_malformed_error_after_welcome_is_recognised() -> None:
    cli = client()
    cli.receive_data(PLAIN_GREETING + b"\x04\x08\x07WELCOME")
    fail = failure(cli.receive_data(LIBZMQ_ERROR_400))
    assert fail.kind == "peer-error" and "400" in fail.reason


def test_well_formed_error_is_recognised() -> None:
    cli = client()
    cli.receive_data(PLAIN_GREETING)
    fail = failure(cli.receive_data(commands.error("Bad credentials")))
    assert fail.kind == "peer-error" and fail.reason == "peer sent ERROR: Bad credentials"


@pytest.mark.parametrize(
    "garbage",
    [
        b"\x04\x05\x30abcd",  # name length past the end
        b"\x04\x00",  # empty command
        encode_command(b"READY", PULL_META),  # READY before WELCOME
        encode_command(b"WELCOME", b"x"),  # WELCOME with data
        encode_command(b"HELLO", b"\x00\x00"),  # a server's role reversed
        b"\x00\x02hi",  # a data frame
    ],
)
def test_anything_unexpected_during_the_client_handshake_is_fatal(garbage: bytes) -> None:
    cli = client()
    cli.receive_data(PLAIN_GREETING)
    fail = failure(cli.receive_data(garbage))
    assert fail.kind == "protocol" and fail.during_handshake and fail.reason


@pytest.mark.parametrize(("code", "error"), [(300, b""), (400, b"400"), (500, b"500")])
def test_server_refusal_sends_error_except_for_300(code: int, error: bytes) -> None:
    cli, srv, _, events_s = plain_pair(decide=lambda r: AuthResult(code, "wrong password"))
    fail = failure(events_s)
    assert fail.kind == "rejected" and "wrong password" in fail.reason
    assert srv.state is State.CLOSED
    if error:
        assert cli.state is State.CLOSED
    else:
        assert cli.state is State.HANDSHAKE  # silence: the client finds out when we close


def test_our_client_sees_our_servers_refusal() -> None:
    _cli, _, events_c, _ = plain_pair(decide=lambda r: AuthResult.deny("nope"))
    fail = failure(events_c)
    assert fail.kind == "peer-error" and "400" in fail.reason


def test_pending_decision_holds_later_input() -> None:
    srv = server()
    srv.receive_data(PLAIN_GREETING + hello(b"a", b"b"))
    # A hostile client does not wait for WELCOME: its INITIATE is held, not processed.
    assert srv.receive_data(encode_command(b"INITIATE", PUSH_META)) == []
    assert srv.data_to_send() == b""
    (done,) = srv.complete_authentication(AuthResult.allow())
    assert isinstance(done, HandshakeComplete)
    frames = split_commands(srv.data_to_send())
    assert [f.name for f in frames] == [b"WELCOME", b"READY"]


# ------------------------------------------------------------------ hostile input: server


@pytest.mark.parametrize(
    "data",
    [
        b"",  # nothing
        b"\x05ab",  # user name truncated
        b"\x01a",  # no password length
        b"\x01a\x02b",  # password shorter than announced
        b"\x01a\x01bc",  # trailing garbage
    ],
)
def test_malformed_hello_is_fatal(data: bytes) -> None:
    srv = server()
    fail = failure(srv.receive_data(PLAIN_GREETING + encode_command(b"HELLO", data)))
    assert fail.kind == "protocol" and "malformed PLAIN HELLO" in fail.reason


@pytest.mark.parametrize(
    "frame",
    [
        encode_command(b"WELCOME"),  # libzmq 4.3.0-4.3.1 sent WELCOME instead of HELLO
        encode_command(b"INITIATE", PUSH_META),
        encode_command(b"READY", PUSH_META),
        commands.error("400"),
        b"\x00\x03abc",
    ],
)
def test_anything_but_hello_first_is_fatal(frame: bytes) -> None:
    fail = failure(server().receive_data(PLAIN_GREETING + frame))
    assert fail.kind == "protocol" and fail.during_handshake


def test_second_hello_is_fatal() -> None:
    srv = server()
    srv.receive_data(PLAIN_GREETING + hello(b"a", b"b"))
    srv.complete_authentication(AuthResult.allow())
    fail = failure(srv.receive_data(hello(b"a", b"b")))
    assert "unexpected HELLO" in fail.reason


def test_bad_initiate_metadata_is_fatal() -> None:
    srv = server()
    srv.receive_data(PLAIN_GREETING + hello(b"a", b"b"))
    srv.complete_authentication(AuthResult.allow())
    fail = failure(srv.receive_data(encode_command(b"INITIATE", b"\x0bSocket-Type\x00")))
    assert "malformed metadata" in fail.reason


def test_wrong_socket_type_in_initiate_is_fatal_before_ready() -> None:
    srv = server()  # a PULL
    srv.receive_data(PLAIN_GREETING + hello(b"a", b"b"))
    srv.complete_authentication(AuthResult.allow())
    srv.data_to_send()
    pull_meta = encode_properties({"Socket-Type": b"PULL"})
    fail = failure(srv.receive_data(encode_command(b"INITIATE", pull_meta)))
    assert "incompatible socket types: PULL cannot talk to PULL" in fail.reason
    assert [c.name for c in split_commands(srv.data_to_send())] == [b"ERROR"]  # no READY


def test_zap_domain_reaches_the_request() -> None:
    srv = server(zap_domain="global")
    (requested,) = srv.receive_data(PLAIN_GREETING + hello(b"a", b"b"))
    assert isinstance(requested, AuthenticationRequested)
    assert requested.request.domain == "global"


def test_greeting_and_frames_are_separate_from_the_handshake_output() -> None:
    conn = Connection("PUSH", mechanism=PlainClient(b"", b"", b""))
    wire = conn.data_to_send()
    assert len(wire) == GREETING_SIZE
    conn.receive_data(PLAIN_GREETING)
    assert split_frames(conn.data_to_send()) == [(0x04, b"\x05HELLO\x00\x00")]
