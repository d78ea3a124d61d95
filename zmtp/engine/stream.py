"""Drives one tcp/ipc connection: a read loop, a write loop and a timer loop around a
sans-IO :class:`~zmtp.protocol.Connection`.

* Reads are large (``read_size``, 256 KiB by default) and every complete message of a read is
  delivered to the pipe in one batch.
* The writer takes every message queued for the peer (up to a cap), encodes the batch into one
  buffer and writes it once.
* The timer loop sleeps in a cancel scope whose deadline the reader moves when the protocol
  arms an earlier timer (a peer's heartbeat TTL), so timers cost nothing per message.

The writer is not shielded: the application never cancels it (``send`` only queues), and it is
cancelled only when the connection is being torn down, at which point the stream is closed and
a partial frame cannot be followed by anything. Shielding would instead let a peer that stops
reading hold ``close()`` forever.

Eager write (latency): waking the writer task costs one event-loop pass (~15-20 us on the dev
VM) between the application's ``send`` and the bytes leaving, on each side of every round trip.
So when the outbox goes non-empty while the writer is *parked* (nothing of ours in flight, and
anyio's send returns only once the transport buffer is empty), ``_write_now`` encodes the batch
and writes it at once with one non-blocking ``send`` on the raw socket, in the caller's task.
What the kernel does not take becomes ``_backlog``, which the woken writer sends before anything
else, so bytes keep their order and a partial frame is always completed first. It is armed by a
read that delivered messages (the next send is then likely an answer, as in REQ/REP, DEALER/
ROUTER or PAIR ping-pong) and used at most once per such read: the next messages of a burst
wake the writer and go out in its batch, as before, and a one-way stream (PUSH, PUB) keeps
the writer's batching untouched. No await is involved, so a cancelled ``send`` cannot
interrupt it. An extension's ``before_send_batch`` runs in it as in the writer, right before
the write (QoS REQ/REP keeps the shortcut). Not used once the connection is ending.

Lent reads (latency, the mirror of the eager write): a message that the reader task delivers
reaches the application one more loop pass later (the reader's wake-up, then the
application's). So when the socket's ``recv`` finds nothing and this connection is its only
peer, it reads the socket itself while the reader is parked (``lent_read`` / ``process_lent``,
the same processing as the reader's). The lease is taken only while the reader is not inside
``receive`` (two tasks cannot wait on one stream), which is the case when an application that
just received answers and asks again without yielding (the ping-pong of REQ/REP, DEALER/ROUTER,
PAIR): after a delivery to a waiting receiver, the reader yields until the application has
taken its message (one yield on asyncio, up to two on trio whose ready tasks run in random
order), so that it can come back to a free read side. The reader parks while the lease is
held. A lease returned by a read that was cancelled or ended wakes it at once; one returned
by a read that brought data *rests*: the application is about to answer and ask again, and
waking the reader only for it to park again cost a task switch and an event per round trip
(a third of a trio round trip's task steps). Only on a socket that can answer: a receive-only
one (PULL, SUB) has no ping-pong, and its reader reading ahead while the application consumes
is worth more than the switch. A resting lease goes back to the reader as soon
as the socket waits for a message without lending (``SocketCore.recv_wakeup``: several peers,
a closed read gate, ``wait_readable``), and at the latest after ``_LEASE_RECHECK`` (5 ms), so
a connection whose application stops receiving is read as before (PINGs answered,
disconnects noticed, the inbox filled to ``recv_hwm``), only up to 5 ms later. A
lent read is cancel-safe (a cancelled receive consumes nothing: timeouts and cancels come from
the caller's scopes). It has no cancel scope of its own, which would cost more than the loop
pass it saves (measured on trio: a lent read inside a scope was slower than no lent read): a
close or the connection ending closes the stream, which ends the read, and a message from
another peer of the socket *kicks* it (``kick``: a PING to the lender's peer, whose PONG ends
the read; peers without PING, ZMTP 3.0, are never lent).

On trio a lent read reads the raw socket itself and waits with trio's own ``wait_readable``
(``lent_read``): anyio's and trio's socket layers cost more on that critical path than the read
does.

Answer spin (latency): a lent read that follows an eager write (we have just answered or asked,
so the peer's next message is likely a few tens of us away) keeps the event loop polling for up
to the ``answer_spin`` option (off by default; 200 us measured) before the process may sleep:
on trio it polls the raw socket with a non-blocking ``recv`` between checkpoints, on asyncio a
self-rescheduling ``call_soon`` callback keeps the selector at a zero timeout while the
stream's ``receive`` waits. A process that sleeps in ``epoll_wait`` must be woken by the peer's
send, and on a VM that wake-up (most likely of a halted vCPU) costs more than the round trip's
Python work: traced on the dev VM, a hop whose waiting side had gone to sleep took 720-790 us
against 120-300 us for one whose side was still running. The raw anyio ping-pong stays awake by
accident (its send ends with a checkpoint, a loop pass, before its receive) and slept in 47 %
of its hops; zmtp, with fewer passes but more work before its answer leaves, slept in 97 %
(trio, 10,000 hops, ``perf`` ``sched_switch``). Only after an eager write: a one-way stream
(PUSH, PULL, PUB, SUB) never spins, and a peer slower than the budget costs at most
``answer_spin`` of CPU per message. Each poll is a checkpoint, so other tasks run meanwhile,
and a cancel ends the spin with nothing consumed. The spin backs off when it keeps missing
(``_SPIN_MISSES_TOLERATED``): with more runnable processes than CPUs the peer may not run while
we spin.

On asyncio the reader also yields once after delivering messages from a drained socket, so that
the woken application answers before the reader re-arms the socket (see ``_fifo_scheduler``).
"""

from __future__ import annotations

import contextlib
import logging
import math
import os
import socket
import sys
from collections.abc import Awaitable, Callable
from dataclasses import replace
from time import perf_counter
from typing import TYPE_CHECKING, Any, NoReturn

import anyio
from anyio.abc import ByteStream, SocketAttribute, SocketStream
from anyio.lowlevel import cancel_shielded_checkpoint, checkpoint

