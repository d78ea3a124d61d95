"""Does the scheduler favour a session whose threads run in short bursts between sleeps?

Why: on a shared machine ``fanout_sched.py --together`` shows pyzmq's fan-out benchmark
taking most of the CPU from a zmtp one started with it (docs/performance.md, "What paces the
fan-out publisher"). pyzmq's threads run in short bursts and sleep thousands of times a
second; zmtp's processes mostly stay runnable. This checks the kernel apart from either
stack: two sessions (one scheduler group each with autogroup) start at once, one of ``-n``
busy-loop processes and one of ``-n`` processes that each spin for ``--burn`` µs then
``time.sleep`` for ``--nap`` µs, and it prints the cores each session got over one window
(``/proc/<pid>/schedstat``). With a fair split both get the same while both want more than
half the machine.

    python benchmarks/sched_bursts.py                        # 4 against 4, 100 µs / 100 µs
    python benchmarks/sched_bursts.py --burn 500 --nap 100
    python benchmarks/sched_bursts.py --burn 1000000 --nap 0 # busy against busy: the control

Linux only.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import subprocess
import sys
import time

_BUSY = "while True: pass"
_BURSTS = """
import time
burn, nap = {burn}e-6, {nap}e-6
clock = time.perf_counter
while True:
    until = clock() + burn
    while clock() < until:
        pass
    time.sleep(nap)
"""
_LEADER = """
import subprocess, sys
procs = [subprocess.Popen([sys.executable, "-c", {code!r}]) for _ in range({n})]
for p in procs:
    p.wait()
"""


def _session(code: str, n: int) -> subprocess.Popen[bytes]:
    """A new session whose leader starts ``n`` processes running ``code``."""
    return subprocess.Popen(
        [sys.executable, "-c", _LEADER.format(code=code, n=n)], start_new_session=True
    )


def _children(pid: int) -> list[int]:
    kids = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    if int(f.read().rsplit(")", 1)[1].split()[1]) == pid:
                        kids.append(int(entry))
            except OSError:
                pass
    return kids


def _run_ns(pids: list[int]) -> int:
    total = 0
    for pid in pids:
        try:
            with open(f"/proc/{pid}/schedstat") as f:
                total += int(f.read().split()[0])
        except OSError:
            pass
    return total


def measure(n: int, burn_us: float, nap_us: float, window: float) -> tuple[float, float]:
    """Cores (busy session, bursty session) over ``window`` seconds."""
    busy = _session(_BUSY, n)
    bursty = _session(_BURSTS.format(burn=burn_us, nap=nap_us), n)
    try:
        deadline = time.monotonic() + 30
        while True:
            a, b = _children(busy.pid), _children(bursty.pid)
            if len(a) == n and len(b) == n:
                break
            if time.monotonic() > deadline:
                raise RuntimeError("the processes did not start")
            time.sleep(0.05)
        time.sleep(1.0)  # past the interpreters' start-up
        a0, b0, t0 = _run_ns(a), _run_ns(b), time.monotonic()
        time.sleep(window)
        a1, b1, t1 = _run_ns(a), _run_ns(b), time.monotonic()
    finally:
        for leader in (busy, bursty):
            for pid in _children(leader.pid):
                with contextlib.suppress(OSError):  # (gone already)
                    os.kill(pid, signal.SIGKILL)
            leader.kill()
            leader.wait()
    wall = t1 - t0
    return (a1 - a0) / 1e9 / wall, (b1 - b0) / 1e9 / wall


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("-n", type=int, default=4, help="processes per session (default 4)")
    ap.add_argument("--burn", type=float, default=100.0, help="µs of spinning per burst")
    ap.add_argument("--nap", type=float, default=100.0, help="µs of sleep between bursts")
    ap.add_argument("--window", type=float, default=4.0, help="seconds measured (default 4)")
    args = ap.parse_args(argv)
    busy, bursty = measure(args.n, args.burn, args.nap, args.window)
    print(
        f"session of {args.n} busy processes: {busy:.2f} cores; session of {args.n} "
        f"processes spinning {args.burn:g} µs then sleeping {args.nap:g} µs: {bursty:.2f} "
        f"cores (load average {os.getloadavg()[0]:.1f})"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
