"""PAIR <-> PAIR against libzmq (pyzmq), both directions, tcp and ipc, either side binding."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

import zmtp
from zmtp.interop import (
    Libzmq,
    ZmtpEnd,
    expect_libzmq_saw,
    expect_peer,
    link,
    sample_messages,
    transfer,
)
from zmtp.testing import bind_endpoint, event_within
from zmtp.testing.fixtures import TEST_TIMEOUT, libzmq_env  # noqa: F401

pytestmark = [pytest.mark.anyio, pytest.mark.interop]


@pytest.mark.parametrize("binds", ["zmtp", "libzmq"])
@pytest.mark.parametrize("transport", ["tcp", "ipc"])
async def test_pair_both_directions(lz: Libzmq, tmp_path: Path, transport: str, binds: str) -> None:
    with anyio.fail_after(TEST_TIMEOUT):
        async with zmtp.Socket(zmtp.PAIR, linger=0) as ours:
            theirs = lz.socket("PAIR")
            peer = await link(
                ours, theirs, binds=binds, endpoint=bind_endpoint(transport, tmp_path)
            )
            expect_peer(peer, "PAIR")
            messages = sample_messages(10_000)  # single, multipart, empty, 1 MiB, then ordering
            await transfer(ZmtpEnd(ours), theirs, messages)
            expect_libzmq_saw(theirs, "PAIR")
            await transfer(theirs, ZmtpEnd(ours), messages)
            # Ping-pong: each side answers what the other sent.
            for i in range(20):
                await ours.send_multipart([b"ping", bytes([i])])
                [request] = await theirs.recv_many(1)
                await theirs.send_multipart([b"pong", request[1]])
                assert await ours.recv_multipart() == [b"pong", bytes([i])]


async def test_bound_pair_refuses_a_second_libzmq_peer(lz: Libzmq) -> None:
    """Like libzmq, a PAIR with a peer refuses the next one; the first keeps working."""
    with anyio.fail_after(TEST_TIMEOUT):
        async with zmtp.Socket(zmtp.PAIR, linger=0) as ours:
            first = lz.socket("PAIR")
            await link(ours, first, binds="zmtp", endpoint="tcp://127.0.0.1:*")
            monitor = ours.monitor()
            second = lz.socket("PAIR")
            second.connect(ours.last_endpoint)
            event = await monitor.wait_for((zmtp.HandshakeFailed, zmtp.HandshakeSucceeded))
            assert isinstance(event, zmtp.HandshakeFailed), event
            assert "already has a peer" in event.reason
            await second.send_multipart([b"from the second peer"])
            await first.send_multipart([b"from the first peer"])
            assert await ours.recv_multipart() == [b"from the first peer"]
            await ours.send(b"to the first peer")
            assert await first.recv_multipart() == [b"to the first peer"]
            # Nothing from the refused peer ever shows up.
            with anyio.move_on_after(0.3):
                unexpected = await ours.recv_multipart()
                pytest.fail(f"received {unexpected!r} from the refused peer")
            assert await event_within(monitor, zmtp.Disconnected, 0.01) is None
