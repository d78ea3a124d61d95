"""Smoke test of benchmarks/callgrind_fanout.py: its measured program (``--child``: a zmtp PUB
and pyzmq SUB processes, every message delivered) runs natively here; the valgrind harness
around it is not run by the suite (minutes under callgrind). Nothing about speed is asserted."""

from __future__ import annotations

import subprocess
import sys

import pytest

from ._bench_run import BENCHMARKS


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_callgrind_fanout_child_delivers_everything(backend: str) -> None:
    proc = subprocess.run(
        [
            sys.executable,
            str(BENCHMARKS / "callgrind_fanout.py"),
            "--child",
            "--messages",
            "300",
            "--subscribers",
            "3",
            "--backend",
            backend,
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
