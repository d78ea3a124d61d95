"""Runs a benchmark script the way the smoke tests (tests/test_bench_*.py) do: a tiny run in a
fresh interpreter, its JSON read back. Timing is measured by the scripts, never asserted."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

BENCHMARKS = Path(__file__).resolve().parent.parent / "benchmarks"


def run_script(script: str, args: list[str], timeout: float = 240) -> str:
    """Run ``benchmarks/<script> <args>``; what it printed (fails the test with the script's
    output if it exits non-zero)."""
    proc = subprocess.run(
        [sys.executable, str(BENCHMARKS / script), *args],
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc.stdout


def run_bench(script: str, args: list[str], out: Path, timeout: float = 240) -> dict[str, Any]:
    """Run ``benchmarks/<script> <args> --quiet --json out``; the payload (fails the test with
    the script's output if it exits non-zero)."""
    stdout = run_script(script, [*args, "--quiet", "--json", str(out)], timeout)
    payload: dict[str, Any] = json.loads(out.read_text())
    payload["_stdout"] = stdout
    return payload
