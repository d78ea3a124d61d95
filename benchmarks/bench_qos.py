"""zmtp_qos levels 0-3 side by side: PUSH -> PULL throughput and REQ/REP round-trip p50.

Sender and receiver (client and server) run in separate *spawned* processes over tcp on
127.0.0.1, on asyncio and on trio. Variants, per backend:

* ``plain``: a plain ``zmtp.Socket`` in a process that never imports ``zmtp_qos`` (the
  reference every ratio is taken against: "level 0" of the targets);
* ``plain+import``: a plain ``zmtp.Socket`` in a process that has imported ``zmtp_qos``
  (must be within noise of ``plain``);
* ``qos0`` .. ``qos3``: ``zmtp_qos.Socket(kind, qos=N)`` (``qos0`` is the wrapper at level 0).

PUSH -> PULL: a round sends ``--warmup`` x N untimed then N timed messages. At level >= 1 the
sender lets every receipt go, like a fire-and-forget application (the in-flight cap,
``send_hwm``, is its flow control), and the round only counts as complete when every message
is settled (``runtime.delivered`` reached; any dead letter fails the run). At level 3 the
receiver gives each message a verdict (``handle.complete()``). A round's time is the later of
the receiver's (first to last timed message) and, at level >= 1, the sender's (first timed send
to the last settlement); the rate is N over that time. Ratios are to ``plain`` on the same
backend and size. REQ/REP: an echo of ``--req-size`` bytes, timed at the client, p50 of every
round-trip of every round; a level-3 REP answers inside ``async with handle:``.

Examples::

    python benchmarks/bench_qos.py --cycles 2 --json qos.json   # the published run, ~5 min
    python benchmarks/bench_qos.py --quick                       # smoke test

See benchmarks/README.md for the shared options.
"""

from __future__ import annotations

import itertools
import os
import struct
import sys
from array import array
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from time import perf_counter, perf_counter_ns
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _qos_common as rounds
from _common import (
    LOCALHOST,
    TCP_ANY,
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
    log,
    percentile,
    render_table,
    serve_rounds_async,
    size_label,
    start_peers,
    summarize,
)

#: name -> QoS level (None: a plain zmtp.Socket) and whether the process imports zmtp_qos.
VARIANTS: dict[str, tuple[int | None, bool]] = {
    "plain": (None, False),
    "plain+import": (None, True),
    "qos0": (0, True),
    "qos1": (1, True),
    "qos2": (2, True),
    "qos3": (3, True),
}
REFERENCE = "plain"
#: Targets (issue 10): throughput at 64 B as a fraction of level 0, and REQ/REP p50 ratio.
PUSH_TARGETS = {"qos1": 0.5, "qos2": 0.35, "qos3": 0.35}
REQ_TARGETS = {"qos1": 1.1}
SETTLE_TIMEOUT = 60.0


def _socket(p: Params, kind: str) -> Any:
    level, imports = VARIANTS[p["variant"]]
    opts = {"send_hwm": p["hwm"], "recv_hwm": p["hwm"], "linger": 0}
    if imports:
        import zmtp_qos
    import zmtp

    if level is None:
        return zmtp.Socket(kind, **opts)
    return zmtp_qos.Socket(kind, qos=level, **opts)


# =========================================================================== PUSH -> PULL


@anyio_role
async def pull_receiver(ctrl: Any, p: Params) -> None:
    level = VARIANTS[p["variant"]][0]
    async with _socket(p, "PULL") as sock:
        ctrl.send(("ready", await sock.bind(TCP_ANY)))
        recv = sock.recv

        async def run(r: Params) -> Params:
            for _ in range(r["warmup"]):
                m = await recv()
                if level == 3:
                    m.complete()
            t0 = perf_counter()
            for _ in range(r["count"]):
                m = await recv()
                if level == 3:
                    m.complete()
            return {"recv_elapsed": perf_counter() - t0}

        await serve_rounds_async(ctrl, run)


@anyio_role
async def push_sender(ctrl: Any, p: Params) -> None:
    # Every message differs (a counter in its first 8 bytes): QoS 2/3 receivers de-duplicate
    # by content digest (docs/qos-protocol.md §3), so repeating one payload would lose messages.
    body = os.urandom(max(0, p["size"] - 8))
    counter = itertools.count()
    pack = struct.Struct("<Q").pack
    async with _socket(p, "PUSH") as sock:
        await sock.connect(p["endpoint"])
        runtime = getattr(sock, "runtime", None)
        send = sock.send

        async def burst(n: int) -> None:
            last = None
            for _ in range(n):
                last = await send(pack(next(counter)) + body)  # other receipts are let go
            if runtime is None:
                return
            target = runtime.delivered + runtime.in_flight
            if last is not None:
                await last
            await rounds.settle(runtime, target, SETTLE_TIMEOUT)

        ctrl.send(("ready", None))

        async def run(r: Params) -> Params:
            await burst(r["warmup"])
            t0 = perf_counter()
            await burst(r["count"])
            return {"send_elapsed": perf_counter() - t0}

        await serve_rounds_async(ctrl, run)


