"""ZMTP framing: encoders and the incremental FrameDecoder (RFC 23/37,
docs/libzmq-notes.md#frames)."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from zmtp.protocol import Command, FrameDecoder, MessageTooLarge, ProtocolError
from zmtp.protocol.frames import (
    COMMAND,
    LONG,
    MORE,
    encode_command,
    encode_frame,
    encode_message,
    encode_messages,
    frame_header,
    frame_header_error,
    parse_command,
)

KIB = 1024
MIB = 1024 * KIB

EMPTY_FRAME = b"\x00\x00"
LONG_HEADER_2_POW_40 = b"\x02" + (2**40).to_bytes(8, "big")  # a long header, nothing after it


def long_frame(body: bytes, flags: int = 0) -> bytes:
    """A frame in long form whatever its size (libzmq never sends this for <= 255 bytes)."""
    return bytes((flags | LONG,)) + len(body).to_bytes(8, "big") + body


def feed_strict(decoder: FrameDecoder, data: bytes) -> list[list[bytes] | Command]:
    """Feed and raise the decoder's error, if it met one (it reports errors, not raises)."""
    items = decoder.feed(data)
    if decoder.error is not None:
        raise decoder.error
    return items


def feed_in_chunks(decoder: FrameDecoder, data: bytes, size: int) -> list[list[bytes] | Command]:
    out: list[list[bytes] | Command] = []
    for i in range(0, len(data), size):
        out += feed_strict(decoder, data[i : i + size])
    return out


def feed_at_cuts(data: bytes, cuts: list[int]) -> list[list[bytes] | Command]:
    decoder = FrameDecoder()
    out: list[list[bytes] | Command] = []
    bounds = [0, *sorted(cuts), len(data)]
    for start, stop in itertools.pairwise(bounds):
        out += decoder.feed(data[start:stop])
    assert decoder.buffered == 0
    return out


# ------------------------------------------------------------------------------------ encoding


def test_short_frame_encoding() -> None:
    assert encode_frame(b"abc") == b"\x00\x03abc"


def test_short_frame_with_more_flag() -> None:
    assert encode_frame(b"abc", MORE) == b"\x01\x03abc"


def test_empty_frame_is_two_bytes() -> None:
    assert encode_frame(b"") == EMPTY_FRAME
    assert encode_message([b""]) == EMPTY_FRAME


def test_255_bytes_is_the_largest_short_frame() -> None:
    assert encode_frame(b"x" * 255) == b"\x00\xff" + b"x" * 255


def test_256_bytes_uses_the_long_form() -> None:
    body = b"x" * 256
    assert encode_frame(body) == b"\x02" + (256).to_bytes(8, "big") + body
    assert encode_frame(body) == long_frame(body)


def test_frame_header_long_form_keeps_other_flags() -> None:
    assert frame_header(MORE | COMMAND, 300) == b"\x07" + (300).to_bytes(8, "big")


def test_encode_message_sets_more_on_every_part_but_the_last() -> None:
    assert encode_message([b"a", b"", b"b"]) == b"\x01\x01a\x01\x00\x00\x01b"


def test_encode_message_long_parts() -> None:
    big = b"y" * 300
    assert encode_message([big, b"z"]) == long_frame(big, MORE) + b"\x00\x01z"
    assert encode_message([b"z", big]) == b"\x01\x01z" + long_frame(big)
    assert encode_message([big]) == long_frame(big)


def test_encode_messages_is_the_concatenation_of_encode_message() -> None:
    batch = [[b"a"], [b"b", b"c"], [b"x" * 1000], [b""], [b"d" * 256, b""]]
    assert encode_messages(batch) == b"".join(encode_message(m) for m in batch)


