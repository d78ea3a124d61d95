"""``proxy`` and ``steerable_proxy``: libzmq's ``zmq_proxy`` / ``zmq_proxy_steerable``.

Messages received on the frontend are sent on the backend and the other way round (in each
direction the socket types allow: a PULL frontend with a PUSH backend forwards one way), each
also sent to ``capture`` if given. The classic brokers: ROUTER frontend + DEALER backend (a
request/reply broker), XSUB + XPUB (a pub/sub forwarder), PULL + PUSH (a streamer).

The steerable proxy also obeys commands on a control socket, as libzmq's: ``PAUSE`` (stop
forwarding; messages wait in the sockets' queues, and one already taken waits with them),
``RESUME``, ``TERMINATE`` (return) and ``STATISTICS`` (answered on the control socket with
eight 64-bit frames in host byte order: frontend messages in, bytes in, messages out, bytes
out, then the same for the backend; bytes count every frame). Only ``STATISTICS`` is answered,
as in libzmq, so use a PAIR control socket (or REP, sending only ``STATISTICS``).
"""

from __future__ import annotations

import struct
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import anyio

from .errors import InvalidArgument, SocketClosed
from .socket import Socket

_SEND_ONLY = frozenset({"PUSH", "PUB", "RADIO", "SCATTER"})
_RECV_ONLY = frozenset({"PULL", "SUB", "DISH", "GATHER"})


@dataclass
class SocketStatistics:
    """What a proxy moved through one of its sockets (libzmq's ``zmq_proxy`` counters)."""

    messages_in: int = 0
    bytes_in: int = 0
    messages_out: int = 0
    bytes_out: int = 0


@dataclass
class ProxyStatistics:
    frontend: SocketStatistics = field(default_factory=SocketStatistics)
    backend: SocketStatistics = field(default_factory=SocketStatistics)

    def frames(self) -> list[bytes]:
        """The ``STATISTICS`` reply: eight uint64 frames in host byte order (as libzmq)."""
        f, b = self.frontend, self.backend
        values = (
            *(f.messages_in, f.bytes_in, f.messages_out, f.bytes_out),
            *(b.messages_in, b.bytes_in, b.messages_out, b.bytes_out),
        )
        return [struct.pack("=Q", v) for v in values]


async def proxy(frontend: Socket, backend: Socket, capture: Socket | None = None) -> None:
    """Forward between ``frontend`` and ``backend`` until cancelled; raises SocketClosed if
    one of its sockets is closed under it."""
    await steerable_proxy(frontend, backend, capture)


async def steerable_proxy(
    frontend: Socket,
    backend: Socket,
    capture: Socket | None = None,
    control: Socket | None = None,
) -> ProxyStatistics:
    """:func:`proxy`, steered by commands on ``control``; returns its statistics when
    ``TERMINATE`` arrives."""
    stats = ProxyStatistics()
    running = anyio.Event()
    running.set()
    state = {"running": running}
    directions = []
    if frontend.socket_type not in _SEND_ONLY and backend.socket_type not in _RECV_ONLY:
        directions.append((frontend, stats.frontend, backend, stats.backend))
    if backend.socket_type not in _SEND_ONLY and frontend.socket_type not in _RECV_ONLY:
        directions.append((backend, stats.backend, frontend, stats.frontend))
    if not directions:
        raise InvalidArgument(
            f"a {frontend.socket_type} frontend and a {backend.socket_type} backend cannot "
            "forward in either direction"
        )

    # The first socket found closed ends the proxy: raised as itself after the group, not in
    # the task group's ExceptionGroup (the documented ``SocketClosed``).
    closed: list[SocketClosed] = []

    async def until_closed(
        scope: anyio.CancelScope, run: Callable[..., Awaitable[None]], *args: Any
    ) -> None:
        try:
            await run(*args)
        except SocketClosed as exc:
            closed.append(exc)
            scope.cancel()

    async def forward(
        source: Socket, source_stats: SocketStatistics, sink: Socket, sink_stats: SocketStatistics
    ) -> None:
        while True:
            await state["running"].wait()
            message = await source.recv_multipart()
            size = sum(len(part) for part in message)
            source_stats.messages_in += 1
            source_stats.bytes_in += size
            await state["running"].wait()  # paused after taking it: it waits here
            if capture is not None:
                await capture.send_multipart(message)
            await sink.send_multipart(message)
            sink_stats.messages_out += 1
            sink_stats.bytes_out += size

    async def steer(control: Socket, scope: anyio.CancelScope) -> None:
        while True:
            command = (await control.recv_multipart())[0]
            if command == b"PAUSE":
                if state["running"].is_set():
                    state["running"] = anyio.Event()
            elif command == b"RESUME":
                state["running"].set()
            elif command == b"TERMINATE":
                scope.cancel()
                return
            elif command == b"STATISTICS":
                await control.send_multipart(stats.frames())
            # Anything else is ignored, as libzmq does (it only logs it).

    async with anyio.create_task_group() as tg:
        for direction in directions:
            tg.start_soon(until_closed, tg.cancel_scope, forward, *direction)
        if control is not None:
            tg.start_soon(until_closed, tg.cancel_scope, steer, control, tg.cancel_scope)
    if closed:
        raise closed[0]
    return stats


__all__ = ["ProxyStatistics", "SocketStatistics", "proxy", "steerable_proxy"]