# =========================================================================== REQ / REP


@anyio_role
async def rep_server(ctrl: Any, p: Params) -> None:
    import anyio

    level = VARIANTS[p["variant"]][0]
    async with _socket(p, "REP") as sock:
        ctrl.send(("ready", await sock.bind(TCP_ANY)))
        recv, send = sock.recv, sock.send

        async def echo() -> None:
            while True:
                m = await recv()
                if level == 3:
                    async with m:
                        await send(m.parts[0])
                else:
                    await send(m)

        async with anyio.create_task_group() as tg:
            tg.start_soon(echo)
            await rounds.serve_idle(ctrl)
            tg.cancel_scope.cancel()


@anyio_role
async def req_client(ctrl: Any, p: Params) -> None:
    payload = os.urandom(p["size"])
    async with _socket(p, "REQ") as sock:
        await sock.connect(p["endpoint"])
        recv, send = sock.recv, sock.send

        async def roundtrip() -> None:
            await send(payload)
            if len(await recv()) != len(payload):
                raise AssertionError("short echo")

        await roundtrip()
        ctrl.send(("ready", None))

        async def run(r: Params) -> Params:
            end = perf_counter() + r["warmup"]
            while perf_counter() < end:
                await roundtrip()
            samples = array("q")
            end_ns = perf_counter_ns() + int(r["duration"] * 1e9)
            while True:
                t0 = perf_counter_ns()
                await roundtrip()
                t1 = perf_counter_ns()
                samples.append(t1 - t0)
                if t1 >= end_ns:
                    break
            return {"samples": samples.tobytes()}

        await serve_rounds_async(ctrl, run)


# =========================================================================== harness


@dataclass
class Result:
    test: str  # "push" or "reqrep"
    backend: str
    variant: str
    size: int
    rates: list[float] = field(default_factory=list)  # push: msgs/s per round
    samples: list[int] = field(default_factory=list)  # reqrep: ns per round-trip
    error: str | None = None

    def value(self) -> float | None:
        if self.test == "push":
            return summarize(self.rates)["median"] if self.rates else None
        if not self.samples:
            return None
        return percentile(sorted(self.samples), 50) / 1000.0  # us

    def to_json(self) -> dict[str, Any]:
        return {
            "test": self.test,
            "backend": self.backend,
            "variant": self.variant,
            "size": self.size,
            "value": self.value(),
            "unit": "msgs/s (median round)" if self.test == "push" else "p50 us",
            "rates": self.rates,
            "roundtrips": len(self.samples),
            "error": self.error,
        }


def measure_push(args: Any, res: Result) -> None:
    base = {"size": res.size, "hwm": args.hwm, "variant": res.variant, "backend": res.backend}
    label = f"{res.backend}-{res.variant}-{size_label(res.size)}"
    with WorkerGroup(timeout=args.timeout) as group:
        recv, senders = start_peers(
            group,
            args,
            Role(f"{label}/receiver", pull_receiver, base, "receiver", f"push-{label}-r.prof"),
            [Role(f"{label}/sender", push_sender, base, "sender", f"push-{label}-s.prof")],
        )
        workers = [recv, *senders]

        def round_(warmup: int, count: int) -> float:
            for w in workers:
                w.send(("run", {"warmup": warmup, "count": count}))
            elapsed = 0.0
            for w in workers:
                _, data = group.expect(w, "result", max(args.timeout, 20 * args.duration))
                if "recv_elapsed" in data:
                    elapsed = max(elapsed, data["recv_elapsed"])
                elif VARIANTS[res.variant][0]:  # level >= 1: settled at the sender
                    elapsed = max(elapsed, data["send_elapsed"])
            return count / elapsed

        count = rounds.pilot_count(args, round_, 500)
        rounds.timed_rounds(args, res.rates, round_, count, min_warmup=50, unit="msgs")


def measure_reqrep(args: Any, res: Result) -> None:
    base = {"size": res.size, "hwm": args.hwm, "variant": res.variant, "backend": res.backend}
    label = f"{res.backend}-{res.variant}"
    with WorkerGroup(timeout=args.timeout) as group:
        server, clients = start_peers(
            group,
            args,
            Role(f"{label}/rep", rep_server, base, "receiver", f"req-{label}-rep.prof"),
            [Role(f"{label}/req", req_client, base, "sender", f"req-{label}-req.prof")],
        )
        client = clients[0]
        for i in range(args.repeat):
            client.send(("run", {"warmup": 0.1 * args.duration, "duration": args.duration}))
            _, data = group.expect(client, "result", max(args.timeout, 20 * args.duration))
            got = array("q")
            got.frombytes(data["samples"])
            res.samples.extend(got)
            p50 = percentile(sorted(got), 50) / 1000.0
            log(f"    run {i + 1}/{args.repeat}: p50 {p50:.0f} us ({len(got):,})", args.quiet)
        server.send(("run", {}))
        group.expect(server, "result")


