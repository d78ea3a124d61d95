"""The 64-byte ZMTP 3.x greeting: ours, and reading/refusing the peer's
(docs/libzmq-notes.md#greeting-and-version-negotiation)."""

from __future__ import annotations

import pytest

from tests._vectors import load
from tests.test_protocol_helpers import (
    LIBZMQ_STAGE1,
    LIBZMQ_STAGE2,
    failure,
    peer_greeting,
    peer_ready,
    split_commands,
)
from zmtp.protocol import (
    Connection,
    ConnectionFailed,
    Event,
    HandshakeComplete,
    NullMechanism,
    ProtocolError,
    State,
)
from zmtp.protocol.greeting import (
    GREETING_SIZE,
    PeerGreeting,
    check_greeting_prefix,
    encode_greeting,
    parse_greeting,
)


def vector(what: str) -> bytes:
    (item,) = [i for i in load("libzmq_wire.json")["items"] if i["what"] == what]
    return bytes.fromhex(item["hex"])


NULL_GREETING_AS_CLIENT = vector("ZMTP 3.1 NULL greeting, as-server 0 (64 bytes)")
HTTP_REQUEST = b"GET / HTTP/1.1\r\n"


def feed_bytewise(conn: Connection, data: bytes) -> tuple[int | None, list[Event]]:
    """Feed one byte at a time; the index of the byte that produced ConnectionFailed (if any)."""
    for i in range(len(data)):
        events = conn.receive_data(data[i : i + 1])
        if events:
            assert isinstance(events[-1], ConnectionFailed), events
            return i, events
    return None, []


# ------------------------------------------------------------------------------- our greeting


def test_our_greeting_equals_the_libzmq_null_greeting() -> None:
    assert Connection("DEALER").data_to_send() == NULL_GREETING_AS_CLIENT


def test_encode_greeting_equals_the_libzmq_null_greeting() -> None:
    assert encode_greeting(b"NULL", as_server=False) == NULL_GREETING_AS_CLIENT


def test_our_greeting_is_sent_whole_and_alone_before_anything_else() -> None:
    conn = Connection("DEALER")
    assert len(conn.data_to_send()) == GREETING_SIZE
    assert conn.data_to_send() == b""
    conn.receive_data(peer_greeting()[:40])
    assert conn.data_to_send() == b""  # no READY before the peer's greeting is complete


def test_as_server_byte_is_set_for_a_server_role() -> None:
    conn = Connection("REP", mechanism=NullMechanism(b"", as_server=True))
    greeting = conn.data_to_send()
    assert greeting[32] == 1
    assert greeting[:32] == NULL_GREETING_AS_CLIENT[:32]
    assert greeting[33:] == bytes(31)


def test_as_server_byte_is_clear_for_a_client_role() -> None:
    assert Connection("REQ").data_to_send()[32] == 0


def test_encode_greeting_minor_version() -> None:
    assert encode_greeting(b"NULL", False, minor=0)[10:12] == b"\x03\x00"


@pytest.mark.parametrize("mechanism", [b"", b"null", b"X" * 21, b"NU LL"])
def test_encode_greeting_rejects_invalid_mechanism_names(mechanism: bytes) -> None:
    with pytest.raises(ValueError):
        encode_greeting(mechanism, as_server=False)


# ------------------------------------------------------------------------- parse_greeting


def test_parse_greeting_fields() -> None:
    assert parse_greeting(peer_greeting(as_server=True), b"NULL") == PeerGreeting(
        major=3, minor=1, mechanism=b"NULL", as_server=True
    )


def test_parse_greeting_needs_64_bytes() -> None:
    with pytest.raises(ValueError):
        parse_greeting(peer_greeting()[:63], b"NULL")


@pytest.mark.parametrize(
    ("major", "minor", "expected_minor"),
    [(3, 0, 0), (3, 1, 1), (3, 2, 1), (3, 255, 1), (4, 0, 1), (255, 7, 1)],
)
def test_parse_greeting_version_negotiation(major: int, minor: int, expected_minor: int) -> None:
    assert parse_greeting(peer_greeting(major, minor), b"NULL").minor == expected_minor


def test_parse_greeting_mechanism_mismatch() -> None:
    with pytest.raises(ProtocolError, match="mechanism mismatch"):
        parse_greeting(peer_greeting(mechanism=b"CURVE"), b"NULL")


def test_parse_greeting_compares_the_whole_mechanism_field() -> None:
    greeting = bytearray(peer_greeting())
    greeting[31] = ord("X")  # "NULL" ... "X": same prefix, different mechanism
    with pytest.raises(ProtocolError, match="mechanism mismatch"):
        parse_greeting(bytes(greeting), b"NULL")


def test_check_greeting_prefix_accepts_every_prefix_of_a_good_greeting() -> None:
    greeting = peer_greeting()
    for n in range(len(greeting) + 1):
        check_greeting_prefix(greeting[:n])


# ------------------------------------------------------------------------- version handling


def test_zmtp_3_0_peer_gives_minor_0() -> None:
    conn = Connection("SUB")
    events = conn.receive_data(peer_greeting(3, 0) + peer_ready("PUB"))
    assert isinstance(events[0], HandshakeComplete)
    assert events[0].zmtp_minor == 0
    assert conn.zmtp_minor == 0


@pytest.mark.parametrize(("major", "minor"), [(3, 1), (3, 2), (4, 0)])
def test_zmtp_3_1_and_newer_peers_give_minor_1(major: int, minor: int) -> None:
    conn = Connection("SUB")
    events = conn.receive_data(peer_greeting(major, minor) + peer_ready("PUB"))
    assert isinstance(events[0], HandshakeComplete)
    assert events[0].zmtp_minor == 1


