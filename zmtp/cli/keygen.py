"""``zmtp keygen [--json] [--public-of SECRET|-]``: a new CURVE key pair as ``public: <z85>``
and ``secret: <z85>`` lines (libzmq's ``curve_keygen``), or the public key of a secret key."""

from __future__ import annotations

import argparse
import json
import sys

HELP = "print a new CURVE key pair in Z85 (public, secret), like libzmq's curve_keygen"


def add_arguments(parser: argparse.ArgumentParser) -> None:
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


def run(args: argparse.Namespace) -> int:
    """A new CURVE key pair in Z85, like libzmq's ``curve_keygen``; exit status 2 for a bad
    ``--public-of`` key."""
    from ..crypto import curve_keypair, curve_public

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
        print(json.dumps(keys))
    else:
        for name, key in keys.items():
            print(f"{name}: {key}")
    return 0
