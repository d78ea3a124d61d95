"""Shared helpers for the benchmark scripts (not a public module; no pytest).

* :class:`WorkerGroup` runs benchmark roles in separate *spawned* processes, talks to them over
  ``multiprocessing`` pipes, never waits without a timeout, surfaces a child's traceback, and
  always terminates (then kills) every child it started.
* Children protect themselves too (:func:`_child_entry`): SIGINT is ignored (the parent owns
  Ctrl-C), and a watchdog thread exits the child if the parent dies or the child outlives
  ``max_lifetime``.
* :func:`control_recv_async` reads the control pipe from async code without blocking the event
  loop (a worker thread), so a socket's background tasks keep running between rounds.
* Size parsing, statistics, table formatting, JSON metadata and dependency checks.

Control protocol (what every child role does): after setting up it sends ``("ready", info)``;
then it loops on commands from the parent (``("run", params)`` answered with
``("result", dict)``, and ``("quit",)``). Any exception is reported as ``("error", traceback)``.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import importlib.util
import json
import math
import multiprocessing
import multiprocessing.connection
import os
import platform
import signal
import statistics
import subprocess
import sys
import threading
import time
import traceback
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parent.parent

try:  # a checkout that was not pip-installed: make `import zmtp` work
    import zmtp  # noqa: F401
except ImportError:  # pragma: no cover
    sys.path.insert(0, str(REPO_ROOT))

#: Default lifetime cap of a child process (seconds); the parent's own timeouts come first.
DEFAULT_MAX_LIFETIME = 900.0

Message = tuple[Any, ...]


class BenchError(RuntimeError):
    """A benchmark configuration failed (child error, child death or timeout)."""


class BenchTimeout(BenchError):
    """A child did not answer in time."""


# --------------------------------------------------------------------------- dependencies


def have(module: str) -> bool:
    return importlib.util.find_spec(module) is not None


def require(users: dict[str, Iterable[str]]) -> None:
    """Exit with a clear message if a module that a selected benchmark needs is missing.

    ``users`` maps what was selected (an implementation or case name) to the modules it
    imports.
    """
    missing: dict[str, list[str]] = {}
    for user, modules in users.items():
        for m in modules:
            if not have(m):
                missing.setdefault(m, []).append(user)
    if not missing:
        return
    hints = {"zmq": "pyzmq", "trio": "trio", "anyio": "anyio"}
    lines = [f"error: missing Python module(s) {', '.join(sorted(missing))}:"]
    for m, who in sorted(missing.items()):
        lines.append(f"       {m!r} (pip install {hints.get(m, m)}) is needed by {', '.join(who)}")
    lines.append("       Install it, or leave those out with --impl / --case.")
    sys.exit("\n".join(lines))


# --------------------------------------------------------------------------- child side


def _watchdog(parent_pid: int, max_lifetime: float) -> None:
    deadline = time.monotonic() + max_lifetime
    while True:
        time.sleep(0.5)
        if os.getppid() != parent_pid:
            os._exit(3)  # orphaned: the harness is gone
        if time.monotonic() > deadline:
            sys.stderr.write(f"[bench child {os.getpid()}] max lifetime exceeded, exiting\n")
            os._exit(4)


def _child_entry(
    func: Callable[[Any, dict[str, Any]], None],
    conn: multiprocessing.connection.Connection,
    params: dict[str, Any],
    parent_pid: int,
    max_lifetime: float,
) -> None:
    """Body of every spawned child: guards, CPU pinning, then ``func(conn, params)``."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    cpu = params.get("cpu")
    if cpu is not None:  # before any thread (libzmq's I/O thread inherits it)
        os.sched_setaffinity(0, {cpu})
    threading.Thread(
        target=_watchdog, args=(parent_pid, max_lifetime), daemon=True, name="watchdog"
    ).start()
    try:
        func(conn, params)
    except BaseException:
        with contextlib.suppress(Exception):
            conn.send(("error", traceback.format_exc()))
        raise SystemExit(1) from None
    finally:
        with contextlib.suppress(Exception):
            conn.close()


