"""Two small raw-TCP peers for live tests: a ZMTP peer that goes silent after its handshake
(what a hung or half-dead peer looks like: heartbeats must notice it), and a one-shot client
that sends bytes and reads what comes back until the other side closes (a non-ZMTP client)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Coroutine
from contextlib import asynccontextmanager
from typing import Any

import anyio
from anyio.abc import SocketAttribute, SocketListener, SocketStream, TaskGroup

from .wire import NULL_GREETING, ready_command

#: Default bound, in seconds, on :func:`raw_exchange`.
TIMEOUT = 5.0


class SilentZmtpPeer:
    """A tcp listener that completes a NULL handshake as ``socket_type`` on every connection,
    then never writes again. It records what it receives (our PINGs...): ``received`` holds
    one buffer per connection, in order."""

    def __init__(self, socket_type: str = "PULL", port: int = 0) -> None:
        self.socket_type = socket_type
        self.port = port
        self.received: list[bytearray] = []
        self._changed = anyio.Event()

    @property
    def endpoint(self) -> str:
        return f"tcp://127.0.0.1:{self.port}"

    async def serve(self, stream: SocketStream) -> None:
        """Handle one connection: greet, READY, then only read."""
        data = bytearray()
        self.received.append(data)
        async with stream:
            await stream.send(NULL_GREETING + ready_command(self.socket_type))
            try:
                while True:
                    data += await stream.receive()
                    self._notify()
            except (anyio.EndOfStream, anyio.BrokenResourceError, OSError):
                self._notify()

    def _notify(self) -> None:
        self._changed.set()
        self._changed = anyio.Event()

    async def wait_for_bytes(self, pattern: bytes, connection: int = 0) -> None:
        """Wait until connection number ``connection`` has received ``pattern`` (bound it with
        ``anyio.fail_after``)."""
        while len(self.received) <= connection or pattern not in self.received[connection]:
            await self._changed.wait()


@asynccontextmanager
async def silent_zmtp_peer(socket_type: str = "PULL") -> AsyncIterator[SilentZmtpPeer]:
    """A :class:`SilentZmtpPeer` listening on 127.0.0.1 (an ephemeral port) until the end."""
    listener = (await anyio.create_tcp_listener(local_host="127.0.0.1")).listeners[0]
    assert isinstance(listener, SocketListener)
    peer = SilentZmtpPeer(socket_type, listener.extra(SocketAttribute.local_port))
    async with anyio.create_task_group() as tg:
        tg.start_soon(_serve_forever, listener, peer.serve, tg)
        try:
            yield peer
        finally:
            tg.cancel_scope.cancel()


async def _serve_forever(
    listener: SocketListener,
    handler: Callable[[SocketStream], Coroutine[Any, Any, None]],
    tg: TaskGroup,
) -> None:
    async with listener:
        while True:
            stream = await listener.accept()
            tg.start_soon(handler, stream)


async def raw_exchange(port: int, request: bytes, timeout: float = TIMEOUT) -> bytes:
    """Connect to 127.0.0.1:``port``, send ``request``, read until the peer closes; returns
    what it sent."""
    received = bytearray()
    with anyio.fail_after(timeout):
        async with await anyio.connect_tcp("127.0.0.1", port) as stream:
            await stream.send(request)
            try:
                while True:
                    received += await stream.receive()
            except (anyio.EndOfStream, anyio.BrokenResourceError, OSError):
                pass
    return bytes(received)


__all__ = ["SilentZmtpPeer", "raw_exchange", "silent_zmtp_peer"]
