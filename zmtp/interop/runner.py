"""Runs rows: each under a timeout, on one event loop per case and backend, behind a watchdog
that ends the process if a row cannot even be cancelled; prints the table."""

from __future__ import annotations

import datetime
import importlib.util
import itertools
import os
import shutil
import signal
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import IO

import anyio

from .common import (
    BACKENDS,
    DEFAULT_COUNT,
    DEFAULT_TIMEOUT,
    TRANSPORTS,
    InteropUnavailable,
    describe_exception,
    import_zmq,
    leaf_exception,
    one_line,
)
from .context import CaseContext
from .libzmq import Libzmq
from .registry import REGISTRY, Case, Registry

#: Extra time a timed-out row gets to unwind before the watchdog ends the process.
WATCHDOG_GRACE = 15.0


@dataclass
class RunInfo:
    """What a report says about a run as a whole (see :mod:`zmtp.interop.report`)."""

    zmtp: str
    libzmq: str
    pyzmq: str
    backends: list[str]
    transports: list[str]
    pattern: str
    started: str  #: UTC, ISO 8601
    seconds: float = 0.0
    complete: bool = True  #: False if the run ended early (a row hung, or Ctrl-C)
    interrupted: bool = False  #: ended early by Ctrl-C (SIGINT) or SIGTERM


class Progress:
    """A one-line status on a terminal ("[12/304] asyncio REQ->ROUTER tcp zmtp-binds"),
    rewritten in place and cleared before each table line, so the table stays clean."""

    def __init__(self, stream: IO[str], total: int) -> None:
        self.stream = stream
        self.total = total
        self.done = 0
        self.shown = False

    def show(self, backend: str, case: Case) -> None:
        text = f"[{self.done + 1}/{self.total}] {backend} {case.label}"
        self.stream.write("\r\x1b[K" + text[:200])
        self.stream.flush()
        self.shown = True

    def clear(self) -> None:
        if self.shown:
            self.stream.write("\r\x1b[K")
            self.stream.flush()
            self.shown = False


@dataclass
class Result:
    case: Case
    backend: str
    status: str  #: "PASS", "FAIL", "SKIP"
    seconds: float
    detail: str


#: Called once when a run ends (also when the watchdog ends it), with every result so far.
OnFinish = Callable[[RunInfo, Sequence[Result]], None]


_COLUMNS = ("BACKEND", "CASE", "TRANSPORT", "FLOW", "BINDS", "RESULT", "TIME", "DETAIL")


@dataclass
class _Table:
    out: IO[str]
    widths: list[int] = field(default_factory=list)
    before_print: Callable[[], None] | None = None  #: e.g. clear a progress line first

    def setup(self, cases: Sequence[Case], backends: Sequence[str]) -> None:
        values = [
            list(backends),
            [c.name for c in cases],
            [c.transport for c in cases],
            [c.flow for c in cases],
            [c.binds for c in cases],
            ["RESULT"],
            ["999.99s"],
        ]
        self.widths = [
            max([len(h), *(len(v) for v in col)])
            for h, col in zip(_COLUMNS[:-1], values, strict=True)
        ]

    def _line(self, cells: Sequence[str]) -> str:
        parts = []
        for i, cell in enumerate(cells[:-1]):
            parts.append(cell.rjust(self.widths[i]) if i == 6 else cell.ljust(self.widths[i]))
        return ("  ".join(parts) + "  " + cells[-1]).rstrip()

    def header(self) -> None:
        self.print(self._line(_COLUMNS))
        self.print(self._line(["-" * w for w in self.widths] + ["-" * 6]))

    def row(self, result: Result) -> None:
        c = result.case
        cells = [
            result.backend,
            c.name,
            c.transport,
            c.flow,
            c.binds,
            result.status,
            f"{result.seconds:.2f}s",
            result.detail,
        ]
        self.print(self._line(cells))

    def print(self, text: str) -> None:
        if self.before_print is not None:
            self.before_print()
        self.out.write(text + "\n")
        self.out.flush()


class _Watchdog:
    """Ends the process if a timed-out case cannot even be cancelled (e.g. a shielded hang)."""

    def __init__(self, seconds: float, on_fire: Callable[[], None]) -> None:
        self._timer = threading.Timer(seconds, on_fire)
        self._timer.daemon = True

    def __enter__(self) -> _Watchdog:
        self._timer.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._timer.cancel()


async def run_case(
    case: Case,
    backend: str,
    *,
    workdir: str,
    timeout: float = DEFAULT_TIMEOUT,
    count: int = DEFAULT_COUNT,
    log: Callable[[str], None] | None = None,
) -> Result:
    """Run one row on the current event loop; never raises (except on cancellation)."""
    missing = case.missing()
    if missing:
        return Result(case, backend, "SKIP", 0.0, f"zmtp has no {', '.join(missing)} socket yet")
    seconds = case.timeout or timeout
    start = time.perf_counter()
    context: CaseContext | None = None
    try:
        with Libzmq(seconds / 2) as libzmq:
            context = CaseContext(case, backend, libzmq, workdir, seconds / 2, count, log)
            with anyio.fail_after(seconds):
                detail = await case.func(context)
        status, text = "PASS", detail or ""
    except TimeoutError as exc:
        leaf = leaf_exception(exc)
        step = context.current_step if context is not None else "starting"
        if str(leaf):
            status, text = "FAIL", describe_exception(leaf)
        else:
            elapsed = time.perf_counter() - start
            status, text = "FAIL", one_line(f"timed out after {elapsed:.1f}s while: {step}")
    except Exception as exc:
        status, text = "FAIL", describe_exception(exc)
    return Result(case, backend, status, time.perf_counter() - start, text)


