"""Smoke test of benchmarks/fanout_floor.py: it runs every subscriber kind and prints the
table. Nothing about speed is asserted."""

from __future__ import annotations

import pytest

from ._bench_run import run_script

# A benchmark run in subprocesses: bounded by its own timeouts, not the suite's 60 s per
# test (a loaded machine runs it several times slower).
pytestmark = pytest.mark.timeout(600)


def test_fanout_floor_prints_every_subscriber() -> None:
    pytest.importorskip("zmq", reason="fanout_floor.py feeds its subscribers from pyzmq")
    stdout = run_script("fanout_floor.py", ["--messages", "3000", "--cycles", "1"], timeout=300)
    for name in ("pyzmq sync", "zmtp asyncio", "zmtp trio"):
        assert f"| {name} |" in stdout
