"""What paces a fan-out publisher: its threads' scheduler accounting during bench_fanout.

Why: ``bench_fanout.py``'s CPU columns say how much CPU each process used, not what it did
the rest of the time. A publisher at 0.3 of a core may be asleep (waiting for the event loop,
for writability, for a timer: something of its own paces it) or runnable and waiting for a
CPU (the scheduler paces it). Linux keeps both per thread in ``/proc/<pid>/task/<tid>/
schedstat`` (nanoseconds on a CPU, nanoseconds runnable on a run queue, time slices) and the
voluntary / involuntary context switches in ``status``; what is neither is sleep. The machine's
own ``/proc/stat`` gives the CPU everything else used (other sessions) and the idle time.

This runs ``bench_fanout.py`` (this tree's, one implementation at a time, one long round) and
reads those counters from outside, twice, over a window of the publisher's data phase (found
as the moment its CPU rate jumps, plus ``--skip`` seconds of warm-up), then prints per
implementation:

* ``ours`` / ``others`` / ``idle``: cores used by the benchmark's processes, by everything
  else on the machine, and left idle, over the window;
* the publisher's main thread: on-CPU, runnable-waiting and asleep (fractions of the window),
  voluntary and involuntary context switches per second;
* the subscribers' main threads: the median of the same;
* the benchmark's own table row (rates, loss, CPU per message) for the whole round.

Examples::

    python benchmarks/fanout_sched.py                                  # zmtp-asyncio, pyzmq-sync
    python benchmarks/fanout_sched.py --impl zmtp-asyncio,zmtp-trio,pyzmq-sync --cycles 2
    python benchmarks/fanout_sched.py --spinners 2      # against 2 busy processes of a session
                                                        # of their own (another user's load)
    python benchmarks/fanout_sched.py --together --cycles 2   # both at once: the shares they get

Linux only (``/proc``); the figures are the kernel's, the sampling adds two reads of a few
dozen small files.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
CLK_TCK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
#: /proc/stat's CPU columns that are not idle (user nice system [idle] iowait irq softirq
#: steal); iowait counts as busy here (it is ~0 on this workload).
_IDLE_COLUMN = 3


@dataclass(frozen=True)
class ThreadSample:
    """One reading of a thread's counters (nanoseconds, counts)."""

    run_ns: int
    wait_ns: int
    voluntary: int
    involuntary: int


@dataclass(frozen=True)
class ThreadShare:
    """A thread's time over a window, as fractions of it, and its switches per second."""

    on_cpu: float
    runnable: float
    asleep: float
    voluntary_per_s: float
    involuntary_per_s: float


def parse_schedstat(text: str) -> tuple[int, int]:
    """``/proc/.../schedstat``: (ns on a CPU, ns runnable on a run queue)."""
    run_ns, wait_ns, _slices = text.split()
    return int(run_ns), int(wait_ns)


def parse_switches(status: str) -> tuple[int, int]:
    """``/proc/.../status``: (voluntary, involuntary) context switches."""
    fields = {}
    for line in status.splitlines():
        key, _, value = line.partition(":")
        fields[key] = value.strip()
    return int(fields["voluntary_ctxt_switches"]), int(fields["nonvoluntary_ctxt_switches"])


def share(before: ThreadSample, after: ThreadSample, wall: float) -> ThreadShare:
    """What a thread did between two readings ``wall`` seconds apart. Asleep is the rest
    (clamped at 0: the two counters and the wall clock are not read at the same instant)."""
    on_cpu = (after.run_ns - before.run_ns) / 1e9 / wall
    runnable = (after.wait_ns - before.wait_ns) / 1e9 / wall
    return ThreadShare(
        on_cpu,
        runnable,
        max(0.0, 1.0 - on_cpu - runnable),
        (after.voluntary - before.voluntary) / wall,
        (after.involuntary - before.involuntary) / wall,
    )


def machine_split(
    before: list[int], after: list[int], ours_cores: float, wall: float
) -> dict[str, float]:
    """From two ``/proc/stat`` ``cpu`` rows (clock ticks) and the cores our processes used:
    the cores everything else used and the cores left idle over the window."""
    deltas = [b - a for a, b in zip(before, after, strict=False)]
    idle = deltas[_IDLE_COLUMN] / CLK_TCK / wall
    busy = sum(d for i, d in enumerate(deltas) if i != _IDLE_COLUMN) / CLK_TCK / wall
    return {"ours": ours_cores, "others": max(0.0, busy - ours_cores), "idle": idle}


def _cpu_row() -> list[int]:
    with open("/proc/stat") as f:
        return [int(x) for x in f.readline().split()[1:]]


