"""A socket's endpoints: its listeners (bind) and dialers (connect), with their accept and
dial loops, over tcp/ipc, inproc and udp.

Owned by the engine core (:class:`zmtp.engine.core.SocketCore`), which runs every loop in the
socket's task group (``spawn``) so that ``close()`` waits for them all.
"""

from __future__ import annotations

import errno
import random
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import anyio
from anyio.abc import TaskGroup

from ..monitor import (
    Accepted,
    AcceptFailed,
    BindFailed,
    Closed,
    ConnectDelayed,
    Connected,
    ConnectRetried,
    Listening,
)
from ..protocol.errors import InvalidArgument
from ..transport import InprocEndpoint, UdpEndpoint, parse_endpoint
from ..transport.streams import BoundListener, dial, listen, peer_address
from . import inproc
from .pipe import Pipe
from .stream import StreamConnection

if TYPE_CHECKING:
    from .core import SocketCore


@dataclass(eq=False)
class ListenerHandle:
    endpoint: str
    bound: BoundListener | None = None  # None for inproc and udp
    #: Created with the handle (not by the accept task) so that a stop issued before the task
    #: first runs still stops it: a scope cancelled before it is entered cancels on entry.
    scope: anyio.CancelScope = field(default_factory=anyio.CancelScope)
    #: Set when the accept loop has closed the listener and its connections have ended.
    stopped: anyio.Event = field(default_factory=anyio.Event)
    connections: set[StreamConnection] = field(default_factory=set)


@dataclass(eq=False)
class DialerHandle:
    endpoint: str
    pipe: Pipe
    scope: anyio.CancelScope = field(default_factory=anyio.CancelScope)  # see ListenerHandle
    #: Set when the dial loop has ended (its last connection torn down).
    stopped: anyio.Event = field(default_factory=anyio.Event)
    connection: StreamConnection | None = None