def test_newer_peer_still_gets_our_3_1_greeting() -> None:
    conn = Connection("SUB")
    greeting = conn.data_to_send()
    conn.receive_data(peer_greeting(4, 0))
    assert greeting[10:12] == b"\x03\x01"
    assert conn.state is State.HANDSHAKE


# ---------------------------------------------------------------------- early refusals


def test_zmtp_1_0_first_byte_not_ff_refused_at_the_first_byte() -> None:
    conn = Connection("DEALER")
    at, events = feed_bytewise(conn, b"\x01\x00" + b"hello")  # a v1 identity frame
    assert at == 0
    assert failure(events).kind == "protocol"
    assert failure(events).during_handshake


def test_zmtp_1_0_byte_9_bit_0_clear_refused_at_byte_9() -> None:
    greeting = bytearray(peer_greeting())
    greeting[9] = 0x7E
    at, events = feed_bytewise(Connection("DEALER"), bytes(greeting))
    assert at == 9
    assert "1.0" in failure(events).reason


@pytest.mark.parametrize(("major", "version"), [(0, "ZMTP 1.0"), (1, "ZMTP 2.0")])
def test_zmtp_2_0_and_older_majors_refused_at_the_major_byte(major: int, version: str) -> None:
    # The revision byte is 0 for versioned ZMTP 1.0 framing and 1 for ZMTP 2.0 (RFC 15).
    at, events = feed_bytewise(Connection("DEALER"), peer_greeting(major=major, minor=0))
    assert at == 10
    fail = failure(events)
    assert fail.kind == "protocol"
    assert fail.during_handshake
    assert version in fail.reason


def test_revision_2_is_spoken_to_as_3_1_like_libzmq() -> None:
    # libzmq treats every revision other than 0 and 1 as ZMTP 3.x
    # (docs/libzmq-notes.md#greeting-and-version-negotiation).
    conn = Connection("DEALER")
    assert conn.receive_data(peer_greeting(major=2, minor=0)) == []
    assert conn.zmtp_minor == 1


def test_http_request_refused_at_the_first_byte() -> None:
    at, events = feed_bytewise(Connection("REP"), HTTP_REQUEST)
    assert at == 0
    assert "not speaking ZMTP" in failure(events).reason


def test_http_request_refused_when_fed_at_once() -> None:
    conn = Connection("REP")
    fail = failure(conn.receive_data(HTTP_REQUEST))
    assert fail.kind == "protocol"
    assert conn.state is State.CLOSED


def test_mechanism_mismatch_refused_at_the_last_greeting_byte() -> None:
    at, events = feed_bytewise(Connection("DEALER"), peer_greeting(mechanism=b"PLAIN"))
    assert at == GREETING_SIZE - 1
    fail = failure(events)
    assert fail.kind == "protocol"
    assert fail.during_handshake
    assert "NULL" in fail.reason and "PLAIN" in fail.reason


def test_refused_greeting_queues_nothing_more() -> None:
    conn = Connection("DEALER")
    conn.data_to_send()
    conn.receive_data(HTTP_REQUEST)
    assert conn.data_to_send() == b""


def test_nothing_happens_after_a_refused_greeting() -> None:
    conn = Connection("DEALER")
    conn.receive_data(HTTP_REQUEST)
    assert conn.receive_data(peer_greeting() + peer_ready("ROUTER")) == []
    assert conn.state is State.CLOSED


# ------------------------------------------------------------------------ accepted shapes


def test_libzmq_staged_greeting_10_then_1_then_53() -> None:
    conn = Connection("DEALER")
    conn.data_to_send()
    full = peer_greeting()
    assert full[:10] == LIBZMQ_STAGE1 and full[10:11] == LIBZMQ_STAGE2
    assert conn.receive_data(full[:10]) == []
    assert conn.data_to_send() == b""
    assert conn.receive_data(full[10:11]) == []
    assert conn.data_to_send() == b""
    assert conn.receive_data(full[11:]) == []
    assert len(full[11:]) == 53
    assert conn.state is State.HANDSHAKE
    assert [c.name for c in split_commands(conn.data_to_send())] == [b"READY"]


def test_greeting_fed_one_byte_at_a_time_is_accepted() -> None:
    conn = Connection("DEALER")
    at, _ = feed_bytewise(conn, peer_greeting())
    assert at is None
    assert conn.state is State.HANDSHAKE


def test_padding_bytes_are_ignored() -> None:
    greeting = bytearray(peer_greeting())
    greeting[1:9] = b"\x12\x34\x56\x78\x9a\xbc\xde\xf0"
    conn = Connection("DEALER")
    assert conn.receive_data(bytes(greeting)) == []
    assert conn.state is State.HANDSHAKE


def test_peer_as_server_byte_is_not_checked() -> None:
    # libzmq always sends 0, even as a server; two "servers" or two "clients" still talk.
    server = Connection("REP", mechanism=NullMechanism(b"", as_server=True))
    server.receive_data(peer_greeting(as_server=True))
    client = Connection("REQ")
    client.receive_data(peer_greeting(as_server=False))
    assert server.state is client.state is State.HANDSHAKE


def test_greeting_and_ready_in_one_chunk() -> None:
    conn = Connection("DEALER")
    events = conn.receive_data(peer_greeting() + peer_ready("ROUTER"))
    assert [type(e) for e in events] == [HandshakeComplete]
