"""Smoke test of benchmarks/bench_throughput.py: a tiny run, so the script cannot rot; checks the
CPU-per-message columns and the pyzmq inproc references. Nothing about speed is asserted."""

from __future__ import annotations

from pathlib import Path

import pytest

from ._bench_run import run_bench

# A benchmark run in subprocesses: bounded by its own timeouts, not the suite's 60 s per
# test (a loaded machine runs it several times slower).
pytestmark = pytest.mark.timeout(600)


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_bench_throughput_runs_with_cpu_and_inproc(backend: str, tmp_path: Path) -> None:
    payload = run_bench(
        "bench_throughput.py",
        [
            "--quick",
            "--impl",
            f"zmtp-{backend},pyzmq-sync",
            "--sizes",
            "64",
            "--inproc",
            "--raw-chunk",
            "64k",
            "--max-count",
            "20000",
            "--timeout",
            "30",
        ],
        tmp_path / "t.json",
    )
    tcp = payload["results"]["tcp"]
    assert {r["impl"] for r in tcp} == {f"zmtp-{backend}", "pyzmq-sync"}
    for r in tcp:
        assert r["error"] is None and r["msgs_per_s"] > 0, r
        assert r["cpu_us_per_msg"]["receiver"] > 0 and r["cpu_us_per_msg"]["sender"] > 0, r
    inproc = {r["impl"]: r for r in payload["results"]["inproc"]}
    assert {"pyzmq-inproc-sync", "pyzmq-inproc-asyncio", f"zmtp-inproc-{backend}"} <= set(inproc)
    for r in inproc.values():
        assert r["error"] is None and r["msgs_per_s"] > 0, r
    assert "CPU µs/msg recv" in payload["_stdout"]
    assert "vs pyzmq-inproc-sync" in payload["_stdout"]
