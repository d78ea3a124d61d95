"""Blocking sockets for synchronous code: ``zmtp.sync.Socket`` has the async socket's names.

::

    import zmtp.sync

    with zmtp.sync.Socket(zmtp.PULL) as pull, zmtp.sync.Socket(zmtp.PUSH) as push:
        push.connect(pull.bind("tcp://127.0.0.1:*"))
        push.send(b"hello")
        print(pull.recv())

Design. Every blocking socket is a face over an ordinary :class:`zmtp.Socket` on one asyncio
event loop per process (:mod:`zmtp.sync_loop`). There is no loop thread that every call is
handed to: a call that must wait (``recv`` with nothing buffered, ``bind``, ``close``...) runs
the loop itself, in the calling thread, until its work is done, so a thread that is the only
user of the loop pays what async code pays and no thread hand-over at all. A daemon thread
(``zmtp.sync``) runs the loop whenever no caller has for :data:`~zmtp.sync_loop.GRACE`
seconds (queued sends to flush, reconnects, heartbeats); a caller that then needs it asks for
it back, once. Threads
that find the loop busy in another caller hand their work to it. Ctrl-C interrupts a blocked
call and cancels its work (the async socket never loses a message to a cancel). Three paths
avoid running the loop for every message:

* **Direct sends** (REQ, REP, ROUTER, the draft types; and a DEALER or PAIR answering right
  after a receive): ``send`` routes the message in the calling thread, as the async socket's
  ``send`` does before it would block, and the bytes go out at once (the connection's eager
  write); only a send that must wait for a peer runs the loop. Every error is raised at once.
* **Queued sends** (PUSH, PUB, XPUB, XSUB, DEALER, PAIR otherwise: types whose send has no
  state to check): ``send`` validates the message and appends it to a buffer of up to
  :data:`SEND_BUFFER` messages that a pump task feeds to the socket; a full buffer makes the
  sender run the loop until half of it is sent (raising ``TimeoutError`` after
  ``send_timeout``). A send error met later by the pump (the socket was closed under it) is
  raised by the next ``send``.
* **Batched receives**: a ``recv`` that finds nothing buffered takes the first message and then
  every message already waiting, up to :data:`RECV_BATCH`, into a buffer that the next calls
  read without running the loop (REQ and REP take one at a time: their receive changes state).

So each queue can hold up to ``SEND_BUFFER``/``RECV_BATCH`` messages more than the high-water
marks say, and messages in those buffers are lost on close like messages in libzmq's queues.

Thread safety: a blocking socket may be used from several threads. Sends are serialised with
each other and receives with each other, but one thread may send while another receives (a
DEALER or PAIR worker). Each message is sent and received whole; with several threads sending,
their messages interleave in an arbitrary order. Everything else (``bind``, ``set``,
``close``...) runs with the loop, one call at a time. A forked child makes its own loop
(sockets made before the fork are unusable in the child). From inside a running asyncio or
trio loop (an async program calling blocking code) the calls work, handed to the background
thread, but block that loop meanwhile: use the async socket there.

Interpreter exit never hangs: sockets still open then are closed with their ``linger`` capped
at :data:`EXIT_LINGER` seconds (so a message nobody can take delays exit by at most that).
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import enum
import math
import os
import threading
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from types import TracebackType
from typing import TYPE_CHECKING, Any

import anyio

from .errors import CLOSED, SocketClosed
from .monitor import Monitor as AsyncMonitor
from .monitor import MonitorEvent, PeerInfo
from .options import (
    OPTION_NAMES,
    Options,
    option_attribute,
    warn_if_milliseconds,
    warn_if_milliseconds_argument,
)
from .poller import POLLIN, POLLOUT, Registrations
from .poller import Poller as AsyncPoller
from .protocol.errors import InvalidArgument, TimedOut
from .protocol.sockettypes import SocketType
from .pyzmq_hints import (
    NOBLOCK,
    SNDMORE,
    check_recv_flags,
    check_send_flags,
    install_pyzmq_hints,
)
from .routing.base import RoutingStrategy
from .serialize import SyncSerializers
from .socket import Socket as AsyncSocket
from .socket import as_message
from .sync_loop import GRACE, SharedLoop, shared_loop

if TYPE_CHECKING:
    from .proxy import ProxyStatistics

#: Messages a queued ``send`` may buffer ahead of the socket (beyond ``send_hwm``).
SEND_BUFFER = 1024
#: Most messages one ``recv`` hand-over moves to the calling thread (beyond ``recv_hwm``).
RECV_BATCH = 256
#: At interpreter exit, open sockets flush for at most this long (seconds) before closing.
EXIT_LINGER = 1.0

#: A sender waiting for room in a full send buffer resumes once it is this empty: waking it
#: for every message taken would hand the GIL back and forth once per message.
_RESUME_AT = SEND_BUFFER // 2

#: The send pump lets other tasks run after routing this many messages in a row.
_PUMP_YIELD = 256
#: Send has no per-message state to check: sends are queued in the calling thread.
_QUEUED_SEND = frozenset({"PUSH", "PUB", "XPUB", "XSUB", "DEALER", "PAIR"})
#: Receiving changes the socket's state: never fetch more than the caller asked for.
_ONE_AT_A_TIME = frozenset({"REQ", "REP"})


# ---------------------------------------------------------------------- the loop


class _Option(enum.Enum):
    """Sentinel type of :data:`OPTION`."""

    OPTION = 0


#: ``close(linger=OPTION)``: use the socket's ``linger`` option.
OPTION = _Option.OPTION


class _OpenSockets:
    """The sockets still open in this process, closed at interpreter exit."""

    def __init__(self) -> None:
        self.pid = os.getpid()
        self.cores: set[_Core] = set()

    def current(self) -> set[_Core]:
        if self.pid != os.getpid():  # a forked child: the parent's sockets are not ours
            self.pid, self.cores = os.getpid(), set()
        return self.cores

    def shutdown(self) -> None:
        """At interpreter exit: close what is still open, within ``EXIT_LINGER`` each."""
        cores = self.current()
        if not cores:
            return
        shared = shared_loop()
        for core in list(cores):
            linger = core.sock.options.linger
            capped = EXIT_LINGER if linger is None else min(linger, EXIT_LINGER)
            with contextlib.suppress(Exception):  # exiting: nobody left to report to
                shared.run(core.close, capped)


_OPEN = _OpenSockets()
atexit.register(_OPEN.shutdown)


# ---------------------------------------------------------------------- loop-side state


class _Core:
    """The loop-thread side of one blocking socket: the async socket, its owner task, the send
    pump and the receive buffer. The face (:class:`Socket`) holds this; nothing here holds the
    face, so a face nobody references can be collected (and closes its socket).

    Slotted: the direct send (:func:`_send_now`) reads ``engine``, ``strategy``,
    ``send_unchecked`` and ``send_check`` per message, and CPython 3.11 specialises a slot's
    read, not a class attribute's through an instance (the routing strategy's
    ``send_check``), nor a property's (the async socket's ``engine`` and ``closed``): the
    async socket's plain send paths read their send check from a slot for the same reason
    (docs/performance.md)."""

    __slots__ = (
        "close_requested",
        "closed",
        "drained",
        "engine",
        "inbox",
        "linger",
        "linger_given",
        "more",
        "outq",
        "owner",
        "pump_idle",
        "pump_task",
        "pump_wake",
        "send_check",
        "send_error",
        "send_unchecked",
        "sock",
        "space",
        "strategy",
    )

    def __init__(self, sock: AsyncSocket) -> None:
        self.sock = sock
        self.engine = engine = sock.engine
        self.strategy: RoutingStrategy = engine.strategy
        #: Whether direct sends skip the type's ``check_send`` (its class's ``send_check``,
        #: read once); False too while pyzmq ``SNDMORE`` parts are held (see hold).
        self.send_unchecked = not self.strategy.send_check
        #: What a direct send calls when ``send_unchecked`` is False: the type's check, or
        #: :meth:`join_held` while ``SNDMORE`` parts are held.
        self.send_check: Callable[[list[bytes]], None] = self.strategy.check_send
        #: Parts sent with pyzmq's ``SNDMORE``, held for the next send without it.
        self.more: list[bytes] | None = None
        self.owner: asyncio.Task[None] | None = None
        self.close_requested = asyncio.Event()
        self.closed = asyncio.Event()
        self.linger: float | None = None
        self.linger_given = False
        # queued sends
        self.outq: deque[list[bytes]] = deque()
        self.pump_task: asyncio.Task[None] | None = None
        self.pump_idle = True  # read and written by both threads; see Socket.send_multipart
        self.pump_wake: asyncio.Event | None = None
        self.drained = asyncio.Event()
        self.drained.set()
        self.send_error: BaseException | None = None
        #: Set by the pump when the buffer is down to _RESUME_AT (None: nobody waits).
        self.space: asyncio.Event | None = None
        # batched receives
        self.inbox: deque[list[bytes]] = deque()

    async def own(self, ready: asyncio.Future[None]) -> None:
        """The task that enters and leaves the socket's ``async with`` (one task must do
        both), staying in between until a close is requested."""
        try:
            async with self.sock:
                ready.set_result(None)
                await self.close_requested.wait()
                await self._shut()
        except BaseException as exc:
            if not ready.done():
                ready.set_exception(exc)
        finally:
            _OPEN.current().discard(self)
            self.closed.set()
            self._notify_space()

    async def _shut(self) -> None:
        linger = self.linger if self.linger_given else self.sock.options.linger
        deadline = math.inf if linger is None else anyio.current_time() + linger
        if self.outq and linger != 0:
            with anyio.move_on_after(linger if linger is not None else math.inf):
                await self.drained.wait()  # queued sends reach the socket first
        if self.pump_task is not None:
            self.pump_task.cancel()
        self.outq.clear()
        remaining = None if linger is None else max(0.0, deadline - anyio.current_time())
        await self.sock.close(linger=remaining)

    async def close(self, linger: float | _Option | None = OPTION) -> None:
        """Ask the owner to close (with the ``linger`` option by default) and wait for it."""
        if not isinstance(linger, _Option) and not self.close_requested.is_set():
            self.linger, self.linger_given = linger, True
        self.close_requested.set()
        await self.closed.wait()

    def request_close(self) -> None:
        """Close without waiting (a face was garbage-collected while open)."""
        self.close_requested.set()

    # queued sends: the pump is a task of the loop

    def wake_pump(self) -> None:
        self.drained.clear()
        if self.pump_task is None:
            self.pump_task = asyncio.ensure_future(self._pump())
        elif self.pump_wake is not None:
            self.pump_wake.set()

    async def _pump(self) -> None:
        """Feed the buffer to the socket: routed directly while a peer has room (what the async
        ``send`` does before it would block, without a coroutine call per message), through
        the async ``send`` when it must wait; a pause every ``_PUMP_YIELD`` messages lets the
        connections' writers start on what is routed."""
        queue = self.outq
        sock = self.sock
        send = sock.send_multipart
        strategy = sock.engine.strategy
        check = strategy.send_check
        routed = 0
        while True:
            while queue:
                message = queue[0]
                try:
                    if routed >= _PUMP_YIELD:
                        routed = 0
                        await asyncio.sleep(0)
                        continue
                    if sock.closed:
                        raise SocketClosed(CLOSED)
                    if check:
                        strategy.check_send(message)
                    if strategy.try_send(message):
                        routed += 1
                    else:
                        routed = 0
                        await send(message)  # waits for room (or the socket's send_timeout)
                except TimeoutError:
                    continue  # the socket's send_timeout; callers time out on the buffer
                except Exception as exc:
                    self.send_error = exc
                    queue.clear()
                    self._notify_space()
                    self.drained.set()
                    self.pump_task = None
                    self.pump_idle = True
                    return
                queue.popleft()
                if self.space is not None and len(queue) <= _RESUME_AT:
                    self._notify_space()
            wake = self.pump_wake = asyncio.Event()
            self.pump_idle = True
            if queue:  # appended after the loop above saw it empty
                self.pump_idle = False
                continue
            self.drained.set()
            await wake.wait()

    def _notify_space(self) -> None:
        space, self.space = self.space, None
        if space is not None:
            space.set()

    async def wait_for_space(self, timeout: float | None) -> None:
        """Run by a sender that found the buffer full, until it is down to ``_RESUME_AT``:
        the sender's own thread usually drives the loop meanwhile, pumping its messages out
        itself (no thread hand-over per buffer-full)."""
        with anyio.move_on_after(math.inf if timeout is None else timeout):
            while len(self.outq) > _RESUME_AT and not self.closed.is_set():
                if self.pump_task is None:  # failed: send_error says why
                    return
                if self.space is None:
                    self.space = asyncio.Event()
                await self.space.wait()
            return
        raise TimedOut(
            f"send timed out after {timeout:g} s (send_timeout): no peer took the "
            f"{SEND_BUFFER} messages queued before it; check that a peer is up, or raise "
            "send_timeout (None blocks)"
        )

    # batched receives

    async def fetch(self, batch: int) -> None:
        """Move the next message, and then every message already waiting (up to ``batch``
        in the buffer), into the face's buffer.

        After the first, messages are taken with the routing strategy's ``try_recv``, which is
        what the async ``recv`` does when a message is waiting (less a coroutine call and a
        ``readable()`` per message); right after ``recv_multipart`` returned, and with no
        await in between, the async socket holds no message of its own that could be
        overtaken (only ``readable()`` sets one aside). A type with receive runs
        (``RoutingStrategy.recv_runs``, no extension) is read as the async ``recv`` reads it:
        the run's messages one C call each, and ``take_run`` for the next run.
        """
        sock, inbox = self.sock, self.inbox
        inbox.append(await sock.recv_multipart())
        if batch <= 1:
            return
        strategy = sock.engine.strategy
        append = inbox.append
        if strategy.recv_runs and sock.extension is None:
            take_run = strategy.take_run
            while len(inbox) < batch:
                message = next(strategy.run, None)
                if message is None:
                    message = take_run(batch - len(inbox))
                    if message is None:
                        return
                append([message] if isinstance(message, bytes) else message)
            return
        try_recv = strategy.try_recv
        while len(inbox) < batch:
            try:
                message = try_recv()
            except Exception:  # what the next recv should raise: leave it to the async path
                return
            if message is None:
                return
            append([message] if isinstance(message, bytes) else message)  # a bare one-part

    async def fetch_now(self) -> None:
        """A ``NOBLOCK`` receive: the waiting message into the face's buffer, or TimedOut
        (the async socket's NOBLOCK)."""
        self.inbox.append(await self.sock.recv_multipart(NOBLOCK))

    # pyzmq's SNDMORE

    def hold(self, parts: list[bytes]) -> None:
        """Hold ``parts`` (a ``SNDMORE`` send) for the next send without SNDMORE, checked now
        as the async socket checks them (a REQ out of turn is refused at this part).

        Holding makes ``send_unchecked`` False and ``send_check`` :meth:`join_held`, so a
        direct send (:func:`_send_now`), which calls ``send_check`` then anyway, joins them;
        the face joins them itself on the paths that do not get there (Socket._send). A
        socket that never holds parts pays nothing for it."""
        held = parts if self.more is None else self.more + parts
        strategy = self.strategy
        if strategy.send_check:
            strategy.check_send(held)
        self.more = held
        self.send_unchecked = False
        self.send_check = self.join_held

    def join_held(self, message: list[bytes]) -> None:
        """Put the held ``SNDMORE`` parts in front of ``message`` (in place), end the
        holding, and run the type's send check on the whole."""
        held, self.more = self.more, None
        strategy = self.strategy
        self.send_check = strategy.check_send
        self.send_unchecked = not strategy.send_check
        if held is not None:
            message[:0] = held
        if strategy.send_check:
            strategy.check_send(message)

    async def monitor(self) -> AsyncMonitor:
        return self.sock.monitor()


