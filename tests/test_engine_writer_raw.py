"""The connection writer's raw first write (``StreamConnection._write_raw``, zmtp/engine/stream.py):
the writer sends a batch with a non-blocking send on the raw socket and hands what did not go
to the stream's ``send``, which waits for room; with more than a batch queued it yields between
batches. Nothing may be lost, doubled or reordered across that hand-over, whichever part of a
frame the raw send stopped in.
"""

from __future__ import annotations

import anyio
import pytest

import zmtp
from tests import test_engine_helpers as helpers
from tests.test_engine_helpers import TIMEOUT

pytestmark = pytest.mark.anyio

stream_endpoint = helpers.stream_endpoint  # fixture
stream_transport = helpers.stream_transport  # fixture


def _message(i: int, size: int) -> bytes:
    return i.to_bytes(4, "big") + bytes([i % 251]) * (size - 4)


@pytest.mark.parametrize("size", [64, 256 * 1024 + 3])
async def test_a_backlog_larger_than_the_socket_buffer_arrives_whole_and_in_order(
    stream_endpoint: str, size: int
) -> None:
    """Everything is queued before the receiver reads anything: the raw sends fill the kernel
    buffer and stop part-way (inside a frame, for the large size), the stream's send takes
    over, and the writer's batches (4 of the large messages each: the byte budget) follow
    one another with a yield between them."""
    count = 20_000 if size == 64 else 48
    async with (
        zmtp.Socket(zmtp.PULL, recv_hwm=4) as pull,
        zmtp.Socket(zmtp.PUSH, send_hwm=0, linger=5.0) as push,
    ):
        await pull.bind(stream_endpoint)
        await push.connect(pull.last_endpoint)
        with anyio.fail_after(TIMEOUT):
            for i in range(count):
                await push.send(_message(i, size))
            for i in range(count):
                assert await pull.recv() == _message(i, size), i
