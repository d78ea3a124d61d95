"""``zmtp_qos.Socket``: a zmtp socket with per-hop delivery guarantees, in one line.

    async with zmtp_qos.Socket(zmtp.PUSH, qos=2) as push: ...

At level 0 it is a plain :class:`zmtp.Socket` (no extension installed, nothing on the hot
path). At levels 1-3 ``send`` returns a :class:`~zmtp_qos.Receipt`; at level 3 ``recv`` returns
a :class:`Handle` whose verdict becomes COMP or NACK. REQ and REP (:mod:`zmtp_qos.reqrep`): the
reply is the acknowledgement, so ``send`` returns None; a level-3 REP's ``recv`` returns a
:class:`ReplyHandle`, and a REQ's ``recv`` raises the NACK or dead-letter error.
"""

from __future__ import annotations

import logging
import os
from collections import deque
from collections.abc import Callable, Iterable
from types import TracebackType
from typing import Any

import anyio
from anyio.abc import TaskGroup

import zmtp
from zmtp.engine.queue import Message, Received
from zmtp.errors import CLOSED
from zmtp.pyzmq_hints import libzmq_socket_type
from zmtp.routing.req_rep import Rep, Req
from zmtp.socket import as_message
from zmtp.timeouts import call_timeout

from .codes import TIMEOUT as NACK_TIMEOUT
from .codes import code_for_exception, cut_text
from .config import QoSConfig
from .letters import DeadLetterStream, DeadLetterStreams
from .reqrep import REQREP_TYPES, ReqRepRuntime
from .results import DeadLetter, Receipt
from .runtime import RECEIVING_TYPES, SENDING_TYPES, QoSRuntime
from .sending import refuse_flags, tracked_send
from .stats import QoSStats
from .verdicts import WAKE_OR_FLUSH, VerdictQueue

log = logging.getLogger("zmtp_qos")
_new_object = object.__new__

FAN_OUT_TYPES = frozenset({"PUB", "SUB", "XPUB", "XSUB", "RADIO", "DISH"})


def _preview(parts: list[bytes], limit: int = 60) -> str:
    """A short, printable view of a message for a log line (never the whole body: a dead
    letter can be megabytes)."""
    first = parts[0] if parts else b""
    shown = repr(first[:limit]) + ("..." if len(first) > limit else "")
    more = f" (+{len(parts) - 1} parts)" if len(parts) > 1 else ""
    return f"{len(first)} bytes {shown}{more}"


class VerdictError(RuntimeError):
    """A level-3 handle was given a second verdict (or one after its processing timeout)."""


class Handle:
    """A level-3 message awaiting the application's verdict.

    ``async with handle:`` completes it on a normal exit and rejects it with the exception's
    mapped code otherwise (the exception still propagates); or call :meth:`complete` /
    :meth:`reject` yourself. A second verdict raises :class:`VerdictError`.
    """

    #: One per message at level 3: no ``__dict__``. ``_message`` is the message as it was
    #: received: over tcp/ipc a one-part message is its bare ``bytes``
    #: (``zmtp.engine.queue.Received``), turned into its list by :attr:`parts` when asked.
    __slots__ = ("_decide", "_message", "decided")

    def __init__(self, parts: Message, decide: Callable[[int | None, bytes], None]) -> None:
        self._message: Received = parts
        self._decide = decide
        self.decided = False

    @property
    def parts(self) -> Message:
        """The message's parts (the same list on every access)."""
        message = self._message
        if type(message) is bytes:
            message = self._message = [message]
        return message  # type: ignore[return-value]  # a list once not bytes

    @parts.setter
    def parts(self, parts: Message) -> None:
        self._message = parts

    def _give(self, code: int | None, text: bytes) -> None:
        if self.decided:
            raise VerdictError("this message already has a verdict")
        self.decided = True
        self._verdict(code, text)

    def _verdict(self, code: int | None, text: bytes) -> None:
        self._decide(code, text)

    def _expire(self) -> None:
        """The processing timeout passed: NACK TIMEOUT (retryable), unless a verdict came
        first. The handle arms it itself (see ``_PipeHandle``), so the socket's timer needs
        no way into the verdict and the user-facing API gains no name."""
        if not self.decided:
            self._give(NACK_TIMEOUT, b"processing_timeout")

    def complete(self) -> None:
        """The application processed the message: COMP."""
        self._give(None, b"")

    def reject(self, code: int, text: str = "") -> None:
        """The application failed the message: NACK with ``code`` (bit 7 = retryable)."""
        self._give(code, cut_text(text))

    async def __aenter__(self) -> Handle:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self.decided:
            return
        if exc is None:
            self.complete()
        elif isinstance(exc, Exception):
            self.reject(code_for_exception(exc), str(exc) or type(exc).__name__)