async def _open(socket_type: SocketType | str, options: dict[str, Any]) -> _Core:
    core = _Core(AsyncSocket(socket_type, **options))
    ready: asyncio.Future[None] = asyncio.get_running_loop().create_future()
    core.owner = asyncio.ensure_future(core.own(ready))
    await ready
    _OPEN.current().add(core)
    return core


# ---------------------------------------------------------------------- the face


class Socket(SyncSerializers):
    """A blocking ZeroMQ socket: ``zmtp.sync.Socket(zmtp.PUSH, send_hwm=100)``.

    Options and semantics are those of :class:`zmtp.Socket` (times in seconds); every method
    blocks instead of being awaited. Use it as a context manager, or call :meth:`close`.
    """

    # No instance __dict__: ``sock.linger = 0`` raises with a hint (see
    # zmtp.options.option_attribute), as on the async socket.
    __slots__ = (
        "__weakref__",
        "_answering",
        "_batch",
        "_closed",
        "_core",
        "_queued",
        "_recv_lock",
        "_shared",
        "socket_type",
    )

    def __init__(self, socket_type: SocketType | str, **options: Any) -> None:
        for name, value in options.items():  # here, so the warning points at the caller
            warn_if_milliseconds(name, value, stacklevel=3)
        self._shared = shared_loop()
        self._core: _Core = self._shared.run(_open, socket_type, options)
        self.socket_type: str = self._core.sock.socket_type
        self._queued = self.socket_type in _QUEUED_SEND
        self._batch = 1 if self.socket_type in _ONE_AT_A_TIME else RECV_BATCH
        self._recv_lock = threading.Lock()
        #: A queued-send type just received: its next send is likely an answer (DEALER,
        #: PAIR ping-pong), sent directly like REQ's rather than queued (see _send).
        self._answering = False
        self._closed = False

    def __repr__(self) -> str:
        state = "closed" if self._closed else "open"
        return f"<zmtp.sync.Socket {self.socket_type} {state}>"

    def __enter__(self) -> Socket:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if exc_type is None:
            self.close()
        else:
            self.close(linger=0)

    def __del__(self) -> None:
        core = getattr(self, "_core", None)
        if core is not None and not self._closed:
            with contextlib.suppress(RuntimeError):  # the loop is gone (interpreter exit)
                self._shared.post_nowait(core.request_close)

    @property
    def closed(self) -> bool:
        return self._closed

    @property
    def options(self) -> Options:
        """The socket's options (read them here; change them with ``set``)."""
        return self._core.sock.options

    @property
    def last_endpoint(self) -> str:
        return self._core.sock.last_endpoint

    @property
    def async_socket(self) -> AsyncSocket:
        """The :class:`zmtp.Socket` behind this face; touch it only from code that the loop
        runs (a coroutine handed to the proxy, say), never from your own threads."""
        return self._core.sock

    def set(self, name: str, value: Any) -> None:
        """Change an option (see :meth:`zmtp.Socket.set`: same checks, same rules)."""
        warn_if_milliseconds(name, value, stacklevel=3)
        self._run(self._core.sock.set, name, value)

    def get(self, name: str) -> Any:
        """An option's current value."""
        return self._core.sock.get(name)

    def _check_open(self) -> None:
        if self._closed:
            raise SocketClosed(CLOSED)

    def _run(self, func: Callable[..., Any], *args: Any) -> Any:
        self._check_open()
        return self._shared.run(func, *args)

    def close(self, linger: float | _Option | None = OPTION) -> None:
        """Close the socket, flushing queued messages for up to ``linger`` seconds (the
        ``linger`` option when not given; None waits until everything is written)."""
        if self._closed:
            return
        self._closed = True
        self._shared.run(self._core.close, linger)

    # endpoints

    def bind(self, endpoint: str) -> str:
        """Listen on ``endpoint``; returns the resolved endpoint (the real port)."""
        return str(self._run(self._core.sock.bind, endpoint))

    def unbind(self, endpoint: str) -> None:
        self._run(self._core.sock.unbind, endpoint)

    def connect(self, endpoint: str, *, routing_id: bytes | None = None) -> str:
        """Connect to ``endpoint`` (in the background, reconnecting); returns ``endpoint``."""
        self._run(_connect, self._core.sock, endpoint, routing_id)
        return endpoint

    def disconnect(self, endpoint: str) -> None:
        self._run(self._core.sock.disconnect, endpoint)

    # send

    def send(
        self,
        data: bytes | bytearray | memoryview | str,
        flags: int | None = None,
        copy: bool = True,
        track: bool = False,
    ) -> None:
        """Send a single-part message (see :meth:`send_multipart`).

        ``flags``, ``copy`` and ``track`` are pyzmq's, as :meth:`zmtp.Socket.send` takes them
        (docs/from-pyzmq.md): ``zmtp.NOBLOCK`` raises TimedOut at once where the send would
        wait, ``zmtp.SNDMORE`` holds the part for the next send without it.
        """
        if flags is not None:  # pyzmq's flags: looked at only when given
            self._send_flagged([data] if type(data) is bytes else as_message((data,)), flags)
            return
        self._send([data] if type(data) is bytes else as_message((data,)))

    def send_multipart(
        self, parts: Iterable[Any], flags: int | None = None, copy: bool = True, track: bool = False
    ) -> None:
        """Send one message. Blocks while the socket cannot take it; raises TimeoutError
        after ``send_timeout``. ``flags``, ``copy`` and ``track`` are pyzmq's, as for
        :meth:`send`."""
        if flags is not None:  # pyzmq's flags: looked at only when given
            self._send_flagged(as_message(parts), flags)
            return
        self._send(as_message(parts))

    def _send_flagged(self, message: list[bytes], flags: int) -> None:
        """A send with pyzmq's ``flags``: ``SNDMORE`` holds the parts (_Core.hold);
        ``NOBLOCK`` sends now or raises TimedOut (zmtp's ``zmq.Again``), with any held
        parts in front (dropped with the message if it raises, as pyzmq's Again leaves no
        part behind). A queued type (PUSH, PUB, DEALER...) with sends still buffered
        buffers a NOBLOCK send behind them while the buffer has room (the order is kept;
        TimedOut once it is full); with nothing buffered it is sent at once or refused,
        as pyzmq's."""
        check_send_flags(flags)
        if not flags:  # flags=0 spelled out: a plain send
            self._send(message)
            return
        self._check_open()
        core = self._core
        if flags & SNDMORE:
            core.hold(message)
            if self._queued:
                self._answering = True  # the next send joins them (see _send)
            return
        if core.more is not None:
            core.join_held(message)
        if not self._queued:
            if self._batch == 1 and self.socket_type == "REQ":
                core.inbox.clear()  # a new request (see _send)
            self._run(core.sock.send_multipart, message, NOBLOCK)
            return
        error = core.send_error
        if error is not None:
            core.send_error = None
            raise error
        queue = core.outq
        if not queue and core.pump_idle:
            self._run(core.sock.send_multipart, message, NOBLOCK)
        elif len(queue) < SEND_BUFFER:
            self._send(message)  # behind the buffered sends; there is room: it does not wait
        else:
            raise TimedOut(
                f"send would block (NOBLOCK): the {SEND_BUFFER} sends buffered before it are "
                "not taken yet; retry later, or send without NOBLOCK"
            )

    def _send(self, message: list[bytes]) -> None:
        if not self._queued:
            self._check_open()
            if self._batch == 1 and self.socket_type == "REQ":
                # A new request: a reply still buffered (a recv() that refused a multipart
                # reply, or was interrupted) answers an earlier one, as in the async REQ.
                self._core.inbox.clear()
            core = self._core
            _, sent = self._shared.try_now(_send_now, core, message)
            if not sent:  # the loop is busy elsewhere, or the socket must wait for a peer
                if core.more is not None:  # _send_now did not run: SNDMORE parts are held
                    core.join_held(message)
                self._run(core.sock.send_multipart, message)
            return
        core = self._core
        if self._closed:
            raise SocketClosed(CLOSED)
        error = core.send_error
        if error is not None:
            core.send_error = None
            raise error
        queue = core.outq
        if self._answering:
            # Ping-pong on a queued type: with nothing queued ahead of it, an answer goes out
            # directly (no pump, no background thread woken, no hand-over for the receive
            # that follows). Only the first send after a receive: a stream stays queued.
            # Holding SNDMORE parts sets _answering too: they join the message here.
            self._answering = False
            if core.more is not None:
                core.join_held(message)
            if not queue and core.pump_idle:
                _, sent = self._shared.try_now(_send_now, core, message)
                if sent:
                    return
        if len(queue) >= SEND_BUFFER:
            self._shared.run(core.wait_for_space, core.sock.options.send_timeout)
            if core.closed.is_set():
                raise SocketClosed(CLOSED)
            error = core.send_error
            if error is not None:
                core.send_error = None
                raise error
        queue.append(message)
        if core.pump_idle:
            core.pump_idle = False
            shared = self._shared
            shared.loop.call_soon_threadsafe(core.wake_pump)
            shared.kick()

    # receive

    def recv(self, flags: int | None = None, copy: bool = True, track: bool = False) -> bytes:
        """Receive a message and return its only part (raises if it has several).

        ``flags``, ``copy`` and ``track`` are pyzmq's, as :meth:`zmtp.Socket.recv` takes them:
        ``zmtp.NOBLOCK`` raises TimedOut at once if no message is waiting.
        """
        if flags is not None:  # pyzmq's flags: looked at only when given
            self._recv_ready(flags)
        inbox = self._core.inbox
        if inbox and not self._queued:  # the fast path of recv_multipart, inline
            try:
                message = inbox.popleft()
            except IndexError:  # another thread took it
                message = self.recv_multipart()
        else:
            message = self.recv_multipart()
        if len(message) != 1:
            self._core.inbox.appendleft(message)  # not lost: the next receive returns it
            raise InvalidArgument(
                f"received a {len(message)}-part message; use recv_multipart() for multipart"
            )
        return message[0]

    def recv_multipart(
        self, flags: int | None = None, copy: bool = True, track: bool = False
    ) -> list[bytes]:
        """Receive the next message as a list of parts (TimeoutError after ``recv_timeout``).
        ``flags``, ``copy`` and ``track`` are pyzmq's, as for :meth:`recv`."""
        if flags is not None:  # pyzmq's flags: looked at only when given
            self._recv_ready(flags)
        inbox = self._core.inbox
        self._answering = self._queued
        if inbox:
            try:
                return inbox.popleft()
            except IndexError:  # another thread took it
                pass
        with self._recv_lock:
            # Into the buffer, not returned: a receive that completes as Ctrl-C arrives keeps
            # its message there for the next call.
            while not inbox:
                self._run(self._core.fetch, self._batch)
            return inbox.popleft()

    def _recv_ready(self, flags: int) -> None:
        """A receive with pyzmq's ``flags``: with ``NOBLOCK``, return once a message is in
        the buffer (the receive that called this returns it), else raise TimedOut (or what
        the receive would raise now). Another thread blocked in a receive counts as
        nothing waiting: a NOBLOCK receive never waits for it."""
        check_recv_flags(flags)
        if not flags or self._core.inbox:
            return
        self._check_open()
        if not self._recv_lock.acquire(blocking=False):
            raise TimedOut("recv would block (NOBLOCK): another thread is receiving")
        try:
            if not self._core.inbox:
                self._run(self._core.fetch_now)
        finally:
            self._recv_lock.release()

    def readable(self) -> bool:
        """True if a message is waiting (the next receive returns at once)."""
        if self._core.inbox:
            return True
        return bool(self._run(self._core.sock.readable))

    def __iter__(self) -> Iterator[list[bytes]]:
        """``for message in sock``: messages until the socket is closed."""
        while True:
            try:
                yield self.recv_multipart()
            except SocketClosed:
                return

    # socket-type API

    def subscribe(self, topic: bytes | bytearray | memoryview | str = b"") -> None:
        self._run(self._core.sock.subscribe, topic)

    def unsubscribe(self, topic: bytes | bytearray | memoryview | str = b"") -> None:
        self._run(self._core.sock.unsubscribe, topic)

    def join(self, group: bytes | bytearray | memoryview | str) -> None:
        self._run(self._core.sock.join, group)

    def leave(self, group: bytes | bytearray | memoryview | str) -> None:
        self._run(self._core.sock.leave, group)

    def send_to(self, routing_id: int, data: bytes | bytearray | memoryview | str) -> None:
        self._run(self._core.sock.send_to, routing_id, data)

    def recv_from(self) -> tuple[int, bytes]:
        result: tuple[int, bytes] = self._run(self._core.sock.recv_from)
        return result

    def send_group(self, group: bytes | str, data: bytes | bytearray | memoryview | str) -> None:
        self._run(self._core.sock.send_group, group, data)

    def recv_group(self) -> tuple[bytes, bytes]:
        result: tuple[bytes, bytes] = self._run(self._core.sock.recv_group)
        return result

    def connect_peer(self, endpoint: str) -> int:
        return int(self._run(self._core.sock.connect_peer, endpoint))

    @property
    def peers(self) -> list[PeerInfo]:
        result: list[PeerInfo] = self._run(_peers, self._core.sock)
        return result

    # monitor

    def monitor(self) -> Monitor:
        """A blocking iterator over this socket's monitor events from now until it closes."""
        return Monitor(self._shared, self._run(self._core.monitor))


