"""zmtp.sync beside async zmtp and pyzmq's sync API, in the same run, as ratios.

Cases (tcp on the loopback, each side in its own spawned process, both sides the same API):

* ``push_pull``: 64 B PUSH -> PULL throughput; the receiver times first to last message.
* ``req_rep``: REQ/REP round-trip latency, p50 and p99 over many round trips.

Targets (issue 12): sync PUSH -> PULL >= 0.5x async zmtp; sync REQ/REP p50 <= 1.5x async zmtp.

    .venv/bin/python benchmarks/bench_sync.py                 # 3 cycles, medians
    .venv/bin/python benchmarks/bench_sync.py --cycles 6 --cases req_rep --apis zmtp-sync
"""

from __future__ import annotations

import argparse
import multiprocessing
import statistics
import sys
import time
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parent.parent
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

APIS = ("zmtp-async", "zmtp-sync", "pyzmq-sync")
SIZE = 64
#: Environment variable naming the ``--reference`` file for the children.
_REF_ENV = "ZMTP_BENCH_SYNC_REFERENCE"
#: Seconds a child may take for one case before the parent gives up on it.
CHILD_TIMEOUT = 120.0


# ------------------------------------------------------------------------- children


def _blocking(api: str) -> Any:
    """The blocking module an API name stands for: ``zmtp.sync``, or for ``zmtp-sync-ref`` an
    older copy of it (``--reference FILE``, e.g. ``git show main:zmtp/sync.py > old.py``)
    loaded as a module of this tree's ``zmtp`` package, for A/B runs of a change."""
    import os

    import zmtp.sync

    if api != "zmtp-sync-ref":
        return zmtp.sync
    import importlib.util

    spec = importlib.util.spec_from_file_location("zmtp.sync_ref", os.environ[_REF_ENV])
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def _pull(api: str, count: int, out: Any) -> None:
    if api == "pyzmq-sync":
        import zmq

        ctx = zmq.Context()
        sock = ctx.socket(zmq.PULL)
        sock.setsockopt(zmq.RCVHWM, 1000)
        port = sock.bind_to_random_port("tcp://127.0.0.1")
        out.put(("ready", f"tcp://127.0.0.1:{port}"))
        sock.recv()
        start = time.perf_counter()
        for _ in range(count - 1):
            sock.recv()
        out.put(("result", (count - 1) / (time.perf_counter() - start)))
        sock.close(linger=0)
        ctx.term()
    elif api.startswith("zmtp-sync"):
        import zmtp

        with _blocking(api).Socket(zmtp.PULL) as sock:
            out.put(("ready", sock.bind("tcp://127.0.0.1:*")))
            sock.recv()
            start = time.perf_counter()
            for _ in range(count - 1):
                sock.recv()
            out.put(("result", (count - 1) / (time.perf_counter() - start)))
    else:
        import anyio

        import zmtp

        async def main() -> None:
            async with zmtp.Socket(zmtp.PULL) as sock:
                out.put(("ready", await sock.bind("tcp://127.0.0.1:*")))
                await sock.recv()
                start = time.perf_counter()
                for _ in range(count - 1):
                    await sock.recv()
                out.put(("result", (count - 1) / (time.perf_counter() - start)))

        anyio.run(main)


def _push(api: str, endpoint: str, count: int, out: Any) -> None:
    payload = b"x" * SIZE
    if api == "pyzmq-sync":
        import zmq

        ctx = zmq.Context()
        sock = ctx.socket(zmq.PUSH)
        sock.connect(endpoint)
        for _ in range(count):
            sock.send(payload)
        sock.close()  # linger: flush
        ctx.term()
    elif api.startswith("zmtp-sync"):
        import zmtp

        with _blocking(api).Socket(zmtp.PUSH) as sock:
            sock.connect(endpoint)
            for _ in range(count):
                sock.send(payload)
    else:
        import anyio

        import zmtp

        async def main() -> None:
            async with zmtp.Socket(zmtp.PUSH) as sock:
                await sock.connect(endpoint)
                for _ in range(count):
                    await sock.send(payload)

        anyio.run(main)
    out.put(("done", None))


