"""Smoke test of benchmarks/recv_floor.py: it runs on both backends and prints every stage.
Nothing about speed is asserted."""

from __future__ import annotations

import subprocess
import sys

import pytest

from ._bench_run import BENCHMARKS

# A benchmark run in subprocesses: bounded by its own timeouts, not the suite's 60 s per
# test (a loaded machine runs it several times slower).
pytestmark = pytest.mark.timeout(600)


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_recv_floor_prints_every_stage(backend: str) -> None:
    proc = subprocess.run(
        [
            sys.executable,
            str(BENCHMARKS / "recv_floor.py"),
            "--backend",
            backend,
            "--messages",
            "5000",
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    for stage in ("try_recv", "recv", "floor recv", "decode", "floor decode"):
        assert f"| {stage} |" in proc.stdout
