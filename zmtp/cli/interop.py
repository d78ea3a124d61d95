"""``zmtp interop``: the live check against libzmq (the check itself is :mod:`zmtp.interop`).

Imported lazily by :mod:`zmtp.cli` (through :data:`COMMAND`), so that other subcommands do not
pay for importing the check and its rows.
"""

from __future__ import annotations

import argparse
import re
import sys

from ..interop import BACKENDS, DEFAULT_COUNT, DEFAULT_TIMEOUT, REGISTRY, TRANSPORTS, Registry
from ..interop.common import InteropUnavailable
from ..interop.runner import run_check

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


def _transport_list(text: str) -> list[str]:
    names = [t.strip().lower() for t in re.split(r"[,\s]+", text) if t.strip()]
    unknown = [t for t in names if t not in TRANSPORTS]
    if unknown or not names:
        what = ", ".join(unknown) if unknown else repr(text)
        raise argparse.ArgumentTypeError(f"unknown transport(s) {what}; choose from tcp, ipc")
    return list(dict.fromkeys(names))


def _positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if value <= 0:
        raise argparse.ArgumentTypeError("must be > 0")
    return value


def _count(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError("must be >= 0")
    return value


def run(args: argparse.Namespace, registry: Registry = REGISTRY) -> int:
    """``zmtp interop``: run the check with parsed arguments; returns the exit status."""
    backends = list(BACKENDS) if args.backend == "both" else [args.backend]
    try:
        return run_check(
            registry,
            backends=backends,
            transports=args.transport,
            pattern=args.pattern,
            timeout=args.timeout,
            count=args.count,
            verbose=args.verbose,
        )
    except InteropUnavailable as exc:
        print(f"zmtp interop: {exc}", file=sys.stderr)
        return 2