from ..monitor import Disconnected, HandshakeFailed, HandshakeSucceeded, PeerInfo
from ..protocol.connection import Connection
from ..protocol.errors import ProtocolError
from ..protocol.events import (
    AuthenticationRequested,
    CommandReceived,
    CommandsReceived,
    ConnectionFailed,
    Event,
    HandshakeComplete,
    MessagesReceived,
)
from ..protocol.mechanism import AuthRequest
from ..transport.streams import ipc_peer_credentials
from .allocator import settle_for_reads
from .handshake_hints import PEER_CLOSED, handshake_failure_reason
from .pipe import Pipe, PipeClosed
from .queue import Message

if TYPE_CHECKING:
    from .contract import ConnectionHost

try:  # FIONREAD, for _input_waiting (POSIX)
    import fcntl
    import termios
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]

logger = logging.getLogger("zmtp")

#: The longest a resting lease keeps the reader parked (see the module docstring, lent
#: reads): how late a peer's PING is answered, or its disconnect noticed, while an
#: application that was ping-ponging does something else. A ping-pong wakes the reader once
#: per this interval instead of once per round trip.
_LEASE_RECHECK = 0.005
#: A trio lent read that finds the peer's bytes already there yields once in 16 such reads
#: (see StreamConnection.lent_read): a task served by a fast peer still lets the others
#: run every 16 messages, without a loop pass on every round trip.
_READY_READ_YIELD_MASK = 15
#: The answer spin backs off (see the module docstring): after this many spins in a row that
#: ended without the answer, only every ``_SPIN_PROBE_EVERY``-th lent read spins, until one
#: gets its answer again. On a machine with more runnable processes than CPUs the peer may
#: not run while we spin, and spinning then delays the answer it waits for (measured at load
#: average 8 on the dev VM: REQ/REP p50 2-3x worse with an unconditional spin).
_SPIN_MISSES_TOLERATED = 2
_SPIN_PROBE_EVERY = 16
_MAX_BATCH_MESSAGES = 4096
_MAX_BATCH_BYTES = 1 << 20
_STREAM_ERRORS: tuple[type[Exception], ...] = (
    anyio.EndOfStream,
    anyio.BrokenResourceError,
    anyio.ClosedResourceError,
    OSError,
)


