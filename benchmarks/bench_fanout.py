"""PUB -> SUB fan-out throughput: zmtp (asyncio, trio) against pyzmq (sync, zmq.asyncio).

One publisher process binds a PUB socket on tcp://127.0.0.1; N subscriber processes (default
1 and 10) connect SUB sockets and subscribe to everything. All are *spawned* processes.

Method, per (implementation, subscriber count, size):

1. **Everyone subscribed before measuring.** The publisher sends a small *probe* message every
   2 ms; a subscriber reports ready only after it has received one, which proves that its
   subscription reached the publisher. Measuring starts once every subscriber is ready.
2. **A round.** Every subscriber is told to receive, then the publisher sends data messages
   as fast as it can for ``--warmup`` + ``--duration`` seconds, then an *end marker* (tagged
   with the round number) every 1 ms until the harness has heard from every subscriber.
   Each subscriber counts data messages: its timed window starts at the first data message
   after ``--warmup`` seconds of data (counted from its own first one) and ends when the end
   marker arrives, so it includes draining what was still queued for it. Its delivered rate is
   ``timed messages / window``.
3. **What is reported.** Per round: the median and the slowest subscriber's delivered msgs/s,
   the aggregate (the sum over subscribers), the publisher's send rate and the loss (share of
   the data messages sent that a subscriber did not get, median over subscribers). The table
   shows the median (or ``--stat best``) round by aggregate rate, and ratios against pyzmq sync
   and pyzmq asyncio with the same subscriber count and size, measured in the same run.

Loss is normal: PUB never blocks by default, a subscriber that falls behind loses its own
copies at its HWM (``--hwm``, 1000 by default, both sides) and the others keep theirs. The
delivered rate is then what a subscriber can absorb while the publisher floods it. With
``--mode nodrop`` the publisher sets ``xpub_nodrop`` (libzmq ``ZMQ_XPUB_NODROP``): it waits
for the slowest subscriber instead, nothing is lost, and every subscriber gets the same rate.

All processes share the machine's CPUs (11 processes for 10 subscribers): on a 2-core machine
the aggregate rate is bounded by how much CPU each side gets, for every implementation alike.

Examples::

    python benchmarks/bench_fanout.py --quick                  # smoke test, ~1 min
    python benchmarks/bench_fanout.py --json fanout.json       # the recorded run
    python benchmarks/bench_fanout.py --impl zmtp-asyncio,pyzmq-sync --subscribers 10

See benchmarks/README.md for how to read the output.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from time import perf_counter
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import (
    PIN_CHOICES,
    PIN_HELP,
    BenchError,
    WorkerGroup,
    check_pin,
    control_recv_async,
    control_recv_asyncio,
    environment,
    fmt_rate,
    fmt_ratio,
    log,
    parse_sizes,
    pin_cpu,
    print_profiles,
    profiled_role,
    render_table,
    require,
    size_label,
    summarize,
    write_json,
)

Params = dict[str, Any]
LOCALHOST = "127.0.0.1"

#: First byte of each kind of message (everyone subscribes to b"", so nothing is filtered).
DATA, PROBE, END = b"d", b"p", b"e"
PROBE_MESSAGE = PROBE
PROBE_INTERVAL = 0.002  # seconds between probes while subscribers get ready
END_INTERVAL = 0.001  # seconds between end markers after a round's data
#: pyzmq-asyncio publisher in nodrop mode: pause before re-trying a send that met a full pipe.
NODROP_RETRY = 0.0002
#: A subscriber looks at the clock once every this many data messages during warm-up.
CLOCK_EVERY = 64


def _end_marker(round_no: int) -> bytes:
    return END + round_no.to_bytes(4, "big")


def _payload(size: int) -> bytes:
    return DATA + os.urandom(size - 1)


# =========================================================================== child roles
# Publisher: bind, send ("ready", endpoint), then serve commands:
#   ("probe", {})      send a probe every PROBE_INTERVAL until the next command arrives;
#   ("run", r)         send data for r["warmup"] + r["duration"] s, then end markers every
#                      END_INTERVAL until the next command, which is ("stop",): answer
#                      ("result", {"sent": n, "send_elapsed": s});
#   ("quit",)          close.
# Subscriber: connect, subscribe, wait for a probe, send ("ready", None); then answer every
# ("run", r) with ("result", {...}) (see _sub_round_*); ("quit",) closes.

_SUB_DATA = DATA[0]


def _sub_result(
    size: int, first: bytes, last: bytes, t_first: float, t_end: float, timed: int, total: int
) -> Params:
    if len(first) != size or len(last) != size:
        raise AssertionError(f"expected {size}-byte messages, got {len(first)} / {len(last)}")
    return {"messages": timed, "elapsed": t_end - t_first, "received": total}


async def _sub_round_async(recv: Callable[[], Any], r: Params, size: int) -> Params:
    """One round on the subscriber side (any async API whose ``recv()`` returns bytes)."""
    end = _end_marker(r["round"])
    while True:  # skip probes and earlier rounds' end markers
        msg = await recv()
        if msg[0] == _SUB_DATA:
            break
    first = msg
    warm_until = perf_counter() + r["warmup"]
    total = 1
    while True:  # warm-up: look at the clock every CLOCK_EVERY data messages
        msg = await recv()
        if msg[0] == _SUB_DATA:
            total += 1
            if not total % CLOCK_EVERY and perf_counter() >= warm_until:
                break
        elif msg == end:
            raise AssertionError("the round ended during the subscriber's warm-up")
    t_first = perf_counter()
    timed = 0
    while True:
        msg = await recv()
        if msg[0] == _SUB_DATA:
            timed += 1
            last = msg
        elif msg == end:
            t_end = perf_counter()
            break
    if not timed:
        raise AssertionError("no data message after the warm-up")
    return _sub_result(size, first, last, t_first, t_end, timed, total + timed)


def _sub_round_sync(recv: Callable[[], Any], r: Params, size: int) -> Params:
    """Blocking twin of :func:`_sub_round_async`."""
    end = _end_marker(r["round"])
    while True:
        msg = recv()
        if msg[0] == _SUB_DATA:
            break
    first = msg
    warm_until = perf_counter() + r["warmup"]
    total = 1
    while True:
        msg = recv()
        if msg[0] == _SUB_DATA:
            total += 1
            if not total % CLOCK_EVERY and perf_counter() >= warm_until:
                break
        elif msg == end:
            raise AssertionError("the round ended during the subscriber's warm-up")
    t_first = perf_counter()
    timed = 0
    while True:
        msg = recv()
        if msg[0] == _SUB_DATA:
            timed += 1
            last = msg
        elif msg == end:
            t_end = perf_counter()
            break
    if not timed:
        raise AssertionError("no data message after the warm-up")
    return _sub_result(size, first, last, t_first, t_end, timed, total + timed)


async def _wait_probe_async(recv: Callable[[], Any]) -> None:
    while await recv() != PROBE_MESSAGE:
        pass


async def _pub_data_async(send: Callable[[bytes], Any], payload: bytes, seconds: float) -> Params:
    """Send data for ``seconds``; the clock is read once every 256 messages."""
    start = perf_counter()
    deadline = start + seconds
    sent = 0
    while True:
        for _ in range(256):
            await send(payload)
        sent += 256
        if perf_counter() >= deadline:
            break
    return {"sent": sent, "send_elapsed": perf_counter() - start}


def _pub_data_sync(send: Callable[[bytes], Any], payload: bytes, seconds: float) -> Params:
    start = perf_counter()
    deadline = start + seconds
    sent = 0
    while True:
        for _ in range(256):
            send(payload)
        sent += 256
        if perf_counter() >= deadline:
            break
    return {"sent": sent, "send_elapsed": perf_counter() - start}


# --------------------------------------------------------------------------- zmtp (anyio)


def zmtp_publisher(ctrl: Any, p: Params) -> None:
    import anyio

    anyio.run(_zmtp_publisher, ctrl, p, backend=p["backend"])


async def _zmtp_publisher(ctrl: Any, p: Params) -> None:
    import anyio

    import zmtp

    payload = _payload(p["size"])
    async with zmtp.Socket(
        zmtp.PUB, send_hwm=p["hwm"], recv_hwm=p["hwm"], xpub_nodrop=p["nodrop"]
    ) as sock:
        ctrl.send(("ready", await sock.bind(f"tcp://{LOCALHOST}:*")))
        send = sock.send

        async def repeat_until_command(message: bytes, interval: float) -> None:
            while not ctrl.poll():
                await send(message)
                await anyio.sleep(interval)

        cmd = await control_recv_async(ctrl)
        while cmd[0] != "quit":
            if cmd[0] == "probe":
                await repeat_until_command(PROBE_MESSAGE, PROBE_INTERVAL)
            elif cmd[0] == "run":
                r = cmd[1]
                result = await _pub_data_async(send, payload, r["warmup"] + r["duration"])
                await repeat_until_command(_end_marker(r["round"]), END_INTERVAL)
                stop = await control_recv_async(ctrl)
                if stop[0] != "stop":
                    raise RuntimeError(f"expected ('stop',), got {stop!r}")
                ctrl.send(("result", result))
            else:
                raise RuntimeError(f"unexpected command {cmd!r}")
            cmd = await control_recv_async(ctrl)
        with anyio.move_on_after(5):
            await sock.close(linger=0)


def zmtp_subscriber(ctrl: Any, p: Params) -> None:
    import anyio

    anyio.run(_zmtp_subscriber, ctrl, p, backend=p["backend"])


async def _zmtp_subscriber(ctrl: Any, p: Params) -> None:
    import anyio

    import zmtp

    async with zmtp.Socket(zmtp.SUB, send_hwm=p["hwm"], recv_hwm=p["hwm"]) as sock:
        await sock.connect(p["endpoint"])
        sock.subscribe(b"")
        await _wait_probe_async(sock.recv)
        ctrl.send(("ready", None))
        while True:
            cmd = await control_recv_async(ctrl)
            if cmd[0] != "run":
                break
            ctrl.send(("result", await _sub_round_async(sock.recv, cmd[1], p["size"])))
        with anyio.move_on_after(5):
            await sock.close(linger=0)


# --------------------------------------------------------------------------- pyzmq sync


def pyzmq_publisher(ctrl: Any, p: Params) -> None:
    import zmq

    payload = _payload(p["size"])
    ctx = zmq.Context()
    sock = ctx.socket(zmq.PUB)
    sock.sndhwm = sock.rcvhwm = p["hwm"]
    if p["nodrop"]:
        sock.setsockopt(zmq.XPUB_NODROP, 1)
    try:
        sock.bind(f"tcp://{LOCALHOST}:*")
        ctrl.send(("ready", sock.getsockopt_string(zmq.LAST_ENDPOINT)))
        send = sock.send

        def repeat_until_command(message: bytes, interval: float) -> None:
            while not ctrl.poll(0):
                send(message)
                ctrl.poll(interval)

        cmd = ctrl.recv()
        while cmd[0] != "quit":
            if cmd[0] == "probe":
                repeat_until_command(PROBE_MESSAGE, PROBE_INTERVAL)
            elif cmd[0] == "run":
                r = cmd[1]
                result = _pub_data_sync(send, payload, r["warmup"] + r["duration"])
                repeat_until_command(_end_marker(r["round"]), END_INTERVAL)
                stop = ctrl.recv()
                if stop[0] != "stop":
                    raise RuntimeError(f"expected ('stop',), got {stop!r}")
                ctrl.send(("result", result))
            else:
                raise RuntimeError(f"unexpected command {cmd!r}")
            cmd = ctrl.recv()
    finally:
        sock.close(linger=0)
        ctx.term()


def pyzmq_subscriber(ctrl: Any, p: Params) -> None:
    import zmq

    ctx = zmq.Context()
    sock = ctx.socket(zmq.SUB)
    sock.sndhwm = sock.rcvhwm = p["hwm"]
    try:
        sock.connect(p["endpoint"])
        sock.setsockopt(zmq.SUBSCRIBE, b"")
        recv = sock.recv
        while recv() != PROBE_MESSAGE:
            pass
        ctrl.send(("ready", None))
        while True:
            cmd = ctrl.recv()
            if cmd[0] != "run":
                break
            ctrl.send(("result", _sub_round_sync(recv, cmd[1], p["size"])))
    finally:
        sock.close(linger=0)
        ctx.term()


# --------------------------------------------------------------------------- pyzmq zmq.asyncio


def pyzmq_asyncio_publisher(ctrl: Any, p: Params) -> None:
    import asyncio

    asyncio.run(_pyzmq_asyncio_publisher(ctrl, p))


async def _pyzmq_asyncio_publisher(ctrl: Any, p: Params) -> None:
    import asyncio

    import zmq
    import zmq.asyncio

    payload = _payload(p["size"])
    ctx = zmq.asyncio.Context()
    sock = ctx.socket(zmq.PUB)
    sock.sndhwm = sock.rcvhwm = p["hwm"]
    if p["nodrop"]:
        sock.setsockopt(zmq.XPUB_NODROP, 1)
    try:
        sock.bind(f"tcp://{LOCALHOST}:*")
        ctrl.send(("ready", sock.getsockopt_string(zmq.LAST_ENDPOINT)))
        send = sock.send
        if p["nodrop"]:
            # zmq.asyncio waits for POLLOUT, which a PUB always reports, then retries once and
            # fails with Again when a subscriber's pipe is full under ZMQ_XPUB_NODROP: retry
            # after a short sleep (the publisher is not what limits this implementation).
            async def send(message: bytes) -> None:
                while True:
                    try:
                        await sock.send(message)
                        return
                    except zmq.Again:
                        await asyncio.sleep(NODROP_RETRY)

        async def repeat_until_command(message: bytes, interval: float) -> None:
            while not ctrl.poll():
                await send(message)
                await asyncio.sleep(interval)

        cmd = await control_recv_asyncio(ctrl)
        while cmd[0] != "quit":
            if cmd[0] == "probe":
                await repeat_until_command(PROBE_MESSAGE, PROBE_INTERVAL)
            elif cmd[0] == "run":
                r = cmd[1]
                result = await _pub_data_async(send, payload, r["warmup"] + r["duration"])
                await repeat_until_command(_end_marker(r["round"]), END_INTERVAL)
                stop = await control_recv_asyncio(ctrl)
                if stop[0] != "stop":
                    raise RuntimeError(f"expected ('stop',), got {stop!r}")
                ctrl.send(("result", result))
            else:
                raise RuntimeError(f"unexpected command {cmd!r}")
            cmd = await control_recv_asyncio(ctrl)
    finally:
        sock.close(linger=0)
        ctx.term()


def pyzmq_asyncio_subscriber(ctrl: Any, p: Params) -> None:
    import asyncio

    asyncio.run(_pyzmq_asyncio_subscriber(ctrl, p))


async def _pyzmq_asyncio_subscriber(ctrl: Any, p: Params) -> None:
    import zmq
    import zmq.asyncio

    ctx = zmq.asyncio.Context()
    sock = ctx.socket(zmq.SUB)
    sock.sndhwm = sock.rcvhwm = p["hwm"]
    try:
        sock.connect(p["endpoint"])
        sock.setsockopt(zmq.SUBSCRIBE, b"")
        await _wait_probe_async(sock.recv)
        ctrl.send(("ready", None))
        while True:
            cmd = await control_recv_asyncio(ctrl)
            if cmd[0] != "run":
                break
            ctrl.send(("result", await _sub_round_async(sock.recv, cmd[1], p["size"])))
    finally:
        sock.close(linger=0)
        ctx.term()


# =========================================================================== registry


@dataclass(frozen=True)
class Impl:
    name: str
    publisher: Callable[[Any, Params], None]
    subscriber: Callable[[Any, Params], None]
    requires: tuple[str, ...]
    params: dict[str, Any] = field(default_factory=dict)


IMPLS: dict[str, Impl] = {
    i.name: i
    for i in (
        Impl("zmtp-asyncio", zmtp_publisher, zmtp_subscriber, ("anyio",), {"backend": "asyncio"}),
        Impl("zmtp-trio", zmtp_publisher, zmtp_subscriber, ("anyio", "trio"), {"backend": "trio"}),
        Impl("pyzmq-sync", pyzmq_publisher, pyzmq_subscriber, ("zmq",)),
        Impl("pyzmq-asyncio", pyzmq_asyncio_publisher, pyzmq_asyncio_subscriber, ("zmq",)),
    )
}
REFERENCES = ("pyzmq-sync", "pyzmq-asyncio")

# =========================================================================== harness


@dataclass
class ConfigResult:
    impl: str
    subscribers: int
    size: int
    rounds: list[dict[str, Any]] = field(default_factory=list)
    error: str | None = None
    #: 1-minute load average when the configuration first started (is the machine quiet?).
    loadavg: float | None = field(default_factory=lambda: os.getloadavg()[0])

    def pick(self, stat: str) -> dict[str, Any] | None:
        """The reported round: the median (lower median) or best one by aggregate rate."""
        if not self.rounds:
            return None
        ordered = sorted(self.rounds, key=lambda r: r["aggregate"])
        if stat == "best":
            return ordered[-1]
        return ordered[(len(ordered) - 1) // 2]

    def to_json(self, stat: str) -> dict[str, Any]:
        chosen = self.pick(stat)
        out: dict[str, Any] = {
            "impl": self.impl,
            "subscribers": self.subscribers,
            "size": self.size,
            "stat": stat,
            "reported_round": chosen,
            "error": self.error,
            "loadavg_at_start": self.loadavg,
            "rounds": self.rounds,
        }
        if self.rounds:
            for key in ("aggregate", "per_sub_median", "per_sub_min"):
                out[f"summary_{key}"] = summarize([r[key] for r in self.rounds])
        return out


def _round_stats(subs: list[Params], pub: Params) -> dict[str, Any]:
    rates = [s["messages"] / s["elapsed"] for s in subs]
    sent = pub["sent"]
    losses = [max(0.0, 1.0 - s["received"] / sent) for s in subs]
    return {
        "per_sub_median": statistics.median(rates),
        "per_sub_min": min(rates),
        "per_sub_max": max(rates),
        "aggregate": sum(rates),
        "loss_median": statistics.median(losses),
        "loss_max": max(losses),
        "pub_sent": sent,
        "pub_rate": sent / pub["send_elapsed"],
        "subscribers": subs,
    }


def run_config(
    impl: Impl, n_subs: int, size: int, args: argparse.Namespace, res: ConfigResult
) -> None:
    """Start a publisher and ``n_subs`` subscribers, wait until all are subscribed, then run
    ``args.repeat`` rounds and append them to ``res``."""
    params = {"size": size, "hwm": args.hwm, "nodrop": args.mode == "nodrop", **impl.params}
    round_timeout = args.timeout + args.warmup + args.duration

    def role(name: str, func: Callable[[Any, Params], None], p: Params) -> Params:
        """Params that make ``profiled_role`` run ``func``, under cProfile if asked (the
        first subscriber only: they all do the same)."""
        p = {**p, "role": func}
        if args.profile_dir is not None and name in args.profile_roles:
            path = Path(args.profile_dir) / (
                f"{impl.name}-{n_subs}subs-{size}-{name}-c{args.cycle}.prof"
            )
            path.unlink(missing_ok=True)  # never report a stale profile from an earlier run
            args.profile_files.append(path)
            p["profile_path"] = str(path)
        return p

    with WorkerGroup(timeout=args.timeout) as group:
        pub = group.start(
            f"{impl.name}/pub",
            profiled_role,
            role("publisher", impl.publisher, params),
            cpu=pin_cpu(args.pin, 0),
        )
        _, endpoint = group.expect(pub, "ready")
        subs = [
            group.start(
                f"{impl.name}/sub{i}",
                profiled_role,
                role(
                    "subscriber" if i == 0 else f"subscriber{i}",
                    impl.subscriber,
                    {**params, "endpoint": endpoint, "client_index": i},
                ),
                cpu=pin_cpu(args.pin, 1 + i),
            )
            for i in range(n_subs)
        ]
        pub.send(("probe", {}))
        for s in subs:  # each got a probe: its subscription has reached the publisher
            group.expect(s, "ready")
        for i in range(args.repeat):
            round_no = len(res.rounds) + 1
            spec = {"warmup": args.warmup, "duration": args.duration, "round": round_no}
            start = time.monotonic()
            for s in subs:
                s.send(("run", spec))
            pub.send(("run", spec))
            sub_results = [group.expect(s, "result", round_timeout)[1] for s in subs]
            pub.send(("stop",))
            _, pub_result = group.expect(pub, "result", round_timeout)
            stats = _round_stats(sub_results, pub_result)
            stats["cycle"] = args.cycle
            res.rounds.append(stats)
            per_sub, slowest = fmt_rate(stats["per_sub_median"]), fmt_rate(stats["per_sub_min"])
            aggregate, sent = fmt_rate(stats["aggregate"]), fmt_rate(stats["pub_rate"])
            log(
                f"    round {i + 1}/{args.repeat}: per subscriber {per_sub}msgs/s (slowest "
                f"{slowest}), aggregate {aggregate}msgs/s, publisher sent {sent}msgs/s, "
                f"loss {stats['loss_median'] * 100:.0f}% ({time.monotonic() - start:.1f} s)",
                args.quiet,
            )
        for w in subs:
            w.exit_expected = True
            w.send(("quit",))


def fanout_table(results: list[ConfigResult], stat: str) -> str:
    picked = {(r.impl, r.subscribers, r.size): r.pick(stat) for r in results}
    rows = []
    for r in results:
        rd = picked[(r.impl, r.subscribers, r.size)]
        if rd is None:
            rows.append([r.impl, str(r.subscribers), size_label(r.size), "FAILED", *["-"] * 7])
            continue
        ratios = []
        for ref in REFERENCES:
            ref_rd = picked.get((ref, r.subscribers, r.size))
            if ref_rd is None:
                ratios.append("-")
                continue
            ratios.append(
                f"{fmt_ratio(rd['per_sub_median'] / ref_rd['per_sub_median'])} / "
                f"{fmt_ratio(rd['aggregate'] / ref_rd['aggregate'])}"
            )
        spread = summarize([x["aggregate"] for x in r.rounds])["spread"]
        rows.append(
            [
                r.impl,
                str(r.subscribers),
                size_label(r.size),
                fmt_rate(rd["per_sub_median"]),
                fmt_rate(rd["per_sub_min"]),
                fmt_rate(rd["aggregate"]),
                fmt_rate(rd["pub_rate"]),
                f"{rd['loss_median'] * 100:.0f}%",
                *ratios,
                f"{spread * 100:.0f}% ({len(r.rounds)})" if len(r.rounds) > 1 else "-",
            ]
        )
    return render_table(
        [
            "implementation",
            "subs",
            "size",
            "per sub msgs/s",
            "slowest sub",
            "aggregate msgs/s",
            "pub sent msgs/s",
            "loss",
            "vs pyzmq sync (sub / aggr)",
            "vs pyzmq asyncio (sub / aggr)",
            "spread (rounds)",
        ],
        rows,
    )


class _Stop(Exception):
    """--fail-fast: leave every cycle."""


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="Implementations: " + ", ".join(IMPLS) + ". See benchmarks/README.md.",
    )
    ap.add_argument("--impl", default=",".join(IMPLS), help="comma-separated (default: all four)")
    ap.add_argument(
        "--subscribers", default="1,10", help="comma-separated subscriber counts (default 1,10)"
    )
    ap.add_argument("--sizes", default="64", help="comma-separated message sizes (default 64)")
    ap.add_argument(
        "--duration", type=float, default=2.0, help="timed seconds of data per round (default 2)"
    )
    ap.add_argument(
        "--warmup", type=float, default=0.5, help="warm-up seconds of data per round (default 0.5)"
    )
    ap.add_argument("--repeat", type=int, default=3, help="rounds per configuration (default 3)")
    ap.add_argument(
        "--cycles",
        type=int,
        default=1,
        help="run every configuration this many times, interleaved (fresh processes each "
        "time); the table pools the rounds of all cycles (default 1)",
    )
    ap.add_argument(
        "--stat",
        choices=("median", "best"),
        default="median",
        help="which round to report, by aggregate rate (default median)",
    )
    ap.add_argument(
        "--mode",
        choices=("drop", "nodrop"),
        default="drop",
        help="drop: PUB's default (a slow subscriber loses messages at its HWM); nodrop: "
        "xpub_nodrop / ZMQ_XPUB_NODROP, the publisher waits for the slowest subscriber",
    )
    ap.add_argument("--hwm", type=int, default=1000, help="send/recv HWM everywhere (default 1000)")
    ap.add_argument(
        "--timeout",
        type=float,
        default=60.0,
        help="seconds to wait for any child answer beyond a round's own length",
    )
    ap.add_argument("--quick", action="store_true", help="smoke test: 0.3 s rounds, 1 repeat")
    ap.add_argument("--json", metavar="PATH", help="also write results as JSON")
    ap.add_argument("--pin", choices=PIN_CHOICES, default="none", help=PIN_HELP)
    ap.add_argument(
        "--profile",
        choices=("publisher", "subscriber", "both"),
        help="run the publisher and/or the first subscriber under cProfile (distorts rates!) "
        "and print hot spots",
    )
    ap.add_argument(
        "--profile-dir", default=None, help="where .prof files go (default: a temp directory)"
    )
    ap.add_argument("--profile-top", type=int, default=15, help="rows per profile (by tottime)")
    ap.add_argument("--fail-fast", action="store_true", help="stop at the first failed config")
    ap.add_argument("--quiet", action="store_true", help="no progress on stderr")
    args = ap.parse_args(argv)
    args.profile_roles = (
        ()
        if args.profile is None
        else ("publisher", "subscriber")
        if args.profile == "both"
        else (args.profile,)
    )
    args.profile_files = []
    if args.profile:
        import tempfile

        args.profile_dir = args.profile_dir or tempfile.mkdtemp(prefix="zmtp-bench-prof-")
        if Path(args.profile_dir).exists() and not Path(args.profile_dir).is_dir():
            ap.error(f"--profile-dir {args.profile_dir} exists and is not a directory")
        Path(args.profile_dir).mkdir(parents=True, exist_ok=True)
    else:
        args.profile_dir = None

    if args.quick:
        args.duration, args.warmup, args.repeat = 0.3, 0.1, 1
    if args.repeat < 1 or args.cycles < 1 or args.duration <= 0 or args.warmup < 0:
        ap.error("--repeat and --cycles must be >= 1, --duration > 0, --warmup >= 0")
    pin_error = check_pin(args.pin)
    if pin_error:
        ap.error(pin_error)
    try:
        sizes = parse_sizes(args.sizes)
        counts = [int(n) for n in args.subscribers.split(",") if n.strip()]
    except ValueError as exc:
        ap.error(str(exc))
    if not counts or min(counts) < 1:
        ap.error("--subscribers: positive integers")
    names = [n.strip() for n in args.impl.split(",") if n.strip()]
    unknown = [n for n in names if n not in IMPLS]
    if unknown:
        ap.error(f"unknown implementation(s) {unknown}; choose from {list(IMPLS)}")
    require({n: IMPLS[n].requires for n in names})

    env = environment()
    log(
        f"python {env['python']} on {env['platform']}, {env['cpu_count']} CPUs, "
        f"load {env['loadavg']}; {env['versions']}",
        args.quiet,
    )
    plan = [(IMPLS[n], c, s) for s in sizes for c in counts for n in names]
    results = [ConfigResult(i.name, c, s) for i, c, s in plan]
    started = time.monotonic()
    interrupted = False
    steps = len(plan) * args.cycles
    try:
        step = 0
        for cycle in range(1, args.cycles + 1):
            args.cycle = cycle
            for (impl, n_subs, size), res in zip(plan, results, strict=True):
                step += 1
                cyc = f" (cycle {cycle}/{args.cycles})" if args.cycles > 1 else ""
                log(
                    f"[{step}/{steps}] {impl.name} {n_subs} subscriber(s) {size_label(size)}{cyc}",
                    args.quiet,
                )
                try:
                    run_config(impl, n_subs, size, args, res)
                except BenchError as exc:
                    res.error = res.error or str(exc)
                    log(f"    FAILED: {exc}", False)
                    if args.fail_fast:
                        raise _Stop from None
    except _Stop:
        pass
    except KeyboardInterrupt:
        interrupted = True
        log("interrupted: printing what was measured", False)

    results = [r for r in results if r.rounds or r.error]
    rounds = f"{args.repeat} round(s)" + (
        f" x {args.cycles} interleaved cycles" if args.cycles > 1 else ""
    )
    print(
        f"\nPUB -> SUB fan-out over tcp://{LOCALHOST}, publisher and each subscriber in its own "
        f"process, mode {args.mode}, HWM {args.hwm}: {args.stat} of {rounds} of "
        f"{args.duration:g} s after {args.warmup:g} s warm-up, by aggregate rate. Rates are "
        "delivered msgs/s measured at the subscribers; ratios are this implementation's over "
        "the reference's with the same subscriber count (per-subscriber median / aggregate).\n"
    )
    table = fanout_table(results, args.stat)
    print(table)
    failed = [r for r in results if r.error]
    for r in failed:
        print(f"\nFAILED {r.impl} {r.subscribers} subscriber(s) {size_label(r.size)}:\n{r.error}")
    print(f"\n(total {time.monotonic() - started:.0f} s)")
    if args.profile_dir is not None:
        print_profiles(args.profile_files, Path(args.profile_dir), args.profile_top)
    if args.json:
        write_json(
            args.json,
            {
                "benchmark": "fanout",
                "stat": args.stat,
                "settings": {
                    "mode": args.mode,
                    "subscribers": counts,
                    "sizes": sizes,
                    "duration": args.duration,
                    "warmup": args.warmup,
                    "repeat": args.repeat,
                    "cycles": args.cycles,
                    "hwm": args.hwm,
                    "impls": names,
                    "quick": args.quick,
                    "pin": args.pin,
                    "profiled": args.profile,
                    "probe_interval": PROBE_INTERVAL,
                    "end_interval": END_INTERVAL,
                },
                "environment": env,
                "references": list(REFERENCES),
                "results": [r.to_json(args.stat) for r in results],
                "tables": {"fanout": table},
                "interrupted": interrupted,
            },
        )
        log(f"wrote {args.json}", args.quiet)
    return 130 if interrupted else 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
