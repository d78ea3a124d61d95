"""What one connection costs a listening zmtp socket (docs/security.md): memory per idle
handshaken connection and per half-open one (connected, greeting never sent), and how long
a departing subscriber with many topics blocks the event loop.

    .venv/bin/python benchmarks/connection_cost.py [--connections 1000] [--topics 200000]

The victim runs in a child process (one per backend and case) and reports its RSS and the
Python heap (tracemalloc) before and after the connections; the raw peers are plain sockets
in this process.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
GREETING = b"\xff" + bytes(8) + b"\x7f\x03\x01NULL" + bytes(16) + b"\x00" + bytes(31)


def ready(socket_type: bytes) -> bytes:
    body = b"\x05READY" + b"\x0bSocket-Type" + len(socket_type).to_bytes(4, "big") + socket_type
    return bytes((0x04, len(body))) + body


def rss_kib() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") // 1024


def victim(backend: str, kind: str, topics: int) -> None:
    """Child: bind, print the endpoint, report memory or the longest loop stall on request."""
    import tracemalloc

    import anyio

    import zmtp

    async def main() -> None:
        socket_type = zmtp.PUB if kind == "topics" else zmtp.PULL
        options = {"max_subscriptions": 0} if kind == "topics" else {}
        async with zmtp.Socket(socket_type, **options) as sock:
            endpoint = await sock.bind("tcp://127.0.0.1:*")
            if kind != "topics":
                tracemalloc.start()
            stall = 0.0

            async def ticker() -> None:
                nonlocal stall
                last = time.perf_counter()
                while True:
                    await anyio.sleep(0.001)
                    now = time.perf_counter()
                    stall = max(stall, now - last)
                    last = now

            async with anyio.create_task_group() as tg:
                tg.start_soon(ticker)
                print(json.dumps({"endpoint": endpoint}), flush=True)
                stdin = anyio.wrap_file(sys.stdin)
                async for line in stdin:
                    command = line.strip()
                    if command == "measure":
                        await anyio.sleep(0.5)
                        heap, _ = tracemalloc.get_traced_memory()
                        print(json.dumps({"rss_kib": rss_kib(), "heap": heap}), flush=True)
                    elif command == "count":
                        count = getattr(sock.engine.strategy, "topic_count", 0)
                        print(json.dumps({"count": count}), flush=True)
                    elif command == "reset-stall":
                        stall = 0.0
                        print(json.dumps({}), flush=True)
                    elif command == "stall":
                        await anyio.sleep(0.5)
                        print(json.dumps({"stall": stall}), flush=True)
                    else:
                        break
                tg.cancel_scope.cancel()

    anyio.run(main, backend=backend)


class Victim:
    def __init__(self, backend: str, kind: str, topics: int) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, __file__, "--victim", backend, kind, str(topics)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            cwd=ROOT,
            env=dict(os.environ, PYTHONPATH=str(ROOT)),
        )
        self.endpoint = self.read()["endpoint"]

    def read(self) -> dict[str, object]:
        assert self.proc.stdout is not None
        line: dict[str, object] = json.loads(self.proc.stdout.readline())
        return line

    def ask(self, command: str) -> dict[str, object]:
        assert self.proc.stdin is not None
        self.proc.stdin.write(command + "\n")
        self.proc.stdin.flush()
        return self.read()

    def close(self) -> None:
        self.ask_quit()
        self.proc.wait(30)

    def ask_quit(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write("quit\n")
        self.proc.stdin.flush()


def connect(endpoint: str) -> socket.socket:
    host, port = endpoint.removeprefix("tcp://").rsplit(":", 1)
    return socket.create_connection((host, int(port)))


def per_connection(backend: str, kind: str, n: int) -> tuple[float, float]:
    v = Victim(backend, kind, 0)
    before = v.ask("measure")
    peers = [connect(v.endpoint) for _ in range(n)]
    if kind == "idle":
        for p in peers:
            p.sendall(GREETING + ready(b"PUSH"))
    after = v.ask("measure")
    for p in peers:
        p.close()
    v.close()
    rss = (int(after["rss_kib"]) - int(before["rss_kib"])) / n  # type: ignore[call-overload]
    heap = (int(after["heap"]) - int(before["heap"])) / n / 1024  # type: ignore[call-overload]
    return rss, heap


def subscriber_stalls(backend: str, topics: int) -> tuple[float, float]:
    """The longest loop stall while ``topics`` subscriptions arrive, and when their peer goes."""
    v = Victim(backend, "topics", topics)
    peer = connect(v.endpoint)
    peer.sendall(GREETING + ready(b"SUB"))
    frames = []
    for i in range(topics):
        body = b"\x09SUBSCRIBE" + b"t%d" % i
        frames.append(bytes((0x04, len(body))) + body)
    v.ask("reset-stall")
    peer.sendall(b"".join(frames))
    while v.ask("count")["count"] != topics:
        time.sleep(0.1)
    arrival = float(v.ask("stall")["stall"])  # type: ignore[arg-type]
    v.ask("reset-stall")
    peer.close()
    while v.ask("count")["count"] != 0:
        time.sleep(0.1)
    departure = float(v.ask("stall")["stall"])  # type: ignore[arg-type]
    v.close()
    return arrival, departure


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--connections", type=int, default=1000)
    parser.add_argument("--topics", type=int, default=200_000)
    args = parser.parse_args()
    print(
        "| backend | idle handshaken (RSS / heap per connection) | half-open | longest loop"
        f" stall: {args.topics} topics arrive | their peer leaves |"
    )
    print("|---|---|---|---|---|")
    for backend in ("asyncio", "trio"):
        idle = per_connection(backend, "idle", args.connections)
        half = per_connection(backend, "half-open", args.connections)
        arrival, departure = subscriber_stalls(backend, args.topics)
        print(
            f"| {backend} | {idle[0]:.1f} KiB / {idle[1]:.1f} KiB | "
            f"{half[0]:.1f} KiB / {half[1]:.1f} KiB | {arrival * 1000:.0f} ms | "
            f"{departure * 1000:.0f} ms |"
        )


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--victim":
        victim(sys.argv[2], sys.argv[3], int(sys.argv[4]))
    else:
        main()
