"""K zmtp PUSH sockets in one process, one task, sending in turn to one pyzmq PULL: the cost
per message and the writes per message.

Issue 15's "100 PUSH connections from 2 processes into one PULL" target: there each process
holds ~50 sockets, and what a sender costs depends on how many messages wait for the writers
when they run (a count per socket let 50 x 256 queue up) and, on asyncio, on how deep the
task's cancel-scope chain is (anyio's ``checkpoint_if_cancelled`` walks it all; an ``async
with Socket`` added one per socket until its group moved to a task of its own). The peer is
a native pyzmq PULL in another process (not traced, not counted); the K sockets are entered
in the measured task, as an application holding them with an ``AsyncExitStack`` does, and
send ``--messages`` in round robin.

* default: each tree's sender runs natively, ``--cycles`` times, the trees interleaved (order
  reversed every other cycle); printed per tree: CPU us per message of the sender process over
  the sending phase (start-up and connecting left out) and TCP segments sent per message (the
  sum of ``tcpi_segs_out`` of the K connections: over loopback with TCP_NODELAY one segment per
  write of a batch under 64 KiB, so it is the writes per message). Wall-clock figures need a
  quiet machine.
* ``--callgrind``: instructions per message under valgrind, ``(Ir(2M) - Ir(M)) / M``, the
  evidence on a loaded machine (the harness of the other ``callgrind_*.py`` scripts).

    .venv/bin/python benchmarks/sender_sockets.py --sockets 50 --cycles 3 /tmp/before .
    .venv/bin/python benchmarks/sender_sockets.py --callgrind --sockets 50 /tmp/before .
    .venv/bin/python benchmarks/sender_sockets.py --callgrind --context --sockets 50 /tmp/before .

``--context`` makes the K sockets with one ``zmtp.Context`` instead of an ``async with`` each.

Needs pyzmq (and valgrind for ``--callgrind``).
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import socket
import statistics
import struct
import subprocess
import sys
import time
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _callgrind import harness_parser, measure, print_table

HERE = Path(__file__).resolve()
#: ``tcpi_segs_out`` in Linux's ``struct tcp_info`` (stable since 4.2).
_SEGS_OUT_OFFSET = 136


def _pyzmq_pull(sockets: int, total: int, conn: Any) -> None:
    """The peer: a bound PULL that says "warm" after one message from each of the ``sockets``
    senders and "done" after ``total`` more, then waits for the sender's "bye"."""
    import zmq

    ctx = zmq.Context()
    sock = ctx.socket(zmq.PULL)
    sock.set_hwm(0)
    port = sock.bind_to_random_port("tcp://127.0.0.1")
    conn.send(port)
    for _ in range(sockets):
        sock.recv()
    conn.send("warm")
    for _ in range(total):
        sock.recv()
    conn.send("done")
    conn.recv()  # the sender has read its counters: closing before would end connections
    sock.close(linger=0)
    ctx.term()


def segments_out(port: int) -> int:
    """TCP segments sent so far by this process's connections to ``127.0.0.1:port`` (Linux;
    0 elsewhere)."""
    total = 0
    try:
        fds = os.listdir("/proc/self/fd")
    except OSError:
        return 0
    for name in fds:
        try:
            fd = os.dup(int(name))
        except OSError:
            continue
        try:
            sock = socket.socket(fileno=fd)
        except OSError:  # not a socket
            os.close(fd)
            continue
        try:
            if sock.type != socket.SOCK_STREAM or sock.family != socket.AF_INET:
                continue
            if sock.getpeername()[1] != port:
                continue
            info = sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, 256)
            if len(info) >= _SEGS_OUT_OFFSET + 4:
                total += struct.unpack_from("I", info, _SEGS_OUT_OFFSET)[0]
        except OSError:
            continue
        finally:
            sock.close()
    return total


async def _wait_for(conn: Any, word: str) -> None:
    """The peer's next word, waited for in a worker thread: a poll every few ms would add
    instructions in proportion to the wall time, which the machine's load sets."""
    import anyio

    with anyio.fail_after(300):
        got = await anyio.to_thread.run_sync(conn.recv, abandon_on_cancel=True)
    assert got == word