class Context:
    """pyzmq's context for ported code: ``ctx.socket(zmtp.PUSH)`` makes a blocking socket,
    ``ctx.term()`` (or leaving ``with``) closes every socket it made. Keyword arguments are
    default options for its sockets (a socket's own options win). Thread-safe."""

    def __init__(self, **defaults: Any) -> None:
        self.defaults = defaults
        self._lock = threading.Lock()
        self._sockets: list[Socket] = []
        self.closed = False

    def socket(self, socket_type: SocketType | str, **options: Any) -> Socket:
        with self._lock:
            if self.closed:
                raise SocketClosed("context is terminated: make a new Context")
            sock = Socket(socket_type, **{**self.defaults, **options})
            self._sockets.append(sock)
            return sock

    def term(self, linger: float | _Option | None = OPTION) -> None:
        """Close every socket this context made (each with ``linger``, by default its own
        option)."""
        with self._lock:
            self.closed = True
            sockets, self._sockets = self._sockets, []
        for sock in reversed(sockets):
            sock.close(linger)

    def destroy(self, linger: float | None = 0) -> None:
        """pyzmq's name for closing everything with ``linger`` (0: drop what is queued)."""
        self.term(linger)

    def __enter__(self) -> Context:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.term() if exc_type is None else self.term(0)