@pytest.mark.parametrize(
    "batch",
    [
        [[b"p" * 64]] * 300,  # the one-size fast path
        [[b"q" * 255], [b"r" * 255]],  # the largest short size
        [[b"s" * 256], [b"t" * 256]],  # long frames: the loop
        [[b""], [b""], [b""]],  # empty bodies
        [[b"a" * 64], [b"b" * 63], [b"c" * 64]],  # same first and last size, one differs
        [[b"a" * 8], [b"b", b"c" * 8], [b"d" * 8]],  # a two-part message inside
        [[b"a" * 8], [b"b" * 8], [b"c" * 9]],  # last size differs
        [(b"a" * 8,), (bytearray(b"b" * 8),), (memoryview(b"c" * 8),)],  # other sequences
    ],
)
def test_encode_messages_batches_match_one_message_at_a_time(
    batch: list[list[bytes]],
) -> None:
    """Every shape of batch, the one-size fast path's and its near misses, encodes as its
    messages one at a time would (the fast path joins one header over the bodies)."""
    assert encode_messages(batch) == b"".join(encode_message(m) for m in batch)


def test_encode_command_layout() -> None:
    assert encode_command(b"PING", b"\x00\x00") == b"\x04\x07\x04PING\x00\x00"


def test_encode_command_long_form() -> None:
    data = b"d" * 300
    body = b"\x05HELLO" + data
    assert encode_command(b"HELLO", data) == long_frame(body, COMMAND)


# ------------------------------------------------------------------------- decoding: basics


def test_decode_short_frame() -> None:
    assert FrameDecoder().feed(b"\x00\x03abc") == [[b"abc"]]


def test_decode_long_frame() -> None:
    body = b"q" * 1000
    assert FrameDecoder().feed(long_frame(body)) == [[body]]


def test_long_size_accepted_for_a_small_body() -> None:
    assert FrameDecoder().feed(long_frame(b"abc")) == [[b"abc"]]


def test_long_size_accepted_for_a_small_command() -> None:
    assert FrameDecoder().feed(long_frame(b"\x04PING\x00\x00", COMMAND)) == [
        Command(b"PING", b"\x00\x00")
    ]


def test_long_size_accepted_for_an_empty_body() -> None:
    assert FrameDecoder().feed(long_frame(b"")) == [[b""]]


def test_decode_empty_frame() -> None:
    assert FrameDecoder().feed(EMPTY_FRAME) == [[b""]]


def test_decode_multipart_message() -> None:
    assert FrameDecoder().feed(b"\x01\x01a\x01\x00\x00\x01b") == [[b"a", b"", b"b"]]


def test_multipart_assembled_across_feeds() -> None:
    decoder = FrameDecoder()
    assert decoder.feed(b"\x01\x01a") == []
    assert decoder.feed(b"\x01\x00") == []
    assert decoder.feed(b"\x00\x01b") == [[b"a", b"", b"b"]]


def test_short_multipart_messages_decode_alike_at_every_cut() -> None:
    # The short-multipart fast path (REQ/REP envelopes) hands a complete message on whole
    # and leaves every other case (cut inside it, a long or command frame in it) to the
    # general path: every split of one read into two must give the same items.
    messages = [[b"", b"req"], [b"x"], [b"", b"a" * 300], [b"a", b"", b"b"], [b"", b"z"]]
    ping = encode_command(b"PING", b"\x00\x00")
    wire = encode_message(messages[0]) + encode_message(messages[1])
    wire += encode_message(messages[2]) + b"\x01\x01a" + ping + b"\x01\x00\x00\x01b"
    wire += encode_message(messages[4])
    expected = [*messages[:3], parse_command(ping[2:]), messages[3], messages[4]]
    assert FrameDecoder().feed(wire) == expected
    for cut in range(1, len(wire)):
        assert feed_at_cuts(wire, [cut]) == expected, cut


def test_several_messages_in_one_feed_come_out_in_order() -> None:
    wire = encode_messages([[b"1"], [b"2", b"3"], [b"4"]])
    assert FrameDecoder().feed(wire) == [[b"1"], [b"2", b"3"], [b"4"]]


