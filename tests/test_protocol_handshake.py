"""NULL handshake, READY metadata and the socket-type check (docs/libzmq-notes.md#commands,
#null-handshake-and-ready-properties, #socket-type-check)."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.test_protocol_helpers import (
    failure,
    flatten,
    handshake_pair,
    only_failure,
    peer_greeting,
    peer_ready,
    pump,
    ready_frame,
    split_commands,
    split_frames,
)
from zmtp.protocol import (
    Command,
    CommandReceived,
    Connection,
    ConnectionFailed,
    Event,
    HandshakeComplete,
    MessagesReceived,
    ProtocolError,
    SocketType,
    State,
    commands,
    compatible,
    encode_command,
    encode_frame,
    encode_message,
    parse_properties,
)
from zmtp.protocol.frames import COMMAND, MORE, encode_messages
from zmtp.protocol.greeting import GREETING_SIZE, encode_greeting
from zmtp.protocol.sockettypes import compatible_peers

#: RFC 37 / libzmq ``check_socket_type``, written out independently of the implementation.
RFC37_TABLE: dict[str, set[str]] = {
    "REQ": {"REP", "ROUTER"},
    "REP": {"REQ", "DEALER"},
    "DEALER": {"REP", "DEALER", "ROUTER"},
    "ROUTER": {"REQ", "DEALER", "ROUTER"},
    "PUB": {"SUB", "XSUB"},
    "XPUB": {"SUB", "XSUB"},
    "SUB": {"PUB", "XPUB"},
    "XSUB": {"PUB", "XPUB"},
    "PUSH": {"PULL"},
    "PULL": {"PUSH"},
    "PAIR": {"PAIR"},
    "CLIENT": {"SERVER"},
    "SERVER": {"CLIENT"},
    "RADIO": {"DISH"},
    "DISH": {"RADIO"},
    "SCATTER": {"GATHER"},
    "GATHER": {"SCATTER"},
    "PEER": {"PEER"},
    "CHANNEL": {"CHANNEL"},
}
ALL_TYPES = sorted(RFC37_TABLE)
COMPATIBLE_PAIRS = sorted((a, b) for a in ALL_TYPES for b in RFC37_TABLE[a])
INCOMPATIBLE_PAIRS = sorted(
    (a, b) for a, b in itertools.product(ALL_TYPES, repeat=2) if b not in RFC37_TABLE[a]
)
IDENTITY_SENDERS = {"REQ", "DEALER", "ROUTER"}


def handshake_with(conn: Connection, peer_bytes: bytes) -> list[Event]:
    """Feed a peer greeting followed by ``peer_bytes``."""
    return conn.receive_data(peer_greeting() + peer_bytes)


def our_ready_properties(conn: Connection) -> list[tuple[str, bytes]]:
    """The properties of the READY ``conn`` sends (greeting skipped), in wire order."""
    wire = conn.data_to_send()[GREETING_SIZE:]
    (ready,) = split_commands(wire)
    assert ready.name == b"READY"
    return list(parse_properties(ready.data).items())


def completed(conn: Connection) -> Connection:
    """Complete ``conn``'s handshake so it sends its READY."""
    conn.receive_data(peer_greeting())
    return conn


# -------------------------------------------------------------------------- compatibility


def test_rfc37_table_matches_the_implementation() -> None:
    assert {t: set(compatible_peers(t)) for t in ALL_TYPES} == RFC37_TABLE
    assert {t.value for t in SocketType} == set(ALL_TYPES)


@pytest.mark.parametrize(("ours", "theirs"), COMPATIBLE_PAIRS)
def test_compatible_pair_handshakes(ours: str, theirs: str) -> None:
    a, b, events_a, events_b = handshake_pair(ours, theirs)
    assert events_a == [a.peer]
    assert events_b == [b.peer]
    assert a.peer is not None and a.peer.socket_type == theirs
    assert b.peer is not None and b.peer.socket_type == ours
    assert a.state is b.state is State.READY
    assert a.peer.mechanism == b.peer.mechanism == "NULL"
    assert a.peer.zmtp_minor == b.peer.zmtp_minor == 1


