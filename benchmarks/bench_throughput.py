"""PUSH -> PULL throughput: zmtp (asyncio, trio) against pyzmq (sync, zmq.asyncio).

Sender and receiver run in separate *spawned* processes and talk over tcp on 127.0.0.1. The
receiver binds (random port, passed back to the harness over a pipe), the sender connects.
Every implementation uses the same high-water marks (``--hwm``, libzmq's default 1000).

Method, per (implementation, size):

1. Start both processes, connect, then *calibrate*: pilot rounds of growing length until one
   takes >= 20 % of ``--duration``; its rate sets the message count ``N`` so that a timed round
   lasts about ``--duration`` seconds (1.5 s by default), plus ``--warmup`` x that many warm-up
   messages sent first in the same stream.
2. Run ``--repeat`` timed rounds over the same connection. A round's rate is measured at the
   RECEIVER, from the arrival of the first to the arrival of the last of its N timed messages:
   ``(N - 1) / (t_last - t_first)``.
3. Report the median (default) or best (``--stat best``) round; ratios vs pyzmq sync and
   pyzmq asyncio at the same size are what we publish, since absolute numbers depend on the
   machine.

``--inproc`` adds two in-process/ceiling references: zmtp inproc PUSH -> PULL at 64 B in ONE
process (asyncio and trio; target >= 1 M msgs/s), and raw anyio TCP stream throughput between
two processes in 64 KiB writes and in 1 MiB writes (``--raw-chunk``): a ceiling for zmtp's
large-message rate. zmtp's writer coalesces queued messages into writes of up to 1 MiB, so the
1 MiB row is its real ceiling; on asyncio, per-write overhead makes 64 KiB writes much slower.

Examples::

    python benchmarks/bench_throughput.py                       # full run, ~2 min
    python benchmarks/bench_throughput.py --quick --inproc      # smoke test, ~15 s
    python benchmarks/bench_throughput.py --inproc --json out.json
    python benchmarks/bench_throughput.py --impl zmtp-asyncio --sizes 64 --profile receiver

See benchmarks/README.md for how to read the output.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import sys
from collections.abc import Callable
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
    Params,
    Role,
    RoleFunc,
    Session,
    Worker,
    WorkerGroup,
    anyio_role,
    asyncio_role,
    control_recv_asyncio,
    fmt_rate,
    fmt_ratio,
    log,
    pyzmq_bind,
    pyzmq_socket,
    raw_accept,
    raw_connect,
    render_table,
    require,
    serve_rounds_async,
    serve_rounds_sync,
    size_label,
    start_peers,
    summarize,
    zmtp_socket,
)
from load import sched_counters, sched_delta

#: Raw anyio reads use zmtp's default read size, so the ceiling is comparable.
RAW_READ_SIZE = 256 * 1024

# =========================================================================== child roles
# Each role is ``func(ctrl, params)`` run in a spawned child (see _common.WorkerGroup):
# set up, send ("ready", info), then answer ("run", {"warmup": W, "count": N}) with
# ("result", {...}) until ("quit",). Receivers time; senders report their own send time.


def cpu_seconds() -> float:
    """User + system CPU time of this whole process so far (every thread: libzmq's I/O
    thread counts for pyzmq, as the reader/writer tasks do for zmtp)."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def sched_fields(side: str, before: dict[str, float]) -> Params:
    """A side's scheduler counters over the round (benchmarks/load.py, sched_counters):
    ``<side>_voluntary`` / ``_involuntary`` context switches, ``_run_s`` on a CPU and
    ``_wait_s`` runnable but waiting for one."""
    return {f"{side}_{key}": value for key, value in sched_delta(before).items()}


def _check_size(first: Any, last: Any, size: int) -> None:
    if len(first) != size or len(last) != size:
        raise AssertionError(f"expected {size}-byte messages, got {len(first)} / {len(last)}")


async def timed_recv_async(recv: Callable[[], Any], warmup: int, count: int, size: int) -> Params:
    cpu0 = cpu_seconds()
    sched0 = sched_counters()
    for _ in range(warmup):
        await recv()
    first = await recv()
    t_first = perf_counter()
    for _ in range(count - 2):
        await recv()
    last = await recv()
    t_last = perf_counter()
    _check_size(first, last, size)
    return {
        "elapsed": t_last - t_first,
        "messages": count - 1,
        "recv_cpu_s": cpu_seconds() - cpu0,
        "recv_total": warmup + count,
        **sched_fields("recv", sched0),
    }