def test_partial_header_is_buffered() -> None:
    decoder = FrameDecoder()
    assert decoder.feed(b"\x00") == []
    assert decoder.buffered == 1
    assert decoder.feed(b"\x02hi") == [[b"hi"]]
    assert decoder.buffered == 0


def test_partial_long_header_is_buffered() -> None:
    decoder = FrameDecoder()
    wire = long_frame(b"abc")
    assert decoder.feed(wire[:5]) == []
    assert decoder.feed(wire[5:]) == [[b"abc"]]


def test_command_is_decoded() -> None:
    assert FrameDecoder().feed(encode_command(b"SUBSCRIBE", b"topic")) == [
        Command(b"SUBSCRIBE", b"topic")
    ]


def test_commands_and_messages_keep_wire_order() -> None:
    wire = (
        encode_message([b"a"])
        + encode_command(b"X-ONE")
        + encode_message([b"b", b"c"])
        + encode_command(b"X-TWO", b"data")
    )
    assert FrameDecoder().feed(wire) == [
        [b"a"],
        Command(b"X-ONE", b""),
        [b"b", b"c"],
        Command(b"X-TWO", b"data"),
    ]


def test_decoded_parts_are_bytes() -> None:
    (message,) = FrameDecoder().feed(encode_message([b"abc", b"d" * 300]))
    assert isinstance(message, list)
    assert all(type(part) is bytes for part in message)


# --------------------------------------------------------------------- decoding: strictness


@pytest.mark.parametrize("bit", [0x08, 0x10, 0x20, 0x40, 0x80])
def test_reserved_flag_bits_rejected(bit: int) -> None:
    with pytest.raises(ProtocolError, match="reserved"):
        feed_strict(FrameDecoder(), bytes((bit, 1)) + b"x")


@pytest.mark.parametrize("bit", [0x08, 0x80])
def test_reserved_flag_bits_rejected_in_long_form(bit: int) -> None:
    with pytest.raises(ProtocolError, match="reserved"):
        feed_strict(FrameDecoder(), long_frame(b"x", bit))


@pytest.mark.parametrize("bit", [0x08, 0x80])
def test_reserved_flag_bits_rejected_by_next_frame(bit: int) -> None:
    with pytest.raises(ProtocolError, match="reserved"):
        FrameDecoder().next_frame(bytes((COMMAND | bit, 1)) + b"x")


@pytest.mark.parametrize("flags", [COMMAND | MORE, COMMAND | MORE | LONG])
def test_more_on_a_command_rejected(flags: int) -> None:
    body = b"\x04PING\x00\x00"
    wire = long_frame(body, flags) if flags & LONG else bytes((flags, len(body))) + body
    with pytest.raises(ProtocolError, match="MORE"):
        feed_strict(FrameDecoder(), wire)


# libzmq's heartbeat timer writes a PING between two frames of a multipart message
# (stream_engine_base.cpp timer_event; seen on the wire), and its decoder carries on.


def test_command_between_frames_of_a_multipart_is_delivered_and_the_message_kept() -> None:
    wire = (
        encode_frame(b"first", MORE) + encode_command(b"PING", b"\x00\x00") + encode_frame(b"last")
    )
    assert feed_strict(FrameDecoder(), wire) == [
        Command(b"PING", b"\x00\x00"),
        [b"first", b"last"],
    ]


def test_command_between_frames_of_a_multipart_across_feeds() -> None:
    decoder = FrameDecoder()
    assert decoder.feed(encode_frame(b"first", MORE)) == []
    assert feed_strict(decoder, encode_command(b"PING", b"\x00\x00")) == [
        Command(b"PING", b"\x00\x00")
    ]
    assert feed_strict(decoder, encode_frame(b"last")) == [[b"first", b"last"]]


def test_items_before_a_bad_frame_are_still_returned() -> None:
    # A peer that breaks the protocol must not cost us the valid messages it sent first.
    decoder = FrameDecoder()
    wire = encode_message([b"one"]) + encode_message([b"two", b"2"]) + bytes((0x08, 1)) + b"x"
    assert decoder.feed(wire) == [[b"one"], [b"two", b"2"]]
    assert decoder.error is not None
    assert "reserved" in decoder.error.reason


