"""The README's usage example and quick-start commands must stay true."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from tests._repo_files import tracked_files
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
    """.ci/run runs the README's test command as printed, once, in a fresh copy of the checkout
    made in a new temporary directory (so nothing beside the repository can make it pass)."""
    commands = re.findall(r"```sh\n(.*?)\n```", README, re.S)
    assert len(commands) == 2, "the quick start is two commands"
    interop, tests = commands
    assert "zmtp interop" in interop
    ci_script = (ROOT / ".ci" / "run").read_text().splitlines()
    assert ci_script.count(tests) == 1, "CI runs the README's test command once, as printed"
    lines = [line for line in ci_script if line.strip() and not line.lstrip().startswith("#")]
    before = lines[: lines.index(tests)]
    assert 'scratch="$(mktemp -d)"' in before
    assert '"$checkout/.ci/fresh-copy" "$checkout" "$scratch/zmtp"' in before
    directory_changes = [line for line in before if line.startswith("cd ")]
    assert directory_changes[-1:] == ['cd "$scratch/zmtp"'], "the command runs in the copy"


def test_ci_copy_holds_exactly_what_a_clone_holds(tmp_path: Path) -> None:
    """.ci/fresh-copy puts the repository's files, and nothing else, into a new directory."""
    subprocess.run(
        [str(ROOT / ".ci" / "fresh-copy"), str(ROOT), str(tmp_path / "zmtp")],
        check=True,
        timeout=120,
    )
    assert [entry.name for entry in tmp_path.iterdir()] == ["zmtp"]
    copy = tmp_path / "zmtp"
    copied = {path.relative_to(copy) for path in copy.rglob("*") if not path.is_dir()}
    assert copied == {path.relative_to(ROOT) for path in tracked_files()}
    for name in sorted(copied):
        assert (copy / name).read_bytes() == (ROOT / name).read_bytes(), name


def test_readme_counts_the_interop_rows() -> None:
    """The README says how many rows ``zmtp interop`` runs: every registered row, once per
    backend. Adding rows means updating that sentence."""
    rows = len(interop.REGISTRY) * len(interop.BACKENDS)
    stated = re.findall(r"on asyncio and trio: (\d+) rows", " ".join(README.split()))
    assert stated == [str(rows)], f"README states {stated}, the registry has {rows} rows"
