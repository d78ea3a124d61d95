"""Issue 14: what the accept loop holds. Finding 5 (a finished connection must not stay
referenced until the next accept) and the ``max_connections`` limit per listener."""

from __future__ import annotations

import gc
from pathlib import Path

import anyio
import pytest
from anyio.abc import ByteStream

import zmtp
from tests.test_engine_helpers import TIMEOUT
from tests.test_protocol_helpers import ready_frame as long_ready_frame
from zmtp.engine.stream import StreamConnection
from zmtp.testing import wire

pytestmark = pytest.mark.anyio


@pytest.fixture(params=["tcp", "ipc"])
def bind_address(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    return "tcp://127.0.0.1:*" if request.param == "tcp" else f"ipc://{tmp_path / 'h.sock'}"


async def raw_connect(endpoint: str) -> ByteStream:
    if endpoint.startswith("tcp://"):
        host, port = endpoint.removeprefix("tcp://").rsplit(":", 1)
        return await anyio.connect_tcp(host, int(port))
    return await anyio.connect_unix(endpoint.removeprefix("ipc://"))


def live_connections() -> int:
    gc.collect()
    return sum(isinstance(o, StreamConnection) for o in gc.get_objects())


async def wait_no_connection_alive() -> None:
    """Wait (bounded) until no StreamConnection object is reachable any more."""
    with anyio.fail_after(TIMEOUT):
        while live_connections():
            await anyio.sleep(0.02)


async def test_a_finished_connection_is_not_kept_by_the_accept_loop(bind_address: str) -> None:
    async with zmtp.Socket(zmtp.PULL) as pull:
        monitor = pull.monitor()
        endpoint = await pull.bind(bind_address)
        assert live_connections() == 0
        # A handshaken peer that delivered a message, then left.
        stream = await raw_connect(endpoint)
        await stream.send(wire.NULL_GREETING + wire.ready_command("PUSH") + wire.message(b"hello"))
        with anyio.fail_after(TIMEOUT):
            assert await pull.recv() == b"hello"
        await stream.aclose()
        with anyio.fail_after(TIMEOUT):
            await monitor.wait_for(zmtp.Disconnected)
        await wait_no_connection_alive()  # the listener is still waiting in accept
        # One that left mid-handshake with a 60 KB partial READY buffered.
        stream = await raw_connect(endpoint)
        ready = long_ready_frame({"Socket-Type": b"PUSH", "X-Pad": b"p" * 60_000})
        partial = (wire.NULL_GREETING + ready)[:-10]
        await stream.send(partial)
        await anyio.sleep(0)  # (the bytes need not be read before the close: either way)
        await stream.aclose()
        with anyio.fail_after(TIMEOUT):
            await monitor.wait_for(zmtp.HandshakeFailed)
        await wait_no_connection_alive()


async def test_connections_beyond_max_connections_are_refused(bind_address: str) -> None:
    async with (
        zmtp.Socket(zmtp.PULL, max_connections=2) as pull,
        zmtp.Socket(zmtp.PUSH) as push,
    ):
        monitor = pull.monitor()
        endpoint = await pull.bind(bind_address)
        first, second = await raw_connect(endpoint), await raw_connect(endpoint)
        with anyio.fail_after(TIMEOUT):
            await monitor.wait_for(zmtp.Accepted)
            await monitor.wait_for(zmtp.Accepted)
        third = await raw_connect(endpoint)
        with anyio.fail_after(TIMEOUT):
            refused = await monitor.wait_for(zmtp.AcceptFailed)
            assert "max_connections=2" in refused.reason
            with pytest.raises((anyio.EndOfStream, anyio.BrokenResourceError)):
                await third.receive()  # closed at once, before any greeting
        await third.aclose()
        await first.aclose()  # room again: a real peer is served
        with anyio.fail_after(TIMEOUT):
            await monitor.wait_for(zmtp.HandshakeFailed)
        await push.connect(endpoint)
        await push.send(b"served")
        with anyio.fail_after(TIMEOUT):
            assert await pull.recv() == b"served"
        await second.aclose()


def test_max_connections_must_not_be_negative() -> None:
    with pytest.raises(zmtp.OptionError):
        zmtp.Socket(zmtp.PULL, max_connections=-1)
