"""benchmarks/load.py, the reproducible loaded machine: its busy processes start, use CPU,
stop, and never outlive the process that started them; bench_throughput.py under it reports
each side's scheduler counters over interleaved cycles. Nothing about speed is asserted."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from ._bench_run import BENCHMARKS, run_bench

pytestmark = pytest.mark.timeout(600)

sys.path.insert(0, str(BENCHMARKS))

from load import BackgroundLoad, sched_counters, sched_delta  # noqa: E402


def _wait_gone(pid: int, timeout: float) -> bool:
    """Whether ``pid`` disappears within ``timeout`` s (a process that is not our child:
    polled, as nothing can be waited on)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except (FileNotFoundError, ProcessLookupError):
            return True
        if state == "Z":
            return True
        time.sleep(0.05)
    return False


@pytest.mark.skipif(not Path("/proc/self/schedstat").exists(), reason="needs /proc schedstat")
def test_background_load_runs_and_stops() -> None:
    load = BackgroundLoad(2)
    with load:
        assert len(load.procs) == 2
        assert all(p.poll() is None for p in load.procs)
        assert all(os.getsid(p.pid) == p.pid for p in load.procs)  # sessions of their own
        deadline = time.monotonic() + 30
        while load.run_seconds() < 0.05:  # the busy loops get CPU
            assert time.monotonic() < deadline, "busy processes never ran"
            time.sleep(0.01)
        procs = list(load.procs)
    assert all(p.returncode is not None for p in procs)
    assert load.procs == []
    assert load.cpus_used is not None and load.cpus_used > 0


def test_same_session_load() -> None:
    with BackgroundLoad(1, same_session=True) as load:
        assert os.getsid(load.procs[0].pid) == os.getsid(0)


@pytest.mark.skipif(sys.platform != "linux", reason="reads /proc")
def test_busy_process_ends_with_its_parent() -> None:
    """A harness killed without its clean-up leaves no busy process behind."""
    code = (
        "import sys; sys.path.insert(0, sys.argv[1]); from load import BackgroundLoad; "
        "load = BackgroundLoad(1).start(); print(load.procs[0].pid, flush=True); "
        "import os; os._exit(0)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, str(BENCHMARKS)],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert _wait_gone(int(out.stdout.split()[0]), 30)


def test_sched_counters_count_this_process() -> None:
    before = sched_counters()
    end = time.process_time() + 0.05
    while time.process_time() < end:
        pass
    delta = sched_delta(before)
    assert set(delta) == {"voluntary", "involuntary", "run_s", "wait_s", "migrations"}
    assert all(v >= 0 for v in delta.values())
    if Path("/proc/self/task").is_dir():
        assert delta["run_s"] > 0


def test_bench_throughput_sched_cycles_under_load(tmp_path: Path) -> None:
    payload = run_bench(
        "bench_throughput.py",
        [
            "--quick",
            "--impl",
            "zmtp-asyncio,pyzmq-sync",
            "--sizes",
            "64",
            "--max-count",
            "20000",
            "--timeout",
            "30",
            "--cycles",
            "2",
            "--sched",
            "--background-load",
            "1",
        ],
        tmp_path / "t.json",
    )
    assert payload["settings"]["cycles"] == 2
    assert payload["settings"]["background_load"] == 1
    assert payload["environment"]["background_load"] == {"processes": 1, "same_session": False}
    for r in payload["results"]["tcp"]:
        assert r["error"] is None and len(r["runs"]) == 2, r  # one round (--quick) per cycle
        for side in ("recv", "send"):
            figures = r["sched_per_msg"][side]
            assert {"voluntary", "involuntary", "run_us", "wait_us"} <= set(figures), r
    assert "Scheduler counters per side" in payload["_stdout"]