@pytest.mark.parametrize(("ours", "theirs"), INCOMPATIBLE_PAIRS)
def test_compatible_is_false_for_every_pair_outside_the_table(ours: str, theirs: str) -> None:
    assert not compatible(ours, theirs)


def test_unknown_socket_types_are_incompatible() -> None:
    assert not compatible("STREAM", "STREAM")
    assert not compatible("DEALER", "dealer")  # values compared exactly, like libzmq


@pytest.mark.parametrize(
    ("ours", "theirs"),
    [("PUSH", "PUB"), ("REQ", "REQ"), ("PUB", "PUB"), ("DEALER", "PULL"), ("SUB", "SUB"),
     ("REP", "ROUTER"), ("CLIENT", "CLIENT"), ("RADIO", "SUB")],
)  # fmt: skip
def test_incompatible_peer_is_refused(ours: str, theirs: str) -> None:
    conn = Connection(ours)
    conn.data_to_send()
    fail = failure(handshake_with(conn, peer_ready(theirs)))
    assert fail.kind == "protocol"
    assert fail.during_handshake
    assert ours in fail.reason and theirs in fail.reason
    assert conn.state is State.CLOSED


def test_incompatible_peer_gets_an_error_after_our_ready() -> None:
    conn = Connection("PUSH")
    conn.data_to_send()
    handshake_with(conn, peer_ready("PUB"))
    sent = split_commands(conn.data_to_send())
    assert [c.name for c in sent] == [b"READY", b"ERROR"]
    assert commands.parse_error(sent[1].data) == "Invalid socket type"


def test_incompatible_pair_of_connections_both_fail() -> None:
    _, _, events_a, events_b = handshake_pair("PUSH", "PUSH")
    for events in (events_a, events_b):
        assert [type(e) for e in events] == [ConnectionFailed]
        assert failure(events).during_handshake


def test_socket_type_value_is_case_sensitive() -> None:
    conn = Connection("DEALER")
    fail = failure(handshake_with(conn, peer_ready("router")))
    assert fail.kind == "protocol"


def test_socket_type_enum_is_accepted() -> None:
    conn = Connection(SocketType.DEALER)
    assert conn.socket_type == "DEALER"
    events = handshake_with(conn, peer_ready("ROUTER"))
    assert isinstance(events[0], HandshakeComplete)


# ------------------------------------------------------------------------- peer metadata


def test_ready_without_socket_type_refused() -> None:
    fail = failure(handshake_with(Connection("DEALER"), ready_frame({"Identity": b"abc"})))
    assert fail.kind == "protocol"
    assert fail.during_handshake
    assert "Socket-Type" in fail.reason


def test_empty_ready_refused() -> None:
    fail = failure(handshake_with(Connection("DEALER"), commands.ready(b"")))
    assert "Socket-Type" in fail.reason


def test_property_names_are_read_case_insensitively() -> None:
    events = handshake_with(
        Connection("ROUTER"), ready_frame({"socket-type": b"DEALER", "IDENTITY": b"abc"})
    )
    (done,) = events
    assert isinstance(done, HandshakeComplete)
    assert done.socket_type == "DEALER"
    assert done.identity == b"abc"
    assert done.properties["Socket-Type"] == b"DEALER"


def test_peer_without_identity_gives_empty_identity() -> None:
    (done,) = handshake_with(Connection("PULL"), peer_ready("PUSH"))
    assert isinstance(done, HandshakeComplete)
    assert done.identity == b""


def test_unknown_peer_properties_are_kept() -> None:
    props = {"Socket-Type": b"DEALER", "Identity": b"", "X-Hello": b"world", "Resource": b"a/b"}
    (done,) = handshake_with(Connection("ROUTER"), ready_frame(props))
    assert isinstance(done, HandshakeComplete)
    assert dict(done.properties) == props
    assert done.properties.text("x-hello") == "world"