class StreamConnection:
    """One live tcp/ipc connection of a socket."""

    def __init__(
        self,
        socket: ConnectionHost,
        stream: ByteStream,
        endpoint: str,
        address: str,
        pipe: Pipe | None,
    ) -> None:
        self.socket = socket
        self.stream = stream
        self.endpoint = endpoint
        self.address = address
        self.pipe = pipe  # None for an accepted connection until its handshake completes
        opts = socket.options
        self.conn = Connection(
            socket.socket_type,
            mechanism=socket.make_mechanism(),
            identity=opts.identity,
            extra_properties=socket.extension_properties(),
            max_message_size=opts.max_message_size,
            max_handshake_size=opts.max_handshake_size,
            handshake_timeout=opts.handshake_ivl,
            heartbeat_ivl=opts.heartbeat_ivl,
            heartbeat_ttl=opts.heartbeat_ttl,
            heartbeat_timeout=opts.heartbeat_timeout,
            now=anyio.current_time(),
        )
        # An extension may answer every message with a command (QoS ACKs): it gets them in runs.
        self.conn.batch_commands = socket.extension is not None
        #: What ``conn.encode_messages`` calls (the connection's mechanism is fixed for its
        #: life), without that call: in clear, ``frames.encode_messages`` itself.
        self._encode_messages = self.conn.mechanism.encode_messages
        if socket.extension is not None:
            self.conn.set_command_runs(socket.extension.command_runs())
        #: One-part messages decoded as bare ``bytes`` (zmtp.engine.queue.Received): for the
        #: socket types that opted in, and under an extension only if it opted in too
        #: (``SocketExtension.bare_single_part``: its hook then takes them bare).
        ext = socket.extension
        self._bare = socket.strategy.bare_single_part and (ext is None or ext.bare_single_part)
        self.conn.bare_single_part = self._bare
        self.handshaken = False
        self.end_reason = ""
        self.end_kind = "closed"
        self._writer_wakeup: anyio.Event | None = None
        self._reader_wakeup: anyio.Event | None = None
        self._timer_scope: anyio.CancelScope | None = None
        #: The connection's whole life runs in this scope. Created here, not in run(), so that
        #: a close() issued before the connection's task first runs (just accepted) still
        #: stops it: a scope cancelled before it is entered cancels on entry.
        self._scope = anyio.CancelScope()
        self._auth_request: AuthRequest | None = None
        #: Handshake output the writer took but whose write a teardown cancelled (see
        #: _write_loop); _shutdown sends it before closing.
        self._unsent = b""
        #: Eager write (see the module docstring): the raw socket while the connection is
        #: handshaken and not ending (None otherwise), its send (None: os.write on its fd),
        #: whether one eager write may happen now (set when a read delivered messages), and
        #: what an eager write left unwritten.
        self._raw: Any = None
        self._raw_send: Callable[[bytes], int] | None = None
        self._eager_ok = False
        self._backlog = b""
        #: A post-handshake write was cancelled part-way: the stream may end inside a frame,
        #: so _shutdown must not write anything after it.
        self._write_torn = False
        #: The writer is inside a send (handshaken): bytes have left our buffers but not yet
        #: reached the operating system (see :attr:`unwritten`).
        self._writing = False
        #: Lent reads (see the module docstring): whether the connection may lend its read
        #: side (handshaken, not ending), whether the reader task is inside ``receive``,
        #: whether the application holds the read side, and the parked reader's wakeup.
        self._read_size = opts.read_size
        self._lend_ok = False
        self._reader_receiving = False
        self._lent = False
        self._kicked = False
        self._lease_wakeup: anyio.Event | None = None
        #: Whether a lease rests after a lent read that brought data: only on a socket that
        #: can answer (a ping-pong); a receive-only one (PULL, SUB) keeps its reader reading
        #: ahead while the application consumes (callgrind_receiver.py: +8 % otherwise).
        self._lease_rests = socket.strategy.can_send
        #: trio: the raw socket that lent reads use (see lent_read), once handshaken, trio's
        #: own ``wait_readable`` they wait with, and the error it raises when the socket is
        #: closed under the wait (see _trio_wait_readable).
        self._lent_sock: Any = None
        self._lent_wait: Callable[[int], Awaitable[None]] = anyio.wait_readable
        self._lent_wait_closed: type[Exception] = anyio.ClosedResourceError
        #: Lent reads that found the bytes at once (see _READY_READ_YIELD_MASK).
        self._ready_reads = 0
        #: An eager write sent messages since the last lent read: the next lent read spins
        #: (see the module docstring, answer spin). ``_fifo``: the loop is asyncio's.
        self._answer_due = False
        self._answer_spin = opts.answer_spin
        #: Answer spins in a row that ended without the answer (see _SPIN_MISSES_TOLERATED).
        self._spin_misses = 0
        self._fifo = _fifo_scheduler()
        #: anyio.current_time without its per-call backend look-up (see _loop_clock).
        self._clock = _loop_clock()
        #: Back-pressure on control replies (see _wait_replies_written): whether the writer is
        #: inside a write of control output only (no messages) that the peer has not taken
        #: yet, and the reader's wakeup while it waits for that write to finish.
        self._control_in_flight = False
        self._replies_wakeup: anyio.Event | None = None
        #: How the reader receives, and whether reads may be lent at all (see
        #: _cancel_clean_receive: asyncio's UNIX streams cannot be cancelled cleanly).
        self._receive, self._lendable_transport = _cancel_clean_receive(stream)
        #: How the writer sends (see _cancel_clean_send: the same flaw on the write side).
        self._send = _cancel_clean_send(stream)

    # ------------------------------------------------------------------ lifecycle

    async def run(self) -> None:
        """Run until the connection ends; report it in the monitor; always close the stream."""
        try:
            with self._scope:
                async with anyio.create_task_group() as tg:
                    tg.start_soon(self._write_loop)
                    tg.start_soon(self._timer_loop)
                    await self._read_loop()
                    tg.cancel_scope.cancel()
        except Exception as exc:  # a bug must cost one connection, never the socket
            logger.exception("zmtp: internal error on connection %s", self.endpoint)
            self._end(f"internal error: {exc!r}", "protocol")
        finally:
            with anyio.CancelScope(shield=True):
                await self._shutdown()

    def close(self, reason: str) -> None:
        """Tear the connection down from outside (disconnect, unbind, socket close)."""
        self._end(reason, "closed")

    def _end(self, reason: str, kind: str) -> None:
        self._raw = None  # no eager write from now on
        self._lend_ok = False  # nor lent read (one in progress ends when _shutdown closes us)
        if not self.end_reason:
            self.end_reason, self.end_kind = reason, kind
        self._scope.cancel()

    async def _shutdown(self) -> None:
        self._raw = None  # also when torn down by an outer cancellation, without _end
        self._lend_ok = False
        if self.pipe is not None and self.pipe.stream is self:
            self.pipe.stream = None
        # Flush what the protocol still wants to say (an ERROR for a refused peer), briefly;
        # an eager write's unwritten tail first (it may end a frame begun on the wire).
        backlog, self._backlog = self._backlog, b""
        leftover = self._unsent + backlog + self.conn.data_to_send()
        if leftover and self.end_kind != "io" and not self._write_torn:
            with anyio.move_on_after(1.0):
                with contextlib.suppress(*_STREAM_ERRORS):
                    await self._send(leftover)
        if backlog and self.pipe is not None:
            self.pipe.flushing = False  # set by _write_now; the writer never took it
        with anyio.move_on_after(1.0):
            with contextlib.suppress(*_STREAM_ERRORS):
                await self.stream.aclose()
        pipe = self.pipe
        reason = self.end_reason or "connection closed"
        if self.handshaken and pipe is not None:
            pipe.outbox.on_data = _noop  # the writer is gone; the pipe may outlive us
            pipe.inbox.on_space = _noop
            self.socket.pipe_disconnected(pipe, reason)
            self.socket.emit(Disconnected(self.endpoint, reason, self.address))
        else:
            kind = "closed" if self.end_kind == "io" else self.end_kind
            reason = handshake_failure_reason(self.socket.options, reason)
            self.socket.emit(HandshakeFailed(self.endpoint, reason, kind, self.address))

    # ------------------------------------------------------------------ reading

    async def _read_loop(self) -> None:
        receive = self._receive
        socket = self.socket
        read_size = socket.options.read_size
        settle_for_reads(read_size)  # reads from malloc's heap, not fresh mmaps (allocator.py)
        # Only a socket that can answer (not SUB, PULL, GATHER, DISH) gains from the yields.
        can_answer = socket.strategy.can_send
        fifo = _fifo_scheduler()
        while True:
            if self._lent:
                await self._wait_lease_returned()
                continue
            pipe = self.pipe
            if pipe is not None and pipe.inbox.full:
                await self._wait_inbox_space(pipe)
                continue
            ext = socket.extension
            if (
                ext is not None
                and self.handshaken
                and pipe is not None
                and not ext.can_receive(pipe)
            ):
                await self._wait_read_gate(pipe)
                continue
            if self._control_in_flight and self.conn.pong_pending:
                await self._wait_replies_written()
                continue
            self._reader_receiving = True
            try:
                data = await receive(read_size)
            except _STREAM_ERRORS as exc:
                self._end(_describe_io_error(exc), "io")
                return
            finally:
                self._reader_receiving = False
            receiver_waiting = socket.receivers_waiting
            delivered = self._process_input(data)
            if delivered is None:
                return
            if self._auth_request is not None and await self._authenticate():
                return
            if not (delivered and can_answer and len(data) < read_size):
                continue
            # The socket is drained and the application may just have been woken: let it run
            # before we re-arm the socket. On asyncio (FIFO) one yield is enough for it to
            # answer with an eager write ahead of our next receive, which costs a few us of
            # selector work (see _fifo_scheduler). And an application that comes back to recv
            # then finds our read side free and borrows it (lent reads): on trio, which runs
            # ready tasks in random order, yield until it has taken the message (two yields
            # at most: it runs in the batch after our first one).
            if fifo:
                await checkpoint()
            elif receiver_waiting and pipe is not None:
                await checkpoint()
                if pipe.inbox.items:
                    await checkpoint()

    def _process_input(self, data: bytes) -> bool | None:
        """Feed one read to the protocol and apply what it says, from whichever task read it
        (the reader, or the application's recv during a lent read). Returns whether anything
        was delivered, or None if the connection must end."""
        conn = self.conn
        events = conn.receive_data(data, self._clock())
        if len(events) == 1 and type(event := events[0]) is MessagesReceived:
            # Data only, the usual read: delivered as _handle_events would, without its
            # loop over the event types (a round trip's critical path, docs/performance.md).
            pipe = self.pipe
            assert pipe is not None
            self._eager_ok = True  # the application's next send is likely an answer
            if self._bare:
                self.socket.incoming_received(pipe, event.messages)
            else:  # a connection that is not bare decodes every message as a list
                self.socket.incoming(pipe, event.messages)  # type: ignore[arg-type]
            if not conn.has_output:
                # The read armed no timer (a PING, whose TTL arms one, always leaves a PONG
                # to write, and the handshake has its own events), so the deadline scan of
                # _rearm_timer is skipped too.
                return True
            self._wake_writer()
            self._rearm_timer()
            return True
        if events and self._handle_events(events):
            return None
        if conn.has_output:
            self._wake_writer()
        self._rearm_timer()
        return bool(events)

    def _rearm_timer(self) -> None:
        """Wake the timer loop earlier if the protocol armed an earlier timer."""
        timer = self._timer_scope
        if timer is not None:
            deadline = self.conn.next_deadline()
            if deadline is not None and deadline < timer.deadline:
                timer.deadline = deadline

    @property
    def unwritten(self) -> bool:
        """Whether anything this connection was given (messages or commands, an eager
        write's tail) has not been handed to the operating system yet."""
        return bool(self._backlog) or self.conn.has_output or self._writing

    # ------------------------------------------------------------------ lent reads

    @property
    def lendable(self) -> bool:
        """Whether the application's recv may read this connection itself right now: it is
        handshaken and not ending, no read of ours is pending, and none is lent already."""
        return self._lend_ok and not self._reader_receiving and not self._lent

    async def lent_read(self) -> bytes | None:
        """One read by the application's recv task (see the module docstring). Returns the
        bytes for :meth:`process_lent`, or None if the connection ended. Cancel-safe: a
        cancelled receive consumes nothing, and the lease goes back to the reader either way.
        """
        self._lent = True
        data = None
        try:
            if self._answer_due:
                self._answer_due = False
                misses = self._spin_misses
                self._spin_misses = misses + 1  # reset below if this spin gets its answer
                if misses < _SPIN_MISSES_TOLERATED or misses % _SPIN_PROBE_EVERY == 0:
                    spin = self._answer_spin
                    if self._fifo:
                        started = perf_counter()
                        stop = _keep_loop_polling(spin)
                        try:
                            data = await self.stream.receive(self._read_size)
                        finally:
                            stop()
                        if perf_counter() - started < spin:
                            self._spin_misses = 0
                        return data
                    data = await self._poll_raw(perf_counter() + spin)
                    if data is not None:
                        self._spin_misses = 0
            if data is None:
                sock = self._lent_sock
                if sock is None:
                    data = await self.stream.receive(self._read_size)
                    return data
                # trio: the raw socket, as the stream's receive would read it but without its
                # layers (anyio's stream and resource guard, trio's socket wrapper and retry
                # helper, anyio's wait_readable and its backend look-up), which ran on the
                # round trip's critical path: between the socket turning readable and our
                # parse, and again before the wait (docs/performance.md). Spelled out here,
                # not in a coroutine of its own: every coroutine layer is passed through
                # twice per wait (into it, and out of it when trio resumes the task).
                # anyio's trio stream keeps no buffer of its own, so reading its socket
                # directly keeps the order; the stream's close wakes the wait (trio's
                # ``notify_closing``: trio's ClosedResourceError, reported as anyio's).
                read_size = self._read_size
                data = _recv_ready(sock, read_size)
                if data is None:
                    wait_readable = self._lent_wait
                    while data is None:
                        fd = sock.fileno()
                        if fd < 0:
                            raise anyio.ClosedResourceError
                        try:
                            await wait_readable(fd)
                        except self._lent_wait_closed:
                            raise anyio.ClosedResourceError from None
                        data = _recv_ready(sock, read_size)
                else:
                    # As trio's receive does, a read that finds data at once yields afterwards
                    # (shielded: the bytes are ours now), so a peer that keeps us busy cannot
                    # starve the other tasks, but only every 16th time
                    # (_READY_READ_YIELD_MASK): against a fast peer (libzmq) the answer is
                    # usually there when we read, and a yield per read cost a loop pass on
                    # every round trip. recv's own cadence sees a cancel within 64 receives
                    # and yields every 1024 taken from the inbox; a read that waits yields in
                    # the wait.
                    ready = self._ready_reads = self._ready_reads + 1
                    if not ready & _READY_READ_YIELD_MASK:
                        await cancel_shielded_checkpoint()
            return data
        except _STREAM_ERRORS as exc:
            self._end(_describe_io_error(exc), "io")
            return None
        finally:
            self._lent = self._kicked = False
            if data is None or not self._lease_rests:  # cancelled or ended, or a receive-only
                self.rouse_reader()  # socket (no ping-pong): the reader gets it back now
            # Else the lease rests (see the module docstring): the application is about to
            # come back for the next read, and waking the reader only to park it again would
            # cost a task switch per round trip.

    async def _poll_raw(self, deadline: float) -> bytes | None:
        """The trio half of the answer spin: non-blocking reads of the raw socket between
        checkpoints until data comes or ``deadline`` (``perf_counter``) passes; None then, or
        if the connection is ending (the stream's own receive reports that). anyio's trio
        stream keeps no buffer of its own, so reading its socket directly keeps the order."""
        read_size = self._read_size
        while True:
            raw = self._raw
            if raw is None:
                return None
            data = _recv_ready(raw, read_size)
            if data is not None:
                return data
            if perf_counter() >= deadline:
                return None
            await checkpoint()

    def rouse_reader(self) -> None:
        """Give the read side back to the reader now (a resting lease: the socket's recv is
        waiting without lending, see :meth:`SocketCore.recv_wakeup`)."""
        wakeup = self._lease_wakeup
        if wakeup is not None and not self._lent:
            self._lease_wakeup = None
            wakeup.set()

    def process_lent(self, data: bytes) -> None:
        """Apply a lent read's bytes (delivers messages to the pipe like the reader does; no
        authentication can be pending: reads are lent only after the handshake)."""
        self._process_input(data)

    def kick(self) -> None:
        """End a lent read that is waiting for this peer because a message is ready
        elsewhere (another peer of the socket). Cancelling the application's read would need
        a cancel scope around every lent read, which costs more than the loop pass lent reads
        save; this is rare, so instead we ask the peer for a PONG: every ZMTP 3.1 peer answers
        a PING at once (libzmq in its I/O thread), its bytes end the read, and the PONG is
        dropped. Peers speaking ZMTP 3.0, which has no PING, are never lent; one that does not
        answer within ``handshake_ivl`` is dropped like a heartbeat timeout."""
        if self._lent and not self._kicked and self._lend_ok:
            self._kicked = True
            self.conn.send_ping(anyio.current_time(), self.socket.options.handshake_ivl)
            self._wake_writer()
            self._rearm_timer()

    async def _wait_lease_returned(self) -> None:
        """Park while the application holds the read side, and while the lease rests after
        a lent read that brought data: until :meth:`rouse_reader` or, at the latest,
        :data:`_LEASE_RECHECK` seconds (the read loop then parks again if it is lent once
        more, else reads)."""
        with anyio.move_on_after(_LEASE_RECHECK):
            self._lease_wakeup = anyio.Event()
            await self._lease_wakeup.wait()
        self._lease_wakeup = None

    async def _wait_inbox_space(self, pipe: Pipe) -> None:
        """Back-pressure: stop reading while the application has recv_hwm messages waiting."""
        while pipe.inbox.full:
            self._reader_wakeup = anyio.Event()
            await self._reader_wakeup.wait()

    async def _wait_read_gate(self, pipe: Pipe) -> None:
        """Back-pressure from the extension (``can_receive``): stop reading until it opens."""
        ext = self.socket.extension
        while ext is not None and not ext.can_receive(pipe):
            await self.socket.read_wakeup().wait()

    async def _wait_replies_written(self) -> None:
        """Back-pressure on control replies: stop reading a peer while a PONG it asked for
        waits behind a write of our control output that it does not take (a peer that floods
        PINGs and never reads), as libzmq stops reading such a peer. The protocol keeps one
        pending PONG whatever arrives, so this bounds our CPU, not memory: the peer's sends
        block instead of being parsed at line rate. Only control-only writes count: a write
        carrying messages is blocked by the peer's application-level back-pressure (its
        recv_hwm), and pausing then could deadlock two peers that both send data and PINGs.
        The read side counts as the reader's meanwhile, so it is not lent either."""
        self._reader_receiving = True
        try:
            while self._control_in_flight and self.conn.pong_pending:
                self._replies_wakeup = anyio.Event()
                await self._replies_wakeup.wait()
        finally:
            self._reader_receiving = False

    def _wake_reader(self) -> None:
        wakeup = self._reader_wakeup
        if wakeup is not None:
            self._reader_wakeup = None
            wakeup.set()

    def _handle_events(self, events: list[Event]) -> bool:
        """Apply protocol events; True if the connection must end."""
        socket = self.socket
        for event in events:
            if type(event) is MessagesReceived:
                assert self.pipe is not None
                self._eager_ok = True  # the application's next send is likely an answer
                if self._bare:
                    socket.incoming_received(self.pipe, event.messages)
                else:  # a connection that is not bare decodes every message as a list
                    socket.incoming(self.pipe, event.messages)  # type: ignore[arg-type]
            elif type(event) is CommandsReceived:
                assert self.pipe is not None
                socket.commands(self.pipe, event.commands)
            elif type(event) is CommandReceived:
                assert self.pipe is not None
                socket.command(self.pipe, event.name, event.data)
            elif type(event) is HandshakeComplete:
                reason = self._on_handshake(event)
                if reason is not None:
                    self.conn.fail(reason)
                    self._end(reason, "rejected")
                    return True
            elif type(event) is ConnectionFailed:
                self._end(event.reason, event.kind)
                return True
            elif type(event) is AuthenticationRequested:
                self._auth_request = event.request
        return False

    async def _authenticate(self) -> bool:
        """Decide on the pending authentication request; True if the connection must end.

        Runs in the read loop, so no further input is read meanwhile (the connection would
        only hold it); the timer loop keeps running, so the handshake timeout still applies
        and cancels a decision that takes too long.
        """
        # Imported here: only a server mechanism (or a ZAP domain) asks for a decision, and the
        # policy brings in ZAP (import time, docs/performance.md).
        from ..auth.policy import authenticate, zap_address

        assert self._auth_request is not None
        request = replace(
            self._auth_request,
            # ipc: libzmq's "localhost:uid:gid:pid" on both sides; tcp: the IP.
            address=ipc_peer_credentials(self.stream) or zap_address(self.address),
            identity=self.socket.options.identity,
        )
        self._auth_request = None
        result = await authenticate(request, self.socket.authenticator)
        events = self.conn.complete_authentication(result, anyio.current_time())
        if events and self._handle_events(events):
            return True  # a refusal's ERROR is flushed by _shutdown, not by the cancelled writer
        if self.conn.has_output:
            self._wake_writer()
        return False

    def _on_handshake(self, event: HandshakeComplete) -> str | None:
        peer = PeerInfo(
            socket_type=event.socket_type,
            identity=event.identity,
            properties=event.properties,
            zmtp_version=(3, event.zmtp_minor),
            mechanism=event.mechanism,
            endpoint=self.endpoint,
            address=self.address,
            user_id=event.user_id,
            curve_public_key=event.curve_public_key,
        )
        socket = self.socket
        if self.pipe is None:
            self.pipe = socket.new_pipe(self.endpoint, persistent=False)
        pipe = self.pipe
        reason = socket.pipe_handshake(pipe, peer, self._send_command)
        if reason is not None:
            socket.pipe_refused(pipe)
            return reason
        self.handshaken = True
        pipe.stream = self
        # Lent reads need a peer that answers PING (ZMTP 3.1): see kick().
        self._lend_ok = self._lendable_transport and self.conn.zmtp_minor >= 1
        if self._lend_ok and not self._fifo and isinstance(self.stream, SocketStream):
            self._lent_sock = _raw_socket(self.stream)[0]  # a wrapper may buffer: not then
            if self._lent_sock is not None:
                self._lent_wait, self._lent_wait_closed = _trio_wait_readable()
        pipe.inbox.on_space = self._wake_reader
        pipe.outbox.on_data = self._outbox_data
        if socket.strategy.can_send:
            # (a receive-only socket never answers; an extension's before_send_batch runs in
            # the eager write as it would in the writer, right before the bytes go)
            self._raw, self._raw_send = _raw_socket(self.stream)
        socket.emit(HandshakeSucceeded(self.endpoint, peer))
        if pipe.outbox.items:
            self._wake_writer()  # messages queued while the connection was down
        return None

    def _send_command(self, name: bytes, data: bytes) -> None:
        self.conn.send_command(name, data)
        self._wake_writer()

    def send_command_frames(self, frames: list[bytes]) -> None:
        """Queue encoded command frames (``Pipe.send_command_frames``); raises
        :class:`~zmtp.engine.pipe.PipeClosed` once the connection has failed."""
        try:
            self.conn.send_command_frames(frames)
        except ProtocolError:
            raise PipeClosed(f"no live connection on {self.endpoint}") from None
        self._wake_writer()

    # ------------------------------------------------------------------ writing

    def _wake_writer(self) -> None:
        wakeup = self._writer_wakeup
        if wakeup is not None:
            self._writer_wakeup = None
            wakeup.set()

    def _outbox_data(self) -> None:
        """The outbox went non-empty: write at once if the writer is parked, else wake it."""
        if self._eager_ok and self._writer_wakeup is not None and self._raw is not None:
            self._eager_ok = False  # first: a re-entrant call must not write ahead of us
            if self._write_now():
                return
        self._wake_writer()

    def _encode_batch(self, pipe: Pipe, batch: list[Message]) -> bytes:
        """Encode a batch taken from ``pipe``'s outbox, after the extension has seen it.

        One place for what the eager write and the writer task both do, so that they cannot
        drift apart: the extension's ``before_send_batch`` runs first, and a publisher's shared
        encodings (``pipe.shared_encoding``) are used only without an extension, whose hook
        sees (and may change) the parts.
        """
        ext = self.socket.extension
        if ext is not None:
            ext.before_send_batch(pipe, batch)
        if pipe.shared_encoding and ext is None:
            return self.conn.encode_shared_messages(batch)
        return self._encode_messages(batch)

    def _write_now(self) -> bool:
        """Eager write of the outbox from the caller's task (the writer is parked, so nothing
        of ours is in flight). False if it cannot be done here; the writer then does it."""
        raw = self._raw
        pipe = self.pipe
        if pipe is None or self._backlog:
            return False
        fd = raw.fileno()
        if fd < 0:  # closed under us (the reader will see it): leave it to the writer
            return False
        conn = self.conn
        data = conn.data_to_send(self._clock() if conn.ping_unwritten else None)
        outbox = pipe.outbox
        items = outbox.items
        if len(items) == 1:
            # One message (an answer, in a ping-pong): popped without take()'s batch sizing
            # (MessageQueue.get() inlined: the HWM edge is taken only at a capacity of 1).
            batch = [items.popleft()]
            if outbox.capacity == 1:
                outbox.on_space()
        else:
            batch = outbox.take(_MAX_BATCH_MESSAGES, _MAX_BATCH_BYTES)
        if batch:
            encoded = self._encode_batch(pipe, batch)
            data = data + encoded if data else encoded
        if not data:
            return True
        if batch and self._answer_spin > 0:
            self._answer_due = True  # the peer's next message is likely an answer: spin for it
        raw_send = self._raw_send
        try:
            sent = raw_send(data) if raw_send is not None else os.write(fd, data)
        except OSError:  # EAGAIN, or a broken connection the writer's send will report
            sent = 0
        if sent < len(data):
            self._backlog = data[sent:] if sent else data
            pipe.flushing = True  # a lingering close waits for the writer to send the rest
            self._wake_writer()
        else:
            self.socket.written()
        return True

    def _write_raw(self, data: bytes) -> int:
        """The writer's first try at ``data``: a non-blocking send on the raw socket, as the
        eager write does; how much went (0: none, or no raw socket). The writer hands the rest
        to the stream's ``send``, which waits for room.

        Why: the stream's ``send`` costs a batch a cancel check, its guard and, when nothing
        had to wait, a cancel-shielded checkpoint (a cancel scope and a loop pass) after the
        write: at 64 B and 256 messages a batch, 4-5 % of a PUSH's instructions on asyncio
        and trio (docs/performance.md, "A cheaper PUSH sender"). Safe for the same reasons as
        the eager write: ``_raw`` is set only while the connection is handshaken and not
        ending, nothing of ours is in flight in the stream (the writer is the stream's only
        sender while it runs, and anyio's asyncio transport, with a write-buffer limit of 0,
        returns from ``send`` only once its buffer is empty), and an error is left to the
        stream's ``send``, which reports it as it always did.
        """
        raw = self._raw
        if raw is None:
            return 0
        raw_send = self._raw_send
        try:
            sent: int = raw_send(data) if raw_send is not None else os.write(raw.fileno(), data)
        except OSError:  # EAGAIN, a closed fd, a broken connection: the stream's send tells
            return 0
        return sent

    async def _write_loop(self) -> None:
        conn = self.conn
        send = self._send
        socket = self.socket
        try:
            while True:
                pipe = self.pipe if self.handshaken else None
                outbox = pipe.outbox if pipe is not None else None
                backlog = self._backlog
                if (
                    not backlog
                    and not conn.has_output
                    and not (outbox is not None and outbox.items)
                ):
                    self._writer_wakeup = anyio.Event()
                    await self._writer_wakeup.wait()
                    continue
                data = conn.data_to_send(anyio.current_time() if conn.ping_unwritten else None)
                if backlog:  # the rest of an eager write goes first
                    self._backlog = b""
                    data = backlog + data if data else backlog
                flushing = bool(backlog)
                if outbox is not None and outbox.items:
                    assert pipe is not None
                    encoded = self._encode_batch(
                        pipe, outbox.take(_MAX_BATCH_MESSAGES, _MAX_BATCH_BYTES)
                    )
                    data = data + encoded if data else encoded
                    flushing = True
                if not self.handshaken:
                    # Greeting, READY, ERROR: a few bytes into an empty socket buffer. If the
                    # teardown that follows a refusal cancels this write, it was cancelled before
                    # writing anything (every transport checks for a cancel first), so
                    # _shutdown can still send it: the refused peer learns why.
                    self._unsent = data
                    await send(data)
                    self._unsent = b""
                else:
                    if flushing:
                        # The batch has left the outbox but not the process: a lingering
                        # close must wait for this write too, not only for an empty outbox.
                        assert pipe is not None
                        pipe.flushing = True
                    else:
                        self._control_in_flight = True  # see _wait_replies_written
                    self._writing = True
                    try:
                        sent = self._write_raw(data)
                        if sent < len(data):
                            await send(data[sent:] if sent else data)
                            sent = 0  # the stream's send ended with a checkpoint of its own
                    except BaseException:
                        self._write_torn = True  # it may have stopped inside a frame
                        raise
                    finally:
                        self._writing = False
                        if flushing:
                            assert pipe is not None
                            pipe.flushing = False
                        else:
                            self._control_in_flight = False
                            wakeup = self._replies_wakeup
                            if wakeup is not None:
                                self._replies_wakeup = None
                                wakeup.set()
                    if sent and outbox is not None and outbox.items:
                        # More than a batch was queued: let the other tasks run between two
                        # batches, as the stream's send did (after the write was accounted
                        # for, so a cancel here tears nothing).
                        socket.written()
                        await checkpoint()
                        continue
                socket.written()
        except _STREAM_ERRORS as exc:
            self._end(_describe_io_error(exc), "io")

    # ------------------------------------------------------------------ timers

    async def _timer_loop(self) -> None:
        conn = self.conn
        fd = _socket_fd(self.stream)
        while True:
            deadline = conn.next_deadline()
            with anyio.CancelScope(deadline=math.inf if deadline is None else deadline) as scope:
                self._timer_scope = scope
                await anyio.sleep_forever()
            self._timer_scope = None
            now = anyio.current_time()
            passes = 0
            while conn.silence_due(now):
                # Silence only if nothing from the peer waits unread, in the kernel or in our
                # reader: on a loop running late we can wake in the same pass as the reader
                # that the peer's answer woke, or while it waits for room in the inbox. The
                # kernel is asked first, before any yield (an asyncio tcp transport takes the
                # bytes off it later in this pass, its reader then running after us); then a
                # few passes let a reader that took them finish (trio's receive yields once
                # after reading, and runs each batch in random order). See "Heartbeats on a
                # late event loop" in docs/security.md.
                if _input_waiting(fd):
                    conn.input_waiting()
                    break
                if passes == _SILENCE_PASSES:
                    break
                passes += 1
                await checkpoint()
                now = anyio.current_time()
            events = conn.handle_timers(now)
            if events and self._handle_events(events):
                return
            if conn.has_output:
                self._wake_writer()


