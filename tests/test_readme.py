"""The README's usage example and quick-start commands must stay true."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from zmtp import interop

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text()


def test_readme_usage_example_runs_as_written() -> None:
    example = re.findall(r"```python\n(.*?)```", README, re.S)[0]
    result = subprocess.run(
        [sys.executable, "-c", example], capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == ["b'hello'", "[b'several', b'parts']"]


def test_ci_runs_exactly_the_readme_test_command() -> None:
    commands = re.findall(r"```sh\n(.*?)\n```", README, re.S)
    assert len(commands) == 2, "the quick start is two commands"
    interop, tests = commands
    assert "zmtp interop" in interop
    ci_script = (ROOT / ".ci" / "run").read_text().splitlines()
    assert tests in ci_script


def test_readme_counts_the_interop_rows() -> None:
    """The README says how many rows ``zmtp interop`` runs: every registered row, once per
    backend. Adding rows means updating that sentence."""
    rows = len(interop.REGISTRY) * len(interop.BACKENDS)
    stated = re.findall(r"on asyncio and trio: (\d+) rows", " ".join(README.split()))
    assert stated == [str(rows)], f"README states {stated}, the registry has {rows} rows"
