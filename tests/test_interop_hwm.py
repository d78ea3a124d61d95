"""High-water marks against libzmq: our PUSH blocks when a libzmq PULL stops reading, and
resumes, without losing or duplicating a message, when it reads again."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

import zmtp
from zmtp.interop import Libzmq, link
from zmtp.testing import bind_endpoint
from zmtp.testing.fixtures import TEST_TIMEOUT, libzmq_env  # noqa: F401

pytestmark = [pytest.mark.anyio, pytest.mark.interop]

PAYLOAD = bytes(64 * 1024)  # large messages fill the kernel buffers quickly
#: Far more than fits in both HWMs plus the socket buffers (several MB) of tcp or ipc.
MAX_BEFORE_BLOCKING = 2000


def numbered(i: int) -> list[bytes]:
    return [i.to_bytes(4, "big"), PAYLOAD]


@pytest.mark.parametrize("binds", ["zmtp", "libzmq"])
@pytest.mark.parametrize("transport", ["tcp", "ipc"])
async def test_push_blocks_at_hwm_then_resumes(
    lz: Libzmq, tmp_path: Path, transport: str, binds: str
) -> None:
    with anyio.fail_after(TEST_TIMEOUT):
        theirs = lz.socket("PULL", rcvhwm=4)
        async with zmtp.Socket(zmtp.PUSH, send_hwm=4, send_timeout=0.3, linger=0) as ours:
            await link(ours, theirs, binds=binds, endpoint=bind_endpoint(transport, tmp_path))
            # libzmq is not reading: sends succeed until every buffer is full, then block.
            sent = 0
            with pytest.raises(TimeoutError):
                while sent < MAX_BEFORE_BLOCKING:
                    await ours.send_multipart(numbered(sent))
                    sent += 1
            assert 4 <= sent < MAX_BEFORE_BLOCKING, f"blocked after {sent} messages"
            # Still blocked: nothing was drained meanwhile.
            with pytest.raises(TimeoutError):
                await ours.send_multipart(numbered(sent))

            # libzmq reads: the blocked sender resumes and every message arrives exactly once.
            total = sent + 50
            received: list[list[bytes]] = []

            async def read_all() -> None:
                received.extend(await theirs.recv_many(total))

            async with anyio.create_task_group() as tg:
                tg.start_soon(read_all)
                for i in range(sent, total):
                    await ours.send_multipart(numbered(i))  # each within send_timeout
            numbers = [int.from_bytes(m[0], "big") for m in received]
            # The sends that timed out queued nothing: no duplicate, no gap.
            assert numbers == list(range(total))
            assert all(m[1] == PAYLOAD for m in received)


async def test_libzmq_push_blocks_when_our_pull_stops_reading(lz: Libzmq) -> None:
    """The reverse: with recv_hwm reached we stop reading the socket, so libzmq's sender
    eventually blocks; once we read, everything arrives in order."""
    with anyio.fail_after(TEST_TIMEOUT):
        theirs = lz.socket("PUSH", sndhwm=4)
        async with zmtp.Socket(zmtp.PULL, recv_hwm=4, linger=0) as ours:
            await link(ours, theirs, binds="zmtp", endpoint="tcp://127.0.0.1:*")
            sent = 0
            with pytest.raises(TimeoutError):
                while sent < MAX_BEFORE_BLOCKING:
                    await theirs.send_multipart(numbered(sent), timeout=0.3)
                    sent += 1
            assert 4 <= sent < MAX_BEFORE_BLOCKING
            received = [await ours.recv_multipart() for _ in range(sent)]
            assert [int.from_bytes(m[0], "big") for m in received] == list(range(sent))
