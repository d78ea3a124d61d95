"""The public socket: bind/connect endpoints, send/recv messages, monitor, close.

:class:`Socket` is the application's face over the socket's engine core
(:class:`zmtp.engine.core.SocketCore`), which owns the endpoints, connections, pipes, routing
strategy, monitors and the close sequence (docs/architecture.md). What stays here is what the
application calls: the send/recv paths with their waiting and timeouts, and the socket-type
methods, thin wrappers over the routing strategy.

Fast paths: ``send`` queues into a pipe without suspending when there is room, and ``recv``
returns a waiting message without suspending. Both still honour cancellation
(``checkpoint_if_cancelled``) and yield to the scheduler every few hundred calls, so a busy
loop can neither miss a cancel nor starve the connection tasks.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator, Callable, Iterable, Iterator
from enum import Enum
from types import TracebackType
from typing import TYPE_CHECKING, Any

import anyio
from anyio.lowlevel import checkpoint, checkpoint_if_cancelled

from .cancel_check import CancelCheck, backend_cancel_check
from .engine.core import SocketCore
from .engine.queue import Message, Received
from .errors import CLOSED, NEVER_OPENED, BindError, SocketClosed, TimedOut, ZMTPError
from .extension import SocketExtension
from .group_exit import leave_task_group
from .monitor import Monitor, PeerInfo
from .options import OPTION_NAMES, Options, get_option, option_attribute, set_option
from .protocol.errors import InvalidArgument, UsageError, WrongType
from .protocol.sockettypes import SocketType
from .pyzmq_hints import (
    SNDMORE,
    check_recv_flags,
    check_send_flags,
    install_pyzmq_hints,
    libzmq_socket_type,
)
from .serialize import AsyncSerializers
from .socket_types_api import SocketTypeMethods
from .timeouts import call_timeout

if TYPE_CHECKING:  # only the type: the authenticator module imports the CURVE crypto
    from anyio.abc import TaskGroup

    from .auth.authenticator import AuthHandler

#: Fast-path sends of one socket between two scheduler yields of its thread (_SendCadence).
_YIELD_EVERY = 256
#: The fast path checks for a pending cancel once every 16 calls: ``checkpoint_if_cancelled``
#: costs ~0.6-1 us on asyncio, as much as the whole rest of a send (the backend's own, which
#: the socket awaits, ~0.55 us; anyio's look-up of the backend was the rest: see
#: zmtp/cancel_check.py). A cancel is therefore seen within 16 messages, and no message is
#: ever lost to it (see docs/performance.md).
_CANCEL_CHECK_MASK = 15
#: ``recv``'s own cadence, wider than ``send``'s: from a non-empty inbox a receive costs
#: ~0.3 us, and at send's cadence the cancel check and the yield (a whole event-loop pass) cost
#: the receiver ~25 % of its time per 64 B message (docs/performance.md, optimisation log).
#: A cancel is seen within 64 receives; 1024 receives are well under a millisecond between
#: two passes, and a receiver whose inbox runs empty yields anyway. ``send`` keeps 16/256: a
#: PUB that never blocks must let its writers run before small send HWMs drop messages.
#:
#: The count is a shared tuple's iterator (``_RECV_TICKS``): ``next(ticks, True)`` is False 63
#: times, then True (exhausted), which costs one C call per receive and no int object; a
#: Python counter (an add, a store, a mask and a compare, and an int allocated past 256) was
#: ~10 % of a 64 B receive's instructions (docs/performance.md, optimisation log).
_RECV_CHECKS_PER_YIELD = 16
_RECV_TICKS: tuple[bool, ...] = (False,) * 63
#: The same cadence for a socket whose strategy hands out receive runs (``_run_budget``):
#: messages between two cancel checks (the first check comes after 63, as with the ticks).
_RECV_RUN_BUDGET = 64
#: ``_held`` when what the next recv owes is an error (see Socket.readable), not a message.
_HELD_ERROR: Message = []


class _SendCadence(threading.local):
    """How many send-side scheduler yields this thread has taken: a yield by any socket
    restarts every socket's count towards its own next yield.

    Why: the yield is there so that the connections' writers get a pass, and they all run when
    the *thread's* event loop runs, whichever socket yielded. With counts that knew nothing of
    each other, N sockets sending in turn from one thread each reached 256 at about the same
    time and yielded N times in a row: the first pass let every writer write what was queued,
    the N - 1 others found next to nothing to do and cost a whole loop pass each. Here a socket
    looks at the thread's count at each of its cancel checks (every 16 of its own sends, so
    nothing is added per send): if a yield was taken since its last check, its own count
    starts again from there. One socket alone yields every 256 sends as it always did; N
    sockets in turn yield once per 256 sends of each, and each writer still finds ~256
    messages per pass (a count for the whole thread, a yield every 256 of *all* its sends, cut
    the writers' batches N-fold: more writes and more CPU per message). A task still yields
    within 256 sends of any one of its sockets, as before (fairness). A blocked send counts as
    a yield too: the writers ran while it waited. One event loop runs on a thread at a time,
    so the thread is the loop.

    The yield is itself a cancel check (``checkpoint``), taken before the message is queued,
    so a cancel there loses nothing; it replaces the check plus the shielded yield after the
    queueing of before (a ``CancelScope`` per yield, ~45,000 instructions on asyncio).
    """

    def __init__(self) -> None:
        self.yields = 0


_send_cadence = _SendCadence()


class _GroupTask:
    """asyncio only: a task of the socket's own that enters its task group and holds it until
    the socket's ``async with`` ends, so that the task that entered the socket holds no cancel
    scope of the socket's.

    Why: anyio's asyncio ``checkpoint_if_cancelled`` (the send and receive fast paths' periodic
    cancel check) walks every cancel scope of the task up to the first shielded one, and a
    task group entered by ``async with socket`` is one more scope in the application's task:
    50 sockets entered in one task made every check walk 50 scopes, ~40 % of the sender's
    instructions (docs/performance.md, optimisation log). Trio's check reads one attribute
    whatever the depth, so there the socket enters its group in the application's task as
    before.

    What stays as it was: the socket's tasks end before its ``async with`` does (``close``
    stops and waits for every one of them, then this task leaves the group and the exit waits
    for that, shielded: nothing is left to wait for); an error out of one of them (they catch
    their own, so only a bug) ends the group, closes the socket (a blocked ``send`` or
    ``recv`` raises ``SocketClosed``) and is raised by the socket's ``async with``, as its own
    group raised it. What differs: a cancel scope of the application around the ``async with``
    no longer cancels the socket's tasks directly, only the body; leaving the body then closes
    the socket with linger 0, which stops them (a shielded part of the body keeps a working
    socket meanwhile).
    """

    __slots__ = ("_leave", "_left", "_task", "error", "group")

    def __init__(self) -> None:
        self.group: TaskGroup | None = None
        self.error: BaseException | None = None
        # Bare asyncio futures, not anyio events: this runs on asyncio only, and each anyio
        # event cost more objects and a shielded scope per wait. Even so a socket's enter and
        # exit take three loop passes more than with its group in the entering task (the
        # price, at set-up only: docs/performance.md, optimisation log).
        loop = asyncio.get_running_loop()
        self._leave: asyncio.Future[None] = loop.create_future()
        self._left: asyncio.Future[None] = loop.create_future()
        self._task: asyncio.Task[None] | None = None  # held: the loop keeps only weak refs

    @classmethod
    async def start(cls, core: SocketCore) -> _GroupTask | None:
        """The running group task, or None outside an asyncio task (trio, or an asyncio
        callback), where the caller enters a task group itself."""
        try:
            if asyncio.current_task() is None:
                return None
        except RuntimeError:  # no asyncio loop in this thread: trio
            return None
        host = cls()
        ready = asyncio.get_running_loop().create_future()
        host._task = asyncio.get_running_loop().create_task(host._run(core, ready))
        try:
            await ready  # one loop pass: _run enters the group at its first step
        except BaseException:
            _settle(host._leave)  # cancelled meanwhile: the group, empty, ends by itself
            raise
        if host.group is None:  # entering a task group failed (it does not)
            raise RuntimeError("the socket's task group could not be entered") from host.error
        return host

    async def _run(self, core: SocketCore, ready: asyncio.Future[None]) -> None:
        try:
            async with anyio.create_task_group() as group:
                self.group = group
                _settle(ready)
                await self._leave
        except BaseException as error:  # a socket task's, raised by the group's exit
            self.error = error
            if isinstance(error, Exception):  # not the loop's shutdown cancelling us
                with anyio.CancelScope(shield=True):
                    await core.close(0)
        finally:
            _settle(ready)
            _settle(self._left)

    async def leave(self) -> BaseException | None:
        """End the group (every task of the socket has ended: after ``close``) and wait until
        it has; the error a task raised, if any."""
        _settle(self._leave)
        with anyio.CancelScope(shield=True):  # bounded: the group has no task left
            await self._left
        return self.error


def _settle(future: asyncio.Future[None]) -> None:
    """Resolve ``future`` unless it is done already (or was cancelled with its waiter)."""
    if not future.done():
        future.set_result(None)


class _Unset(Enum):
    """Sentinel type: "use the socket's option"."""

    UNSET = 0


_UNSET = _Unset.UNSET


def as_message(parts: Iterable[Any]) -> Message:
    """A fresh list of ``bytes`` (bytes-like and str are converted; str as UTF-8): what every
    send of the async and the blocking API makes of the application's parts."""
    message = [*parts]
    for part in message:  # the common case first: all bytes, nothing to convert
        if type(part) is not bytes:
            break
    else:
        if not message:
            raise InvalidArgument("a message needs at least one part")
        return message
    for i, part in enumerate(message):
        if type(part) is not bytes:
            if isinstance(part, str):
                message[i] = part.encode("utf-8")
            elif isinstance(part, (bytearray, memoryview)):
                message[i] = bytes(part)
            else:
                raise WrongType(f"message parts must be bytes, not {type(part).__name__}")
    return message