def timed_recv_sync(recv: Callable[[], Any], warmup: int, count: int, size: int) -> Params:
    cpu0 = cpu_seconds()
    sched0 = sched_counters()
    for _ in range(warmup):
        recv()
    first = recv()
    t_first = perf_counter()
    for _ in range(count - 2):
        recv()
    last = recv()
    t_last = perf_counter()
    _check_size(first, last, size)
    return {
        "elapsed": t_last - t_first,
        "messages": count - 1,
        "recv_cpu_s": cpu_seconds() - cpu0,
        "recv_total": warmup + count,
        **sched_fields("recv", sched0),
    }


async def send_n_async(send: Callable[[bytes], Any], payload: bytes, total: int) -> Params:
    cpu0 = cpu_seconds()
    sched0 = sched_counters()
    start = perf_counter()
    for _ in range(total):
        await send(payload)
    return {
        "send_elapsed": perf_counter() - start,
        "send_cpu_s": cpu_seconds() - cpu0,
        **sched_fields("send", sched0),
    }


def send_n_sync(send: Callable[[bytes], Any], payload: bytes, total: int) -> Params:
    cpu0 = cpu_seconds()
    sched0 = sched_counters()
    start = perf_counter()
    for _ in range(total):
        send(payload)
    return {
        "send_elapsed": perf_counter() - start,
        "send_cpu_s": cpu_seconds() - cpu0,
        **sched_fields("send", sched0),
    }


# --------------------------------------------------------------------------- zmtp (anyio)


@anyio_role
async def zmtp_receiver(ctrl: Any, p: Params) -> None:
    async with zmtp_socket("PULL", p["hwm"]) as sock:
        ctrl.send(("ready", await sock.bind(TCP_ANY)))
        await serve_rounds_async(
            ctrl, lambda r: timed_recv_async(sock.recv, r["warmup"], r["count"], p["size"])
        )


@anyio_role
async def zmtp_sender(ctrl: Any, p: Params) -> None:
    payload = os.urandom(p["size"])
    async with zmtp_socket("PUSH", p["hwm"], linger=2.0) as sock:
        await sock.connect(p["endpoint"])
        ctrl.send(("ready", None))
        await serve_rounds_async(
            ctrl, lambda r: send_n_async(sock.send, payload, r["warmup"] + r["count"])
        )


# --------------------------------------------------------------------------- pyzmq sync


def pyzmq_receiver(ctrl: Any, p: Params) -> None:
    with pyzmq_socket("PULL", p["hwm"]) as sock:
        ctrl.send(("ready", pyzmq_bind(sock)))
        serve_rounds_sync(
            ctrl, lambda r: timed_recv_sync(sock.recv, r["warmup"], r["count"], p["size"])
        )


def pyzmq_sender(ctrl: Any, p: Params) -> None:
    payload = os.urandom(p["size"])
    with pyzmq_socket("PUSH", p["hwm"], linger=2000) as sock:
        sock.connect(p["endpoint"])
        ctrl.send(("ready", None))
        serve_rounds_sync(ctrl, lambda r: send_n_sync(sock.send, payload, r["warmup"] + r["count"]))


# --------------------------------------------------------------------------- pyzmq zmq.asyncio


@asyncio_role
async def pyzmq_asyncio_receiver(ctrl: Any, p: Params) -> None:
    with pyzmq_socket("PULL", p["hwm"], asyncio=True) as sock:
        ctrl.send(("ready", pyzmq_bind(sock)))
        await serve_rounds_async(
            ctrl,
            lambda r: timed_recv_async(sock.recv, r["warmup"], r["count"], p["size"]),
            control_recv_asyncio,
        )


@asyncio_role
async def pyzmq_asyncio_sender(ctrl: Any, p: Params) -> None:
    payload = os.urandom(p["size"])
    with pyzmq_socket("PUSH", p["hwm"], asyncio=True, linger=2000) as sock:
        sock.connect(p["endpoint"])
        ctrl.send(("ready", None))
        await serve_rounds_async(
            ctrl,
            lambda r: send_n_async(sock.send, payload, r["warmup"] + r["count"]),
            control_recv_asyncio,
        )


