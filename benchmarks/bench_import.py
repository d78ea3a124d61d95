"""``import zmtp`` time beside ``import zmq`` (pyzmq), each in fresh interpreters.

Target (issue 12): ``import zmtp`` <= 0.2 s. Each measurement is a new ``python -c`` process
timing the import alone (the interpreter's own start-up excluded); medians of ``--runs``. The
modules are timed in turns (zmtp, zmq, ..., zmtp, zmq, ...) so that a change in the machine's
load during the run hits all of them alike: compare the ratios, not numbers across runs.

Two cases, in the same run. *cached bytecode* is what an installed package gives (pip compiles
``.pyc`` files on install; here they go to a private ``PYTHONPYCACHEPREFIX`` filled by one
untimed warm-up import, so the worktree stays clean). *no bytecode* compiles every source on
each import: an editable install run with ``PYTHONDONTWRITEBYTECODE=1`` (as on the shared
development machine) pays it for zmtp, while pyzmq's site-packages ``.pyc`` files are used.

``--baseline DIR`` also times ``zmtp`` and ``zmtp_qos`` from another source tree (for example
``git archive <commit> zmtp zmtp_qos | tar -x -C DIR``), side by side in the same run.

    .venv/bin/python benchmarks/bench_import.py
    .venv/bin/python benchmarks/bench_import.py --runs 21 --module zmtp_qos --module zmtp.sync
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile

PROBE = "import time; t = time.perf_counter(); import {module}; print(time.perf_counter() - t)"
#: For a baseline tree: put it first on sys.path and drop the editable install's finder (which
#: would otherwise resolve ``zmtp`` to this worktree whatever sys.path says).
BASELINE_PROBE = (
    "import sys; sys.path.insert(0, {path!r}); "
    "sys.meta_path[:] = [f for f in sys.meta_path "
    "if not type(f).__module__.startswith('__editable__')]; "
    "import time; t = time.perf_counter(); import {module}; d = time.perf_counter() - t; "
    "assert {module}.__file__.startswith({path!r}), {module}.__file__; print(d)"
)
TARGET = 0.2


def once(probe: str, env: dict[str, str]) -> float:
    out = subprocess.run(
        [sys.executable, "-c", probe],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
        env=env,
    )
    return float(out.stdout)


def environments(cache_dir: str) -> dict[str, dict[str, str]]:
    """The two cases' environments: bytecode written to and read from ``cache_dir``, or none."""
    cached = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    cached["PYTHONPYCACHEPREFIX"] = cache_dir
    no_bytecode = {k: v for k, v in os.environ.items() if k != "PYTHONPYCACHEPREFIX"}
    no_bytecode["PYTHONDONTWRITEBYTECODE"] = "1"
    return {"cached bytecode": cached, "no bytecode": no_bytecode}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=11)
    parser.add_argument("--module", action="append", help="extra modules to time")
    parser.add_argument("--baseline", help="a source tree to time zmtp (and zmtp_qos) from too")
    args = parser.parse_args()
    probes = {m: PROBE.format(module=m) for m in ["zmtp", "zmq", *(args.module or [])]}
    if args.baseline:
        for module in ("zmtp", "zmtp_qos"):
            probes[f"{module} (baseline)"] = BASELINE_PROBE.format(
                path=args.baseline, module=module
            )
    with tempfile.TemporaryDirectory(prefix="bench-import-pyc-") as cache_dir:
        envs = environments(cache_dir)
        for probe in probes.values():  # warm-up: writes the cached case's bytecode
            once(probe, envs["cached bytecode"])
        times: dict[tuple[str, str], list[float]] = {
            (case, name): [] for case in envs for name in probes
        }
        for _ in range(args.runs):
            for case, env in envs.items():
                for name, probe in probes.items():
                    times[case, name].append(once(probe, env))
    results = {key: statistics.median(values) for key, values in times.items()}
    print(f"import time, median of {args.runs} fresh interpreters (timed in turns)")
    for case in envs:
        print(f"{case}:")
        for name in probes:
            seconds = results[case, name]
            ratio = seconds / results[case, "zmq"]
            print(f"  import {name:<22} {seconds * 1000:7.1f} ms  ({ratio:.2f}x pyzmq)")
    for case in envs:
        verdict = "met" if results[case, "zmtp"] <= TARGET else "MISSED"
        print(f"target import zmtp <= {TARGET} s, {case}: {results[case, 'zmtp']:.3f} s {verdict}")


if __name__ == "__main__":
    main()
