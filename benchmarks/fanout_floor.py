"""What one subscriber costs: CPU per message at a SUB, zmtp against pyzmq, same feed.

Why: in ``bench_fanout.py`` with 10 subscribers, 11 processes share the machine's cores, and
libzmq's publisher drops most of its copies (its subscribers cannot keep up), so the rates
compared are what the *subscribers* can absorb on the cores left to them. Each zmtp
subscriber's receive cost then bounds the ratio whatever the publisher does: with ``C`` the
CPU per message of one subscriber, the per-subscriber rate on ``k`` cores is at most
``k / (10 * C + publisher per message)``, so zmtp / pyzmq is at most
``(10 * C_pyzmq + P_pyzmq) / (10 * C_zmtp)`` even with a publisher that costs nothing.

Each case runs one SUB (pyzmq sync, zmtp on asyncio, zmtp on trio) in this process, fed over
tcp by a libzmq XPUB (``XPUB_NODROP``, a child process) flooding 64 B messages, and reports the
SUB process's own CPU time (user + system, ``getrusage``) per received message after a
warm-up. Cases alternate between cycles; compare the rows of one run.

    .venv/bin/python benchmarks/fanout_floor.py --cycles 2
"""

from __future__ import annotations

import argparse
import multiprocessing
import resource
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import pyzmq_bind, pyzmq_socket

WARMUP = 2000
CASES = ("pyzmq", "asyncio", "trio")


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _publisher(endpoints: Any, total: int, size: int) -> None:
    """A libzmq XPUB that waits for one subscription, then floods without dropping."""
    import zmq

    with pyzmq_socket("XPUB", 1000) as sock:
        sock.setsockopt(zmq.XPUB_NODROP, 1)
        endpoints.put(pyzmq_bind(sock))
        sock.recv()  # the subscription
        payload = b"d" * size
        for _ in range(total):
            while True:
                try:
                    sock.send(payload, zmq.NOBLOCK)
                    break
                except zmq.Again:
                    time.sleep(0.0001)
        time.sleep(5)  # until the parent terminates us


def _pyzmq_sub(endpoint: str, count: int) -> float:
    with pyzmq_socket("SUB", 1000) as sock:
        sock.subscribe(b"")
        sock.connect(endpoint)
        for _ in range(WARMUP):
            sock.recv()
        start = _cpu()
        for _ in range(count):
            sock.recv()
        return _cpu() - start


def _zmtp_sub(endpoint: str, count: int, backend: str) -> float:
    import anyio

    import zmtp

    async def run() -> float:
        async with zmtp.Socket(zmtp.SUB, recv_hwm=1000, linger=0) as sock:
            sock.subscribe(b"")
            await sock.connect(endpoint)
            recv = sock.recv
            for _ in range(WARMUP):
                await recv()
            start = _cpu()
            for _ in range(count):
                await recv()
            return _cpu() - start

    return anyio.run(run, backend=backend)


def measure(case: str, count: int, size: int) -> float:
    """CPU µs per message at one SUB of kind ``case``."""
    ctx = multiprocessing.get_context("spawn")
    endpoints = ctx.Queue()
    pub = ctx.Process(target=_publisher, args=(endpoints, WARMUP + count, size))
    pub.start()
    try:
        endpoint = endpoints.get(timeout=60)
        spent = _pyzmq_sub(endpoint, count) if case == "pyzmq" else _zmtp_sub(endpoint, count, case)
    finally:
        pub.terminate()
        pub.join(10)
    return spent / count * 1e6


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--messages", type=int, default=300_000)
    ap.add_argument("--size", type=int, default=64)
    ap.add_argument("--cycles", type=int, default=2)
    args = ap.parse_args(argv)
    results: dict[str, list[float]] = {case: [] for case in CASES}
    for cycle in range(args.cycles):
        order = CASES if cycle % 2 == 0 else CASES[::-1]
        for case in order:
            value = measure(case, args.messages, args.size)
            results[case].append(value)
            print(f"cycle {cycle + 1}: {case}: {value:.3f} CPU us/msg", file=sys.stderr)
    pyzmq = statistics.median(results["pyzmq"])
    print(f"\nOne SUB fed by a libzmq XPUB (nodrop), {args.size} B, {args.messages} messages\n")
    print("| subscriber | CPU µs/msg (median) | cycles | bound vs pyzmq sync, free publishers |")
    print("|---|---:|---|---:|")
    for case in CASES:
        med = statistics.median(results[case])
        cycles = ", ".join(f"{v:.3f}" for v in results[case])
        name = "pyzmq sync" if case == "pyzmq" else f"zmtp {case}"
        print(f"| {name} | {med:.3f} | {cycles} | {pyzmq / med:.2f}x |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