async def control_recv_async(conn: multiprocessing.connection.Connection) -> Message:
    """Wait for the next control message without blocking the event loop (anyio: asyncio or
    trio), so a socket's reader/writer tasks keep running between rounds.

    Waits for the pipe's fd to become readable (no helper thread, cancellable); falls back to
    a worker thread on anyio versions without ``wait_readable``.
    """
    import anyio

    if not conn.poll():
        wait_readable = getattr(anyio, "wait_readable", None)
        if wait_readable is not None:
            await wait_readable(conn.fileno())
        else:  # pragma: no cover - anyio < 4.7
            import anyio.to_thread

            message: Message = await anyio.to_thread.run_sync(conn.recv, abandon_on_cancel=True)
            return message
    received: Message = conn.recv()
    return received


async def control_recv_asyncio(conn: multiprocessing.connection.Connection) -> Message:
    """Same as :func:`control_recv_async` for plain asyncio code (pyzmq's zmq.asyncio)."""
    import asyncio

    if not conn.poll():
        loop = asyncio.get_running_loop()
        ready = loop.create_future()
        fd = conn.fileno()

        def wake() -> None:
            if not ready.done():
                ready.set_result(None)

        loop.add_reader(fd, wake)
        try:
            await ready
        finally:
            loop.remove_reader(fd)
    received: Message = conn.recv()
    return received


# --------------------------------------------------------------------------- parent side


class Worker:
    """One spawned child process running ``func(conn, params)``."""

    def __init__(
        self,
        name: str,
        func: Callable[[Any, dict[str, Any]], None],
        params: dict[str, Any],
        max_lifetime: float = DEFAULT_MAX_LIFETIME,
    ) -> None:
        ctx = multiprocessing.get_context("spawn")
        self.name = name
        self.conn, child_conn = ctx.Pipe(duplex=True)
        self.inbox: list[Message] = []
        self.proc = ctx.Process(
            target=_child_entry,
            args=(func, child_conn, params, os.getpid(), max_lifetime),
            name=f"bench-{name}",
            daemon=True,
        )
        self.proc.start()
        child_conn.close()
        self.exit_expected = False

    def send(self, message: Message) -> None:
        try:
            self.conn.send(message)
        except (BrokenPipeError, EOFError, OSError) as exc:
            raise BenchError(f"{self.name}: cannot send to the child ({exc})") from None

    def stop(self, timeout: float) -> None:
        """Join, then terminate, then kill: the process is gone when this returns."""
        proc = self.proc
        proc.join(timeout)
        if proc.is_alive():
            proc.terminate()
            proc.join(2.0)
        if proc.is_alive():
            proc.kill()
            proc.join(2.0)
        with contextlib.suppress(Exception):
            self.conn.close()
        with contextlib.suppress(Exception):
            proc.close()


class WorkerGroup:
    """The processes of one benchmark configuration. Use as a context manager: leaving it
    (normally, on error, on Ctrl-C) stops every child."""

    def __init__(self, timeout: float, max_lifetime: float = DEFAULT_MAX_LIFETIME) -> None:
        self.timeout = timeout
        self.max_lifetime = max_lifetime
        self.workers: list[Worker] = []

    def __enter__(self) -> WorkerGroup:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close(graceful=exc[0] is None)

    def start(
        self,
        name: str,
        func: Callable[[Any, dict[str, Any]], None],
        params: dict[str, Any],
        cpu: int | None = None,
    ) -> Worker:
        """Start a child; ``cpu`` pins it (and every thread it starts) to that CPU."""
        if cpu is not None:
            params = {**params, "cpu": cpu}
        worker = Worker(name, func, params, self.max_lifetime)
        self.workers.append(worker)
        return worker

    def _pump(self, timeout: float) -> None:
        """Move every available message into the workers' inboxes; raise on errors/deaths."""
        waitables: list[Any] = []
        for w in self.workers:
            waitables.append(w.conn)
            waitables.append(w.proc.sentinel)
        ready = multiprocessing.connection.wait(waitables, timeout)
        for w in self.workers:
            while True:
                try:
                    if not w.conn.poll():
                        break
                    message = w.conn.recv()
                except (EOFError, OSError):
                    break
                if message and message[0] == "error":
                    raise BenchError(f"{w.name} failed:\n{message[1]}")
                w.inbox.append(message)
            if w.proc.sentinel in ready and not w.exit_expected and not w.inbox:
                w.proc.join(0.1)
                raise BenchError(f"{w.name} exited unexpectedly (exit code {w.proc.exitcode})")

    def expect(self, worker: Worker, kind: str, timeout: float | None = None) -> Message:
        """The next message of ``kind`` from ``worker``, within ``timeout`` seconds."""
        limit = self.timeout if timeout is None else timeout
        deadline = time.monotonic() + limit
        while True:
            if worker.inbox:
                message = worker.inbox.pop(0)
                if message[0] != kind:
                    raise BenchError(f"{worker.name}: expected {kind!r}, got {message!r}")
                return message
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise BenchTimeout(f"{worker.name}: no {kind!r} within {limit:g} s")
            self._pump(min(remaining, 1.0))

    def close(self, graceful: bool = True) -> None:
        """Ask children to quit (if graceful), then make sure every one is gone."""
        if graceful:
            for w in self.workers:
                w.exit_expected = True
                with contextlib.suppress(Exception):
                    w.conn.send(("quit",))
        for w in self.workers:
            w.exit_expected = True
            w.stop(5.0 if graceful else 0.0)
        self.workers.clear()


