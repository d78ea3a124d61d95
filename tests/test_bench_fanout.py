"""Smoke test of benchmarks/bench_fanout.py: a tiny run, so the script cannot rot; checks the
per-process CPU accounting (publisher and subscribers) in its JSON and its table, and the
arithmetic that turns the children's CPU times into those figures. Nothing about speed is
asserted."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from ._bench_run import BENCHMARKS, run_bench

sys.path.insert(0, str(BENCHMARKS))
import bench_fanout

# A benchmark run in subprocesses: bounded by its own timeouts, not the suite's 60 s per
# test (a loaded machine runs it several times slower).
pytestmark = pytest.mark.timeout(600)


def test_round_stats_cpu_figures() -> None:
    """Per message sent for the publisher, per message received (median) for a subscriber,
    and cores = CPU seconds over wall seconds, summed over the subscribers."""
    subs = [
        {"messages": 1000, "elapsed": 0.5, "received": 1200, "cpu_s": 0.001, "sys_s": 0.0005},
        {"messages": 1000, "elapsed": 0.5, "received": 1200, "cpu_s": 0.002, "sys_s": 0.001},
        {"messages": 2000, "elapsed": 0.5, "received": 2400, "cpu_s": 0.010, "sys_s": 0.004},
    ]
    pub = {"sent": 4000, "send_elapsed": 2.0, "send_cpu_s": 0.004, "send_sys_s": 0.003}
    stats = bench_fanout._round_stats(subs, pub)
    assert stats["pub_cpu_us"] == pytest.approx(1.0)
    assert stats["sub_cpu_us"] == pytest.approx(2.0)  # the median of 1, 2 and 5 µs
    assert stats["pub_sys_us"] == pytest.approx(0.75)
    assert stats["sub_sys_us"] == pytest.approx(1.0)  # the median of 0.5, 1 and 2 µs
    assert stats["pub_cores"] == pytest.approx(0.002)
    assert stats["sub_cores"] == pytest.approx(0.002 + 0.004 + 0.02)
    assert stats["cores"] == pytest.approx(stats["pub_cores"] + stats["sub_cores"])
    assert stats["per_sub_median"] == pytest.approx(2000)
    assert stats["loss_median"] == pytest.approx(0.7)
    # cores over the aggregate delivered rate (2000 + 2000 + 4000 msgs/s)
    assert stats["cpu_per_copy_us"] == pytest.approx(stats["cores"] / 8000 * 1e6)


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_bench_fanout_reports_cpu_per_process(backend: str, tmp_path: Path) -> None:
    pytest.importorskip("zmq", reason="the run compares against pyzmq sync")
    payload = run_bench(
        "bench_fanout.py",
        [
            "--quick",
            "--impl",
            f"zmtp-{backend},pyzmq-sync",
            "--subscribers",
            "2",
            "--timeout",
            "60",
        ],
        tmp_path / "f.json",
    )
    results = payload["results"]
    assert {r["impl"] for r in results} == {f"zmtp-{backend}", "pyzmq-sync"}
    for r in results:
        assert r["error"] is None, r
        rd = r["reported_round"]
        assert rd["per_sub_median"] > 0, r
        assert rd["pub_cpu_us"] > 0 and rd["sub_cpu_us"] > 0, r
        assert rd["pub_cores"] > 0 and rd["sub_cores"] > 0, r
        assert rd["cpu_per_copy_us"] > 0, r
        assert len(rd["subscribers"]) == 2
        assert all(s["cpu_s"] > 0 for s in rd["subscribers"]), r
        assert "summary_sub_cpu_us" in r and "summary_pub_cpu_us" in r
    stdout = payload["_stdout"]
    for column in (
        "pub CPU µs/msg",
        "sub CPU µs/msg",
        "cores pub + subs",
        "CPU µs per delivered copy",
    ):
        assert column in stdout
