"""The engine core of one socket: its pipes, routing strategy, extension, monitors and close.

:class:`zmtp.Socket` is the application's face; this is what runs underneath it. The core
owns the socket's task group (lent by ``Socket.__aenter__``), its endpoints (listeners and
dialers, :mod:`zmtp.engine.endpoints`), every :class:`~zmtp.engine.pipe.Pipe`, the routing
strategy, the extension, the monitors, the wake-ups of tasks blocked in ``send``/``recv``, and
the close sequence with its linger.

Who may call what (docs/architecture.md, "Contracts"):

* connections and transports (``stream.py``, ``inproc.py``, ``udp.py``) are typed against
  :class:`~zmtp.engine.contract.ConnectionHost`;
* routing strategies against :class:`~zmtp.routing.base.RoutingHost`;
* the public socket, the blocking API and extensions use the public methods below
  (``emit``, ``wake_senders``, ``wake_receivers``, ``send_wakeup``, ``recv_wakeup``,
  ``lender``/``lent_read``, ``close``...), reached as ``Socket.engine``.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any

import anyio
from anyio.abc import TaskGroup

from ..auth.factory import make_mechanism
from ..errors import CLOSED, NEVER_OPENED, SocketClosed
from ..monitor import Closed, Monitor, MonitorEvent, MonitorStopped, PeerInfo
from ..options import Options, hwm_capacity
from ..protocol.errors import UsageError
from ..protocol.frames import Command, expand_runs
from ..protocol.mechanism import Mechanism
from ..routing import STRATEGIES, RoutingStrategy
from . import inproc
from .endpoints import Endpoints
from .pipe import Pipe
from .queue import Message, MessageQueue, Received

if TYPE_CHECKING:
    from ..auth.authenticator import AuthHandler
    from ..extension import SocketExtension
    from .stream import StreamConnection


logger = logging.getLogger("zmtp")

#: A lingering close logs a warning after this many seconds (see ``close``).
LINGER_WARNING_AFTER = 3.0


class SocketCore:
    """The session half of a socket (see the module docstring).

    Plain attributes are read by connections and strategies on hot paths; only the core
    writes them.
    """

    def __init__(self, socket_type: str, options: Options) -> None:
        strategy_cls = STRATEGIES.get(socket_type)
        if strategy_cls is None:
            raise NotImplementedError(f"{socket_type} sockets are not implemented yet")
        self.socket_type = socket_type
        self.options = options
        self.extension: SocketExtension | None = None
        self.authenticator: AuthHandler | None = None
        #: The task group the socket's endpoints and connections run in (None outside
        #: ``async with``).
        self.task_group: TaskGroup | None = None
        #: ``close()`` has begun (no new sends, endpoints or links) / has finished.
        self.closing = False
        self.closed = False
        #: Messages still queued for a peer when ``close()`` stopped lingering (dropped).
        self.unsent_at_close = 0
        self.pipes: set[Pipe] = set()
        #: The connection whose read side a ``recv`` has borrowed (see :meth:`lent_read`).
        self.lent_connection: StreamConnection | None = None
        #: The connection of the last lent read that brought data, whose reader may still be
        #: parked on the resting lease (see :meth:`recv_wakeup`).
        self.resting_lender: StreamConnection | None = None
        self.strategy: RoutingStrategy = strategy_cls(self)
        self.endpoints = Endpoints(self)
        self._monitors: list[Monitor] = []
        self._send_wakeup: anyio.Event | None = None
        self._recv_wakeup: anyio.Event | None = None
        self._flush_wakeup: anyio.Event | None = None
        self._written_wakeup: anyio.Event | None = None
        self._read_wakeup: anyio.Event | None = None
        self._running = 0
        self._idle: anyio.Event | None = None
        #: While a close lingers: its deadline's scope (a second close may shorten it).
        self._linger_scope: anyio.CancelScope | None = None
        #: Set when a close has finished (a concurrent close waits on it).
        self._closed_event: anyio.Event | None = None

    # ------------------------------------------------------------------ tasks

    def running_group(self) -> TaskGroup:
        """The task group for a new endpoint; raises SocketClosed when there is none."""
        if self.closed or self.closing:
            raise SocketClosed(CLOSED)
        if self.task_group is None:
            raise SocketClosed(NEVER_OPENED)
        return self.task_group

    def spawn(self, func: Callable[..., Awaitable[None]], *args: Any) -> None:
        """Start a background task whose end ``close()`` waits for."""
        tg = self.running_group()
        self._running += 1
        tg.start_soon(self._tracked, func, *args)

    async def _tracked(self, func: Callable[..., Awaitable[None]], *args: Any) -> None:
        try:
            await func(*args)
        finally:
            self._running -= 1
            if not self._running and self._idle is not None:
                self._idle.set()

    # ------------------------------------------------------------------ close

    async def close(self, linger: float | None) -> None:
        """Close: stop listening, flush for up to ``linger`` seconds (None: until written),
        then drop every connection and wait until they are all torn down.

        The close protocol (docs/architecture.md, "Closing"): a cancelled close skips the rest
        of the linger and nothing else (the teardown runs shielded, then the cancellation
        propagates); a close while another is in progress shortens its linger to this one's
        if that is shorter and returns when the socket is closed.
        """
        if self.closed:
            return
        if self.closing:
            await self._join_close(linger)
            return
        self.closing = True
        self._closed_event = anyio.Event()
        try:
            self.endpoints.stop_listening()
            if linger is None or linger > 0:
                with anyio.CancelScope(deadline=_deadline(linger)) as scope:
                    self._linger_scope = scope
                    await self._linger_or_warn()
        finally:
            self._linger_scope = None
            self.unsent_at_close = sum(  # an inproc "outbox" is already the peer's inbox
                len(p.outbox.items) for p in self.pipes if not p.endpoint.startswith("inproc://")
            )
            with anyio.CancelScope(shield=True):
                await self._teardown()

    async def _join_close(self, linger: float | None) -> None:
        """Another task is closing: cut its linger short if ours is shorter, wait for it."""
        scope = self._linger_scope
        if scope is not None:
            scope.deadline = min(scope.deadline, _deadline(linger))
        event = self._closed_event
        if event is not None:
            with anyio.CancelScope(shield=True):  # bounded: the teardown has timeouts
                await event.wait()

    async def _teardown(self) -> None:
        """Close's second half: mark closed, stop every endpoint and connection, wake blocked
        tasks, wait until every task has ended, then report Closed and MonitorStopped."""
        self.closed = True
        # Closed is reported once an endpoint's connections are gone (after their
        # Disconnected), on every transport, as unbind() and disconnect() do.
        closed = self.endpoints.stop_all()
        inproc.socket_closed(self)
        for wakeup in (self._send_wakeup, self._recv_wakeup):
            if wakeup is not None:
                wakeup.set()
        while self._running:
            self._idle = anyio.Event()
            await self._idle.wait()
        for endpoint in closed:
            self.emit(Closed(endpoint))
        self.emit(MonitorStopped())
        if self._closed_event is not None:
            self._closed_event.set()

    async def _linger_or_warn(self) -> None:
        """``_linger``, logging a warning if it is still waiting after
        :data:`LINGER_WARNING_AFTER` seconds: a close that seems to hang says why."""
        with anyio.move_on_after(LINGER_WARNING_AFTER):
            await self._linger()
            return
        waiting = {p.endpoint: len(p.outbox.items) for p in self.pipes if p.outbox.items}
        logger.warning(
            "<zmtp.Socket %s> close() has waited %g s for %d undelivered message(s) to %s "
            "(linger=%s): a peer is not taking them. Pass linger= to the socket or to close() "
            "to bound the wait (linger=0 drops them).",
            self.socket_type,
            LINGER_WARNING_AFTER,
            sum(waiting.values()),
            ", ".join(sorted(waiting)) or "a connection being made",
            self.options.linger,
        )
        await self._linger()

    async def _linger(self) -> None:
        """Wait until every connection has written what was queued for it, then for the
        extension's own linger (a QoS sender's receipts), then for what that queued.

        That includes a connect() pipe whose connection is still being made (or re-made): as
        with libzmq, its messages wait for it within the linger time instead of being dropped.
        With an extension it includes a live connection's queued commands too: the
        extension's answers (a QoS receiver's ACK or COMP for the message it just took, a
        sender's CLR) are commands, not outbox messages, and a receiver that closes right
        after its last recv must still send them (docs/qos-protocol.md §5.3). Without one
        the only commands are the protocol's own (PONG, SUBSCRIBE): as with libzmq, linger
        is for messages, so a peer that never reads cannot hold an unbounded close on them.
        """
        await self._flush_all()
        if self.extension is not None:
            await self.extension.linger()
            await self._flush_all()

    async def _flush_all(self) -> None:
        """Wait until no live or dialing connection has messages (or, live and with an
        extension, commands) left to hand to the operating system."""
        commands = self.extension is not None

        def unsent(p: Pipe, dialing: set[Pipe]) -> bool:
            if p.endpoint.startswith("inproc://"):
                return False  # an inproc "outbox" is already the peer's inbox
            if not (p.connected or p in dialing):
                return False
            if p.outbox.items or p.flushing:
                return True
            stream = p.stream
            return commands and p.connected and stream is not None and stream.unwritten

        while True:
            dialing = self.endpoints.dialing_pipes()
            if not any(unsent(p, dialing) for p in self.pipes):
                break
            self._flush_wakeup = anyio.Event()
            await self._flush_wakeup.wait()  # set after every write batch and disconnect

    # ------------------------------------------------------------------ monitor

    def monitor(self) -> Monitor:
        monitor = Monitor()
        if self.closed:
            monitor.push(MonitorStopped())
        else:
            self._monitors.append(monitor)
        return monitor

    def emit(self, event: MonitorEvent) -> None:
        """Report ``event`` to every live monitor (connections, endpoints, extensions)."""
        if not self._monitors:
            return
        alive = []
        for monitor in self._monitors:
            if not monitor.ended:
                monitor.push(event)
                alive.append(monitor)
        self._monitors = alive

    # ------------------------------------------------------------------ wake-ups

    def send_wakeup(self) -> anyio.Event:
        """The event a blocked ``send`` waits on (set by :meth:`wake_senders` and close)."""
        wakeup = self._send_wakeup
        if wakeup is None:
            wakeup = self._send_wakeup = anyio.Event()
        return wakeup

    def recv_wakeup(self) -> anyio.Event:
        """The event a blocked ``recv`` waits on (set by :meth:`wake_receivers` and close)."""
        resting = self.resting_lender
        if resting is not None:
            # A lease rests after the last lent read (zmtp/engine/stream.py): whoever waits
            # here does not read that connection itself, so its reader must, now.
            self.resting_lender = None
            resting.rouse_reader()
        wakeup = self._recv_wakeup
        if wakeup is None:
            wakeup = self._recv_wakeup = anyio.Event()
        return wakeup

    @property
    def receivers_waiting(self) -> bool:
        return self._recv_wakeup is not None

    def wake_senders(self) -> None:
        """Re-try blocked sends: a pipe got room, a peer attached, an extension's gate opened."""
        wakeup = self._send_wakeup
        if wakeup is not None:
            self._send_wakeup = None
            wakeup.set()

    def wake_receivers(self) -> None:
        """A message may be ready: wake blocked receives (and end a lent read on one peer)."""
        lent = self.lent_connection
        if lent is not None:
            lent.kick()  # a message elsewhere: end the lent read waiting on one peer
        wakeup = self._recv_wakeup
        if wakeup is not None:
            self._recv_wakeup = None
            wakeup.set()

    def defer(self, work: Callable[[], bool]) -> None:
        """RoutingHost: run ``work`` once per loop pass until it returns True (see
        :meth:`zmtp.routing.base.RoutingHost.defer`); at once when the socket is closing."""
        if self.closing or self.closed or self.task_group is None:
            while not work():
                pass
            return

        async def slices() -> None:
            while not work():
                await anyio.lowlevel.checkpoint()

        self.spawn(slices)

    def written(self) -> None:
        """A connection wrote a batch or ended (lets a lingering close re-check its queues)."""
        wakeup = self._flush_wakeup
        if wakeup is not None:
            self._flush_wakeup = None
            wakeup.set()
        wakeup = self._written_wakeup
        if wakeup is not None:
            self._written_wakeup = None
            wakeup.set()

    def read_wakeup(self) -> anyio.Event:
        """The event a reader stopped by the extension's ``can_receive`` waits on."""
        wakeup = self._read_wakeup
        if wakeup is None:
            wakeup = self._read_wakeup = anyio.Event()
        return wakeup

    def wake_readers(self) -> None:
        """The extension's ``can_receive`` may have turned True: readers ask it again."""
        wakeup = self._read_wakeup
        if wakeup is not None:
            self._read_wakeup = None
            wakeup.set()

    def unwritten(self) -> bool:
        """Whether a live connection still has something to write: queued messages, a batch
        being written, or commands (an extension's acknowledgements) not yet handed to the
        operating system. inproc hands everything over at once and never counts."""
        for pipe in self.pipes:
            if not pipe.connected or pipe.endpoint.startswith("inproc://"):
                continue
            if pipe.outbox.items or pipe.flushing:
                return True
            stream = pipe.stream
            if stream is not None and stream.unwritten:
                return True
        return False

    async def wait_written(self) -> None:
        """Wait until :meth:`unwritten` is False: everything queued on the live connections
        so far, messages and commands, has been handed to the operating system (or its
        connection ended). For a layer that must know its last words left before it closes
        (a job worker above: the verdicts of a graceful stop)."""
        while self.unwritten():
            wakeup = self._written_wakeup
            if wakeup is None:
                wakeup = self._written_wakeup = anyio.Event()
            await wakeup.wait()

    # ------------------------------------------------------------------ lent reads

    def lender(self) -> StreamConnection | None:
        """The connection whose read side ``recv`` may borrow: the socket's only peer, over
        tcp/ipc, with its reader idle (and the extension's read gate open). With several
        peers a message may come from any of them, and a task can wait on one socket only,
        so their readers deliver as usual."""
        pipes = self.pipes
        if len(pipes) != 1:
            return None
        for pipe in pipes:
            if self.extension is not None and not self.extension.can_receive(pipe):
                return None
            stream = pipe.stream
            if stream is not None and stream.lendable:
                return stream
        return None

    async def lent_read(self, lender: StreamConnection) -> None:
        """Read the peer's bytes in the calling (``recv``) task instead of waiting for its
        reader to deliver them: a reply then reaches the application one event-loop pass
        sooner (REQ/REP latency; see zmtp/engine/stream.py).

        No cancel scope of our own (entering one costs more than the pass it saves): a close
        or the connection ending closes the stream, which ends the read; a timeout or cancel
        comes from the caller's scopes; and a message from another peer kicks the read
        through :meth:`wake_receivers` (see :meth:`StreamConnection.kick`).
        """
        self.lent_connection = lender
        try:
            data = await lender.lent_read()
        finally:
            self.lent_connection = None
        if data is not None:
            self.resting_lender = lender  # its reader stays parked: see recv_wakeup
            lender.process_lent(data)

    # ------------------------------------------------------------------ extension

    def install_extension(self, extension: SocketExtension) -> None:
        if self.extension is not None:
            raise UsageError("an extension is already installed")
        if self.endpoints.any():
            raise UsageError("install extensions before bind/connect")
        extension.gates_sends = type(extension).gates_sends  # read per message: see its doc
        self.extension = extension

    @property
    def peers(self) -> list[PeerInfo]:
        return [p.peer for p in self.pipes if p.connected and p.peer is not None]

    # ------------------------------------------------------------------ ConnectionHost

    def make_mechanism(self) -> Mechanism:
        return make_mechanism(self.options, has_authenticator=self.authenticator is not None)

    def extension_properties(self) -> Mapping[str, bytes] | None:
        if self.extension is None:
            return None
        return self.extension.handshake_properties()

    def local_properties(self) -> dict[str, bytes]:
        """Our handshake metadata as a mapping (inproc exchanges it without encoding)."""
        props = {"Socket-Type": self.socket_type.encode()}
        if self.socket_type in ("REQ", "DEALER", "ROUTER"):
            props["Identity"] = self.options.identity
        props.update(self.extension_properties() or {})
        return props

    def new_pipe(
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
        strategy = self.strategy
        wake = self.wake_receivers

        def on_data() -> None:
            strategy.readable(pipe)
            wake()

        inbox.on_data = on_data
        outbox.on_space = self.wake_senders
        self.pipes.add(pipe)
        return pipe

    def owns(self, pipe: Pipe) -> bool:
        """Whether ``pipe`` is still one of this socket's pipes (not removed)."""
        return pipe in self.pipes

    def attach(self, pipe: Pipe) -> str | None:
        """Make ``pipe`` routable; returns the strategy's reason to refuse it."""
        if pipe.attached:
            return None
        reason = self.strategy.attach(pipe)
        if reason is None:
            pipe.attached = True
            self.wake_senders()
        return reason

    def pipe_handshake(
        self, pipe: Pipe, peer: PeerInfo, command_sink: Callable[[bytes, bytes], None]
    ) -> str | None:
        """A connection behind ``pipe`` completed its handshake; returns a rejection reason."""
        pipe.peer = peer
        ext = self.extension
        if ext is not None:
            reason = ext.validate_peer(pipe, peer)
            if reason is not None:
                return reason
        reason = self.attach(pipe)
        if reason is not None:
            return reason
        pipe.connected = True
        pipe.command_sink = command_sink
        self.strategy.connected(pipe)
        if ext is not None:
            ext.pipe_connected(pipe)
        self.wake_senders()
        return None

    def pipe_refused(self, pipe: Pipe) -> None:
        """The handshake on ``pipe`` was refused (validator, PAIR's second peer): forget an
        accepted connection's pipe. No hook: the extension never saw it connected."""
        if not pipe.persistent:
            self.pipes.discard(pipe)

    def pipe_disconnected(self, pipe: Pipe, reason: str) -> None:
        """The connection behind ``pipe`` ended (an accepted pipe goes away with it)."""
        if not pipe.connected:
            return
        pipe.connected = False
        pipe.command_sink = None
        resting = self.resting_lender
        if resting is not None and resting.pipe is pipe:
            self.resting_lender = None  # not kept alive by a lease it will never return
        strategy = self.strategy
        strategy.disconnected(pipe)
        if self.extension is not None:
            self.extension.pipe_disconnected(pipe, reason)
        if not pipe.persistent:
            self.remove_pipe(pipe)
        elif (self.options.immediate or not strategy.attach_early(pipe)) and pipe.attached:
            # Types that attach only known peers (ROUTER) must meet a reconnected peer afresh:
            # it may announce a different Identity.
            pipe.attached = False
            strategy.detach(pipe)
        self.written()

    def remove_pipe(self, pipe: Pipe) -> None:
        """``pipe`` is gone for good: detach it and drop what was queued for its peer."""
        if pipe not in self.pipes:
            return
        self.pipes.discard(pipe)
        if pipe.attached:
            pipe.attached = False
            self.strategy.detach(pipe)
        if self.extension is not None:
            # First, so that it may take what was queued (a delivery guarantee re-routes it).
            self.extension.pipe_removed(pipe)
        pipe.outbox.clear()  # undeliverable: the peer is gone for good

    def incoming(self, pipe: Pipe, messages: list[Message]) -> None:
        """A batch of messages read from ``pipe``'s peer (stream connections)."""
        ext = self.extension
        if ext is not None:
            messages = ext.on_receive_batch(pipe, messages)
            if not messages:
                return
        self.strategy.incoming(pipe, messages)

    def incoming_received(self, pipe: Pipe, messages: list[Received]) -> None:
        """A batch that may hold bare one-part messages (see ``queue.Received``): only from a
        connection of a ``bare_single_part`` strategy with no extension installed, or one
        that opted in (``SocketExtension.bare_single_part``: it sees the batch first, through
        ``on_received_batch``; every other extension gets lists, :meth:`incoming`)."""
        ext = self.extension
        if ext is not None:
            messages = ext.on_received_batch(pipe, messages)
            if not messages:
                return
        self.strategy.incoming_received(pipe, messages)

    def incoming_one(self, pipe: Pipe, message: Message) -> None:
        """One message from ``pipe``'s peer (inproc, udp)."""
        ext = self.extension
        if ext is not None and not ext.on_receive(pipe, message):
            return
        self.strategy.incoming_one(pipe, message)

    def command(self, pipe: Pipe, name: bytes, data: bytes) -> None:
        """A post-handshake command: the strategy's first, else the extension's."""
        if not self.strategy.command(pipe, name, data) and self.extension is not None:
            self.extension.on_command(pipe, name, data)

    def commands(self, pipe: Pipe, commands: list[Command]) -> None:
        """A run of commands (a connection with an extension delivers them so): those the
        strategy does not consume go to the extension's ``on_command_batch`` in one call."""
        strategy = self.strategy
        if type(strategy).command is not RoutingStrategy.command:  # SUB, XPUB, RADIO, DISH...
            commands = expand_runs(commands)  # the strategy sees each command
            commands = [c for c in commands if not strategy.command(pipe, c.name, c.data)]
        if commands and self.extension is not None:
            self.extension.on_command_batch(pipe, commands)

    # ------------------------------------------------------------------ RoutingHost

    def is_bound(self, endpoint: str) -> bool:
        return self.endpoints.is_bound(endpoint)

    def is_connected_to(self, endpoint: str) -> bool:
        return self.endpoints.is_connected_to(endpoint)

    def close_pipe_connection(self, pipe: Pipe, reason: str) -> None:
        """Close the live connection behind ``pipe`` (a strategy's decision: ROUTER handover).

        A connect() pipe reconnects as usual; an accepted one goes away with its connection.
        """
        if pipe.endpoint.startswith("inproc://"):
            inproc.drop(pipe, reason)
            return
        self.endpoints.close_connection_of(pipe, reason)


def _deadline(linger: float | None) -> float:
    """The absolute deadline of a linger of ``linger`` seconds (None: none)."""
    return math.inf if linger is None else anyio.current_time() + max(linger, 0.0)