# --------------------------------------------------------------------------- raw anyio TCP


@anyio_role
async def raw_receiver(ctrl: Any, p: Params) -> None:
    chunk = p["size"]
    async with raw_accept(ctrl) as stream:
        receive = stream.receive

        async def run(r: Params) -> Params:
            start_at = (r["warmup"] + 1) * chunk  # bytes up to the end of the 1st timed chunk
            total = (r["warmup"] + r["count"]) * chunk
            received = 0
            while received < start_at:
                received += len(await receive(RAW_READ_SIZE))
            t_first = perf_counter()
            base = received
            while received < total:
                received += len(await receive(RAW_READ_SIZE))
            t_last = perf_counter()
            if received != total:
                raise AssertionError(f"raw stream: received {received} bytes, expected {total}")
            return {"elapsed": t_last - t_first, "messages": (total - base) / chunk}

        await serve_rounds_async(ctrl, run)


@anyio_role
async def raw_sender(ctrl: Any, p: Params) -> None:
    payload = os.urandom(p["size"])
    async with await raw_connect(p["endpoint"]) as stream:
        ctrl.send(("ready", None))
        await serve_rounds_async(
            ctrl, lambda r: send_n_async(stream.send, payload, r["warmup"] + r["count"])
        )


# --------------------------------------------------------------------------- zmtp inproc


@anyio_role
async def zmtp_inproc(ctrl: Any, p: Params) -> None:
    """Sender task and receiver in ONE process (and one event loop)."""
    import anyio

    payload = os.urandom(p["size"])
    async with zmtp_socket("PULL", p["hwm"]) as pull, zmtp_socket("PUSH", p["hwm"]) as push:
        endpoint = await pull.bind(f"inproc://bench-{os.getpid()}")
        await push.connect(endpoint)
        ctrl.send(("ready", endpoint))

        async def run(r: Params) -> Params:
            async with anyio.create_task_group() as tg:
                tg.start_soon(send_n_async, push.send, payload, r["warmup"] + r["count"])
                result = await timed_recv_async(pull.recv, r["warmup"], r["count"], p["size"])
            return result

        await serve_rounds_async(ctrl, run)


# --------------------------------------------------------------------------- pyzmq inproc


def pyzmq_inproc(ctrl: Any, p: Params) -> None:
    """pyzmq PUSH -> PULL over inproc in ONE process: the receiver in the main thread, the
    sender in a second thread (the sync API's way to have both sides in one process; the
    two share the GIL, as zmtp's two tasks share one event loop). One context, as inproc
    requires."""
    import threading

    import zmq

    payload = os.urandom(p["size"])
    ctx = zmq.Context()
    pull, push = ctx.socket(zmq.PULL), ctx.socket(zmq.PUSH)
    for sock in (pull, push):
        sock.sndhwm = sock.rcvhwm = p["hwm"]
    try:
        endpoint = f"inproc://bench-{os.getpid()}"
        pull.bind(endpoint)
        push.connect(endpoint)
        ctrl.send(("ready", endpoint))

        def run(r: Params) -> Params:
            sent: Params = {}
            thread = threading.Thread(
                target=lambda: sent.update(
                    send_n_sync(push.send, payload, r["warmup"] + r["count"])
                )
            )
            thread.start()
            result = timed_recv_sync(pull.recv, r["warmup"], r["count"], p["size"])
            thread.join()
            return {**sent, **result}

        serve_rounds_sync(ctrl, run)
    finally:
        pull.close(linger=0)
        push.close(linger=0)
        ctx.term()


