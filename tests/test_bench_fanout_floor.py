"""Smoke test of benchmarks/fanout_floor.py: it runs every subscriber kind and prints the
table. Nothing about speed is asserted."""

from __future__ import annotations

import subprocess
import sys

import pytest

from ._bench_run import BENCHMARKS

# A benchmark run in subprocesses: bounded by its own timeouts, not the suite's 60 s per
# test (a loaded machine runs it several times slower).
pytestmark = pytest.mark.timeout(600)


def test_fanout_floor_prints_every_subscriber() -> None:
    pytest.importorskip("zmq", reason="fanout_floor.py feeds its subscribers from pyzmq")
    proc = subprocess.run(
        [
            sys.executable,
            str(BENCHMARKS / "fanout_floor.py"),
            "--messages",
            "3000",
            "--cycles",
            "1",
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    for name in ("pyzmq sync", "zmtp asyncio", "zmtp trio"):
        assert f"| {name} |" in proc.stdout