#: Loop passes a due silence deadline waits for a reader that already holds the peer's bytes
#: (see _timer_loop): only when a deadline is due, so a silent peer is dropped that much later.
_SILENCE_PASSES = 3


def _socket_fd(stream: ByteStream) -> int:
    """The stream's socket descriptor, or -1 (no socket: nothing to ask the kernel)."""
    raw = stream.extra(SocketAttribute.raw_socket, None)
    try:
        return int(raw.fileno()) if raw is not None else -1
    except (OSError, ValueError, AttributeError):
        return -1


def _input_waiting(fd: int) -> bool:
    """Whether the kernel holds bytes received on ``fd`` that nobody has read yet
    (``FIONREAD``; False where it cannot be asked: no descriptor, a closed one, Windows)."""
    if fd < 0 or fcntl is None:
        return False
    try:
        waiting = fcntl.ioctl(fd, termios.FIONREAD, b"\0\0\0\0")
    except OSError:
        return False
    return int.from_bytes(waiting, sys.byteorder, signed=True) > 0


def _noop() -> None:
    return None


def _fifo_scheduler() -> bool:
    """True on asyncio, whose ready tasks run in FIFO order: a task woken before the reader
    yields runs before it. There, yielding once after a delivery takes the reader's next
    ``receive`` (``resume_reading``: selector and epoll_ctl work) off the round trip's critical
    path (measured: p50 of a REQ/REP ping-pong -12 % on one core, -27 % on two). trio runs each
    batch of ready tasks in a random order, so the yield helps only half the time and costs a
    task step: measured -5 % to +7 % depending on CPU placement, so it is not used there."""
    try:
        import asyncio

        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


