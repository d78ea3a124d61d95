"""The ``python -m zmtp_qos`` command line: one module per subcommand, as :mod:`zmtp.cli`.

Each subcommand module has ``HELP``, ``add_arguments(parser)`` and ``run(args) -> int``.
Exit statuses: 0 success, 1 failure, 2 bad usage or cannot run, 130 interrupted.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Callable, Sequence
from typing import cast

#: (name, module in this package), in the order ``--help`` lists them.
SUBCOMMANDS: list[tuple[str, str]] = [("worker", "cli_worker")]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m zmtp_qos",
        description="zmtp_qos: per-hop delivery guarantees (QoS 1-3) on zmtp sockets.",
    )
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, module in SUBCOMMANDS:
        mod = importlib.import_module(f"{__package__}.{module}")
        help_text = cast(str, mod.HELP)
        sub = subparsers.add_parser(
            name,
            help=help_text,
            description=help_text,
            formatter_class=argparse.RawDescriptionHelpFormatter,
        )
        cast(Callable[[argparse.ArgumentParser], None], mod.add_arguments)(sub)
        sub.set_defaults(run=mod.run)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Parse ``argv`` (default ``sys.argv[1:]``), run the subcommand, return its status."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help(sys.stderr)
        return 2
    try:
        status: int = args.run(args)
    except KeyboardInterrupt:
        return 130
    return status
