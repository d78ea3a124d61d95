"""Smoke test of benchmarks/bench_peers.py (many PUSH connections into one PULL): a tiny run per
backend, so the script cannot rot. Nothing about speed is asserted."""

from __future__ import annotations

from pathlib import Path

import pytest

from ._bench_run import run_bench

# A benchmark run in subprocesses: bounded by its own timeouts, not the suite's 60 s per
# test (a loaded machine runs it several times slower).
pytestmark = pytest.mark.timeout(600)


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_bench_peers_runs(backend: str, tmp_path: Path) -> None:
    payload = run_bench(
        "bench_peers.py",
        [
            "--quick",
            "--impl",
            f"zmtp-{backend},pyzmq-sync",
            "--peers",
            "1,5",
            "--processes",
            "2",
            "--pilot",
            "2000",
            "--timeout",
            "30",
        ],
        tmp_path / "p.json",
    )
    results = payload["results"]
    assert {(r["impl"], r["peers"], r["processes"]) for r in results} == {
        (impl, peers, min(2, peers))
        for impl in (f"zmtp-{backend}", "pyzmq-sync")
        for peers in (1, 5)
    }
    for r in results:
        assert r["error"] is None and r["msgs_per_s"] > 0, r
        assert r["rss_per_connection_receiver"] is not None, r
        assert r["cpu_us_per_msg"]["receiver"] > 0 and r["cpu_us_per_msg"]["senders"] > 0, r
        assert r["cpu_us_per_msg"]["receiver_gc"] >= 0, r
    assert "vs 1 peer" in payload["_stdout"]


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_bench_peers_no_gc_turns_the_receivers_collector_off(backend: str, tmp_path: Path) -> None:
    """``--no-gc``: the receiver's timed rounds run without the cyclic GC, so the GC column
    (measured by a ``gc.callbacks`` hook) reads exactly zero."""
    payload = run_bench(
        "bench_peers.py",
        [
            "--quick",
            "--no-gc",
            "--impl",
            f"zmtp-{backend}",
            "--peers",
            "5",
            "--pilot",
            "2000",
            "--timeout",
            "30",
        ],
        tmp_path / "p.json",
    )
    [result] = payload["results"]
    assert result["error"] is None and result["msgs_per_s"] > 0, result
    assert result["cpu_us_per_msg"]["receiver_gc"] == 0.0, result
    assert "receiver GC off" in payload["_stdout"]


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_bench_peers_sender_context(backend: str, tmp_path: Path) -> None:
    """``--sender-context``: the zmtp senders make their sockets with one ``zmtp.Context`` and
    every connection still delivers (the run needs a first message from each peer)."""
    payload = run_bench(
        "bench_peers.py",
        [
            "--quick",
            "--sender-context",
            "--impl",
            f"zmtp-{backend}",
            "--peers",
            "6",
            "--processes",
            "2",
            "--pilot",
            "2000",
            "--timeout",
            "30",
        ],
        tmp_path / "p.json",
    )
    [result] = payload["results"]
    assert result["error"] is None and result["msgs_per_s"] > 0, result
    assert payload["settings"]["sender_context"] is True
    assert "zmtp senders in one zmtp.Context" in payload["_stdout"]
