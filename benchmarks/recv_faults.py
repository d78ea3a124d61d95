"""A zmtp PULL's CPU cost and minor page faults per received message, fed by pyzmq.

What docs/performance.md's "Large reads and malloc" cites: a pyzmq PUSH in another (spawned)
process sends ``--messages`` messages of ``--size`` bytes (after ``--warmup`` more); the zmtp
PULL reports, over the timed messages, its user and system CPU µs per message and its minor
page faults per message (``getrusage`` of the receiving process, every thread included). A
receiver that keeps up with its sender pays its per-read costs per message, so this is the
cost that bounds the rate once the machine is busy. Compare trees by putting each first on
``PYTHONPATH``, interleaved, as the performance log does::

    for t in /tmp/before .; do PYTHONPATH=$t .venv/bin/python benchmarks/recv_faults.py; done

Nothing here is timed against a target; the rate column is only for orientation.
"""

from __future__ import annotations

import argparse
import multiprocessing
import resource
import time
from typing import Any


def _sender(endpoint: str, total: int, size: int) -> None:
    import zmq

    ctx = zmq.Context()
    push = ctx.socket(zmq.PUSH)
    push.connect(endpoint)
    payload = b"d" * size
    for _ in range(total):
        push.send(payload, copy=False)
    push.close(linger=-1)
    ctx.term()


async def _receive(args: argparse.Namespace) -> dict[str, float]:
    import zmtp

    ctx = multiprocessing.get_context("spawn")
    async with zmtp.Socket(zmtp.PULL) as pull:
        endpoint = await pull.bind("tcp://127.0.0.1:*")
        total = args.warmup + args.messages
        proc = ctx.Process(target=_sender, args=(endpoint, total, args.size))
        proc.start()
        recv = pull.recv
        for _ in range(args.warmup):
            await recv()
        before = resource.getrusage(resource.RUSAGE_SELF)
        started = time.perf_counter()
        for _ in range(args.messages):
            await recv()
        elapsed = time.perf_counter() - started
        after = resource.getrusage(resource.RUSAGE_SELF)
        proc.join(60)
    n = args.messages
    return {
        "user": (after.ru_utime - before.ru_utime) / n * 1e6,
        "sys": (after.ru_stime - before.ru_stime) / n * 1e6,
        "faults": (after.ru_minflt - before.ru_minflt) / n,
        "rate": n / elapsed,
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--backend", choices=("asyncio", "trio", "both"), default="both")
    ap.add_argument("--messages", type=int, default=20_000)
    ap.add_argument("--warmup", type=int, default=2_000)
    ap.add_argument("--size", type=int, default=65_536)
    args = ap.parse_args(argv)

    import anyio

    import zmtp

    backends = ("asyncio", "trio") if args.backend == "both" else (args.backend,)
    print(f"zmtp from {zmtp.__file__}; pyzmq PUSH -> zmtp PULL, {args.size} B, {args.messages}")
    print("| backend | CPU µs/msg | user | sys | minor faults/msg | msgs/s |")
    print("|---|---:|---:|---:|---:|---:|")
    for backend in backends:
        r: dict[str, Any] = anyio.run(_receive, args, backend=backend)
        print(
            f"| {backend} | {r['user'] + r['sys']:.2f} | {r['user']:.2f} | {r['sys']:.2f} "
            f"| {r['faults']:.2f} | {r['rate']:,.0f} |"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
