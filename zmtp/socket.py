"""The public socket: bind/connect endpoints, send/recv messages, monitor, close.

A :class:`Socket` owns one task group (entered with ``async with``) in which its listeners,
dialers and connections run. The socket type's behaviour lives in a routing strategy
(:mod:`zmtp.routing`); this module only moves messages between the application and pipes and
manages endpoints.

Fast paths: ``send`` queues into a pipe without suspending when there is room, and ``recv``
returns a waiting message without suspending. Both still honour cancellation
(``checkpoint_if_cancelled``) and yield to the scheduler every few hundred calls, so a busy
loop can neither miss a cancel nor starve the connection tasks.
"""

from __future__ import annotations

import math
import random
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Mapping
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from enum import Enum
from types import TracebackType
from typing import Any, TypeVar

import anyio
from anyio.abc import TaskGroup
from anyio.lowlevel import cancel_shielded_checkpoint, checkpoint_if_cancelled

from .auth.authenticator import AuthHandler
from .auth.factory import make_mechanism
from .engine import inproc, udp
from .engine.pipe import Pipe
from .engine.queue import Message, MessageQueue
from .engine.stream import StreamConnection
from .errors import SocketClosed, UnsupportedOperation
from .extension import SocketExtension
from .monitor import (
    Accepted,
    BindFailed,
    Closed,
    ConnectDelayed,
    Connected,
    ConnectRetried,
    Listening,
    Monitor,
    MonitorEvent,
    MonitorStopped,
    PeerInfo,
)
from .options import Options, hwm_capacity
from .protocol.mechanism import Mechanism
from .protocol.sockettypes import SocketType
from .routing import STRATEGIES, RoutingStrategy
from .routing.mixins import Groups, RoutingIds, Subscriptions
from .routing.peer import Peer
from .routing.radio_dish import Radio
from .transport import InprocEndpoint, UdpEndpoint, parse_endpoint
from .transport.streams import BoundListener, dial, listen, peer_address

#: Fast-path calls between two scheduler yields.
_YIELD_EVERY = 256
#: The fast path checks for a pending cancel once every 16 calls: ``checkpoint_if_cancelled``
#: costs ~0.6-1 us on asyncio, as much as the whole rest of a send. A cancel is therefore seen
#: within 16 messages, and no message is ever lost to it (see docs/performance.md).
_CANCEL_CHECK_MASK = 15


class _Unset(Enum):
    """Sentinel type: "use the socket's option"."""

    UNSET = 0


_UNSET = _Unset.UNSET

_API = TypeVar("_API")


@dataclass(eq=False)
class _ListenerHandle:
    endpoint: str
    bound: BoundListener | None = None  # None for inproc
    #: Created with the handle (not by the accept task) so that a stop issued before the task
    #: first runs still stops it: a scope cancelled before it is entered cancels on entry.
    scope: anyio.CancelScope = field(default_factory=anyio.CancelScope)
    #: Set when the accept loop has closed the listener and its connections have ended.
    stopped: anyio.Event = field(default_factory=anyio.Event)
    connections: set[StreamConnection] = field(default_factory=set)


@dataclass(eq=False)
class _DialerHandle:
    endpoint: str
    pipe: Pipe
    scope: anyio.CancelScope = field(default_factory=anyio.CancelScope)  # see _ListenerHandle
    #: Set when the dial loop has ended (its last connection torn down).
    stopped: anyio.Event = field(default_factory=anyio.Event)
    connection: StreamConnection | None = None


def _as_message(parts: Iterable[Any]) -> Message:
    """A fresh list of ``bytes`` (bytes-like and str are converted; str as UTF-8)."""
    message = list(parts)
    if not message:
        raise ValueError("a message needs at least one part")
    for i, part in enumerate(message):
        if type(part) is not bytes:
            if isinstance(part, str):
                message[i] = part.encode("utf-8")
            elif isinstance(part, (bytearray, memoryview)):
                message[i] = bytes(part)
            else:
                raise TypeError(f"message parts must be bytes, not {type(part).__name__}")
    return message


