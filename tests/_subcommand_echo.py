"""A subcommand module for tests/test_cli_subcommands.py: ``echo WORDS`` prints them; ``--raise``
makes ``run`` raise the named exception instead, so the dispatcher's exit statuses can be seen."""

from __future__ import annotations

import argparse

HELP = "print the words given (a test subcommand)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("words", nargs="*")
    parser.add_argument("--status", type=int, default=0, help="the exit status to return")
    parser.add_argument("--raise", dest="exc", choices=("interrupt", "broken-pipe"))


def run(args: argparse.Namespace) -> int:
    if args.exc == "interrupt":
        raise KeyboardInterrupt
    if args.exc == "broken-pipe":
        raise BrokenPipeError
    print(" ".join(args.words))
    return int(args.status)
