"""Smoke test of benchmarks/bench_curves.py and its plots (benchmarks/plots.py).

The measuring run uses ``--no-plot``, and the series the figures show are checked from its JSON
without matplotlib. Drawing the PNGs needs matplotlib (the optional ``bench`` extra): that one
test runs only where matplotlib is importable, and otherwise is reported as skipped with the
reason, never silently. Nothing about speed is asserted."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from ._bench_run import BENCHMARKS, run_bench

sys.path.insert(0, str(BENCHMARKS))
import plots

# A benchmark run in subprocesses: bounded by its own timeouts, not the suite's 60 s per
# test (a loaded machine runs it several times slower).
pytestmark = pytest.mark.timeout(600)


@pytest.fixture(scope="module")
def curves(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    out = tmp_path_factory.mktemp("curves") / "c.json"
    return run_bench(
        "bench_curves.py",
        ["--quick", "--no-plot", "--sizes", "64,4k", "--peers", "1,3", "--timeout", "30"],
        out,
        timeout=400,
    )


def test_bench_curves_measures_every_part(curves: dict[str, Any]) -> None:
    sweep = curves["size_sweep"]
    assert {(r["impl"], r["size"]) for r in sweep} == {
        (impl, size) for impl in ("zmtp-asyncio", "zmtp-trio", "pyzmq-sync") for size in (64, 4096)
    }
    assert all(r["error"] is None and r["msgs_per_s"] > 0 for r in sweep)
    assert {r["case"] for r in curves["latency"]} == {
        "zmtp-reqrep-asyncio",
        "zmtp-reqrep-trio",
        "pyzmq-reqrep-sync",
    }
    assert all(r["error"] is None for r in curves["latency"] + curves["peers"])
    assert {r["peers"] for r in curves["peers"]} == {1, 3}


def test_plot_series_from_the_json(curves: dict[str, Any]) -> None:
    rates, mbps = plots.size_series(curves)
    assert set(rates) == {"zmtp-asyncio", "zmtp-trio", "pyzmq-sync"}
    assert [x for x, _ in rates["zmtp-trio"]] == [64, 4096]
    assert mbps["pyzmq-sync"][1][1] == pytest.approx(rates["pyzmq-sync"][1][1] * 4096 / 1e6)
    cpu = plots.cpu_series(curves)
    assert {"zmtp-asyncio recv", "zmtp-asyncio send", "pyzmq-sync recv"} <= set(cpu)
    assert all(v > 0 for points in cpu.values() for _, v in points)
    latency = plots.latency_series(curves)
    assert set(latency) == {"zmtp-reqrep-asyncio", "zmtp-reqrep-trio", "pyzmq-reqrep-sync"}
    for points in latency.values():
        qs = [q for q, _ in points]
        assert qs == sorted(qs) and 50.0 in qs and 99.9 in qs
        assert [v for _, v in points] == sorted(v for _, v in points)  # percentiles rise
    peer_rates, rss = plots.peers_series(curves)
    assert [x for x, _ in peer_rates["pyzmq-sync"]] == [1, 3] and set(rss) == set(peer_rates)
    assert "load average" in plots.caption(curves)


HAVE_MATPLOTLIB = importlib.util.find_spec("matplotlib") is not None


@pytest.mark.skipif(
    not HAVE_MATPLOTLIB,
    reason="matplotlib is not installed (optional `bench` extra): PNG rendering NOT tested here",
)
def test_plots_render_pngs(curves: dict[str, Any], tmp_path: Path) -> None:
    written = plots.render_all(curves, tmp_path)
    assert sorted(p.name for p in written) == sorted(plots.FILES.values())
    for path in written:
        assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and path.stat().st_size > 10_000


def test_redraw_without_matplotlib_is_a_clear_error_or_works(tmp_path: Path) -> None:
    """``--from-json`` either draws (matplotlib present) or says what to install."""
    source = tmp_path / "in.json"
    source.write_text('{"environment": {}, "size_sweep": [], "latency": [], "peers": []}')
    proc = subprocess.run(
        [
            sys.executable,
            str(BENCHMARKS / "bench_curves.py"),
            "--from-json",
            str(source),
            "--plot-dir",
            str(tmp_path),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    if HAVE_MATPLOTLIB:
        assert proc.returncode == 0, proc.stderr
    else:
        assert proc.returncode == 2 and "matplotlib" in proc.stderr