def test_trailing_garbage_in_metadata_refused() -> None:
    data = ready_frame({"Socket-Type": b"DEALER"})[2:] + b"\x00"  # body plus one stray byte
    fail = failure(handshake_with(Connection("ROUTER"), encode_frame(data, COMMAND)))
    assert fail.kind == "protocol"
    assert "metadata" in fail.reason


def test_truncated_property_value_refused() -> None:
    body = b"\x05READY\x0bSocket-Type\x00\x00\x00\x06DEAL"
    fail = failure(handshake_with(Connection("ROUTER"), encode_frame(body, COMMAND)))
    assert "truncated" in fail.reason


def test_handshake_complete_is_kept_on_the_connection() -> None:
    conn = Connection("ROUTER")
    (done,) = handshake_with(conn, peer_ready("DEALER", b"id"))
    assert conn.peer is done


# ------------------------------------------------------------------------- our metadata


@pytest.mark.parametrize("socket_type", ALL_TYPES)
def test_we_send_exactly_socket_type_and_identity_only_for_req_dealer_router(
    socket_type: str,
) -> None:
    props = our_ready_properties(completed(Connection(socket_type, identity=b"me")))
    if socket_type in IDENTITY_SENDERS:
        assert props == [("Socket-Type", socket_type.encode()), ("Identity", b"me")]
    else:
        assert props == [("Socket-Type", socket_type.encode())]


@pytest.mark.parametrize("socket_type", sorted(IDENTITY_SENDERS))
def test_identity_is_sent_even_when_empty(socket_type: str) -> None:
    props = our_ready_properties(completed(Connection(socket_type)))
    assert props == [("Socket-Type", socket_type.encode()), ("Identity", b"")]


def test_extra_properties_appear_in_ready_after_the_basic_ones() -> None:
    conn = Connection("DEALER", identity=b"x", extra_properties={"X-QoS": b"1", "X-B": b""})
    assert our_ready_properties(completed(conn)) == [
        ("Socket-Type", b"DEALER"),
        ("Identity", b"x"),
        ("X-QoS", b"1"),
        ("X-B", b""),
    ]


def test_extra_properties_reach_the_peer() -> None:
    a = Connection("PUSH", extra_properties={"X-Feature": b"on"})
    b = Connection("PULL")
    _, (done,) = pump(a, b)
    assert isinstance(done, HandshakeComplete)
    assert done.properties["x-feature"] == b"on"


@pytest.mark.parametrize("name", ["Socket-Type", "socket-type", "Identity", "IDENTITY"])
def test_extra_properties_may_not_override_basic_ones(name: str) -> None:
    with pytest.raises(ValueError):
        Connection("DEALER", extra_properties={name: b"x"})


def test_ready_is_sent_right_after_the_greeting_without_waiting_for_the_peer_ready() -> None:
    conn = Connection("ROUTER")
    conn.data_to_send()
    conn.receive_data(peer_greeting())
    assert [c.name for c in split_commands(conn.data_to_send())] == [b"READY"]
    assert conn.state is State.HANDSHAKE


def test_nothing_more_is_sent_once_the_handshake_completes() -> None:
    conn = completed(Connection("DEALER"))
    conn.data_to_send()
    conn.receive_data(peer_ready("ROUTER"))
    assert conn.data_to_send() == b""


# ------------------------------------------------------------------------- pipelining


def test_ready_pipelined_with_data_delivers_the_data_in_the_same_call() -> None:
    conn = Connection("PULL")
    wire = peer_greeting() + peer_ready("PUSH") + encode_messages([[b"one"], [b"two", b"2"]])
    events = conn.receive_data(wire)
    assert [type(e) for e in events] == [HandshakeComplete, MessagesReceived]
    assert events[1] == MessagesReceived([[b"one"], [b"two", b"2"]])