# --------------------------------------------------------------------------- profiling


def profiled_role(ctrl: Any, params: dict[str, Any]) -> None:
    """Child entry that runs ``params["role"]``, under cProfile if ``params["profile_path"]``
    is set (the stats are written there when the role returns)."""
    role = params["role"]
    path = params.get("profile_path")
    if not path:
        role(ctrl, params)
        return
    import cProfile

    profiler = cProfile.Profile()
    profiler.enable()
    try:
        role(ctrl, params)
    finally:
        profiler.disable()
        profiler.dump_stats(path)


def print_profiles(paths: list[Path], profile_dir: Path, top: int) -> None:
    """Print the top ``top`` functions by tottime of each profile written."""
    import io
    import pstats

    for path in paths:
        if not path.exists():
            print(f"\n(no profile written for {path.name}: the child did not finish cleanly)")
            continue
        out = io.StringIO()
        with contextlib.suppress(Exception):
            stats = pstats.Stats(str(path), stream=out)
            stats.sort_stats("tottime").print_stats(top)
        print(f"\n===== cProfile {path.name} (top {top} by tottime) =====")
        text = out.getvalue()
        start = text.find("   ncalls")
        print(text[start:] if start >= 0 else text)
    print(f"(profiles kept in {profile_dir})")


# --------------------------------------------------------------------------- CPU pinning

PIN_CHOICES = ("none", "split", "same")
PIN_HELP = (
    "CPU pinning of the child processes (Linux): none (default; the kernel places them, "
    "which varies from run to run), split (the binding side on CPU 0, the connecting side(s) "
    "on the next CPUs: one core per process, libzmq's I/O thread shares its process's core), "
    "same (all on CPU 0: most stable ping-pong, but throughput sides compete for one core)"
)


def pin_cpu(mode: str, role_index: int) -> int | None:
    """The CPU for the ``role_index``-th process of a configuration (0 = the binding side)."""
    if mode == "none":
        return None
    cpus = sorted(os.sched_getaffinity(0))
    if mode == "same" or role_index == 0:
        return cpus[0]
    if len(cpus) < 2:
        raise BenchError("--pin split needs at least 2 CPUs")
    return cpus[1 + (role_index - 1) % (len(cpus) - 1)]


def check_pin(mode: str) -> str | None:
    """An error message if ``mode`` cannot be used here."""
    if mode == "none":
        return None
    if not hasattr(os, "sched_setaffinity"):
        return "--pin needs os.sched_setaffinity (Linux)"
    if mode == "split" and len(os.sched_getaffinity(0)) < 2:
        return "--pin split needs at least 2 CPUs"
    return None


# --------------------------------------------------------------------------- sizes & stats


def parse_size(text: str) -> int:
    """``64``, ``1k``/``1KiB``, ``64K``, ``1m``/``1MiB`` -> bytes (binary multiples)."""
    t = text.strip().lower().removesuffix("ib").removesuffix("b")
    mult = 1
    if t and t[-1] in "km":
        mult = 1024 if t[-1] == "k" else 1024 * 1024
        t = t[:-1]
    value = int(float(t) * mult)
    if value <= 0:
        raise ValueError(f"size must be positive: {text!r}")
    return value


def parse_sizes(text: str) -> list[int]:
    return [parse_size(s) for s in text.split(",") if s.strip()]


