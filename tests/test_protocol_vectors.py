"""Every byte string in ``tests/vectors/libzmq_wire.json`` (observed from libzmq 4.3.5) as a
test."""

from __future__ import annotations

import pytest

from tests._vectors import load
from tests.test_protocol_helpers import (
    LIBZMQ_STAGE2,
    failure,
    peer_greeting,
    ready_connection,
    split_commands,
)
from zmtp.protocol import (
    Command,
    CommandReceived,
    Connection,
    FrameDecoder,
    HandshakeComplete,
    MessagesReceived,
    ProtocolError,
    State,
    commands,
    encode_message,
    encode_properties,
    parse_properties,
)
from zmtp.protocol.frames import COMMAND, parse_command
from zmtp.protocol.greeting import GREETING_SIZE, encode_greeting, parse_greeting

GREETING_STAGE1 = "libzmq greeting, first stage (routing id empty)"
NULL_GREETING = "ZMTP 3.1 NULL greeting, as-server 0 (64 bytes)"
READY_DEALER_ABC = "READY from libzmq DEALER with routing id 'abc' (frame)"
PING_TTL_1500 = "PING from libzmq with HEARTBEAT_TTL 1500 ms (frame)"
PING_LOL = "PING with context LOL (libzmq test_heartbeats)"
PONG_LOL = "PONG answering the PING with context LOL"
SUBSCRIBE_A = "ZMTP 3.1 SUBSCRIBE 'A' command frame"
LEGACY_SUBSCRIBE_A = "ZMTP 3.0 legacy subscribe 'A' data frame"
SUBSCRIBE_TOPIC = "ZMTP 3.1 SUBSCRIBE 'topic'"
CANCEL_TOPIC = "ZMTP 3.1 CANCEL 'topic'"
SUBSCRIBE_ALL = "ZMTP 3.1 SUBSCRIBE to everything"
REQ_REQUEST = "REQ request [a, b] on the wire (delimiter first)"
PLAIN_BROKEN_ERROR = (
    "libzmq PLAIN server ERROR for a wrong password (malformed by a libzmq bug: name '^RROR')"
)
CURVE_ERROR_400 = "CURVE ERROR after ZAP 400"

COVERED = {
    GREETING_STAGE1,
    NULL_GREETING,
    READY_DEALER_ABC,
    PING_TTL_1500,
    PING_LOL,
    PONG_LOL,
    SUBSCRIBE_A,
    LEGACY_SUBSCRIBE_A,
    SUBSCRIBE_TOPIC,
    CANCEL_TOPIC,
    SUBSCRIBE_ALL,
    REQ_REQUEST,
    PLAIN_BROKEN_ERROR,
    CURVE_ERROR_400,
}


def vector(what: str) -> bytes:
    (item,) = [i for i in load("libzmq_wire.json")["items"] if i["what"] == what]
    return bytes.fromhex(item["hex"])


def only_frame(data: bytes) -> tuple[int, bytes]:
    """The single complete frame ``data`` holds."""
    decoder = FrameDecoder()
    frame = decoder.next_frame(data)
    assert frame is not None and decoder.buffered == 0
    return frame


def test_every_vector_is_covered() -> None:
    items = load("libzmq_wire.json")["items"]
    assert {i["what"] for i in items} == COVERED
    assert len(items) == len(COVERED)


# --------------------------------------------------------------------------------- greeting


def test_libzmq_first_greeting_stage_is_accepted_and_waited_on() -> None:
    conn = Connection("DEALER")
    conn.data_to_send()
    assert conn.receive_data(vector(GREETING_STAGE1)) == []
    assert conn.state is State.GREETING
    assert conn.data_to_send() == b""


def test_libzmq_staged_greeting_completes_from_the_first_stage() -> None:
    conn = Connection("DEALER")
    conn.data_to_send()
    stage1 = vector(GREETING_STAGE1)
    stage3 = peer_greeting()[11:]
    for chunk in (stage1, LIBZMQ_STAGE2, stage3):
        assert conn.receive_data(chunk) == []
    assert conn.state is State.HANDSHAKE
    assert [c.name for c in split_commands(conn.data_to_send())] == [b"READY"]


def test_null_greeting_is_ours() -> None:
    assert Connection("DEALER").data_to_send() == vector(NULL_GREETING)
    assert encode_greeting(b"NULL", as_server=False) == vector(NULL_GREETING)


def test_null_greeting_parses() -> None:
    greeting = parse_greeting(vector(NULL_GREETING), b"NULL")
    assert (greeting.major, greeting.minor, greeting.mechanism) == (3, 1, b"NULL")
    assert not greeting.as_server
    assert len(vector(NULL_GREETING)) == GREETING_SIZE


# ------------------------------------------------------------------------------------ READY


def test_libzmq_dealer_ready_parses() -> None:
    flags, body = only_frame(vector(READY_DEALER_ABC))
    assert flags == COMMAND
    cmd = parse_command(body)
    assert cmd.name == b"READY"
    props = parse_properties(cmd.data)
    assert list(props.items()) == [("Socket-Type", b"DEALER"), ("Identity", b"abc")]


def test_libzmq_dealer_ready_completes_a_router_handshake() -> None:
    conn = Connection("ROUTER")
    (done,) = conn.receive_data(peer_greeting() + vector(READY_DEALER_ABC))
    assert isinstance(done, HandshakeComplete)
    assert done.socket_type == "DEALER"
    assert done.identity == b"abc"


def test_our_dealer_ready_equals_libzmqs() -> None:
    assert commands.ready(
        encode_properties({"Socket-Type": b"DEALER", "Identity": b"abc"})
    ) == vector(READY_DEALER_ABC)
    conn = Connection("DEALER", identity=b"abc")
    conn.receive_data(peer_greeting())
    assert conn.data_to_send()[GREETING_SIZE:] == vector(READY_DEALER_ABC)