class _PipeHandle(Handle):
    """The handle of a PULL/GATHER message: its verdict goes to its connection's
    :class:`~zmtp_qos.verdicts.VerdictQueue` (a COMP) or, through the queue, to the runtime
    (a NACK), with the digest it came with. Slots, not a closure per message (fewer objects
    made and walked by the cyclic GC, docs/performance.md)."""

    __slots__ = ("_digest", "_queue")

    def __init__(self, parts: Received, queue: VerdictQueue, digest: bytes) -> None:
        """With a ``processing_timeout`` in the runtime's config the handle arms its own
        deadline on the runtime's timer (``runtime.schedule``, the socket's). ``parts``
        may be a bare one-part message (see :attr:`Handle.parts`)."""
        self._message = parts
        self.decided = False
        self._queue = queue
        self._digest = digest
        runtime = queue.runtime
        timeout = runtime.config.processing_timeout
        if timeout is not None:
            schedule = runtime.schedule
            assert schedule is not None  # a socket's runtime always has its timer
            schedule(timeout, self._expire)

    def _verdict(self, code: int | None, text: bytes) -> None:
        queue = self._queue
        queue.runtime.verdict(queue.pipe, self._digest, code, text)

    def complete(self) -> None:
        """The application processed the message: COMP, queued on its connection's verdict
        queue and written with the others of its connection (:meth:`QoSRuntime.complete`,
        which this inlines: keep the two in step). The usual verdict is one append: the
        runtime is called only by the first since the queue was last written (to wake the
        flusher) and at ``FLUSH_AT`` (:mod:`zmtp_qos.verdicts`) (to write them now)."""
        if self.decided:
            raise VerdictError("this message already has a verdict")
        self.decided = True
        queue = self._queue
        queue.append(self._digest)
        if len(queue) in WAKE_OR_FLUSH:
            queue.runtime.comps_waiting(queue)


class ReplyHandle(Handle):
    """A request received by a QoS 3 REP: its success is the reply you ``send``; a failure is
    :meth:`reject` (or an exception out of ``async with handle:``), answered with NACK.

    Leaving ``async with`` normally without having sent the reply raises
    :class:`VerdictError`: a REP answers every request.
    """

    def complete(self) -> None:
        raise VerdictError("a REP's success is its reply: send() it, or reject() the request")

    def replied(self) -> None:
        """The reply is being sent: the verdict is success (the socket's ``send`` calls it)."""
        self._give(None, b"")


