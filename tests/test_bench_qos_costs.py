"""Smoke test of benchmarks/qos_costs.py ``ends``: a tiny run per backend, so the script and
its per-end report (CPU, GC, context switches, messages in flight) cannot rot. Timing is
measured, never asserted here (that is the benchmark's job)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

# Two processes per level, bounded by their own timeouts, not the suite's 60 s per test.
pytestmark = pytest.mark.timeout(300)

SCRIPT = Path(__file__).resolve().parent.parent / "benchmarks" / "qos_costs.py"
NUMBER = r"(\d+(?:\.\d+)?)"


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_qos_costs_ends_reports_each_end(backend: str) -> None:
    proc = subprocess.run(
        [
            sys.executable,
            str(SCRIPT),
            "ends",
            "--backend",
            backend,
            "--count",
            "3000",
            "--levels=0,1",
            "--yield-every=64",
            "--gc-freeze",
        ],
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    senders = re.findall(r"^  sender   (.*)$", proc.stdout, re.MULTILINE)
    receivers = re.findall(r"^  receiver (.*)$", proc.stdout, re.MULTILINE)
    assert len(senders) == len(receivers) == 2, proc.stdout
    for line in senders + receivers:
        for field in ("user", "sys", "wall", "gc", "vcsw/msg", "ivcsw/msg", "waiting"):
            assert re.search(rf"\b{re.escape(field)} {NUMBER}", line), (field, line)
        assert re.search(r"collections \d+/\d+/\d+", line), line
    # Level 1 tracks what is in flight; level 0 has nothing to track.
    level0, level1 = (re.search(rf"in-flight\(mean\) {NUMBER}", s) for s in senders)
    assert level0 is not None and float(level0.group(1)) == 0
    assert level1 is not None
