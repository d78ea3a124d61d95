"""What the QoS benchmarks, bench_qos.py and bench_worker.py, share beside _common.py.

Both time rounds of messages that one process sends at QoS level >= 1 to another, on asyncio
and on trio, and count a round as done only when the sender's runtime has settled every
message. So they share:

* the round options and their checks (:func:`add_round_options`, :func:`check_round_options`)
  and what the JSON says of them (:func:`round_settings`);
* in a child: waiting until the sender has settled (:func:`settle`), and answering the
  harness's rounds in a role whose work runs in the background (:func:`serve_idle`);
* in the parent: the pilot round that sizes N (:func:`pilot_count`) and the timed rounds
  (:func:`timed_rounds`).
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

from _common import BenchError, BenchParser, Params, fmt_rate, log, require, serve_rounds_async

BACKENDS = ("asyncio", "trio")


# --------------------------------------------------------------------------- options


def add_round_options(
    ap: BenchParser, *, duration: float, max_count: int, quick_duration: float, unit: str
) -> None:
    """``--backends``, ``--duration``, ``--repeat``, ``--cycles``, ``--warmup``, ``--hwm``,
    ``--max-count``, ``--timeout`` and ``--quick`` (``quick_duration`` s rounds, one repeat);
    ``unit`` names what a plan is made of ("config", "case")."""
    ap.add_argument("--backends", default=",".join(BACKENDS), help="asyncio,trio (default both)")
    ap.add_argument("--duration", type=float, default=duration, help="seconds per timed round")
    ap.add_argument("--repeat", type=int, default=2, help=f"timed rounds per {unit} and cycle")
    ap.add_argument("--cycles", type=int, default=1, help="run the whole plan N times in turn")
    ap.add_argument("--warmup", type=float, default=0.1, help="warm-up fraction of N")
    ap.add_argument("--hwm", type=int, default=1000, help="send/recv HWM (default 1000)")
    ap.add_argument("--max-count", type=int, default=max_count, help="cap on N per round")
    ap.add_argument("--timeout", type=float, default=60.0, help="seconds per child answer")
    ap.add_argument(
        "--quick",
        action="store_true",
        help=f"smoke test: --duration {quick_duration:g} --repeat 1",
    )
    ap.set_defaults(quick_duration=quick_duration)


def check_round_options(ap: BenchParser, args: argparse.Namespace) -> list[str]:
    """Apply ``--quick``, check the round options (a usage error exits) and that the modules
    of each backend are there; the backends asked for. Rates are reported as medians."""
    args.stat = "median"
    if args.quick:
        args.duration, args.repeat = args.quick_duration, 1
    if args.repeat < 1 or args.cycles < 1 or args.duration <= 0:
        ap.error("--repeat and --cycles must be >= 1 and --duration > 0")
    backends = ap.names(args.backends, BACKENDS, "backend")
    require({b: ("anyio", "trio") if b == "trio" else ("anyio",) for b in backends})
    return backends


def round_settings(args: argparse.Namespace, backends: list[str]) -> dict[str, Any]:
    """The round options, for the JSON's ``settings``."""
    return {
        "backends": backends,
        "duration": args.duration,
        "repeat": args.repeat,
        "cycles": args.cycles,
        "hwm": args.hwm,
        "quick": args.quick,
    }


# --------------------------------------------------------------------------- child side


async def settle(runtime: Any, target: int, timeout: float, what: str = "message") -> None:
    """Wait until ``runtime.delivered`` (a QoS socket's runtime) reaches ``target``, polling
    every millisecond (receipts settle out of order: a few stragglers); a dead letter, or
    ``timeout`` seconds, fail the round."""
    import anyio

    with anyio.fail_after(timeout):
        while runtime.delivered < target:
            if runtime.dead_lettered:
                break
            await anyio.sleep(0.001)
    if runtime.dead_lettered:
        raise BenchError(f"{runtime.dead_lettered} {what}(s) dead-lettered")


async def _no_rounds(r: Params) -> Params:
    return {}


async def serve_idle(ctrl: Any) -> None:
    """Answer every round with an empty result until the harness says quit: for a role whose
    work runs in background tasks (an echo server, a worker), which the caller then cancels."""
    await serve_rounds_async(ctrl, _no_rounds)


# --------------------------------------------------------------------------- parent side

#: One round: ``round_(warmup, count)`` sends ``warmup`` untimed then ``count`` timed
#: messages, and returns the rate of the timed ones.
Round = Callable[[int, int], float]


def pilot_count(args: argparse.Namespace, round_: Round, pilot: int) -> int:
    """N for a timed round of ``--duration``: a pilot round of ``pilot`` messages measures the
    rate (N is at least ``pilot``, at most ``--max-count``)."""
    rate = round_(pilot // 10, pilot)
    return max(pilot, min(int(args.max_count), int(rate * args.duration)))


def timed_rounds(
    args: argparse.Namespace,
    rates: list[float],
    round_: Round,
    count: int,
    *,
    min_warmup: int,
    unit: str,
) -> None:
    """``--repeat`` rounds of ``count`` ``unit`` ("msgs", "jobs") each, after a warm-up of
    ``--warmup`` x N (at least ``min_warmup``); every rate appended to ``rates`` and logged."""
    warmup = max(min_warmup, int(count * args.warmup))
    for i in range(args.repeat):
        rate = round_(warmup, count)
        rates.append(rate)
        log(f"    run {i + 1}/{args.repeat}: {fmt_rate(rate)}{unit}/s ({count:,})", args.quiet)
