"""max_message_size against libzmq's ZMQ_MAXMSGSIZE, both ways. Both check each frame: a frame
of exactly the limit passes, one byte more closes that connection."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

import zmtp
from zmtp.interop import Libzmq, link
from zmtp.testing import bind_endpoint
from zmtp.testing.fixtures import TEST_TIMEOUT, libzmq_env  # noqa: F401

pytestmark = [pytest.mark.anyio, pytest.mark.interop]

LIMIT = 100


@pytest.mark.parametrize("binds", ["zmtp", "libzmq"])
@pytest.mark.parametrize("transport", ["tcp", "ipc"])
async def test_our_max_message_size_against_libzmq(
    lz: Libzmq, tmp_path: Path, transport: str, binds: str
) -> None:
    with anyio.fail_after(TEST_TIMEOUT):
        theirs = lz.socket("PUSH")
        async with zmtp.Socket(zmtp.PULL, max_message_size=LIMIT, linger=0) as ours:
            await link(ours, theirs, binds=binds, endpoint=bind_endpoint(transport, tmp_path))
            monitor = ours.monitor()
            at_limit = b"x" * LIMIT
            await theirs.send_multipart([at_limit])
            assert await ours.recv_multipart() == [at_limit]
            # Checked per frame, like libzmq: two frames at the limit are fine.
            await theirs.send_multipart([at_limit, at_limit])
            assert await ours.recv_multipart() == [at_limit, at_limit]
            await theirs.send_multipart([b"y" * (LIMIT + 1)])
            event = await monitor.wait_for((zmtp.Disconnected, zmtp.HandshakeFailed))
            assert isinstance(event, zmtp.Disconnected), event
            assert f"{LIMIT + 1} bytes" in event.reason, event.reason
            assert "max_message_size" in event.reason, event.reason
            # The oversized message was not delivered, and the socket lives on: the connection
            # comes back (libzmq or we reconnect) and small messages flow again.
            await monitor.wait_for(zmtp.HandshakeSucceeded)
            await theirs.send_multipart([b"small again"])
            assert await ours.recv_multipart() == [b"small again"]


@pytest.mark.parametrize("binds", ["zmtp", "libzmq"])
@pytest.mark.parametrize("transport", ["tcp", "ipc"])
async def test_libzmq_maxmsgsize_drops_us(
    lz: Libzmq, tmp_path: Path, transport: str, binds: str
) -> None:
    with anyio.fail_after(TEST_TIMEOUT):
        theirs = lz.socket("PULL", maxmsgsize=LIMIT)
        theirs_monitor = theirs.monitor()
        async with zmtp.Socket(zmtp.PUSH, linger=0) as ours:
            await link(ours, theirs, binds=binds, endpoint=bind_endpoint(transport, tmp_path))
            monitor = ours.monitor()
            await ours.send(b"x" * LIMIT)
            assert await theirs.recv_multipart() == [b"x" * LIMIT]
            await ours.send_multipart([b"x" * LIMIT, b"z" * LIMIT])  # per frame: fine
            assert await theirs.recv_multipart() == [b"x" * LIMIT, b"z" * LIMIT]
            await ours.send(b"y" * (LIMIT + 1))
            await theirs_monitor.wait_for("DISCONNECTED", touch=False)
            event = await monitor.wait_for((zmtp.Disconnected, zmtp.HandshakeFailed))
            assert isinstance(event, zmtp.Disconnected), event
            assert "closed by peer" in event.reason or "connection" in event.reason, event.reason
            assert await theirs.recv_within(0.2) == []  # the oversized message was dropped