@asyncio_role
async def pyzmq_asyncio_inproc(ctrl: Any, p: Params) -> None:
    """zmq.asyncio PUSH -> PULL over inproc: sender task and receiver in one event loop, the
    shape of zmtp's inproc case."""
    import asyncio

    import zmq
    import zmq.asyncio

    payload = os.urandom(p["size"])
    ctx = zmq.asyncio.Context()
    pull, push = ctx.socket(zmq.PULL), ctx.socket(zmq.PUSH)
    for sock in (pull, push):
        sock.sndhwm = sock.rcvhwm = p["hwm"]
    try:
        endpoint = f"inproc://bench-{os.getpid()}"
        pull.bind(endpoint)
        push.connect(endpoint)
        ctrl.send(("ready", endpoint))

        async def run(r: Params) -> Params:
            sender = asyncio.ensure_future(
                send_n_async(push.send, payload, r["warmup"] + r["count"])
            )
            result = await timed_recv_async(pull.recv, r["warmup"], r["count"], p["size"])
            return {**(await sender), **result}

        await serve_rounds_async(ctrl, run, control_recv_asyncio)
    finally:
        pull.close(linger=0)
        push.close(linger=0)
        ctx.term()


# =========================================================================== registry


@dataclass(frozen=True)
class Impl:
    """One implementation: a receiver role and a sender role (or one ``single`` role that
    does both in one process)."""

    name: str
    receiver: RoleFunc | None
    sender: RoleFunc | None
    requires: tuple[str, ...]
    params: dict[str, Any] = field(default_factory=dict)
    single: RoleFunc | None = None


TCP_IMPLS: dict[str, Impl] = {
    i.name: i
    for i in (
        Impl("zmtp-asyncio", zmtp_receiver, zmtp_sender, ("anyio",), {"backend": "asyncio"}),
        Impl("zmtp-trio", zmtp_receiver, zmtp_sender, ("anyio", "trio"), {"backend": "trio"}),
        Impl("pyzmq-sync", pyzmq_receiver, pyzmq_sender, ("zmq",)),
        Impl("pyzmq-asyncio", pyzmq_asyncio_receiver, pyzmq_asyncio_sender, ("zmq",)),
    )
}
INPROC_IMPLS: dict[str, Impl] = {
    i.name: i
    for i in (
        Impl("zmtp-inproc-asyncio", None, None, ("anyio",), {"backend": "asyncio"}, zmtp_inproc),
        Impl("zmtp-inproc-trio", None, None, ("anyio", "trio"), {"backend": "trio"}, zmtp_inproc),
        Impl("pyzmq-inproc-sync", None, None, ("zmq",), {}, pyzmq_inproc),
        Impl("pyzmq-inproc-asyncio", None, None, ("zmq",), {}, pyzmq_asyncio_inproc),
    )
}
INPROC_REFERENCE = "pyzmq-inproc-sync"
RAW_IMPLS: dict[str, Impl] = {
    i.name: i
    for i in (
        Impl("anyio-tcp-asyncio", raw_receiver, raw_sender, ("anyio",), {"backend": "asyncio"}),
        Impl("anyio-tcp-trio", raw_receiver, raw_sender, ("anyio", "trio"), {"backend": "trio"}),
    )
}
REFERENCES = ("pyzmq-sync", "pyzmq-asyncio")
INPROC_TARGET = 1_000_000.0  # msgs/s

# =========================================================================== harness


