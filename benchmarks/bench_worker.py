"""Job worker throughput: ``zmtp_qos.Worker`` beside a bare level-3 receive loop.

A producer process (a level-3 PUSH that binds) sends distinct 64-byte jobs as fast as its
in-flight cap (``send_hwm``) lets it; a worker process connects and gives every job a verdict
(COMP). A round's rate is measured at the producer: N jobs over the time from its first send to
the last COMP. Cases, per backend (asyncio, trio):

* ``bare``: the floor of the stack, a bare receive loop, ``handle = await pull.recv();
  handle.complete()``, one task (the reference of the ``vs bare`` column);
* ``worker``: ``zmtp_qos.Worker`` with a trivial async handler, at the Worker's default
  concurrency (or ``--concurrency``); target >= 0.7x ``bare``;
* ``worker-sync``: ``zmtp_qos.Worker`` with a trivial *sync* handler run in ``--threads``
  threads (no target; it shows the thread hand-off's cost);
* ``bare-sleep-C`` / ``worker-sleep-C`` for each C in ``--scaling`` (default 1, 10, 100): a
  handler that sleeps ``--sleep`` (10 ms) at concurrency C (the bare loop runs C tasks); the
  ``vs ideal`` column is the measured rate over C / sleep (what a zero-cost loop and an exact
  timer would give), and ``vs linear`` the rate over C x the same case's rate at concurrency 1
  (linear scaling; target for the Worker: >= 0.8, "within 20 % of linear").

The ``worker*`` cases need ``zmtp_qos.Worker`` (zmtp_qos/worker.py): without it the script
stops at once with a message saying so, before running anything; ``--cases bare,bare-sleep``
runs the bare loop alone. Everything about the Worker's API that this script assumes is in
:func:`run_worker`; the table shows the Worker's concurrency as "default" when it is not set.

Examples::

    python benchmarks/bench_worker.py --json worker.json            # every case, ~3-4 min
    python benchmarks/bench_worker.py --quick --cases bare,bare-sleep
    python benchmarks/bench_worker.py --cases bare,worker --backends trio --profile worker

See benchmarks/README.md for the shared options.
"""

from __future__ import annotations

import itertools
import os
import struct
import sys
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from time import perf_counter
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _qos_common as rounds
from _common import (
    LOCALHOST,
    TCP_ANY,
    BenchError,
    BenchParser,
    Params,
    Role,
    Session,
    WorkerGroup,
    anyio_role,
    fmt_rate,
    fmt_ratio,
    fmt_spread,
    fmt_verdict,
    render_table,
    serve_rounds_async,
    start_peers,
    summarize,
)

#: Case kinds: (implementation, handler). The sleep kinds are run once per --scaling value.
KINDS: dict[str, tuple[str, str]] = {
    "bare": ("bare", "async"),
    "worker": ("worker", "async"),
    "worker-sync": ("worker", "sync"),
    "bare-sleep": ("bare", "sleep"),
    "worker-sleep": ("worker", "sleep"),
}
REFERENCE = "bare"
#: Targets (issue 11): the Worker's trivial-handler rate over the bare loop's, and the
#: sleeping handler's rate over linear scaling (concurrency x its rate at concurrency 1).
VS_BARE_TARGET = 0.7
VS_LINEAR_TARGET = 0.8
SETTLE_TIMEOUT = 120.0

NO_WORKER = (
    "the worker cases ({cases}) need zmtp_qos.Worker, and this zmtp_qos has none yet "
    "(zmtp_qos/worker.py, issue 11). Run the bare receive loop alone with "
    "--cases bare,bare-sleep, or merge the Worker first."
)


# =========================================================================== handlers


async def trivial(*job: Any) -> None:
    """The trivial async handler: nothing to do."""


def trivial_sync(*job: Any) -> None:
    """The trivial sync handler (run in a worker thread by the Worker)."""


