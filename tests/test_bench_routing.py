"""Smoke test of benchmarks/bench_routing.py (DEALER -> ROUTER, ROUTER -> DEALER): a tiny run per
backend, so the script cannot rot. Nothing about speed is asserted."""

from __future__ import annotations

from pathlib import Path

import pytest

from ._bench_run import run_bench

# A benchmark run in subprocesses: bounded by its own timeouts, not the suite's 60 s per
# test (a loaded machine runs it several times slower).
pytestmark = pytest.mark.timeout(600)


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_bench_routing_runs(backend: str, tmp_path: Path) -> None:
    payload = run_bench(
        "bench_routing.py",
        [
            "--quick",
            "--impl",
            f"zmtp-{backend},pyzmq-sync",
            "--max-count",
            "20000",
            "--timeout",
            "30",
        ],
        tmp_path / "r.json",
    )
    results = payload["results"]
    assert {(r["section"], r["impl"]) for r in results} == {
        (pattern, impl)
        for pattern in ("dealer-router", "router-dealer")
        for impl in (f"zmtp-{backend}", "pyzmq-sync")
    }
    for r in results:
        assert r["error"] is None and r["msgs_per_s"] > 0, r
        assert r["cpu_us_per_msg"]["receiver"] > 0, r
    assert "DEALER -> ROUTER" in payload["_stdout"] and "ROUTER -> DEALER" in payload["_stdout"]