def run_check(
    registry: Registry = REGISTRY,
    *,
    backends: Sequence[str] = BACKENDS,
    transports: Sequence[str] = TRANSPORTS,
    pattern: str = "",
    timeout: float = DEFAULT_TIMEOUT,
    count: int = DEFAULT_COUNT,
    verbose: bool = False,
    out: IO[str] | None = None,
    progress: IO[str] | None = None,
    on_finish: Sequence[OnFinish] = (),
    interruptible: bool = False,
) -> int:
    """Run the selected rows on each backend, print the table; returns the exit status.

    ``progress``: a terminal to show a one-line status on while rows run. ``on_finish``:
    called with the run's :class:`RunInfo` and results when it ends (reports are written so).
    ``interruptible`` (the command line; main thread only): SIGINT or SIGTERM cancels the
    row running, prints the summary of the rows done, still calls ``on_finish`` (the report
    says it is incomplete) and returns 130.
    """
    out = out if out is not None else sys.stdout
    zmq = import_zmq()
    for backend in backends:
        if backend not in BACKENDS:
            raise InteropUnavailable(f"unknown backend {backend!r} (asyncio, trio)")
        if backend == "trio" and importlib.util.find_spec("trio") is None:
            raise InteropUnavailable(
                "trio is not installed: pip install trio, or --backend asyncio"
            )
    cases = registry.select(transports, pattern)
    table = _Table(out)
    from .. import __version__

    table.print(
        f"zmtp {__version__} interop check against libzmq {zmq.zmq_version()} "
        f"(pyzmq {zmq.__version__}): backends {', '.join(backends)}; "
        f"transports {', '.join(transports)}"
    )
    if not cases:
        table.print(f"no cases match transports {list(transports)} and {pattern!r}")
        return 1
    table.setup(cases, backends)
    status_line = Progress(progress, len(cases) * len(backends)) if progress else None
    if status_line is not None:
        table.before_print = status_line.clear
    results: list[Result] = []
    started = time.perf_counter()
    info = RunInfo(
        zmtp=__version__,
        libzmq=str(zmq.zmq_version()),
        pyzmq=str(zmq.__version__),
        backends=list(backends),
        transports=list(transports),
        pattern=pattern,
        started=datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
    )
    workdir = tempfile.mkdtemp(prefix="zmtp-interop-")

    def summary(complete: bool = True) -> int:
        failed = sum(r.status == "FAIL" for r in results)
        passed = sum(r.status == "PASS" for r in results)
        skipped = sum(r.status == "SKIP" for r in results)
        verdict = "INTERRUPTED" if info.interrupted else "FAILED" if failed else "OK"
        table.print(
            f"{verdict}: {len(results)} cases, {passed} passed, {failed} failed, "
            f"{skipped} skipped in {time.perf_counter() - started:.1f}s"
            + (f" ({len(cases) * len(backends) - len(results)} not run)" if not complete else "")
        )
        info.seconds = time.perf_counter() - started
        info.complete = complete
        for finish in on_finish:
            finish(info, list(results))
        if info.interrupted:
            return 130
        return 1 if failed else 0

    async def until_signalled(scope: anyio.CancelScope) -> None:
        with anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
            async for _ in signals:
                info.interrupted = True
                scope.cancel()
                return

    # Grouped by case name: all the rows of one case, on each backend in turn, then the next
    # case (one event loop per case and backend; starting one costs about a millisecond).
    groups: dict[str, list[Case]] = {}
    for case in cases:
        groups.setdefault(case.name, []).append(case)
    try:
        table.header()  # inside: a Ctrl-C from here on still gets the summary and the reports
        for group, backend in itertools.product(groups.values(), backends):

            async def run_rows(backend: str = backend, group: list[Case] = group) -> None:
                try:
                    async with anyio.create_task_group() as tg:
                        if interruptible:
                            tg.start_soon(until_signalled, tg.cancel_scope)
                        await run_group(backend, group)
                        tg.cancel_scope.cancel()
                except Exception:
                    # A row cut short by Ctrl-C may end in errors besides the cancellation
                    # (a libzmq call in a worker thread timing out meanwhile): not the row's.
                    if not info.interrupted:
                        raise

            async def run_group(backend: str, group: list[Case]) -> None:
                for case in group:
                    log = None
                    if verbose:

                        def log(text: str, case: Case = case) -> None:
                            table.print(f"    [{backend} {case.label}] {text}")

                    hung = Result(
                        case, backend, "FAIL", 0.0, "hung: the case could not be cancelled"
                    )
                    case_started = time.perf_counter()

                    def fire(hung: Result = hung, case_started: float = case_started) -> None:
                        hung.seconds = time.perf_counter() - case_started
                        results.append(hung)
                        table.row(hung)
                        summary(complete=False)
                        shutil.rmtree(workdir, ignore_errors=True)
                        os._exit(1)  # the event loop is stuck: no clean way out

                    if status_line is not None:
                        status_line.show(backend, case)
                    limit = (case.timeout or timeout) + WATCHDOG_GRACE
                    with _Watchdog(limit, fire):
                        result = await run_case(
                            case, backend, workdir=workdir, timeout=timeout, count=count, log=log
                        )
                    if info.interrupted:
                        return  # cut short by Ctrl-C: its outcome says nothing about the row
                    results.append(result)
                    table.row(result)
                    if status_line is not None:
                        status_line.done += 1

            anyio.run(run_rows, backend=backend)
            if info.interrupted:
                break
    except KeyboardInterrupt:
        if not interruptible:
            raise
        info.interrupted = True  # between two event loops, before the receiver was open
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    return summary(complete=not info.interrupted)
