"""Instructions per sent message of a blocking ``zmtp.sync`` sender, under valgrind's callgrind.

The ``zmtp.sync`` companion of ``callgrind_sender.py``. Patterns:

* ``router``: a ``zmtp.sync`` ROUTER (a direct-send type: each ``send_multipart`` routes the
  message in the calling thread, ``zmtp.sync._send_now``) sends ``[identity, payload]`` to
  one pyzmq DEALER process (native, not traced), which says hello first;
* ``push``: a ``zmtp.sync`` PUSH (a queued type: ``send`` appends to the send buffer that the
  pump task routes) sends ``payload`` to a pyzmq PULL process.

Each tree runs twice, with M and 2M messages; ``(Ir(2M) - Ir(M)) / M`` is the instructions per
message with start-up, imports and handshakes cancelled out. Both the caller's thread and the
loop's background thread are counted (callgrind runs one thread at a time). Trees are
checkouts, as for ``compare_trees.py``. ``--backend`` is ignored (``zmtp.sync`` runs asyncio).

    .venv/bin/python benchmarks/callgrind_sync.py --pattern router --cycles 3 /tmp/before .

Needs valgrind and pyzmq.
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
PEER_ID = b"callgrind-sync-dealer"
PATTERNS = ("router", "push")


def _pyzmq_peer(pattern: str, total: int, conn: Any) -> None:
    """A bound pyzmq DEALER named PEER_ID that says hello (``router``), or a bound PULL
    (``push``); it counts ``total`` messages, then reports done."""
    import zmq

    ctx = zmq.Context()
    sock = ctx.socket(zmq.DEALER if pattern == "router" else zmq.PULL)
    if pattern == "router":
        sock.setsockopt(zmq.ROUTING_ID, PEER_ID)
    port = sock.bind_to_random_port("tcp://127.0.0.1")
    conn.send(f"tcp://127.0.0.1:{port}")
    if pattern == "router":
        sock.send(b"hello")  # queued until the ROUTER connects
    for _ in range(total):
        sock.recv()
    conn.send("done")
    sock.close(linger=0)
    ctx.term()


def child_main(args: argparse.Namespace) -> None:
    import zmtp
    import zmtp.sync

    ctx = multiprocessing.get_context("spawn")
    parent, child = ctx.Pipe()
    proc = ctx.Process(target=_pyzmq_peer, args=(args.pattern, args.messages, child))
    proc.start()
    endpoint = parent.recv()
    payload = os.urandom(args.size)
    if args.pattern == "router":
        with zmtp.sync.Socket(
            zmtp.ROUTER, router_mandatory=True, linger=5.0, recv_timeout=120.0
        ) as router:
            router.connect(endpoint)
            assert router.recv_multipart() == [PEER_ID, b"hello"]
            send_multipart = router.send_multipart
            message = [PEER_ID, payload]
            for _ in range(args.messages):
                send_multipart(message)
            if not parent.poll(300):
                raise TimeoutError("the pyzmq peer did not report")
    else:
        with zmtp.sync.Socket(zmtp.PUSH, linger=5.0) as push:
            push.connect(endpoint)
            send = push.send
            for _ in range(args.messages):
                send(payload)
            if not parent.poll(300):
                raise TimeoutError("the pyzmq peer did not report")
    assert parent.recv() == "done"
    proc.join(60)


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
        "router": "zmtp.sync ROUTER -> pyzmq DEALER, sender (direct sends)",
        "push": "zmtp.sync PUSH -> pyzmq PULL, sender (queued sends)",
    }[args.pattern]
    print(
        f"\n{what}, {args.size} B: instructions per message "
        f"((Ir(2M) - Ir(M)) / M, M = {args.messages})\n"
    )
    print_table(per_message, trees)
    return 0


if __name__ == "__main__":
    sys.exit(main())