def _rep(api: str, count: int, out: Any) -> None:
    if api == "pyzmq-sync":
        import zmq

        ctx = zmq.Context()
        sock = ctx.socket(zmq.REP)
        port = sock.bind_to_random_port("tcp://127.0.0.1")
        out.put(("ready", f"tcp://127.0.0.1:{port}"))
        for _ in range(count):
            sock.send(sock.recv())
        sock.close()
        ctx.term()
    elif api.startswith("zmtp-sync"):
        import zmtp

        with _blocking(api).Socket(zmtp.REP) as sock:
            out.put(("ready", sock.bind("tcp://127.0.0.1:*")))
            for _ in range(count):
                sock.send(sock.recv())
    else:
        import anyio

        import zmtp

        async def main() -> None:
            async with zmtp.Socket(zmtp.REP) as sock:
                out.put(("ready", await sock.bind("tcp://127.0.0.1:*")))
                for _ in range(count):
                    await sock.send(await sock.recv())

        anyio.run(main)
    out.put(("done", None))


def _req(api: str, endpoint: str, count: int, out: Any) -> None:
    payload = b"x" * SIZE
    times: list[float] = []
    clock = time.perf_counter
    if api == "pyzmq-sync":
        import zmq

        ctx = zmq.Context()
        sock = ctx.socket(zmq.REQ)
        sock.connect(endpoint)
        for _ in range(count):
            t = clock()
            sock.send(payload)
            sock.recv()
            times.append(clock() - t)
        sock.close()
        ctx.term()
    elif api.startswith("zmtp-sync"):
        import zmtp

        with _blocking(api).Socket(zmtp.REQ) as sock:
            sock.connect(endpoint)
            for _ in range(count):
                t = clock()
                sock.send(payload)
                sock.recv()
                times.append(clock() - t)
    else:
        import anyio

        import zmtp

        async def main() -> None:
            async with zmtp.Socket(zmtp.REQ) as sock:
                await sock.connect(endpoint)
                for _ in range(count):
                    t = clock()
                    await sock.send(payload)
                    await sock.recv()
                    times.append(clock() - t)

        anyio.run(main)
    warm = times[min(100, len(times) // 10) :]  # the first round trips include the connect
    warm.sort()
    out.put(("result", (warm[len(warm) // 2], warm[int(len(warm) * 0.99)])))


def _handover_p50(count: int = 3000) -> float:
    """The floor under any blocking-over-a-loop-thread design: two threads handing a lock
    back and forth (one wake-up each way), p50 of a round trip, in this process."""
    import threading

    there, back = threading.Lock(), threading.Lock()
    there.acquire()
    back.acquire()

    def other() -> None:
        for _ in range(count):
            there.acquire()
            back.release()

    thread = threading.Thread(target=other, daemon=True)
    thread.start()
    times = []
    for _ in range(count):
        t = time.perf_counter()
        there.release()
        back.acquire()
        times.append(time.perf_counter() - t)
    thread.join(CHILD_TIMEOUT)
    times.sort()
    return times[count // 2]


def _handover_child(count: int, out: Any) -> None:
    out.put(("result", _handover_p50(count)))


def _handover_in_child(count: int = 3000) -> float:
    """The floor measured in a fresh process, like the benchmark's own sides (a thread wake-up
    on a VM costs very different amounts depending on how idle the cores are)."""
    mp = multiprocessing.get_context("spawn")
    queue = mp.Queue()
    proc = mp.Process(target=_handover_child, args=(count, queue), daemon=True)
    proc.start()
    try:
        return float(_expect(queue, "result"))
    finally:
        proc.join(CHILD_TIMEOUT)
        if proc.is_alive():
            proc.kill()


# ------------------------------------------------------------------------- parent


def _expect(queue: Any, kind: str) -> Any:
    got, value = queue.get(timeout=CHILD_TIMEOUT)
    if got != kind:
        raise RuntimeError(f"expected {kind!r} from a child, got {got!r}")
    return value


def _pair(server: Any, client: Any, api: str, count: int) -> tuple[Any, Any]:
    """Run one server/client pair of children; returns (server's result, client's result)."""
    mp = multiprocessing.get_context("spawn")
    srv_q, cli_q = mp.Queue(), mp.Queue()
    srv = mp.Process(target=server, args=(api, count, srv_q), daemon=True)
    srv.start()
    procs = [srv]
    try:
        endpoint = _expect(srv_q, "ready")
        cli = mp.Process(target=client, args=(api, endpoint, count, cli_q), daemon=True)
        cli.start()
        procs.append(cli)
        cli_value = cli_q.get(timeout=CHILD_TIMEOUT)[1]
        srv_value = srv_q.get(timeout=CHILD_TIMEOUT)[1]
        for p in procs:
            p.join(CHILD_TIMEOUT)
        return srv_value, cli_value
    finally:
        for p in procs:
            if p.is_alive():
                p.terminate()
                p.join(5)
            if p.is_alive():
                p.kill()


def _spread(values: list[float]) -> str:
    """Median and range of per-cycle values: the range is what a loaded machine does."""
    return f"{statistics.median(values):.2f}x ({min(values):.2f}-{max(values):.2f})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--cycles",
        "--rounds",
        dest="cycles",
        type=int,
        default=3,
        help="cycles; each runs every API once per case, interleaved (same load for all)",
    )
    parser.add_argument("--messages", type=int, default=200_000, help="per throughput run")
    parser.add_argument("--round-trips", type=int, default=5_000, help="per latency run")
    parser.add_argument(
        "--cases", default="push_pull,req_rep", help="comma-separated: push_pull, req_rep"
    )
    parser.add_argument("--apis", default=",".join(APIS), help="comma-separated subset")
    parser.add_argument(
        "--reference", help="an older zmtp/sync.py, run as one more API: zmtp-sync-ref"
    )
    args = parser.parse_args()
    cases = [c for c in args.cases.split(",") if c]
    apis = [a for a in args.apis.split(",") if a]
    if "zmtp-async" not in apis:
        apis.insert(0, "zmtp-async")  # the baseline of every ratio
    if args.reference:
        import os

        os.environ[_REF_ENV] = str(Path(args.reference).resolve())  # spawned children inherit
        apis.append("zmtp-sync-ref")

    rates: dict[str, list[float]] = {api: [] for api in apis}
    p50s: dict[str, list[float]] = {api: [] for api in apis}
    p99s: dict[str, list[float]] = {api: [] for api in apis}
    for cycle in range(args.cycles):
        # interleaved: every API sees the same machine load; the order rotates per cycle so
        # that no API always runs first (right after another API's teardown)
        order = apis[cycle % len(apis) :] + apis[: cycle % len(apis)]
        for api in order:
            if "push_pull" in cases:
                rate, _ = _pair(_pull, _push, api, args.messages)
                rates[api].append(rate)
            if "req_rep" in cases:
                _, (p50, p99) = _pair(_rep, _req, api, args.round_trips)
                p50s[api].append(p50)
                p99s[api].append(p99)

    med = statistics.median
    if "push_pull" in cases:
        base = rates["zmtp-async"]
        print(f"64 B PUSH -> PULL over tcp, {args.cycles} cycles of {args.messages} (median)")
        print(f"{'api':<12} {'msgs/s':>10}  vs async zmtp, per cycle: median (range)")
        for api in apis:
            ratios = [r / b for r, b in zip(rates[api], base, strict=True)]
            print(f"{api:<12} {med(rates[api]):>10,.0f}  {_spread(ratios)}")
        print()
    if "req_rep" in cases:
        base = p50s["zmtp-async"]
        print(f"REQ/REP round trip over tcp, {args.cycles} cycles of {args.round_trips} (median)")
        print(f"{'api':<12} {'p50 us':>8} {'p99 us':>8}  p50 vs async zmtp, per cycle")
        for api in apis:
            p50, p99 = med(p50s[api]) * 1e6, med(p99s[api]) * 1e6
            ratios = [p / b for p, b in zip(p50s[api], base, strict=True)]
            print(f"{api:<12} {p50:>8.1f} {p99:>8.1f}  {_spread(ratios)}")
        print(
            "thread hand-over floor (lock ping-pong between two threads, fresh process): "
            f"p50 {_handover_in_child() * 1e6:.1f} us per round trip"
        )
        print()
    if "zmtp-sync" in apis and "push_pull" in cases:
        ratios = [r / b for r, b in zip(rates["zmtp-sync"], rates["zmtp-async"], strict=True)]
        met = "met" if med(ratios) >= 0.5 else "MISSED"
        print(f"target PUSH->PULL >= 0.5x async: {_spread(ratios)} {met}")
    if "zmtp-sync" in apis and "req_rep" in cases:
        ratios = [p / b for p, b in zip(p50s["zmtp-sync"], p50s["zmtp-async"], strict=True)]
        met = "met" if med(ratios) <= 1.5 else "MISSED"
        print(f"target REQ/REP p50 <= 1.5x async: {_spread(ratios)} {met}")


if __name__ == "__main__":
    main()
