"""The receive path's stage costs beside the floor of any Python receive loop, in one process.

What docs/performance.md's 64 B receive-floor analysis cites: CPU ns per message of

* ``recv``: ``await sock.recv()`` on a zmtp PULL whose inbox already holds every message;
* ``try_recv``: the routing strategy's fair-queue pop alone, on the same inbox;
* ``decode``: ``FrameDecoder.feed`` of a 256 KiB read of 64 B frames;

and the floors, the least a Python loop of that shape can cost:

* ``floor recv``: an ``async def`` returning ``deque.popleft()[0]``, awaited in a loop;
* ``floor decode``: a loop that slices each frame's body into a one-element list.

Rates on a shared machine move with its load: compare the rows of one run.

    .venv/bin/python benchmarks/recv_floor.py --backend asyncio
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import deque


class _FloorSocket:
    def __init__(self, count: int, size: int) -> None:
        self.items = deque([b"x" * size] for _ in range(count))

    async def recv(self) -> bytes:
        return self.items.popleft()[0]


def _floor_decode(buf: bytes, out: list[list[bytes]]) -> None:
    append = out.append
    pos = 0
    end = len(buf)
    while pos < end:
        stop = pos + 2 + buf[pos + 1]
        append([buf[pos + 2 : stop]])
        pos = stop


async def _measure(args: argparse.Namespace) -> dict[str, float]:
    import anyio

    import zmtp
    from zmtp.protocol.frames import FrameDecoder, encode_messages

    count, size = args.messages, args.size
    results: dict[str, float] = {}
    async with (
        zmtp.Socket(zmtp.PULL, recv_hwm=0) as pull,
        zmtp.Socket(zmtp.PUSH, send_hwm=0) as push,
    ):
        await push.connect(await pull.bind("tcp://127.0.0.1:*"))
        payload = b"x" * size

        async def fill() -> None:
            for _ in range(count):
                await push.send(payload)
            with anyio.fail_after(60):
                while len(next(iter(pull.engine.pipes)).inbox) < count:
                    await anyio.sleep(0.05)

        await fill()
        try_recv = pull.engine.strategy.try_recv
        t0 = time.process_time()
        for _ in range(count):
            try_recv()
        results["try_recv"] = time.process_time() - t0
        await fill()
        recv = pull.recv
        t0 = time.process_time()
        for _ in range(count):
            await recv()
        results["recv"] = time.process_time() - t0
    floor = _FloorSocket(count, size).recv
    t0 = time.process_time()
    for _ in range(count):
        await floor()
    results["floor recv"] = time.process_time() - t0
    frames = (256 * 1024) // (size + 2)
    data = encode_messages([[payload]] * frames)
    reads = max(1, count // frames)
    decoder = FrameDecoder()
    t0 = time.process_time()
    for _ in range(reads):
        decoder.feed(data)
    results["decode"] = (time.process_time() - t0) * count / (reads * frames)
    t0 = time.process_time()
    for _ in range(reads):
        _floor_decode(data, [])
    results["floor decode"] = (time.process_time() - t0) * count / (reads * frames)
    return {k: v / count * 1e9 for k, v in results.items()}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--backend", choices=("asyncio", "trio"), default="asyncio")
    ap.add_argument("--messages", type=int, default=200_000)
    ap.add_argument("--size", type=int, default=64, help="bytes per message (at most 255)")
    args = ap.parse_args(argv)
    if not 1 <= args.size <= 255:
        ap.error("--size must be 1..255 (short frames)")
    import anyio

    results = anyio.run(_measure, args, backend=args.backend)
    print(f"\n{args.size} B, {args.backend}, CPU ns per message\n")
    print("| stage | ns/msg |")
    print("|---|---:|")
    for name, value in results.items():
        print(f"| {name} | {value:,.0f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