def test_empty_command_body_rejected() -> None:
    with pytest.raises(ProtocolError):
        feed_strict(FrameDecoder(), b"\x04\x00")


def test_command_name_length_beyond_body_rejected() -> None:
    with pytest.raises(ProtocolError, match="name length"):
        feed_strict(FrameDecoder(), b"\x04\x03\x05AB")


# --------------------------------------------------------------------- max_message_size


def test_max_message_size_enforced_from_the_long_header_alone() -> None:
    decoder = FrameDecoder(max_message_size=MIB)
    with pytest.raises(MessageTooLarge):
        feed_strict(decoder, LONG_HEADER_2_POW_40)
    assert decoder.buffered == 0


def test_max_message_size_raises_exactly_when_the_header_completes() -> None:
    decoder = FrameDecoder(max_message_size=MIB)
    for byte in LONG_HEADER_2_POW_40[:-1]:
        assert decoder.feed(bytes((byte,))) == []
    with pytest.raises(MessageTooLarge):
        feed_strict(decoder, LONG_HEADER_2_POW_40[-1:])


def test_max_message_size_enforced_by_next_frame_from_the_header_alone() -> None:
    decoder = FrameDecoder(max_message_size=MIB)
    with pytest.raises(MessageTooLarge):
        decoder.next_frame(LONG_HEADER_2_POW_40)


def test_message_too_large_is_a_protocol_error() -> None:
    assert issubclass(MessageTooLarge, ProtocolError)


def test_per_frame_limit_accepts_exactly_the_limit() -> None:
    assert FrameDecoder(max_message_size=100).feed(encode_frame(b"x" * 100)) == [[b"x" * 100]]


def test_per_frame_limit_rejects_one_byte_more() -> None:
    with pytest.raises(MessageTooLarge):
        feed_strict(FrameDecoder(max_message_size=100), encode_frame(b"x" * 101))


def test_limit_is_per_frame_not_per_message() -> None:
    # libzmq checks ZMQ_MAXMSGSIZE frame by frame: two 100-byte parts pass a limit of 100.
    wire = encode_message([b"a" * 100, b"b" * 100])
    assert FrameDecoder(max_message_size=100).feed(wire) == [[b"a" * 100, b"b" * 100]]


def test_per_frame_limit_applies_to_commands_too() -> None:
    with pytest.raises(MessageTooLarge):
        feed_strict(FrameDecoder(max_message_size=100), encode_command(b"X-BIG", b"d" * 100))


def test_unlimited_by_default_a_huge_header_only_waits() -> None:
    decoder = FrameDecoder()
    assert decoder.feed(LONG_HEADER_2_POW_40) == []
    assert decoder.buffered == 0  # nothing preallocated for the announced size


# ------------------------------------------------------------------------------ large bodies


