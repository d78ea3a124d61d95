"""Throughput of the CURVE crypto back-ends (standalone; not part of the test suite).

Measures, for each back-end:

* ``box``: ``seal`` then ``open`` with a full 24-byte nonce (handshake boxes, one-off use);
* ``session``: the same through :class:`zmtp.crypto.SessionBox`, i.e. the per-connection
  MESSAGE path where the pure back-end reuses the HSalsa20 subkey of the constant nonce prefix;
* ``beforenm`` (X25519 + HSalsa20) per second;
* for the pure back-end, the raw XSalsa20 keystream rate.

Each figure is the best of ``--repeat`` timed runs of at least ``--min-time`` seconds, which
filters out noise from other processes better than a mean does.

Usage: ``python benchmarks/bench_crypto.py [--backend pure|nacl|all] [--min-time 0.2]``
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path

try:
    import zmtp.crypto  # noqa: F401
except ImportError:  # running from a checkout without installing: use the repo root
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from zmtp.crypto import (
    BoxBackend,
    SessionBox,
    get_backend,
    nacl_available,
    xsalsa20_keystream,
)

SIZES = [("1 B", 1), ("64 B", 64), ("1 KiB", 1024), ("64 KiB", 65536)]
PREFIX_C = b"CurveZMQMESSAGEC"
PREFIX_S = b"CurveZMQMESSAGES"


def best_rate(func: Callable[[], object], min_time: float, repeat: int) -> float:
    """Calls per second of ``func``: best of ``repeat`` runs each lasting >= ``min_time``."""
    number = 1
    while True:  # calibrate: grow the batch until one batch takes a measurable time
        start = time.perf_counter()
        for _ in range(number):
            func()
        elapsed = time.perf_counter() - start
        if elapsed >= min_time / 4:
            break
        number *= 2 if elapsed == 0 else max(2, min(10, int(min_time / 4 / elapsed) + 1))
    best = elapsed / number
    for _ in range(repeat):
        count = 0
        start = time.perf_counter()
        while True:
            for _ in range(number):
                func()
            count += number
            elapsed = time.perf_counter() - start
            if elapsed >= min_time:
                break
        best = min(best, elapsed / count)
    return 1.0 / best


def bench_backend(backend: BoxBackend, min_time: float, repeat: int) -> list[tuple[str, ...]]:
    rows: list[tuple[str, ...]] = []
    secret_a, secret_b = os.urandom(32), os.urandom(32)
    public_b = backend.scalarmult_base(secret_b)
    rate = best_rate(lambda: backend.beforenm(public_b, secret_a), min_time, repeat)
    rows.append((backend.name, "beforenm", "-", f"{rate:,.0f}", "-", f"{1e6 / rate:.1f}"))
    key = backend.beforenm(public_b, secret_a)
    nonce = os.urandom(24)
    client = SessionBox(backend, key, PREFIX_C, PREFIX_S)
    server = SessionBox(backend, key, PREFIX_S, PREFIX_C)
    for label, size in SIZES:
        message = os.urandom(size)

        def box_round_trip(message: bytes = message) -> None:
            backend.open(backend.seal(message, nonce, key), nonce, key)

        def session_round_trip(message: bytes = message) -> None:
            server.open(client.seal(message, 7), 7)

        for api, func in (("box", box_round_trip), ("session", session_round_trip)):
            rate = best_rate(func, min_time, repeat)
            rows.append(
                (
                    backend.name,
                    f"{api} seal+open",
                    label,
                    f"{rate:,.0f}",
                    f"{rate * size / 1e6:.2f}",
                    f"{1e6 / rate:.1f}",
                )
            )
    return rows


def bench_keystream(min_time: float, repeat: int) -> list[tuple[str, ...]]:
    key, nonce = os.urandom(32), os.urandom(24)
    rows: list[tuple[str, ...]] = []
    for label, size in [*SIZES, ("1 MiB", 1 << 20)]:

        def stream(size: int = size) -> None:
            xsalsa20_keystream(key, nonce, size)

        rate = best_rate(stream, min_time, repeat)
        rows.append(
            (
                "pure",
                "xsalsa20 keystream",
                label,
                f"{rate:,.0f}",
                f"{rate * size / 1e6:.2f}",
                f"{1e6 / rate:.1f}",
            )
        )
    return rows


def print_table(rows: list[tuple[str, ...]]) -> None:
    header = ("backend", "operation", "size", "ops/s", "MB/s", "µs/op")
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    print("| " + " | ".join(h.ljust(w) for h, w in zip(header, widths, strict=True)) + " |")
    print("|" + "|".join("-" * (w + 2) for w in widths) + "|")
    for row in rows:
        cells = [
            c.ljust(w) if i < 3 else c.rjust(w)
            for i, (c, w) in enumerate(zip(row, widths, strict=True))
        ]
        print("| " + " | ".join(cells) + " |")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--backend", choices=["all", "pure", "nacl"], default="all")
    parser.add_argument("--min-time", type=float, default=0.2, help="seconds per timed run")
    parser.add_argument("--repeat", type=int, default=3, help="timed runs per figure (best kept)")
    parser.add_argument("--no-keystream", action="store_true", help="skip the raw XSalsa20 rows")
    args = parser.parse_args(argv)

    names = ["pure", "nacl"] if args.backend == "all" else [args.backend]
    if "nacl" in names and not nacl_available():
        if args.backend == "nacl":
            parser.error("PyNaCl is not installed")
        print("PyNaCl not installed: skipping the nacl back-end", file=sys.stderr)
        names.remove("nacl")
    print(
        f"Python {sys.version.split()[0]}; seal+open = one seal and one open per op; "
        f"MB/s counts payload bytes once"
    )
    rows: list[tuple[str, ...]] = []
    for name in names:
        rows += bench_backend(get_backend(name), args.min_time, args.repeat)
    if "pure" in names and not args.no_keystream:
        rows += bench_keystream(args.min_time, args.repeat)
    print_table(rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
