"""The ``python -m zmtp_qos`` command line: one module per subcommand, as :mod:`zmtp.cli`.

Each subcommand module has ``HELP``, ``add_arguments(parser)`` and ``run(args) -> int``;
:func:`zmtp.cli.run_subcommands` builds the parser and runs the chosen one, so the exit
statuses are the ``zmtp`` tool's: 0 success, 1 failure, 2 bad usage or cannot run, 130
interrupted.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence

from zmtp.cli import run_subcommands

#: (name, module in this package), in the order ``--help`` lists them.
SUBCOMMANDS: list[tuple[str, str]] = [("worker", "cli_worker")]


def main(argv: Sequence[str] | None = None) -> int:
    """Parse ``argv`` (default ``sys.argv[1:]``), run the subcommand, return its status."""
    parser = argparse.ArgumentParser(
        prog="python -m zmtp_qos",
        description="zmtp_qos: per-hop delivery guarantees (QoS 1-3) on zmtp sockets.",
    )
    return run_subcommands(parser, "zmtp_qos", SUBCOMMANDS, argv)