class Poller(Registrations[Socket]):
    """The blocking twin of :class:`zmtp.poller.Poller`: ``poll(timeout)`` (seconds) returns
    ``[(socket, events)]`` for the registered blocking sockets that are ready, consuming
    nothing (a message already moved to a socket's receive buffer counts as waiting)."""

    def poll(self, timeout: float | None = None) -> list[tuple[Socket, int]]:
        warn_if_milliseconds_argument("timeout", timeout)  # pyzmq's poll(1000) is 1 s
        if not self.sockets:
            return []
        buffered = {s for s, f in self.sockets.items() if f & POLLIN and s._core.inbox}
        faces = {s.async_socket: s for s in self.sockets}
        found: list[tuple[AsyncSocket, int]] = shared_loop().run(
            _poll_async,
            {s.async_socket: f for s, f in self.sockets.items()},
            0 if buffered else timeout,
        )
        events = {faces[a]: e for a, e in found}
        for sock in buffered:
            events[sock] = events.get(sock, 0) | POLLIN
        return [(s, events[s]) for s in self.sockets if s in events]


async def _poll_async(
    sockets: dict[AsyncSocket, int], timeout: float | None
) -> list[tuple[AsyncSocket, int]]:
    poller = AsyncPoller()
    for sock, flags in sockets.items():
        poller.register(sock, flags)
    return await poller.poll(timeout)


