"""A small fault-injecting TCP proxy for tests, on anyio (asyncio and trio).

    async with FaultProxy("127.0.0.1", port) as proxy:
        await sock.connect(proxy.endpoint)       # goes through the proxy
        await proxy.wait_for_connections(1)
        proxy.cut()                              # kill every live connection, both ways

Each accepted client gets its own upstream connection; two pump tasks copy bytes in each
direction. ``cut()`` closes both ends of every live connection at once (the peers see the
connection drop mid-stream); the proxy keeps accepting, so a reconnecting client gets through
again. ``accepted`` counts connections put through to the target.

``hold()`` makes clients accepted from then on wait (connected to the proxy, but nothing
forwarded and no connection to the target yet) until ``release()``: a test decides when a
reconnection reaches the other side.
"""

from __future__ import annotations

import contextlib
from types import TracebackType

import anyio
from anyio.abc import SocketAttribute, SocketListener, SocketStream, TaskGroup

_GONE = (anyio.EndOfStream, anyio.BrokenResourceError, anyio.ClosedResourceError, OSError)


class FaultProxy:
    def __init__(self, target_host: str, target_port: int) -> None:
        self.target_host = target_host
        self.target_port = target_port
        self.endpoint = ""  #: tcp://127.0.0.1:<port> once entered
        self.accepted = 0
        self._live: set[anyio.CancelScope] = set()
        self._tg: TaskGroup | None = None
        self._changed = anyio.Event()
        self._admit: anyio.Event | None = None  #: set while new clients are held

    async def __aenter__(self) -> FaultProxy:
        multi = await anyio.create_tcp_listener(local_host="127.0.0.1")
        listener = multi.listeners[0]  # one address: 127.0.0.1
        assert isinstance(listener, SocketListener)
        self.endpoint = f"tcp://127.0.0.1:{listener.extra(SocketAttribute.local_port)}"
        self._tg = anyio.create_task_group()
        await self._tg.__aenter__()
        self._tg.start_soon(self._serve, listener)
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> bool | None:
        assert self._tg is not None
        self._tg.cancel_scope.cancel()
        return await self._tg.__aexit__(exc_type, exc, tb)

    def cut(self) -> None:
        """Drop every live connection (both directions) now."""
        for scope in list(self._live):
            scope.cancel()

    def hold(self) -> None:
        """Keep clients accepted from now on waiting, not yet connected to the target."""
        if self._admit is None:
            self._admit = anyio.Event()

    def release(self) -> None:
        """Put the held clients (and later ones) through to the target."""
        if self._admit is not None:
            self._admit.set()
            self._admit = None

    @property
    def live(self) -> int:
        return len(self._live)

    async def wait_for_connections(self, accepted: int) -> None:
        """Wait until ``accepted`` connections have been put through in total."""
        while self.accepted < accepted:
            await self._changed.wait()

    def _notify(self) -> None:
        self._changed.set()
        self._changed = anyio.Event()

    async def _serve(self, listener: SocketListener) -> None:
        async with listener:
            assert self._tg is not None
            while True:
                client = await listener.accept()
                self._tg.start_soon(self._proxy, client)

    async def _proxy(self, client: SocketStream) -> None:
        with anyio.CancelScope() as scope:
            self._live.add(scope)
            try:
                async with client:
                    admit = self._admit
                    if admit is not None:
                        await admit.wait()
                    try:
                        upstream = await anyio.connect_tcp(self.target_host, self.target_port)
                    except OSError:
                        return  # target down: the client sees its connection close
                    async with upstream, anyio.create_task_group() as tg:
                        self.accepted += 1
                        self._notify()
                        tg.start_soon(self._pump, client, upstream, tg.cancel_scope)
                        tg.start_soon(self._pump, upstream, client, tg.cancel_scope)
            finally:
                self._live.discard(scope)

    @staticmethod
    async def _pump(source: SocketStream, sink: SocketStream, both: anyio.CancelScope) -> None:
        with contextlib.suppress(*_GONE):
            async for chunk in source:
                await sink.send(chunk)
        both.cancel()  # one direction ended: end the other too, closing both sockets