class Socket:
    """A ZeroMQ socket speaking ZMTP 3.1.

    ``Socket(zmtp.PUSH, send_hwm=100)``; options are the fields of :class:`~zmtp.Options`.
    Use it as ``async with Socket(...) as sock:`` so that its connections have a task group
    to run in; leaving the block closes it (honouring ``linger``).
    """

    def __init__(self, socket_type: SocketType | str, **options: Any) -> None:
        try:
            self.socket_type = SocketType(str(socket_type).upper()).value
        except ValueError:
            raise ValueError(f"unknown socket type {socket_type!r}") from None
        strategy_cls = STRATEGIES.get(self.socket_type)
        if strategy_cls is None:
            raise NotImplementedError(f"{self.socket_type} sockets are not implemented yet")
        self.options = Options.from_kwargs(options)
        self.extension: SocketExtension | None = None
        self._strategy: RoutingStrategy = strategy_cls(self)
        self._tg: TaskGroup | None = None
        self._entered = False
        self._closed = False
        self._closing = False
        self._monitors: list[Monitor] = []
        self._listeners: dict[str, _ListenerHandle] = {}
        self._dialers: dict[str, _DialerHandle] = {}
        self._pipes: set[Pipe] = set()
        self._send_wakeup: anyio.Event | None = None
        self._recv_wakeup: anyio.Event | None = None
        #: The connection whose read side a recv has borrowed (see _lent_read).
        self._lent_conn: StreamConnection | None = None
        self._flush_wakeup: anyio.Event | None = None
        self._ops = 0
        #: A multipart message ``recv()`` refused; handed out by the next receive call.
        self._held: Message | None = None
        self._running = 0
        self._idle: anyio.Event | None = None
        self.last_endpoint = ""

    def __repr__(self) -> str:
        state = "closed" if self._closed else "open"
        return f"<zmtp.Socket {self.socket_type} {state}>"

    # ------------------------------------------------------------------ lifecycle

    async def __aenter__(self) -> Socket:
        if self._entered:
            raise RuntimeError("a socket can be entered only once")
        self._entered = True
        self._tg = anyio.create_task_group()
        await self._tg.__aenter__()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> bool | None:
        try:
            if exc_type is None:
                await self.close()
            else:
                await self.close(linger=0)
        finally:
            tg, self._tg = self._tg, None
            if tg is not None:
                # Every task was stopped by close(); this only joins them. Never cancel the
                # group's own scope: it also covers the body of the user's `async with`.
                await tg.__aexit__(exc_type, exc, tb)
        return None

    @property
    def closed(self) -> bool:
        return self._closed

    def _task_group(self) -> TaskGroup:
        if self._closed or self._closing:
            raise SocketClosed("socket is closed")
        if self._tg is None:
            raise SocketClosed("use the socket inside `async with` before bind/connect")
        return self._tg

    async def close(self, linger: float | _Unset | None = _UNSET) -> None:
        """Close the socket: stop listening, flush queued messages for up to ``linger``
        seconds (the ``linger`` option by default; None waits until everything is written),
        then drop every connection and wait until they are all torn down."""
        if self._closed or self._closing:
            return
        self._closing = True
        wait = self.options.linger if isinstance(linger, _Unset) else linger
        for handle in list(self._listeners.values()):
            self._stop_listener(handle, close_connections=False)
        if wait is None or wait > 0:
            with anyio.move_on_after(wait if wait is not None else math.inf):
                await self._linger()
        self._closed = True
        # Closed is reported once an endpoint's connections are gone (after their
        # Disconnected), on every transport, as unbind() and disconnect() do.
        closed: list[str] = []
        for handle in list(self._listeners.values()):
            self._stop_listener(handle, close_connections=True)
            closed.append(handle.endpoint)
        self._listeners.clear()
        for dialer in list(self._dialers.values()):
            self._stop_dialer(dialer)
            closed.append(dialer.endpoint)
        self._dialers.clear()
        inproc.socket_closed(self)
        for wakeup in (self._send_wakeup, self._recv_wakeup):
            if wakeup is not None:
                wakeup.set()
        with anyio.CancelScope(shield=True):
            while self._running:
                self._idle = anyio.Event()
                await self._idle.wait()
        for endpoint in closed:
            self._emit(Closed(endpoint))
        self._emit(MonitorStopped())

    def _spawn(self, func: Callable[..., Awaitable[None]], *args: Any) -> None:
        """Start a background task whose end close() waits for."""
        tg = self._task_group()
        self._running += 1
        tg.start_soon(self._tracked, func, *args)

    async def _tracked(self, func: Callable[..., Awaitable[None]], *args: Any) -> None:
        try:
            await func(*args)
        finally:
            self._running -= 1
            if not self._running and self._idle is not None:
                self._idle.set()

    async def _linger(self) -> None:
        """Wait until every connection has written what was queued for it.

        That includes a connect() pipe whose connection is still being made (or re-made): as
        with libzmq, its messages wait for it within the linger time instead of being dropped.
        """

        def unsent(p: Pipe, dialing: set[Pipe]) -> bool:
            if p.endpoint.startswith("inproc://"):
                return False  # an inproc "outbox" is already the peer's inbox
            return (p.connected or p in dialing) and (bool(p.outbox.items) or p.flushing)

        while True:
            dialing = {h.pipe for h in self._dialers.values() if not h.stopped.is_set()}
            if not any(unsent(p, dialing) for p in self._pipes):
                break
            self._flush_wakeup = anyio.Event()
            await self._flush_wakeup.wait()  # set after every write batch and disconnect
        if self.extension is not None:
            await self.extension.linger()

    # ------------------------------------------------------------------ endpoints

    async def bind(self, endpoint: str) -> str:
        """Listen on ``endpoint``; returns the resolved endpoint (e.g. the real port)."""
        self._task_group()
        ep = parse_endpoint(endpoint)
        if isinstance(ep, InprocEndpoint):
            try:
                inproc.bind(self, ep.name)
            except OSError as exc:
                self._emit(BindFailed(endpoint, str(exc)))
                raise
            resolved = str(ep)
            self._listeners[resolved] = _ListenerHandle(resolved)
        elif isinstance(ep, UdpEndpoint):
            try:
                receiver = await udp.open_receiver(self, ep)  # DISH only (raises otherwise)
            except OSError as exc:
                self._emit(BindFailed(endpoint, exc.strerror or str(exc)))
                raise
            resolved = receiver.endpoint
            handle = _ListenerHandle(resolved)  # bound=None: no listener, a datagram reader
            self._listeners[resolved] = handle
            self._spawn(receiver.run, handle.scope, handle.stopped)
        else:
            try:
                bound = await listen(ep, self.options.backlog)
            except OSError as exc:
                self._emit(BindFailed(endpoint, exc.strerror or str(exc)))
                raise
            resolved = bound.endpoint
            handle = _ListenerHandle(resolved, bound)
            self._listeners[resolved] = handle
            self._spawn(self._accept_loop, handle)
        self.last_endpoint = resolved
        self._emit(Listening(resolved))
        return resolved

    async def unbind(self, endpoint: str) -> None:
        """Stop listening on ``endpoint`` (as returned by bind) and close its connections.

        Returns once the listener is closed (the port or path is free again) and its
        connections are torn down.
        """
        handle = self._listeners.pop(endpoint, None)
        if handle is None:
            raise ValueError(f"not bound to {endpoint!r}")
        self._stop_listener(handle, close_connections=True)
        if handle.bound is not None or endpoint.startswith("udp://"):
            with anyio.CancelScope(shield=True):  # bounded: teardown has its own timeouts
                await handle.stopped.wait()
        self._emit(Closed(endpoint))
        await anyio.lowlevel.checkpoint()

    async def connect(self, endpoint: str, *, routing_id: bytes | None = None) -> None:
        """Connect to ``endpoint``, reconnecting whenever the connection is lost.

        Returns at once; the connection is made in the background (watch the monitor for
        ``HandshakeSucceeded``). Messages sent before it is up are queued, unless ``immediate``.

        ROUTER only: ``routing_id`` is the id this peer gets (``ZMQ_CONNECT_ROUTING_ID``), so
        it can be addressed at once; without it the ``connect_routing_id`` option applies.
        """
        self._task_group()
        ep = parse_endpoint(endpoint)
        name = str(ep)
        if name in self._dialers:
            raise ValueError(f"already connected to {name!r}")
        if isinstance(ep, UdpEndpoint):
            udp.check_udp(self.socket_type, "connect", ep)  # RADIO only
        self._strategy.prepare_connect(name, routing_id)
        pipe = self._new_pipe(name, persistent=True)
        if self._strategy.attach_early(pipe) and not self.options.immediate:
            self._attach(pipe)
        handle = _DialerHandle(name, pipe)
        self._dialers[name] = handle
        if isinstance(ep, InprocEndpoint):
            inproc.connect(self, ep.name, pipe)
        elif isinstance(ep, UdpEndpoint):
            self._spawn(udp.run_sender, self, pipe, ep, handle.scope, handle.stopped)
        else:
            self._spawn(self._dial_loop, handle, ep)
        await anyio.lowlevel.checkpoint()

    async def disconnect(self, endpoint: str) -> None:
        """Stop connecting to ``endpoint`` and drop its connection and queued messages."""
        name = str(parse_endpoint(endpoint))
        handle = self._dialers.pop(name, None)
        if handle is None:
            raise ValueError(f"not connected to {endpoint!r}")
        self._stop_dialer(handle)
        if not name.startswith("inproc://"):
            with anyio.CancelScope(shield=True):  # bounded: teardown has its own timeouts
                await handle.stopped.wait()
        self._emit(Closed(name))
        await anyio.lowlevel.checkpoint()

    def _stop_listener(self, handle: _ListenerHandle, close_connections: bool) -> None:
        if handle.bound is None and handle.endpoint.startswith("udp://"):
            handle.scope.cancel()  # the DISH's datagram reader ends (zmtp/engine/udp.py)
            return
        if handle.bound is None:
            inproc.unbind(self, handle.endpoint.removeprefix("inproc://"), close_connections)
            return
        handle.scope.cancel()  # stops accepting; the listener closes in _accept_loop
        if close_connections:
            for connection in list(handle.connections):
                connection.close("endpoint unbound" if not self._closed else "socket closed")

    def _stop_dialer(self, handle: _DialerHandle) -> None:
        handle.scope.cancel()
        if handle.connection is not None:
            handle.connection.close("disconnected")
            # The connection ends asynchronously; tell the routing strategy and the extension
            # now, so that pipe_disconnected comes before pipe_removed (never after).
            self._pipe_disconnected(handle.pipe, "disconnected")
        if handle.endpoint.startswith("inproc://"):
            inproc.disconnect(self, handle.endpoint.removeprefix("inproc://"), handle.pipe)
        self._remove_pipe(handle.pipe)

    async def _accept_loop(self, handle: _ListenerHandle) -> None:
        """Accept connections until the listener's scope is cancelled.

        Connections run in a task group *outside* the accepting scope, so that stopping the
        listener (close with linger) leaves established connections flushing.
        """
        assert handle.bound is not None
        bound = handle.bound
        try:
            async with anyio.create_task_group() as connections:
                with handle.scope:
                    try:
                        while True:
                            try:
                                stream = await bound.listener.accept()
                            except OSError as exc:  # e.g. EMFILE: report, back off, keep serving
                                self._emit(BindFailed(handle.endpoint, f"accept failed: {exc}"))
                                await anyio.sleep(0.1)
                                continue
                            if handle.scope.cancel_called:
                                # Accepted just as the listener was stopped: refuse it, or
                                # it would outlive unbind()/close() unnoticed.
                                with anyio.CancelScope(shield=True):
                                    await stream.aclose()
                                break
                            address = peer_address(stream)
                            self._emit(Accepted(handle.endpoint, address))
                            connection = StreamConnection(
                                self, stream, handle.endpoint, address, None
                            )
                            handle.connections.add(connection)
                            connections.start_soon(self._run_accepted, handle, connection)
                    finally:
                        with anyio.CancelScope(shield=True):
                            await bound.aclose()
        finally:
            handle.stopped.set()

    async def _run_accepted(self, handle: _ListenerHandle, connection: StreamConnection) -> None:
        try:
            await connection.run()
        finally:
            handle.connections.discard(connection)

    async def _dial_loop(self, handle: _DialerHandle, ep: Any) -> None:
        try:
            await self._dial(handle, ep)
        finally:
            handle.stopped.set()
            self._written()  # a lingering close stops waiting for this dialer

    async def _dial(self, handle: _DialerHandle, ep: Any) -> None:
        opts = self.options
        base = opts.reconnect_ivl
        interval = base or 0.0
        with handle.scope:
            while True:
                try:
                    stream = await dial(ep)
                except OSError as exc:
                    self._emit(ConnectDelayed(handle.endpoint, exc.strerror or str(exc)))
                else:
                    address = peer_address(stream)
                    self._emit(Connected(handle.endpoint, address))
                    connection = StreamConnection(
                        self, stream, handle.endpoint, address, handle.pipe
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
                delay = _reconnect_delay(base, interval)
                if opts.reconnect_ivl_max > base:
                    interval = min(interval * 2, opts.reconnect_ivl_max)
                self._emit(ConnectRetried(handle.endpoint, delay))
                await anyio.sleep(delay)

    # ------------------------------------------------------------------ monitor

    def monitor(self) -> Monitor:
        """A new monitor: an async iterator of this socket's events from now until it closes."""
        monitor = Monitor()
        if self._closed:
            monitor._push(MonitorStopped())
        else:
            self._monitors.append(monitor)
        return monitor

    def _emit(self, event: MonitorEvent) -> None:
        if not self._monitors:
            return
        alive = []
        for monitor in self._monitors:
            if not monitor._closed:
                monitor._push(event)
                alive.append(monitor)
        self._monitors = alive

    # ------------------------------------------------------------------ extension

    def install_extension(self, extension: SocketExtension) -> None:
        """Install the socket's extension (once, before the first bind/connect)."""
        if self.extension is not None:
            raise RuntimeError("an extension is already installed")
        if self._listeners or self._dialers:
            raise RuntimeError("install extensions before bind/connect")
        self.extension = extension

    #: See :attr:`authenticator`.
    _authenticator: AuthHandler | None = None

    @property
    def authenticator(self) -> AuthHandler | None:
        """The in-process authenticator this socket consults as a server (docs/security.md).

        PLAIN and CURVE servers ask it about every client; a NULL socket with an authenticator
        asks it too (by address). Without one, a ZAP handler bound at
        ``inproc://zeromq.zap.01`` decides, else libzmq's defaults apply (CURVE: any key; PLAIN:
        refused). Applies to connections made after it is set.
        """
        return self._authenticator

    @authenticator.setter
    def authenticator(self, handler: AuthHandler | None) -> None:
        if handler is not None and not callable(getattr(handler, "authenticate", None)):
            raise TypeError("an authenticator needs an async authenticate(request) method")
        self._authenticator = handler

    def emit_event(self, event: MonitorEvent) -> None:
        """Deliver ``event`` to the socket's monitors (extension point: QoS events)."""
        self._emit(event)

    def wake_senders(self) -> None:
        """Re-try blocked sends (an extension calls this when its send gate opens)."""
        self._wake_senders()

    @property
    def peers(self) -> list[PeerInfo]:
        """Every peer with a live connection."""
        return [p.peer for p in self._pipes if p.connected and p.peer is not None]

    # ------------------------------------------------------------------ send / recv

    async def send(self, data: bytes | bytearray | memoryview | str) -> None:
        """Send a single-part message (see :meth:`send_multipart`)."""
        # The fast path is spelled out here too: one coroutine call per message matters.
        if self._closing:
            raise SocketClosed("socket is closed")
        message = [data] if type(data) is bytes else _as_message((data,))
        strategy = self._strategy
        if strategy.send_check:
            strategy.check_send(message)
        ops = self._ops = self._ops + 1
        if not ops & _CANCEL_CHECK_MASK:
            await checkpoint_if_cancelled()
        if strategy.try_send(message):
            if ops >= _YIELD_EVERY:
                self._ops = 0
                await cancel_shielded_checkpoint()  # queued already: never lose it to a cancel
            return
        await self._send_blocking(message)

    async def send_multipart(self, parts: Iterable[Any]) -> None:
        """Send a message of one or more parts, atomically.

        Blocks while the socket type has no peer with room (the HWM); raises TimeoutError after
        ``send_timeout``. If cancelled, the message was either queued whole or not at all.
        """
        if self._closing:
            raise SocketClosed("socket is closed")
        message = _as_message(parts)
        strategy = self._strategy
        if strategy.send_check:
            strategy.check_send(message)
        ops = self._ops = self._ops + 1
        if not ops & _CANCEL_CHECK_MASK:
            await checkpoint_if_cancelled()
        if strategy.try_send(message):
            if ops >= _YIELD_EVERY:
                self._ops = 0
                await cancel_shielded_checkpoint()  # queued already: never lose it to a cancel
            return
        await self._send_blocking(message)

    async def send_prepared(self, message: Message) -> None:
        """Send ``message``, a fresh list of ``bytes`` the caller will not touch again, as is.

        Extension point: unlike :meth:`send_multipart` the list is not copied, so the very
        object reaches the extension's ``before_send`` and an extension layer (QoS receipts)
        can tell its messages apart even when two are byte-identical.
        """
        if self._closing:
            raise SocketClosed("socket is closed")
        if not message or any(type(part) is not bytes for part in message):
            raise TypeError("send_prepared takes a non-empty list of bytes")
        strategy = self._strategy
        if strategy.send_check:
            strategy.check_send(message)
        if strategy.try_send(message):
            await cancel_shielded_checkpoint()  # queued already: never lose it to a cancel
            return
        await self._send_blocking(message)

    async def _send_blocking(self, message: Message) -> None:
        """Wait for a peer with room, up to ``send_timeout``."""
        strategy = self._strategy
        with self._timeout(self.options.send_timeout, "send"):
            while True:
                if self._send_wakeup is None:
                    self._send_wakeup = anyio.Event()
                await self._send_wakeup.wait()
                if self._closing:
                    raise SocketClosed("socket is closed")
                if strategy.try_send(message):
                    return

    async def recv(self) -> bytes:
        """Receive a message and return its only part (raises if it has several)."""
        ops = self._ops = self._ops + 1
        if not ops & _CANCEL_CHECK_MASK:
            await checkpoint_if_cancelled()
        message = self._held
        if message is not None:
            self._held = None
        else:
            message = self._strategy.try_recv()
            if message is None:
                message = await self._recv_blocking()
            elif ops >= _YIELD_EVERY:
                self._ops = 0
                await cancel_shielded_checkpoint()  # popped already: never lose it to a cancel
        if len(message) != 1:
            self._held = message  # not lost: the next recv/recv_multipart returns it
            raise ValueError(
                f"received a {len(message)}-part message; use recv_multipart() for multipart"
            )
        return message[0]

    async def recv_multipart(self) -> list[bytes]:
        """Receive the next message as a list of parts.

        Raises TimeoutError after ``recv_timeout``. A cancelled ``recv`` never loses a message.
        """
        strategy = self._strategy
        ops = self._ops = self._ops + 1
        if not ops & _CANCEL_CHECK_MASK:
            await checkpoint_if_cancelled()
        message = self._held
        if message is not None:
            self._held = None
            return message
        message = strategy.try_recv()
        if message is not None:
            if ops >= _YIELD_EVERY:
                self._ops = 0
                await cancel_shielded_checkpoint()  # popped already: never lose it to a cancel
            return message
        return await self._recv_blocking()

    async def _recv_blocking(self) -> Message:
        """Wait for a message, up to ``recv_timeout``."""
        strategy = self._strategy
        if self._closed:
            raise SocketClosed("socket is closed")
        strategy.check_recv()
        try:
            with self._timeout(self.options.recv_timeout, "recv"):
                while True:
                    lender = self._lender()
                    if lender is not None:
                        await self._lent_read(lender)
                    else:
                        if self._recv_wakeup is None:
                            self._recv_wakeup = anyio.Event()
                        await self._recv_wakeup.wait()
                    message = strategy.try_recv()
                    if message is not None:
                        return message
                    if self._closed:
                        raise SocketClosed("socket is closed")
        except TimeoutError:
            strategy.recv_timed_out()  # e.g. a REQ abandons its request (docs/socket-types.md)
            raise

    def _lender(self) -> StreamConnection | None:
        """The connection whose read side ``recv`` may borrow: the socket's only peer, over
        tcp/ipc, with its reader idle. With several peers a message may come from any of them,
        and a task can wait on one socket only, so their readers deliver as usual."""
        pipes = self._pipes
        if len(pipes) != 1:
            return None
        for pipe in pipes:
            stream = pipe.stream
            if stream is not None and stream.lendable:
                return stream
        return None

    async def _lent_read(self, lender: StreamConnection) -> None:
        """Read the peer's bytes in this task instead of waiting for its reader to deliver
        them: a reply then reaches the application one event-loop pass sooner (REQ/REP
        latency; see zmtp/engine/stream.py).

        No cancel scope of our own (entering one costs more than the pass it saves): a close
        or the connection ending closes the stream, which ends the read; a timeout or cancel
        comes from the caller's scopes; and a message from another peer kicks the read
        through ``_wake_receivers`` (see :meth:`StreamConnection.kick`).
        """
        self._lent_conn = lender
        try:
            data = await lender.lent_read()
        finally:
            self._lent_conn = None
        if data is not None:
            lender.process_lent(data)

    def __aiter__(self) -> AsyncIterator[list[bytes]]:
        return self._iterate()

    async def _iterate(self) -> AsyncIterator[list[bytes]]:
        """``async for message in socket``: messages until the socket closes."""
        while True:
            try:
                yield await self.recv_multipart()
            except SocketClosed:
                return

    @staticmethod
    def _timeout(seconds: float | None, what: str) -> AbstractContextManager[Any]:
        if seconds is None:
            return nullcontext()
        return anyio.fail_after(seconds)

    def _wake_senders(self) -> None:
        wakeup = self._send_wakeup
        if wakeup is not None:
            self._send_wakeup = None
            wakeup.set()

    def _wake_receivers(self) -> None:
        lent = self._lent_conn
        if lent is not None:
            lent.kick()  # a message elsewhere: end the lent read waiting on one peer
        wakeup = self._recv_wakeup
        if wakeup is not None:
            self._recv_wakeup = None
            wakeup.set()

    # ------------------------------------------------------------------ engine interface
    # Called by connections (stream or inproc); not public API.

    def _make_mechanism(self) -> Mechanism:
        return make_mechanism(self.options, has_authenticator=self._authenticator is not None)

    def _extension_properties(self) -> Mapping[str, bytes] | None:
        if self.extension is None:
            return None
        return self.extension.handshake_properties()

    def _new_pipe(
        self,
        endpoint: str,
        persistent: bool,
        inbox: MessageQueue | None = None,
        outbox: MessageQueue | None = None,
    ) -> Pipe:
        opts = self.options
        if inbox is None:
            inbox = MessageQueue(hwm_capacity(opts.recv_hwm))
        if outbox is None:
            outbox = MessageQueue(hwm_capacity(opts.send_hwm))
        pipe = Pipe(endpoint, inbox, outbox, persistent)
        strategy = self._strategy
        wake = self._wake_receivers

        def on_data() -> None:
            strategy.readable(pipe)
            wake()

        inbox.on_data = on_data
        outbox.on_space = self._wake_senders
        self._pipes.add(pipe)
        return pipe

    def _attach(self, pipe: Pipe) -> str | None:
        if pipe.attached:
            return None
        reason = self._strategy.attach(pipe)
        if reason is None:
            pipe.attached = True
            self._wake_senders()
        return reason

    def _pipe_handshake(self, pipe: Pipe, peer: PeerInfo, command_sink: Any) -> str | None:
        """A connection behind ``pipe`` completed its handshake; returns a rejection reason."""
        pipe.peer = peer
        ext = self.extension
        if ext is not None:
            reason = ext.validate_peer(pipe, peer)
            if reason is not None:
                return reason
        reason = self._attach(pipe)
        if reason is not None:
            return reason
        pipe.connected = True
        pipe._command_sink = command_sink
        self._strategy.connected(pipe)
        if ext is not None:
            ext.pipe_connected(pipe)
        self._wake_senders()
        return None

    def _pipe_refused(self, pipe: Pipe) -> None:
        """The handshake on ``pipe`` was refused (validator, PAIR's second peer): forget an
        accepted connection's pipe. No hook: the extension never saw it connected."""
        if not pipe.persistent:
            self._pipes.discard(pipe)

    def _pipe_disconnected(self, pipe: Pipe, reason: str) -> None:
        if not pipe.connected:
            return
        pipe.connected = False
        pipe._command_sink = None
        self._strategy.disconnected(pipe)
        if self.extension is not None:
            self.extension.pipe_disconnected(pipe, reason)
        if not pipe.persistent:
            self._remove_pipe(pipe)
        elif (self.options.immediate or not self._strategy.attach_early(pipe)) and pipe.attached:
            # Types that attach only known peers (ROUTER) must meet a reconnected peer afresh:
            # it may announce a different Identity.
            pipe.attached = False
            self._strategy.detach(pipe)
        self._written()

    def _close_pipe_connection(self, pipe: Pipe, reason: str) -> None:
        """Close the live connection behind ``pipe`` (a strategy's decision: ROUTER handover).

        A connect() pipe reconnects as usual; an accepted one goes away with its connection.
        """
        if pipe.endpoint.startswith("inproc://"):
            inproc.drop(pipe, reason)
            return
        for dialer in self._dialers.values():
            if dialer.pipe is pipe and dialer.connection is not None:
                dialer.connection.close(reason)
                return
        for listener in self._listeners.values():
            for connection in listener.connections:
                if connection.pipe is pipe:
                    connection.close(reason)
                    return

    def _remove_pipe(self, pipe: Pipe) -> None:
        if pipe not in self._pipes:
            return
        self._pipes.discard(pipe)
        if pipe.attached:
            pipe.attached = False
            self._strategy.detach(pipe)
        pipe.outbox.clear()  # undeliverable: the peer is gone for good
        if self.extension is not None:
            self.extension.pipe_removed(pipe)

    def _incoming(self, pipe: Pipe, messages: list[Message]) -> None:
        ext = self.extension
        if ext is not None:
            messages = [m for m in messages if ext.on_receive(pipe, m)]
            if not messages:
                return
        self._strategy.incoming(pipe, messages)

    def _incoming_one(self, pipe: Pipe, message: Message) -> None:
        ext = self.extension
        if ext is not None and not ext.on_receive(pipe, message):
            return
        self._strategy.incoming_one(pipe, message)

    def _command(self, pipe: Pipe, name: bytes, data: bytes) -> None:
        if not self._strategy.command(pipe, name, data) and self.extension is not None:
            self.extension.on_command(pipe, name, data)

    def _written(self) -> None:
        """A connection wrote a batch (lets a lingering close re-check its queues)."""
        wakeup = self._flush_wakeup
        if wakeup is not None:
            self._flush_wakeup = None
            wakeup.set()

    def _local_properties(self) -> dict[str, bytes]:
        """Our handshake metadata as a mapping (inproc exchanges it without encoding)."""
        props = {"Socket-Type": self.socket_type.encode()}
        if self.socket_type in ("REQ", "DEALER", "ROUTER"):
            props["Identity"] = self.options.identity
        props.update(self._extension_properties() or {})
        return props

    # ==================================================================================
    # Socket-type API (docs/socket-types.md). Thin wrappers: each checks that the socket
    # type supports the call (UnsupportedOperation otherwise) and delegates to the routing
    # strategy. Nothing here is on the send/recv fast paths.
    # ==================================================================================

    def _strategy_as(self, api: type[_API], what: str) -> _API:
        strategy = self._strategy
        if not isinstance(strategy, api):
            raise UnsupportedOperation(f"{self.socket_type} sockets do not support {what}")
        return strategy

    def subscribe(self, topic: bytes | bytearray | memoryview | str = b"") -> None:
        """SUB/XSUB: receive messages whose first frame starts with ``topic`` (b"" = all).

        Counted: each call needs its own :meth:`unsubscribe`. Sent to every publisher now and
        again after each reconnect. On an XPUB with ``xpub_manual``: subscribe the peer whose
        subscription message was received last.
        """
        self._strategy_as(Subscriptions, "subscribe()").subscribe(_as_bytes(topic))

    def unsubscribe(self, topic: bytes | bytearray | memoryview | str = b"") -> None:
        """Undo one :meth:`subscribe` of exactly ``topic`` (unknown topics are ignored)."""
        self._strategy_as(Subscriptions, "unsubscribe()").unsubscribe(_as_bytes(topic))

    def join(self, group: bytes | bytearray | memoryview | str) -> None:
        """DISH: receive messages of ``group`` (0-255 bytes, exact match).

        Raises ValueError if already joined (libzmq: EINVAL).
        """
        self._strategy_as(Groups, "join()").join(_as_bytes(group))

    def leave(self, group: bytes | bytearray | memoryview | str) -> None:
        """DISH: stop receiving ``group``. Raises ValueError if not joined."""
        self._strategy_as(Groups, "leave()").leave(_as_bytes(group))

    async def send_to(self, routing_id: int, data: bytes | bytearray | memoryview | str) -> None:
        """SERVER/PEER: send ``data`` to the peer with this routing id.

        Raises HostUnreachable if no such peer is attached; blocks while it is at its HWM.
        """
        routing = self._strategy_as(RoutingIds, "send_to()")
        await self.send_multipart([routing.encode_routing_id(routing_id), data])

    async def recv_from(self) -> tuple[int, bytes]:
        """SERVER/PEER: the next message as ``(routing_id, data)``."""
        routing = self._strategy_as(RoutingIds, "recv_from()")
        routing_id, data = await self.recv_multipart()
        return routing.decode_routing_id(routing_id), data

    async def send_group(
        self, group: bytes | str, data: bytes | bytearray | memoryview | str
    ) -> None:
        """RADIO: send ``data`` to the DISHes that joined ``group``. Never blocks (drops per
        full DISH) unless ``xpub_nodrop``."""
        if not isinstance(self._strategy, Radio):
            raise UnsupportedOperation(f"{self.socket_type} sockets do not support send_group()")
        await self.send_multipart([group, data])

    async def recv_group(self) -> tuple[bytes, bytes]:
        """DISH: the next message as ``(group, data)``."""
        self._strategy_as(Groups, "recv_group()")
        group, data = await self.recv_multipart()
        return group, data

    async def connect_peer(self, endpoint: str) -> int:
        """PEER: connect to ``endpoint`` and return the routing id of that peer at once.

        Messages sent to it are queued until the connection is up (so ``immediate`` cannot be
        used, as with libzmq's ``zmq_connect_peer``).
        """
        if not isinstance(self._strategy, Peer):
            raise UnsupportedOperation(f"{self.socket_type} sockets do not support connect_peer()")
        if self.options.immediate:
            raise UnsupportedOperation("connect_peer() cannot be used with immediate=True")
        await self.connect(endpoint)
        pipe = self._dialers[str(parse_endpoint(endpoint))].pipe
        return int.from_bytes(pipe.routing_id, "big")


def _as_bytes(value: bytes | bytearray | memoryview | str) -> bytes:
    """Topics and groups: bytes-like, or str as UTF-8 (like message parts)."""
    if isinstance(value, str):
        return value.encode("utf-8")
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value)
    raise TypeError(f"expected bytes or str, not {type(value).__name__}")


def _reconnect_delay(base: float, interval: float) -> float:
    """libzmq's schedule: the interval plus a random jitter of up to the base interval."""
    if base <= 0:
        return 0.0
    return interval + random.uniform(0, base)
