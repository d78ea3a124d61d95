"""DEALER -> ROUTER and ROUTER -> DEALER throughput: zmtp (asyncio, trio) against pyzmq.

The method of ``bench_throughput.py`` (separate spawned processes over tcp on 127.0.0.1,
calibrated rounds, rate measured at the receiver from its first to its last timed message,
CPU µs per message of each side), with the routing sockets:

* ``dealer-router``: a ROUTER binds and receives ``[routing id, payload]``; a DEALER connects
  and sends ``payload``.
* ``router-dealer``: a DEALER binds (with an Identity) and receives; a ROUTER connects and
  sends ``[that identity, payload]``, with ``router_mandatory`` so that a full peer makes
  ``send`` wait (zmtp and libzmq alike) instead of dropping: every message is counted. The
  DEALER says hello first, so the ROUTER knows the peer is routable before it sends.

Examples::

    python benchmarks/bench_routing.py                    # both patterns, 64 B, ~1 min
    python benchmarks/bench_routing.py --quick            # smoke test
    python benchmarks/bench_routing.py --cycles 2 --json routing.json

See benchmarks/README.md for how to read the output.
"""

from __future__ import annotations

import os
import sys
from functools import partial
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_throughput as bt
from _common import (
    TCP_ANY,
    BenchParser,
    Params,
    Session,
    anyio_role,
    pyzmq_bind,
    pyzmq_socket,
    require,
    serve_rounds_async,
    serve_rounds_sync,
    size_label,
    zmtp_socket,
)

PEER_ID = b"bench-dealer"
PATTERNS = ("dealer-router", "router-dealer")

# =========================================================================== child roles


def _payload_of(message: list[bytes]) -> bytes:
    return message[-1]


# --------------------------------------------------------------------------- zmtp


@anyio_role
async def zmtp_router_receiver(ctrl: Any, p: Params) -> None:
    async with zmtp_socket("ROUTER", p["hwm"]) as sock:
        ctrl.send(("ready", await sock.bind(TCP_ANY)))
        recv_multipart = sock.recv_multipart

        async def recv() -> bytes:
            return (await recv_multipart())[-1]

        await serve_rounds_async(
            ctrl, lambda r: bt.timed_recv_async(recv, r["warmup"], r["count"], p["size"])
        )


@anyio_role
async def zmtp_dealer_sender(ctrl: Any, p: Params) -> None:
    payload = os.urandom(p["size"])
    async with zmtp_socket("DEALER", p["hwm"], linger=2.0) as sock:
        await sock.connect(p["endpoint"])
        ctrl.send(("ready", None))
        await serve_rounds_async(
            ctrl, lambda r: bt.send_n_async(sock.send, payload, r["warmup"] + r["count"])
        )


@anyio_role
async def zmtp_dealer_receiver(ctrl: Any, p: Params) -> None:
    async with zmtp_socket("DEALER", p["hwm"], identity=PEER_ID) as sock:
        ctrl.send(("ready", await sock.bind(TCP_ANY)))
        await sock.send(b"hello")  # waits for the ROUTER to connect
        await serve_rounds_async(
            ctrl, lambda r: bt.timed_recv_async(sock.recv, r["warmup"], r["count"], p["size"])
        )


@anyio_role
async def zmtp_router_sender(ctrl: Any, p: Params) -> None:
    payload = os.urandom(p["size"])
    async with zmtp_socket("ROUTER", p["hwm"], linger=2.0, router_mandatory=True) as sock:
        await sock.connect(p["endpoint"])
        peer, hello = await sock.recv_multipart()
        assert peer == PEER_ID and hello == b"hello", (peer, hello)
        ctrl.send(("ready", None))
        send_multipart = sock.send_multipart
        message = [PEER_ID, payload]

        async def send(_: bytes) -> None:
            await send_multipart(message)

        await serve_rounds_async(
            ctrl, lambda r: bt.send_n_async(send, payload, r["warmup"] + r["count"])
        )


# --------------------------------------------------------------------------- pyzmq sync


def pyzmq_router_receiver(ctrl: Any, p: Params) -> None:
    with pyzmq_socket("ROUTER", p["hwm"]) as sock:
        ctrl.send(("ready", pyzmq_bind(sock)))
        recv_multipart = sock.recv_multipart

        def recv() -> bytes:
            return recv_multipart()[-1]  # type: ignore[no-any-return]

        serve_rounds_sync(
            ctrl, lambda r: bt.timed_recv_sync(recv, r["warmup"], r["count"], p["size"])
        )


def pyzmq_dealer_sender(ctrl: Any, p: Params) -> None:
    payload = os.urandom(p["size"])
    with pyzmq_socket("DEALER", p["hwm"], linger=2000) as sock:
        sock.connect(p["endpoint"])
        ctrl.send(("ready", None))
        serve_rounds_sync(
            ctrl, lambda r: bt.send_n_sync(sock.send, payload, r["warmup"] + r["count"])
        )


def pyzmq_dealer_receiver(ctrl: Any, p: Params) -> None:
    import zmq

    with pyzmq_socket("DEALER", p["hwm"]) as sock:
        sock.setsockopt(zmq.ROUTING_ID, PEER_ID)
        ctrl.send(("ready", pyzmq_bind(sock)))
        sock.send(b"hello")  # queued until the ROUTER connects
        serve_rounds_sync(
            ctrl, lambda r: bt.timed_recv_sync(sock.recv, r["warmup"], r["count"], p["size"])
        )


