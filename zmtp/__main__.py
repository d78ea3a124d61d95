"""The ``zmtp`` command line (also ``python -m zmtp``).

Subcommands are entries of :data:`COMMANDS`: a name, a one-line help, a function that adds the
subcommand's options to its parser, and a function that runs it with the parsed arguments and
returns the exit status. Adding one (e.g. ``keygen``) is a few lines::

    def _keygen_arguments(parser: argparse.ArgumentParser) -> None:
        parser.add_argument("--z85", action="store_true")

    def _keygen(args: argparse.Namespace) -> int:
        from .crypto import keys  # import lazily: keep the start-up of other commands fast
        ...
        return 0

    COMMANDS.append(Subcommand("keygen", "generate a CURVE key pair", _keygen_arguments, _keygen))
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Subcommand:
    name: str
    help: str
    add_arguments: Callable[[argparse.ArgumentParser], None]
    run: Callable[[argparse.Namespace], int]


def _interop_arguments(parser: argparse.ArgumentParser) -> None:
    from . import interop

    interop.add_arguments(parser)


def _interop(args: argparse.Namespace) -> int:
    from . import interop

    return interop.command(args)


COMMANDS: list[Subcommand] = [
    Subcommand(
        "interop",
        "live interop check against libzmq (needs pyzmq: pip install 'zmtp[test]')",
        _interop_arguments,
        _interop,
    ),
]


def build_parser() -> argparse.ArgumentParser:
    from . import __version__

    parser = argparse.ArgumentParser(
        prog="zmtp", description="zmtp: a pure-Python ZeroMQ (ZMTP 3.1) stack on anyio."
    )
    parser.add_argument("--version", action="version", version=f"zmtp {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for command in COMMANDS:
        sub = subparsers.add_parser(command.name, help=command.help, description=command.help)
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
    return status


if __name__ == "__main__":
    sys.exit(main())