def test_ready_pipelined_with_data_after_a_separate_greeting() -> None:
    conn = Connection("PULL")
    conn.receive_data(peer_greeting())
    events = conn.receive_data(peer_ready("PUSH") + encode_message([b"hi"]))
    assert events[1:] == [MessagesReceived([[b"hi"]])]


def test_ready_pipelined_with_a_command_and_a_partial_message() -> None:
    conn = Connection("XPUB")
    tail = encode_message([b"rest"])
    wire = peer_greeting() + peer_ready("SUB") + commands.subscribe(b"t") + tail[:3]
    events = conn.receive_data(wire)
    assert events[1:] == [CommandReceived(b"SUBSCRIBE", b"t")]
    assert conn.receive_data(tail[3:]) == [MessagesReceived([[b"rest"]])]


def test_ready_pipelined_with_a_large_partial_message() -> None:
    conn = Connection("PULL")
    body = b"L" * 200_000
    wire = encode_message([body])
    events = conn.receive_data(peer_greeting() + peer_ready("PUSH") + wire[:100_000])
    assert [type(e) for e in events] == [HandshakeComplete]
    assert conn.receive_data(wire[100_000:]) == [MessagesReceived([[body]])]


def test_bad_frame_pipelined_after_ready_fails_after_the_handshake() -> None:
    conn = Connection("PULL")
    events = conn.receive_data(peer_greeting() + peer_ready("PUSH") + b"\x80\x00")
    assert isinstance(events[0], HandshakeComplete)
    fail = failure(events)
    assert fail.kind == "protocol"
    assert not fail.during_handshake


# -------------------------------------------------------------------- handshake refusals


def test_data_frame_during_handshake_refused() -> None:
    fail = failure(handshake_with(Connection("PULL"), encode_message([b"early"])))
    assert fail.kind == "protocol"
    assert fail.during_handshake
    assert "before the handshake" in fail.reason


def test_data_frame_during_handshake_refused_even_if_ready_follows() -> None:
    events = handshake_with(Connection("PULL"), encode_message([b"x"]) + peer_ready("PUSH"))
    assert [type(e) for e in events] == [ConnectionFailed]


def test_peer_error_during_handshake() -> None:
    fail = failure(handshake_with(Connection("DEALER"), commands.error("go away")))
    assert fail.kind == "peer-error"
    assert fail.during_handshake
    assert "go away" in fail.reason


def test_peer_error_without_a_reason() -> None:
    fail = failure(handshake_with(Connection("DEALER"), encode_command(b"ERROR")))
    assert fail.kind == "peer-error"


def test_unexpected_command_during_handshake_refused() -> None:
    fail = failure(handshake_with(Connection("DEALER"), commands.ping(0)))
    assert fail.kind == "protocol"
    assert "PING" in fail.reason


def test_more_flag_on_a_handshake_command_refused() -> None:
    body = b"\x05READY"
    fail = failure(handshake_with(Connection("DEALER"), bytes((COMMAND | MORE, len(body))) + body))
    assert "MORE" in fail.reason


def test_reserved_flag_bits_during_handshake_refused() -> None:
    body = ready_frame({"Socket-Type": b"ROUTER"})[2:]
    fail = failure(handshake_with(Connection("DEALER"), bytes((0x84, len(body))) + body))
    assert "reserved" in fail.reason


def test_malformed_command_during_handshake_refused() -> None:
    fail = failure(handshake_with(Connection("DEALER"), b"\x04\x03\x09AB"))
    assert fail.kind == "protocol"


def test_max_message_size_applies_to_the_ready_frame() -> None:
    conn = Connection("ROUTER", max_message_size=30)
    props = {"Socket-Type": b"DEALER", "Identity": b"i" * 50}
    fail = failure(handshake_with(conn, ready_frame(props)))
    assert fail.kind == "protocol"
    assert fail.during_handshake


def test_failed_connection_ignores_further_input() -> None:
    conn = Connection("DEALER")
    handshake_with(conn, commands.error("no"))
    assert conn.receive_data(peer_ready("ROUTER")) == []
    assert conn.state is State.CLOSED