class Socket(SocketTypeMethods, AsyncSerializers):
    """A ZeroMQ socket speaking ZMTP 3.1.

    ``Socket(zmtp.PUSH, send_hwm=100)``; options are the fields of :class:`~zmtp.Options`.
    Use it as ``async with Socket(...) as sock:`` so that its connections have a task group
    to run in; leaving the block closes it (honouring ``linger``).
    """

    # No instance __dict__: assigning an attribute a socket does not have raises instead of
    # passing silently (pyzmq's ``sock.linger = 0``; option names answer with a hint, see
    # option_attribute). Slots cost nothing per message, unlike a __setattr__ hook.
    __slots__ = (
        "__weakref__",
        "_cancel_check",
        "_core",
        "_entered",
        "_group_task",
        "_held",
        "_held_error",
        "_more",
        "_ops",
        "_recv_ticks",
        "_run_budget",
        "_runs",
        "_seen_yields",
        "_send_check",
        "_send_unchecked",
        "_sends",
        "_strategy",
        "last_endpoint",
        "options",
        "socket_type",
    )

    def __init__(self, socket_type: SocketType | str, **options: Any) -> None:
        try:
            self.socket_type = SocketType(str(socket_type).upper()).value
        except ValueError:
            # pyzmq's constant (zmq.PUSH is libzmq's number 8) left in ported code
            kind = libzmq_socket_type(socket_type)
            if kind is None:
                raise InvalidArgument(f"unknown socket type {socket_type!r}") from None
            self.socket_type = kind
        self.options = Options.from_kwargs(options)
        self._core = core = SocketCore(self.socket_type, self.options)
        #: The routing strategy, kept here too for the send/recv fast paths.
        self._strategy = core.strategy
        #: Whether the type's sends skip ``check_send`` (``RoutingStrategy.send_check``, a
        #: class attribute) as a slot: every send path (send, send_multipart, send_prepared,
        #: try_send_prepared, try_send_part) reads it per message, and CPython 3.11
        #: specialises a slot's read, not a class attribute's through an instance.
        self._send_unchecked = not core.strategy.send_check
        #: What those paths call when ``_send_unchecked`` is False: the type's
        #: ``check_send``, or, while pyzmq ``SNDMORE`` parts are held, :meth:`_join_held`,
        #: which puts them in front of the message (then ``_send_unchecked`` is False
        #: whatever the type, so the plain paths pay nothing for SNDMORE: see _hold).
        self._send_check: Callable[[Message], None] = core.strategy.check_send
        #: Parts sent with pyzmq's ``SNDMORE``, held for the next send without it.
        self._more: Message | None = None
        #: The send and recv cadences' cancel check: anyio's until the socket is entered,
        #: then the running backend's own, looked up once (zmtp/cancel_check.py).
        self._cancel_check: CancelCheck = checkpoint_if_cancelled
        self._entered = False
        #: The task that holds the socket's task group on asyncio (_GroupTask), if any.
        self._group_task: _GroupTask | None = None
        #: The recv cadence: the receive calls left before the next cancel check (an iterator
        #: of _RECV_TICKS), and the cancel checks since the last receive-side yield.
        self._recv_ticks: Iterator[bool] = iter(_RECV_TICKS)
        self._ops = 0
        #: Whether receives take the strategy's receive runs (``RoutingStrategy.recv_runs``:
        #: plain PULL, SUB, XSUB; not under an extension, whose hooks see each receive), and
        #: the messages they may still hand out before the next cancel check (the cadence
        #: above, counted in messages: a run's messages are handed out without a tick each).
        self._runs = core.strategy.recv_runs
        self._run_budget = _RECV_RUN_BUDGET - 1
        #: Fast-path sends since this socket's count last started (the send cadence), and
        #: the thread's yield count then (_SendCadence).
        self._sends = 0
        self._seen_yields = 0
        #: A multipart message ``recv()`` refused; handed out by the next receive call.
        #: A message set aside by readable() or a refused recv(); bare for a
        #: ``bare_single_part`` type (see zmtp.engine.queue.Received), as try_recv gave it.
        self._held: Received | None = None
        #: What the next recv raises when ``_held`` is ``_HELD_ERROR`` (see readable()).
        self._held_error: BaseException | None = None
        self.last_endpoint = ""

    def __repr__(self) -> str:
        state = "closed" if self._core.closed else "open"
        return f"<zmtp.Socket {self.socket_type} {state}>"

    @property
    def engine(self) -> SocketCore:
        """The engine core under this socket (docs/architecture.md, "Contracts"): for
        extensions and the layers built on the socket (the blocking API, QoS), which use its
        public methods (``emit``, ``wake_senders``, ``wake_receivers``...)."""
        return self._core

    @property
    def extension(self) -> SocketExtension | None:
        """The installed :class:`~zmtp.extension.SocketExtension`, if any."""
        return self._core.extension

    def set(self, name: str, value: Any) -> None:
        """Change an option after construction, with the constructor's checks and errors.

        ``send_timeout``, ``recv_timeout``, ``linger`` and ``connect_routing_id`` apply from
        the next call; the socket type's options are fixed at construction (refused here);
        every other option applies to connections made afterwards, as in libzmq
        (docs/options.md).
        """
        set_option(self.options, name, value)

    def get(self, name: str) -> Any:
        """An option's current value (``sock.get("linger")``)."""
        return get_option(self.options, name)

    # ------------------------------------------------------------------ lifecycle

    async def __aenter__(self) -> Socket:
        if self._entered:
            raise UsageError("a socket can be entered only once")
        self._entered = True
        self._cancel_check = backend_cancel_check()
        host = await _GroupTask.start(self._core)
        if host is not None:  # asyncio: the group in a task of its own (see _GroupTask)
            self._group_task = host
            self._core.task_group = host.group
            return self
        tg = anyio.create_task_group()
        await tg.__aenter__()
        self._core.task_group = tg
        return self

    def open_in(self, task_group: TaskGroup) -> None:
        """Open the socket without ``async with``: its connection tasks run in ``task_group``,
        which the caller has entered and leaves only after ``await close()`` (close stops and
        waits for every task of the socket; leaving the group only joins them).

        For :class:`zmtp.Context`, which opens all its sockets in one group: one task group,
        hence one cancel scope in the caller's task, for all of them (a socket's own ``async
        with`` adds none on asyncio, see _GroupTask).
        """
        if self._entered:
            raise UsageError("a socket can be entered only once")
        self._entered = True
        self._cancel_check = backend_cancel_check()
        self._core.task_group = task_group

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
            core = self._core
            tg, core.task_group = core.task_group, None
            host, self._group_task = self._group_task, None
            if host is not None:
                error = await host.leave()
                if isinstance(error, Exception):
                    raise error  # the group's, as the socket's own group raised it
                tg = None
                if exc_type is not None and not isinstance(exc, Exception):
                    # A group entered only to be left: a cancellation leaves as it did
                    # through the socket's own group (an exception leaves as itself).
                    tg = anyio.create_task_group()
                    await tg.__aenter__()
            if tg is not None:
                # Every task was stopped by close(); this only joins them. Never cancel the
                # group's own scope: it also covers the body of the user's `async with`.
                await leave_task_group(tg, exc_type, exc, tb)
        return None

    @property
    def closed(self) -> bool:
        return self._core.closed

    @property
    def unsent_at_close(self) -> int:
        """How many queued messages ``close()`` dropped: still waiting for a peer when the
        ``linger`` time ended (0 before the socket is closed). pyzmq cannot tell; a tool
        that must not report success for messages that never left (``zmtp cat``) reads it."""
        return self._core.unsent_at_close

    async def close(self, linger: float | _Unset | None = _UNSET) -> None:
        """Close the socket: stop listening, flush queued messages for up to ``linger``
        seconds (the ``linger`` option by default; None waits until everything is written),
        then drop every connection and wait until they are all torn down."""
        await self._core.close(self.options.linger if isinstance(linger, _Unset) else linger)

    # ------------------------------------------------------------------ endpoints

    async def bind(self, endpoint: str) -> str:
        """Listen on ``endpoint``; returns the resolved endpoint (e.g. the real port)."""
        try:
            resolved = await self._core.endpoints.bind(endpoint)
        except OSError as exc:
            if isinstance(exc, ZMTPError):
                raise
            # The system's error does not say which of a program's binds failed.
            reason = exc.strerror or str(exc)
            raise BindError(exc.errno, f"cannot bind {endpoint}: {reason}") from exc
        self.last_endpoint = resolved
        return resolved

    async def unbind(self, endpoint: str) -> None:
        """Stop listening on ``endpoint`` (as returned by bind) and close its connections.

        Returns once the listener is closed (the port or path is free again) and its
        connections are torn down.
        """
        await self._core.endpoints.unbind(endpoint)

    async def connect(self, endpoint: str, *, routing_id: bytes | None = None) -> None:
        """Connect to ``endpoint``, reconnecting whenever the connection is lost.

        Returns at once; the connection is made in the background (watch the monitor for
        ``HandshakeSucceeded``). Messages sent before it is up are queued, unless ``immediate``.

        ROUTER only: ``routing_id`` is the id this peer gets (``ZMQ_CONNECT_ROUTING_ID``), so
        it can be addressed at once; without it the ``connect_routing_id`` option applies.
        """
        await self._core.endpoints.connect(endpoint, routing_id)

    async def disconnect(self, endpoint: str) -> None:
        """Stop connecting to ``endpoint`` and drop its connection and queued messages."""
        await self._core.endpoints.disconnect(endpoint)

    # ------------------------------------------------------------------ monitor, extension

    def monitor(self) -> Monitor:
        """A new monitor: an async iterator of this socket's events from now until it closes."""
        return self._core.monitor()

    def install_extension(self, extension: SocketExtension) -> None:
        """Install the socket's extension (once, before the first bind/connect)."""
        self._core.install_extension(extension)
        self._runs = False  # an extension's receive hooks see every message: no runs

    @property
    def authenticator(self) -> AuthHandler | None:
        """The in-process authenticator this socket consults as a server (docs/security.md).

        PLAIN and CURVE servers ask it about every client; a NULL socket with an authenticator
        asks it too (by address). Without one, a ZAP handler bound at
        ``inproc://zeromq.zap.01`` decides, else libzmq's defaults apply (CURVE: any key; PLAIN:
        refused). Applies to connections made after it is set.
        """
        return self._core.authenticator

    @authenticator.setter
    def authenticator(self, handler: AuthHandler | None) -> None:
        if handler is not None and not callable(getattr(handler, "authenticate", None)):
            raise WrongType("an authenticator needs an async authenticate(request) method")
        self._core.authenticator = handler

    def wake_senders(self) -> None:
        """Re-try blocked sends (an extension calls this when its send gate opens)."""
        self._core.wake_senders()

    def wake_readers(self) -> None:
        """Let connections read again (an extension calls this when its ``can_receive``
        gate opens)."""
        self._core.wake_readers()

    @property
    def peers(self) -> list[PeerInfo]:
        """Every peer with a live connection."""
        return self._core.peers

    # ------------------------------------------------------------------ send / recv

    async def send(
        self,
        data: bytes | bytearray | memoryview | str,
        flags: int | None = None,
        copy: bool = True,
        track: bool = False,
    ) -> None:
        """Send a single-part message (see :meth:`send_multipart`).

        ``flags``, ``copy`` and ``track`` are pyzmq's, for ported code (docs/from-pyzmq.md):
        ``zmtp.NOBLOCK`` raises TimedOut at once where the send would wait, ``zmtp.SNDMORE``
        holds the part for the next send without it (one message of all the parts).
        ``copy`` and ``track`` change nothing: zmtp never borrows the caller's buffer, and
        returns no message tracker (only ``flags`` is looked at, and only when given: a
        test per send, nothing more).
        """
        if flags is not None:  # pyzmq's flags: looked at only when given
            await self._send_flagged([data] if type(data) is bytes else as_message((data,)), flags)
            return
        # Fast path spelled out on purpose, three times: here, in send_multipart and in
        # send_prepared (keep the three in step). A shared helper would cost every message one
        # more coroutine call and frame, which is measurable at ~1 M msgs/s
        # (docs/performance.md, optimisation log: "send/recv fast paths"). The cadence: a cancel
        # check every 16 sends, a yield instead after 256 sends since the thread's last yield
        # (_SendCadence).
        if self._core.closing:
            raise SocketClosed(CLOSED)
        message = [data] if type(data) is bytes else as_message((data,))
        strategy = self._strategy
        if not self._send_unchecked:  # a slot, not the class attribute (see __init__)
            self._send_check(message)
        sends = self._sends = self._sends + 1
        if not sends & _CANCEL_CHECK_MASK:
            cadence = _send_cadence
            if self._seen_yields != cadence.yields:  # the thread yielded: start again
                self._seen_yields = cadence.yields
                self._sends = 0
                await self._cancel_check()
            elif sends >= _YIELD_EVERY:
                self._sends = 0
                self._seen_yields = cadence.yields = cadence.yields + 1
                await checkpoint()  # yield; not queued yet, so a cancel here loses nothing
            else:
                await self._cancel_check()
        if strategy.try_send(message):
            return
        await self._send_blocking(message)

    async def send_multipart(
        self, parts: Iterable[Any], flags: int | None = None, copy: bool = True, track: bool = False
    ) -> None:
        """Send a message of one or more parts, atomically.

        Blocks while the socket type has no peer with room (the HWM); raises TimeoutError after
        ``send_timeout``. If cancelled, the message was either queued whole or not at all.
        ``flags``, ``copy`` and ``track`` are pyzmq's, as for :meth:`send`.
        """
        if flags is not None:  # pyzmq's flags: looked at only when given
            await self._send_flagged(as_message(parts), flags)
            return
        # The fast path below is spelled out again in send and send_prepared, on purpose: one
        # coroutine call per message less (see send's comment); a change here goes there too.
        if self._core.closing:
            raise SocketClosed(CLOSED)
        # as_message inlined for its common case (every part bytes): a function call and an
        # enumerate were a sixth of a 2-part send's instructions (docs/performance.md).
        message = [*parts]
        for part in message:
            if type(part) is not bytes:
                message = as_message(message)
                break
        else:
            if not message:
                raise InvalidArgument("a message needs at least one part")
        strategy = self._strategy
        if not self._send_unchecked:  # a slot, not the class attribute (see __init__)
            self._send_check(message)
        sends = self._sends = self._sends + 1
        if not sends & _CANCEL_CHECK_MASK:
            cadence = _send_cadence
            if self._seen_yields != cadence.yields:  # the thread yielded: start again
                self._seen_yields = cadence.yields
                self._sends = 0
                await self._cancel_check()
            elif sends >= _YIELD_EVERY:
                self._sends = 0
                self._seen_yields = cadence.yields = cadence.yields + 1
                await checkpoint()  # yield; not queued yet, so a cancel here loses nothing
            else:
                await self._cancel_check()
        if strategy.try_send(message):
            return
        await self._send_blocking(message)

    async def send_prepared(self, message: Message) -> None:
        """Send ``message``, a fresh list of ``bytes`` the caller will not touch again, as is.

        Extension point: unlike :meth:`send_multipart` the list is not copied, so the very
        object reaches the extension's ``before_send`` and an extension layer (QoS receipts)
        can tell its messages apart even when two are byte-identical.
        """
        if self._core.closing:
            raise SocketClosed(CLOSED)
        if len(message) == 1:
            if type(message[0]) is not bytes:
                raise WrongType("send_prepared takes a non-empty list of bytes")
        elif not message or any(type(part) is not bytes for part in message):
            raise WrongType("send_prepared takes a non-empty list of bytes")
        strategy = self._strategy
        if not self._send_unchecked:  # a slot, not the class attribute (see __init__)
            self._send_check(message)
        # The fast path of send and send_multipart, spelled out a third time on purpose (one
        # coroutine call per message less, see send's comment; keep the three in step).
        # The same cadence as send_multipart: a cancel is seen within 16 calls (before the
        # message is queued, so it is either queued whole or not at all), and the scheduler
        # gets a pass every 256 (counted from the thread's last yield, _SendCadence).
        # Yielding after every message made the connection's writer write one message per
        # syscall (docs/performance.md, optimisation log).
        sends = self._sends = self._sends + 1
        if not sends & _CANCEL_CHECK_MASK:
            cadence = _send_cadence
            if self._seen_yields != cadence.yields:  # the thread yielded: start again
                self._seen_yields = cadence.yields
                self._sends = 0
                await self._cancel_check()
            elif sends >= _YIELD_EVERY:
                self._sends = 0
                self._seen_yields = cadence.yields = cadence.yields + 1
                await checkpoint()  # yield; not queued yet, so a cancel here loses nothing
            else:
                await self._cancel_check()
        if strategy.try_send(message):
            return
        await self._send_blocking(message)

    def try_send_prepared(self, message: Message) -> bool:
        """Queue ``message`` (as :meth:`send_prepared` takes it) now if that needs no wait:
        True if queued; False if nothing was done, and the caller awaits
        :meth:`send_prepared` instead.

        Extension point: a layer whose own ``send`` is a coroutine (QoS receipts) calls this
        first and so awaits no second coroutine per message. It declines, rather than skips,
        whatever :meth:`send_prepared` does beyond queuing: a closing socket, a wrong type, a
        socket type's send check, the cancel check every 16 sends (where the thread's
        scheduler pass is taken too, see _SendCadence; the same call count, so the cadence is
        unchanged), and no peer with room.
        """
        sends = self._sends + 1
        if not sends & _CANCEL_CHECK_MASK or self._core.closing:
            return False
        if len(message) != 1 or type(message[0]) is not bytes:
            return False
        strategy = self._strategy
        if not self._send_unchecked or not strategy.try_send(message):
            return False
        self._sends = sends
        return True

    def try_send_part(self, message: Message) -> bool:
        """:meth:`try_send_prepared` of a message the caller made itself as a one-element
        list of ``bytes`` (``[data]`` after its own ``type(data) is bytes``, or what
        ``as_message`` gives for one part), so the check of its shape is not made twice:
        the same declines otherwise (closing, the cancel cadence, a send check, no peer with
        room). Extension point: the QoS layer's tracked ``send`` calls it once per message.
        """
        sends = self._sends + 1
        if not sends & _CANCEL_CHECK_MASK or self._core.closing or not self._send_unchecked:
            return False
        if not self._strategy.try_send(message):
            return False
        self._sends = sends
        return True

    async def _send_flagged(self, message: Message, flags: int) -> None:
        """A send with pyzmq's ``flags`` given: ``SNDMORE`` holds ``message``'s parts
        (:meth:`_hold`); ``NOBLOCK`` routes the message now or raises TimedOut, zmtp's
        ``zmq.Again``, after one pass of the scheduler (a loop polling with NOBLOCK lets the
        connections run). Parts held before go in front, and go with the message: a send
        that raises drops them too (as pyzmq's Again leaves no part behind)."""
        check_send_flags(flags)
        if self._core.closing:
            raise SocketClosed(CLOSED)
        if flags & SNDMORE:
            self._hold(message)
            return
        if not flags:  # flags=0 spelled out: a plain send
            await self.send_multipart(message)
            return
        strategy = self._strategy
        if self._more is not None:
            self._join_held(message)
        elif strategy.send_check:
            strategy.check_send(message)
        if strategy.try_send(message):
            return
        if not self._entered:
            raise SocketClosed(NEVER_OPENED)
        await checkpoint()
        raise TimedOut(
            "send would block (NOBLOCK): no peer has room for the message now (none "
            "connected, or every one at send_hwm); retry later, or send without NOBLOCK "
            "(send_timeout bounds the wait)"
        )

    def _hold(self, parts: Message) -> None:
        """Hold ``parts`` (a pyzmq ``SNDMORE`` send) for the next send without SNDMORE.

        The type's send check runs now on what is held (a REQ out of turn, a draft type's
        second part are refused at once, as libzmq refuses them at that part). Holding
        sets ``_send_unchecked`` False and ``_send_check`` to :meth:`_join_held`: every plain
        send path already calls ``_send_check`` when ``_send_unchecked`` is False, so the
        held parts join the next message there, and a socket that never holds parts pays
        nothing for it (``try_send_prepared`` and ``try_send_part`` decline meanwhile, and
        their callers' ``send_prepared`` joins them)."""
        held = parts if self._more is None else self._more + parts
        strategy = self._strategy
        if strategy.send_check:
            strategy.check_send(held)
        self._more = held
        self._send_unchecked = False
        self._send_check = self._join_held

    def _join_held(self, message: Message) -> None:
        """Put the held ``SNDMORE`` parts in front of ``message`` (in place: a send path's
        list), run the type's send check on the whole, and end the holding."""
        held, self._more = self._more, None
        strategy = self._strategy
        self._send_check = strategy.check_send
        self._send_unchecked = not strategy.send_check
        if held is not None:
            message[:0] = held
        if strategy.send_check:
            strategy.check_send(message)

    async def _send_blocking(self, message: Message) -> None:
        """Wait for a peer with room, up to ``send_timeout``."""
        strategy = self._strategy
        core = self._core
        if not self._entered:
            raise SocketClosed(NEVER_OPENED)
        with call_timeout(self.options.send_timeout, "send"):
            while True:
                await core.send_wakeup().wait()
                _send_cadence.yields += 1  # the writers ran meanwhile (see _SendCadence)
                if core.closing:
                    raise SocketClosed(CLOSED)
                if strategy.try_send(message):
                    return

    async def recv(self, flags: int | None = None, copy: bool = True, track: bool = False) -> bytes:
        """Receive a message and return its only part (raises if it has several).

        ``flags``, ``copy`` and ``track`` are pyzmq's, for ported code (docs/from-pyzmq.md):
        ``zmtp.NOBLOCK`` raises TimedOut at once if no message is waiting. ``copy`` and
        ``track`` change nothing: the message is ``bytes`` either way, never a ``zmq.Frame``.
        """
        if flags is not None:  # pyzmq's flags: looked at only when given
            await self._recv_ready(flags)
        if self._runs:
            # The receive run (RoutingStrategy.recv_runs): while one peer alone has messages
            # waiting, the next of them in one C call (an inbox pop), without the fair
            # queue's Python call; _run_next starts the next run (and keeps the cadence),
            # and _recv_run does what needs an await.
            message = next(self._strategy.run, None)
            if message is None:
                message = self._run_next()
                if message is None:
                    message = await self._recv_run()
        else:
            if next(self._recv_ticks, True):
                await self._recv_checkpoint()
            message = self._held
            if message is not None:
                self._held = None
                if message is _HELD_ERROR:
                    raise self._take_held_error()
            else:
                message = self._strategy.try_recv()
                if message is None:
                    message = await self._recv_blocking()
        if isinstance(message, bytes):
            return message  # a one-part message queued bare (zmtp.engine.queue.Received)
        if len(message) != 1:
            self._held = message  # not lost: the next recv/recv_multipart returns it
            self._strategy.end_run()  # ... before the messages after it (still queued)
            raise InvalidArgument(
                f"received a {len(message)}-part message; use recv_multipart() for multipart"
            )
        return message[0]

    async def recv_multipart(
        self, flags: int | None = None, copy: bool = True, track: bool = False
    ) -> list[bytes]:
        """Receive the next message as a list of parts.

        Raises TimeoutError after ``recv_timeout``. A cancelled ``recv`` never loses a message.
        ``flags``, ``copy`` and ``track`` are pyzmq's, as for :meth:`recv`.
        """
        if flags is not None:  # pyzmq's flags: looked at only when given
            await self._recv_ready(flags)
        if self._runs:  # as in recv
            message = next(self._strategy.run, None)
            if message is None:
                message = self._run_next()
                if message is None:
                    message = await self._recv_run()
            return [message] if isinstance(message, bytes) else message
        if next(self._recv_ticks, True):
            await self._recv_checkpoint()
        message = self._held
        if message is not None:
            self._held = None
            if message is _HELD_ERROR:
                raise self._take_held_error()
            return [message] if isinstance(message, bytes) else message
        message = self._strategy.try_recv()
        if message is None:
            message = await self._recv_blocking()
        # A bare one-part message (zmtp.engine.queue.Received) gets its list only now.
        return [message] if isinstance(message, bytes) else message

    def _run_next(self) -> Received | None:
        """The next message and a new receive run (``RoutingStrategy.take_run``) when that
        needs no await: the cadence's step is not due, nothing is set aside and a message is
        waiting; else None, and :meth:`_recv_run` does it. A function, not a coroutine: with
        several peers sending, every receive comes here (a run is for one peer's messages)."""
        budget = self._run_budget
        if budget <= 0 or self._held is not None:
            return None
        strategy = self._strategy
        message = strategy.take_run(budget)
        if message is not None:
            self._run_budget = budget - 1 - strategy.run_length
        return message

    async def _recv_run(self) -> Received:
        """A receive that found the strategy's run empty (see ``recv``): the cadence's step
        when ``_run_budget`` messages were handed out since the last one (before anything
        is taken, as ``_recv_checkpoint``), then a message set aside, or the next message and
        a new run of at most the budget's rest (``RoutingStrategy.take_run``), or a wait.

        Cancel-safe: the only awaits come before a message is taken, and a run's messages
        stay in their inbox until handed out."""
        budget = self._run_budget
        if budget <= 0:
            await self._recv_checkpoint()
            budget = _RECV_RUN_BUDGET
        strategy = self._strategy
        message = self._held
        if message is not None:
            self._held = None
            self._run_budget = budget - 1
            if message is _HELD_ERROR:
                raise self._take_held_error()
            return message
        message = strategy.take_run(budget)
        if message is None:
            self._run_budget = budget
            message = await self._recv_blocking()
            self._run_budget -= 1
            return message
        self._run_budget = budget - 1 - strategy.run_length
        return message

    async def _recv_ready(self, flags: int) -> None:
        """A receive with pyzmq's ``flags`` given: with ``NOBLOCK``, return once a
        message is set aside for the receive that called this (which then returns it at
        once), or raise what that receive would raise now, or TimedOut (zmtp's
        ``zmq.Again``) if nothing is waiting, after one scheduler pass (a loop polling with
        NOBLOCK lets the connections run)."""
        check_recv_flags(flags)
        if not flags or self.readable():
            return
        if self._core.closed:
            raise SocketClosed(CLOSED)
        if not self._entered:
            raise SocketClosed(NEVER_OPENED)
        strategy = self._strategy
        strategy.check_recv()
        message = strategy.try_recv()  # raises the type's refusal (a REQ with no request out)
        if message is not None:
            self._held = message
            return
        await checkpoint()
        if not self.readable():
            raise TimedOut(
                "recv would block (NOBLOCK): no message is waiting; retry later, or receive "
                "without NOBLOCK (recv_timeout bounds the wait)"
            )

    async def _recv_checkpoint(self) -> None:
        """The recv cadence's rare step, every 64th receive call, before it takes anything:
        a cancel check, and every 16th time instead a yield to the scheduler, which is itself
        a cancel check (anyio's ``checkpoint``). Nothing is popped yet, so a cancel here loses
        no message, and the yield needs no shielded scope (before, it came after the pop,
        inside a ``CancelScope(shield=True)``: ~45,000 instructions on asyncio)."""
        self._recv_ticks = iter(_RECV_TICKS)
        checks = self._ops = self._ops + 1
        if checks >= _RECV_CHECKS_PER_YIELD:
            self._ops = 0
            await checkpoint()
        else:
            await self._cancel_check()

    async def _recv_blocking(self, timed: bool = False) -> Received:
        """Wait for a message, up to ``recv_timeout``: by a lent read of the only peer's
        connection where possible (see SocketCore.lent_read), else for a wake-up.

        With a ``recv_timeout`` it runs itself again (``timed``) inside the timeout's scope;
        without one (the default) the loop runs at once: the scope's no-op context manager
        (``call_timeout(None)``'s ``nullcontext``, two Python calls more) is not entered on a
        round trip's critical path. No ``TimeoutError`` can come from inside the loop without
        the scope: a caller's own timeout raises at the caller's scope, outside this call."""
        strategy = self._strategy
        if not timed:
            timeout = self.options.recv_timeout
            if timeout is not None:
                try:
                    with call_timeout(timeout, "recv"):
                        return await self._recv_blocking(True)
                except TimeoutError:
                    strategy.recv_timed_out()  # e.g. a REQ abandons its request
                    raise
        core = self._core
        if core.closed:
            raise SocketClosed(CLOSED)
        if not self._entered:
            raise SocketClosed(NEVER_OPENED)
        strategy.check_recv()
        while True:
            lender = core.lender()
            if lender is not None:
                await core.lent_read(lender)
            else:
                await core.recv_wakeup().wait()
            message = self._held
            if message is not None:
                # readable() in another task (a Poller, a proxy's caller) set the message
                # aside while this recv waited; it is this recv's now.
                self._held = None
                if message is _HELD_ERROR:
                    raise self._take_held_error()
                return message
            message = strategy.try_recv()
            if message is not None:
                return message
            if core.closed:
                raise SocketClosed(CLOSED)

    def readable(self) -> bool:
        """True if a message is waiting: the next ``recv``/``recv_multipart`` returns at once.

        Consumes nothing (for ``Poller`` and the blocking API): a waiting message is set aside
        and handed out, unchanged, by the next receive call, or by a receive that was already
        waiting in another task (it is woken for it).
        """
        if self._held is not None:
            return True
        if self._core.closed:
            return False
        try:
            message = self._strategy.try_recv()
        except ZMTPError:
            return False  # this type cannot receive now (PUSH, a REQ with no request out)
        except Exception as error:
            # What the next recv raises (an extension failed REQ's request, e.g. QoS NACK,
            # through Req.fail_request): readable, and kept for that recv.
            self._held, self._held_error = _HELD_ERROR, error
            self._core.wake_receivers()  # a recv blocked in another task owes it now
            return True
        if message is None:
            return False
        self._held = message
        # A recv blocked in another task would otherwise wait for the next message and leave
        # this one set aside (it looks at _held only when it starts): wake it to take it.
        self._core.wake_receivers()
        return True

    def _take_held_error(self) -> BaseException:
        error, self._held_error = self._held_error, None
        assert error is not None
        return error

    async def wait_readable(self) -> None:
        """Wait until :meth:`readable` (a message is waiting), consuming nothing (``Poller``).

        Raises SocketClosed if the socket closes first.
        """
        core = self._core
        while not self.readable():
            if core.closed:
                raise SocketClosed(CLOSED)
            if not self._entered:
                raise SocketClosed(NEVER_OPENED)
            await core.recv_wakeup().wait()

    def __aiter__(self) -> AsyncIterator[list[bytes]]:
        return self._iterate()

    async def _iterate(self) -> AsyncIterator[list[bytes]]:
        """``async for message in socket``: messages until the socket closes."""
        while True:
            try:
                yield await self.recv_multipart()
            except SocketClosed:
                return


for _name in sorted(OPTION_NAMES):
    if not hasattr(Socket, _name):
        setattr(Socket, _name, option_attribute(_name))
del _name
install_pyzmq_hints(Socket)
