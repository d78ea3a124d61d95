"""Smoke test of benchmarks/recv_floor.py: it runs on both backends and prints every stage.
Nothing about speed is asserted."""

from __future__ import annotations

import pytest

from ._bench_run import run_script

# A benchmark run in subprocesses: bounded by its own timeouts, not the suite's 60 s per
# test (a loaded machine runs it several times slower).
pytestmark = pytest.mark.timeout(600)


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_recv_floor_prints_every_stage(backend: str) -> None:
    stdout = run_script("recv_floor.py", ["--backend", backend, "--messages", "5000"], timeout=120)
    for stage in ("try_recv", "recv", "floor recv", "decode", "floor decode"):
        assert f"| {stage} |" in stdout
