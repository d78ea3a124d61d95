"""The harness the callgrind scripts share: instruction totals of a measured child program,
per message, for several source trees interleaved.

A count of ``Ir(2M) - Ir(M)`` over ``M`` messages leaves out start-up (imports, compiling,
connecting), and callgrind counts instructions, not seconds, so the figure barely moves with
the machine's load: the evidence for a change where rates are noise.
"""

from __future__ import annotations

import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path


def instructions(
    script: Path, child_args: Sequence[str], tree: Path, timeout: float, tmp: Path
) -> int:
    """Total instructions of ``script --child child_args`` run under callgrind, importing
    zmtp from ``tree``."""
    out = tmp / f"cg-{os.getpid()}-{time.monotonic_ns()}.out"
    cmd = [
        "valgrind",
        "--tool=callgrind",
        f"--callgrind-out-file={out}",
        sys.executable,
        str(script),
        "--child",
        *child_args,
    ]
    env = dict(os.environ, PYTHONPATH=str(tree))
    subprocess.run(cmd, env=env, check=True, timeout=timeout, capture_output=True)
    match = re.search(r"^(?:summary|totals): (\d+)", out.read_text(), re.MULTILINE)
    if match is None:
        raise RuntimeError(f"no instruction total in {out}")
    out.unlink()
    return int(match.group(1))


def per_message_by_tree(
    script: Path,
    trees: Sequence[Path],
    messages: int,
    child_args: Callable[[int], list[str]],
    cycles: int,
    timeout: float,
) -> dict[Path, list[float]]:
    """Instructions per message for each tree and cycle, ``(Ir(2M) - Ir(M)) / M``; the trees
    run in turn, their order reversed every other cycle. ``child_args(n)`` gives the child's
    arguments for ``n`` messages."""
    per_message: dict[Path, list[float]] = {tree: [] for tree in trees}
    with tempfile.TemporaryDirectory() as tmp:
        for cycle in range(cycles):
            order = list(trees) if cycle % 2 == 0 else list(trees)[::-1]
            for tree in order:
                small = instructions(script, child_args(messages), tree, timeout, Path(tmp))
                large = instructions(script, child_args(2 * messages), tree, timeout, Path(tmp))
                value = (large - small) / messages
                per_message[tree].append(value)
                print(f"cycle {cycle + 1}: {tree}: {value:,.0f} Ir/msg", file=sys.stderr)
    return per_message


def print_tree_table(per_tree: dict[Path, list[float]], unit: str) -> None:
    """The table every callgrind script ends with: per tree the median of its cycles, the
    ratio to the first tree, and every cycle's value (``unit``: the column's name)."""
    trees = list(per_tree)
    base = statistics.median(per_tree[trees[0]])
    print(f"| tree | {unit} (median) | vs {trees[0].name or trees[0]} | cycles |")
    print("|---|---:|---:|---|")
    for tree in trees:
        values = per_tree[tree]
        med = statistics.median(values)
        cycles = ", ".join(f"{v:,.0f}" for v in values)
        print(f"| {tree} | {med:,.0f} | {med / base:.3f} | {cycles} |")