def _loop_clock() -> Callable[[], float]:
    """The running loop's clock, the one ``anyio.current_time`` reads (asyncio: the loop's
    ``time``; trio: ``trio.current_time``), without anyio's look-up of the backend on every
    call: every read passes the time to the protocol, on a round trip's critical path."""
    try:
        import asyncio

        return asyncio.get_running_loop().time
    except RuntimeError:
        import trio

        # What trio.current_time() reads (the run's clock, fixed for the run), without its
        # two Python wrappers.
        return trio.lowlevel.current_clock().current_time


def _trio_wait_readable() -> tuple[Callable[[int], Awaitable[None]], type[Exception]]:
    """trio's own ``wait_readable`` and the ``ClosedResourceError`` it raises when the fd is
    closed under the wait (``notify_closing``), for trio's lent reads: anyio's
    ``wait_readable`` looks the backend up (sniffio) and adds a coroutine of its own to every
    wait, on the round trip's critical path. Given an fd (not the socket), trio's wait skips
    its ``fileno()`` call too. Only called on trio (``_lent_sock`` is set only there)."""
    import trio

    return trio.lowlevel.wait_readable, trio.ClosedResourceError


def _keep_loop_polling(seconds: float) -> Callable[[], None]:
    """The asyncio half of the answer spin: keep the running loop's selector at a zero
    timeout for up to ``seconds`` (a ``call_soon`` callback that re-schedules itself), so a
    receive waiting meanwhile is served without the process sleeping. Returns the function
    that stops it early (the receive returned)."""
    import asyncio

    loop = asyncio.get_running_loop()
    deadline = loop.time() + seconds
    active = [True]

    def tick() -> None:
        if active[0] and loop.time() < deadline:
            loop.call_soon(tick)

    def stop() -> None:
        active[0] = False

    loop.call_soon(tick)
    return stop


