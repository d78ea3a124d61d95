"""The harness the callgrind scripts share: instruction totals of a measured child program,
per message, for several source trees interleaved.

A count of ``Ir(2M) - Ir(M)`` over ``M`` messages leaves out start-up (imports, compiling,
connecting), and callgrind counts instructions, not seconds, so the figure barely moves with
the machine's load: the evidence for a change where rates are noise.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import NamedTuple


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


def harness_parser(description: str, messages: int) -> argparse.ArgumentParser:
    """The options every callgrind script takes: the trees, M, the message size, the backend,
    the cycles, the per-run timeout, and the hidden ``--child`` of the measured run."""
    ap = argparse.ArgumentParser(description=description)
    ap.add_argument("trees", nargs="*", type=Path, help="checkouts to compare (default: this)")
    ap.add_argument("--messages", type=int, default=messages, help="M (the second run gets 2M)")
    ap.add_argument("--size", type=int, default=64)
    ap.add_argument("--backend", choices=("asyncio", "trio"), default="asyncio")
    ap.add_argument("--cycles", type=int, default=1)
    ap.add_argument("--timeout", type=float, default=900.0, help="per valgrind run (s)")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    return ap


def require_valgrind() -> None:
    if shutil.which("valgrind") is None:
        sys.exit("error: valgrind is not installed (apt-get install valgrind)")


class Measured(NamedTuple):
    """What :func:`measure` measured: instructions per message per tree and cycle, and the trees
    in the order given."""

    per_message: dict[Path, list[float]]
    trees: list[Path]


def measure(
    script: Path,
    args: argparse.Namespace,
    child_main: Callable[[argparse.Namespace], None],
    child_flags: Sequence[str] = (),
) -> Measured | None:
    """What a script of :func:`harness_parser` does once its arguments are parsed: with
    ``--child``, the measured program itself (``child_main(args)``; None is returned and the
    script exits 0); otherwise :func:`per_message_by_tree` of ``script`` over ``args.trees``
    (default: the checkout ``script`` is in), valgrind required, for the script to print.
    The measured runs get the shared ``--messages``, ``--size`` and ``--backend``, then
    ``child_flags``: the script's own options, as the child must see them."""
    if args.child:
        child_main(args)
        return None
    require_valgrind()
    trees = [t.resolve() for t in (args.trees or [script.parent.parent])]

    def child_args(messages: int) -> list[str]:
        shared = ["--messages", str(messages), "--size", str(args.size)]
        return [*shared, "--backend", args.backend, *child_flags]

    per_message = per_message_by_tree(
        script, trees, args.messages, child_args, args.cycles, args.timeout
    )
    return Measured(per_message, trees)


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


def print_table(per_message: dict[Path, list[float]], trees: Sequence[Path]) -> None:
    """:func:`print_tree_table` of instructions per message, rows in the order of ``trees``."""
    print_tree_table({tree: per_message[tree] for tree in trees}, "Ir/msg")