def size_label(size: int) -> str:
    if size >= 1024 * 1024 and size % (1024 * 1024) == 0:
        return f"{size // (1024 * 1024)} MiB"
    if size >= 1024 and size % 1024 == 0:
        return f"{size // 1024} KiB"
    return f"{size} B"


def summarize(values: Sequence[float], higher_is_better: bool = True) -> dict[str, float]:
    """median / best / min / max / spread (max-min over median, as a fraction)."""
    med = statistics.median(values)
    lo, hi = min(values), max(values)
    return {
        "median": med,
        "best": hi if higher_is_better else lo,
        "min": lo,
        "max": hi,
        "spread": (hi - lo) / med if med else 0.0,
    }


def percentile(sorted_values: Sequence[float], q: float) -> float:
    """Nearest-rank percentile (q in 0..100) of an already sorted sequence."""
    if not sorted_values:
        return float("nan")
    n = len(sorted_values)
    rank = math.ceil(q / 100 * n)  # the smallest value with at least q % of samples <= it
    return float(sorted_values[max(0, min(n - 1, rank - 1))])


def fmt_rate(value: float | None) -> str:
    if value is None:
        return "-"
    if value >= 1e6:
        return f"{value / 1e6:,.2f} M"
    if value >= 1e3:
        return f"{value / 1e3:,.1f} k"
    return f"{value:,.0f}"


def fmt_ratio(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}x"


def fmt_us(ns: float | None) -> str:
    return "-" if ns is None else f"{ns / 1000:,.1f}"


def render_table(headers: Sequence[str], rows: Sequence[Sequence[str]], align: str = "") -> str:
    """A plain-text table; ``align`` is one char per column, 'l' or 'r' (default: l then r)."""
    widths = [len(h) for h in headers]
    for row in rows:
        for i, cell in enumerate(row):
            widths[i] = max(widths[i], len(cell))
    if not align:
        align = "l" + "r" * (len(headers) - 1)

    def line(cells: Sequence[str]) -> str:
        parts = [
            c.ljust(widths[i]) if align[i] == "l" else c.rjust(widths[i])
            for i, c in enumerate(cells)
        ]
        return "| " + " | ".join(parts) + " |"

    sep = (
        "|"
        + "|".join(
            ("-" * (w + 1) + ":") if a == "r" else ("-" * (w + 2))
            for w, a in zip(widths, align, strict=True)
        )
        + "|"
    )
    out = [line(headers), sep]
    out.extend(line(r) for r in rows)
    return "\n".join(out)


# --------------------------------------------------------------------------- metadata


def _version(module: str) -> str | None:
    try:
        from importlib.metadata import version

        return version(module)
    except Exception:
        return None


def environment() -> dict[str, Any]:
    """What a reader needs to interpret the numbers."""
    info: dict[str, Any] = {
        "date": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "python": sys.version.split()[0],
        "implementation": platform.python_implementation(),
        "platform": platform.platform(),
        "machine": platform.machine(),
        "cpu_count": os.cpu_count(),
        "loadavg": list(os.getloadavg()) if hasattr(os, "getloadavg") else None,
        "versions": {name: _version(name) for name in ("zmtp", "anyio", "trio", "pyzmq", "PyNaCl")},
    }
    try:
        import zmq

        info["versions"]["libzmq"] = zmq.zmq_version()
    except Exception:
        info["versions"]["libzmq"] = None
    with contextlib.suppress(Exception):  # read-only git query
        info["git_commit"] = (
            subprocess.run(
                ["git", "-C", str(REPO_ROOT), "rev-parse", "--short", "HEAD"],
                capture_output=True,
                text=True,
                timeout=5,
                check=False,
            ).stdout.strip()
            or None
        )
        dirty = subprocess.run(
            ["git", "-C", str(REPO_ROOT), "status", "--porcelain", "--untracked-files=no"],
            capture_output=True,
            text=True,
            timeout=5,
            check=False,
        ).stdout.strip()
        info["git_dirty"] = bool(dirty)
    return info


def write_json(path: str, payload: dict[str, Any]) -> None:
    Path(path).write_text(json.dumps(payload, indent=2, sort_keys=False) + "\n")


def log(message: str, quiet: bool = False) -> None:
    if not quiet:
        print(message, file=sys.stderr, flush=True)