class Endpoints:
    """The listeners and dialers of one socket."""

    def __init__(self, core: SocketCore) -> None:
        self.core = core
        self.listeners: dict[str, ListenerHandle] = {}
        self.dialers: dict[str, DialerHandle] = {}

    # ------------------------------------------------------------------ queries

    def any(self) -> bool:
        return bool(self.listeners or self.dialers)

    def is_bound(self, endpoint: str) -> bool:
        return endpoint in self.listeners

    def is_connected_to(self, endpoint: str) -> bool:
        return endpoint in self.dialers

    def dialer_pipe(self, endpoint: str) -> Pipe:
        return self.dialers[endpoint].pipe

    def dialing_pipes(self) -> set[Pipe]:
        """The pipes of dialers still running (a lingering close waits for their messages)."""
        return {h.pipe for h in self.dialers.values() if not h.stopped.is_set()}

    # ------------------------------------------------------------------ bind / unbind

    async def bind(self, endpoint: str) -> str:
        """Listen on ``endpoint``; returns the resolved endpoint (e.g. the real port)."""
        core = self.core
        core.running_group()
        ep = parse_endpoint(endpoint)
        if isinstance(ep, InprocEndpoint):
            try:
                inproc.bind(core, ep.name)
            except OSError as exc:
                core.emit(BindFailed(endpoint, str(exc)))
                raise
            resolved = str(ep)
            self.listeners[resolved] = ListenerHandle(resolved)
        elif isinstance(ep, UdpEndpoint):
            try:
                from . import udp  # only RADIO/DISH use it (import cost, docs/performance.md)

                receiver = await udp.open_receiver(core, ep)  # DISH only (raises otherwise)
            except OSError as exc:
                core.emit(BindFailed(endpoint, exc.strerror or str(exc)))
                raise
            resolved = receiver.endpoint
            handle = ListenerHandle(resolved)  # bound=None: no listener, a datagram reader
            self.listeners[resolved] = handle
            core.spawn(receiver.run, handle.scope, handle.stopped)
        else:
            try:
                bound = await listen(ep, core.options.backlog)
            except OSError as exc:
                core.emit(BindFailed(endpoint, exc.strerror or str(exc)))
                raise
            resolved = bound.endpoint
            handle = ListenerHandle(resolved, bound)
            self.listeners[resolved] = handle
            core.spawn(self._accept_loop, handle)
        core.emit(Listening(resolved))
        return resolved

    async def unbind(self, endpoint: str) -> None:
        """Stop listening on ``endpoint``; returns once the listener is closed (the port or
        path is free again) and its connections are torn down."""
        handle = self.listeners.pop(endpoint, None)
        if handle is None:
            raise InvalidArgument(f"not bound to {endpoint!r}")
        self._stop_listener(handle, close_connections=True)
        if handle.bound is not None or endpoint.startswith("udp://"):
            with anyio.CancelScope(shield=True):  # bounded: teardown has its own timeouts
                await handle.stopped.wait()
        self.core.emit(Closed(endpoint))
        await anyio.lowlevel.checkpoint()

    # ------------------------------------------------------------------ connect / disconnect

    async def connect(self, endpoint: str, routing_id: bytes | None) -> None:
        """Connect to ``endpoint`` in the background, reconnecting whenever it is lost."""
        core = self.core
        core.running_group()
        ep = parse_endpoint(endpoint)
        name = str(ep)
        if name in self.dialers:
            raise InvalidArgument(f"already connected to {name!r}")
        if isinstance(ep, UdpEndpoint):
            from . import udp  # only RADIO/DISH use it (import cost, docs/performance.md)

            udp.check_udp(core.socket_type, "connect", ep)  # RADIO only
        strategy = core.strategy
        strategy.prepare_connect(name, routing_id)
        pipe = core.new_pipe(name, persistent=True)
        if strategy.attach_early(pipe) and not core.options.immediate:
            core.attach(pipe)
        handle = DialerHandle(name, pipe)
        self.dialers[name] = handle
        if isinstance(ep, InprocEndpoint):
            inproc.connect(core, ep.name, pipe)
        elif isinstance(ep, UdpEndpoint):
            from . import udp

            core.spawn(udp.run_sender, core, pipe, ep, handle.scope, handle.stopped)
        else:
            core.spawn(self._dial_loop, handle, ep)
        await anyio.lowlevel.checkpoint()

    async def disconnect(self, endpoint: str) -> None:
        """Stop connecting to ``endpoint`` and drop its connection and queued messages."""
        name = str(parse_endpoint(endpoint))
        handle = self.dialers.pop(name, None)
        if handle is None:
            raise InvalidArgument(f"not connected to {endpoint!r}")
        self._stop_dialer(handle)
        if not name.startswith("inproc://"):
            with anyio.CancelScope(shield=True):  # bounded: teardown has its own timeouts
                await handle.stopped.wait()
        self.core.emit(Closed(name))
        await anyio.lowlevel.checkpoint()

    # ------------------------------------------------------------------ stopping

    def stop_listening(self) -> None:
        """Close's first step: accept nothing more; established connections keep flushing."""
        for handle in list(self.listeners.values()):
            self._stop_listener(handle, close_connections=False)

    def stop_all(self) -> list[str]:
        """Close's teardown: stop every endpoint and connection; returns the endpoints (for
        their ``Closed`` events, reported once their connections are gone)."""
        closed: list[str] = []
        for handle in list(self.listeners.values()):
            self._stop_listener(handle, close_connections=True)
            closed.append(handle.endpoint)
        self.listeners.clear()
        for dialer in list(self.dialers.values()):
            self._stop_dialer(dialer)
            closed.append(dialer.endpoint)
        self.dialers.clear()
        return closed

    def close_connection_of(self, pipe: Pipe, reason: str) -> None:
        """Close the tcp/ipc connection behind ``pipe``, if one is live."""
        for dialer in self.dialers.values():
            if dialer.pipe is pipe and dialer.connection is not None:
                dialer.connection.close(reason)
                return
        for listener in self.listeners.values():
            for connection in listener.connections:
                if connection.pipe is pipe:
                    connection.close(reason)
                    return

    def _stop_listener(self, handle: ListenerHandle, close_connections: bool) -> None:
        core = self.core
        if handle.bound is None and handle.endpoint.startswith("udp://"):
            handle.scope.cancel()  # the DISH's datagram reader ends (zmtp/engine/udp.py)
            return
        if handle.bound is None:
            inproc.unbind(core, handle.endpoint.removeprefix("inproc://"), close_connections)
            return
        handle.bound.stop_accepting()  # then the cancel cannot lose an arriving connection
        handle.scope.cancel()  # stops accepting; the listener closes in _accept_loop
        if close_connections:
            for connection in list(handle.connections):
                connection.close("endpoint unbound" if not core.closed else "socket closed")

    def _stop_dialer(self, handle: DialerHandle) -> None:
        core = self.core
        handle.scope.cancel()
        if handle.connection is not None:
            handle.connection.close("disconnected")
            # The connection ends asynchronously; tell the routing strategy and the extension
            # now, so that pipe_disconnected comes before pipe_removed (never after).
            core.pipe_disconnected(handle.pipe, "disconnected")
        if handle.endpoint.startswith("inproc://"):
            inproc.disconnect(core, handle.endpoint.removeprefix("inproc://"), handle.pipe)
        core.remove_pipe(handle.pipe)

    # ------------------------------------------------------------------ loops

    async def _accept_loop(self, handle: ListenerHandle) -> None:
        """Accept connections until the listener's scope is cancelled.

        Connections run in a task group *outside* the accepting scope, so that stopping the
        listener (close with linger) leaves established connections flushing. Each accept is
        handled in :meth:`_accept_one`, whose locals die with it: the loop holds no reference
        to a connection it started, which could otherwise keep a finished connection and its
        buffers alive until the next accept.
        """
        assert handle.bound is not None
        bound = handle.bound
        try:
            async with anyio.create_task_group() as connections:
                with handle.scope:
                    try:
                        while await self._accept_one(handle, bound, connections):
                            pass
                    finally:
                        with anyio.CancelScope(shield=True):
                            await bound.aclose()
        finally:
            handle.stopped.set()

    async def _accept_one(
        self, handle: ListenerHandle, bound: BoundListener, connections: TaskGroup
    ) -> bool:
        """Accept one connection and start it; False once the listener is stopped.

        A failed accept (out of descriptors or memory: EMFILE, ENFILE, ENOBUFS, ENOMEM; anyio
        raises ``OSError`` or ``BrokenResourceError`` depending on backend and transport) is
        reported as ``AcceptFailed`` and retried after ``ACCEPT_RETRY_DELAY``, as libzmq
        keeps its listener (it retries at once, which spins while the condition lasts). The
        pending connection stays in the kernel's backlog meanwhile.
        """
        core = self.core
        try:
            stream = await bound.listener.accept()
        except (OSError, anyio.BrokenResourceError) as exc:
            core.emit(AcceptFailed(handle.endpoint, describe_accept_error(exc)))
            await anyio.sleep(ACCEPT_RETRY_DELAY)
            return True
        if handle.scope.cancel_called:
            # Accepted just as the listener was stopped: refuse it, or it would outlive
            # unbind()/close() unnoticed.
            with anyio.CancelScope(shield=True):
                await stream.aclose()
            return False
        address = peer_address(stream)
        limit = core.options.max_connections
        if limit and len(handle.connections) >= limit:
            core.emit(
                AcceptFailed(
                    handle.endpoint, f"too many connections (max_connections={limit})", address
                )
            )
            with anyio.CancelScope(shield=True), anyio.move_on_after(1.0):
                await stream.aclose()
            return True
        core.emit(Accepted(handle.endpoint, address))
        connection = StreamConnection(core, stream, handle.endpoint, address, None)
        handle.connections.add(connection)
        connections.start_soon(self._run_accepted, handle, connection)
        return True

    @staticmethod
    async def _run_accepted(handle: ListenerHandle, connection: StreamConnection) -> None:
        try:
            await connection.run()
        finally:
            handle.connections.discard(connection)

    async def _dial_loop(self, handle: DialerHandle, ep: Any) -> None:
        try:
            await self._dial(handle, ep)
        finally:
            handle.stopped.set()
            self.core.written()  # a lingering close stops waiting for this dialer

    async def _dial(self, handle: DialerHandle, ep: Any) -> None:
        core = self.core
        opts = core.options
        base = opts.reconnect_ivl
        interval = base or 0.0
        with handle.scope:
            while True:
                try:
                    stream = await dial(ep)
                except OSError as exc:
                    core.emit(ConnectDelayed(handle.endpoint, exc.strerror or str(exc)))
                else:
                    address = peer_address(stream)
                    core.emit(Connected(handle.endpoint, address))
                    connection = StreamConnection(
                        core, stream, handle.endpoint, address, handle.pipe
                    )
                    handle.connection = connection
                    try:
                        await connection.run()
                    finally:
                        handle.connection = None
                    if connection.handshaken:
                        interval = base or 0.0  # a session worked: restart the back-off
                if base is None:
                    return  # reconnect disabled
                delay = reconnect_delay(base, interval)
                if opts.reconnect_ivl_max > base:
                    interval = min(interval * 2, opts.reconnect_ivl_max)
                core.emit(ConnectRetried(handle.endpoint, delay))
                await anyio.sleep(delay)


#: Seconds between a failed accept and the next try (see Endpoints._accept_one).
ACCEPT_RETRY_DELAY = 0.1


def describe_accept_error(exc: BaseException) -> str:
    """The reason of a failed accept, from the ``OSError`` behind anyio's wrapper."""
    cause = exc if isinstance(exc, OSError) else exc.__cause__
    if isinstance(cause, OSError) and cause.strerror:
        name = errno.errorcode.get(cause.errno or 0, "")
        return f"accept failed: {cause.strerror}" + (f" ({name})" if name else "")
    return f"accept failed: {cause or exc!r}"


def reconnect_delay(base: float, interval: float) -> float:
    """libzmq's schedule: the interval plus a random jitter of up to the base interval."""
    if base <= 0:
        return 0.0
    return interval + random.uniform(0, base)