@dataclass
class ConfigResult:
    section: str
    impl: str
    size: int
    runs: list[dict[str, Any]] = field(default_factory=list)
    calibration: list[dict[str, Any]] = field(default_factory=list)
    error: str | None = None
    #: 1-minute load average when the configuration started (is the machine quiet?).
    loadavg: float | None = field(default_factory=lambda: os.getloadavg()[0])

    def rate(self, stat: str) -> float | None:
        if not self.runs:
            return None
        return summarize([r["msgs_per_s"] for r in self.runs])[stat]

    def cpu_us(self) -> tuple[float | None, float | None]:
        """Median CPU cost per message (user + sys µs, whole round including warm-up) of the
        receiving and of the sending process; in one process (inproc) both are the
        receiver's figure and the sender's is None."""

        def med(key: str) -> float | None:
            values = [
                r[key] / r["recv_total"] * 1e6 for r in self.runs if key in r and "recv_total" in r
            ]
            return statistics.median(values) if values else None

        send = None if self.section == "inproc" else med("send_cpu_s")
        return med("recv_cpu_s"), send

    def sched(self) -> dict[str, dict[str, float]]:
        """Per side (``recv``, ``send``): the median over rounds, per message of the whole
        round (warm-up included), of the context switches (``voluntary``, ``involuntary``),
        of the ``migrations`` between CPUs and of the µs run on a CPU (``run_us``) and waited
        runnable (``wait_us``)."""
        out: dict[str, dict[str, float]] = {}
        for side in ("recv", "send"):
            figures: dict[str, float] = {}
            for key, scale in (
                ("voluntary", 1),
                ("involuntary", 1),
                ("migrations", 1),
                ("run_s", 1e6),
                ("wait_s", 1e6),
            ):
                values = [
                    r[f"{side}_{key}"] / r["recv_total"] * scale
                    for r in self.runs
                    if f"{side}_{key}" in r and "recv_total" in r
                ]
                if values:
                    figures[key.replace("_s", "_us")] = statistics.median(values)
            if figures:
                out[side] = figures
        return out

    def to_json(self, stat: str) -> dict[str, Any]:
        rate = self.rate(stat)
        out: dict[str, Any] = {
            "section": self.section,
            "impl": self.impl,
            "size": self.size,
            "stat": stat,
            "msgs_per_s": rate,
            "mb_per_s": None if rate is None else rate * self.size / 1e6,
            "error": self.error,
            "cpu_us_per_msg": dict(zip(("receiver", "sender"), self.cpu_us(), strict=True)),
            "sched_per_msg": self.sched(),
            "loadavg_at_start": self.loadavg,
            "runs": self.runs,
            "calibration": self.calibration,
        }
        if self.runs:
            out["summary_msgs_per_s"] = summarize([r["msgs_per_s"] for r in self.runs])
        return out


def run_round(
    group: WorkerGroup,
    workers: list[Worker],
    timer: Worker,
    warmup: int,
    count: int,
    timeout: float,
) -> dict[str, Any]:
    """One round: tell every worker to run, collect the timer's measurement."""
    for w in workers:
        w.send(("run", {"warmup": warmup, "count": count}))
    result: dict[str, Any] = {}
    for w in workers:
        _, data = group.expect(w, "result", timeout)
        if w is timer:
            result.update(data)
        else:
            result.update({k: v for k, v in data.items() if k not in result})
    result["warmup"], result["count"] = warmup, count
    result["msgs_per_s"] = result["messages"] / result["elapsed"]
    return result