# --------------------------------------------------------------------------------- PING/PONG


def test_our_ping_with_ttl_1500_ms_equals_libzmqs() -> None:
    assert commands.ping(15) == vector(PING_TTL_1500)
    conn = ready_connection(heartbeat_ivl=1.0, heartbeat_ttl=1.5, handshake_timeout=None)
    conn.handle_timers(1.0)
    assert conn.data_to_send() == vector(PING_TTL_1500)


def test_libzmq_ping_with_ttl_arms_a_ttl_of_1_5_seconds() -> None:
    conn = ready_connection(handshake_timeout=None)
    assert conn.receive_data(vector(PING_TTL_1500), 10.0) == []
    assert conn.next_deadline() == 11.5
    assert conn.data_to_send() == commands.pong()


def test_ping_with_context_lol_parses() -> None:
    assert commands.ping(0, b"LOL") == vector(PING_LOL)
    (cmd,) = split_commands(vector(PING_LOL))
    assert commands.parse_ping(cmd.data) == (0, b"LOL")


def test_our_pong_for_ping_lol_equals_libzmqs() -> None:
    conn = ready_connection()
    assert conn.receive_data(vector(PING_LOL)) == []
    assert conn.data_to_send() == vector(PONG_LOL)


def test_pong_lol_is_commands_pong() -> None:
    assert commands.pong(b"LOL") == vector(PONG_LOL)


def test_libzmq_pong_is_swallowed() -> None:
    assert ready_connection().receive_data(vector(PONG_LOL)) == []


# ---------------------------------------------------------------------------- subscriptions

SUBSCRIPTION_VECTORS = [
    (SUBSCRIBE_A, b"SUBSCRIBE", b"A"),
    (SUBSCRIBE_TOPIC, b"SUBSCRIBE", b"topic"),
    (CANCEL_TOPIC, b"CANCEL", b"topic"),
    (SUBSCRIBE_ALL, b"SUBSCRIBE", b""),
]


@pytest.mark.parametrize(("what", "name", "topic"), SUBSCRIPTION_VECTORS)
def test_subscription_commands_equal_our_builders(what: str, name: bytes, topic: bytes) -> None:
    builder = commands.subscribe if name == b"SUBSCRIBE" else commands.cancel
    assert builder(topic) == vector(what)


@pytest.mark.parametrize(("what", "name", "topic"), SUBSCRIPTION_VECTORS)
def test_subscription_commands_surface_on_an_xpub(what: str, name: bytes, topic: bytes) -> None:
    conn = ready_connection("XPUB", "SUB")
    assert conn.receive_data(vector(what)) == [CommandReceived(name, topic)]


def test_legacy_subscribe_is_a_plain_message() -> None:
    assert encode_message([b"\x01A"]) == vector(LEGACY_SUBSCRIBE_A)
    conn = ready_connection("XPUB", "SUB", peer_minor=0)
    assert conn.receive_data(vector(LEGACY_SUBSCRIBE_A)) == [MessagesReceived([[b"\x01A"]])]


# ----------------------------------------------------------------------------------- REQ


def test_req_request_equals_encode_message() -> None:
    assert encode_message([b"", b"a", b"b"]) == vector(REQ_REQUEST)


def test_req_request_decodes_with_its_delimiter() -> None:
    conn = ready_connection("ROUTER", "REQ")
    assert conn.receive_data(vector(REQ_REQUEST)) == [MessagesReceived([[b"", b"a", b"b"]])]


# ---------------------------------------------------------------------------------- ERRORs


def test_plain_broken_error_is_a_command_frame_not_named_error() -> None:
    flags, body = only_frame(vector(PLAIN_BROKEN_ERROR))
    assert flags == COMMAND
    assert body[0] == 0x5E  # '^': the name length libzmq's greedy "\x05E" escape produced
    assert not body.startswith(b"\x05ERROR")
    with pytest.raises(ProtocolError, match="name length"):
        parse_command(body)  # the name would be 94 bytes long in a 9-byte body


def test_plain_broken_error_during_handshake_is_a_protocol_failure() -> None:
    conn = Connection("DEALER")
    fail = failure(conn.receive_data(peer_greeting() + vector(PLAIN_BROKEN_ERROR)))
    assert fail.kind == "protocol"  # not "peer-error": it is not an ERROR command
    assert fail.during_handshake


def test_curve_error_400_parses() -> None:
    (cmd,) = split_commands(vector(CURVE_ERROR_400))
    assert cmd == Command(b"ERROR", b"\x03400")
    assert commands.parse_error(cmd.data) == "400"
    assert commands.error("400") == vector(CURVE_ERROR_400)


def test_curve_error_400_during_handshake_is_a_peer_error() -> None:
    conn = Connection("DEALER")
    fail = failure(conn.receive_data(peer_greeting() + vector(CURVE_ERROR_400)))
    assert fail.kind == "peer-error"
    assert fail.during_handshake
    assert "400" in fail.reason


def test_vectors_arrive_together_after_a_libzmq_ready() -> None:
    # A ROUTER's view of a libzmq DEALER: greeting, READY, a PING, then a request.
    conn = Connection("ROUTER")
    conn.data_to_send()
    wire = peer_greeting() + vector(READY_DEALER_ABC) + vector(PING_LOL) + vector(REQ_REQUEST)
    events = conn.receive_data(wire)
    assert isinstance(events[0], HandshakeComplete)
    assert events[1:] == [MessagesReceived([[b"", b"a", b"b"]])]
    assert split_commands(conn.data_to_send())[-1] == Command(b"PONG", b"LOL")
