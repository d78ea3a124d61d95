"""The ``zmtp`` command line (also ``python -m zmtp``).

Subcommands are entries of :data:`COMMANDS`: a name, a one-line help, a function that adds the
subcommand's options to its parser, and a function that runs it with the parsed arguments and
returns the exit status. Adding one is a few lines (see ``keygen`` below)::

    def _hello_arguments(parser: argparse.ArgumentParser) -> None:
        parser.add_argument("--name", default="world")

    def _hello(args: argparse.Namespace) -> int:
        from . import something  # import lazily: keep the start-up of other commands fast
        ...
        return 0

    COMMANDS.append(Subcommand("hello", "say hello", _hello_arguments, _hello))

* ``zmtp interop``: the live check against libzmq (:mod:`zmtp.interop`).
* ``zmtp keygen [--json] [--public-of SECRET|-]``: a new CURVE key pair as ``public: <z85>``
  and ``secret: <z85>`` lines (libzmq's ``curve_keygen``), or the public key of a secret key.
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


def _keygen_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--json",
        action="store_true",
        help='print {"public": ..., "secret": ...} instead of two lines',
    )
    parser.add_argument(
        "--public-of",
        metavar="SECRET",
        help="print only the public key of this Z85 secret key; write --public-of=SECRET if it "
        "starts with '-'; '-' reads it from stdin (keeps it out of the process list and shell "
        "history)",
    )


def _keygen(args: argparse.Namespace) -> int:
    """``zmtp keygen``: a new CURVE key pair in Z85, like libzmq's ``curve_keygen``."""
    from .crypto import curve_keypair, curve_public

    keys: dict[str, str]
    if args.public_of is None:
        public, secret = curve_keypair()
        keys = {"public": public, "secret": secret}
    else:
        text = sys.stdin.readline() if args.public_of == "-" else args.public_of
        try:
            keys = {"public": curve_public(text.strip())}
        except (ValueError, TypeError) as exc:
            print(f"zmtp keygen: not a CURVE secret key: {exc}", file=sys.stderr)
            return 2
    if args.json:
        import json

        print(json.dumps(keys))
    else:
        for name, key in keys.items():
            print(f"{name}: {key}")
    return 0


COMMANDS: list[Subcommand] = [
    Subcommand(
        "interop",
        "live interop check against libzmq (needs pyzmq: pip install 'zmtp[test]')",
        _interop_arguments,
        _interop,
    ),
    Subcommand(
        "keygen",
        "print a new CURVE key pair in Z85 (public, secret), like libzmq's curve_keygen",
        _keygen_arguments,
        _keygen,
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