def measure(
    impl: Impl, section: str, size: int, args: argparse.Namespace, res: ConfigResult
) -> None:
    """Calibrate, then run ``args.repeat`` timed rounds into ``res`` (left empty on failure)."""
    res.loadavg = os.getloadavg()[0]
    base = {"size": size, "hwm": args.hwm, **impl.params}
    round_timeout = max(args.timeout, 20 * args.duration)
    calibration: list[dict[str, Any]] = []
    runs: list[dict[str, Any]] = []

    def role(label: str, func: RoleFunc, name: str) -> Role:
        return Role(label, func, base, name, f"{section}-{impl.name}-{size}-{name}.prof")

    with WorkerGroup(timeout=args.timeout) as group:
        if impl.single is not None:
            timer, _ = start_peers(group, args, role(impl.name, impl.single, "receiver"))
            workers = [timer]
        else:
            assert impl.receiver is not None and impl.sender is not None
            timer, senders = start_peers(
                group,
                args,
                role(f"{impl.name}/receiver", impl.receiver, "receiver"),
                [role(f"{impl.name}/sender", impl.sender, "sender")],
            )
            workers = [timer, *senders]

        # Calibration: grow a pilot round until it lasts >= 20 % of the target duration.
        target = max(0.05, 0.2 * args.duration)
        count = max(200, min(2000, (16 << 20) // size))
        for _ in range(8):
            pilot = run_round(group, workers, timer, max(50, count // 5), count, round_timeout)
            calibration.append(pilot)
            if pilot["elapsed"] >= target:
                break
            count = int(count * min(50.0, max(2.0, 1.5 * target / max(pilot["elapsed"], 1e-6))))
        rate = pilot["msgs_per_s"]
        count = max(
            getattr(args, "min_count", 1000), min(args.max_count, int(rate * args.duration))
        )
        warmup = max(100, int(count * args.warmup))
        for i in range(args.repeat):
            run = run_round(group, workers, timer, warmup, count, round_timeout)
            runs.append(run)
            log(
                f"    run {i + 1}/{args.repeat}: {fmt_rate(run['msgs_per_s'])}msgs/s "
                f"({run['count']:,} msgs in {run['elapsed']:.2f} s)",
                args.quiet,
            )
    res.calibration += calibration  # --cycles: every cycle's rounds count
    res.runs += runs


# =========================================================================== output


def tcp_table(results: list[ConfigResult], stat: str) -> str:
    refs: dict[tuple[str, int], float | None] = {
        (r.impl, r.size): r.rate(stat) for r in results if r.impl in REFERENCES
    }
    rows = []
    for r in results:
        rate = r.rate(stat)
        if rate is None:
            rows.append([r.impl, size_label(r.size), "FAILED", "-", "-", "-", "-"])
            continue
        ratios = []
        for ref in REFERENCES:
            ref_rate = refs.get((ref, r.size))
            ratios.append(fmt_ratio(rate / ref_rate) if ref_rate else "-")
        spread = summarize([x["msgs_per_s"] for x in r.runs])["spread"]
        rows.append(
            [
                r.impl,
                size_label(r.size),
                fmt_rate(rate),
                f"{rate * r.size / 1e6:,.1f}",
                *ratios,
                f"{spread * 100:.0f}%" if len(r.runs) > 1 else "-",
                *(fmt_cpu(v) for v in r.cpu_us()),
            ]
        )
    return render_table(
        [
            "implementation",
            "size",
            "msgs/s",
            "MB/s",
            "vs pyzmq sync",
            "vs pyzmq asyncio",
            "spread",
            "CPU µs/msg recv",
            "CPU µs/msg send",
        ],
        rows,
    )


def sched_table(results: list[ConfigResult]) -> str:
    """``--sched``: each side's scheduler counters (see ConfigResult.sched); context switches
    per 1000 messages, migrations between CPUs per second, and the CPUs the side used at the median
    rate (run µs per message x messages per µs): what share of the machine it got."""
    rows = []
    for r in results:
        sched = r.sched()
        for side in ("recv", "send"):
            fig = sched.get(side)
            if not fig:
                continue
            run, wait = fig.get("run_us", 0.0), fig.get("wait_us", 0.0)
            rate = r.rate("median") or 0.0
            rows.append(
                [
                    r.impl,
                    size_label(r.size),
                    side,
                    f"{fig.get('voluntary', 0.0) * 1000:.1f}",
                    f"{fig.get('involuntary', 0.0) * 1000:.1f}",
                    f"{fig.get('migrations', 0.0) * rate:.1f}",
                    f"{run:.2f}",
                    f"{wait:.2f}",
                    f"{wait / (run + wait) * 100:.0f}%" if run + wait else "-",
                    f"{run * rate / 1e6:.2f}",
                ]
            )
    return render_table(
        [
            "implementation",
            "size",
            "side",
            "vol. cs /1000 msgs",
            "invol. cs /1000 msgs",
            "CPU migrations /s",
            "run µs/msg",
            "runnable-wait µs/msg",
            "waiting",
            "CPUs used",
        ],
        rows,
    )


def fmt_cpu(us: float | None) -> str:
    return "-" if us is None else f"{us:.2f}"


def inproc_table(results: list[ConfigResult], stat: str) -> str:
    ref = next((r.rate(stat) for r in results if r.impl == INPROC_REFERENCE), None)
    rows = []
    for r in results:
        rate = r.rate(stat)
        if rate is None:
            rows.append([r.impl, size_label(r.size), "FAILED", "-", "-", "-", "-", "-"])
            continue
        verdict = "met" if rate >= INPROC_TARGET else "BELOW"
        spread = summarize([x["msgs_per_s"] for x in r.runs])["spread"]
        rows.append(
            [
                r.impl,
                size_label(r.size),
                fmt_rate(rate),
                f"{rate * r.size / 1e6:,.1f}",
                fmt_ratio(rate / ref) if ref else "-",
                f"{rate / INPROC_TARGET * 100:.0f}% ({verdict})",
                f"{spread * 100:.0f}%" if len(r.runs) > 1 else "-",
                fmt_cpu(r.cpu_us()[0]),
            ]
        )
    return render_table(
        [
            "implementation",
            "size",
            "msgs/s",
            "MB/s",
            f"vs {INPROC_REFERENCE}",
            "vs target 1 M/s",
            "spread",
            "CPU µs/msg (process)",
        ],
        rows,
    )


def raw_table(raw: list[ConfigResult], tcp: list[ConfigResult], stat: str) -> str:
    """Raw anyio TCP ceilings, and zmtp's MB/s at its largest measured tcp size (same
    backend) as a fraction of each."""
    ok_sizes = [t.size for t in tcp if t.impl.startswith("zmtp-") and t.runs]
    zsize = max(ok_sizes) if ok_sizes else None
    rows = []
    for r in raw:
        rate = r.rate(stat)
        if rate is None:
            rows.append([r.impl, f"{size_label(r.size)} writes", "FAILED", "-", "-"])
            continue
        backend = r.impl.rsplit("-", 1)[1]
        zmtp = next((t for t in tcp if t.impl == f"zmtp-{backend}" and t.size == zsize), None)
        zrate = zmtp.rate(stat) if zmtp is not None else None
        frac = f"{zrate * zmtp.size / (rate * r.size):.2f}x" if zmtp and zrate else "-"
        rows.append(
            [
                r.impl,
                f"{size_label(r.size)} writes",
                f"{rate * r.size / 1e6:,.1f}",
                fmt_rate(rate),
                frac,
            ]
        )
    zlabel = f"zmtp-<backend> {size_label(zsize)} MB/s / ceiling" if zsize else "zmtp / ceiling"
    return render_table(["ceiling", "chunk", "MB/s", "chunks/s", zlabel], rows)


# =========================================================================== main


def main(argv: list[str] | None = None) -> int:
    ap = BenchParser(
        __doc__, "Implementations: " + ", ".join(TCP_IMPLS) + ". See benchmarks/README.md."
    )
    ap.add_argument(
        "--impl",
        default=",".join(TCP_IMPLS),
        help="comma-separated tcp implementations (default: all four)",
    )
    ap.add_argument(
        "--sizes",
        default="64,1k,64k",
        help="comma-separated message sizes, e.g. 64,1k,64k (default)",
    )
    ap.add_argument(
        "--duration", type=float, default=1.5, help="target seconds per timed round (default 1.5)"
    )
    ap.add_argument("--repeat", type=int, default=3, help="timed rounds per configuration")
    ap.add_argument(
        "--cycles",
        type=int,
        default=1,
        help="run the whole plan this many times in turn, the rounds of every cycle pooled: "
        "implementations interleaved, so that a busy spell of a loaded machine hits each of "
        "them (default 1)",
    )
    ap.add_argument(
        "--stat",
        choices=("median", "best"),
        default="median",
        help="which round to report (default median)",
    )
    ap.add_argument(
        "--warmup",
        type=float,
        default=0.1,
        help="warm-up messages per round as a fraction of N (default 0.1)",
    )
    ap.add_argument(
        "--hwm",
        type=int,
        default=1000,
        help="send/recv HWM for every implementation (default 1000, libzmq's)",
    )
    ap.add_argument("--max-count", type=int, default=20_000_000, help="cap on N per round")
    ap.add_argument(
        "--timeout",
        type=float,
        default=60.0,
        help="seconds to wait for any child answer before giving up on a config",
    )
    ap.add_argument(
        "--inproc",
        action="store_true",
        help="also run zmtp inproc (one process) and the raw anyio TCP ceiling",
    )
    ap.add_argument("--inproc-size", default="64", help="message size for --inproc (default 64)")
    ap.add_argument(
        "--raw-chunk",
        default="64k,1m",
        help="write sizes for the raw anyio ceiling (default 64k,1m: 64 KiB writes, and 1 MiB "
        "like zmtp's coalesced write batches)",
    )
    ap.add_argument("--no-tcp", action="store_true", help="skip the tcp PUSH/PULL table")
    ap.add_argument(
        "--sched",
        action="store_true",
        help="also print each side's context switches and run / runnable-wait time per message "
        "(always in the JSON)",
    )
    ap.add_argument("--quick", action="store_true", help="smoke test: --duration 0.25 --repeat 1")
    ap.add_harness_options(
        ("receiver", "sender"), "run that role under cProfile (distorts rates!) and print hot spots"
    )
    args = ap.parse_bench_args(argv)

    if args.quick:
        args.duration, args.repeat = 0.25, 1
    if args.repeat < 1 or args.duration <= 0 or args.cycles < 1:
        ap.error("--repeat and --cycles must be >= 1 and --duration > 0")
    sizes = ap.sizes(args.sizes)
    inproc_size = ap.sizes(args.inproc_size)[0]
    raw_chunks = ap.sizes(args.raw_chunk)
    names = ap.names(args.impl, TCP_IMPLS, "implementation")

    plan: list[tuple[str, Impl, int]] = []
    if not args.no_tcp:
        plan += [("tcp", TCP_IMPLS[n], s) for s in sizes for n in names]
    if args.inproc:
        plan += [("inproc", i, inproc_size) for i in INPROC_IMPLS.values()]
        plan += [("raw_tcp", i, c) for c in raw_chunks for i in RAW_IMPLS.values()]
    if not plan:
        ap.error("nothing to run")
    require({impl.name: impl.requires for _, impl, _ in plan})

    session = Session(args)
    configs = [ConfigResult(section, impl.name, size) for section, impl, size in plan]
    session.run(
        [
            (
                f"{section} {impl.name} {size_label(size)}",
                res,
                partial(measure, impl, section, size, args, res),
            )
            for (section, impl, size), res in zip(plan, configs, strict=True)
        ],
        cycles=args.cycles,
    )
    results = {
        section: [r for r in configs if r.section == section and (r.runs or r.error)]
        for section in ("tcp", "inproc", "raw_tcp")
    }

    stat = args.stat
    tables: dict[str, str] = {}
    print(
        f"\nzmtp throughput: {stat} of {args.repeat * args.cycles} round(s) of "
        f"~{args.duration:g} s{f' ({args.cycles} cycles)' if args.cycles > 1 else ''}, "
        f"measured at the receiver; HWM {args.hwm}; sender and receiver in separate "
        f"processes over tcp://{LOCALHOST}. MB = 10^6 bytes of payload."
    )
    if results["tcp"]:
        print(
            "\nPUSH -> PULL over tcp (ratios are this implementation's msgs/s over the "
            "reference's at the same size)\n"
        )
        tables["tcp"] = tcp_table(results["tcp"], stat)
        print(tables["tcp"])
        if args.sched:
            print("\nScheduler counters per side (medians over rounds, per message)\n")
            tables["sched"] = sched_table(results["tcp"])
            print(tables["sched"])
    if results["inproc"]:
        print("\ninproc PUSH -> PULL, sender and receiver in ONE process (zmtp beside pyzmq)\n")
        tables["inproc"] = inproc_table(results["inproc"], stat)
        print(tables["inproc"])
    if results["raw_tcp"]:
        print(
            "\nCeiling: raw anyio TCP byte stream between two processes "
            f"(reads of {RAW_READ_SIZE // 1024} KiB)\n"
        )
        tables["raw_tcp"] = raw_table(results["raw_tcp"], results["tcp"], stat)
        print(tables["raw_tcp"])
    return session.finish(
        [
            (f"{r.section} {r.impl} {size_label(r.size)}", r.error)
            for sec in results.values()
            for r in sec
            if r.error
        ],
        "throughput",
        {
            "sizes": sizes,
            "duration": args.duration,
            "repeat": args.repeat,
            "cycles": args.cycles,
            "warmup_fraction": args.warmup,
            "hwm": args.hwm,
            "inproc_size": inproc_size,
            "raw_chunks": raw_chunks,
            "raw_read_size": RAW_READ_SIZE,
            "impls": names,
            "quick": args.quick,
            "profiled": args.profile,
            "pin": args.pin,
            "background_load": args.background_load,
        },
        tables,
        references=list(REFERENCES),
        inproc_target_msgs_per_s=INPROC_TARGET,
        results={k: [r.to_json(stat) for r in v] for k, v in results.items()},
    )


if __name__ == "__main__":
    sys.exit(main())