def _cancel_clean_receive(stream: ByteStream) -> tuple[Callable[[int], Awaitable[bytes]], bool]:
    """The reader's receive function, and whether the stream's receive may be lent.

    anyio's UNIX socket stream on asyncio waits for input with ``loop.add_reader(sock,
    future.set_result, None)`` and removes the reader in the future's done callback. When the
    socket turns readable in the loop pass in which the waiting receive is cancelled, the
    selector has already queued ``set_result`` and it runs on the cancelled future: asyncio
    logs "Exception in callback Future.set_result(None) ... InvalidStateError" (no data is
    lost). Every teardown cancels a reader, and a lent read runs in the application's cancel
    scopes, so the noise would reach applications (docs/differences.md). There we receive with
    ``anyio.wait_readable``, whose clean-up is synchronous, and never lend the read side (a
    lent read waiting so could not be woken by the stream's close). tcp on asyncio (a
    protocol-based stream) and every stream on trio use the stream's own receive.
    """
    raw = stream.extra(SocketAttribute.raw_socket, None)
    if raw is None or not _fifo_scheduler() or raw.family != socket.AF_UNIX:
        return stream.receive, True

    async def receive(max_bytes: int) -> bytes:
        await checkpoint()  # as anyio's receive: a busy stream must not starve the others
        while True:
            try:
                data: bytes = raw.recv(max_bytes)
            except BlockingIOError:
                await anyio.wait_readable(raw)
                continue
            except OSError as exc:
                _raise_stream_error(raw, exc)
            if not data:
                raise anyio.EndOfStream
            return data

    return receive, False


