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

Another program made of subcommand modules (a package of its own, a table like
:data:`SUBCOMMANDS`) gets the same parser and the same exit statuses from
:func:`run_subcommands`.
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


def load(name: str, module: str, package: str = __name__) -> Subcommand:
    """Import ``<package>.<module>`` (default: a module of ``zmtp.cli``) and return its
    subcommand."""
    mod = importlib.import_module(f"{package}.{module}")
    return Subcommand(
        name,
        cast(str, mod.HELP),
        cast(Callable[[argparse.ArgumentParser], None], mod.add_arguments),
        cast(Callable[[argparse.Namespace], int], mod.run),
    )


def add_subcommands(
    parser: argparse.ArgumentParser, package: str, table: Sequence[tuple[str, str]]
) -> argparse.ArgumentParser:
    """Give ``parser`` one subcommand per ``(name, module)`` of ``table``, in that order; each
    module of ``package`` has the three names of this package's docstring. Returns ``parser``."""
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, module in table:
        command = load(name, module, package)
        sub = subparsers.add_parser(
            command.name,
            help=command.help,
            description=command.help,
            formatter_class=argparse.RawDescriptionHelpFormatter,
        )
        command.add_arguments(sub)
        sub.set_defaults(run=command.run)
    return parser


def run_subcommands(
    parser: argparse.ArgumentParser,
    package: str,
    table: Sequence[tuple[str, str]],
    argv: Sequence[str] | None = None,
) -> int:
    """A command line made of subcommands: :func:`add_subcommands` to ``parser``, parse
    ``argv`` (default: ``sys.argv[1:]``), run the chosen one and return its exit status.

    Any program built from subcommand modules shares the ``zmtp`` tool's conventions this way:
    no subcommand prints the help and gives 2, Ctrl-C gives 130, and a reader that went away
    (``... | head``) gives 0 without a traceback.
    """
    add_subcommands(parser, package, table)
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


def root_parser() -> argparse.ArgumentParser:
    """The ``zmtp`` parser before its subcommands: program name, description, ``--version``."""
    from .. import __version__

    parser = argparse.ArgumentParser(
        prog="zmtp", description="zmtp: a pure-Python ZeroMQ (ZMTP 3.1) stack on anyio."
    )
    parser.add_argument("--version", action="version", version=f"zmtp {__version__}")
    return parser


def build_parser() -> argparse.ArgumentParser:
    """The whole ``zmtp`` parser, every subcommand of :data:`SUBCOMMANDS` included."""
    return add_subcommands(root_parser(), __name__, SUBCOMMANDS)


def main(argv: Sequence[str] | None = None) -> int:
    """Parse ``argv`` (default: ``sys.argv[1:]``), run the subcommand, return its exit status."""
    return run_subcommands(root_parser(), __name__, SUBCOMMANDS, argv)
