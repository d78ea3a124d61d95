"""Instructions per QoS message under valgrind's callgrind: both ends, or the sender or the
receiver alone.

The QoS throughput targets (docs/performance.md, "QoS levels") are ratios of rates, which a
shared machine moves by 2-3x between runs; instruction counts barely move. This runs a PUSH
and a PULL (64 B, distinct messages, HWM 1000) at one level over tcp:

* ``--end both``: both sockets in the one traced process (the figure the optimisation log
  quotes as "both ends in one process");
* ``--end sender``: the PUSH traced, the PULL in a child process (native, not traced:
  callgrind follows no children);
* ``--end receiver``: the PULL traced, the PUSH in a child.

Each tree runs twice, with M and 2M messages; ``(Ir(2M) - Ir(M)) / M`` is the traced side's
instructions per message with start-up, imports, handshakes and the close cancelled out. A
round ends when every message is settled (the sender closes with a long linger, which waits
for the last ACK or COMP; a plain PUSH's close flushes). Level -1 is a plain ``zmtp.Socket``.
Trees are checkouts (``git archive REV zmtp zmtp_qos | tar -x -C DIR``); their packages are
put first on ``PYTHONPATH``, and the order alternates between cycles.

    .venv/bin/python benchmarks/callgrind_qos.py --level 1 --cycles 2 /tmp/before .
    .venv/bin/python benchmarks/callgrind_qos.py --level 2 --end sender /tmp/before .

Needs valgrind.
"""

from __future__ import annotations

import argparse
import gc
import itertools
import multiprocessing
import os
import struct
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _callgrind import harness_parser, measure, print_table

HERE = Path(__file__).resolve()

# --------------------------------------------------------------------------- the measured run


def _socket(level: int, kind: str, linger: float) -> Any:
    import zmtp
    import zmtp_qos

    opts: dict[str, Any] = {"send_hwm": 1000, "recv_hwm": 1000, "linger": linger}
    return zmtp.Socket(kind, **opts) if level < 0 else zmtp_qos.Socket(kind, qos=level, **opts)


def _messages(count: int, size: int) -> list[bytes]:
    """Distinct messages (levels 2-3 de-duplicate by content): a counter, then filler."""
    pack = struct.Struct("<Q").pack
    filler = b"q" * max(size - 8, 0)
    return [(pack(n) + filler)[:size] for n in itertools.islice(itertools.count(), count)]


async def _send_all(push: Any, count: int, size: int) -> None:
    send = push.send
    for message in _messages(count, size):
        await send(message)


async def _receive_all(pull: Any, level: int, count: int) -> None:
    recv = pull.recv
    for _ in range(count):
        message = await recv()
        if level == 3:
            message.complete()


async def _both(args: argparse.Namespace) -> None:
    import anyio

    async with _socket(args.level, "PULL", linger=10) as pull:
        endpoint = await pull.bind("tcp://127.0.0.1:*")
        async with _socket(args.level, "PUSH", linger=600) as push:
            await push.connect(endpoint)
            if args.no_gc:
                gc.disable()
            with anyio.fail_after(3000):
                async with anyio.create_task_group() as tg:
                    tg.start_soon(_receive_all, pull, args.level, args.messages)
                    await _send_all(push, args.messages, args.size)
        # the PUSH's close waited for every message to be settled


def _peer(role: str, level: int, count: int, size: int, backend: str, conn: Any) -> None:
    """The untraced end, in a child process: ``role`` is the side it plays."""
    import anyio

    async def receive() -> None:
        async with _socket(level, "PULL", linger=10) as pull:
            conn.send(await pull.bind("tcp://127.0.0.1:*"))
            await _receive_all(pull, level, count)
            await anyio.to_thread.run_sync(conn.recv)  # the sender has settled everything

    async def send() -> None:
        endpoint = conn.recv()
        async with _socket(level, "PUSH", linger=600) as push:
            await push.connect(endpoint)
            await _send_all(push, count, size)
        conn.send("settled")

    anyio.run(receive if role == "receiver" else send, backend=backend)


async def _one_end(args: argparse.Namespace) -> None:
    import anyio

    ctx = multiprocessing.get_context("spawn")
    ours, theirs = ctx.Pipe()
    role = "receiver" if args.end == "sender" else "sender"
    proc = ctx.Process(
        target=_peer, args=(role, args.level, args.messages, args.size, args.backend, theirs)
    )
    proc.start()
    try:
        with anyio.fail_after(3000):
            if args.end == "sender":
                endpoint = await anyio.to_thread.run_sync(ours.recv)
                async with _socket(args.level, "PUSH", linger=600) as push:
                    await push.connect(endpoint)
                    if args.no_gc:
                        gc.disable()
                    await _send_all(push, args.messages, args.size)
                ours.send("settled")
            else:
                async with _socket(args.level, "PULL", linger=10) as pull:
                    endpoint = await pull.bind("tcp://127.0.0.1:*")
                    ours.send(endpoint)
                    if args.no_gc:
                        gc.disable()
                    await _receive_all(pull, args.level, args.messages)
                    await anyio.to_thread.run_sync(ours.recv)  # CLRs read meanwhile
    finally:
        proc.join(60)
        if proc.exitcode is None:
            proc.kill()
    if proc.exitcode != 0:
        raise RuntimeError(f"the {role} process failed (exit {proc.exitcode})")


def child_main(args: argparse.Namespace) -> None:
    import anyio

    anyio.run(_both if args.end == "both" else _one_end, args, backend=args.backend)


# --------------------------------------------------------------------------- the harness


def main(argv: list[str] | None = None) -> int:
    ap = harness_parser(__doc__.splitlines()[0], messages=2000)
    ap.set_defaults(timeout=1800.0)  # both ends traced: twice the others' runs
    ap.add_argument("--level", type=int, default=1, choices=(-1, 0, 1, 2, 3))
    ap.add_argument("--end", choices=("both", "sender", "receiver"), default="both")
    ap.add_argument("--no-gc", action="store_true", help="the cyclic GC off in the traced run")
    args = ap.parse_args(argv)
    if args.size < 8:
        ap.error("--size must be >= 8 (a counter keeps the messages distinct)")
    flags = [f"--level={args.level}", "--end", args.end]
    measured = measure(HERE, args, child_main, flags + (["--no-gc"] if args.no_gc else []))
    if measured is None:
        return 0  # it was the measured program
    per_message, trees = measured
    label = "plain" if args.level < 0 else f"level {args.level}"
    print(
        f"\nPUSH -> PULL {label}, {args.size} B, {args.backend}, traced: {args.end} "
        f"(instructions per message, (Ir(2M) - Ir(M)) / M, M = {args.messages})\n"
    )
    print_table(per_message, trees)
    return 0


if __name__ == "__main__":
    os.environ.setdefault("PYTHONHASHSEED", "0")
    sys.exit(main())