def _recv_ready(sock: socket.socket, size: int) -> bytes | None:
    """One non-blocking read of a raw socket, as the stream's own receive would report it:
    the bytes, or None if none are there yet; ``anyio.EndOfStream`` at the peer's close, and
    any other ``OSError`` as :func:`_raise_stream_error` says. The one read of trio's lent
    reads (``lent_read``) and of the answer spin (``_poll_raw``)."""
    try:
        data = sock.recv(size)
    except BlockingIOError:
        return None
    except OSError as exc:
        _raise_stream_error(sock, exc)
    if not data:
        raise anyio.EndOfStream
    return data


def _raise_stream_error(raw: Any, exc: OSError) -> NoReturn:
    """Turn a raw socket's ``OSError`` into the anyio error its stream would have raised.

    A socket closed under us (fd -1) is ``ClosedResourceError``, as anyio's own receive and send
    say for a stream closed locally; anything else is the peer's or the kernel's doing:
    ``BrokenResourceError``. The reader and writer already handle exactly these two.
    """
    if raw.fileno() < 0:
        raise anyio.ClosedResourceError from None
    raise anyio.BrokenResourceError from exc


def _cancel_clean_send(stream: ByteStream) -> Callable[[bytes], Awaitable[None]]:
    """The writer's send function: the stream's own, except for a UNIX stream on asyncio.

    anyio's ``UNIXSocketStream.send`` waits for a full socket buffer to drain with
    ``loop.add_writer(sock, future.set_result, None)``, with the flaw that
    ``_cancel_clean_receive`` describes: a writer cancelled in the loop pass in which its
    socket turns writable makes asyncio log "Exception in callback Future.set_result(None) ...
    InvalidStateError". Every teardown of a connection whose peer reads slowly cancels a
    waiting writer, and a peer killed while it was not reading makes the socket writable (with
    an error) in the same pass as its EOF ends the connection: the 10-minute soak logged it a
    few times per run. There the writer sends with a non-blocking ``send`` and waits with
    ``anyio.wait_writable``, whose clean-up is synchronous. Like anyio's, it checks for a
    cancel before writing anything (the refused peer's ERROR relies on it, see the writer).
    """
    raw = stream.extra(SocketAttribute.raw_socket, None)
    if raw is None or not _fifo_scheduler() or raw.family != socket.AF_UNIX:
        return stream.send

    async def send(data: bytes) -> None:
        await checkpoint()
        view = memoryview(data)
        while view:
            try:
                sent: int = raw.send(view)
            except BlockingIOError:
                await anyio.wait_writable(raw)
                continue
            except OSError as exc:
                _raise_stream_error(raw, exc)
            view = view[sent:]

    return send


def _raw_socket(stream: ByteStream) -> tuple[Any, Callable[[bytes], int] | None]:
    """The stream's socket for eager writes, and its non-blocking ``send`` (None: use
    ``os.write`` on its fd: asyncio hands out a ``TransportSocket`` without ``send``).
    ``(None, None)`` if the stream has no socket or the platform cannot write a socket fd."""
    raw = stream.extra(SocketAttribute.raw_socket, None)
    try:
        if raw is None or raw.gettimeout() != 0:  # a blocking socket would block the loop
            return None, None
    except Exception:  # not a socket-like object
        return None, None
    send = getattr(raw, "send", None)
    if callable(send):
        return raw, send
    if os.name != "posix":
        return None, None
    return raw, None


def _describe_io_error(exc: BaseException) -> str:
    if isinstance(exc, anyio.EndOfStream):
        return PEER_CLOSED
    if isinstance(exc, anyio.ClosedResourceError):
        return "connection closed"
    cause = exc.__cause__  # a raw socket's OSError under anyio's (see _raise_stream_error)
    text = str(exc) or (str(cause) if cause is not None else "") or type(exc).__name__
    return f"connection lost: {text}"
