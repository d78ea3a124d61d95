"""``import zmtp`` time beside ``import zmq`` (pyzmq), each in fresh interpreters.

Target (issue 12): ``import zmtp`` <= 0.2 s. Each measurement is a new ``python -c`` process
timing the import alone (the interpreter's own start-up excluded); medians of ``--runs``.

    .venv/bin/python benchmarks/bench_import.py
    .venv/bin/python benchmarks/bench_import.py --runs 21 --module zmtp.sync
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys

PROBE = "import time; t = time.perf_counter(); import {module}; print(time.perf_counter() - t)"
TARGET = 0.2


def measure(module: str, runs: int) -> list[float]:
    times = []
    for _ in range(runs):
        out = subprocess.run(
            [sys.executable, "-c", PROBE.format(module=module)],
            capture_output=True,
            text=True,
            check=True,
            timeout=60,
        )
        times.append(float(out.stdout))
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=11)
    parser.add_argument("--module", action="append", help="extra modules to time")
    args = parser.parse_args()
    modules = ["zmtp", "zmq", *(args.module or [])]
    results = {m: statistics.median(measure(m, args.runs)) for m in modules}
    print(f"import time, median of {args.runs} fresh interpreters")
    for module, seconds in results.items():
        ratio = seconds / results["zmq"]
        print(f"  import {module:<12} {seconds * 1000:7.1f} ms  ({ratio:.2f}x pyzmq)")
    verdict = "met" if results["zmtp"] <= TARGET else "MISSED"
    print(f"target import zmtp <= {TARGET} s: {results['zmtp']:.3f} s {verdict}")


if __name__ == "__main__":
    main()
