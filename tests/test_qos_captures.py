"""Byte compatibility with the Ruby omq-qos stack, from its raw captures (omq-qos-captures).

Receiver: each capture's client (PUSH) bytes are played into a zmtp PULL at that level over a
raw TCP socket, and every ACK/COMP/NACK we answer must equal the captured one. Sender (the
mirror): a zmtp PUSH sends the captured messages to a raw TCP server that answers with the
captured receiver bytes (each answer once the message it answers was written, so retries after
a retryable NACK are driven as the reference's were), and every data frame and CLR it writes
must equal the captured ones. Every capture is played both ways.
The greeting and READY are skipped (our READY carries other identities and property order).
"""

from __future__ import annotations

import struct

import anyio
import pytest
from anyio.abc import SocketStream

import zmtp
import zmtp_qos
from tests._vectors import VECTORS_DIR
from zmtp_qos import Delivered
from zmtp_qos.events import QoSRetried

pytestmark = pytest.mark.anyio

CAPTURES = VECTORS_DIR / "omq-qos-captures"
GREETING = 64
MESSAGES = [[b"cap-1"], [b"cap-2a", b"cap-2b"], [b"L" * 300]]
CAPTURE_NAMES = ["qos1", "qos2", "qos3-terminal-nack", "qos3-retryable-nack"]
#: (capture, level, messages the application sees: retries included)
RECEIVER_CASES = [
    ("qos1", 1, 3),
    ("qos2", 2, 3),
    ("qos3-terminal-nack", 3, 3),
    ("qos3-retryable-nack", 3, 5),
]


def _frames(data: bytes) -> list[bytes]:
    """Every complete frame (raw bytes) after the greeting."""
    frames, pos = [], GREETING
    while pos + 2 <= len(data):
        flags = data[pos]
        if flags & 0x02:
            if pos + 9 > len(data):
                break
            (size,) = struct.unpack_from(">Q", data, pos + 1)
            head = 9
        else:
            size, head = data[pos + 1], 2
        if pos + head + size > len(data):
            break
        frames.append(data[pos : pos + head + size])
        pos += head + size
    return frames


def _after_ready(data: bytes) -> list[bytes]:
    frames = _frames(data)
    assert frames and frames[0][2:8] == b"\x05READY"
    return frames[1:]


def _capture(name: str, direction: str) -> bytes:
    return (CAPTURES / f"{name}.conn1.{direction}.bin").read_bytes()


async def _read_until(stream: SocketStream, buf: bytearray, frames_wanted: int) -> None:
    while len(_frames(bytes(buf))) < frames_wanted:
        buf += await stream.receive()


async def _play_client(stream: SocketStream, client: bytes, buf: bytearray) -> None:
    """Send a captured client stream as the reference's client sent it: a retry (a data
    message identical to an earlier one) only once the NACK that caused it has arrived (our
    receiver answers a copy that arrives while the first is still being processed with that
    copy's verdict instead of delivering it again)."""
    pending = bytearray(client[:GREETING])
    sent: set[bytes] = set()
    message = bytearray()
    retries = 0
    for frame in _frames(client):
        if frame[0] & 0x04:  # a command (READY, CLR)
            pending += frame
            continue
        message += frame
        if frame[0] & 0x01:  # MORE: the message goes on
            continue
        if bytes(message) in sent:
            retries += 1
            await stream.send(bytes(pending))
            pending.clear()
            while sum(f[2:7] == b"\x04NACK" for f in _frames(bytes(buf))) < retries:
                buf += await stream.receive()
        sent.add(bytes(message))
        pending += message
        message.clear()
    await stream.send(bytes(pending))


def _port(endpoint: str) -> int:
    return int(endpoint.rsplit(":", 1)[1])


async def _verdicts(pull: zmtp_qos.Socket, name: str, count: int) -> None:
    for n in range(1, count + 1):
        handle = await pull.recv_handle()
        if handle.parts == [b"cap-2a", b"cap-2b"] and (
            (name == "qos3-terminal-nack" and n == 2)
            or (name == "qos3-retryable-nack" and n in (2, 4))
        ):
            handle.reject(0x05 if name == "qos3-terminal-nack" else 0x84, f"peer nack #{n}")
        else:
            handle.complete()


