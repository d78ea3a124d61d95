"""``zmtp interop``: the live check against libzmq (the check itself is :mod:`zmtp.interop`).

Prints the table to stdout as rows finish; on a terminal, also a one-line progress status on
stderr (never in a pipe or a file: ``--progress``/``--no-progress`` override). ``--list``
prints the rows without running them; ``--json PATH`` and ``--markdown PATH`` write a report
when the run ends (also when a hung row made the watchdog end it).
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Callable, Sequence
from functools import partial

from ..interop import (
    BACKENDS,
    DEFAULT_COUNT,
    DEFAULT_TIMEOUT,
    REGISTRY,
    TRANSPORTS,
    Registry,
    report,
)
from ..interop.common import InteropUnavailable
from ..interop.registry import Case
from ..interop.runner import OnFinish, Result, RunInfo, run_check
from .common import number_option

HELP = "live interop check against libzmq (needs pyzmq: pip install 'zmtp[test]')"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of ``zmtp interop``."""
    parser.add_argument(
        "--backend",
        choices=(*BACKENDS, "both"),
        default="both",
        help="anyio backend(s) to run on (default: both)",
    )
    parser.add_argument(
        "--transport",
        default=",".join(TRANSPORTS),
        type=_transport_list,
        help="comma-separated transports (default: tcp,ipc)",
    )
    parser.add_argument(
        "--timeout",
        type=_positive_float,
        default=DEFAULT_TIMEOUT,
        help=f"seconds per case before it counts as failed (default: {DEFAULT_TIMEOUT:g})",
    )
    parser.add_argument(
        "-k",
        dest="pattern",
        default="",
        metavar="TEXT",
        help="run only cases whose label contains TEXT (e.g. PAIR, ipc, libzmq-binds)",
    )
    parser.add_argument(
        "--count",
        type=_count,
        default=DEFAULT_COUNT,
        help=f"numbered messages per ordering check (default: {DEFAULT_COUNT})",
    )
    parser.add_argument("-v", "--verbose", action="store_true", help="print each step")
    parser.add_argument(
        "--list",
        action="store_true",
        help="print the selected rows (case, transport, flow, who binds) without running them",
    )
    parser.add_argument(
        "--json",
        metavar="PATH",
        help="also write a JSON report to PATH: one record per row and backend (case, "
        "variant, backend, transport, roles, flow, outcome, seconds, detail, reason)",
    )
    parser.add_argument(
        "--markdown",
        metavar="PATH",
        help="also write the results as a markdown table to PATH",
    )
    parser.add_argument(
        "--progress",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="show a progress line on stderr (default: only when stderr is a terminal)",
    )
    parser.epilog = (
        "Exit status: 0 every row passed (or was skipped), 1 a row failed, 2 the check cannot "
        "run (pyzmq or trio missing, bad arguments), 130 interrupted (Ctrl-C stops the row "
        "running, prints the summary of the rows done and still writes the reports)."
    )


def _transport_list(text: str) -> list[str]:
    names = [t.strip().lower() for t in re.split(r"[,\s]+", text) if t.strip()]
    unknown = [t for t in names if t not in TRANSPORTS]
    if unknown or not names:
        what = ", ".join(unknown) if unknown else repr(text)
        raise argparse.ArgumentTypeError(f"unknown transport(s) {what}; choose from tcp, ipc")
    return list(dict.fromkeys(names))


_positive_float = number_option(float, "a number", minimum=0, exclusive=True)
_count = number_option(int, "an integer", minimum=0)


def run(args: argparse.Namespace, registry: Registry = REGISTRY) -> int:
    """``zmtp interop``: run the check with parsed arguments; returns the exit status."""
    backends = list(BACKENDS) if args.backend == "both" else [args.backend]
    if args.list:
        return list_rows(registry.select(args.transport, args.pattern), backends)
    finish: list[OnFinish] = []
    if args.json:
        finish.append(partial(_write, args.json, report.json_report))
    if args.markdown:
        finish.append(partial(_write, args.markdown, report.markdown_report))
    show_progress = sys.stderr.isatty() if args.progress is None else args.progress
    try:
        return run_check(
            registry,
            backends=backends,
            transports=args.transport,
            pattern=args.pattern,
            timeout=args.timeout,
            count=args.count,
            verbose=args.verbose,
            progress=sys.stderr if show_progress else None,
            on_finish=finish,
            interruptible=True,
        )
    except InteropUnavailable as exc:
        print(f"zmtp interop: {exc}", file=sys.stderr)
        return 2


def list_rows(cases: Sequence[Case], backends: Sequence[str]) -> int:
    """``--list``: one line per row (the columns the table would show), then a count."""
    columns = ("CASE", "TRANSPORT", "FLOW", "BINDS")
    values = [(c.name, c.transport, c.flow, c.binds) for c in cases]
    widths = [max([len(h), *(len(v[i]) for v in values)]) for i, h in enumerate(columns)]
    for line in [columns, *values]:
        print("  ".join(cell.ljust(w) for cell, w in zip(line, widths, strict=True)).rstrip())
    print(
        f"{len(cases)} rows x {len(backends)} backend(s) ({', '.join(backends)}) = "
        f"{len(cases) * len(backends)} runs"
    )
    return 0 if cases else 1


def _write(
    path: str,
    render: Callable[[RunInfo, Sequence[Result]], str],
    info: RunInfo,
    results: Sequence[Result],
) -> None:
    try:
        report.write(path, render(info, results))
    except OSError as exc:
        print(f"zmtp interop: cannot write report {path}: {exc}", file=sys.stderr)
