"""What a hostile peer can make the protocol core hold (issue 14, findings 2-4).

Each test measures the bound itself: bytes buffered, bytes copied, what is queued for the peer,
and that the refusal comes at the frame header, before any body is read.
"""

from __future__ import annotations

import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.test_protocol_helpers import failure, peer_greeting, ready_connection, ready_frame
from zmtp.protocol import Connection, ConnectionFailed, FrameDecoder, MessageTooLarge
from zmtp.protocol.frames import (
    COMMAND,
    DEFAULT_MAX_HANDSHAKE_SIZE,
    LONG,
    frame_header,
    host_frame_limit,
)


def long_header(flags: int, size: int) -> bytes:
    return bytes((flags | LONG,)) + size.to_bytes(8, "big")


def greeted(**kwargs: object) -> Connection:
    """A PULL server that has read a NULL client's greeting and waits for its READY."""
    conn = Connection("PULL", **kwargs)  # type: ignore[arg-type]
    conn.data_to_send()
    assert conn.receive_data(peer_greeting()) == []
    return conn


# ------------------------------------------------------------------ finding 4: the handshake


@pytest.mark.parametrize("size", [DEFAULT_MAX_HANDSHAKE_SIZE + 1, 2**40, 2**64 - 1])
def test_a_huge_handshake_frame_is_refused_at_its_header(size: int) -> None:
    conn = greeted()
    event = failure(conn.receive_data(long_header(COMMAND, size)))
    assert event.during_handshake
    assert "max_handshake_size" in event.reason, event.reason
    assert conn.buffered == 0


def test_max_handshake_size_is_the_connection_option() -> None:
    body_of = len(ready_frame({"Socket-Type": b"PUSH"})) - 2
    conn = greeted(max_handshake_size=body_of - 1)
    assert (
        "max_handshake_size"
        in failure(conn.receive_data(ready_frame({"Socket-Type": b"PUSH"}))).reason
    )
    conn = greeted(max_handshake_size=body_of)
    (event,) = conn.receive_data(ready_frame({"Socket-Type": b"PUSH"}))
    assert event.socket_type == "PUSH"  # type: ignore[attr-defined]


def test_a_ready_with_60_kib_of_metadata_still_fits_the_default() -> None:
    conn = greeted()
    (event,) = conn.receive_data(ready_frame({"Socket-Type": b"PUSH", "X-Big": b"m" * 60_000}))
    assert event.properties["X-Big"] == b"m" * 60_000  # type: ignore[attr-defined]


class CountedChunk(bytes):
    """A read whose concatenation onto a buffer is counted: ``buf + chunk`` copies both."""

    copied = 0

    def __radd__(self, other: bytes) -> bytes:
        CountedChunk.copied += len(other) + len(self)
        return bytes(other) + bytes(self)


def test_a_handshake_frame_arriving_in_small_reads_is_not_recopied_per_read() -> None:
    # The old decoder joined the partial frame with every read: 60 KB in 100-byte reads copied
    # ~18 MB. Now the reads are kept aside and joined once.
    wire = ready_frame({"Socket-Type": b"PUSH", "X-Big": b"m" * 60_000})
    conn = greeted()
    CountedChunk.copied = 0
    events = []
    for i in range(0, len(wire), 100):
        events += conn.receive_data(CountedChunk(wire[i : i + 100]))
    assert [type(e).__name__ for e in events] == ["HandshakeComplete"]
    assert CountedChunk.copied <= 2 * len(wire), CountedChunk.copied


def test_the_partial_handshake_frame_buffered_never_exceeds_the_cap() -> None:
    conn = greeted()
    header = long_header(COMMAND, DEFAULT_MAX_HANDSHAKE_SIZE)
    assert conn.receive_data(header + b"\x05READY") == []
    for _ in range(DEFAULT_MAX_HANDSHAKE_SIZE // 4096 - 1):
        assert conn.receive_data(b"\x00" * 4096) == []
    assert conn.buffered <= DEFAULT_MAX_HANDSHAKE_SIZE + len(header)


# ------------------------------------------------------------------ finding 3: data frames


def test_unlimited_means_the_hosts_memory() -> None:
    assert 0 < host_frame_limit() <= sys.maxsize


@pytest.mark.parametrize("size", [2**63, 2**64 - 1, "host+1"])
def test_a_data_frame_larger_than_the_host_is_refused_at_its_header(size: object) -> None:
    n = host_frame_limit() + 1 if size == "host+1" else size
    assert isinstance(n, int)
    decoder = FrameDecoder()  # max_message_size unlimited (the default)
    assert decoder.feed(long_header(0, n) + b"x" * 1000) == []
    assert isinstance(decoder.error, MessageTooLarge)
    assert "memory" in decoder.error.reason
    assert decoder.buffered == 0


def test_a_connection_refuses_it_and_keeps_nothing() -> None:
    conn = ready_connection("PULL", "PUSH")
    events = conn.receive_data(frame_header(0, 3) + b"abc" + long_header(0, 2**63) + b"y" * 100)
    assert events[0].messages == [[b"abc"]]  # type: ignore[attr-defined]
    assert "memory" in failure(events).reason
    assert conn.buffered == 0


def test_a_large_frame_within_the_host_is_still_buffered() -> None:
    decoder = FrameDecoder()
    assert decoder.feed(long_header(0, 1 << 20) + b"z" * 1000) == []
    assert decoder.error is None and decoder.buffered == 1000


# ------------------------------------------------------------------ random input


@settings(max_examples=200, deadline=None)
@given(
    mechanism_bytes=st.sampled_from([b"NULL", b"PLAIN", b"CURVE"]),
    chunks=st.lists(st.binary(max_size=300), max_size=12),
)
def test_random_bytes_after_a_greeting_only_ever_fail_the_connection(
    mechanism_bytes: bytes, chunks: list[bytes]
) -> None:
    # Only NULL is configured: PLAIN/CURVE greetings must be refused cleanly too.
    conn = Connection("PULL")
    events = conn.receive_data(peer_greeting(mechanism=mechanism_bytes))
    for chunk in chunks:
        events += conn.receive_data(chunk)
    failures = [e for e in events if isinstance(e, ConnectionFailed)]
    assert len(failures) <= 1
    assert conn.buffered <= DEFAULT_MAX_HANDSHAKE_SIZE + 9 + 300


@settings(max_examples=200, deadline=None)
@given(chunks=st.lists(st.binary(max_size=300), max_size=12))
def test_random_bytes_after_the_handshake_only_ever_fail_the_connection(
    chunks: list[bytes],
) -> None:
    conn = ready_connection("PULL", "PUSH", max_message_size=4096)
    events = []
    for chunk in chunks:
        events += conn.receive_data(chunk)
    assert len([e for e in events if isinstance(e, ConnectionFailed)]) <= 1
    assert conn.buffered <= 4096 + 9 + 300
