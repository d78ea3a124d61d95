"""The repository's own files, with or without git (shared by the self-containment and CI tests).

A fresh clone is what ``git ls-files`` lists. CI runs the suite in a copy that has no ``.git``
(``.ci/fresh-copy``), so without git the list is every file of the tree minus what
``.gitignore`` excludes; ``tests/test_self_contained.py`` checks that the two agree.
"""

from __future__ import annotations

import fnmatch
import os
import subprocess
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _ignored_names() -> list[str]:
    gitignore = ROOT / ".gitignore"
    lines = gitignore.read_text().splitlines() if gitignore.exists() else []
    names = [line.strip().rstrip("/") for line in lines]
    return [".git", *(name for name in names if name and not name.startswith("#"))]


def walked_files() -> list[Path]:
    """Every file of the tree that ``.gitignore`` does not exclude (no git needed)."""
    ignored = _ignored_names()
    found = []
    for directory, subdirs, files in os.walk(ROOT):
        subdirs[:] = [d for d in subdirs if not any(fnmatch.fnmatch(d, p) for p in ignored)]
        for name in files:
            if not any(fnmatch.fnmatch(name, p) for p in ignored):
                found.append(Path(directory) / name)
    return sorted(found)


def git_files() -> list[Path] | None:
    """``git ls-files`` of this repository, or None when it is not a git checkout of its own."""
    try:
        top = subprocess.run(
            ["git", "-C", str(ROOT), "rev-parse", "--show-toplevel"],
            capture_output=True,
            text=True,
            timeout=60,
        )
        if top.returncode != 0 or Path(top.stdout.strip()).resolve() != ROOT:
            return None
        listed = subprocess.run(
            ["git", "-C", str(ROOT), "ls-files", "-z"],
            capture_output=True,
            check=True,
            timeout=60,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    names = [name for name in listed.stdout.decode().split("\0") if name]
    return sorted(ROOT / name for name in names if (ROOT / name).is_file())


@cache
def tracked_files() -> tuple[Path, ...]:
    return tuple(git_files() or walked_files())