def sleeper(seconds: float) -> Any:
    async def sleepy(*job: Any) -> None:
        import anyio

        await anyio.sleep(seconds)

    return sleepy


# =========================================================================== roles


@anyio_role
async def producer(ctrl: Any, p: Params) -> None:
    """A level-3 PUSH that binds; each round sends N distinct jobs and waits for every COMP."""
    import zmtp
    import zmtp_qos

    body = os.urandom(max(0, p["size"] - 8))
    counter = itertools.count()
    pack = struct.Struct("<Q").pack
    async with zmtp_qos.Socket(
        zmtp.PUSH, qos=3, send_hwm=p["hwm"], recv_hwm=p["hwm"], linger=0
    ) as sock:
        ctrl.send(("ready", await sock.bind(TCP_ANY)))
        runtime = sock.runtime
        assert runtime is not None
        send = sock.send

        async def burst(n: int) -> None:
            target = runtime.delivered + runtime.in_flight + n
            for _ in range(n):
                await send(pack(next(counter)) + body)  # receipts are let go
            await rounds.settle(runtime, target, SETTLE_TIMEOUT, "job")

        async def run(r: Params) -> Params:
            await burst(r["warmup"])
            t0 = perf_counter()
            await burst(r["count"])
            return {"elapsed": perf_counter() - t0}

        await serve_rounds_async(ctrl, run)


def _handler(p: Params) -> Any:
    kind = KINDS[p["kind"]][1]
    if kind == "sync":
        return trivial_sync
    if kind == "sleep":
        return sleeper(p["sleep"])
    return trivial


@anyio_role
async def worker(ctrl: Any, p: Params) -> None:
    """Connects and processes jobs until the harness says quit (no rounds of its own)."""
    import anyio

    impl = KINDS[p["kind"]][0]
    async with anyio.create_task_group() as tg:
        if impl == "bare":
            await tg.start(run_bare_loop, p)
        else:
            await tg.start(run_worker, p)
        ctrl.send(("ready", None))
        await rounds.serve_idle(ctrl)
        tg.cancel_scope.cancel()


async def run_bare_loop(p: Params, *, task_status: Any) -> None:
    """The bare level-3 receive loop: ``concurrency`` tasks of recv -> handler -> complete
    (one task and no handler call for the trivial case: the floor)."""
    import anyio

    import zmtp
    import zmtp_qos

    handler = None if KINDS[p["kind"]][1] == "async" else _handler(p)
    async with zmtp_qos.Socket(
        zmtp.PULL, qos=3, send_hwm=p["hwm"], recv_hwm=p["hwm"], linger=0
    ) as pull:
        await pull.connect(p["endpoint"])
        recv = pull.recv

        async def loop() -> None:
            while True:
                handle = await recv()
                if handler is not None:
                    await handler(handle.parts)
                handle.complete()

        async with anyio.create_task_group() as tg:
            for _ in range(p["concurrency"] or 1):
                tg.start_soon(loop)
            task_status.started()


async def run_worker(p: Params, *, task_status: Any) -> None:
    """``zmtp_qos.Worker`` with the case's handler. Imported here, lazily: the parent checks
    that it exists before starting any worker case. The API used: ``Worker(handler, *,
    connect=[endpoint], concurrency=, threads=)`` (a knob left out when not given: the
    Worker's default) and ``await task_group.start(worker.run)``; the harness's quit cancels
    it."""
    import anyio

    import zmtp_qos

    Worker = getattr(zmtp_qos, "Worker", None)
    if Worker is None:
        raise BenchError(NO_WORKER.format(cases=p["kind"]))
    knobs = {"concurrency": p["concurrency"], "threads": p["threads"]}
    instance = Worker(
        _handler(p),
        connect=[p["endpoint"]],
        **{k: v for k, v in knobs.items() if v is not None},
    )
    async with anyio.create_task_group() as tg:
        await tg.start(instance.run)
        task_status.started()


