"""``zmtp_qos.Producer``: the sending side of a job queue without a broker.

A level-3 PUSH (or SCATTER) whose :meth:`Producer.submit` returns a :class:`JobReceipt`, which
resolves once a worker has *processed* the job (COMP) or the job is given up on (a
:class:`~zmtp_qos.DeadLetter`). Level 3 already re-sends retryable NACKs to the same worker
(docs/qos-protocol.md §5.1) and pins every job to the worker it went to, so a worker that dies
takes its jobs with it: after ``dead_letter_timeout`` they are dead-lettered ``peer_timeout``.
The producer's one addition is to *resubmit* those jobs to the workers still connected, a
bounded number of times: the equivalent of a broker's visibility timeout, so a job survives
the loss of its worker. Terminal NACKs, exhausted retries and jobs still pending at close are
final: they are never resubmitted and surface as dead letters (the receipt, the
:meth:`Producer.dead_letters` stream, a warning in the log when nobody looks).

A resubmitted job may run twice: the dead worker may have run it and died before its COMP got
out. Across a worker's death the job is at-least-once, as with any broker's visibility timeout;
make handlers idempotent, or pass ``resubmit_on_peer_timeout=False``.

The receipts are followed with :meth:`~zmtp_qos.Receipt.add_done_callback`, not a task per
job; a task runs only for a resubmission, which is rare.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from types import TracebackType
from typing import Any

import anyio
from anyio.abc import TaskGroup

import zmtp
from zmtp.socket import as_message

from .config import QoSConfig
from .letters import DeadLetterStream, DeadLetterStreams
from .results import (
    PEER_TIMEOUT,
    SOCKET_CLOSED,
    DeadLetter,
    DeadLetterError,
    Delivered,
    Outcome,
    Receipt,
)
from .socket import Socket

log = logging.getLogger("zmtp_qos.producer")

#: ``policy(letter, resubmissions_made) -> bool``: whether to resubmit a job that was
#: dead-lettered ``peer_timeout`` (only those are ever offered to it).
ResubmitPolicy = Callable[[DeadLetter, int], bool]

#: What :meth:`Producer.submit` accepts: one part, or the parts of a multipart job; each part
#: as ``zmtp.Socket.send`` takes it (bytes-like, or str sent as UTF-8).
JobParts = bytes | bytearray | memoryview | str | Sequence[bytes | bytearray | memoryview | str]

PRODUCER_TYPES = frozenset({"PUSH", "SCATTER"})


class JobFailed(DeadLetterError):
    """Raised by :meth:`JobReceipt.result` for a job that ended as a dead letter
    (``.letter``: its :class:`~zmtp_qos.DeadLetter`, with the NACK in ``.letter.error``)."""

    def __init__(self, letter: DeadLetter, attempts: int) -> None:
        super().__init__(letter)
        detail = f": {letter.error}" if letter.error is not None else ""
        self.args = (
            f"job {letter.parts[:1]!r} failed ({letter.reason}, peer {letter.peer or '?'}, "
            f"submitted {attempts} time(s)){detail}",
        )
        self.attempts = attempts


class JobReceipt(Receipt):
    """The fate of one job across its resubmissions; ``await receipt`` gives its outcome.

    It resolves once: :class:`~zmtp_qos.Delivered` (a worker answered COMP; ``peer`` is that
    worker) or the final :class:`~zmtp_qos.DeadLetter`. A dead letter ``peer_timeout`` that
    led to a resubmission does not resolve it; it is kept in :attr:`resubmissions`.
    """

    __slots__ = ("attempts", "parts", "resubmissions")

    def __init__(self, parts: list[bytes]) -> None:
        super().__init__()
        self.parts = parts  #: the job as submitted
        #: submissions so far: 1, plus one per resubmission (a worker's retries of a
        #: retryable NACK are the QoS layer's re-sends of one submission: not counted)
        self.attempts = 0
        #: the ``peer_timeout`` dead letters that were resubmitted, oldest first
        self.resubmissions: list[DeadLetter] = []

    async def result(self) -> Delivered:
        """Wait for the outcome: :class:`~zmtp_qos.Delivered`, or raise :class:`JobFailed`
        (like a task queue's ``result.get()``: errors as exceptions)."""
        outcome = await self.wait()
        if isinstance(outcome, DeadLetter):
            raise JobFailed(outcome, self.attempts)
        return outcome


@dataclass(frozen=True)
class ProducerStats:
    """A snapshot of a producer's counters (:attr:`Producer.stats`)."""

    submitted: int  #: jobs accepted by :meth:`Producer.submit`
    delivered: int  #: jobs a worker completed (COMP)
    dead_lettered: int  #: jobs given up on (final dead letters)
    resubmitted: int  #: resubmissions made after ``peer_timeout`` (a job may count twice)
    outstanding: int  #: submitted jobs without an outcome yet
    dead_letters_by_reason: Mapping[str, int]  #: final dead letters per reason


class Producer:
    """A level-3 PUSH (or SCATTER) that submits jobs and follows them to an outcome.

    ``resubmit_on_peer_timeout``: ``True`` (the default) resubmits a job dead-lettered
    ``peer_timeout`` (its worker died and did not come back within the config's
    ``dead_letter_timeout``) up to ``max_resubmits`` times; ``False`` never does; a
    :data:`ResubmitPolicy` callable decides per dead letter, still within ``max_resubmits``.
    Other reasons (``terminal_nack``, ``retry_exhausted``, ``socket_closed``) are never
    resubmitted. ``config`` is the level-3 :class:`~zmtp_qos.QoSConfig` (``dead_letter_timeout``
    is the "visibility timeout"; ``max_retries`` and the back-off govern retryable NACKs);
    other keywords are :class:`zmtp.Options` of the socket (``send_hwm`` bounds the jobs in
    flight: ``submit`` waits when it is reached).

    Use it as ``async with``; :meth:`drain` waits for every outstanding job, resubmissions
    included. Leaving the block closes the socket with its ``linger`` and dead-letters
    ``socket_closed`` whatever is still pending.
    """

    def __init__(
        self,
        socket_type: zmtp.SocketType | str = zmtp.PUSH,
        *,
        config: QoSConfig | None = None,
        resubmit_on_peer_timeout: bool | ResubmitPolicy = True,
        max_resubmits: int = 3,
        **options: Any,
    ) -> None:
        kind = str(getattr(socket_type, "value", socket_type)).upper()
        if kind not in PRODUCER_TYPES:
            raise ValueError(f"a Producer is a PUSH or a SCATTER, not {kind}")
        if "qos" in options:
            raise TypeError(
                "a Producer is always QoS 3 (its receipts resolve on COMP): drop qos=, or use "
                "zmtp_qos.Socket(zmtp.PUSH, qos=...) for another level"
            )
        if not isinstance(max_resubmits, int) or max_resubmits < 0:
            raise ValueError(f"max_resubmits must be a non-negative int, not {max_resubmits!r}")
        self.socket = Socket(socket_type, qos=3, config=config, **options)
        self.max_resubmits = max_resubmits
        self._policy: ResubmitPolicy | None
        if resubmit_on_peer_timeout is True:
            self._policy = _always
        elif resubmit_on_peer_timeout is False:
            self._policy = None
        else:
            self._policy = resubmit_on_peer_timeout
        self._tg: TaskGroup | None = None
        #: jobs dead-lettered peer_timeout whose resubmission is not sent yet
        self._resubmitting: set[JobReceipt] = set()
        self._closing = False
        self._submitted = 0
        self._delivered = 0
        self._resubmitted = 0
        self._outstanding = 0
        self._by_reason: Counter[str] = Counter()
        self._drained: anyio.Event | None = None
        self._letter_streams = DeadLetterStreams()

    # ------------------------------------------------------------------ lifecycle

    async def __aenter__(self) -> Producer:
        await self.socket.__aenter__()
        self._cm = anyio.create_task_group()
        self._tg = await self._cm.__aenter__()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._closing = True  # from here on a dead letter is final
        try:
            if self._tg is not None:
                self._tg.cancel_scope.cancel()  # resubmissions in progress end socket_closed
                await self._cm.__aexit__(None, None, None)
                self._tg = None
        finally:
            # A safety net: a resubmission task ends its job itself, even when cancelled
            # before its first step; this catches one that never ran at all.
            for job in list(self._resubmitting):
                self._finish(job, DeadLetter(list(job.parts), SOCKET_CLOSED, ""))
            self._resubmitting.clear()
            try:
                await self.socket.__aexit__(exc_type, exc, tb)
            finally:
                self._letter_streams.end_all()

    async def bind(self, endpoint: str) -> str:
        """Bind the socket (workers connect); returns the resolved endpoint."""
        return await self.socket.bind(endpoint)

    async def connect(self, endpoint: str) -> None:
        """Connect to a worker that binds."""
        await self.socket.connect(endpoint)

    def monitor(self) -> zmtp.Monitor:
        """The socket's monitor (QoS events included, see docs/qos.md)."""
        return self.socket.monitor()

    # ------------------------------------------------------------------ submitting

    async def submit(self, parts: JobParts) -> JobReceipt:
        """Send a job (one part, or a list of parts; parts as ``zmtp.Socket.send`` takes them)
        and return its receipt.

        Waits while ``send_hwm`` jobs are in flight (up to ``send_timeout``, then raises
        ``TimeoutError``); a job whose send fails is not counted and has no receipt.
        Byte-identical jobs in flight at once are one job to level 3's de-duplication
        (docs/qos.md): give each job something unique, such as an id part.
        """
        if self._tg is None:
            raise RuntimeError("use the Producer as `async with` (it runs resubmissions)")
        if isinstance(parts, bytes | bytearray | memoryview | str):
            message = as_message((parts,))
        else:
            message = as_message(parts)  # converted and refused as zmtp's send_multipart does
        job = JobReceipt(message)
        self._outstanding += 1
        try:
            await self._send(job)
        except BaseException:
            self._outstanding -= 1
            self._wake_drain()
            raise
        self._submitted += 1
        return job

    async def submit_many(self, jobs: Iterable[JobParts]) -> list[JobReceipt]:
        """:meth:`submit` each job in turn; their receipts, in order."""
        return [await self.submit(parts) for parts in jobs]

    async def _send(self, job: JobReceipt) -> None:
        inner = await self.socket.send_multipart(list(job.parts))
        assert inner is not None  # level 3 always returns a receipt
        inner.observed = True  # the producer reports it, not the socket
        job.attempts += 1
        inner.add_done_callback(lambda outcome: self._on_outcome(job, outcome))

    def _on_outcome(self, job: JobReceipt, outcome: Outcome) -> None:
        """A send of ``job`` settled (runs inside the QoS layer: must not block)."""
        if isinstance(outcome, DeadLetter) and self._resubmit(job, outcome):
            job.resubmissions.append(outcome)
            self._resubmitted += 1
            self._resubmitting.add(job)
            assert self._tg is not None
            self._tg.start_soon(self._resend, job, outcome)
            return
        self._finish(job, outcome)

    def _resubmit(self, job: JobReceipt, letter: DeadLetter) -> bool:
        if letter.reason != PEER_TIMEOUT or self._closing or self._tg is None:
            return False
        made = len(job.resubmissions)
        if self._policy is None or made >= self.max_resubmits:
            return False
        try:
            return bool(self._policy(letter, made))
        except Exception:  # it runs inside the QoS layer: a broken policy must not break it
            log.exception("the resubmit policy raised; the job is not resubmitted")
            return False

    async def _resend(self, job: JobReceipt, letter: DeadLetter) -> None:
        log.info(
            "resubmitting a job dead-lettered %s by %s (resubmission %d of at most %d)",
            letter.reason,
            letter.peer or "?",
            len(job.resubmissions),
            self.max_resubmits,
        )
        try:
            await self._send(job)
            self._resubmitting.discard(job)  # its new receipt follows it from here
        except Exception as exc:  # the socket is closing (or send_timeout): final
            log.debug("resubmission failed: %r", exc)
            self._finish(job, DeadLetter(list(job.parts), SOCKET_CLOSED, letter.peer))
        except BaseException:  # cancelled: the producer is closing
            self._finish(job, DeadLetter(list(job.parts), SOCKET_CLOSED, letter.peer))
            raise

    def _finish(self, job: JobReceipt, outcome: Outcome) -> None:
        self._resubmitting.discard(job)
        if not job.resolve(outcome):
            return
        self._outstanding -= 1
        if isinstance(outcome, Delivered):
            self._delivered += 1
        else:
            self._by_reason[outcome.reason] += 1
            if not self._letter_streams.put(outcome) and not job.observed:
                log.warning(
                    "job dead-lettered (%s, peer %s, submitted %d time(s)%s): %r",
                    outcome.reason,
                    outcome.peer or "?",
                    job.attempts,
                    f", {outcome.error}" if outcome.error is not None else "",
                    job.parts[:1],
                )
        self._wake_drain()

    def _wake_drain(self) -> None:
        if self._outstanding == 0 and self._drained is not None:
            self._drained.set()
            self._drained = None

    # ------------------------------------------------------------------ waiting

    async def drain(self) -> None:
        """Wait until every submitted job has its outcome (resubmissions included).

        It does not time out by itself: wrap it in ``anyio.fail_after`` (a job whose worker
        died needs ``dead_letter_timeout`` per resubmission).
        """
        while self._outstanding:
            if self._drained is None:
                self._drained = anyio.Event()
            await self._drained.wait()

    def dead_letters(self) -> DeadLetterStream:
        """Every final dead letter from now on, as it happens (never the resubmitted ones):
        ``async for letter in producer.dead_letters():``.

        It listens from this call; every open stream sees every letter, and while one is
        open dead letters are not logged (see :mod:`zmtp_qos.letters`).
        """
        return self._letter_streams.open()

    # ------------------------------------------------------------------ counters

    @property
    def outstanding(self) -> int:
        """Submitted jobs without an outcome yet (in flight, retrying or being resubmitted)."""
        return self._outstanding

    @property
    def stats(self) -> ProducerStats:
        """The counters, as a snapshot."""
        return ProducerStats(
            submitted=self._submitted,
            delivered=self._delivered,
            dead_lettered=sum(self._by_reason.values()),
            resubmitted=self._resubmitted,
            outstanding=self._outstanding,
            dead_letters_by_reason=dict(self._by_reason),
        )


def _always(letter: DeadLetter, made: int) -> bool:
    """The default policy: every ``peer_timeout`` letter, within ``max_resubmits``."""
    return True
