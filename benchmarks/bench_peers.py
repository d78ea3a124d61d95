"""Many peers into one PULL: aggregate throughput and memory per connection, zmtp vs pyzmq.

One receiver process binds a PULL socket; ``--processes`` sender processes (2 by default, one
for a single connection) open ``--peers`` PUSH connections between them (100 = 50 sockets in
each of 2 processes) and send round-robin over their sockets, every sender as fast as its
HWMs let it. The receiver's rate is measured as in ``bench_throughput.py`` (first to last
timed message of the round, all connections together), so the ``vs 1 peer`` column is the
aggregate rate over the same implementation's single-connection rate in the same run (the
target: >= 0.8x at 100 connections). Memory: the receiver's resident set (VmRSS) after every
connection has delivered a first message, minus before any connected, over the number of
connections (the same for the senders, per socket); CPU µs per message of the receiver and of
all senders together (their CPU over the messages received), from ``getrusage``, and of the
receiver's cyclic garbage collector (``gc.callbacks``): with many busy connections the
receiver holds about ``--hwm`` decoded messages per connection, they outlive the young
generations, and the full collections over them are a large part of what a message costs
more than with one connection. ``--no-gc`` turns the receiver's collector off during the
timed rounds, to show the rate without that cost.

Examples::

    python benchmarks/bench_peers.py                      # 1, 10 and 100 peers, ~1-2 min
    python benchmarks/bench_peers.py --quick --peers 1,10
    python benchmarks/bench_peers.py --peers 100 --processes 100   # 100 PUSH processes

See benchmarks/README.md for how to read the output.
"""

from __future__ import annotations

import argparse
import gc
import os
import statistics
import sys
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from time import process_time
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_throughput as bt
from _common import (
    TCP_ANY,
    BenchParser,
    Params,
    Role,
    RoleFunc,
    Session,
    WorkerGroup,
    anyio_role,
    fmt_rate,
    fmt_ratio,
    log,
    pyzmq_bind,
    pyzmq_socket,
    render_table,
    require,
    serve_rounds_async,
    serve_rounds_sync,
    start_peers,
    summarize,
    zmtp_socket,
)


def rss_bytes() -> int:
    """This process's resident set size (Linux /proc; 0 where it cannot be read)."""
    try:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def _share(p: Params, total: int) -> int:
    """This sender's part of ``total`` messages (the remainder goes to the first ones)."""
    n, index = p["processes"], p["client_index"]
    return total // n + (1 if index < total % n else 0)


def _sockets_of(p: Params) -> int:
    n, index = p["processes"], p["client_index"]
    return p["peers"] // n + (1 if index < p["peers"] % n else 0)