def pyzmq_router_sender(ctrl: Any, p: Params) -> None:
    import zmq

    payload = os.urandom(p["size"])
    with pyzmq_socket("ROUTER", p["hwm"], linger=2000) as sock:
        sock.setsockopt(zmq.ROUTER_MANDATORY, 1)
        sock.connect(p["endpoint"])
        peer, hello = sock.recv_multipart()
        assert peer == PEER_ID and hello == b"hello", (peer, hello)
        ctrl.send(("ready", None))
        send_multipart = sock.send_multipart
        message = [PEER_ID, payload]

        def send(_: bytes) -> None:
            send_multipart(message)

        serve_rounds_sync(ctrl, lambda r: bt.send_n_sync(send, payload, r["warmup"] + r["count"]))


# =========================================================================== registry

ASYNCIO, TRIO = {"backend": "asyncio"}, {"backend": "trio"}
IMPLS: dict[str, dict[str, bt.Impl]] = {
    "dealer-router": {
        i.name: i
        for i in (
            bt.Impl("zmtp-asyncio", zmtp_router_receiver, zmtp_dealer_sender, ("anyio",), ASYNCIO),
            bt.Impl("zmtp-trio", zmtp_router_receiver, zmtp_dealer_sender, ("anyio", "trio"), TRIO),
            bt.Impl("pyzmq-sync", pyzmq_router_receiver, pyzmq_dealer_sender, ("zmq",)),
        )
    },
    "router-dealer": {
        i.name: i
        for i in (
            bt.Impl("zmtp-asyncio", zmtp_dealer_receiver, zmtp_router_sender, ("anyio",), ASYNCIO),
            bt.Impl("zmtp-trio", zmtp_dealer_receiver, zmtp_router_sender, ("anyio", "trio"), TRIO),
            bt.Impl("pyzmq-sync", pyzmq_dealer_receiver, pyzmq_router_sender, ("zmq",)),
        )
    },
}
IMPL_NAMES = ("zmtp-asyncio", "zmtp-trio", "pyzmq-sync")

# =========================================================================== main


def main(argv: list[str] | None = None) -> int:
    ap = BenchParser(__doc__, "See benchmarks/README.md.")
    ap.add_argument("--patterns", default=",".join(PATTERNS), help="comma-separated patterns")
    ap.add_argument("--impl", default=",".join(IMPL_NAMES), help="comma-separated impls")
    ap.add_argument("--sizes", default="64", help="comma-separated message sizes (default 64)")
    ap.add_argument("--duration", type=float, default=1.0, help="seconds per timed round")
    ap.add_argument("--repeat", type=int, default=3, help="timed rounds per configuration")
    ap.add_argument("--cycles", type=int, default=1, help="run the whole plan N times in turn")
    ap.add_argument("--stat", choices=("median", "best"), default="median")
    ap.add_argument("--warmup", type=float, default=0.1, help="warm-up fraction of N")
    ap.add_argument("--hwm", type=int, default=1000)
    ap.add_argument("--max-count", type=int, default=20_000_000)
    ap.add_argument("--timeout", type=float, default=60.0)
    ap.add_argument("--quick", action="store_true", help="smoke test: 0.25 s rounds, 1 repeat")
    ap.add_harness_options(("receiver", "sender"), "run that role under cProfile")
    args = ap.parse_bench_args(argv)
    if args.quick:
        args.duration, args.repeat = 0.25, 1
    if args.repeat < 1 or args.duration <= 0 or args.cycles < 1:
        ap.error("--repeat and --cycles must be >= 1 and --duration > 0")
    sizes = ap.sizes(args.sizes)
    patterns = ap.names(args.patterns, PATTERNS, "pattern")
    names = ap.names(args.impl, IMPL_NAMES, "implementation")
    plan = [(pat, IMPLS[pat][n], s) for pat in patterns for s in sizes for n in names]
    require({impl.name: impl.requires for _, impl, _ in plan})

    session = Session(args)
    configs = [bt.ConfigResult(pat, impl.name, size) for pat, impl, size in plan]

    def measure(impl: bt.Impl, pat: str, size: int, res: bt.ConfigResult) -> None:
        before = list(res.runs)
        bt.measure(impl, pat, size, args, res)
        res.runs = before + res.runs  # cycles pool their rounds

    session.run(
        [
            (f"{pat} {impl.name} {size_label(size)}", res, partial(measure, impl, pat, size, res))
            for (pat, impl, size), res in zip(plan, configs, strict=True)
        ],
        cycles=args.cycles,
    )
    tables: dict[str, str] = {}
    print(
        f"\nzmtp routing throughput: {args.stat} of {args.repeat * args.cycles} round(s) of "
        f"~{args.duration:g} s at the receiver; HWM {args.hwm}; separate processes over tcp."
    )
    for pat in patterns:
        rows = [r for r in configs if r.section == pat and (r.runs or r.error)]
        if rows:
            title = "DEALER -> ROUTER" if pat == "dealer-router" else "ROUTER -> DEALER"
            print(f"\n{title}\n")
            tables[pat] = bt.tcp_table(rows, args.stat)
            print(tables[pat])
    return session.finish(
        [(f"{r.section} {r.impl} {size_label(r.size)}", r.error) for r in configs if r.error],
        "routing",
        {
            "patterns": patterns,
            "sizes": sizes,
            "duration": args.duration,
            "repeat": args.repeat,
            "cycles": args.cycles,
            "hwm": args.hwm,
            "impls": names,
            "quick": args.quick,
        },
        tables,
        results=[r.to_json(args.stat) for r in configs],
    )


if __name__ == "__main__":
    sys.exit(main())
