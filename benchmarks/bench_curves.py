"""The curves a user looks at: message-size sweep, latency percentiles, peers sweep (PNG).

One run measures, zmtp (asyncio, trio) beside pyzmq sync, each in separate processes:

* ``size``: PUSH -> PULL over tcp from 8 B to 4 MiB (``bench_throughput.py``'s method), msgs/s
  and MB/s. The HWM is 1000 but at most 64 MiB of messages per queue (16 at 4 MiB), the same
  for every implementation;
* ``latency``: REQ -> REP 64 B round trips (``bench_latency.py``'s cases), p1 ... p99.9;
* ``peers``: 1, 10 and 100 PUSH connections from 2 processes into one PULL
  (``bench_peers.py``), the aggregate rate and the receiver's RSS per connection;

then writes the JSON (``--json``) and draws ``docs/perf-size-sweep.png``,
``docs/perf-latency-percentiles.png`` and ``docs/perf-peers.png`` (``--plot-dir``; needs
matplotlib: ``pip install -e '.[bench]'``; ``--no-plot`` skips the drawing). ``--from-json``
redraws from a saved run without measuring. ``--cycles N`` runs every part N times in turn and
pools the rounds. The default run takes a few minutes; ``--quick`` checks that it all works.

    python benchmarks/bench_curves.py --json curves.json          # measure and draw
    python benchmarks/bench_curves.py --from-json curves.json     # redraw only
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_latency as bl
import bench_peers as bp
import bench_throughput as bt
import plots
from _common import BenchParser, Session, parse_sizes, require, size_label

SWEEP_SIZES = "8,64,512,4k,32k,256k,1m,4m"
SWEEP_IMPLS = ("zmtp-asyncio", "zmtp-trio", "pyzmq-sync")
LATENCY_CASES = ("zmtp-reqrep-asyncio", "zmtp-reqrep-trio", "pyzmq-reqrep-sync")
PARTS = ("size", "latency", "peers")
#: At most this many bytes of messages per queue in the size sweep (HWM capped by size).
QUEUE_BYTES = 64 << 20


def sweep_hwm(hwm: int, size: int) -> int:
    return max(8, min(hwm, QUEUE_BYTES // size))


def main(argv: list[str] | None = None) -> int:
    ap = BenchParser(__doc__, "See benchmarks/README.md.")
    ap.add_argument(
        "--parts", default=",".join(PARTS), help="comma-separated, of " + ", ".join(PARTS)
    )
    ap.add_argument("--sizes", default=SWEEP_SIZES, help=f"size sweep (default {SWEEP_SIZES})")
    ap.add_argument("--peers", default="1,10,100", help="peers sweep (default 1,10,100)")
    ap.add_argument("--duration", type=float, default=0.5, help="seconds per timed round")
    ap.add_argument("--repeat", type=int, default=2, help="rounds per configuration")
    ap.add_argument("--cycles", type=int, default=1, help="run the plan N times in turn")
    ap.add_argument("--stat", choices=("median", "best"), default="median")
    ap.add_argument("--hwm", type=int, default=1000)
    ap.add_argument("--timeout", type=float, default=60.0)
    ap.add_argument(
        "--plot-dir",
        default=str(Path(__file__).resolve().parent.parent / "docs"),
        help="where the PNGs go (default docs/)",
    )
    ap.add_argument("--no-plot", action="store_true", help="measure only, draw nothing")
    ap.add_argument("--from-json", metavar="PATH", help="draw from a saved run, measure nothing")
    ap.add_argument("--note", default="", help="added to every caption (what the machine did)")
    ap.add_argument("--quick", action="store_true", help="smoke test: tiny rounds")
    ap.add_harness_options(("receiver", "sender"), "run that role under cProfile")
    args = ap.parse_bench_args(argv)
    if args.from_json:
        payload = json.loads(Path(args.from_json).read_text())
        if args.note:
            payload["note"] = args.note
        return draw(payload, args)
    parts = ap.names(args.parts, PARTS, "part")
    if args.quick:
        args.duration, args.repeat = 0.2, 1
    if args.repeat < 1 or args.duration <= 0 or args.cycles < 1:
        ap.error("--repeat and --cycles must be >= 1 and --duration > 0")
    try:
        sizes = parse_sizes(args.sizes)
    except ValueError as exc:
        ap.error(str(exc))
    needs: dict[str, tuple[str, ...]] = {}
    if "size" in parts:
        needs.update({n: bt.TCP_IMPLS[n].requires for n in SWEEP_IMPLS})
    if "latency" in parts:
        needs.update({c: bl.CASE_BY_NAME[c].requires for c in LATENCY_CASES})
    require(needs)

    session = Session(args)
    plan: list[tuple[str, Any, Any]] = []
    size_results: list[bt.ConfigResult] = []
    if "size" in parts:
        for size in sizes:
            for name in SWEEP_IMPLS:
                res = bt.ConfigResult("tcp", name, size)
                size_results.append(res)
                plan.append(
                    (f"size {name} {size_label(size)}", res, sweep_step(args, name, size, res))
                )
    latency_results: list[bl.CaseResult] = []
    if "latency" in parts:
        for case in LATENCY_CASES:
            lres = bl.CaseResult(case, 64)
            latency_results.append(lres)
            plan.append((f"latency {case}", lres, latency_step(args, case, lres)))
    peers_results: list[bp.PeersResult] = []
    if "peers" in parts:
        peer_args = argparse.Namespace(**vars(args))
        peer_args.impl = ",".join(bp.IMPLS)
        peer_args.processes, peer_args.size, peer_args.warmup = 2, 64, 0.1
        peer_args.pilot = 5000 if args.quick else 20_000
        peer_args.max_count = 20_000_000
        peer_args.no_gc = False  # the curves show what an application gets
        peer_args.sender_context = False  # and the senders with an async with per socket
        for impl, pres in bp.plan_results(peer_args, bp.parser()):
            peers_results.append(pres)
            plan.append(
                (f"peers {impl.name} {pres.peers}", pres, peers_step(peer_args, impl, pres))
            )
    session.run(plan, cycles=args.cycles)

    tables: dict[str, str] = {}
    if size_results:
        tables["size"] = bt.tcp_table([r for r in size_results if r.runs or r.error], args.stat)
        print("\nsize sweep, PUSH -> PULL over tcp\n\n" + tables["size"])
    if latency_results:
        tables["latency"] = bl.latency_table(latency_results, args.stat)
        print("\nREQ -> REP 64 B\n\n" + tables["latency"])
    if peers_results:
        tables["peers"] = bp.table(peers_results, args.stat)
        print("\nmany peers -> one PULL, 64 B\n\n" + tables["peers"])
    payload: dict[str, Any] = {
        "environment": session.env,
        "note": args.note,
        "size_sweep": [r.to_json(args.stat) for r in size_results],
        "latency": [r.to_json(args.stat) for r in latency_results],
        "peers": [r.to_json(args.stat) for r in peers_results],
    }
    status = session.finish(
        [(lbl, r.error) for lbl, r, _ in plan if r.error],
        "curves",
        {
            "parts": parts,
            "sizes": sizes,
            "duration": args.duration,
            "repeat": args.repeat,
            "cycles": args.cycles,
            "hwm": args.hwm,
            "quick": args.quick,
        },
        tables,
        note=args.note,
        size_sweep=payload["size_sweep"],
        latency=payload["latency"],
        peers=payload["peers"],
    )
    return draw(payload, args) or status


def sweep_step(args: argparse.Namespace, name: str, size: int, res: bt.ConfigResult) -> Any:
    def step() -> None:
        a = argparse.Namespace(**vars(args))
        a.hwm = sweep_hwm(args.hwm, size)
        a.warmup, a.max_count, a.min_count = 0.1, 20_000_000, 200 if size >= 256 << 10 else 1000
        before = list(res.runs)
        bt.measure(bt.TCP_IMPLS[name], "tcp", size, a, res)
        res.runs = before + res.runs

    return step


def latency_step(args: argparse.Namespace, case: str, res: bl.CaseResult) -> Any:
    def step() -> None:
        a = argparse.Namespace(**vars(args))
        a.warmup, a.max_samples = (0.1 if args.quick else 0.3), 1_000_000
        a.duration = args.duration * (1 if args.quick else 3)
        bl.run_case(bl.CASE_BY_NAME[case], 64, a, res)

    return step


def peers_step(args: argparse.Namespace, impl: bp.Impl, res: bp.PeersResult) -> Any:
    return lambda: bp.measure(impl, res, args)


def draw(payload: dict[str, Any], args: argparse.Namespace) -> int:
    if args.no_plot:
        return 0
    if not plots.have_matplotlib():
        print(
            "error: drawing the curves needs matplotlib (pip install -e '.[bench]'); "
            "use --no-plot to measure only",
            file=sys.stderr,
        )
        return 2
    for path in plots.render_all(payload, Path(args.plot_dir)):
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
