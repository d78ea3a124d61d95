"""zmtp.sync beside async zmtp and pyzmq's sync API, in the same run, as ratios.

Cases (tcp on the loopback, each side in its own spawned process, both sides the same API):

* ``push_pull``: 64 B PUSH -> PULL throughput; the receiver times first to last message.
* ``req_rep``: REQ/REP round-trip latency, p50 and p99 over many round trips.

Targets (issue 12): sync PUSH -> PULL >= 0.5x async zmtp; sync REQ/REP p50 <= 1.5x async zmtp.

    .venv/bin/python benchmarks/bench_sync.py                 # 3 rounds, medians
    .venv/bin/python benchmarks/bench_sync.py --rounds 1 --messages 100000
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
#: Seconds a child may take for one case before the parent gives up on it.
CHILD_TIMEOUT = 120.0


# ------------------------------------------------------------------------- children


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
    elif api == "zmtp-sync":
        import zmtp
        import zmtp.sync

        with zmtp.sync.Socket(zmtp.PULL) as sock:
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
    elif api == "zmtp-sync":
        import zmtp
        import zmtp.sync

        with zmtp.sync.Socket(zmtp.PUSH) as sock:
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
    elif api == "zmtp-sync":
        import zmtp
        import zmtp.sync

        with zmtp.sync.Socket(zmtp.REP) as sock:
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
    elif api == "zmtp-sync":
        import zmtp
        import zmtp.sync

        with zmtp.sync.Socket(zmtp.REQ) as sock:
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--messages", type=int, default=200_000, help="per throughput round")
    parser.add_argument("--round-trips", type=int, default=5_000, help="per latency round")
    args = parser.parse_args()

    rates: dict[str, list[float]] = {api: [] for api in APIS}
    p50s: dict[str, list[float]] = {api: [] for api in APIS}
    p99s: dict[str, list[float]] = {api: [] for api in APIS}
    for _ in range(args.rounds):
        for api in APIS:  # interleaved: every API sees the same machine load
            rate, _ = _pair(_pull, _push, api, args.messages)
            rates[api].append(rate)
            _, (p50, p99) = _pair(_rep, _req, api, args.round_trips)
            p50s[api].append(p50)
            p99s[api].append(p99)

    med = statistics.median
    base_rate = med(rates["zmtp-async"])
    base_p50 = med(p50s["zmtp-async"])
    print(f"64 B PUSH -> PULL over tcp, {args.rounds} rounds of {args.messages} (median)")
    print(f"{'api':<12} {'msgs/s':>10} {'vs async zmtp':>14}")
    for api in APIS:
        print(f"{api:<12} {med(rates[api]):>10,.0f} {med(rates[api]) / base_rate:>13.2f}x")
    print()
    print(f"REQ/REP round trip over tcp, {args.rounds} rounds of {args.round_trips} (median)")
    print(f"{'api':<12} {'p50 us':>8} {'p99 us':>8} {'p50 vs async zmtp':>18}")
    for api in APIS:
        p50, p99 = med(p50s[api]) * 1e6, med(p99s[api]) * 1e6
        print(f"{api:<12} {p50:>8.1f} {p99:>8.1f} {med(p50s[api]) / base_p50:>17.2f}x")
    print(
        f"thread hand-over floor (lock ping-pong between two threads, fresh process): "
        f"p50 {_handover_in_child() * 1e6:.1f} us per round trip"
    )
    sync_rate = med(rates["zmtp-sync"]) / base_rate
    sync_p50 = med(p50s["zmtp-sync"]) / base_p50
    print()
    met_rate = "met" if sync_rate >= 0.5 else "MISSED"
    met_p50 = "met" if sync_p50 <= 1.5 else "MISSED"
    print(f"target PUSH->PULL >= 0.5x async: {sync_rate:.2f}x {met_rate}")
    print(f"target REQ/REP p50 <= 1.5x async: {sync_p50:.2f}x {met_p50}")


if __name__ == "__main__":
    main()
