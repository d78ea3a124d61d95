"""benchmarks/fanout_sched.py: the arithmetic that turns the kernel's per-thread counters into
on-CPU / runnable / asleep shares and the machine's split, on given figures; and a tiny run
(two subscribers) so the script cannot rot. Nothing about speed is asserted."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from ._bench_run import BENCHMARKS, run_script

sys.path.insert(0, str(BENCHMARKS))
import fanout_sched
import sched_bursts

pytestmark = pytest.mark.timeout(600)


def test_parse_kernel_files() -> None:
    assert fanout_sched.parse_schedstat("1500000000 250000000 42\n") == (1_500_000_000, 250_000_000)
    status = "Name:\tpython\nvoluntary_ctxt_switches:\t12\nnonvoluntary_ctxt_switches:\t3400\n"
    assert fanout_sched.parse_switches(status) == (12, 3400)


def test_share_is_on_cpu_runnable_and_the_rest_asleep() -> None:
    before = fanout_sched.ThreadSample(run_ns=0, wait_ns=0, voluntary=10, involuntary=0)
    after = fanout_sched.ThreadSample(
        run_ns=600_000_000, wait_ns=1_000_000_000, voluntary=12, involuntary=3000
    )
    s = fanout_sched.share(before, after, wall=2.0)
    assert s.on_cpu == pytest.approx(0.3)
    assert s.runnable == pytest.approx(0.5)
    assert s.asleep == pytest.approx(0.2)
    assert s.voluntary_per_s == pytest.approx(1.0)
    assert s.involuntary_per_s == pytest.approx(1500.0)
    # counters read a moment apart from the clock: asleep never goes negative
    full = fanout_sched.ThreadSample(
        run_ns=1_000_000_000, wait_ns=1_010_000_000, voluntary=10, involuntary=0
    )
    assert fanout_sched.share(before, full, wall=2.0).asleep == 0.0


def test_machine_split_others_and_idle() -> None:
    hz = fanout_sched.CLK_TCK
    # user nice system idle iowait irq softirq steal: 1.5 cores busy, 0.5 idle over 1 s
    before = [0, 0, 0, 0, 0, 0, 0, 0]
    after = [int(1.2 * hz), 0, int(0.3 * hz), int(0.5 * hz), 0, 0, 0, 0]
    split = fanout_sched.machine_split(before, after, ours_cores=1.0, wall=1.0)
    assert split["ours"] == 1.0
    assert split["others"] == pytest.approx(0.5, abs=2 / hz)
    assert split["idle"] == pytest.approx(0.5, abs=1 / hz)


@pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="needs Linux /proc")
def test_fanout_sched_small_run(tmp_path: Path) -> None:
    out = tmp_path / "s.json"
    stdout = run_script(
        "fanout_sched.py",
        [
            "--impl",
            "zmtp-asyncio",
            "--subscribers",
            "2",
            "--skip",
            "0.2",
            "--window",
            "0.5",
            "--json",
            str(out),
        ],
        timeout=300,
    )
    assert "publisher on-CPU" in stdout
    (result,) = json.loads(out.read_text())
    assert result["impl"] == "zmtp-asyncio"
    pub = result["publisher"]
    assert set(pub) == {"on_cpu", "runnable", "asleep", "voluntary_per_s", "involuntary_per_s"}
    assert 0.0 <= pub["on_cpu"] <= 1.1
    assert set(result["subscribers_median"]) == set(pub)
    assert result["bench_row"].startswith("| zmtp-asyncio")


@pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="needs Linux /proc")
def test_fanout_sched_together(tmp_path: Path) -> None:
    """Two benchmarks at once, one window: each result counts its own processes as ``ours``
    and the other benchmark among ``others``."""
    out = tmp_path / "t.json"
    run_script(
        "fanout_sched.py",
        [
            "--impl",
            "zmtp-asyncio,zmtp-trio",
            "--together",
            "--subscribers",
            "2",
            "--skip",
            "0.2",
            "--window",
            "0.5",
            "--slack",
            "4",
            "--json",
            str(out),
        ],
        timeout=300,
    )
    results = json.loads(out.read_text())
    assert [r["impl"] for r in results] == ["zmtp-asyncio", "zmtp-trio"]
    assert results[0]["together_with"] == ["zmtp-trio"]
    a, b = results
    assert a["window_s"] == b["window_s"]  # one window for both
    # the other benchmark's cores are in "others" (the machine's busy time is the same)
    assert a["ours"] + a["others"] == pytest.approx(b["ours"] + b["others"])


@pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="needs Linux /proc")
def test_sched_bursts_measures_both_sessions() -> None:
    """benchmarks/sched_bursts.py: both sessions' cores are read, and no process is left."""
    busy, bursty = sched_bursts.measure(1, 100.0, 100.0, 0.3)
    assert 0.0 < busy <= 2.1
    assert 0.0 < bursty <= 2.1
    leftover = [
        p for p in Path("/proc").iterdir() if p.name.isdigit() and "time.sleep(nap)" in _cmdline(p)
    ]
    assert not leftover


def _cmdline(proc: Path) -> str:
    try:
        return (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode().rstrip()
    except OSError:
        return ""
