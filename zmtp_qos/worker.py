"""``zmtp_qos.Worker``: a job worker on a QoS 3 PULL (or GATHER), in the style of Sidekiq,
Celery, arq or dramatiq workers, without a broker (docs/worker.md).

Jobs are the messages of level-3 PUSH/SCATTER producers; the worker runs them with bounded
concurrency and answers each with its verdict: COMP when the handler returns, NACK with the
mapped code when it raises (:func:`zmtp_qos.codes.code_for_exception`: the QoS error classes
choose terminal or retryable, anything else is INTERNAL, retryable), NACK TIMEOUT past
``processing_timeout``. The producer's QoS layer retries retryable NACKs and dead-letters the
rest; a job whose worker vanished without a verdict is replayed when the worker comes back
with the same identity, or dead-lettered ``peer_timeout``.

How it is built: one fetch task takes handles from the socket while fewer than ``prefetch``
jobs are taken without a verdict (a semaphore), and hands them to ``concurrency`` handler
tasks through a memory stream whose buffer is ``prefetch`` (so handing over never blocks and
taking a job stays cancel-safe). Neither loop yields to the event loop while a slot and a job
are at hand, so a batch of jobs runs in a row and its verdicts leave in one write (a yield per
job let the writer flush every COMP alone, docs/performance.md). The socket stops reading
its connections while ``prefetch`` received jobs wait to be taken
(:meth:`zmtp_qos.Socket.set_receive_limit`), so the producers' further jobs wait on their side
(and so do their PINGs: docs/worker.md on heartbeats). Synchronous handlers run in anyio's
thread pool behind a :class:`anyio.CapacityLimiter` of ``threads``.

:meth:`Worker.stop` and :meth:`Worker.kill` only set a flag and write one byte to a socket
pair that a control task of :meth:`Worker.run` waits on: that is safe from a signal handler,
another task or another thread, on asyncio and trio alike.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import inspect
import logging
import os
import socket
import time
from collections import deque
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NoReturn

import anyio
import anyio.to_thread
from anyio.abc import TaskStatus
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

from zmtp.options import OPTION_NAMES

from .codes import TIMEOUT, ProcessingError, code_for_exception, code_name
from .config import QoSConfig
from .socket import Handle, Socket

log = logging.getLogger("zmtp_qos.worker")

#: An async job handler: called with the job's parts; its return value is ignored.
JobHandler = Callable[[list[bytes]], Awaitable[Any]]
#: A middleware wraps a job handler in another (logging, metrics, tracing).
Middleware = Callable[[JobHandler], JobHandler]

#: Handler times kept for the p50/p99 (the most recent ones).
TIMING_WINDOW = 4096
#: How long a graceful stop waits for the producers to confirm its last COMPs (CLR).
CONFIRM_TIMEOUT = 5.0

_wait_readable: Callable[[socket.socket], Awaitable[None]] = (
    getattr(anyio, "wait_readable", None) or anyio.wait_socket_readable  # anyio < 4.7
)


@dataclass(frozen=True)
class WorkerStats:
    """A snapshot of a worker's counters (since it was created, over all its runs)."""

    received: int  #: jobs taken from the socket
    completed: int  #: answered COMP
    failed: Mapping[str, int]  #: answered NACK, by code name ("INTERNAL", "BAD_INPUT"...)
    in_flight: int  #: handlers running now
    prefetched: int  #: taken and without a verdict yet (running or waiting for a handler)
    handler_p50: float | None  #: median handler time (s) of the recent jobs, None before any
    handler_p99: float | None


def _is_async(handler: Callable[..., Any]) -> bool:
    if inspect.iscoroutinefunction(handler):
        return True
    call = getattr(handler, "__call__", None)  # noqa: B004 - an async __call__
    return call is not None and inspect.iscoroutinefunction(call)


def _boxed(function: Callable[[list[bytes]], Any], parts: list[bytes]) -> tuple[Any]:
    """Call a synchronous handler (in its thread) and box what it returns, so that a
    coroutine it hands back reaches the event loop to be awaited: trio's thread runner
    refuses a function whose result is a coroutine."""
    return (function(parts),)