def proxy(frontend: Socket, backend: Socket, capture: Socket | None = None) -> None:
    """The blocking :func:`zmtp.proxy.proxy`: forwards until a socket is closed (from another
    thread; raises SocketClosed then). Runs with the loop (in the calling thread while no other
    thread needs it) on the sockets' async faces; do not receive on these sockets meanwhile."""
    steerable_proxy(frontend, backend, capture)


def steerable_proxy(
    frontend: Socket,
    backend: Socket,
    capture: Socket | None = None,
    control: Socket | None = None,
) -> ProxyStatistics:
    """The blocking :func:`zmtp.proxy.steerable_proxy`: returns its statistics after
    ``TERMINATE`` on ``control``."""
    from .proxy import steerable_proxy as run

    sockets = [s for s in (frontend, backend, capture, control) if s is not None]
    for sock in sockets:
        sock._check_open()
    stats: ProxyStatistics = shared_loop().run(
        run,
        frontend.async_socket,
        backend.async_socket,
        None if capture is None else capture.async_socket,
        None if control is None else control.async_socket,
    )
    return stats


def _send_now(core: _Core, message: list[bytes]) -> bool:
    """A direct send without waiting, holding the loop (SharedLoop.try_now): what the async
    ``send_multipart`` does before it would block. False: it must wait (or raise: the async
    path says why).

    Everything it reads per message is a slot of ``core`` (the engine, the strategy, the
    send check), not the async socket's properties and the strategy class's ``send_check``
    read through the instance: see _Core."""
    if core.engine.closed:
        return False
    if not core.send_unchecked:
        core.send_check(message)  # the type's check, or the held SNDMORE parts joined
    return core.strategy.try_send(message)


