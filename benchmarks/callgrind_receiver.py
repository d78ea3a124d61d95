"""Instructions per received message: a zmtp PULL under valgrind's callgrind, fed by pyzmq.

The receiving side is where zmtp's 64 B PUSH -> PULL gap to pyzmq lies (docs/performance.md,
issue 15 targets), and on a shared machine its rate moves by 2x while its instruction count
barely moves. This runs a zmtp PULL (one process, under ``valgrind --tool=callgrind``) against
one pyzmq process (native, not traced: callgrind follows no children) whose ``--peers`` PUSH
sockets send ``--messages`` messages in all, round-robin. Each tree runs twice, with M and 2M
messages; ``(Ir(2M) - Ir(M)) / M`` is the receiver's instructions per message with start-up,
imports and handshakes cancelled out. Trees are checkouts, as for ``compare_trees.py`` (their
``zmtp`` is put first on ``PYTHONPATH``); the order alternates between cycles. ``--no-gc``
turns the cyclic GC off in the receiver (what the GC costs per message).

    .venv/bin/python benchmarks/callgrind_receiver.py --cycles 2 /tmp/before .
    .venv/bin/python benchmarks/callgrind_receiver.py --peers 100 /tmp/before .

Callgrind slows the receiver ~50x, so it reads full ``read_size`` chunks as the real
receiver does when it is the bottleneck. The count still varies a little with how reads fall
(trio more than asyncio); the per-cycle values show how much. Needs valgrind and pyzmq.

``--type sub`` measures a zmtp SUB instead, fed by pyzmq XPUB sockets (``sndhwm`` 0, so
nothing is dropped; each waits for the SUB's subscription before sending) with the payload
``--topic`` + padding, the SUB subscribed to each of ``--subscribe`` (default ``b""``):
what the subscription filter adds to a PULL's receive path (docs/performance.md, fan-out).

    .venv/bin/python benchmarks/callgrind_receiver.py --type sub --subscribe "" --subscribe d .
"""

from __future__ import annotations

import argparse
import gc
import multiprocessing
import shutil
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _callgrind import per_message_by_tree, print_tree_table

HERE = Path(__file__).resolve()

# --------------------------------------------------------------------------- the measured run


def _sender(endpoint: str, peers: int, total: int, size: int, kind: str, topic: bytes) -> None:
    """pyzmq PUSH (or XPUB) sockets: all connected, then ``total`` messages round-robin over
    them, each ``topic`` padded to ``size`` bytes."""
    import zmq

    ctx = zmq.Context()
    socks = []
    for _ in range(peers):
        sock = ctx.socket(zmq.XPUB if kind == "sub" else zmq.PUSH)
        sock.sndhwm = 0
        sock.connect(endpoint)
        socks.append(sock)
    payload = topic + b"d" * max(0, size - len(topic))
    for sock in socks:
        if kind == "sub":
            sock.recv()  # the SUB's (first) subscription: from now on nothing is filtered out
        sock.send(payload)  # one probe per peer: the receiver counts them before the run
    for i in range(total):
        socks[i % peers].send(payload)
    for sock in socks:
        sock.close(linger=-1)
    ctx.term()


async def _receive(args: argparse.Namespace) -> None:
    import anyio

    import zmtp

    ctx = multiprocessing.get_context("spawn")
    kind = zmtp.SUB if args.type == "sub" else zmtp.PULL
    topic = args.topic.encode()
    async with zmtp.Socket(kind, read_size=args.read_size) as pull:
        for subscription in args.subscribe or [""]:
            if args.type == "sub":
                pull.subscribe(subscription.encode())
        endpoint = await pull.bind("tcp://127.0.0.1:*")
        proc = ctx.Process(
            target=_sender,
            args=(endpoint, args.peers, args.messages, args.size, args.type, topic),
        )
        proc.start()
        with anyio.fail_after(300):
            for _ in range(args.peers):
                await pull.recv()
            if args.no_gc:
                gc.disable()
            recv = pull.recv
            for _ in range(args.messages):
                await recv()
        proc.join(60)


def child_main(args: argparse.Namespace) -> None:
    import anyio

    anyio.run(_receive, args, backend=args.backend)


# --------------------------------------------------------------------------- the harness


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("trees", nargs="*", type=Path, help="checkouts to compare (default: this)")
    ap.add_argument("--peers", type=int, default=1, help="PUSH sockets sending")
    ap.add_argument("--messages", type=int, default=4000, help="M (the second run gets 2M)")
    ap.add_argument("--size", type=int, default=64)
    ap.add_argument(
        "--read-size",
        type=int,
        default=256 * 1024,
        help="the PULL's read_size: smaller reads carry fewer messages, so comparing two sizes "
        "gives what one read costs beyond its messages",
    )
    ap.add_argument("--backend", choices=("asyncio", "trio"), default="asyncio")
    ap.add_argument("--type", choices=("pull", "sub"), default="pull", help="the receiver")
    ap.add_argument(
        "--subscribe",
        action="append",
        help="--type sub: a topic the SUB subscribes to (repeatable; default the empty one)",
    )
    ap.add_argument(
        "--topic", default="", help="--type sub: what every message starts with (default none)"
    )
    ap.add_argument("--cycles", type=int, default=1)
    ap.add_argument("--no-gc", action="store_true", help="the cyclic GC off in the receiver")
    ap.add_argument("--timeout", type=float, default=900.0, help="per valgrind run (s)")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.size < 1 or args.peers < 1 or args.read_size < 1:
        ap.error("--size, --peers and --read-size must be >= 1")
    if args.child:
        child_main(args)
        return 0
    if shutil.which("valgrind") is None:
        sys.exit("error: valgrind is not installed (apt-get install valgrind)")
    trees = [t.resolve() for t in (args.trees or [HERE.parent.parent])]

    def child_args(messages: int) -> list[str]:
        return [
            "--messages",
            str(messages),
            "--peers",
            str(args.peers),
            "--size",
            str(args.size),
            "--backend",
            args.backend,
            "--read-size",
            str(args.read_size),
            "--type",
            args.type,
            "--topic",
            args.topic,
            *[f"--subscribe={topic}" for topic in args.subscribe or []],
        ] + (["--no-gc"] if args.no_gc else [])

    gc_note = ", GC off" if args.no_gc else ""
    per_message = per_message_by_tree(
        HERE, trees, args.messages, child_args, args.cycles, args.timeout
    )
    if args.type == "sub":
        subs = ", ".join(repr(t.encode()) for t in args.subscribe or [""])
        route = f"XPUB -> zmtp SUB (subscribed to {subs}; messages start {args.topic.encode()!r})"
    else:
        route = "PUSH -> zmtp PULL"
    print(
        f"\npyzmq {args.peers} {route}, {args.size} B, {args.backend}{gc_note}, "
        f"read_size {args.read_size}: "
        f"receiver instructions per message ((Ir(2M) - Ir(M)) / M, M = {args.messages})\n"
    )
    print_tree_table(per_message, "Ir/msg")
    return 0


if __name__ == "__main__":
    sys.exit(main())