def test_5_mib_body_in_64_kib_chunks_reassembles_exactly() -> None:
    body = bytes(range(256)) * (5 * MIB // 256)
    wire = encode_message([body])
    decoder = FrameDecoder()
    assert feed_in_chunks(decoder, wire, 64 * KIB) == [[body]]
    assert decoder.buffered == 0


def test_large_parts_inside_a_multipart_with_trailing_frames() -> None:
    big1 = b"A" * (3 * MIB + 7)
    big2 = b"B" * (200 * KIB)
    wire = encode_message([b"head", big1, b"", big2]) + encode_command(b"X-AFTER") + b"\x00\x01z"
    assert feed_in_chunks(FrameDecoder(), wire, 64 * KIB) == [
        [b"head", big1, b"", big2],
        Command(b"X-AFTER", b""),
        [b"z"],
    ]


def test_large_body_reports_buffered_bytes_while_incomplete() -> None:
    body = b"L" * MIB
    wire = encode_message([body])
    decoder = FrameDecoder()
    assert decoder.feed(wire[: 9 + 100 * KIB]) == []
    assert decoder.buffered == 100 * KIB
    assert decoder.feed(wire[9 + 100 * KIB :]) == [[body]]
    assert decoder.buffered == 0


def test_large_body_completed_exactly_by_a_chunk_then_more_frames() -> None:
    body = b"E" * (70 * KIB)
    wire = encode_message([body])
    decoder = FrameDecoder()
    assert decoder.feed(wire[:1000]) == []
    assert decoder.feed(wire[1000:]) == [[body]]
    assert decoder.feed(b"\x00\x01n") == [[b"n"]]


@pytest.mark.parametrize("size", [64 * KIB - 1, 64 * KIB, 64 * KIB + 1])
def test_bodies_around_the_large_body_threshold(size: int) -> None:
    body = bytes(i % 251 for i in range(size))
    wire = encode_message([b"x", body]) + encode_message([b"y"])
    assert feed_in_chunks(FrameDecoder(), wire, 4093) == [[b"x", body], [b"y"]]


def test_large_command_with_more_rejected() -> None:
    body = b"\x05X-BIG" + b"d" * (100 * KIB)
    wire = frame_header(COMMAND | MORE, len(body)) + body
    with pytest.raises(ProtocolError, match="MORE"):
        feed_in_chunks(FrameDecoder(), wire, 16 * KIB)


def test_large_command_between_frames_of_a_multipart_is_delivered() -> None:
    data = b"d" * (100 * KIB)
    wire = encode_frame(b"first", MORE) + encode_command(b"X-BIG", data) + encode_frame(b"last")
    assert feed_in_chunks(FrameDecoder(), wire, 16 * KIB) == [
        Command(b"X-BIG", data),
        [b"first", b"last"],
    ]


def test_large_command_reassembles() -> None:
    data = b"c" * (100 * KIB)
    wire = encode_command(b"X-BIG", data)
    assert feed_in_chunks(FrameDecoder(), wire, 16 * KIB) == [Command(b"X-BIG", data)]


def test_large_body_respects_the_limit() -> None:
    decoder = FrameDecoder(max_message_size=MIB)
    assert decoder.feed(encode_frame(b"m" * MIB)) == [[b"m" * MIB]]
    with pytest.raises(MessageTooLarge):
        feed_strict(decoder, encode_frame(b"m" * (MIB + 1))[:9])


# ------------------------------------------------------------------------- next_frame


def test_next_frame_returns_none_until_a_frame_is_complete() -> None:
    decoder = FrameDecoder()
    wire = encode_command(b"READY", b"props")
    assert decoder.next_frame(wire[:1]) is None
    assert decoder.next_frame(wire[1:4]) is None
    assert decoder.next_frame(wire[4:]) == (COMMAND, b"\x05READYprops")


def test_next_frame_takes_one_frame_at_a_time() -> None:
    decoder = FrameDecoder()
    wire = encode_command(b"READY") + encode_command(b"X-ONE") + encode_frame(b"data")
    assert decoder.next_frame(wire) == (COMMAND, b"\x05READY")
    assert decoder.next_frame() == (COMMAND, b"\x05X-ONE")
    assert decoder.next_frame() == (0, b"data")
    assert decoder.next_frame() is None


def test_next_frame_reads_the_long_form() -> None:
    body = b"\x05READY" + b"p" * 400
    decoder = FrameDecoder()
    wire = long_frame(body, COMMAND)
    assert decoder.next_frame(wire[:8]) is None
    assert decoder.next_frame(wire[8:]) == (COMMAND | LONG, body)


def test_next_frame_leaves_the_rest_for_feed() -> None:
    decoder = FrameDecoder()
    wire = encode_command(b"READY") + encode_message([b"a", b"b"]) + b"\x00"
    assert decoder.next_frame(wire) == (COMMAND, b"\x05READY")
    assert decoder.buffered == len(wire) - len(encode_command(b"READY"))
    assert decoder.feed(b"\x01c") == [[b"a", b"b"], [b"c"]]


def test_next_frame_returns_message_frames_raw() -> None:
    assert FrameDecoder().next_frame(b"\x01\x02hi") == (MORE, b"hi")


# ------------------------------------------------------------------------------- transform


def test_transform_is_applied_to_every_frame() -> None:
    decoder = FrameDecoder()
    decoder.transform = lambda flags, body: (flags, body.upper())
    big = b"b" * (100 * KIB)
    wire = encode_message([b"ab", big]) + encode_message([b"cd"])
    assert feed_in_chunks(decoder, wire, 10 * KIB) == [[b"AB", big.upper()], [b"CD"]]


def test_transform_may_turn_a_frame_into_a_command() -> None:
    decoder = FrameDecoder()
    decoder.transform = lambda flags, body: (COMMAND, b"\x05X-CMD" + body)
    assert decoder.feed(encode_frame(b"xyz")) == [Command(b"X-CMD", b"xyz")]


# ----------------------------------------------------------------------------- Command


def test_parse_command_splits_name_and_data() -> None:
    assert parse_command(b"\x05READYabc") == Command(b"READY", b"abc")


def test_parse_command_without_data() -> None:
    assert parse_command(b"\x04PONG") == Command(b"PONG", b"")


@pytest.mark.parametrize("body", [b"", b"\x00", b"\x00PING", b"\x05READ"])
def test_parse_command_rejects_malformed_bodies(body: bytes) -> None:
    with pytest.raises(ProtocolError):
        parse_command(body)


def test_command_equality_and_repr() -> None:
    assert Command(b"A", b"x") == Command(b"A", b"x")
    assert Command(b"A", b"x") != Command(b"A", b"y")
    assert Command(b"A", b"x") != (b"A", b"x")
    assert "Command(b'A'" in repr(Command(b"A", b"x"))


def test_command_is_unhashable() -> None:
    with pytest.raises(TypeError):
        hash(Command(b"A", b""))


# ------------------------------------------------------------------------------ hypothesis

#: Parts: often empty or tiny, sometimes just past the short-form limit.
parts = st.one_of(
    st.just(b""),
    st.binary(min_size=1, max_size=20),
    st.binary(min_size=250, max_size=600),
)
messages = st.lists(parts, min_size=1, max_size=5)
message_lists = st.lists(messages, max_size=10)
commands_st = st.builds(
    Command,
    st.binary(min_size=1, max_size=30),
    st.one_of(st.just(b""), st.binary(max_size=20), st.binary(min_size=250, max_size=400)),
)
items = st.lists(st.one_of(messages, commands_st), max_size=12)

HYPOTHESIS = settings(deadline=None, max_examples=150, suppress_health_check=[HealthCheck.too_slow])


def encode_items(batch: list[list[bytes] | Command]) -> bytes:
    return b"".join(
        encode_command(item.name, item.data) if isinstance(item, Command) else encode_message(item)
        for item in batch
    )


@HYPOTHESIS
@given(message_lists)
def test_messages_fed_all_at_once(batch: list[list[bytes]]) -> None:
    assert FrameDecoder().feed(encode_messages(batch)) == batch


@HYPOTHESIS
@given(message_lists)
def test_messages_fed_one_byte_at_a_time(batch: list[list[bytes]]) -> None:
    assert feed_in_chunks(FrameDecoder(), encode_messages(batch), 1) == batch


@HYPOTHESIS
@given(message_lists, st.data())
def test_messages_fed_in_random_chunks(batch: list[list[bytes]], data: st.DataObject) -> None:
    wire = encode_messages(batch)
    cuts = data.draw(st.lists(st.integers(0, len(wire)), max_size=30))
    assert feed_at_cuts(wire, cuts) == batch


@HYPOTHESIS
@given(items)
def test_interleaved_commands_fed_all_at_once(batch: list[list[bytes] | Command]) -> None:
    assert FrameDecoder().feed(encode_items(batch)) == batch


@HYPOTHESIS
@given(items)
def test_interleaved_commands_fed_one_byte_at_a_time(batch: list[list[bytes] | Command]) -> None:
    assert feed_in_chunks(FrameDecoder(), encode_items(batch), 1) == batch


@HYPOTHESIS
@given(items, st.data())
def test_interleaved_commands_fed_in_random_chunks(
    batch: list[list[bytes] | Command], data: st.DataObject
) -> None:
    wire = encode_items(batch)
    cuts = data.draw(st.lists(st.integers(0, len(wire)), max_size=30))
    assert feed_at_cuts(wire, cuts) == batch


@settings(deadline=None, max_examples=25)
@given(
    st.lists(st.sampled_from([0, 1, 255, 256, 64 * KIB, 64 * KIB + 1, 150 * KIB]), min_size=1),
    st.data(),
)
def test_large_and_small_bodies_in_random_chunks(sizes: list[int], data: st.DataObject) -> None:
    batch = [[bytes([i % 256]) * size] for i, size in enumerate(sizes)]
    wire = encode_messages(batch)
    cuts = data.draw(st.lists(st.integers(0, len(wire)), max_size=20))
    assert feed_at_cuts(wire, cuts) == batch


@pytest.mark.parametrize("fast_commands", [False, True])
def test_messages_only_says_whether_a_feed_returned_commands(fast_commands: bool) -> None:
    """The connection hands a data-only feed on whole (no per-item sorting), so the flag
    must be False whenever a command is among the items, wherever in the read it is, and
    wherever the decoder parsed it (short fast path, general loop, split across reads)."""
    decoder = FrameDecoder()
    decoder.fast_commands = fast_commands
    data = encode_messages([[b"a"], [b"b"]] * 3)
    ping = encode_command(b"PING", b"\x00\x00")
    assert decoder.feed(data) == [[b"a"], [b"b"]] * 3
    assert decoder.messages_only
    assert (
        decoder.feed(data + ping + data)
        == [[b"a"], [b"b"]] * 3 + [Command(b"PING", b"\x00\x00")] + [[b"a"], [b"b"]] * 3
    )
    assert not decoder.messages_only
    assert (
        decoder.feed(encode_message([b"x", b"y"]) + data)
        == [[b"x", b"y"]]
        + [
            [b"a"],
            [b"b"],
        ]
        * 3
    )
    assert decoder.messages_only
    assert decoder.feed(data + ping[:3]) == [[b"a"], [b"b"]] * 3
    assert decoder.messages_only
    assert decoder.feed(ping[3:]) == [Command(b"PING", b"\x00\x00")]
    assert not decoder.messages_only
    # A short data frame split across reads is completed by the next feed.
    assert decoder.feed(data[:5]) == [[b"a"]]
    assert decoder.feed(data[5:]) == [[b"b"]] + [[b"a"], [b"b"]] * 2
    assert decoder.messages_only


# ------------------------------------------------- long reads after an incomplete frame
#
# A read longer than the decoder's join limit (8 KiB) that follows an incomplete frame is not
# copied whole: the held frame is completed from its head and the rest is parsed in place.
# These pin that path down: frames cut anywhere (inside a long header too) and followed by
# long reads, around the large-body size (8 KiB), with multipart messages and commands.

around_8_kib = st.sampled_from([0, 1, 255, 256, 1000, 8 * KIB - 1, 8 * KIB, 8 * KIB + 1, 20 * KIB])
long_read_items = st.lists(
    st.one_of(
        st.lists(around_8_kib.map(lambda n: b"p" * n), min_size=1, max_size=3),
        st.builds(Command, st.just(b"X-CMD"), around_8_kib.map(lambda n: b"c" * n)),
    ),
    min_size=1,
    max_size=12,
)


@settings(deadline=None, max_examples=100)
@given(long_read_items, st.data())
def test_long_reads_after_any_cut_decode_the_same(
    batch: list[list[bytes] | Command], data: st.DataObject
) -> None:
    wire = encode_items(batch)
    # Cuts anywhere; the pieces between them are mostly longer than the join limit.
    cuts = data.draw(st.lists(st.integers(0, len(wire)), max_size=8))
    assert feed_at_cuts(wire, cuts) == batch


@pytest.mark.parametrize("cut", range(1, 9))
def test_a_long_header_cut_by_a_read_is_completed_by_a_long_read(cut: int) -> None:
    """The previous read ended inside a long (9-byte) header; the next, long read supplies
    the rest of the header, the body and frames after it."""
    body = b"B" * (12 * KIB)
    wire = encode_message([b"a"]) + encode_message([body, b"end"]) + encode_message([b"z" * 9000])
    split = len(encode_message([b"a"])) + cut
    decoder = FrameDecoder()
    assert feed_strict(decoder, wire[:split]) == [[b"a"]]
    assert decoder.buffered == cut
    assert feed_strict(decoder, wire[split:]) == [[body, b"end"], [b"z" * 9000]]
    assert decoder.buffered == 0


def test_a_long_read_that_ends_with_the_held_frame_leaves_nothing_behind() -> None:
    body = b"e" * (8 * KIB)  # the largest body sliced out of a read (9 + 8 KiB frame)
    wire = encode_message([body])
    decoder = FrameDecoder()
    assert feed_strict(decoder, wire[:3]) == []
    assert len(wire) - 3 > 8 * KIB  # a long read, which holds exactly the rest of the frame
    assert feed_strict(decoder, wire[3:]) == [[body]]
    assert decoder.buffered == 0


def test_a_long_read_that_does_not_complete_the_held_frame_keeps_it_in_pieces() -> None:
    body = b"w" * (40 * KIB)
    wire = encode_message([b"x"]) + encode_message([body])
    decoder = FrameDecoder()
    assert feed_strict(decoder, wire[:7]) == [[b"x"]]  # then 4 bytes of the long header
    assert feed_strict(decoder, wire[7 : 7 + 9000]) == []
    assert decoder.buffered == 9000 + 4 - 9  # the body's first piece, nothing else
    assert feed_strict(decoder, wire[7 + 9000 :]) == [[body]]
    assert decoder.buffered == 0


def test_max_message_size_refuses_a_held_header_before_a_long_read_is_kept() -> None:
    decoder = FrameDecoder(max_message_size=10 * KIB)
    header = frame_header(0, 50 * KIB)
    assert feed_strict(decoder, header[:5]) == []
    with pytest.raises(MessageTooLarge):
        feed_strict(decoder, header[5:] + b"x" * (20 * KIB))
    assert decoder.buffered == 0


# ------------------------------------------- the header checks spelled out for other loops


@settings(deadline=None, max_examples=400, suppress_health_check=[HealthCheck.too_slow])
@given(
    flags=st.integers(0, 255),
    size=st.integers(0, 600),
    max_size=st.integers(-1, 600),
    long_form=st.booleans(),
)
def test_frame_header_error_is_the_decoders_verdict(
    flags: int, size: int, max_size: int, long_form: bool
) -> None:
    """``frame_header_error`` (used by the CURVE batch decoder's own loop) is documented as
    the general loop's checks, in its order, with its messages: for any header, the decoder
    fails with exactly that error (type and text), and a data frame it passes decodes."""
    if size > 255:
        long_form = True
    flags = flags | LONG if long_form else flags & ~LONG
    header = bytes((flags,)) + (size.to_bytes(8, "big") if long_form else bytes((size,)))
    decoder = FrameDecoder(max_message_size=max_size)
    decoder.feed(header + b"\x01" * size)
    expected = frame_header_error(flags, size, max_size)
    if expected is not None:
        assert decoder.error is not None
        assert (type(decoder.error), str(decoder.error)) == (type(expected), str(expected))
    elif not flags & COMMAND:
        assert decoder.error is None