# =========================================================================== output


def push_table(results: list[Result]) -> str:
    refs = {(r.backend, r.size): r.value() for r in results if r.variant == REFERENCE}
    rows = []
    for r in results:
        v = r.value()
        if v is None:
            rows.append([r.backend, r.variant, size_label(r.size), "FAILED", "-", "-"])
            continue
        ref = refs.get((r.backend, r.size))
        ratio = fmt_ratio(v / ref) if ref else "-"
        if ref and r.size == 64:
            ratio += fmt_verdict(v / ref, PUSH_TARGETS.get(r.variant))
        rows.append(
            [r.backend, r.variant, size_label(r.size), fmt_rate(v), ratio, fmt_spread(r.rates)]
        )
    return render_table(["backend", "variant", "size", "msgs/s", "vs plain", "spread"], rows)


def req_table(results: list[Result]) -> str:
    refs = {r.backend: r.value() for r in results if r.variant == REFERENCE}
    rows = []
    for r in results:
        v = r.value()
        if v is None:
            rows.append([r.backend, r.variant, "FAILED", "-", "-"])
            continue
        ref = refs.get(r.backend)
        ratio = "-"
        if ref:
            ratio = fmt_ratio(v / ref) + fmt_verdict(v / ref, REQ_TARGETS.get(r.variant), False)
        rows.append([r.backend, r.variant, f"{v:.0f}", ratio, f"{len(r.samples):,}"])
    return render_table(["backend", "variant", "p50 us", "vs plain", "round-trips"], rows)


def main(argv: list[str] | None = None) -> int:
    ap = BenchParser(__doc__, "Variants: " + ", ".join(VARIANTS) + ". See benchmarks/README.md.")
    ap.add_argument("--variants", default=",".join(VARIANTS), help="comma-separated variants")
    ap.add_argument("--sizes", default="64,64k", help="PUSH sizes (default 64,64k)")
    ap.add_argument("--req-size", default="64", help="REQ/REP message size (default 64)")
    ap.add_argument("--no-push", action="store_true", help="skip PUSH -> PULL")
    ap.add_argument("--no-reqrep", action="store_true", help="skip REQ/REP")
    rounds.add_round_options(
        ap, duration=0.5, max_count=2_000_000, quick_duration=0.05, unit="config"
    )
    ap.add_harness_options(("receiver", "sender"), "run that role under cProfile")
    args = ap.parse_bench_args(argv)
    backends = rounds.check_round_options(ap, args)
    variants = ap.names(args.variants, VARIANTS, "variant")
    sizes = ap.sizes(args.sizes)
    if min(sizes) < 8:
        ap.error("--sizes must be >= 8 (each message carries a counter)")
    req_size = ap.sizes(args.req_size)[0]

    results: list[Result] = []
    plan: list[tuple[str, Result, Any]] = []
    if not args.no_push:
        for b in backends:
            for s in sizes:
                for v in variants:
                    res = Result("push", b, v, s)
                    results.append(res)
                    plan.append(
                        (f"push {b} {v} {size_label(s)}", res, partial(measure_push, args, res))
                    )
    if not args.no_reqrep:
        for b in backends:
            for v in variants:
                res = Result("reqrep", b, v, req_size)
                results.append(res)
                plan.append((f"req/rep {b} {v}", res, partial(measure_reqrep, args, res)))
    if not plan:
        ap.error("nothing to run")

    session = Session(args)
    session.run(plan, cycles=args.cycles)
    tables: dict[str, str] = {}
    print(
        f"\nzmtp_qos: {args.repeat} round(s) of ~{args.duration:g} s per config x {args.cycles} "
        f"cycle(s); HWM {args.hwm}; separate processes over tcp://{LOCALHOST}; load at start "
        f"{session.env['loadavg']}."
    )
    push = [r for r in results if r.test == "push"]
    if push:
        print("\nPUSH -> PULL (median round; ratio to plain zmtp, same backend and size)\n")
        tables["push"] = push_table(push)
        print(tables["push"])
    req = [r for r in results if r.test == "reqrep"]
    if req:
        print(f"\nREQ -> REP round-trip, {size_label(req_size)} (p50 of every round-trip)\n")
        tables["reqrep"] = req_table(req)
        print(tables["reqrep"])
    return session.finish(
        [
            (f"{r.test} {r.backend} {r.variant} {size_label(r.size)}", r.error)
            for r in results
            if r.error
        ],
        "qos",
        {
            "sizes": sizes,
            "req_size": req_size,
            "variants": variants,
            **rounds.round_settings(args, backends),
        },
        tables,
        push_targets=PUSH_TARGETS,
        reqrep_targets=REQ_TARGETS,
        results=[r.to_json() for r in results],
    )


if __name__ == "__main__":
    sys.exit(main())