async def _connect(sock: AsyncSocket, endpoint: str, routing_id: bytes | None) -> None:
    await sock.connect(endpoint, routing_id=routing_id)


def _peers(sock: AsyncSocket) -> list[PeerInfo]:
    return sock.peers


class Monitor:
    """The blocking twin of :class:`zmtp.Monitor`: ``for event in sock.monitor(): ...``."""

    def __init__(self, shared: SharedLoop, monitor: AsyncMonitor) -> None:
        self._shared = shared
        self._monitor = monitor

    def recv(self, timeout: float | None = None) -> MonitorEvent | None:
        """The next event (None once the socket closed); TimeoutError after ``timeout``."""
        event: MonitorEvent | None = self._shared.run(_receive, self._monitor, timeout)
        return event

    def wait_for(
        self,
        kind: type[MonitorEvent] | tuple[type[MonitorEvent], ...],
        timeout: float | None = None,
    ) -> MonitorEvent:
        """Skip events until one of ``kind`` (EOFError if the socket closed first)."""
        event: MonitorEvent = self._shared.run(_wait_for, self._monitor, kind, timeout)
        return event

    def __iter__(self) -> Iterator[MonitorEvent]:
        while True:
            event = self.recv()
            if event is None:
                return
            yield event

    def close(self) -> None:
        self._shared.run(self._monitor.close)

    def __enter__(self) -> Monitor:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


async def _receive(monitor: AsyncMonitor, timeout: float | None) -> MonitorEvent | None:
    with anyio.move_on_after(math.inf if timeout is None else timeout):
        return await monitor.receive()
    raise TimedOut(f"no monitor event within {timeout:g} s")


async def _wait_for(
    monitor: AsyncMonitor,
    kind: type[MonitorEvent] | tuple[type[MonitorEvent], ...],
    timeout: float | None,
) -> MonitorEvent:
    with anyio.move_on_after(math.inf if timeout is None else timeout):
        return await monitor.wait_for(kind)
    raise TimedOut(f"no {kind} monitor event within {timeout:g} s")


for _name in sorted(OPTION_NAMES):
    if not hasattr(Socket, _name):
        setattr(Socket, _name, option_attribute(_name))
del _name
install_pyzmq_hints(Socket)

__all__ = [
    "EXIT_LINGER",
    "GRACE",
    "OPTION",
    "POLLIN",
    "POLLOUT",
    "RECV_BATCH",
    "SEND_BUFFER",
    "Context",
    "Monitor",
    "Poller",
    "Socket",
    "proxy",
    "steerable_proxy",
]
