"""Before/after: the same benchmarks on two source trees, interleaved in one run, as ratios.

Each tree is a checkout of the repository (e.g. ``git worktree add /tmp/before <commit>``);
its ``zmtp`` is imported by putting the tree first on ``PYTHONPATH`` of the benchmark (and so
of its spawned children). The benchmark scripts themselves are this checkout's. Cycles
alternate the order (A B, B A, ...) so that a busy spell on a shared machine hits both trees;
compare the ratios, never the absolute numbers, of one run.

    .venv/bin/python benchmarks/compare_trees.py --cycles 3 /tmp/before /tmp/after

Measures ``bench_throughput.py`` PUSH -> PULL at 64 B and ``bench_latency.py`` REQ/REP,
zmtp on asyncio and on trio (``--benchmarks throughput,latency``, the default); ``fanout``
adds ``bench_fanout.py`` PUB -> 10 SUB at 64 B (delivered msgs/s per subscriber). Prints one
table: per case the median over cycles of each tree and the ratio after / before, then the
ratio of each cycle.

    .venv/bin/python benchmarks/compare_trees.py --benchmarks fanout --cycles 3 A B

``--background-load N`` runs N busy processes (benchmarks/load.py) for the whole run: an
"ordinary day" of the machine, the same for both trees.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
THROUGHPUT = ["--impl", "zmtp-asyncio,zmtp-trio", "--sizes", "64"]
LATENCY = ["--case", "zmtp-reqrep-asyncio,zmtp-reqrep-trio"]
FANOUT = ["--impl", "zmtp-asyncio,zmtp-trio", "--subscribers", "10", "--sizes", "64"]
BENCHMARKS = {
    "throughput": ("bench_throughput.py", THROUGHPUT),
    "latency": ("bench_latency.py", LATENCY),
    "fanout": ("bench_fanout.py", FANOUT),
}


def run(tree: Path, script: str, extra: list[str], out: Path, args: argparse.Namespace) -> None:
    env = dict(os.environ, PYTHONPATH=str(tree))
    cmd = [sys.executable, str(HERE / script), *extra, "--json", str(out), "--quiet"]
    if args.repeat:
        cmd += ["--repeat", str(args.repeat)]
    subprocess.run(cmd, env=env, check=True, timeout=args.timeout, stdout=subprocess.DEVNULL)


def collect(out: Path, script: str) -> dict[str, float]:
    payload = json.loads(out.read_text())
    if script == "bench_fanout.py":
        return {
            f"fanout {r['impl']} 10 subs 64 B (msgs/s per sub)": r["reported_round"][
                "per_sub_median"
            ]
            for r in payload["results"]
            if r["reported_round"] is not None
        }
    if script == "bench_throughput.py":
        return {
            f"throughput {r['impl']} 64 B (msgs/s)": r["msgs_per_s"]
            for r in payload["results"]["tcp"]
            if r["msgs_per_s"] is not None
        }
    return {
        f"latency {r['case']} p50 (us)": r["p50_ns"] / 1000
        for r in payload["results"]
        if r["p50_ns"] is not None
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("before", type=Path)
    ap.add_argument("after", type=Path)
    ap.add_argument("--cycles", type=int, default=3)
    ap.add_argument("--repeat", type=int, default=0, help="passed on to the benchmarks")
    ap.add_argument("--timeout", type=float, default=600.0, help="per benchmark invocation")
    ap.add_argument(
        "--benchmarks",
        default="throughput,latency",
        help="comma-separated, of " + ", ".join(BENCHMARKS) + " (default throughput,latency)",
    )
    ap.add_argument(
        "--background-load",
        type=int,
        default=0,
        metavar="N",
        help="N busy-loop processes for the whole run, the same load for both trees "
        "(benchmarks/load.py; default 0)",
    )
    args = ap.parse_args()
    if args.background_load > 0:
        sys.path.insert(0, str(HERE))
        from load import start_background_load

        start_background_load(args.background_load)
    chosen = [b.strip() for b in args.benchmarks.split(",") if b.strip()]
    unknown = [b for b in chosen if b not in BENCHMARKS]
    if unknown or not chosen:
        ap.error(f"unknown benchmark(s) {unknown}; choose from {list(BENCHMARKS)}")
    trees = {"before": args.before.resolve(), "after": args.after.resolve()}
    values: dict[str, dict[str, list[float]]] = {"before": {}, "after": {}}
    with tempfile.TemporaryDirectory() as tmp:
        for cycle in range(args.cycles):
            order = ["before", "after"] if cycle % 2 == 0 else ["after", "before"]
            for script, extra in (BENCHMARKS[b] for b in chosen):
                for label in order:
                    out = Path(tmp) / f"{label}-{cycle}-{script}.json"
                    run(trees[label], script, extra, out, args)
                    for key, value in collect(out, script).items():
                        values[label].setdefault(key, []).append(value)
                    print(f"cycle {cycle + 1}: {label} {script} done", file=sys.stderr)
    print(f"{'case':<52} {'before':>11} {'after':>11} {'ratio':>6}  per cycle")
    for key in values["before"]:
        befores, afters = values["before"][key], values["after"].get(key, [])
        before, after = statistics.median(befores), statistics.median(afters)
        cycles = " ".join(f"{a / b:.2f}" for a, b in zip(afters, befores, strict=False))
        print(f"{key:<52} {before:>11.1f} {after:>11.1f} {after / before:>6.3f}  {cycles}")
    print(
        f"(medians of {args.cycles} interleaved cycles; loadavg {os.getloadavg()[0]:.1f}; "
        f"background load {args.background_load})"
    )


if __name__ == "__main__":
    main()