@pytest.mark.parametrize(("name", "level", "deliveries"), RECEIVER_CASES)
async def test_receiver_answers_as_the_reference(name: str, level: int, deliveries: int) -> None:
    client = _capture(name, "c2s")
    expected = _after_ready(_capture(name, "s2c"))
    with anyio.fail_after(20):
        async with zmtp_qos.Socket(zmtp.PULL, qos=level) as pull:
            ep = await pull.bind("tcp://127.0.0.1:*")
            stream = await anyio.connect_tcp("127.0.0.1", _port(ep))
            async with stream, anyio.create_task_group() as tg:
                buf = bytearray()
                if level == 3:
                    tg.start_soon(_verdicts, pull, name, deliveries)
                    await _play_client(stream, client, buf)
                else:
                    await stream.send(client)
                    for parts in MESSAGES:
                        assert await pull.recv_multipart() == parts
                await _read_until(stream, buf, 1 + len(expected))
                assert _after_ready(bytes(buf)) == expected


def _data_messages(data: bytes) -> int:
    """How many complete data messages (not commands) ``data`` holds after the greeting."""
    return sum(1 for f in _frames(data) if not f[0] & 0x04 and not f[0] & 0x01)


async def _serve_answers(
    stream: SocketStream, server: bytes, got: bytearray, expected_frames: int
) -> None:
    """Play a captured receiver: its greeting and READY, then its k-th answer (ACK, COMP,
    NACK) once the client has written its k-th data message (each answer of the captures
    is to the next message in the client's order, retries included). Answers already due
    go out in one write, as the reference's did, so a NACK's retry cannot overtake the
    answers that came with it."""
    frames = _frames(server)
    ready_end = GREETING + len(frames[0])
    await stream.send(server[:ready_end])
    due = bytearray()
    for k, answer in enumerate(frames[1:]):
        if _data_messages(bytes(got)) < k + 1:
            if due:
                await stream.send(bytes(due))
                due.clear()
            while _data_messages(bytes(got)) < k + 1:
                got += await stream.receive()
        due += answer
    await stream.send(bytes(due))
    await _read_until(stream, got, expected_frames)


@pytest.mark.parametrize("name", CAPTURE_NAMES)
async def test_sender_writes_as_the_reference(name: str) -> None:
    """The mirror: our PUSH, answered with the captured receiver bytes, writes the captured
    data and CLR frames, in order: for ``qos3-retryable-nack`` the retry after each NACK
    0x84 (the same bytes again, after back-off), then the CLR after the final COMP."""
    level = int(name[3])
    server = _capture(name, "s2c")
    expected = _after_ready(_capture(name, "c2s"))
    listener = await anyio.create_tcp_listener(local_host="127.0.0.1")
    port = listener.extra(anyio.abc.SocketAttribute.local_port)  # type: ignore[attr-defined]
    got = bytearray()
    all_written = anyio.Event()

    async def serve(stream: SocketStream) -> None:
        async with stream:
            await _serve_answers(stream, server, got, 1 + len(expected))
            all_written.set()
            await anyio.sleep_forever()

    # Back-off long enough that a retry never overtakes the answers written with its NACK.
    config = zmtp_qos.QoSConfig(backoff_base=0.2, backoff_max=0.4)
    with anyio.fail_after(20):
        async with listener, anyio.create_task_group() as tg:
            tg.start_soon(listener.serve, serve)
            async with zmtp_qos.Socket(zmtp.PUSH, qos=level, config=config, linger=0) as push:
                events = push.monitor()
                await push.connect(f"tcp://127.0.0.1:{port}")
                receipts = [await push.send_multipart(parts) for parts in MESSAGES]
                outcomes = [await r for r in receipts]  # type: ignore[misc]
                await all_written.wait()
                assert _after_ready(bytes(got)) == expected
                if name == "qos3-terminal-nack":
                    assert isinstance(outcomes[1], zmtp_qos.DeadLetter)
                    assert outcomes[1].error == zmtp_qos.NackError(0x05, "peer nack #2")
                    assert [type(o) for o in (outcomes[0], outcomes[2])] == [Delivered] * 2
                else:
                    assert all(isinstance(o, Delivered) for o in outcomes)
                if name == "qos3-retryable-nack":
                    for retry in (1, 2):
                        event = await events.wait_for(QoSRetried)
                        assert isinstance(event, QoSRetried)
                        assert (event.code, event.retry) == (0x84, retry)
            tg.cancel_scope.cancel()


def test_every_capture_is_played_both_ways() -> None:
    """Each capture in the vectors is used by the receiver test and by the sender mirror."""
    on_disk = {p.name.split(".conn1.")[0] for p in CAPTURES.glob("*.conn1.*.bin")}
    assert on_disk == set(CAPTURE_NAMES)
    for name in CAPTURE_NAMES:
        assert (CAPTURES / f"{name}.conn1.c2s.bin").is_file()
        assert (CAPTURES / f"{name}.conn1.s2c.bin").is_file()
    assert {case[0] for case in RECEIVER_CASES} == set(CAPTURE_NAMES)
