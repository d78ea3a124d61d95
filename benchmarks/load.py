"""A reproducible "ordinary day": N busy-loop processes competing for the CPUs during a run.

Issue 15 asks for the stream targets on a loaded machine, not only on a quiet one, and a
loaded day of the shared VM (other engineers' jobs, load average 8-12 on 2 cores) cannot be
repeated. Two or three pure-CPU processes on 2 cores oversubscribe both cores the same way
every time: the benchmark's processes then get a share of the CPU and wait for the scheduler
after every block, which is what the loaded runs showed.

Each busy process spins in Python (no syscalls, no memory traffic to speak of) and checks
every ~50 ms that the process that started it is still alive, so a harness killed by a signal
leaves nothing behind. They run at the default priority (no ``nice``): the point is a fair
share, as other people's jobs take. Each starts a session of its own, as another engineer's
job does: with ``/proc/sys/kernel/sched_autogroup_enabled`` at 1 (this VM) the scheduler
shares the CPUs between sessions first and between a session's threads second, so a busy
process in the benchmark's own session would compete with it thread by thread instead
(``--same-session``: the model of a machine without autogroups, where libzmq's I/O thread
counts as one more runnable thread).

    # the load alone (until Ctrl-C):
    .venv/bin/python benchmarks/load.py 3
    # one command under the load (its exit status is returned):
    .venv/bin/python benchmarks/load.py 3 -- .venv/bin/python benchmarks/compare_trees.py A B
    # or the option of the benchmark scripts (bench_throughput.py, bench_fanout.py, ...):
    .venv/bin/python benchmarks/bench_throughput.py --sizes 64 --background-load 3

:func:`sched_counters` reads this process's scheduler counters (context switches, time run
and time waited runnable, over every thread: libzmq's I/O thread counts for pyzmq), which
``bench_throughput.py`` reports per message for each side.
"""

from __future__ import annotations

import argparse
import atexit
import contextlib
import os
import resource
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

#: Iterations between two parent checks (~50 ms of CPython on the dev VM).
_SPIN_CHUNK = 1_000_000


def _spin(parent: int) -> None:
    """The busy loop of one load process: pure CPU until the parent is gone."""
    while os.getppid() == parent:
        for _ in range(_SPIN_CHUNK):
            pass


class BackgroundLoad:
    """``n`` busy processes from :meth:`start` to :meth:`stop` (also a context manager)."""

    def __init__(self, n: int, same_session: bool = False) -> None:
        self.n = n
        self.same_session = same_session
        self.procs: list[subprocess.Popen[bytes]] = []
        self.started = 0.0
        #: After :meth:`stop`: the CPUs the busy processes used on average, and for how long.
        self.cpus_used: float | None = None
        self.seconds = 0.0

    def run_seconds(self) -> float:
        """CPU time the live busy processes have had so far (``/proc/<pid>/schedstat``)."""
        return sum(_read_schedstat(Path(f"/proc/{p.pid}/schedstat"))[0] for p in self.procs) / 1e9

    def start(self) -> BackgroundLoad:
        self.started = time.monotonic()
        cmd = [sys.executable, str(Path(__file__).resolve()), "--spin", str(os.getpid())]
        self.procs = [
            subprocess.Popen(cmd, stdin=subprocess.DEVNULL, start_new_session=not self.same_session)
            for _ in range(self.n)
        ]
        return self

    def stop(self) -> None:
        if self.procs:
            self.seconds = time.monotonic() - self.started
            self.cpus_used = self.run_seconds() / self.seconds if self.seconds > 0 else None
        for proc in self.procs:
            if proc.poll() is None:
                proc.terminate()
        for proc in self.procs:
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=5)
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        self.procs = []

    def __enter__(self) -> BackgroundLoad:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def start_background_load(n: int, same_session: bool = False) -> BackgroundLoad | None:
    """For a benchmark's ``--background-load N``: start the load for the rest of the run
    (stopped at exit); None for ``n <= 0``."""
    if n <= 0:
        return None
    load = BackgroundLoad(n, same_session).start()

    def stop_and_report() -> None:
        load.stop()
        if load.cpus_used is not None:
            print(
                f"background load: {n} busy processes used {load.cpus_used:.2f} CPUs on "
                f"average over {load.seconds:.0f} s",
                file=sys.stderr,
            )

    atexit.register(stop_and_report)
    return load


@contextlib.contextmanager
def background_load(n: int, same_session: bool = False) -> Iterator[BackgroundLoad]:
    """``with background_load(3): ...``: the load for the block."""
    with BackgroundLoad(n, same_session) as load:
        yield load


def _read_schedstat(path: Path) -> tuple[int, int]:
    try:
        run_ns, wait_ns, _slices = path.read_text().split()
    except (OSError, ValueError):
        return 0, 0
    return int(run_ns), int(wait_ns)


def _read_migrations(path: Path) -> int:
    """``se.nr_migrations`` of ``/proc/<pid>/task/<tid>/sched`` (0 without the file: a kernel
    without scheduler debug)."""
    try:
        for line in path.read_text().splitlines():
            if line.startswith("se.nr_migrations"):
                return int(line.rsplit(":", 1)[1])
    except (OSError, ValueError):
        pass
    return 0


def sched_counters() -> dict[str, float]:
    """This process's scheduler counters so far: ``voluntary`` and ``involuntary`` context
    switches (``getrusage``: every thread, live or ended), ``run_s`` / ``wait_s``, the time
    its live threads ran on a CPU and waited runnable for one (``/proc/self/task/*/schedstat``),
    and ``migrations`` from one CPU to another (``.../sched``); zeros where there is no such
    file. Subtract two readings for a round's figures."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    run_ns = wait_ns = migrations = 0
    tasks = Path("/proc/self/task")
    if tasks.is_dir():
        for task in tasks.iterdir():
            run, wait = _read_schedstat(task / "schedstat")
            run_ns += run
            wait_ns += wait
            migrations += _read_migrations(task / "sched")
    return {
        "voluntary": float(usage.ru_nvcsw),
        "involuntary": float(usage.ru_nivcsw),
        "run_s": run_ns / 1e9,
        "wait_s": wait_ns / 1e9,
        "migrations": float(migrations),
    }


def sched_delta(before: dict[str, float]) -> dict[str, float]:
    """:func:`sched_counters` now minus ``before``."""
    now = sched_counters()
    return {key: now[key] - before[key] for key in now}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("n", type=int, nargs="?", default=3, help="busy processes (default 3)")
    ap.add_argument("command", nargs=argparse.REMAINDER, help="-- command to run under load")
    ap.add_argument(
        "--same-session",
        action="store_true",
        help="keep the busy processes in this session (see the module docstring)",
    )
    ap.add_argument("--spin", type=int, metavar="PARENT", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.spin is not None:
        with contextlib.suppress(KeyboardInterrupt):
            _spin(args.spin)
        return 0
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    status = 0
    with background_load(args.n, args.same_session) as load:
        where = "this session" if args.same_session else "sessions of their own"
        print(f"{args.n} busy processes ({where}) on {os.cpu_count()} CPUs", file=sys.stderr)
        if command:
            status = subprocess.call(command)
        else:
            with contextlib.suppress(KeyboardInterrupt):
                while True:
                    time.sleep(3600)
    print(
        f"background load: {load.cpus_used or 0:.2f} CPUs over {load.seconds:.0f} s",
        file=sys.stderr,
    )
    return status


if __name__ == "__main__":
    sys.exit(main())