class Socket:
    """A zmtp socket at QoS ``qos`` (0-3); keyword options are :class:`zmtp.Options`."""

    def __init__(
        self,
        socket_type: zmtp.SocketType | str,
        *,
        qos: int = 0,
        config: QoSConfig | None = None,
        **options: Any,
    ) -> None:
        if qos not in (0, 1, 2, 3):
            raise ValueError(f"QoS level must be 0, 1, 2 or 3, not {qos!r}")
        kind = (
            libzmq_socket_type(socket_type)
            or str(getattr(socket_type, "value", socket_type)).upper()
        )  # zmq.PUSH (libzmq's number) as zmtp.Socket takes it
        if qos and kind in FAN_OUT_TYPES:
            raise ValueError(
                f"{kind} cannot have QoS {qos}: each subscriber has its own copy, so there is "
                "nothing to acknowledge or fail over to"
            )
        if qos and kind not in SENDING_TYPES | RECEIVING_TYPES | REQREP_TYPES:
            raise ValueError(
                f"QoS {qos} is supported on PUSH, PULL, SCATTER, GATHER, REQ and REP, not {kind}"
            )
        self.level = qos
        self.config = config or QoSConfig()
        if qos >= 2 and not options.get("identity"):
            options["identity"] = b"qos-" + os.urandom(8).hex().encode()  # a stable anchor
        self.raw = zmtp.Socket(socket_type, **options)
        self._tg: TaskGroup | None = None
        self._letter_streams = DeadLetterStreams()
        self._handles: deque[Handle] = deque()
        self._handles_wakeup: anyio.Event | None = None
        self._receive_limit: int | None = None
        self.runtime: QoSRuntime | None = None
        self._reqrep: ReqRepRuntime | None = None
        self._reply_handle: ReplyHandle | None = None
        if qos:
            opts = self.raw.options
            runtime_cls = ReqRepRuntime if kind in REQREP_TYPES else QoSRuntime
            self.runtime = runtime_cls(
                qos,
                self.config,
                self.raw.socket_type,
                send_hwm=opts.send_hwm,
                recv_hwm=opts.recv_hwm,
                identity=opts.identity,
                on_dead_letter=self._on_dead_letter,
                wake_senders=self.raw.wake_senders,
                deliver_handles=self._deliver_handles,
                schedule=self._schedule,
            )
            self.runtime.emit = self.raw.engine.emit
            self.runtime.pipes = lambda: self.raw.engine.pipes
            if isinstance(self.runtime, ReqRepRuntime):
                self._reqrep = self.runtime
                strategy = self.raw.engine.strategy
                assert isinstance(strategy, Req | Rep)
                self.runtime.strategy = strategy
            self.raw.install_extension(self.runtime)
        self._delegate(kind)

    def _delegate(self, kind: str) -> None:
        """Where this wrapper would only forward, hand out the raw socket's own bound methods.

        ``sock.send`` is then ``sock.raw.send`` itself: no extra coroutine and Python frame
        per message (at 64 B the forward cost a level-0 socket 35-38 % of its throughput).
        Forwarded: everything at level 0; sends of REQ (no receipt: the reply is the
        acknowledgement) and of REP below level 3 (no reply handle); receives below level 3
        and of a REQ (plain messages). The methods below remain for what adds QoS work; a
        PUSH or SCATTER at level >= 1 gets its tracked send bound as ``send``
        (:func:`zmtp_qos.sending.tracked_send`: no level test per message).
        """
        raw = self.raw
        names: list[str] = []
        if self.runtime is None or (self._reqrep is not None and (self.level < 3 or kind == "REQ")):
            names += ["send", "send_multipart"]
        if self.level < 3 or kind == "REQ":
            names += ["recv", "recv_multipart"]
        for name in names:
            setattr(self, name, getattr(raw, name))
        if self.runtime is not None and self._reqrep is None and kind in SENDING_TYPES:
            # The tracked send, a closure over what it reads per message (zmtp_qos.sending).
            self.send = tracked_send(  # type: ignore[method-assign,assignment]
                self.runtime, raw, self._wait_for_slot
            )
        if self.level == 3 and kind in RECEIVING_TYPES:
            # recv and recv_handle are the handle queue's own receive: recv_handle's checks
            # (level, REQ/REP) hold for the socket's life, so they are made here, once.
            self.recv = self.recv_handle = self._next_handle  # type: ignore[method-assign]

    # ------------------------------------------------------------------ lifecycle

    async def __aenter__(self) -> Socket:
        # The timer task group (retries, processing timeouts, sweeps) is entered before the
        # raw socket and left after it: the timers keep running while close() lingers, so a
        # message waiting for its back-off is retried within linger (docs/qos-protocol.md
        # §5.3) instead of being dead-lettered at the deadline.
        self._cm = anyio.create_task_group()
        self._tg = await self._cm.__aenter__()
        try:
            await self.raw.__aenter__()
        except BaseException:
            await self._stop_timers()
            raise
        kind = self.raw.socket_type
        if self.runtime is not None and (self.level >= 2 or kind in SENDING_TYPES | {"REQ"}):
            self._tg.start_soon(self._sweeper)
        if self.runtime is not None and self.level == 3 and kind in RECEIVING_TYPES:
            self._tg.start_soon(self._verdict_flusher)  # PULL, GATHER (not REP: no COMPs)
        return self

    async def _stop_timers(self) -> None:
        if self._tg is not None:
            self._tg.cancel_scope.cancel()
            await self._cm.__aexit__(None, None, None)
            self._tg = None

    async def _sweeper(self) -> None:
        """Dead-letter sweep every dead_letter_timeout/4 (senders, every level) and the dedup
        TTL sweep every dedup_ttl/2 (receivers, levels 2-3): the reference never ran the
        latter."""
        runtime = self.runtime
        assert runtime is not None
        config = self.config
        period = min(config.dead_letter_timeout / 4, config.dedup_ttl / 2)
        while True:
            await anyio.sleep(period)
            runtime.sweep()

    async def _verdict_flusher(self) -> None:
        """Level-3 PULL/GATHER: write the queued COMPs (:meth:`QoSRuntime.complete`) once the
        verdict loop has yielded: a task woken by the first verdict after a flush, so a
        run of verdicts costs one wake-up and one frame batch per connection. The flush is
        synchronous (a cancellation cannot split it); when the task ends (the socket closes)
        what is left is written and verdicts are written at once from then on."""
        runtime = self.runtime
        assert runtime is not None
        try:
            while True:
                wakeup = anyio.Event()
                runtime.wake_flusher = wakeup.set
                await wakeup.wait()
                runtime.flush_verdicts()
        finally:
            runtime.wake_flusher = None
            runtime.flush_verdicts()

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        try:
            await self.raw.__aexit__(exc_type, exc, tb)  # linger runs here, timers alive
        finally:
            try:
                await self._stop_timers()
            finally:
                if self.runtime is not None:
                    self.runtime.close_out()
                self._letter_streams.end_all()

    async def bind(self, endpoint: str) -> str:
        return await self.raw.bind(endpoint)

    async def connect(self, endpoint: str) -> None:
        await self.raw.connect(endpoint)

    async def disconnect(self, endpoint: str) -> None:
        """Stop connecting to ``endpoint``. Messages queued for it and never written go to
        another connected peer (or wait for one, up to ``dead_letter_timeout``); written,
        unsettled ones follow the level's rule for a lost connection (docs/qos.md)."""
        await self.raw.disconnect(endpoint)

    async def unbind(self, endpoint: str) -> None:
        """Stop listening on ``endpoint``; its connections end as lost connections do."""
        await self.raw.unbind(endpoint)

    def monitor(self) -> zmtp.Monitor:
        return self.raw.monitor()

    @property
    def gives_receipts(self) -> bool:
        """Whether ``send`` returns a :class:`~zmtp_qos.Receipt`: PUSH and SCATTER at
        QoS >= 1. (REQ: the reply is the acknowledgement and ``recv`` raises the failures;
        REP, PULL, GATHER and level 0: nothing to acknowledge.)"""
        return self.runtime is not None and self._reqrep is None

    # ------------------------------------------------------------------ counters

    def stats(self) -> QoSStats:
        """The QoS counters now (a :class:`~zmtp_qos.QoSStats` snapshot; all zero at
        level 0): in flight, pending per peer, retrying, dedup size, awaiting a verdict,
        delivered and dead-lettered so far."""
        if self.runtime is None:
            return QoSStats(0)
        return self.runtime.stats()

    # ------------------------------------------------------------------ send

    async def send(
        self, data: bytes | bytearray | memoryview | str, flags: int | None = None
    ) -> Receipt | None:
        """Send one part; see :meth:`send_multipart` (the same types as ``zmtp.Socket.send``)."""
        if flags is not None:
            refuse_flags(flags, "send")
        return await self.send_multipart([data])  # a tracked socket binds its own: _delegate

    async def send_multipart(
        self, parts: Iterable[Any], flags: int | None = None
    ) -> Receipt | None:
        """Send a message: its parts as ``zmtp.Socket.send_multipart`` takes them (bytes,
        bytearray, memoryview, or str as UTF-8; anything else is a ``TypeError``, and the
        digest covers the bytes sent). PUSH and SCATTER at QoS >= 1: a
        :class:`~zmtp_qos.Receipt` that resolves to ``Delivered`` or a ``DeadLetter``. None at
        level 0, and from REQ and REP at every level: a REQ's acknowledgement is its reply, so
        its request's fate comes from ``recv`` (the reply, or ``NackError`` /
        ``DeadLetterError`` raised), and a REP's reply is not acknowledged at all
        (docs/qos-protocol.md §5.2).

        pyzmq's ``flags``: where this method runs (QoS work to do) only 0; a socket whose
        ``send_multipart`` is zmtp's own (level 0, REQ, REP below level 3) takes them all
        (docs/from-pyzmq.md)."""
        if flags is not None:
            refuse_flags(flags, "send_multipart")
        if self.runtime is None:
            await self.raw.send_multipart(parts)
            return None
        if self._reqrep is not None:
            # REQ/REP: the reply is the acknowledgement, there is no receipt.
            handle = self._reply_handle
            if handle is not None and not handle.decided:
                handle.replied()
            self._reply_handle = None
            await self.raw.send_multipart(parts)
            return None
        message = as_message(parts)  # a fresh list of bytes, converted as zmtp converts
        runtime = self.runtime
        if runtime.full:
            await self._wait_for_slot()
        receipt = runtime.register(message)
        try:
            await self.raw.send_prepared(message)
        except BaseException:
            runtime.unregister(message)  # never queued: no receipt, no dead letter
            raise
        return receipt

    async def _wait_for_slot(self) -> None:
        """Block while ``send_hwm`` messages are un-settled (docs/qos-protocol.md §5.3), up
        to ``send_timeout``; settling one (ACK, COMP, dead letter) wakes the senders."""
        runtime = self.runtime
        assert runtime is not None
        engine = self.raw.engine
        with call_timeout(self.raw.options.send_timeout, "send"):
            while runtime.full:
                if engine.closing:
                    raise zmtp.SocketClosed(CLOSED)
                await engine.send_wakeup().wait()

    # ------------------------------------------------------------------ receive

    async def recv(self, flags: int | None = None) -> Any:
        """One single-part message (levels 0-2), or a :class:`Handle` at level 3."""
        if flags is not None:
            refuse_flags(flags, "recv")
        if self.level == 3 and self.raw.socket_type != "REQ":
            return await self.recv_handle()
        return await self.raw.recv()

    async def recv_multipart(self, flags: int | None = None) -> list[bytes]:
        """The next message (levels 0-2, and a REQ at any level: a NACK or a dead letter
        is raised as :class:`~zmtp_qos.NackError` / :class:`~zmtp_qos.DeadLetterError`)."""
        if flags is not None:
            refuse_flags(flags, "recv_multipart")
        if self.level == 3 and self.raw.socket_type != "REQ":
            raise zmtp.UnsupportedOperation("at QoS 3 use recv_handle() and give a verdict")
        return await self.raw.recv_multipart()

    async def recv_handle(self, flags: int | None = None) -> Handle:
        """Level 3: the next message, to be completed or rejected (a REP: answered by
        ``send`` or rejected, see :class:`ReplyHandle`)."""
        if flags is not None:
            refuse_flags(flags, "recv_handle")
        if self.level != 3:
            raise zmtp.UnsupportedOperation("recv_handle() is for QoS 3: use recv()")
        if self._reqrep is not None:
            strategy = self._reqrep.strategy
            if not isinstance(strategy, Rep):
                raise zmtp.UnsupportedOperation("a REQ receives replies: use recv()")
            body = await self.raw.recv_multipart()
            handle = ReplyHandle(body, self._reqrep.reply_decider(strategy, body))
            self._reply_handle = handle
            return handle
        return await self._next_handle()  # not reached: _delegate binds it as recv_handle

    async def _next_handle(self, flags: int | None = None) -> Handle:
        """The next handle of a level-3 PULL/GATHER (its ``recv`` and ``recv_handle``)."""
        if flags is not None:  # looked at only when given
            refuse_flags(flags, "recv")
        handles = self._handles
        try:
            taken = handles.popleft()  # the usual call: one is waiting (a read brings many)
        except IndexError:
            taken = await self._wait_for_handle()
        limit = self._receive_limit
        if limit is not None and len(handles) < limit:
            self.raw.wake_readers()  # cheap when no reader waits
        return taken

    async def _wait_for_handle(self) -> Handle:
        """:meth:`_next_handle` with none queued: wait for a delivery, and take its first."""
        handles = self._handles
        while not handles:
            # One event shared by every waiting receiver (a worker's concurrent tasks):
            # replacing it would strand the receivers waiting on the old one.
            if self._handles_wakeup is None or self._handles_wakeup.is_set():
                self._handles_wakeup = anyio.Event()
            await self._handles_wakeup.wait()
        return handles.popleft()

    def _deliver_handles(
        self, queue: VerdictQueue, messages: list[Received], digests: list[bytes]
    ) -> int:
        """A read's new level-3 messages from ``queue``'s connection as handles, in one
        call: as many as ``recv_hwm`` has room for (how many is returned; the runtime NACKs
        the rest), and the waiting receivers woken once. The handles are made without
        ``__init__`` (a Python ``__init__`` costs a C-level call and a frame per message,
        docs/performance.md); without a ``processing_timeout`` (the usual case) by a loop
        that arms nothing."""
        runtime = self.runtime
        assert runtime is not None
        handles = self._handles
        room = max(self.raw.options.recv_hwm, 1) - len(handles)
        if room <= 0:
            return 0
        if room < len(messages):
            messages = messages[:room]
        timeout = runtime.config.processing_timeout
        new = _new_object
        append = handles.append
        if timeout is None:
            for message, digest in zip(messages, digests, strict=False):
                handle = new(_PipeHandle)
                handle._message = message  # bare or a list: Handle.parts gives the list
                handle.decided = False
                handle._queue = queue
                handle._digest = digest
                append(handle)
        else:
            schedule = runtime.schedule
            assert schedule is not None  # a socket's runtime always has its timer
            for message, digest in zip(messages, digests, strict=False):
                handle = new(_PipeHandle)
                handle._message = message
                handle.decided = False
                handle._queue = queue
                handle._digest = digest
                append(handle)
                schedule(timeout, handle._expire)  # it arms its own deadline, as __init__
        wakeup = self._handles_wakeup
        if wakeup is not None:
            self._handles_wakeup = None  # once: the next delivery finds nobody to wake
            wakeup.set()
        return len(messages)

    # ------------------------------------------------------------------ receiver flow control

    @property
    def pending_handles(self) -> int:
        """Level 3: messages received and waiting to be taken by :meth:`recv_handle`."""
        return len(self._handles)

    def set_receive_limit(self, limit: int | None) -> None:
        """Level-3 PULL/GATHER: stop reading from the connections while ``limit`` received
        messages wait to be taken by :meth:`recv_handle`, and read again below it.

        Level 3 hands messages to the application as handles instead of the inbox, so the
        inbox's ``recv_hwm`` never stops a reader; this is that back-pressure for the handle
        queue (``zmtp_qos.Worker`` sets it to its prefetch, docs/worker.md). The peers'
        further messages wait in their queues and the kernel's buffers; the connections stay
        up and verdicts still go out. Checked between reads (tcp/ipc), so one read may queue
        a few more; beyond ``recv_hwm`` waiting handles a message is still answered NACK
        0x84. inproc has no reader to pause: there only ``recv_hwm`` applies. None: no limit.
        """
        if self.runtime is None or self.level != 3 or self.raw.socket_type not in RECEIVING_TYPES:
            raise zmtp.UnsupportedOperation("set_receive_limit is for level-3 PULL and GATHER")
        if limit is not None and (not isinstance(limit, int) or limit < 1):
            raise ValueError(f"the receive limit must be a positive int or None, not {limit!r}")
        self._receive_limit = limit
        handles = self._handles
        self.runtime.receive_gate = None if limit is None else (lambda: len(handles) < limit)
        self.raw.wake_readers()

    async def wait_written(self) -> None:
        """Wait until everything queued on the live connections so far (messages, and the
        QoS commands: ACK, COMP, NACK, CLR) has been handed to the operating system, or its
        connection ended. A level-3 receiver's verdicts are then on their way (its queued
        COMPs are handed to the connections first)."""
        if self.runtime is not None:
            self.runtime.flush_verdicts()
        await self.raw.engine.wait_written()

    def unconfirmed(self) -> int:
        """Level 2-3 receiver: messages answered ACK/COMP to a sender still connected whose
        CLR (the sender's confirmation that it settled them) has not arrived yet."""
        runtime = self.runtime
        if runtime is None or self.level < 2:
            return 0
        runtime.flush_verdicts()  # a COMP given is counted from then on, not from its write
        anchors = {getattr(p.extension_state, "anchor", None) for p in runtime.live}
        return sum(runtime.dedup.size(a) for a in anchors if a is not None)

    async def wait_confirmed(self) -> None:
        """Wait until :meth:`unconfirmed` is 0: every sender still connected has settled what
        we acknowledged (its receipts resolved). Bound it with a timeout: a lost CLR leaves a
        digest behind until ``dedup_ttl``. A graceful ``Worker.stop()`` uses it so that its
        last COMPs have reached the producer before it closes."""
        runtime = self.runtime
        while runtime is not None and self.unconfirmed():
            cleared = anyio.Event()
            runtime.on_clear = cleared.set
            try:
                with anyio.move_on_after(0.05):  # a disconnect ends it too: look again
                    await cleared.wait()
            finally:
                runtime.on_clear = None

    # ------------------------------------------------------------------ dead letters

    def dead_letters(self) -> DeadLetterStream:
        """Every dead letter of this socket from now on, as they happen: ``async for
        letter in sock.dead_letters():``. It listens from this call (keep the stream while
        you need it; every open stream sees every letter), see :mod:`zmtp_qos.letters`."""
        return self._letter_streams.open()

    def _on_dead_letter(self, letter: DeadLetter, receipt: Receipt) -> None:
        if not self._letter_streams.put(letter) and not receipt.observed:
            peer = letter.peer or "no peer"
            log.warning("dead letter (%s) for %s: %s", letter.reason, peer, _preview(letter.parts))

    # ------------------------------------------------------------------ timers

    def _schedule(self, delay: float, action: Callable[[], None]) -> None:
        if self._tg is None:
            raise RuntimeError("use the QoS socket as `async with` (it runs timers)")

        async def later() -> None:
            await anyio.sleep(delay)
            action()

        self._tg.start_soon(later)
