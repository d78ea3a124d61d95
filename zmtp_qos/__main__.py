"""``python -m zmtp_qos``: the command line of :mod:`zmtp_qos.cli`."""

from __future__ import annotations

import sys

from .cli import main

__all__ = ["main"]

if __name__ == "__main__":
    sys.exit(main())