# =========================================================================== harness


@dataclass
class Result:
    case: str  # e.g. "worker" or "worker-sleep-100"
    kind: str
    backend: str
    concurrency: int | None
    threads: int | None
    sleep: float
    rates: list[float] = field(default_factory=list)
    error: str | None = None

    def value(self) -> float | None:
        return summarize(self.rates)["median"] if self.rates else None

    def linear(self) -> float | None:
        """The ideal rate of a sleeping handler: concurrency / sleep."""
        if KINDS[self.kind][1] != "sleep":
            return None
        return (self.concurrency or 1) / self.sleep

    def to_json(self) -> dict[str, Any]:
        return {
            "case": self.case,
            "kind": self.kind,
            "backend": self.backend,
            "concurrency": self.concurrency,
            "threads": self.threads,
            "sleep": self.sleep if KINDS[self.kind][1] == "sleep" else None,
            "value": self.value(),
            "unit": "jobs/s (median round)",
            "linear": self.linear(),
            "rates": self.rates,
            "error": self.error,
        }


def measure(args: Any, res: Result) -> None:
    base = {
        "size": args.size,
        "hwm": args.hwm,
        "kind": res.kind,
        "backend": res.backend,
        "concurrency": res.concurrency,
        "threads": res.threads,
        "sleep": res.sleep,
    }
    label = f"{res.backend}-{res.case}"
    prof = f"{label}-cycle{args.cycle}"
    with WorkerGroup(timeout=args.timeout) as group:
        prod, _ = start_peers(
            group,
            args,
            Role(f"{label}/producer", producer, base, "producer", f"{prof}-producer.prof"),
            [Role(f"{label}/worker", worker, base, "worker", f"{prof}-worker.prof")],
        )

        def round_(warmup: int, count: int) -> float:
            prod.send(("run", {"warmup": warmup, "count": count}))
            _, data = group.expect(prod, "result", max(args.timeout, 20 * args.duration))
            return float(count / data["elapsed"])

        ideal = res.linear()
        if ideal is not None:  # a sleeping handler: its rate is known in advance
            count = max(20, int(ideal * args.duration))
        else:
            count = rounds.pilot_count(args, round_, 300)
        rounds.timed_rounds(args, res.rates, round_, count, min_warmup=10, unit="jobs")


def table(results: list[Result]) -> str:
    refs = {r.backend: r.value() for r in results if r.case == REFERENCE}
    #: a sleeping case's rate at concurrency 1, the base of linear scaling
    ones = {(r.backend, r.kind): r.value() for r in results if r.linear() and r.concurrency == 1}
    rows = []
    for r in results:
        v = r.value()
        conc = "default" if r.concurrency is None else str(r.concurrency)
        if r.kind == "bare":
            conc = "1"
        threads = "-" if r.threads is None else str(r.threads)
        if v is None:
            rows.append([r.backend, r.case, conc, threads, "FAILED", "-", "-", "-", "-"])
            continue
        ref = refs.get(r.backend)
        vs_bare = "-"
        if ref and KINDS[r.kind][1] != "sleep":
            vs_bare = fmt_ratio(v / ref)
            if r.kind == "worker":
                vs_bare += fmt_verdict(v / ref, VS_BARE_TARGET)
        ideal = r.linear()
        vs_ideal = "-" if not ideal else fmt_ratio(v / ideal)
        vs_linear = "-"
        one = ones.get((r.backend, r.kind))
        if ideal and one:
            linear = one * (r.concurrency or 1)
            vs_linear = fmt_ratio(v / linear)
            if KINDS[r.kind][0] == "worker" and r.concurrency != 1:
                vs_linear += fmt_verdict(v / linear, VS_LINEAR_TARGET)
        rows.append(
            [
                r.backend,
                r.case,
                conc,
                threads,
                fmt_rate(v),
                vs_bare,
                vs_ideal,
                vs_linear,
                fmt_spread(r.rates),
            ]
        )
    headers = ["backend", "case", "concurrency", "threads", "jobs/s", "vs bare", "vs ideal"]
    return render_table([*headers, "vs linear", "spread"], rows, align="llrrrrrrr")


