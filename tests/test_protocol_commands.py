"""Command builders/parsers, metadata properties, and post-handshake commands on a Connection."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.test_protocol_helpers import failure, only_failure, ready_connection, split_commands
from zmtp.protocol import (
    Command,
    CommandReceived,
    Connection,
    MessagesReceived,
    Properties,
    ProtocolError,
    State,
    commands,
    encode_command,
    encode_message,
    encode_properties,
    parse_properties,
)
from zmtp.protocol.frames import encode_messages

SOCKET_TYPE_DEALER = b"\x0bSocket-Type\x00\x00\x00\x06DEALER"

# ------------------------------------------------------------------------- command builders


def test_ready_frame() -> None:
    assert commands.ready(SOCKET_TYPE_DEALER) == b"\x04\x1c\x05READY" + SOCKET_TYPE_DEALER


def test_error_frame() -> None:
    assert commands.error("400") == b"\x04\x0a\x05ERROR\x03400"


def test_error_reason_is_truncated_to_255_bytes() -> None:
    (cmd,) = split_commands(commands.error("r" * 300))
    assert cmd.data == b"\xff" + b"r" * 255


def test_error_accepts_bytes() -> None:
    assert commands.error(b"x") == commands.error("x")


def test_parse_error_reason() -> None:
    assert commands.parse_error(b"\x03400") == "400"


@pytest.mark.parametrize(("data", "reason"), [(b"", ""), (b"\x05ab", "ab"), (b"\x00junk", "")])
def test_parse_error_is_lenient(data: bytes, reason: str) -> None:
    assert commands.parse_error(data) == reason


def test_ping_frame() -> None:
    assert commands.ping(15) == b"\x04\x07\x04PING\x00\x0f"
    assert commands.ping(0, b"LOL") == b"\x04\x0a\x04PING\x00\x00LOL"


@pytest.mark.parametrize("ttl", [-1, 0x10000])
def test_ping_ttl_must_fit_16_bits(ttl: int) -> None:
    with pytest.raises(ValueError):
        commands.ping(ttl)


def test_ping_context_is_at_most_16_bytes() -> None:
    assert len(commands.ping(0, b"c" * 16)) == 2 + 5 + 2 + 16
    with pytest.raises(ValueError):
        commands.ping(0, b"c" * 17)


def test_parse_ping() -> None:
    assert commands.parse_ping(b"\x01\x02ctx") == (0x0102, b"ctx")


def test_parse_ping_truncates_the_context_to_16_bytes() -> None:
    assert commands.parse_ping(b"\x00\x00" + b"c" * 58) == (0, b"c" * 16)


@pytest.mark.parametrize("data", [b"", b"\x00"])
def test_parse_ping_needs_a_ttl(data: bytes) -> None:
    with pytest.raises(ProtocolError):
        commands.parse_ping(data)


def test_pong_truncates_the_context() -> None:
    assert commands.pong(b"p" * 20) == commands.pong(b"p" * 16) == b"\x04\x15\x04PONG" + b"p" * 16


def test_subscribe_and_cancel_frames() -> None:
    assert commands.subscribe(b"A") == b"\x04\x0b\x09SUBSCRIBEA"
    assert commands.cancel(b"A") == b"\x04\x08\x06CANCELA"


def test_join_and_leave_frames() -> None:
    assert commands.join(b"grp") == b"\x04\x08\x04JOINgrp"
    assert commands.leave(b"grp") == b"\x04\x09\x05LEAVEgrp"


@pytest.mark.parametrize("builder", [commands.join, commands.leave])
def test_groups_are_at_most_255_bytes(builder: object) -> None:
    assert callable(builder)
    builder(b"g" * 255)
    with pytest.raises(ValueError):
        builder(b"g" * 256)


def test_encode_command_rejects_a_name_over_255_bytes() -> None:
    with pytest.raises(ValueError):
        encode_command(b"N" * 256)


# ------------------------------------------------------------------------------ properties


def test_encode_properties_layout() -> None:
    assert encode_properties({"Socket-Type": b"DEALER"}) == SOCKET_TYPE_DEALER


def test_encode_properties_keeps_order_and_spelling() -> None:
    wire = encode_properties({"b": b"2", "A": b"1"})
    assert wire == b"\x01b\x00\x00\x00\x012\x01A\x00\x00\x00\x011"


@pytest.mark.parametrize("name", ["", "has space", "colon:", "x" * 256, "é"])
def test_encode_properties_rejects_invalid_names(name: str) -> None:
    with pytest.raises(ValueError):
        encode_properties({name: b""})


def test_parse_properties_round_trip() -> None:
    props = {"Socket-Type": b"ROUTER", "Identity": b"", "X-Big": b"v" * 1000}
    assert dict(parse_properties(encode_properties(props))) == props


def test_parse_empty_properties() -> None:
    assert len(parse_properties(b"")) == 0


@pytest.mark.parametrize(
    "data",
    [
        b"\x00",  # zero-length name
        b"\x05Ident",  # name cut short of its value length
        b"\x01A\x00\x00\x00",  # truncated value length
        b"\x01A\x00\x00\x00\x05abc",  # value cut short
        SOCKET_TYPE_DEALER + b"\x00",  # one stray byte
        b"\x02A \x00\x00\x00\x00",  # invalid character in the name
    ],
)
def test_parse_properties_rejects_malformed_metadata(data: bytes) -> None:
    with pytest.raises(ProtocolError, match="malformed metadata"):
        parse_properties(data)


def test_properties_lookup_is_case_insensitive() -> None:
    props = Properties({"Socket-Type": b"PUB"})
    assert props["SOCKET-TYPE"] == props["socket-type"] == b"PUB"
    assert "sOcKeT-tYpE" in props
    assert list(props) == ["Socket-Type"]  # names kept as sent


def test_properties_missing_names() -> None:
    props = Properties({"A": b"1"})
    assert "B" not in props
    assert 1 not in props
    assert props.get("b") is None
    with pytest.raises(KeyError):
        props["B"]


def test_properties_text() -> None:
    props = Properties({"User-Id": b"caf\xe9"})
    assert props.text("user-id") == "café"
    assert props.text("missing", "dflt") == "dflt"


property_names = st.text(
    alphabet="ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_.+",
    min_size=1,
    max_size=255,
)


@given(
    st.lists(
        st.tuples(property_names, st.binary(max_size=300)),
        max_size=8,
        unique_by=lambda item: item[0].lower(),
    )
)
def test_properties_round_trip(items: list[tuple[str, bytes]]) -> None:
    assert list(parse_properties(encode_properties(dict(items))).items()) == items


def test_names_differing_only_in_case_are_one_property_last_wins() -> None:
    wire = encode_properties({"Socket-Type": b"PUB", "X": b"x", "socket-type": b"DEALER"})
    props = parse_properties(wire)
    assert len(props) == 2
    assert props["Socket-Type"] == props["SOCKET-TYPE"] == b"DEALER"
    assert dict(props) == {"socket-type": b"DEALER", "X": b"x"}


# ------------------------------------------------------------- post-handshake commands


def test_unknown_command_surfaces() -> None:
    conn = ready_connection()
    assert conn.receive_data(encode_command(b"X-ACK", b"\x00\x01")) == [
        CommandReceived(b"X-ACK", b"\x00\x01")
    ]


def test_subscribe_surfaces() -> None:
    conn = ready_connection("XPUB", "SUB")
    assert conn.receive_data(commands.subscribe(b"topic")) == [
        CommandReceived(b"SUBSCRIBE", b"topic")
    ]


def test_cancel_surfaces() -> None:
    conn = ready_connection("XPUB", "SUB")
    assert conn.receive_data(commands.cancel(b"topic")) == [CommandReceived(b"CANCEL", b"topic")]


def test_join_and_leave_surface() -> None:
    conn = ready_connection("RADIO", "DISH")
    assert conn.receive_data(commands.join(b"g") + commands.leave(b"g")) == [
        CommandReceived(b"JOIN", b"g"),
        CommandReceived(b"LEAVE", b"g"),
    ]


def test_commands_split_message_batches_in_wire_order() -> None:
    conn = ready_connection("XPUB", "SUB")
    wire = (
        encode_messages([[b"m1"], [b"m2", b"x"]])
        + commands.subscribe(b"A")
        + encode_message([b"m3"])
    )
    assert conn.receive_data(wire) == [
        MessagesReceived([[b"m1"], [b"m2", b"x"]]),
        CommandReceived(b"SUBSCRIBE", b"A"),
        MessagesReceived([[b"m3"]]),
    ]


def test_consecutive_commands_are_separate_events() -> None:
    conn = ready_connection()
    wire = encode_command(b"X-A") + encode_command(b"X-B", b"b") + encode_message([b"m"])
    assert conn.receive_data(wire) == [
        CommandReceived(b"X-A", b""),
        CommandReceived(b"X-B", b"b"),
        MessagesReceived([[b"m"]]),
    ]


def test_error_after_the_handshake_surfaces_as_a_command() -> None:
    conn = ready_connection()
    assert conn.receive_data(commands.error("late")) == [CommandReceived(b"ERROR", b"\x04late")]


def test_protocol_error_after_the_handshake() -> None:
    conn = ready_connection()
    fail = only_failure(conn.receive_data(b"\x05\x01\x01"))  # MORE on a command
    assert fail.kind == "protocol"
    assert not fail.during_handshake


def test_max_message_size_after_the_handshake() -> None:
    conn = ready_connection(max_message_size=100)
    assert conn.receive_data(encode_message([b"x" * 100])) == [MessagesReceived([[b"x" * 100]])]
    fail = only_failure(conn.receive_data(b"\x02" + (2**40).to_bytes(8, "big")))
    assert fail.kind == "protocol"
    assert "max_message_size" in fail.reason


# -------------------------------------------------------------------------- send_command


def test_send_command_after_the_handshake() -> None:
    conn = ready_connection("DISH", "RADIO")
    conn.send_command(b"JOIN", b"grp")
    assert conn.data_to_send() == commands.join(b"grp")


def test_send_command_frames_are_queued_in_order() -> None:
    conn = ready_connection("XSUB", "XPUB")
    conn.send_command(b"SUBSCRIBE", b"a")
    conn.send_command(b"CANCEL", b"a")
    conn.send_command(b"X-QOS", b"")
    assert split_commands(conn.data_to_send()) == [
        Command(b"SUBSCRIBE", b"a"),
        Command(b"CANCEL", b"a"),
        Command(b"X-QOS", b""),
    ]


def test_send_command_before_the_handshake_raises() -> None:
    conn = Connection("XSUB")
    with pytest.raises(ProtocolError):
        conn.send_command(b"SUBSCRIBE", b"a")
    assert len(conn.data_to_send()) == 64  # only our greeting


def test_has_output() -> None:
    conn = ready_connection()
    assert not conn.has_output
    conn.send_command(b"X-A")
    assert conn.has_output
    conn.data_to_send()
    assert not conn.has_output


def test_encode_messages_on_a_ready_null_connection() -> None:
    conn = ready_connection()
    batch = [[b"", b"a"], [b"b" * 300]]
    assert conn.encode_messages(batch) == encode_messages(batch)


def test_messages_before_a_malformed_frame_in_the_same_read_are_delivered() -> None:
    # "Bad input loses nothing": the valid messages a peer sent before breaking the protocol
    # reach the application; only then does the connection fail.
    conn = ready_connection("PULL", "PUSH")
    wire = encode_message([b"one"]) + encode_message([b"two"]) + bytes((0x08, 1)) + b"x"
    events = conn.receive_data(wire)
    assert isinstance(events[0], MessagesReceived)
    assert events[0].messages == [[b"one"], [b"two"]]
    assert "reserved" in failure(events).reason
    assert conn.state is State.CLOSED
