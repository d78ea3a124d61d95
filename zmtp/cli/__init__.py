"""The ``zmtp`` command line (also ``python -m zmtp``): one module per subcommand.

Each subcommand is a module of this package with three names: ``HELP`` (one line, shown in
``zmtp --help`` and as the subcommand's description), ``add_arguments(parser)`` (its options)
and ``run(args) -> int`` (runs it with the parsed arguments and returns the exit status).
Adding one is a module and one line in :data:`SUBCOMMANDS`::

    # zmtp/cli/hello.py
    HELP = "say hello"

    def add_arguments(parser: argparse.ArgumentParser) -> None:
        parser.add_argument("--name", default="world")

    def run(args: argparse.Namespace) -> int:
        from ..something import thing  # import heavy things here: keep start-up fast
        print(f"hello {args.name}")
        return 0

Exit statuses, for every subcommand: 0 success, 1 failure, 2 bad usage or cannot run, 130
interrupted (Ctrl-C).
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import cast

#: The subcommands, in the order ``zmtp --help`` lists them: (name, module in this package).
SUBCOMMANDS: list[tuple[str, str]] = [
    ("interop", "interop"),
    ("keygen", "keygen"),
    ("cat", "cat"),
    ("probe", "probe"),
    ("trace", "trace"),
]


@dataclass(frozen=True)
class Subcommand:
    """A loaded subcommand module's three names."""

    name: str
    help: str
    add_arguments: Callable[[argparse.ArgumentParser], None]
    run: Callable[[argparse.Namespace], int]


def load(name: str, module: str) -> Subcommand:
    """Import ``zmtp.cli.<module>`` and return its subcommand."""
    mod = importlib.import_module(f"{__name__}.{module}")
    return Subcommand(
        name,
        cast(str, mod.HELP),
        cast(Callable[[argparse.ArgumentParser], None], mod.add_arguments),
        cast(Callable[[argparse.Namespace], int], mod.run),
    )


def build_parser() -> argparse.ArgumentParser:
    from .. import __version__

    parser = argparse.ArgumentParser(
        prog="zmtp", description="zmtp: a pure-Python ZeroMQ (ZMTP 3.1) stack on anyio."
    )
    parser.add_argument("--version", action="version", version=f"zmtp {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, module in SUBCOMMANDS:
        command = load(name, module)
        sub = subparsers.add_parser(
            command.name,
            help=command.help,
            description=command.help,
            formatter_class=argparse.RawDescriptionHelpFormatter,
        )
        command.add_arguments(sub)
        sub.set_defaults(run=command.run)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Parse ``argv`` (default: ``sys.argv[1:]``), run the subcommand, return its exit status."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help(sys.stderr)
        return 2
    try:
        status: int = args.run(args)
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        # The reader went away (``zmtp trace ... | head``): not an error of ours. Point stdout
        # at /dev/null so that the interpreter's final flush does not complain again.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 0
    return status
