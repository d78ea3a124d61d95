"""Instructions per published message: zmtp PUB -> N SUB under valgrind's callgrind.

A shared machine moves wall-clock rates by 2x; the number of instructions a publisher executes
per message barely moves. This runs the zmtp publisher (one process, under
``valgrind --tool=callgrind``) against N pyzmq SUB processes (native, not traced: callgrind
follows no children), in ``xpub_nodrop`` mode so that every subscriber gets every message and
the count of work is fixed. It runs each tree twice, with ``--messages`` and with twice as
many, and reports ``(Ir(2M) - Ir(M)) / M``: instructions per message with start-up, imports
and handshakes cancelled out. Trees are checkouts, as for ``compare_trees.py`` (their
``zmtp`` is put first on ``PYTHONPATH``); the order alternates between cycles.

    .venv/bin/python benchmarks/callgrind_fanout.py --cycles 2 /tmp/before .
    .venv/bin/python benchmarks/callgrind_fanout.py --subscribers 1 --cycles 2 /tmp/before .

The count still varies a little with how many messages each writer finds queued when it wakes
(its batch), which depends on timing; the per-cycle values show how much (about 1 % here).
Needs valgrind and pyzmq.
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import statistics
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _callgrind import harness_parser, measure

HERE = Path(__file__).resolve()

# --------------------------------------------------------------------------- the measured run


def _subscriber(endpoint: str, total: int, conn: Any) -> None:
    """A pyzmq SUB: report the first probe (subscribed), then count data messages."""
    import zmq

    ctx = zmq.Context()
    sock = ctx.socket(zmq.SUB)
    sock.rcvhwm = 1000
    sock.subscribe(b"")
    sock.connect(endpoint)
    while sock.recv()[:1] != b"p":
        pass
    conn.send("ready")
    got = 0
    while got < total:
        if sock.recv()[:1] == b"d":
            got += 1
    conn.send("done")
    sock.close(linger=0)
    ctx.term()


async def _publish(args: argparse.Namespace) -> None:
    import anyio

    import zmtp

    ctx = multiprocessing.get_context("spawn")
    async with zmtp.Socket(zmtp.PUB, xpub_nodrop=True, linger=1.0) as pub:
        endpoint = await pub.bind("tcp://127.0.0.1:*")
        pipes = []
        procs = []
        for _ in range(args.subscribers):
            parent, child = ctx.Pipe()
            proc = ctx.Process(target=_subscriber, args=(endpoint, args.messages, child))
            proc.start()
            pipes.append(parent)
            procs.append(proc)
        with anyio.fail_after(120):
            waiting = list(pipes)
            while waiting:  # probe until every subscription has arrived
                await pub.send(b"p")
                await anyio.sleep(0.002)
                waiting = [p for p in waiting if not p.poll()]
            for p in pipes:
                assert p.recv() == "ready"
        payload = b"d" + os.urandom(args.size - 1)
        send = pub.send
        for _ in range(args.messages):
            await send(payload)
        with anyio.fail_after(300):
            for p in pipes:
                while not p.poll():
                    await anyio.sleep(0.01)
                assert p.recv() == "done"
        for proc in procs:
            proc.join(10)


def child_main(args: argparse.Namespace) -> None:
    import anyio

    anyio.run(_publish, args, backend=args.backend)


# --------------------------------------------------------------------------- the harness


def main(argv: list[str] | None = None) -> int:
    ap = harness_parser(__doc__.splitlines()[0], messages=5000)
    ap.add_argument("--subscribers", type=int, default=10)
    args = ap.parse_args(argv)
    if args.size < 1:
        ap.error("--size must be >= 1")
    measured = measure(HERE, args, child_main, ["--subscribers", str(args.subscribers)])
    if measured is None:
        return 0  # it was the measured program
    per_message, trees = measured
    print(
        f"\nzmtp PUB -> {args.subscribers} pyzmq SUB, {args.size} B, {args.backend}, nodrop: "
        f"publisher instructions per message ((Ir(2M) - Ir(M)) / M, M = {args.messages})\n"
    )
    base = statistics.median(per_message[trees[0]])
    print(f"| tree | Ir/msg (median) | per subscriber | vs {trees[0].name or trees[0]} | cycles |")
    print("|---|---:|---:|---:|---|")
    for tree in trees:
        values = per_message[tree]
        med = statistics.median(values)
        cycles = ", ".join(f"{v:,.0f}" for v in values)
        print(
            f"| {tree} | {med:,.0f} | {med / args.subscribers:,.0f} | {med / base:.3f} | {cycles} |"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
