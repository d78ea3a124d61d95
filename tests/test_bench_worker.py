"""Smoke test of benchmarks/bench_worker.py: a tiny run per backend, so the script cannot rot.
Timing is measured, never asserted here (that is the benchmark's job).

The bare receive loop always runs. The ``zmtp_qos.Worker`` cases run too once
``zmtp_qos.Worker`` exists; until then the script must refuse them with a clear message
(``test_bench_worker_worker_cases`` checks whichever applies, and says which).
"""

from __future__ import annotations

import json
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

import zmtp_qos

# A benchmark run in subprocesses: bounded by its own timeouts, not the suite's 60 s per
# test (a loaded machine runs it several times slower).
pytestmark = pytest.mark.timeout(600)

SCRIPT = Path(__file__).resolve().parent.parent / "benchmarks" / "bench_worker.py"
HAVE_WORKER = hasattr(zmtp_qos, "Worker")
BARE = ["bare", "bare-sleep"]
WORKER = ["worker", "worker-sync", "worker-sleep"]


def run(*args: str, json_path: Path | None = None) -> subprocess.CompletedProcess[str]:
    extra = ["--json", str(json_path)] if json_path is not None else []
    return subprocess.run(
        [sys.executable, str(SCRIPT), "--quick", "--quiet", "--timeout", "30", *args, *extra],
        capture_output=True,
        text=True,
        timeout=240,
    )


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_bench_worker_runs(backend: str, tmp_path: Path) -> None:
    kinds = BARE + (WORKER if HAVE_WORKER else [])
    if not HAVE_WORKER:
        warnings.warn(
            "zmtp_qos has no Worker yet: this smoke run covers the bare receive loop only "
            "(test_bench_worker_worker_cases checks the script's refusal instead)",
            stacklevel=1,
        )
    out = tmp_path / "worker.json"
    proc = run(
        "--backends", backend, "--cases", ",".join(kinds), "--scaling", "1,10", json_path=out
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    results = json.loads(out.read_text())["results"]
    expected = set()
    for kind in kinds:
        expected |= {f"{kind}-1", f"{kind}-10"} if kind.endswith("-sleep") else {kind}
    assert {r["case"] for r in results} == expected
    for r in results:
        assert r["error"] is None and r["value"] and r["value"] > 0, r
    assert all(column in proc.stdout for column in ("vs bare", "vs ideal", "vs linear"))


def test_bench_worker_worker_cases(tmp_path: Path) -> None:
    """With a Worker: covered by test_bench_worker_runs. Without: a clear refusal, at once."""
    proc = run("--backends", "asyncio", "--cases", "worker", json_path=tmp_path / "w.json")
    if HAVE_WORKER:
        assert proc.returncode == 0, proc.stdout + proc.stderr
        print("zmtp_qos.Worker present: the worker cases ran")
    else:
        print("zmtp_qos.Worker absent: checking that the worker cases are refused clearly")
        assert proc.returncode == 2, proc.stdout + proc.stderr
        assert "need zmtp_qos.Worker" in proc.stderr and "--cases bare,bare-sleep" in proc.stderr
