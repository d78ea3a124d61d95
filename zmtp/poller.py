"""``zmtp.Poller``: pyzmq's ``zmq.Poller`` for ported code (the blocking twin is in zmtp.sync).

``poll(timeout)`` returns ``[(socket, events), ...]`` for the registered sockets that are ready,
without consuming anything: ``POLLIN`` when a message is waiting (the next ``recv`` returns at
once), ``POLLOUT`` when the socket type can send and has at least one live connection. zmtp does
not expose the per-peer HWM room, so a ``send`` after ``POLLOUT`` may still wait at the HWM;
give it a ``send_timeout`` if that matters. The timeout is in **seconds** (pyzmq:
milliseconds); None waits for ever, 0 only looks.

In new async code, a task per socket is simpler (docs/from-pyzmq.md).
"""

from __future__ import annotations

import math
from typing import Generic, TypeVar

import anyio

from .options import warn_if_milliseconds_argument
from .socket import Socket

#: libzmq's flag values, so ``zmq.POLLIN`` works too.
POLLIN = 1
POLLOUT = 2

S = TypeVar("S")


class Registrations(Generic[S]):
    """The sockets a poller watches and for which events (``register``/``modify``/
    ``unregister`` as pyzmq's); shared by this poller and its blocking twin in zmtp.sync."""

    def __init__(self) -> None:
        self.sockets: dict[S, int] = {}

    def register(self, sock: S, flags: int = POLLIN | POLLOUT) -> None:
        """Watch ``sock`` for ``flags`` (registering again replaces them; 0 unregisters)."""
        if flags:
            self.sockets[sock] = flags
        else:
            self.sockets.pop(sock, None)

    modify = register

    def unregister(self, sock: S) -> None:
        """Stop watching ``sock`` (unknown sockets are ignored)."""
        self.sockets.pop(sock, None)


_SEND_NEVER = frozenset({"PULL", "SUB", "DISH", "GATHER"})


def ready_events(sock: Socket, wanted: int) -> int:
    """The ``wanted`` events ``sock`` is ready for now."""
    events = 0
    if wanted & POLLIN and sock.readable():
        events |= POLLIN
    if wanted & POLLOUT and sock.socket_type not in _SEND_NEVER and sock.peers:
        events |= POLLOUT
    return events


class Poller(Registrations[Socket]):
    """Register sockets with ``POLLIN``/``POLLOUT``; ``await poll(timeout)`` says which are
    ready."""

    def ready(self) -> list[tuple[Socket, int]]:
        """What is ready now, without waiting."""
        found = []
        for sock, wanted in self.sockets.items():
            events = ready_events(sock, wanted)
            if events:
                found.append((sock, events))
        return found

    async def poll(self, timeout: float | None = None) -> list[tuple[Socket, int]]:
        """Wait up to ``timeout`` seconds for a registered socket to be ready; returns
        ``[(socket, events)]`` (empty on timeout). An ``int`` of 1000 or more warns once: it
        looks like pyzmq's milliseconds."""
        warn_if_milliseconds_argument("timeout", timeout)
        found = self.ready()
        if found or timeout == 0:
            return found
        with anyio.move_on_after(math.inf if timeout is None else timeout):
            async with anyio.create_task_group() as tg:
                for sock, wanted in self.sockets.items():
                    if wanted & POLLIN:
                        tg.start_soon(self._wait_in, sock, tg.cancel_scope)
                    if wanted & POLLOUT and sock.socket_type not in _SEND_NEVER:
                        tg.start_soon(self._wait_out, sock, tg.cancel_scope)
        return self.ready()

    @staticmethod
    async def _wait_in(sock: Socket, done: anyio.CancelScope) -> None:
        await sock.wait_readable()
        done.cancel()

    @staticmethod
    async def _wait_out(sock: Socket, done: anyio.CancelScope) -> None:
        monitor = sock.monitor()
        try:
            while not ready_events(sock, POLLOUT):  # checked after the monitor exists
                if await monitor.receive() is None:
                    return  # the socket closed
        finally:
            monitor.close()
        done.cancel()


__all__ = ["POLLIN", "POLLOUT", "Poller", "Registrations", "ready_events"]