def _main_thread(pid: int) -> ThreadSample | None:
    base = f"/proc/{pid}/task/{pid}"
    try:
        with open(f"{base}/schedstat") as f:
            run_ns, wait_ns = parse_schedstat(f.read())
        with open(f"{base}/status") as f:
            vol, invol = parse_switches(f.read())
    except (OSError, ValueError, KeyError):
        return None
    return ThreadSample(run_ns, wait_ns, vol, invol)


def _process_run_ns(pid: int) -> int:
    """Every live thread's on-CPU ns (the process's cores, with libzmq's I/O thread)."""
    total = 0
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return 0
    for tid in tids:
        try:
            with open(f"/proc/{pid}/task/{tid}/schedstat") as f:
                total += parse_schedstat(f.read())[0]
        except (OSError, ValueError):
            pass
    return total


def _children(pid: int) -> list[int]:
    """Child pids of ``pid``, oldest first, without multiprocessing's resource tracker."""
    kids = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                stat = f.read()
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                cmdline = f.read()
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        if ppid == pid and b"resource_tracker" not in cmdline:
            kids.append(int(entry))
    return sorted(kids)


def _spinners(n: int, own_session: bool) -> list[subprocess.Popen[bytes]]:
    """``n`` busy processes, each in a session of its own (so, with autogroup scheduling, a
    group of its own, like another user's work) or in ours (competing task by task)."""
    return [
        subprocess.Popen([sys.executable, "-c", "while True: pass"], start_new_session=own_session)
        for _ in range(n)
    ]


def measure(impl: str, args: argparse.Namespace) -> dict[str, object]:
    """One bench_fanout run of ``impl`` with the counters read over a data-phase window."""
    return measure_together([impl], args)[0]


def _bench_cmd(impl: str, args: argparse.Namespace, slack: float) -> list[str]:
    return [
        sys.executable,
        str(HERE / "bench_fanout.py"),
        "--impl",
        impl,
        "--subscribers",
        str(args.subscribers),
        "--repeat",
        "1",
        "--warmup",
        "0.5",
        "--duration",
        str(args.skip + args.window + 1.5 + slack),
        "--mode",
        args.mode,
        "--quiet",
    ]


def _wait_started(bench: subprocess.Popen[str], impl: str, count: int) -> list[int]:
    """The benchmark's ``count`` worker pids, publisher first (start_peers starts it first)."""
    deadline = time.monotonic() + 120
    while True:
        procs = _children(bench.pid)
        if len(procs) >= count:
            return procs
        if time.monotonic() > deadline or bench.poll() is not None:
            raise RuntimeError(f"{impl}: the benchmark's processes did not all start")
        time.sleep(0.05)


def _wait_data_phase(benches: list[tuple[str, subprocess.Popen[str], int]]) -> None:
    """Until every publisher is in its data phase: its CPU rate jumps (probing costs it ~0.01
    core; sending, all it gets: 0.05 on a loaded machine)."""
    waiting = {pub: (impl, bench) for impl, bench, pub in benches}
    last = {pub: (_process_run_ns(pub), time.monotonic()) for pub in waiting}
    while waiting:
        time.sleep(0.2)
        for pub, (impl, bench) in list(waiting.items()):
            now_ns, now = _process_run_ns(pub), time.monotonic()
            ns0, t0 = last[pub]
            if (now_ns - ns0) / 1e9 / (now - t0) > 0.03:
                del waiting[pub]
            elif bench.poll() is not None:
                raise RuntimeError(f"{impl}: the benchmark ended before its data phase")
            last[pub] = (now_ns, now)


