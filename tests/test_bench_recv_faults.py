"""Smoke test of benchmarks/recv_faults.py: it runs on both backends and prints a row for
each. Nothing about speed or page faults is asserted (tests/test_engine_allocator.py checks
the faults' cause directly)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from ._bench_run import BENCHMARKS

# A benchmark run in subprocesses: bounded by its own timeouts, not the suite's 60 s per test.
pytestmark = pytest.mark.timeout(600)


def test_recv_faults_prints_a_row_per_backend() -> None:
    proc = subprocess.run(
        [sys.executable, str(BENCHMARKS / "recv_faults.py"), "--messages", "300", "--warmup", "50"],
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    for backend in ("asyncio", "trio"):
        assert f"| {backend} |" in proc.stdout