def test_send_command_refused_after_a_failure() -> None:
    conn = Connection("DEALER")
    handshake_with(conn, commands.error("no"))
    with pytest.raises(ProtocolError, match="handshake"):
        conn.send_command(b"X-A")


# ------------------------------------------------------------------- states and driver


def test_state_progression() -> None:
    conn = Connection("DEALER")
    assert conn.state is State.GREETING
    conn.receive_data(peer_greeting())
    assert conn.state is State.HANDSHAKE
    conn.receive_data(peer_ready("ROUTER"))
    assert conn.state is State.READY


def test_driver_fail_after_the_handshake() -> None:
    a, _, _, _ = handshake_pair("PUSH", "PULL")
    (fail,) = a.fail("extension said no")
    assert fail == ConnectionFailed("extension said no", "protocol", False)
    assert a.state is State.CLOSED


def test_driver_fail_during_the_handshake() -> None:
    fail = only_failure(Connection("PUSH").fail("nope"))
    assert fail.during_handshake


def test_our_handshake_bytes_are_greeting_then_ready() -> None:
    conn = completed(Connection("DEALER", identity=b"abc"))
    wire = conn.data_to_send()
    assert wire[:GREETING_SIZE] == encode_greeting(b"NULL", as_server=False)
    assert [flags for flags, _ in split_frames(wire[GREETING_SIZE:])] == [COMMAND]
    assert split_commands(wire[GREETING_SIZE:]) == [
        Command(b"READY", b"\x0bSocket-Type\x00\x00\x00\x06DEALER\x08Identity\x00\x00\x00\x03abc")
    ]


# --------------------------------------------------------------------------- chunking


def peer_stream() -> tuple[bytes, list[object]]:
    """A whole peer byte stream (greeting to data) and the flattened events it must produce."""
    messages = [[b"a"], [b"", b"b" * 300], [b"c", b"d"], [b"e" * 70_000]]
    wire = (
        peer_greeting()
        + peer_ready("ROUTER", b"peer")
        + encode_message(messages[0])
        + commands.ping(0, b"ctx")
        + encode_message(messages[1])
        + encode_command(b"X-ACK", b"1")
        + encode_messages(messages[2:])
    )
    expected: list[object] = [
        ("message", messages[0]),
        ("message", messages[1]),
        ("command", b"X-ACK", b"1"),
        ("message", messages[2]),
        ("message", messages[3]),
    ]
    return wire, expected


def run_chunked(wire: bytes, cuts: list[int]) -> tuple[list[object], bytes]:
    conn = Connection("DEALER")
    conn.data_to_send()
    events: list[Event] = []
    bounds = [0, *sorted(cuts), len(wire)]
    for start, stop in itertools.pairwise(bounds):
        events += conn.receive_data(wire[start:stop])
    assert isinstance(events[0], HandshakeComplete)
    assert events[0].identity == b"peer"
    return flatten(events[1:]), conn.data_to_send()


def test_whole_stream_at_once_and_byte_by_byte_agree() -> None:
    wire, expected = peer_stream()
    at_once, out_at_once = run_chunked(wire, [])
    assert at_once == expected
    # Byte by byte, but only up to the large message (fed in one go to keep this quick).
    large_start = len(wire) - 70_009
    bytewise, out_bytewise = run_chunked(wire, list(range(1, large_start + 1)))
    assert bytewise == expected
    assert out_bytewise == out_at_once  # READY then the PONG


@settings(deadline=None, max_examples=60)
@given(st.data())
def test_whole_stream_in_random_chunks(data: st.DataObject) -> None:
    wire, expected = peer_stream()
    cuts = data.draw(st.lists(st.integers(0, len(wire)), max_size=40))
    events, out = run_chunked(wire, cuts)
    assert events == expected
    assert [c.name for c in split_commands(out)] == [b"READY", b"PONG"]
