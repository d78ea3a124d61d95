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
4. **Who pays the CPU.** Every process reports its own user + system CPU time (all its
   threads: libzmq's I/O thread counts for pyzmq, as the reader/writer tasks do for zmtp): a
   subscriber over its timed window, per message it received in it; the publisher over its
   data phase, per message it sent (one message, however many copies). ``cores`` is the CPU
   of all processes over their windows' wall time: how much of the machine the run used.
   ``CPU µs per delivered copy`` is those cores over the aggregate rate: a fan-out of 64 B
   messages is CPU-bound (its publisher never sleeps), so the rate is the cores the scheduler
   gave the run over this figure, and on a shared machine this figure compares the stacks
   where the rates compare the shares they got (docs/performance.md, "What paces the fan-out
   publisher").

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
import resource
import statistics
import sys
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from time import perf_counter
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import (
    LOCALHOST,
    TCP_ANY,
    BenchParser,
    Message,
    Params,
    Role,
    RoleFunc,
    Session,
    WorkerGroup,
    anyio_role,
    asyncio_role,
    control_recv_async,
    control_recv_asyncio,
    fmt_rate,
    fmt_ratio,
    log,
    pyzmq_bind,
    pyzmq_socket,
    render_table,
    require,
    serve_rounds_async,
    serve_rounds_sync,
    size_label,
    start_peers,
    summarize,
    zmtp_socket,
)

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
#                      ("result", {"sent", "send_elapsed", "send_cpu_s", "send_sys_s"});
#   ("quit",)          close.
# Subscriber: connect, subscribe, wait for a probe, send ("ready", None); then answer every
# ("run", r) with ("result", {...}) (see _sub_round_*); ("quit",) closes.

_SUB_DATA = DATA[0]


def cpu_seconds() -> float:
    """User + system CPU time of this whole process so far (every thread)."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def sys_seconds() -> float:
    """The system (kernel) part of :func:`cpu_seconds`: on loopback tcp a ``send`` also
    delivers into the receiver's socket, so this is where the copies' kernel work shows."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_stime


def _sub_result(
    size: int,
    first: bytes,
    last: bytes,
    window: tuple[float, float, float, float, float, float],
    timed: int,
    total: int,
) -> Params:
    """A subscriber's answer; ``window`` is (t_first, t_end, cpu_first, cpu_end, sys_first,
    sys_end)."""
    if len(first) != size or len(last) != size:
        raise AssertionError(f"expected {size}-byte messages, got {len(first)} / {len(last)}")
    t_first, t_end, cpu_first, cpu_end, sys_first, sys_end = window
    return {
        "messages": timed,
        "elapsed": t_end - t_first,
        "received": total,
        "cpu_s": cpu_end - cpu_first,
        "sys_s": sys_end - sys_first,
    }


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
    cpu_first, sys_first = cpu_seconds(), sys_seconds()
    timed = 0
    while True:
        msg = await recv()
        if msg[0] == _SUB_DATA:
            timed += 1
            last = msg
        elif msg == end:
            t_end = perf_counter()
            cpu_end, sys_end = cpu_seconds(), sys_seconds()
            break
    if not timed:
        raise AssertionError("no data message after the warm-up")
    window = (t_first, t_end, cpu_first, cpu_end, sys_first, sys_end)
    return _sub_result(size, first, last, window, timed, total + timed)


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
    cpu_first, sys_first = cpu_seconds(), sys_seconds()
    timed = 0
    while True:
        msg = recv()
        if msg[0] == _SUB_DATA:
            timed += 1
            last = msg
        elif msg == end:
            t_end = perf_counter()
            cpu_end, sys_end = cpu_seconds(), sys_seconds()
            break
    if not timed:
        raise AssertionError("no data message after the warm-up")
    window = (t_first, t_end, cpu_first, cpu_end, sys_first, sys_end)
    return _sub_result(size, first, last, window, timed, total + timed)


async def _wait_probe_async(recv: Callable[[], Any]) -> None:
    while await recv() != PROBE_MESSAGE:
        pass


def _send_phase(sent: int, start: float, cpu0: float, sys0: float) -> Params:
    """The publisher's figures for a data phase that began at ``start`` (perf_counter) with
    the process's CPU at ``cpu0`` (of it system ``sys0``) and has sent ``sent`` messages."""
    return {
        "sent": sent,
        "send_elapsed": perf_counter() - start,
        "send_cpu_s": cpu_seconds() - cpu0,
        "send_sys_s": sys_seconds() - sys0,
    }


async def _pub_data_async(send: Callable[[bytes], Any], payload: bytes, seconds: float) -> Params:
    """Send data for ``seconds``; the clock is read once every 256 messages."""
    cpu0, sys0 = cpu_seconds(), sys_seconds()
    start = perf_counter()
    deadline = start + seconds
    sent = 0
    while True:
        for _ in range(256):
            await send(payload)
        sent += 256
        if perf_counter() >= deadline:
            break
    return _send_phase(sent, start, cpu0, sys0)


def _pub_data_sync(send: Callable[[bytes], Any], payload: bytes, seconds: float) -> Params:
    cpu0, sys0 = cpu_seconds(), sys_seconds()
    start = perf_counter()
    deadline = start + seconds
    sent = 0
    while True:
        for _ in range(256):
            send(payload)
        sent += 256
        if perf_counter() >= deadline:
            break
    return _send_phase(sent, start, cpu0, sys0)


async def _publish_async(
    ctrl: Any,
    send: Callable[[bytes], Awaitable[Any]],
    payload: bytes,
    recv_control: Callable[[Any], Awaitable[Message]],
    sleep: Callable[[float], Awaitable[Any]],
) -> None:
    """The publisher's command loop (see above) for any async API: ``send`` a message,
    ``recv_control`` the next command, ``sleep`` between probes and end markers."""

    async def repeat_until_command(message: bytes, interval: float) -> None:
        while not ctrl.poll():
            await send(message)
            await sleep(interval)

    cmd = await recv_control(ctrl)
    while cmd[0] != "quit":
        if cmd[0] == "probe":
            await repeat_until_command(PROBE_MESSAGE, PROBE_INTERVAL)
        elif cmd[0] == "run":
            r = cmd[1]
            result = await _pub_data_async(send, payload, r["warmup"] + r["duration"])
            await repeat_until_command(_end_marker(r["round"]), END_INTERVAL)
            stop = await recv_control(ctrl)
            if stop[0] != "stop":
                raise RuntimeError(f"expected ('stop',), got {stop!r}")
            ctrl.send(("result", result))
        else:
            raise RuntimeError(f"unexpected command {cmd!r}")
        cmd = await recv_control(ctrl)


def _publish_sync(ctrl: Any, send: Callable[[bytes], Any], payload: bytes) -> None:
    """Blocking twin of :func:`_publish_async`."""

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


# --------------------------------------------------------------------------- zmtp (anyio)


@anyio_role
async def zmtp_publisher(ctrl: Any, p: Params) -> None:
    import anyio

    async with zmtp_socket("PUB", p["hwm"], xpub_nodrop=p["nodrop"]) as sock:
        ctrl.send(("ready", await sock.bind(TCP_ANY)))
        await _publish_async(ctrl, sock.send, _payload(p["size"]), control_recv_async, anyio.sleep)


@anyio_role
async def zmtp_subscriber(ctrl: Any, p: Params) -> None:
    async with zmtp_socket("SUB", p["hwm"]) as sock:
        await sock.connect(p["endpoint"])
        sock.subscribe(b"")
        await _wait_probe_async(sock.recv)
        ctrl.send(("ready", None))
        await serve_rounds_async(ctrl, lambda r: _sub_round_async(sock.recv, r, p["size"]))


# --------------------------------------------------------------------------- pyzmq sync


def pyzmq_publisher(ctrl: Any, p: Params) -> None:
    import zmq

    payload = _payload(p["size"])
    with pyzmq_socket("PUB", p["hwm"]) as sock:
        if p["nodrop"]:
            sock.setsockopt(zmq.XPUB_NODROP, 1)
        ctrl.send(("ready", pyzmq_bind(sock)))
        _publish_sync(ctrl, sock.send, payload)


def pyzmq_subscriber(ctrl: Any, p: Params) -> None:
    import zmq

    with pyzmq_socket("SUB", p["hwm"]) as sock:
        sock.connect(p["endpoint"])
        sock.setsockopt(zmq.SUBSCRIBE, b"")
        recv = sock.recv
        while recv() != PROBE_MESSAGE:
            pass
        ctrl.send(("ready", None))
        serve_rounds_sync(ctrl, lambda r: _sub_round_sync(recv, r, p["size"]))


# --------------------------------------------------------------------------- pyzmq zmq.asyncio


@asyncio_role
async def pyzmq_asyncio_publisher(ctrl: Any, p: Params) -> None:
    import asyncio

    import zmq

    payload = _payload(p["size"])
    with pyzmq_socket("PUB", p["hwm"], asyncio=True) as sock:
        if p["nodrop"]:
            sock.setsockopt(zmq.XPUB_NODROP, 1)
        ctrl.send(("ready", pyzmq_bind(sock)))
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

        await _publish_async(ctrl, send, payload, control_recv_asyncio, asyncio.sleep)


@asyncio_role
async def pyzmq_asyncio_subscriber(ctrl: Any, p: Params) -> None:
    import zmq

    with pyzmq_socket("SUB", p["hwm"], asyncio=True) as sock:
        sock.connect(p["endpoint"])
        sock.setsockopt(zmq.SUBSCRIBE, b"")
        await _wait_probe_async(sock.recv)
        ctrl.send(("ready", None))
        await serve_rounds_async(
            ctrl, lambda r: _sub_round_async(sock.recv, r, p["size"]), control_recv_asyncio
        )


# =========================================================================== registry


@dataclass(frozen=True)
class Impl:
    name: str
    publisher: RoleFunc
    subscriber: RoleFunc
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
            for key in ("aggregate", "per_sub_median", "per_sub_min", "pub_cpu_us", "sub_cpu_us"):
                out[f"summary_{key}"] = summarize([r[key] for r in self.rounds])
        return out


def _cpu_stats(subs: list[Params], pub: Params) -> dict[str, float]:
    """Who pays the CPU in a round: the publisher's µs per message sent, the median
    subscriber's µs per message received (each also its system part alone, ``*_sys_us``),
    and the cores each side and the whole run kept busy (CPU seconds over the same window's
    wall time)."""
    pub_cores = pub["send_cpu_s"] / pub["send_elapsed"]
    sub_cores = sum(s["cpu_s"] / s["elapsed"] for s in subs)
    return {
        "pub_cpu_us": pub["send_cpu_s"] / pub["sent"] * 1e6,
        "sub_cpu_us": statistics.median(s["cpu_s"] / s["messages"] * 1e6 for s in subs),
        "pub_sys_us": pub["send_sys_s"] / pub["sent"] * 1e6,
        "sub_sys_us": statistics.median(s["sys_s"] / s["messages"] * 1e6 for s in subs),
        "pub_cores": pub_cores,
        "sub_cores": sub_cores,
        "cores": pub_cores + sub_cores,
    }


def _round_stats(subs: list[Params], pub: Params) -> dict[str, Any]:
    rates = [s["messages"] / s["elapsed"] for s in subs]
    sent = pub["sent"]
    losses = [max(0.0, 1.0 - s["received"] / sent) for s in subs]
    cpu = _cpu_stats(subs, pub)
    return {
        **cpu,
        # The CPU the whole run spent per copy a subscriber got (cores over the aggregate
        # rate): the rate a stack would reach on a given number of cores, whatever share of
        # the machine the scheduler gave its processes in this run (docs/performance.md,
        # "What paces the fan-out publisher").
        "cpu_per_copy_us": cpu["cores"] / sum(rates) * 1e6,
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
    prof = f"{impl.name}-{n_subs}subs-{size}"

    with WorkerGroup(timeout=args.timeout) as group:
        pub, subs = start_peers(
            group,
            args,
            Role(
                f"{impl.name}/pub",
                impl.publisher,
                params,
                "publisher",
                f"{prof}-publisher-c{args.cycle}.prof",
            ),
            [  # --profile subscriber: the first one only, they all do the same
                Role(
                    f"{impl.name}/sub{i}",
                    impl.subscriber,
                    {**params, "client_index": i},
                    "subscriber" if i == 0 else "",
                    f"{prof}-subscriber-c{args.cycle}.prof",
                )
                for i in range(n_subs)
            ],
            wait_ready=False,
        )
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
                f"loss {stats['loss_median'] * 100:.0f}%, CPU µs/msg publisher "
                f"{stats['pub_cpu_us']:.2f} subscriber {stats['sub_cpu_us']:.2f}, cores "
                f"{stats['cores']:.2f} ({time.monotonic() - start:.1f} s)",
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
            rows.append([r.impl, str(r.subscribers), size_label(r.size), "FAILED", *["-"] * 11])
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
                f"{rd['pub_cpu_us']:.2f} ({rd['pub_sys_us']:.2f})",
                f"{rd['sub_cpu_us']:.2f} ({rd['sub_sys_us']:.2f})",
                f"{rd['pub_cores']:.2f} + {rd['sub_cores']:.2f}",
                f"{rd['cpu_per_copy_us']:.2f}",
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
            "pub CPU µs/msg (sys)",
            "sub CPU µs/msg (sys)",
            "cores pub + subs",
            "CPU µs per delivered copy",
            "vs pyzmq sync (sub / aggr)",
            "vs pyzmq asyncio (sub / aggr)",
            "spread (rounds)",
        ],
        rows,
    )


def main(argv: list[str] | None = None) -> int:
    ap = BenchParser(
        __doc__, "Implementations: " + ", ".join(IMPLS) + ". See benchmarks/README.md."
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
    ap.add_harness_options(
        ("publisher", "subscriber"),
        "run the publisher and/or the first subscriber under cProfile (distorts rates!) "
        "and print hot spots",
    )
    args = ap.parse_bench_args(argv)

    if args.quick:
        args.duration, args.warmup, args.repeat = 0.3, 0.1, 1
    if args.repeat < 1 or args.cycles < 1 or args.duration <= 0 or args.warmup < 0:
        ap.error("--repeat and --cycles must be >= 1, --duration > 0, --warmup >= 0")
    sizes = ap.sizes(args.sizes)
    try:
        counts = [int(n) for n in args.subscribers.split(",") if n.strip()]
    except ValueError as exc:
        ap.error(str(exc))
    if not counts or min(counts) < 1:
        ap.error("--subscribers: positive integers")
    names = ap.names(args.impl, IMPLS, "implementation")
    require({n: IMPLS[n].requires for n in names})

    session = Session(args)
    plan = [(IMPLS[n], c, s) for s in sizes for c in counts for n in names]
    results = [ConfigResult(i.name, c, s) for i, c, s in plan]
    session.run(
        [
            (
                f"{impl.name} {n_subs} subscriber(s) {size_label(size)}",
                res,
                partial(run_config, impl, n_subs, size, args, res),
            )
            for (impl, n_subs, size), res in zip(plan, results, strict=True)
        ],
        cycles=args.cycles,
    )

    results = [r for r in results if r.rounds or r.error]
    rounds = f"{args.repeat} round(s)" + (
        f" x {args.cycles} interleaved cycles" if args.cycles > 1 else ""
    )
    print(
        f"\nPUB -> SUB fan-out over tcp://{LOCALHOST}, publisher and each subscriber in its own "
        f"process, mode {args.mode}, HWM {args.hwm}: {args.stat} of {rounds} of "
        f"{args.duration:g} s after {args.warmup:g} s warm-up, by aggregate rate. Rates are "
        "delivered msgs/s measured at the subscribers; ratios are this implementation's over "
        "the reference's with the same subscriber count (per-subscriber median / aggregate). "
        "CPU is user + system per process: the publisher's per message sent, the median "
        "subscriber's per message received, the system part in brackets; cores = CPU "
        "seconds / wall seconds, publisher + all subscribers; CPU per delivered copy = those "
        "cores over the aggregate rate.\n"
    )
    table = fanout_table(results, args.stat)
    print(table)
    return session.finish(
        [
            (f"{r.impl} {r.subscribers} subscriber(s) {size_label(r.size)}", r.error)
            for r in results
            if r.error
        ],
        "fanout",
        {
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
        {"fanout": table},
        references=list(REFERENCES),
        results=[r.to_json(args.stat) for r in results],
    )


if __name__ == "__main__":
    sys.exit(main())
