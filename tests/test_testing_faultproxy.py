"""``zmtp.testing.FaultProxy``: each fault on raw byte streams, on both backends, and the old
import path ``tests.faultproxy``."""

from __future__ import annotations

from collections.abc import AsyncIterator

import anyio
import pytest
from anyio.abc import SocketStream

from zmtp.testing import FaultProxy

pytestmark = pytest.mark.anyio
DEADLINE = 30


class Target:
    """A tcp server that keeps each accepted connection for the test."""

    def __init__(self) -> None:
        self.accepted: list[SocketStream] = []
        self.arrived = anyio.Event()
        self.port = 0

    async def handle(self, stream: SocketStream) -> None:
        self.accepted.append(stream)
        self.arrived.set()
        await anyio.sleep_forever()  # held open until the test ends


async def recv_exactly(stream: SocketStream, size: int) -> bytes:
    data = b""
    with anyio.fail_after(DEADLINE):
        while len(data) < size:
            data += await stream.receive()
    return data


async def recv_until_closed(stream: SocketStream) -> bytes:
    data = b""
    with anyio.fail_after(DEADLINE):
        try:
            while True:
                data += await stream.receive()
        except (anyio.EndOfStream, anyio.BrokenResourceError):
            return data


@pytest.fixture
async def pair() -> AsyncIterator[tuple[FaultProxy, SocketStream, SocketStream]]:
    """A proxy, a client connected through it, and the target's end of that connection."""
    target = Target()
    listener = await anyio.create_tcp_listener(local_host="127.0.0.1")
    target.port = listener.extra(anyio.abc.SocketAttribute.local_port)
    async with listener, anyio.create_task_group() as tg:
        tg.start_soon(listener.serve, target.handle)
        async with FaultProxy("127.0.0.1", target.port) as proxy:
            port = int(proxy.endpoint.rsplit(":", 1)[1])
            client = await anyio.connect_tcp("127.0.0.1", port)
            with anyio.fail_after(DEADLINE):
                await target.arrived.wait()
                await proxy.wait_for_connections(1)
            async with client:
                yield proxy, client, target.accepted[0]
        tg.cancel_scope.cancel()


async def test_clean_relay_and_cut(pair: tuple[FaultProxy, SocketStream, SocketStream]) -> None:
    proxy, client, server = pair
    await client.send(b"hello")
    assert await recv_exactly(server, 5) == b"hello"
    await server.send(b"back")
    assert await recv_exactly(client, 4) == b"back"
    assert proxy.live == 1
    proxy.cut()
    assert await recv_until_closed(client) == b""
    assert await recv_until_closed(server) == b""


async def test_cut_after_lets_exactly_n_bytes_through(
    pair: tuple[FaultProxy, SocketStream, SocketStream],
) -> None:
    proxy, client, server = pair
    proxy.cut_after(7, "up")
    await client.send(b"0123")
    await client.send(b"456789")
    assert await recv_until_closed(server) == b"0123456"
    assert await recv_until_closed(client) == b""


async def test_corrupt_flips_one_byte(pair: tuple[FaultProxy, SocketStream, SocketStream]) -> None:
    proxy, client, server = pair
    proxy.corrupt(1, "down")
    await server.send(b"abc")
    assert await recv_exactly(client, 3) == bytes([ord("a"), ord("b") ^ 0xFF, ord("c")])
    await server.send(b"def")  # only that offset
    assert await recv_exactly(client, 3) == b"def"


async def test_half_close_ends_one_direction_only(
    pair: tuple[FaultProxy, SocketStream, SocketStream],
) -> None:
    proxy, client, server = pair
    proxy.half_close("down")
    await server.send(b"never")
    assert await recv_until_closed(client) == b""  # EOF, nothing forwarded
    await client.send(b"still up")
    assert await recv_exactly(server, 8) == b"still up"


async def test_pause_resume_delay_and_throttle_keep_the_bytes(
    pair: tuple[FaultProxy, SocketStream, SocketStream],
) -> None:
    proxy, client, server = pair
    proxy.pause()
    await client.send(b"held")
    with anyio.move_on_after(0.2):  # a bounded check that nothing is forwarded while paused
        await server.receive()
        pytest.fail("forwarded while paused")
    proxy.resume()
    assert await recv_exactly(server, 4) == b"held"
    proxy.delay(0.01)
    proxy.throttle(1_000_000)
    payload = bytes(range(256)) * 40
    await client.send(payload)
    assert await recv_exactly(server, len(payload)) == payload
    with pytest.raises(ValueError, match="direction"):
        proxy.corrupt(0, "sideways")


def test_old_import_path_is_the_same_class() -> None:
    from tests.faultproxy import FaultProxy as Old

    assert Old is FaultProxy