class GcClock:
    """CPU seconds this process has spent in the cyclic garbage collector since it was made
    (a ``gc.callbacks`` hook: two clock reads per collection, a few thousand per round)."""

    def __init__(self) -> None:
        self.seconds = 0.0
        self._start = 0.0
        gc.callbacks.append(self._callback)

    def _callback(self, phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            self._start = process_time()
        else:
            self.seconds += process_time() - self._start


def gc_round(p: Params, clock: GcClock, result: Params, gc_before: float) -> Params:
    """A receiver's round result with its GC seconds; the collector back on after a
    ``--no-gc`` round (garbage is collected between rounds, untimed)."""
    result["recv_gc_s"] = clock.seconds - gc_before
    if p["no_gc"]:
        gc.enable()
    return result


def gc_round_start(p: Params, clock: GcClock) -> float:
    if p["no_gc"]:
        gc.disable()
    return clock.seconds


# =========================================================================== child roles


@anyio_role
async def zmtp_receiver(ctrl: Any, p: Params) -> None:
    clock = GcClock()
    async with zmtp_socket("PULL", p["hwm"]) as sock:
        before = rss_bytes()
        ctrl.send(("ready", await sock.bind(TCP_ANY)))
        for _ in range(p["peers"]):  # one hello per connection: every peer is up
            await sock.recv()
        ctrl.send(("connected", {"rss_delta": rss_bytes() - before}))

        async def run(r: Params) -> Params:
            gc_before = gc_round_start(p, clock)
            result = await bt.timed_recv_async(sock.recv, r["warmup"], r["count"], p["size"])
            return gc_round(p, clock, result, gc_before)

        await serve_rounds_async(ctrl, run)


@anyio_role
async def zmtp_sender(ctrl: Any, p: Params) -> None:
    from contextlib import AsyncExitStack

    payload = os.urandom(p["size"])
    async with AsyncExitStack() as stack:
        before = rss_bytes()
        socks = []
        if p.get("sender_context"):
            # One zmtp.Context for the process's sockets (docs/performance.md, "Send cadence
            # per thread and one task group per Context"): one task group, hence one cancel
            # scope, in this task instead of one per socket, so the fast path's periodic
            # cancel check on asyncio does not walk 50 scopes.
            import zmtp

            hwm = p["hwm"]
            ctx = await stack.enter_async_context(
                zmtp.Context(send_hwm=hwm, recv_hwm=hwm, linger=2.0)
            )
            for _ in range(_sockets_of(p)):
                sock = await ctx.socket("PUSH")
                await sock.connect(p["endpoint"])
                socks.append(sock)
        for _ in range(0 if p.get("sender_context") else _sockets_of(p)):
            sock = await stack.enter_async_context(zmtp_socket("PUSH", p["hwm"], linger=2.0))
            await sock.connect(p["endpoint"])
            socks.append(sock)
        for sock in socks:
            await sock.send(b"h")
        ctrl.send(("ready", {"rss_delta": rss_bytes() - before, "sockets": len(socks)}))
        sends = [s.send for s in socks]
        k = len(sends)

        async def run(r: Params) -> Params:
            total = _share(p, r["warmup"] + r["count"])
            cpu0 = bt.cpu_seconds()
            for i in range(total):
                await sends[i % k](payload)
            return {"send_cpu_s": bt.cpu_seconds() - cpu0}

        await serve_rounds_async(ctrl, run)


def pyzmq_receiver(ctrl: Any, p: Params) -> None:
    clock = GcClock()
    with pyzmq_socket("PULL", p["hwm"]) as sock:
        before = rss_bytes()
        ctrl.send(("ready", pyzmq_bind(sock)))
        for _ in range(p["peers"]):
            sock.recv()
        ctrl.send(("connected", {"rss_delta": rss_bytes() - before}))

        def run(r: Params) -> Params:
            gc_before = gc_round_start(p, clock)
            result = bt.timed_recv_sync(sock.recv, r["warmup"], r["count"], p["size"])
            return gc_round(p, clock, result, gc_before)

        serve_rounds_sync(ctrl, run)


def pyzmq_sender(ctrl: Any, p: Params) -> None:
    import zmq

    payload = os.urandom(p["size"])
    ctx = zmq.Context()
    before = rss_bytes()
    socks = []
    try:
        for _ in range(_sockets_of(p)):
            sock = ctx.socket(zmq.PUSH)
            sock.sndhwm = sock.rcvhwm = p["hwm"]
            sock.linger = 2000
            sock.connect(p["endpoint"])
            socks.append(sock)
        for sock in socks:
            sock.send(b"h")
        ctrl.send(("ready", {"rss_delta": rss_bytes() - before, "sockets": len(socks)}))
        sends = [s.send for s in socks]
        k = len(sends)

        def run(r: Params) -> Params:
            total = _share(p, r["warmup"] + r["count"])
            cpu0 = bt.cpu_seconds()
            for i in range(total):
                sends[i % k](payload)
            return {"send_cpu_s": bt.cpu_seconds() - cpu0}

        serve_rounds_sync(ctrl, run)
    finally:
        for sock in socks:
            sock.close()
        ctx.term()


@dataclass(frozen=True)
class Impl:
    name: str
    receiver: RoleFunc
    sender: RoleFunc
    requires: tuple[str, ...]
    params: dict[str, Any] = field(default_factory=dict)


IMPLS: dict[str, Impl] = {
    i.name: i
    for i in (
        Impl("zmtp-asyncio", zmtp_receiver, zmtp_sender, ("anyio",), {"backend": "asyncio"}),
        Impl("zmtp-trio", zmtp_receiver, zmtp_sender, ("anyio", "trio"), {"backend": "trio"}),
        Impl("pyzmq-sync", pyzmq_receiver, pyzmq_sender, ("zmq",)),
    )
}

# =========================================================================== harness


@dataclass
class PeersResult:
    impl: str
    peers: int
    processes: int
    size: int
    runs: list[dict[str, Any]] = field(default_factory=list)
    rss_recv: list[float] = field(default_factory=list)  #: bytes per connection, per cycle
    rss_send: list[float] = field(default_factory=list)  #: bytes per socket, per cycle
    error: str | None = None

    def rate(self, stat: str) -> float | None:
        return summarize([r["msgs_per_s"] for r in self.runs])[stat] if self.runs else None

    def cpu_us(self, key: str) -> float | None:
        values = [r[key] / r["recv_total"] * 1e6 for r in self.runs if key in r]
        return statistics.median(values) if values else None

    def to_json(self, stat: str) -> dict[str, Any]:
        return {
            "impl": self.impl,
            "peers": self.peers,
            "processes": self.processes,
            "size": self.size,
            "msgs_per_s": self.rate(stat),
            "summary_msgs_per_s": summarize([r["msgs_per_s"] for r in self.runs])
            if self.runs
            else None,
            "rss_per_connection_receiver": statistics.median(self.rss_recv)
            if self.rss_recv
            else None,
            "rss_per_socket_sender": statistics.median(self.rss_send) if self.rss_send else None,
            "cpu_us_per_msg": {
                "receiver": self.cpu_us("recv_cpu_s"),
                "senders": self.cpu_us("send_cpu_s"),
                "receiver_gc": self.cpu_us("recv_gc_s"),
            },
            "error": self.error,
            "runs": self.runs,
        }


def run_round(
    group: WorkerGroup, receiver: Any, senders: list[Any], warmup: int, count: int, timeout: float
) -> dict[str, Any]:
    """One round: every process runs; the receiver's timing, the senders' CPU added up."""
    for w in (receiver, *senders):
        w.send(("run", {"warmup": warmup, "count": count}))
    _, result = group.expect(receiver, "result", timeout)
    result["send_cpu_s"] = sum(group.expect(w, "result", timeout)[1]["send_cpu_s"] for w in senders)
    result["warmup"], result["count"] = warmup, count
    result["msgs_per_s"] = result["messages"] / result["elapsed"]
    return result


def measure(impl: Impl, res: PeersResult, args: argparse.Namespace) -> None:
    base = {
        "size": res.size,
        "hwm": args.hwm,
        "no_gc": args.no_gc,
        "sender_context": args.sender_context,
        "peers": res.peers,
        "processes": res.processes,
        **impl.params,
    }
    round_timeout = max(args.timeout, 20 * args.duration)
    label = f"{impl.name}/{res.peers}"
    with WorkerGroup(timeout=args.timeout) as group:
        receiver, senders = start_peers(
            group,
            args,
            Role(f"{label}/receiver", impl.receiver, base),
            [
                Role(f"{label}/sender{i}", impl.sender, {**base, "client_index": i})
                for i in range(res.processes)
            ],
            wait_ready=False,
        )
        sockets = 0
        rss_send = 0
        for sender in senders:
            _, info = group.expect(sender, "ready", args.timeout)
            sockets += info["sockets"]
            rss_send += info["rss_delta"]
        _, info = group.expect(receiver, "connected", args.timeout)
        res.rss_recv.append(info["rss_delta"] / res.peers)
        res.rss_send.append(rss_send / max(1, sockets))
        count = args.pilot
        pilot = run_round(group, receiver, senders, count // 10, count, round_timeout)
        count = max(1000, min(args.max_count, int(pilot["msgs_per_s"] * args.duration)))
        warmup = max(100, int(count * args.warmup))
        for i in range(args.repeat):
            run = run_round(group, receiver, senders, warmup, count, round_timeout)
            res.runs.append(run)
            log(
                f"    run {i + 1}/{args.repeat}: {fmt_rate(run['msgs_per_s'])}msgs/s",
                args.quiet,
            )


def table(results: list[PeersResult], stat: str) -> str:
    single = {r.impl: r.rate(stat) for r in results if r.peers == 1}
    ref = {r.peers: r.rate(stat) for r in results if r.impl == "pyzmq-sync"}
    rows = []
    for r in results:
        rate = r.rate(stat)
        if rate is None:
            rows.append([r.impl, str(r.peers), str(r.processes), "FAILED", *["-"] * 8])
            continue
        one = single.get(r.impl)
        zref = ref.get(r.peers)
        spread = summarize([x["msgs_per_s"] for x in r.runs])["spread"]
        rss_r = statistics.median(r.rss_recv) / 1024 if r.rss_recv else None
        rss_s = statistics.median(r.rss_send) / 1024 if r.rss_send else None
        recv_cpu = r.cpu_us("recv_cpu_s")
        recv_gc = r.cpu_us("recv_gc_s")
        send_cpu = r.cpu_us("send_cpu_s")
        rows.append(
            [
                r.impl,
                str(r.peers),
                str(r.processes),
                fmt_rate(rate),
                fmt_ratio(rate / one) if one else "-",
                fmt_ratio(rate / zref) if zref else "-",
                f"{spread * 100:.0f}%" if len(r.runs) > 1 else "-",
                "-" if rss_r is None else f"{rss_r:,.1f}",
                "-" if rss_s is None else f"{rss_s:,.1f}",
                "-" if recv_cpu is None else f"{recv_cpu:.2f}",
                "-" if recv_gc is None else f"{recv_gc:.2f}",
                "-" if send_cpu is None else f"{send_cpu:.2f}",
            ]
        )
    return render_table(
        [
            "implementation",
            "peers",
            "sender procs",
            "aggregate msgs/s",
            "vs 1 peer",
            "vs pyzmq sync",
            "spread",
            "recv RSS KiB/conn",
            "send RSS KiB/socket",
            "recv CPU µs/msg",
            "of it GC µs/msg",
            "senders CPU µs/msg",
        ],
        rows,
    )


def parser() -> BenchParser:
    ap = BenchParser(__doc__, "Implementations: " + ", ".join(IMPLS) + ".")
    ap.add_argument("--impl", default=",".join(IMPLS), help="comma-separated implementations")
    ap.add_argument("--peers", default="1,10,100", help="connection counts (default 1,10,100)")
    ap.add_argument(
        "--processes", type=int, default=2, help="sender processes (default 2; 1 for one peer)"
    )
    ap.add_argument("--size", type=int, default=64, help="message size (default 64)")
    ap.add_argument("--duration", type=float, default=1.0, help="seconds per timed round")
    ap.add_argument("--repeat", type=int, default=3, help="timed rounds per configuration")
    ap.add_argument("--cycles", type=int, default=1, help="run the whole plan N times in turn")
    ap.add_argument("--stat", choices=("median", "best"), default="median")
    ap.add_argument("--warmup", type=float, default=0.1, help="warm-up fraction of N")
    ap.add_argument("--pilot", type=int, default=20_000, help="messages in the pilot round")
    ap.add_argument("--hwm", type=int, default=1000)
    ap.add_argument(
        "--no-gc", action="store_true", help="the receiver's cyclic GC off in the timed rounds"
    )
    ap.add_argument(
        "--sender-context",
        action="store_true",
        help="zmtp senders make their sockets with one zmtp.Context (one task group per "
        "process) instead of an async with per socket",
    )
    ap.add_argument("--max-count", type=int, default=20_000_000)
    ap.add_argument("--timeout", type=float, default=60.0)
    ap.add_argument("--quick", action="store_true", help="smoke test: short rounds, 1 repeat")
    ap.add_harness_options(("receiver", "sender"), "run that role under cProfile")
    return ap


def plan_results(args: argparse.Namespace, ap: BenchParser) -> list[tuple[Impl, PeersResult]]:
    if args.quick:
        args.duration, args.repeat, args.pilot = 0.25, 1, min(args.pilot, 5000)
    if args.repeat < 1 or args.duration <= 0 or args.cycles < 1 or args.processes < 1:
        ap.error("--repeat, --cycles and --processes must be >= 1 and --duration > 0")
    try:
        peer_counts = [int(x) for x in args.peers.split(",") if x.strip()]
    except ValueError:
        ap.error(f"--peers: integers expected, got {args.peers!r}")
    if not peer_counts or min(peer_counts) < 1:
        ap.error("--peers: at least one count, each >= 1")
    names = ap.names(args.impl, IMPLS, "implementation")
    require({n: IMPLS[n].requires for n in names})
    return [
        (IMPLS[n], PeersResult(n, peers, min(args.processes, peers), args.size))
        for peers in peer_counts
        for n in names
    ]


def main(argv: list[str] | None = None) -> int:
    ap = parser()
    args = ap.parse_bench_args(argv)
    plan = plan_results(args, ap)
    session = Session(args)
    session.run(
        [
            (f"{impl.name} {res.peers} peers", res, partial(measure, impl, res, args))
            for impl, res in plan
        ],
        cycles=args.cycles,
    )
    results = [res for _, res in plan]
    print(
        f"\nmany peers -> one PULL, {args.size} B: {args.stat} of the rounds "
        f"({args.repeat} x {args.cycles} cycle(s) of ~{args.duration:g} s) at the receiver, "
        f"HWM {args.hwm}, separate processes over tcp"
        f"{', receiver GC off' if args.no_gc else ''}"
        f"{', zmtp senders in one zmtp.Context' if args.sender_context else ''}\n"
    )
    tables = {"peers": table(results, args.stat)}
    print(tables["peers"])
    return session.finish(
        [(f"{r.impl} {r.peers} peers", r.error) for r in results if r.error],
        "peers",
        {
            "peers": sorted({r.peers for r in results}),
            "processes": args.processes,
            "size": args.size,
            "duration": args.duration,
            "repeat": args.repeat,
            "cycles": args.cycles,
            "hwm": args.hwm,
            "no_gc": args.no_gc,
            "sender_context": args.sender_context,
            "quick": args.quick,
        },
        tables,
        results=[r.to_json(args.stat) for r in results],
    )


if __name__ == "__main__":
    sys.exit(main())
