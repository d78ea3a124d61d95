"""Smoke test of benchmarks/bench_qos.py: a tiny run per backend, so the script cannot rot.
Timing is measured, never asserted here (that is the benchmark's job)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

# A benchmark run in subprocesses: bounded by its own timeouts, not the suite's 60 s per
# test (a loaded machine runs it several times slower).
pytestmark = pytest.mark.timeout(600)

SCRIPT = Path(__file__).resolve().parent.parent / "benchmarks" / "bench_qos.py"


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_bench_qos_runs(backend: str, tmp_path: Path) -> None:
    out = tmp_path / "qos.json"
    proc = subprocess.run(
        [
            sys.executable,
            str(SCRIPT),
            "--quick",
            "--quiet",
            "--sizes",
            "64",
            "--backends",
            backend,
            "--variants",
            "plain,qos2,qos3",
            "--max-count",
            "2000",
            "--timeout",
            "20",
            "--json",
            str(out),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    results = json.loads(out.read_text())["results"]
    assert {(r["test"], r["variant"]) for r in results} == {
        (test, variant) for test in ("push", "reqrep") for variant in ("plain", "qos2", "qos3")
    }
    for r in results:
        assert r["error"] is None and r["value"] and r["value"] > 0, r
    assert "PUSH -> PULL" in proc.stdout and "REQ -> REP" in proc.stdout