def measure_together(impls: list[str], args: argparse.Namespace) -> list[dict[str, object]]:
    """Run the benchmarks of ``impls`` at once (with more than one, each in a session of its
    own: two users' runs meeting the same load at the same moment) and read every one's
    counters over one window, once all of them are sending."""
    together = len(impls) > 1
    slack = args.slack if together else 0.0  # the first data phase waits for the last one
    spin = _spinners(args.spinners, args.spinner_session == "own")
    benches = [
        (
            impl,
            subprocess.Popen(
                _bench_cmd(impl, args, slack),
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                text=True,
                start_new_session=together,
            ),
        )
        for impl in impls
    ]
    try:
        procs = {impl: _wait_started(b, impl, args.subscribers + 1) for impl, b in benches}
        _wait_data_phase([(impl, b, procs[impl][0]) for impl, b in benches])
        time.sleep(args.skip)
        every = [p for ps in procs.values() for p in ps]
        cpu0, run0 = _cpu_row(), {p: _process_run_ns(p) for p in every}
        th0, t0 = {p: _main_thread(p) for p in every}, time.monotonic()
        time.sleep(args.window)
        cpu1, run1 = _cpu_row(), {p: _process_run_ns(p) for p in every}
        th1, t1 = {p: _main_thread(p) for p in every}, time.monotonic()
        outs = {impl: b.communicate(timeout=300)[0] for impl, b in benches}
    finally:
        for s in spin:
            s.kill()
            s.wait()
        for _, b in benches:
            if b.poll() is None:  # an error above: its children follow (their watchdogs)
                b.kill()
                b.wait()
    wall = t1 - t0
    all_ours = sum(run1[p] - run0[p] for p in every) / 1e9 / wall
    results: list[dict[str, object]] = []
    for impl, _ in benches:
        pub, subs = procs[impl][0], procs[impl][1:]
        ours = sum(run1[p] - run0[p] for p in procs[impl]) / 1e9 / wall
        shares = {}
        for p in procs[impl]:
            before, after = th0[p], th1[p]
            if before is not None and after is not None:
                shares[p] = share(before, after, wall)
        if pub not in shares:
            raise RuntimeError(f"{impl}: could not read the publisher's counters")
        sub_shares = [shares[p] for p in subs if p in shares]
        split = machine_split(cpu0, cpu1, all_ours, wall)
        # "others": everything but this benchmark (the other benchmarks run with it included)
        split["others"] += all_ours - ours
        split["ours"] = ours
        out = outs[impl]
        rows = [line for line in out.splitlines() if line.startswith(f"| {impl}")]
        results.append(
            {
                "impl": impl,
                "together_with": [i for i, _ in benches if i != impl],
                "window_s": wall,
                "loadavg": os.getloadavg()[0],
                **split,
                "publisher": vars(shares[pub]),
                "subscribers_median": {
                    key: statistics.median(getattr(s, key) for s in sub_shares)
                    for key in vars(sub_shares[0])
                },
                "bench_row": rows[0] if rows else out[-2000:],
            }
        )
    return results


def _line(r: dict[str, object]) -> str:
    pub = r["publisher"]
    sub = r["subscribers_median"]
    assert isinstance(pub, dict) and isinstance(sub, dict)
    return (
        f"{r['impl']:13} load {r['loadavg']:4.1f}  cores ours {r['ours']:.2f} others "
        f"{r['others']:.2f} idle {r['idle']:.2f} | publisher on-CPU {pub['on_cpu']:.2f} "
        f"runnable {pub['runnable']:.2f} asleep {pub['asleep']:.2f} vol/s "
        f"{pub['voluntary_per_s']:.0f} invol/s {pub['involuntary_per_s']:.0f} | subscriber "
        f"(median) on-CPU {sub['on_cpu']:.2f} runnable {sub['runnable']:.2f} asleep "
        f"{sub['asleep']:.2f} vol/s {sub['voluntary_per_s']:.0f}"
    )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--impl", default="zmtp-asyncio,pyzmq-sync", help="comma-separated")
    ap.add_argument("--subscribers", type=int, default=10)
    ap.add_argument("--mode", choices=("drop", "nodrop"), default="drop")
    ap.add_argument("--window", type=float, default=2.0, help="seconds sampled (default 2)")
    ap.add_argument(
        "--skip", type=float, default=1.0, help="seconds of data phase skipped first (default 1)"
    )
    ap.add_argument("--cycles", type=int, default=1, help="implementations interleaved")
    ap.add_argument(
        "--spinners", type=int, default=0, help="busy processes in sessions of their own"
    )
    ap.add_argument(
        "--spinner-session",
        choices=("own", "same"),
        default="own",
        help="own: each spinner in a session of its own (default); same: in the benchmark's",
    )
    ap.add_argument(
        "--together",
        action="store_true",
        help="run the implementations' benchmarks at once, each in a session of its own, and "
        "sample them over the same window (who gets which share of the same machine)",
    )
    ap.add_argument(
        "--slack",
        type=float,
        default=15.0,
        help="--together: seconds added to every data phase, so that the first to begin still "
        "runs when the last one has (default 15: 11 processes start slowly on a loaded machine)",
    )
    ap.add_argument("--json", metavar="PATH", help="also write the results as JSON")
    args = ap.parse_args(argv)
    if not Path("/proc/self/task").is_dir():
        ap.error("needs Linux /proc")
    impls = [n.strip() for n in args.impl.split(",") if n.strip()]
    results = []
    for _ in range(args.cycles):
        if args.together:
            batch = measure_together(impls, args)
            impls.reverse()  # the next cycle starts them in the other order
        else:
            batch = [measure(impl, args) for impl in impls]
        for r in batch:
            results.append(r)
            print(_line(r), flush=True)
            print(f"    {r['bench_row']}", flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