async def _send(args: argparse.Namespace) -> dict[str, float]:
    import zmtp

    ctx = multiprocessing.get_context("spawn")
    parent, child = ctx.Pipe()
    proc = ctx.Process(target=_pyzmq_pull, args=(args.sockets, args.messages, child))
    proc.start()
    port = parent.recv()
    payload = os.urandom(args.size)
    async with AsyncExitStack() as stack:
        if args.context:  # one task group for all (zmtp.Context, Socket.open_in)
            ctx = await stack.enter_async_context(zmtp.Context(linger=5.0))
            socks = [await ctx.socket(zmtp.PUSH) for _ in range(args.sockets)]
        else:  # an async with per socket: a cancel scope each in this task
            socks = [
                await stack.enter_async_context(zmtp.Socket(zmtp.PUSH, linger=5.0))
                for _ in range(args.sockets)
            ]
        for sock in socks:
            await sock.connect(f"tcp://127.0.0.1:{port}")
        for sock in socks:
            await sock.send(b"warm-up")
        await _wait_for(parent, "warm")
        sends = [sock.send for sock in socks]
        k = len(sends)
        segs0, cpu0, wall0 = segments_out(port), time.process_time(), time.perf_counter()
        for i in range(args.messages):
            await sends[i % k](payload)
        await _wait_for(parent, "done")
        cpu, wall = time.process_time() - cpu0, time.perf_counter() - wall0
        segs = segments_out(port) - segs0
        parent.send("bye")
    proc.join(60)
    n = args.messages
    return {
        "cpu_us_per_msg": cpu / n * 1e6,
        "segments_per_msg": segs / n,
        "msgs_per_s": n / wall,
    }


def child_main(args: argparse.Namespace) -> None:
    import anyio

    result = anyio.run(_send, args, backend=args.backend)
    print(json.dumps(result), flush=True)


def _native(args: argparse.Namespace) -> int:
    trees = [t.resolve() for t in (args.trees or [HERE.parent.parent])]
    results: dict[Path, list[dict[str, float]]] = {tree: [] for tree in trees}
    child_args = [
        "--child",
        *("--messages", str(args.messages), "--size", str(args.size)),
        *("--backend", args.backend, "--sockets", str(args.sockets)),
        *(["--context"] if args.context else []),
    ]
    for cycle in range(args.cycles):
        order = trees if cycle % 2 == 0 else trees[::-1]
        for tree in order:
            proc = subprocess.run(
                [sys.executable, str(HERE), *child_args],
                env=dict(os.environ, PYTHONPATH=str(tree)),
                capture_output=True,
                text=True,
                timeout=args.timeout,
                check=True,
            )
            result = json.loads(proc.stdout.strip().splitlines()[-1])
            results[tree].append(result)
            print(f"cycle {cycle + 1}: {tree}: {result}", file=sys.stderr)
    print(
        f"\n{args.sockets} zmtp PUSH sockets in one task{' (one Context)' if args.context else ''}"
        f" -> pyzmq PULL, {args.size} B, "
        f"{args.backend}, {args.messages} messages\n"
    )
    for key, unit, digits in (
        ("cpu_us_per_msg", "sender CPU us/msg", 3),
        ("segments_per_msg", "TCP segments/msg", 4),
        ("msgs_per_s", "msgs/s", 0),
    ):
        base = statistics.median(r[key] for r in results[trees[0]])
        print(f"| tree | {unit} (median) | vs {trees[0].name or trees[0]} | cycles |")
        print("|---|---:|---:|---|")
        for tree in trees:
            values = [r[key] for r in results[tree]]
            med = statistics.median(values)
            ratio = f"{med / base:.3f}" if base else "-"
            cycles = ", ".join(f"{v:,.{digits}f}" for v in values)
            print(f"| {tree} | {med:,.{digits}f} | {ratio} | {cycles} |")
        print()
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = harness_parser(__doc__.splitlines()[0], messages=20000)
    ap.add_argument("--sockets", type=int, default=50, help="K, the PUSH sockets")
    ap.add_argument("--callgrind", action="store_true", help="instructions per message")
    ap.add_argument(
        "--context",
        action="store_true",
        help="make the sockets with one zmtp.Context (else an async with per socket)",
    )
    args = ap.parse_args(argv)
    if args.size < 1 or args.messages < 1 or args.sockets < 1:
        ap.error("--size, --messages and --sockets must be >= 1")
    if not args.callgrind and not args.child:
        return _native(args)
    flags = ["--sockets", str(args.sockets), *(["--context"] if args.context else [])]
    measured = measure(HERE, args, child_main, flags)
    if measured is None:
        return 0  # it was the measured program
    per_message, trees = measured
    print(
        f"\n{args.sockets} zmtp PUSH sockets in one task{' (one Context)' if args.context else ''}"
        f" -> pyzmq PULL, sender, {args.size} B, "
        f"{args.backend}: instructions per message ((Ir(2M) - Ir(M)) / M, M = {args.messages})\n"
    )
    print_table(per_message, trees)
    return 0


if __name__ == "__main__":
    sys.exit(main())