def _quantile(sorted_times: list[float], q: float) -> float | None:
    if not sorted_times:
        return None
    index = min(len(sorted_times) - 1, max(0, round(q * (len(sorted_times) - 1))))
    return sorted_times[index]


def _describe(parts: list[bytes]) -> str:
    first = repr(parts[0][:40]) if parts else "[]"
    return first + (f" +{len(parts) - 1} parts" if len(parts) > 1 else "")


class Worker:
    """Runs ``handler`` on every job received by a QoS 3 PULL (or GATHER) socket.

    ``handler(parts)`` is an async function or a plain one (run in a thread); it completes
    the job by returning and fails it by raising. See docs/worker.md for the knobs, the
    lifecycle and what is guaranteed.
    """

    def __init__(
        self,
        handler: Callable[[list[bytes]], Any],
        *,
        connect: Sequence[str] = (),
        bind: Sequence[str] = (),
        socket_type: str = "PULL",
        concurrency: int = 10,
        threads: int | None = None,
        prefetch: int | None = None,
        processing_timeout: float | None = None,
        middleware: Sequence[Middleware] = (),
        identity: bytes | str | None = None,
        config: QoSConfig | None = None,
        options: Mapping[str, Any] | None = None,
        confirm_timeout: float = CONFIRM_TIMEOUT,
        **unexpected: NoReturn,
    ) -> None:
        # ``**unexpected`` only to answer a misplaced keyword with what to write instead
        # (NoReturn: a type checker still refuses every one of them).
        if unexpected:
            raise TypeError(_unexpected_keyword(next(iter(unexpected)), unexpected))
        if not callable(handler):
            raise TypeError(
                f"the handler must be a function of the job's parts, not {type(handler).__name__}"
            )
        kind = socket_type.upper()
        if kind not in ("PULL", "GATHER"):
            raise ValueError(f"a worker receives on PULL or GATHER, not {socket_type!r}")
        if isinstance(connect, str) or isinstance(bind, str):
            raise TypeError("connect and bind take a list of endpoints")
        if not connect and not bind:
            raise ValueError("a worker needs an endpoint to connect to or bind")
        for name, value in (("concurrency", concurrency), ("threads", threads)):
            if value is not None and (not isinstance(value, int) or value < 1):
                raise ValueError(f"{name} must be a positive int, not {value!r}")
        if prefetch is not None and (not isinstance(prefetch, int) or prefetch < 1):
            raise ValueError(f"prefetch must be a positive int, not {prefetch!r}")
        config = config or QoSConfig()
        if processing_timeout is None:
            processing_timeout = config.processing_timeout
        # The worker times the handler itself (from its start, and it cancels it); the
        # socket's own timer would start at delivery and leave the handler running.
        self.config = dataclasses.replace(config, processing_timeout=None)
        if processing_timeout is not None and not processing_timeout > 0:
            raise ValueError(f"processing_timeout must be positive, not {processing_timeout!r}")
        self.socket_type = kind
        self.connect = list(connect)
        self.bind = list(bind)
        self.concurrency = concurrency
        self.threads = threads if threads is not None else concurrency
        self.prefetch = prefetch if prefetch is not None else 2 * concurrency
        self.processing_timeout = processing_timeout
        self.confirm_timeout = confirm_timeout
        if identity is None:
            identity = b"worker-" + os.urandom(6).hex().encode()  # stable across runs
        self.identity = identity.encode() if isinstance(identity, str) else identity
        self.options = dict(options or {})
        self.is_async = _is_async(handler)
        self._user_handler = handler
        self._middleware = list(middleware)
        #: The socket of the current run (None between runs): for diagnostics and tests.
        self.socket: Socket | None = None
        #: The endpoints the current run bound (resolved, e.g. the real port).
        self.endpoints: list[str] = []
        self._received = 0
        self._completed = 0
        self._failed: dict[str, int] = {}
        self._in_flight = 0
        self._prefetched = 0
        self._times: deque[float] = deque(maxlen=TIMING_WINDOW)
        self._running = False
        self._stop_requested = False
        self._kill_requested = False
        self._killed = False
        self._stopping = False
        self._abandoned = 0  #: taken without a verdict when the last kill came
        self._wake: socket.socket | None = None
        self._seq = 0
        self._debug = False  #: DEBUG logging on, checked once per run (not per job)

    # ------------------------------------------------------------------ counters

    @property
    def stats(self) -> WorkerStats:
        times = sorted(self._times)
        return WorkerStats(
            received=self._received,
            completed=self._completed,
            failed=dict(self._failed),
            in_flight=self._in_flight,
            prefetched=self._prefetched,
            handler_p50=_quantile(times, 0.5),
            handler_p99=_quantile(times, 0.99),
        )

    @property
    def running(self) -> bool:
        """A run is in progress (from the start of :meth:`run` until it returns)."""
        return self._running

    @property
    def stopping(self) -> bool:
        """The current run acted on :meth:`stop`: it takes no new job and is draining."""
        return self._stopping

    # ------------------------------------------------------------------ control

    def stop(self) -> None:
        """Graceful stop: take no new job, finish the taken ones, send their verdicts and
        wait until they are on the wire (and confirmed by the producers, within
        ``confirm_timeout``), then close. Safe from a signal handler, another task or
        thread; :meth:`run` returns when it is done. Before :meth:`run`, it makes the next
        run return at once."""
        self._stop_requested = True
        self._poke()

    def kill(self) -> None:
        """Immediate stop: close now (linger 0). Jobs in flight get no verdict, so their
        producers redeliver them (to this identity when it comes back, else they are
        dead-lettered ``peer_timeout``). Handlers are cancelled; a synchronous one keeps
        running in its thread, its result ignored. Safe from anywhere, as :meth:`stop`."""
        self._kill_requested = True
        self._poke()

    def _poke(self) -> None:
        wake = self._wake
        if wake is not None:
            with contextlib.suppress(OSError):  # full (already poked) or closed (run ended)
                wake.send(b"\0")

    # ------------------------------------------------------------------ run

    async def run(self, *, task_status: TaskStatus[list[str]] = anyio.TASK_STATUS_IGNORED) -> None:
        """Serve jobs until :meth:`stop` or :meth:`kill`; may be called again afterwards.

        ``await task_group.start(worker.run)`` returns once the socket is bound and its
        connects are started (connections are made in the background), with the endpoints
        it bound (resolved).
        """
        if self._running:
            raise RuntimeError("this worker is already running")
        self._running = True
        self._killed = False
        reader, writer = socket.socketpair()
        reader.setblocking(False)
        writer.setblocking(False)
        self._wake = writer
        try:
            options = {"linger": 30.0, **self.options, "identity": self.identity}
            async with Socket(self.socket_type, qos=3, config=self.config, **options) as sock:
                self.socket = sock
                sock.set_receive_limit(self.prefetch)
                self.endpoints = [await sock.bind(endpoint) for endpoint in self.bind]
                for endpoint in self.connect:
                    await sock.connect(endpoint)
                self._debug = log.isEnabledFor(logging.DEBUG)
                self._log_start()
                task_status.started(list(self.endpoints))
                await self._serve(sock, reader)
                if self._killed:
                    await sock.raw.close(linger=0)
            if self._killed:
                log.warning(
                    "killed: %d job(s) in flight got no verdict; their producers redeliver them",
                    self._abandoned,
                )
            else:
                self._log_stopped()
        finally:
            self._wake = None
            writer.close()
            reader.close()
            self.socket = None
            self._prefetched = self._in_flight = 0
            self._stop_requested = self._kill_requested = self._stopping = False
            self._running = False

    async def _serve(self, sock: Socket, wake: socket.socket) -> None:
        """Fetch and run jobs until stopped; on a graceful stop, drain and confirm."""
        async with anyio.create_task_group() as outer:
            fetching = anyio.CancelScope()
            outer.start_soon(self._control, wake, fetching, outer.cancel_scope)
            await self._work(sock, fetching)
            if not self._killed:
                await self._confirm(sock)
            outer.cancel_scope.cancel()

    async def _control(
        self, wake: socket.socket, fetching: anyio.CancelScope, everything: anyio.CancelScope
    ) -> None:
        """Act on stop()/kill(): they poke ``wake`` (signal-safe), this runs in the loop."""
        while True:
            if self._kill_requested:
                self._killed = True
                self._abandoned = self._prefetched
                everything.cancel()
                return
            if self._stop_requested and not self._stopping:
                self._stopping = True
                log.info("stopping: no new jobs; %d job(s) taken to finish", self._prefetched)
                fetching.cancel()
            await _wait_readable(wake)
            with contextlib.suppress(BlockingIOError):
                while wake.recv(64):
                    pass

    async def _work(self, sock: Socket, fetching: anyio.CancelScope) -> None:
        slots = anyio.Semaphore(self.prefetch)
        send, receive = anyio.create_memory_object_stream[Handle](self.prefetch)
        handler = self._wrapped_handler()
        async with anyio.create_task_group() as tg:
            tg.start_soon(self._fetch, sock, send, slots, fetching)
            async with receive:
                for _ in range(self.concurrency):
                    tg.start_soon(self._handle_jobs, receive.clone(), handler, slots)

    async def _fetch(
        self,
        sock: Socket,
        send: MemoryObjectSendStream[Handle],
        slots: anyio.Semaphore,
        fetching: anyio.CancelScope,
    ) -> None:
        """Take jobs while fewer than ``prefetch`` are without a verdict. Both awaits are
        cancel-safe (a cancelled take consumes nothing), and the hand-over never blocks (the
        stream's buffer is ``prefetch``), so a stop never strands a taken job."""
        recv_handle = sock.recv_handle
        async with send:
            with fetching:
                while True:
                    # Without a yield while a slot is free and jobs are queued: the handlers
                    # then run a batch of jobs in a row, and their verdicts leave in one write
                    # instead of one write per job (a checkpoint per job let the writer task
                    # flush every COMP alone: 3x slower, docs/performance.md).
                    try:
                        slots.acquire_nowait()
                    except anyio.WouldBlock:
                        await slots.acquire()
                    try:
                        handle = await recv_handle()  # no yield when a handle is queued
                    except BaseException:
                        slots.release()
                        raise
                    self._received += 1
                    self._prefetched += 1
                    send.send_nowait(handle)

    async def _handle_jobs(
        self,
        jobs: MemoryObjectReceiveStream[Handle],
        handler: JobHandler,
        slots: anyio.Semaphore,
    ) -> None:
        run_job = self._run_job
        async with jobs:
            while True:
                try:
                    handle = jobs.receive_nowait()  # no checkpoint while jobs are waiting
                except anyio.WouldBlock:
                    try:
                        handle = await jobs.receive()
                    except anyio.EndOfStream:
                        return
                except anyio.EndOfStream:
                    return
                try:
                    await run_job(handle, handler)
                finally:
                    self._prefetched -= 1
                    slots.release()

    async def _run_job(self, handle: Handle, handler: JobHandler) -> None:
        self._seq += 1
        debug = self._debug
        if debug:
            log.debug("%s: start", self._job_name(handle, self._seq))
        seq = self._seq
        self._in_flight += 1
        started = time.perf_counter()
        try:
            timeout = self.processing_timeout
            if timeout is None:
                await handler(handle.parts)
            else:
                with anyio.move_on_after(timeout) as deadline:
                    await handler(handle.parts)
                if deadline.cancelled_caught:
                    raise _Expired(timeout)
        except Exception as exc:
            elapsed = time.perf_counter() - started
            self._times.append(elapsed)
            self._fail(handle, self._job_name(handle, seq), exc, elapsed)
        else:
            elapsed = time.perf_counter() - started
            self._times.append(elapsed)
            if not self._killed:
                handle.complete()
                self._completed += 1
            if debug:
                log.debug("%s: done in %.3f s", self._job_name(handle, seq), elapsed)
        finally:
            self._in_flight -= 1

    @staticmethod
    def _job_name(handle: Handle, seq: int) -> str:
        """How the log names a job (built only when logged: it costs a repr per job)."""
        return f"job #{seq} {_describe(handle.parts)}"

    def _fail(self, handle: Handle, job: str, exc: Exception, elapsed: float) -> None:
        if isinstance(exc, _Expired):
            code, text = TIMEOUT, "processing_timeout"
        else:
            code, text = code_for_exception(exc), str(exc) or type(exc).__name__
        if self._killed:
            return
        handle.reject(code, text)
        name = code_name(code)
        self._failed[name] = self._failed.get(name, 0) + 1
        verdict = f"NACK {name} ({'retryable' if code & 0x80 else 'terminal'})"
        # Expected failures (the QoS error classes, the timeout) without a traceback.
        expected = isinstance(exc, (ProcessingError, _Expired))
        log.log(
            logging.WARNING if expected else logging.ERROR,
            "%s: fail after %.3f s: %s: %s -> %s",
            job,
            elapsed,
            "timeout" if isinstance(exc, _Expired) else type(exc).__name__,
            exc,
            verdict,
            exc_info=None if expected else exc,
        )

    async def _confirm(self, sock: Socket) -> None:
        """Graceful stop, handlers done: the verdicts are given; read again (the receive
        limit would keep the producers' CLRs out), wait until the verdicts are handed to the
        OS and the producers confirmed the COMPs, within ``confirm_timeout``."""
        sock.set_receive_limit(None)
        with anyio.move_on_after(self.confirm_timeout):
            await sock.wait_written()
            await sock.wait_confirmed()
            return
        log.warning(
            "stop: %d COMP(s) not confirmed by their producers within %g s (closing anyway)",
            sock.unconfirmed(),
            self.confirm_timeout,
        )

    # ------------------------------------------------------------------ handler

    def _wrapped_handler(self) -> JobHandler:
        """The handler as an async callable (a sync one through the thread limiter), wrapped
        by the middleware: the first in the list is the outermost (it runs first)."""
        user = self._user_handler
        if self.is_async:
            inner: JobHandler = user
        else:
            limiter = anyio.CapacityLimiter(self.threads)

            async def inner(parts: list[bytes]) -> Any:
                call = functools.partial(_boxed, user, parts)  # trio refuses a coroutine
                (result,) = await anyio.to_thread.run_sync(
                    call, limiter=limiter, abandon_on_cancel=True
                )
                if inspect.isawaitable(result):
                    # A plain function that hands back a coroutine (``lambda parts:
                    # process(parts)`` over an async ``process``): the job is that
                    # coroutine; completing it unawaited would COMP work never done.
                    result = await result
                return result

        for wrap in reversed(self._middleware):
            inner = wrap(inner)
        return inner

    # ------------------------------------------------------------------ logging

    def _log_start(self) -> None:
        where = [f"connect {e}" for e in self.connect] + [f"bind {e}" for e in self.endpoints]
        log.info(
            "worker %s starting: concurrency=%d threads=%s prefetch=%d processing_timeout=%s "
            "(%s handler, %s %s)",
            self.identity.decode(errors="replace"),
            self.concurrency,
            self.threads if not self.is_async else "-",
            self.prefetch,
            f"{self.processing_timeout:g}s" if self.processing_timeout else "none",
            "async" if self.is_async else "sync",
            self.socket_type,
            ", ".join(where),
        )

    def _log_stopped(self) -> None:
        failed = sum(self._failed.values())
        log.info(
            "stopped: received %d, completed %d, failed %d%s",
            self._received,
            self._completed,
            failed,
            f" ({', '.join(f'{k} {v}' for k, v in sorted(self._failed.items()))})"
            if failed
            else "",
        )


def _unexpected_keyword(name: str, given: Mapping[str, object]) -> str:
    """Python's own message for an unknown keyword, plus where a zmtp socket option goes;
    ``linger`` also says what a worker's stop and kill already do (docs/worker.md)."""
    message = f"Worker() got an unexpected keyword argument {name!r}"
    if name == "linger":
        return (
            f"{message}: a worker's stop() finishes the jobs it took and waits (up to "
            "confirm_timeout) until their verdicts are written and confirmed, and kill() "
            "closes at once (linger 0); to bound a stop in time, call kill() if run() has "
            "not returned by then. The socket's own close linger (30 s, for what a stop "
            f"left unwritten) is options={{'linger': {given[name]!r}}}"
        )
    if name in OPTION_NAMES:
        return f"{message}: zmtp socket options go in options={{{name!r}: {given[name]!r}}}"
    return message


class _Expired(Exception):
    """The handler ran past ``processing_timeout`` (answered NACK TIMEOUT)."""

    def __init__(self, timeout: float) -> None:
        super().__init__(f"ran past processing_timeout ({timeout:g} s)")


__all__ = ["JobHandler", "Middleware", "Worker", "WorkerStats"]
