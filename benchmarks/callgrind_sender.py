"""Instructions per sent message: a zmtp ROUTER or DEALER sender, or inproc PUSH -> PULL,
under valgrind's callgrind.

The send-side companion of ``callgrind_receiver.py``, for the issue-15 routing and inproc
targets (docs/performance.md), where a shared machine moves the rates by 2x but the number of
instructions per message barely moves. Patterns:

* ``router``: a zmtp ROUTER (``router_mandatory``, as in ``bench_routing.py``) connects to one
  pyzmq DEALER process (native, not traced: callgrind follows no children) and sends it
  ``[identity, payload]``; the DEALER says hello first so that the ROUTER knows its id.
* ``dealer``: a zmtp DEALER sends ``payload`` to a pyzmq ROUTER process (the reference the
  ROUTER's send path is compared with).
* ``push``: a zmtp PUSH sends ``payload`` to a pyzmq PULL process: issue 15's PUSH -> PULL
  throughput pair (``bench_throughput.py``), sender side only.
* ``inproc``: zmtp PUSH -> PULL over inproc in the one traced process, a sender task beside
  the receiving loop (``bench_throughput.py --inproc``): both ends are counted.

Each tree runs twice, with M and 2M messages; ``(Ir(2M) - Ir(M)) / M`` is the instructions per
message with start-up, imports and handshakes cancelled out. Trees are checkouts, as for
``compare_trees.py`` (their ``zmtp`` is put first on ``PYTHONPATH``); the order alternates
between cycles.

    .venv/bin/python benchmarks/callgrind_sender.py --pattern router --cycles 2 /tmp/before .
    .venv/bin/python benchmarks/callgrind_sender.py --pattern push --backend trio /tmp/before .
    .venv/bin/python benchmarks/callgrind_sender.py --pattern inproc --backend trio /tmp/before .

Over tcp the count varies a little with how many messages the connection's writer finds
queued when it wakes (timing); inproc runs in one event loop and barely varies (trio's random
task order aside). Needs valgrind, and pyzmq for ``router``, ``dealer`` and ``push``.
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _callgrind import harness_parser, measure, print_table

HERE = Path(__file__).resolve()
PEER_ID = b"callgrind-dealer"
PATTERNS = ("router", "dealer", "push", "inproc")

# --------------------------------------------------------------------------- pyzmq peers


def _pyzmq_dealer(total: int, conn: Any) -> None:
    """The ``router`` pattern's peer: a bound DEALER named PEER_ID that says hello, then
    counts ``total`` messages."""
    import zmq

    ctx = zmq.Context()
    sock = ctx.socket(zmq.DEALER)
    sock.setsockopt(zmq.ROUTING_ID, PEER_ID)
    port = sock.bind_to_random_port("tcp://127.0.0.1")
    conn.send(f"tcp://127.0.0.1:{port}")
    sock.send(b"hello")  # queued until the ROUTER connects
    for _ in range(total):
        sock.recv()
    conn.send("done")
    sock.close(linger=0)
    ctx.term()


def _pyzmq_router(total: int, conn: Any) -> None:
    """The ``dealer`` pattern's peer: a bound ROUTER that counts ``total`` messages."""
    import zmq

    ctx = zmq.Context()
    sock = ctx.socket(zmq.ROUTER)
    port = sock.bind_to_random_port("tcp://127.0.0.1")
    conn.send(f"tcp://127.0.0.1:{port}")
    for _ in range(total):
        sock.recv_multipart()
    conn.send("done")
    sock.close(linger=0)
    ctx.term()


def _pyzmq_pull(total: int, conn: Any) -> None:
    """The ``push`` pattern's peer: a bound PULL that counts ``total`` messages."""
    import zmq

    ctx = zmq.Context()
    sock = ctx.socket(zmq.PULL)
    port = sock.bind_to_random_port("tcp://127.0.0.1")
    conn.send(f"tcp://127.0.0.1:{port}")
    for _ in range(total):
        sock.recv()
    conn.send("done")
    sock.close(linger=0)
    ctx.term()


PEERS = {"router": _pyzmq_dealer, "dealer": _pyzmq_router, "push": _pyzmq_pull}

# --------------------------------------------------------------------------- the measured run


async def _wait_done(conn: Any) -> None:
    import anyio

    with anyio.fail_after(300):
        while not conn.poll():
            await anyio.sleep(0.01)
        assert conn.recv() == "done"


async def _send_over_tcp(args: argparse.Namespace) -> None:
    import anyio

    import zmtp

    ctx = multiprocessing.get_context("spawn")
    parent, child = ctx.Pipe()
    proc = ctx.Process(target=PEERS[args.pattern], args=(args.messages, child))
    proc.start()
    endpoint = parent.recv()
    payload = os.urandom(args.size)
    if args.pattern == "router":
        async with zmtp.Socket(zmtp.ROUTER, router_mandatory=True, linger=5.0) as router:
            await router.connect(endpoint)
            with anyio.fail_after(120):
                assert await router.recv_multipart() == [PEER_ID, b"hello"]
            send_multipart = router.send_multipart
            message = [PEER_ID, payload]
            for _ in range(args.messages):
                await send_multipart(message)
            await _wait_done(parent)
    else:
        kind = zmtp.DEALER if args.pattern == "dealer" else zmtp.PUSH
        async with zmtp.Socket(kind, linger=5.0) as sender:
            await sender.connect(endpoint)
            send = sender.send
            for _ in range(args.messages):
                await send(payload)
            await _wait_done(parent)
    proc.join(60)


async def _inproc(args: argparse.Namespace) -> None:
    import anyio

    import zmtp

    payload = os.urandom(args.size)
    async with zmtp.Socket(zmtp.PULL) as pull, zmtp.Socket(zmtp.PUSH) as push:
        await pull.bind(f"inproc://callgrind-{os.getpid()}")
        await push.connect(f"inproc://callgrind-{os.getpid()}")

        async def send_all() -> None:
            send = push.send
            for _ in range(args.messages):
                await send(payload)

        with anyio.fail_after(300):
            async with anyio.create_task_group() as tg:
                tg.start_soon(send_all)
                recv = pull.recv
                for _ in range(args.messages):
                    await recv()


def child_main(args: argparse.Namespace) -> None:
    import anyio

    run = _inproc if args.pattern == "inproc" else _send_over_tcp
    anyio.run(run, args, backend=args.backend)


# --------------------------------------------------------------------------- the harness


def main(argv: list[str] | None = None) -> int:
    ap = harness_parser(__doc__.splitlines()[0], messages=4000)
    ap.add_argument("--pattern", choices=PATTERNS, default="router")
    args = ap.parse_args(argv)
    if args.size < 1 or args.messages < 1:
        ap.error("--size and --messages must be >= 1")
    measured = measure(HERE, args, child_main, ["--pattern", args.pattern])
    if measured is None:
        return 0  # it was the measured program
    per_message, trees = measured
    what = {
        "router": "zmtp ROUTER -> pyzmq DEALER, sender",
        "dealer": "zmtp DEALER -> pyzmq ROUTER, sender",
        "push": "zmtp PUSH -> pyzmq PULL, sender",
        "inproc": "zmtp inproc PUSH -> PULL, one process (both ends)",
    }[args.pattern]
    print(
        f"\n{what}, {args.size} B, {args.backend}: instructions per message "
        f"((Ir(2M) - Ir(M)) / M, M = {args.messages})\n"
    )
    print_table(per_message, trees)
    return 0


if __name__ == "__main__":
    sys.exit(main())