def main(argv: list[str] | None = None) -> int:
    ap = BenchParser(__doc__, "Cases: " + ", ".join(KINDS) + ". See benchmarks/README.md.")
    ap.add_argument("--cases", default=",".join(KINDS), help="comma-separated case kinds")
    ap.add_argument(
        "--scaling", default="1,10,100", help="concurrencies of the *-sleep cases (1,10,100)"
    )
    ap.add_argument("--sleep", type=float, default=0.01, help="the sleeping handler's sleep (s)")
    ap.add_argument(
        "--concurrency", type=int, default=None, help="the worker case's (default: Worker's)"
    )
    ap.add_argument("--threads", type=int, default=4, help="worker-sync: threads (default 4)")
    ap.add_argument("--size", type=int, default=64, help="job size in bytes (>= 8, default 64)")
    rounds.add_round_options(ap, duration=1.0, max_count=200_000, quick_duration=0.1, unit="case")
    ap.add_harness_options(
        ("producer", "worker"), "run that process under cProfile (its top functions printed)"
    )
    args = ap.parse_bench_args(argv)
    backends = rounds.check_round_options(ap, args)
    if args.sleep <= 0:
        ap.error("--sleep must be > 0")
    if args.size < 8:
        ap.error("--size must be >= 8 (each job carries a counter)")
    kinds = ap.names(args.cases, KINDS, "case")
    try:
        scaling = [int(c) for c in args.scaling.split(",") if c.strip()]
    except ValueError:
        ap.error(f"--scaling takes comma-separated integers, not {args.scaling!r}")
    if not scaling or min(scaling) < 1:
        ap.error("--scaling needs concurrencies >= 1")
    wanted = [k for k in kinds if KINDS[k][0] == "worker"]
    if wanted:
        import zmtp_qos

        if not hasattr(zmtp_qos, "Worker"):
            print(f"error: {NO_WORKER.format(cases=', '.join(wanted))}", file=sys.stderr)
            return 2

    results: list[Result] = []
    for b in backends:
        for k in kinds:
            impl, handler = KINDS[k]
            threads = args.threads if handler == "sync" else None
            if handler == "sleep":
                for c in scaling:
                    results.append(Result(f"{k}-{c}", k, b, c, None, args.sleep))
            else:
                conc = args.concurrency if impl == "worker" else None
                results.append(Result(k, k, b, conc, threads, args.sleep))
    plan = [(f"{r.backend} {r.case}", r, partial(measure, args, r)) for r in results]

    session = Session(args)
    session.run(plan, cycles=args.cycles)
    print(
        f"\nzmtp_qos job worker: {args.repeat} round(s) of ~{args.duration:g} s per case x "
        f"{args.cycles} cycle(s); {args.size} B jobs, HWM {args.hwm}, sleeping handler "
        f"{args.sleep * 1000:g} ms; producer and worker in separate processes over "
        f"tcp://{LOCALHOST}; load at start {session.env['loadavg']}.\n"
    )
    tables = {"worker": table(results)}
    print(tables["worker"])
    return session.finish(
        [(f"{r.backend} {r.case}", r.error) for r in results if r.error],
        "worker",
        {
            "cases": kinds,
            "scaling": scaling,
            "sleep": args.sleep,
            "concurrency": args.concurrency,
            "threads": args.threads,
            "size": args.size,
            **rounds.round_settings(args, backends),
        },
        tables,
        targets={"vs_bare": VS_BARE_TARGET, "vs_linear": VS_LINEAR_TARGET},
        results=[r.to_json() for r in results],
    )


if __name__ == "__main__":
    sys.exit(main())
