"""Reconnection against libzmq, both ways: a libzmq socket connecting to us comes back after we
close and re-bind the same endpoint; we come back after a bound libzmq socket closes and a new
one binds the same endpoint. Messages flow again, including those queued while down."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

import zmtp
from zmtp.interop import Libzmq, link
from zmtp.testing import bind_endpoint
from zmtp.testing.fixtures import TEST_TIMEOUT, libzmq_env  # noqa: F401
from zmtp.testing.pyzmq_sockets import bind_when_free

pytestmark = [pytest.mark.anyio, pytest.mark.interop]


@pytest.mark.parametrize("transport", ["tcp", "ipc"])
async def test_libzmq_reconnects_after_we_rebind(
    lz: Libzmq, tmp_path: Path, transport: str
) -> None:
    with anyio.fail_after(TEST_TIMEOUT):
        theirs = lz.socket("PUSH", reconnect_ivl=50)
        theirs_monitor = theirs.monitor()
        async with zmtp.Socket(zmtp.PULL, linger=0) as first:
            await link(first, theirs, binds="zmtp", endpoint=bind_endpoint(transport, tmp_path))
            endpoint = first.last_endpoint
            await theirs.send_multipart([b"before"])
            assert await first.recv_multipart() == [b"before"]
        # We are gone; libzmq notices and keeps retrying (a connection error, not a protocol
        # error). Messages it is given meanwhile wait in its session's pipe.
        await theirs_monitor.wait_for("DISCONNECTED", touch=False)
        await theirs.send_multipart([b"while down"])
        async with zmtp.Socket(zmtp.PULL, linger=0) as second:
            monitor = second.monitor()
            assert await second.bind(endpoint) == endpoint  # the same port / path
            event = await monitor.wait_for((zmtp.HandshakeSucceeded, zmtp.HandshakeFailed))
            assert isinstance(event, zmtp.HandshakeSucceeded), event
            assert event.peer.socket_type == "PUSH"
            assert await second.recv_multipart() == [b"while down"]
            await theirs.send_multipart([b"after"])
            assert await second.recv_multipart() == [b"after"]


@pytest.mark.parametrize("transport", ["tcp", "ipc"])
async def test_we_reconnect_after_libzmq_rebinds(
    lz: Libzmq, tmp_path: Path, transport: str
) -> None:
    with anyio.fail_after(TEST_TIMEOUT):
        first = lz.socket("PULL")
        async with zmtp.Socket(zmtp.PUSH, linger=0, reconnect_ivl=0.05) as ours:
            monitor = ours.monitor()
            await link(ours, first, binds="libzmq", endpoint=bind_endpoint(transport, tmp_path))
            endpoint = first.raw.getsockopt(first.zmq.LAST_ENDPOINT).decode()
            await ours.send(b"before")
            assert await first.recv_multipart() == [b"before"]
            first.close()
            event = await monitor.wait_for((zmtp.Disconnected, zmtp.HandshakeFailed))
            assert isinstance(event, zmtp.Disconnected), event
            # Queued in the connect()ed pipe while there is no connection.
            await ours.send(b"while down")
            second = lz.socket("PULL")
            await bind_when_free(second, endpoint)
            event = await monitor.wait_for((zmtp.HandshakeSucceeded, zmtp.HandshakeFailed))
            assert isinstance(event, zmtp.HandshakeSucceeded), event
            assert await second.recv_multipart() == [b"while down"]
            await ours.send(b"after")
            assert await second.recv_multipart() == [b"after"]
            # Our peer list shows the new libzmq peer.
            assert ours.peers and ours.peers[0].socket_type == "PULL"


async def test_we_retry_until_libzmq_binds(lz: Libzmq, tmp_path: Path) -> None:
    """Connecting before anyone listens: ConnectDelayed/ConnectRetried until libzmq binds."""
    with anyio.fail_after(TEST_TIMEOUT):
        endpoint = f"ipc://{tmp_path}/later.ipc"
        async with zmtp.Socket(zmtp.PUSH, linger=0, reconnect_ivl=0.05) as ours:
            monitor = ours.monitor()
            await ours.connect(endpoint)
            delayed = await monitor.wait_for(zmtp.ConnectDelayed)
            assert isinstance(delayed, zmtp.ConnectDelayed) and delayed.reason
            await monitor.wait_for(zmtp.ConnectRetried)
            theirs = lz.socket("PULL")
            theirs.bind(endpoint)
            await monitor.wait_for(zmtp.HandshakeSucceeded)
            await ours.send(b"finally")
            assert await theirs.recv_multipart() == [b"finally"]
