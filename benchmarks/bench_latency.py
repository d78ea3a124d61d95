"""Round-trip latency (ping-pong) between two processes over tcp on 127.0.0.1.

Cases (``--case``, default all):

* ``anyio-tcp-asyncio`` / ``anyio-tcp-trio``: a raw anyio TCP byte stream echo, the floor any
  anyio-based stack pays (two event-loop wake-ups and four syscalls per round trip);
* ``zmtp-pair-asyncio`` / ``zmtp-pair-trio``: zmtp PAIR <-> PAIR;
* ``pyzmq-pair-sync`` / ``pyzmq-pair-asyncio``: pyzmq PAIR <-> PAIR (blocking and zmq.asyncio);
* ``zmtp-reqrep-asyncio`` / ``zmtp-reqrep-trio``: zmtp REQ (client) <-> REP (server), compared
  with the raw anyio echo on the same event loop (target: p50 within 1.5x of it) and with
* ``pyzmq-reqrep-sync`` / ``pyzmq-reqrep-asyncio``: pyzmq REQ <-> REP.

Ratio columns: each case against pyzmq sync and pyzmq asyncio *of the same pattern* (PAIR or
REQ/REP) and, for zmtp, against the raw anyio floor on the same backend.

The server (echo side) binds and runs in one process, the client connects from another, sends
one message, waits for the echo, and records the round-trip time with ``perf_counter_ns``. Each
round warms up for ``--warmup`` seconds, then collects samples for ``--duration`` seconds (at
most ``--max-samples``); p50/p99 of a round are nearest-rank percentiles. With ``--repeat`` > 1
the table shows the median (or ``--stat best``: lowest) of the rounds' percentiles.
``--cycles N`` runs the whole case list N times in turn and pools the rounds, so that a
busy spell on a shared machine does not land on one case only.

Adding a case (REQ/REP, PUB/SUB fan-out...): write a server role and a client role (child
functions ``role(ctrl, params)``; the client helpers :func:`client_rounds_async` /
:func:`client_rounds_sync` do the timing) and append a :class:`Case` to ``CASES``. A case may
have several clients (``clients=N``; each gets ``params["client_index"]``) and a server that
takes part in rounds (``server_in_rounds=True``), which is what fan-out needs: every result
carrying ``"samples"`` is pooled. See benchmarks/README.md.

Usage: ``python benchmarks/bench_latency.py [--quick] [--case ...] [--sizes 64,1k] [--json out]``
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from array import array
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from time import perf_counter, perf_counter_ns
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import (
    LOCALHOST,
    TCP_ANY,
    BenchError,
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
    fmt_ratio,
    fmt_us,
    log,
    percentile,
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

# =========================================================================== client helpers
# A client role connects, sends ("ready", None), then for every ("run", r) it calls
# ``client_rounds_*`` with a round-trip function and answers ("result", {"samples": bytes}).
# r = {"warmup": seconds, "duration": seconds, "max_samples": int}.


def _samples_result(samples: array[int]) -> dict[str, Any]:
    return {"samples": samples.tobytes(), "n": len(samples)}


async def client_rounds_async(
    ctrl: Any,
    roundtrip: Callable[[], Awaitable[None]],
    recv_control: Callable[[Any], Awaitable[Message]],
) -> None:
    """Serve rounds until "quit": warm up, then time ``await roundtrip()`` calls."""

    async def run(r: Params) -> Params:
        end = perf_counter() + r["warmup"]
        while perf_counter() < end:
            await roundtrip()
        samples = array("q")
        append = samples.append
        max_samples = r["max_samples"]
        end_ns = perf_counter_ns() + int(r["duration"] * 1e9)
        while True:
            t0 = perf_counter_ns()
            await roundtrip()
            t1 = perf_counter_ns()
            append(t1 - t0)
            if t1 >= end_ns or len(samples) >= max_samples:
                break
        return _samples_result(samples)

    await serve_rounds_async(ctrl, run, recv_control)


def client_rounds_sync(ctrl: Any, roundtrip: Callable[[], None]) -> None:
    """Blocking twin of :func:`client_rounds_async`."""

    def run(r: Params) -> Params:
        end = perf_counter() + r["warmup"]
        while perf_counter() < end:
            roundtrip()
        samples = array("q")
        append = samples.append
        max_samples = r["max_samples"]
        end_ns = perf_counter_ns() + int(r["duration"] * 1e9)
        while True:
            t0 = perf_counter_ns()
            roundtrip()
            t1 = perf_counter_ns()
            append(t1 - t0)
            if t1 >= end_ns or len(samples) >= max_samples:
                break
        return _samples_result(samples)

    serve_rounds_sync(ctrl, run)


def _check_echo(reply: Any, size: int) -> None:
    if len(reply) != size:
        raise AssertionError(f"echo of {len(reply)} bytes, expected {size}")


async def _serve_until_quit(ctrl: Any, serve: Callable[[], Awaitable[None]]) -> None:
    """Run ``serve()`` (an echo loop) until the harness says quit or the loop ends."""
    import anyio

    async with anyio.create_task_group() as tg:

        async def watch() -> None:
            await control_recv_async(ctrl)
            tg.cancel_scope.cancel()

        tg.start_soon(watch)
        await serve()
        tg.cancel_scope.cancel()


# =========================================================================== raw anyio TCP


@anyio_role
async def raw_server(ctrl: Any, p: Params) -> None:
    import anyio

    size = p["size"]
    async with raw_accept(ctrl) as stream:
        receive, send = stream.receive, stream.send

        async def echo() -> None:
            buf = b""
            while True:
                try:
                    data = await receive(65536)
                except (anyio.EndOfStream, anyio.BrokenResourceError):
                    return
                buf = buf + data if buf else data
                while len(buf) >= size:  # echo whole messages only
                    await send(buf[:size])
                    buf = buf[size:]

        await _serve_until_quit(ctrl, echo)


@anyio_role
async def raw_client(ctrl: Any, p: Params) -> None:
    size = p["size"]
    payload = os.urandom(size)
    async with await raw_connect(p["endpoint"]) as stream:
        receive, send = stream.receive, stream.send

        async def roundtrip() -> None:
            await send(payload)
            got = len(await receive(65536))
            while got < size:
                got += len(await receive(65536))
            if got != size:
                raise AssertionError(f"echo of {got} bytes, expected {size}")

        ctrl.send(("ready", None))
        await client_rounds_async(ctrl, roundtrip, control_recv_async)


# =========================================================================== zmtp PAIR, REQ/REP
# The echo roles take their socket types from ``params["types"]`` = (server, client):
# ("PAIR", "PAIR") by default, ("REP", "REQ") for request-reply. The echo loop is the same
# recv-then-send for both; REQ/REP add the envelope (an empty delimiter frame) and the
# strict send/recv alternation checks on every call.

_PAIR = ("PAIR", "PAIR")


@anyio_role
async def zmtp_echo_server(ctrl: Any, p: Params) -> None:
    async with zmtp_socket(p.get("types", _PAIR)[0], p["hwm"]) as sock:
        ctrl.send(("ready", await sock.bind(TCP_ANY)))

        async def echo() -> None:
            recv, send = sock.recv, sock.send
            while True:
                await send(await recv())

        await _serve_until_quit(ctrl, echo)


@anyio_role
async def zmtp_echo_client(ctrl: Any, p: Params) -> None:
    size = p["size"]
    payload = os.urandom(size)
    async with zmtp_socket(p.get("types", _PAIR)[1], p["hwm"]) as sock:
        await sock.connect(p["endpoint"])
        recv, send = sock.recv, sock.send

        async def roundtrip() -> None:
            await send(payload)
            _check_echo(await recv(), size)

        await roundtrip()  # the connection is up before we report ready
        ctrl.send(("ready", None))
        await client_rounds_async(ctrl, roundtrip, control_recv_async)


# =========================================================================== pyzmq PAIR, REQ/REP
# Same ``params["types"]`` convention as the zmtp roles (names of zmq socket-type constants).


def pyzmq_echo_server(ctrl: Any, p: Params) -> None:
    import zmq

    with pyzmq_socket(p.get("types", _PAIR)[0], p["hwm"]) as sock:
        sock.rcvtimeo = 200  # only to notice "quit"; costs nothing while messages flow
        ctrl.send(("ready", pyzmq_bind(sock)))
        recv, send = sock.recv, sock.send
        while True:
            try:
                send(recv())
            except zmq.Again:
                if ctrl.poll():
                    break


def pyzmq_echo_client(ctrl: Any, p: Params) -> None:
    size = p["size"]
    payload = os.urandom(size)
    with pyzmq_socket(p.get("types", _PAIR)[1], p["hwm"]) as sock:
        sock.connect(p["endpoint"])
        recv, send = sock.recv, sock.send

        def roundtrip() -> None:
            send(payload)
            _check_echo(recv(), size)

        roundtrip()
        ctrl.send(("ready", None))
        client_rounds_sync(ctrl, roundtrip)


@asyncio_role
async def pyzmq_asyncio_echo_server(ctrl: Any, p: Params) -> None:
    import asyncio

    with pyzmq_socket(p.get("types", _PAIR)[0], p["hwm"], asyncio=True) as sock:
        ctrl.send(("ready", pyzmq_bind(sock)))

        async def echo() -> None:
            recv, send = sock.recv, sock.send
            while True:
                await send(await recv())

        echo_task = asyncio.ensure_future(echo())
        quit_task = asyncio.ensure_future(control_recv_asyncio(ctrl))
        done, _ = await asyncio.wait({echo_task, quit_task}, return_when=asyncio.FIRST_COMPLETED)
        echo_task.cancel()
        for task in done:
            if task is echo_task and task.exception() is not None:
                raise task.exception()  # type: ignore[misc]


@asyncio_role
async def pyzmq_asyncio_echo_client(ctrl: Any, p: Params) -> None:
    size = p["size"]
    payload = os.urandom(size)
    with pyzmq_socket(p.get("types", _PAIR)[1], p["hwm"], asyncio=True) as sock:
        sock.connect(p["endpoint"])
        recv, send = sock.recv, sock.send

        async def roundtrip() -> None:
            await send(payload)
            _check_echo(await recv(), size)

        await roundtrip()
        ctrl.send(("ready", None))
        await client_rounds_async(ctrl, roundtrip, control_recv_asyncio)


# =========================================================================== registry


@dataclass(frozen=True)
class Case:
    """One latency case: a server role (binds; sends ("ready", endpoint)) and ``clients``
    client roles (get ``params["endpoint"]``; send ("ready", None); answer rounds)."""

    name: str
    server: RoleFunc
    client: RoleFunc
    requires: tuple[str, ...]
    params: dict[str, Any] = field(default_factory=dict)
    #: Reference for the "vs floor" column (a raw-stream case on the same event loop).
    floor: str | None = None
    #: Target for p50 / floor p50 (shown as "met"/"ABOVE" in the floor column).
    floor_target: float | None = None
    #: References for the "vs pyzmq sync" / "vs pyzmq asyncio" columns: the same pattern
    #: through libzmq, measured in the same run.
    ref_sync: str | None = "pyzmq-pair-sync"
    ref_asyncio: str | None = "pyzmq-pair-asyncio"
    clients: int = 1
    #: The server also gets ("run", r) each round and answers ("result", {...}).
    server_in_rounds: bool = False
    note: str = ""


_REQREP = {"types": ("REP", "REQ")}
_REQREP_REFS: dict[str, Any] = {
    "ref_sync": "pyzmq-reqrep-sync",
    "ref_asyncio": "pyzmq-reqrep-asyncio",
}
#: Issue requirement: zmtp REQ/REP p50 within 1.5x of raw anyio ping-pong on the same loop.
REQREP_FLOOR_TARGET = 1.5

CASES: list[Case] = [
    Case(
        "anyio-tcp-asyncio",
        raw_server,
        raw_client,
        ("anyio",),
        {"backend": "asyncio"},
        note="floor",
    ),
    Case(
        "anyio-tcp-trio",
        raw_server,
        raw_client,
        ("anyio", "trio"),
        {"backend": "trio"},
        note="floor",
    ),
    Case(
        "zmtp-pair-asyncio",
        zmtp_echo_server,
        zmtp_echo_client,
        ("anyio",),
        {"backend": "asyncio"},
        floor="anyio-tcp-asyncio",
    ),
    Case(
        "zmtp-pair-trio",
        zmtp_echo_server,
        zmtp_echo_client,
        ("anyio", "trio"),
        {"backend": "trio"},
        floor="anyio-tcp-trio",
    ),
    Case("pyzmq-pair-sync", pyzmq_echo_server, pyzmq_echo_client, ("zmq",)),
    Case("pyzmq-pair-asyncio", pyzmq_asyncio_echo_server, pyzmq_asyncio_echo_client, ("zmq",)),
    Case(
        "zmtp-reqrep-asyncio",
        zmtp_echo_server,
        zmtp_echo_client,
        ("anyio",),
        {"backend": "asyncio", **_REQREP},
        floor="anyio-tcp-asyncio",
        floor_target=REQREP_FLOOR_TARGET,
        **_REQREP_REFS,
    ),
    Case(
        "zmtp-reqrep-trio",
        zmtp_echo_server,
        zmtp_echo_client,
        ("anyio", "trio"),
        {"backend": "trio", **_REQREP},
        floor="anyio-tcp-trio",
        floor_target=REQREP_FLOOR_TARGET,
        **_REQREP_REFS,
    ),
    Case(
        "pyzmq-reqrep-sync",
        pyzmq_echo_server,
        pyzmq_echo_client,
        ("zmq",),
        _REQREP,
        **_REQREP_REFS,
    ),
    Case(
        "pyzmq-reqrep-asyncio",
        pyzmq_asyncio_echo_server,
        pyzmq_asyncio_echo_client,
        ("zmq",),
        _REQREP,
        **_REQREP_REFS,
    ),
]
CASE_BY_NAME = {c.name: c for c in CASES}

# =========================================================================== harness


@dataclass
class CaseResult:
    case: str
    size: int
    rounds: list[dict[str, Any]] = field(default_factory=list)
    error: str | None = None
    #: 1-minute load average when the case started (is the machine quiet?).
    loadavg: float | None = field(default_factory=lambda: os.getloadavg()[0])

    def stat(self, key: str, stat: str) -> float | None:
        if not self.rounds:
            return None
        return summarize([r[key] for r in self.rounds], higher_is_better=False)[stat]

    def to_json(self, stat: str) -> dict[str, Any]:
        return {
            "case": self.case,
            "size": self.size,
            "stat": stat,
            **{f"{k}_ns": self.stat(k, stat) for k in ("p50", "p90", "p99", "p999", "min")},
            "error": self.error,
            "loadavg_at_start": self.loadavg,
            "rounds": self.rounds,
        }


#: The percentiles kept per round for a latency-percentile curve (bench_curves.py plots them).
CURVE_PERCENTILES = (1, 5, 10, 25, 50, 75, 90, 95, 99, 99.5, 99.9)


def _round_stats(samples: list[int]) -> dict[str, Any]:
    samples.sort()
    n = len(samples)
    busy = sum(samples) / 1e9  # seconds spent inside round trips
    return {
        "curve": {str(q): percentile(samples, q) for q in CURVE_PERCENTILES},
        "n": n,
        "min": float(samples[0]),
        "p50": percentile(samples, 50),
        "p90": percentile(samples, 90),
        "p99": percentile(samples, 99),
        "p999": percentile(samples, 99.9),
        "max": float(samples[-1]),
        "mean": sum(samples) / n,
        "round_trips_per_s": n / busy if busy > 0 else None,
    }


def run_case(
    case: Case, size: int, args: argparse.Namespace, res: CaseResult | None = None
) -> CaseResult:
    """Run ``args.repeat`` rounds of ``case`` in fresh processes; append them to ``res``
    (a new result by default; ``--cycles`` passes the one of the earlier cycles)."""
    if res is None:
        res = CaseResult(case.name, size)
    params = {"size": size, "hwm": args.hwm, **case.params}
    round_timeout = args.timeout + args.warmup + args.duration

    def role(name: str, func: RoleFunc, p: Params, profile_as: str) -> Role:
        prof = f"{case.name}-{size}-{name}-c{args.cycle}.prof"
        return Role(f"{case.name}/{name}", func, p, profile_as, prof)

    with WorkerGroup(timeout=args.timeout) as group:
        server, clients = start_peers(
            group,
            args,
            role("server", case.server, params, "server"),
            [
                role(f"client{i}", case.client, {**params, "client_index": i}, "client")
                for i in range(case.clients)
            ],
        )
        in_round = clients + ([server] if case.server_in_rounds else [])
        spec = {"warmup": args.warmup, "duration": args.duration, "max_samples": args.max_samples}
        for i in range(args.repeat):
            start = time.monotonic()
            for w in in_round:
                w.send(("run", spec))
            pooled = array("q")
            for w in in_round:
                _, data = group.expect(w, "result", round_timeout)
                if "samples" in data:
                    pooled.frombytes(data["samples"])
            if not pooled:
                raise BenchError(f"{case.name}: no samples in round {i + 1}")
            stats = _round_stats(pooled.tolist())
            stats["cycle"] = args.cycle
            res.rounds.append(stats)
            log(
                f"    round {i + 1}/{args.repeat}: p50 {fmt_us(stats['p50'])} us, "
                f"p99 {fmt_us(stats['p99'])} us, {stats['n']:,} samples "
                f"({time.monotonic() - start:.1f} s)",
                args.quiet,
            )
        # Clients first, so that the server sees its peer go away after the quit.
        for w in clients:
            w.exit_expected = True
            w.send(("quit",))
    return res


def _ratio_cell(value: float | None, target: float | None = None) -> str:
    if value is None:
        return "-"
    if target is None:
        return fmt_ratio(value)
    verdict = "met" if value <= target else "ABOVE"
    return f"{fmt_ratio(value)} ({verdict} {target:g}x)"


def latency_table(results: list[CaseResult], stat: str) -> str:
    by_key = {(r.case, r.size): r for r in results}

    def p50_of(name: str | None, size: int) -> float | None:
        other = by_key.get((name, size)) if name else None
        return other.stat("p50", stat) if other is not None else None

    rows = []
    for r in results:
        p50 = r.stat("p50", stat)
        if p50 is None:
            rows.append([r.case, size_label(r.size), "FAILED", *["-"] * 7])
            continue
        case = CASE_BY_NAME.get(r.case)
        ref_sync = p50_of(case.ref_sync if case else None, r.size)
        ref_asyncio = p50_of(case.ref_asyncio if case else None, r.size)
        floor_p50 = p50_of(case.floor if case else None, r.size)
        rows.append(
            [
                r.case,
                size_label(r.size),
                fmt_us(p50),
                fmt_us(r.stat("p99", stat)),
                fmt_us(r.stat("min", stat)),
                f"{len(r.rounds)}",
                f"{sum(x['n'] for x in r.rounds):,}",
                _ratio_cell(p50 / ref_sync if ref_sync else None),
                _ratio_cell(p50 / ref_asyncio if ref_asyncio else None),
                _ratio_cell(
                    p50 / floor_p50 if floor_p50 else None, case.floor_target if case else None
                ),
            ]
        )
    return render_table(
        [
            "case",
            "size",
            "p50 us",
            "p99 us",
            "min us",
            "rounds",
            "samples",
            "p50 vs pyzmq sync",
            "p50 vs pyzmq asyncio",
            "p50 vs anyio floor",
        ],
        rows,
    )


def main(argv: list[str] | None = None) -> int:
    names = [c.name for c in CASES]
    ap = BenchParser(__doc__, "Cases: " + ", ".join(names) + ". See benchmarks/README.md.")
    ap.add_argument("--case", default=",".join(names), help="comma-separated cases (default all)")
    ap.add_argument("--sizes", default="64", help="comma-separated message sizes (default 64)")
    ap.add_argument("--duration", type=float, default=2.0, help="seconds of samples per round")
    ap.add_argument("--warmup", type=float, default=0.3, help="warm-up seconds per round")
    ap.add_argument("--repeat", type=int, default=3, help="rounds per case")
    ap.add_argument(
        "--cycles",
        type=int,
        default=1,
        help="run the whole case list this many times, interleaved (fresh processes each "
        "time); the table pools every cycle's rounds, so slow drift in the machine's load "
        "hits every case alike (default 1)",
    )
    ap.add_argument(
        "--stat",
        choices=("median", "best"),
        default="median",
        help="how rounds combine: median of their percentiles, or the lowest",
    )
    ap.add_argument("--max-samples", type=int, default=1_000_000, help="cap per round")
    ap.add_argument("--hwm", type=int, default=1000, help="HWM for every implementation")
    ap.add_argument(
        "--timeout",
        type=float,
        default=30.0,
        help="seconds to wait for a child beyond the round's own length",
    )
    ap.add_argument("--quick", action="store_true", help="smoke test: 0.3 s rounds, 1 repeat")
    ap.add_harness_options(
        ("server", "client"),
        "run that role under cProfile (inflates the latencies!) and print hot spots",
        unit="case",
    )
    args = ap.parse_bench_args(argv)
    if args.quick:
        args.duration, args.warmup, args.repeat = 0.3, 0.1, 1
    if args.repeat < 1 or args.duration <= 0 or args.cycles < 1:
        ap.error("--repeat and --cycles must be >= 1 and --duration > 0")
    sizes = ap.sizes(args.sizes)
    chosen = ap.names(args.case, names, "case")
    cases = [c for c in CASES if c.name in chosen]
    require({c.name: c.requires for c in cases})

    session = Session(args)
    plan = [(c, s) for s in sizes for c in cases]
    results = [CaseResult(c.name, s) for c, s in plan]
    session.run(
        [
            (f"{case.name} {size_label(size)}", res, partial(run_case, case, size, args, res))
            for (case, size), res in zip(plan, results, strict=True)
        ],
        cycles=args.cycles,
    )

    results = [r for r in results if r.rounds or r.error]
    rounds = f"{args.repeat} round(s)" + (
        f" x {args.cycles} interleaved cycles" if args.cycles > 1 else ""
    )
    print(
        f"\nzmtp round-trip latency (ping-pong, separate processes, tcp://{LOCALHOST}): "
        f"{args.stat} over {rounds} of {args.duration:g} s after "
        f"{args.warmup:g} s warm-up; microseconds; lower is better. Ratios are p50 / "
        f"reference p50 (>1 = slower).\n"
    )
    table = latency_table(results, args.stat)
    print(table)
    return session.finish(
        [(f"{r.case} {size_label(r.size)}", r.error) for r in results if r.error],
        "latency",
        {
            "sizes": sizes,
            "duration": args.duration,
            "warmup": args.warmup,
            "repeat": args.repeat,
            "cycles": args.cycles,
            "hwm": args.hwm,
            "pin": args.pin,
            "profiled": args.profile,
            "cases": chosen,
            "quick": args.quick,
            "max_samples": args.max_samples,
        },
        {"latency": table},
        references={
            c.name: {
                "pyzmq_sync": c.ref_sync,
                "pyzmq_asyncio": c.ref_asyncio,
                "floor": c.floor,
                "floor_target": c.floor_target,
            }
            for c in cases
        },
        results=[r.to_json(args.stat) for r in results],
    )


if __name__ == "__main__":
    sys.exit(main())
