"""Where a QoS message's CPU goes: the hot path's stages in one process, and each end's CPU.

Two measurements behind docs/performance.md ("QoS levels"), in CPU time (not wall time), so
that a machine loaded by other work moves them little:

* ``stages``: a :class:`zmtp_qos.runtime.QoSRuntime` sender and receiver on stub pipes, no I/O:
  per batch of 256 messages, ``register`` (each), ``before_send_batch``, the receiver's
  ``on_receive_batch`` (digest + ACK frame), the ACK frames through the frame decoder,
  ``on_command_batch`` (settle), and at level 2 the receiver's CLR run. CPU µs per message.
* ``ends``: PUSH and PULL in two processes over tcp; each reports its user and system CPU per
  message over the timed run (``os.times``: 10 ms resolution, so use 50 000+ messages).

    python benchmarks/qos_costs.py stages --levels 1,2
    python benchmarks/qos_costs.py ends --backend asyncio --count 100000 --levels=-1,1,2,3

Level -1 is a plain ``zmtp.Socket`` (ends only). ``--no-gc`` runs ``ends`` with the cyclic
garbage collector disabled in both processes (what the collector costs per message).
"""

from __future__ import annotations

import argparse
import gc
import itertools
import os
import struct
import subprocess
import sys
import time
from typing import Any

BATCH = 256


class _StubStream:
    """Where a stub pipe's ``send_command_frames`` goes (the connection's output)."""

    def __init__(self) -> None:
        self.out: list[bytes] = []

    def send_command_frames(self, frames: list[bytes]) -> None:
        self.out.append(b"".join(frames))


def _runtime(level: int, kind: str) -> tuple[Any, Any]:
    from zmtp.engine.pipe import Pipe
    from zmtp.engine.queue import MessageQueue
    from zmtp_qos.config import QoSConfig
    from zmtp_qos.digest import digest_x
    from zmtp_qos.results import Delivered
    from zmtp_qos.runtime import PeerState, QoSRuntime

    runtime = QoSRuntime(
        level,
        QoSConfig(),
        kind,
        send_hwm=10**9,
        recv_hwm=10**6,
        identity=b"me",
        on_dead_letter=lambda letter, receipt: None,
        wake_senders=lambda: None,
    )
    pipe = Pipe("tcp://stub", MessageQueue(10**9), MessageQueue(10**9), False)
    state = PeerState(b"peer" if level >= 2 else None, "x", digest_x)
    state.key = pipe if level == 1 else state.anchor
    state.delivered = Delivered("peer")
    pipe.extension_state = state
    pipe.stream = _StubStream()  # type: ignore[assignment]
    pipe.command_sink = lambda name, data: None
    return runtime, pipe


def stages(level: int, rounds: int) -> dict[str, float]:
    from zmtp.protocol.frames import FrameDecoder

    body = os.urandom(56)
    pack = struct.Struct("<Q").pack
    sender, spipe = _runtime(level, "PUSH")
    receiver, rpipe = _runtime(level, "PULL")
    names = ["register", "before_send_batch", "receiver ACKs", "decode ACKs", "settle", "CLRs"]
    totals = dict.fromkeys(names, 0.0)
    acks, clrs = FrameDecoder(-1, 65536), FrameDecoder(-1, 65536)
    acks.fast_commands = clrs.fast_commands = True  # as Connection.batch_commands sets it
    acks.set_command_runs(dict(sender.command_runs()))  # and Connection.set_command_runs
    clrs.set_command_runs(dict(receiver.command_runs()))
    counter = itertools.count()
    clock = time.process_time
    for _ in range(rounds):
        messages = [[pack(next(counter)) + body] for _ in range(BATCH)]
        t0 = clock()
        for message in messages:
            sender.register(message)
        t1 = clock()
        sender.before_send_batch(spipe, messages)
        t2 = clock()
        rpipe.stream.out.clear()
        receiver.on_receive_batch(rpipe, messages)
        t3 = clock()
        items = acks.feed(b"".join(rpipe.stream.out))
        t4 = clock()
        spipe.stream.out.clear()
        sender.on_command_batch(spipe, items)
        t5 = clock()
        if level >= 2:
            receiver.on_command_batch(rpipe, clrs.feed(b"".join(spipe.stream.out)))
        t6 = clock()
        if sender.in_flight:
            raise AssertionError(f"{sender.in_flight} messages left unsettled")
        for name, spent in zip(
            names, (t1 - t0, t2 - t1, t3 - t2, t4 - t3, t5 - t4, t6 - t5), strict=True
        ):
            totals[name] += spent
    n = BATCH * rounds
    return {name: spent / n * 1e6 for name, spent in totals.items()}


def _socket(level: int, kind: str, linger: float = 0) -> Any:
    import zmtp
    import zmtp_qos

    opts: dict[str, Any] = {"send_hwm": 1000, "recv_hwm": 1000, "linger": linger}
    return zmtp.Socket(kind, **opts) if level < 0 else zmtp_qos.Socket(kind, qos=level, **opts)


def _cpu(before: Any, after: Any, n: int) -> str:
    user = (after.user - before.user) / n * 1e6
    system = (after.system - before.system) / n * 1e6
    return f"user {user:.2f} sys {system:.2f}"


async def _receiver(level: int, count: int) -> None:
    import anyio

    async with _socket(level, "PULL") as pull:
        print(await pull.bind("tcp://127.0.0.1:*"), flush=True)
        recv = pull.recv
        for n in (count // 5, count):  # warm-up, then the timed run
            before = os.times()
            for _ in range(n):
                message = await recv()
                if level == 3:
                    message.complete()
            after = os.times()
        print(_cpu(before, after, count), flush=True)
        await anyio.sleep(0.5)  # let the last acknowledgements go out


async def _sender(level: int, count: int, endpoint: str) -> None:
    import anyio

    body = os.urandom(56)
    pack = struct.Struct("<Q").pack
    counter = itertools.count()
    async with _socket(level, "PUSH", linger=10) as push:  # a plain PUSH flushes at close
        await push.connect(endpoint)
        runtime = getattr(push, "runtime", None)
        send = push.send
        for n in (count // 5, count):
            before = os.times()
            for _ in range(n):
                await send(pack(next(counter)) + body)
            while runtime is not None and runtime.in_flight:
                await anyio.sleep(0.0005)
            after = os.times()
        print(_cpu(before, after, count), flush=True)


def ends(backend: str, level: int, count: int, no_gc: bool) -> str:
    me = [sys.executable, __file__]
    flags = ["--no-gc"] if no_gc else []
    common = ["--backend", backend, "--count", str(count), f"--levels={level}", *flags]
    receiver = subprocess.Popen([*me, "_recv", *common], stdout=subprocess.PIPE, text=True)
    assert receiver.stdout is not None
    endpoint = receiver.stdout.readline().strip()
    sender = subprocess.Popen(
        [*me, "_send", *common, "--endpoint", endpoint], stdout=subprocess.PIPE, text=True
    )
    try:
        sent, _ = sender.communicate(timeout=600)
    finally:
        sender.kill()
    try:
        received, _ = receiver.communicate(timeout=60)
    finally:
        receiver.kill()
    return f"sender {sent.strip()} | receiver {received.strip()}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("what", choices=["stages", "ends", "_recv", "_send"])
    ap.add_argument("--levels", default="1,2")
    ap.add_argument("--rounds", type=int, default=400, help="stages: batches of 256")
    ap.add_argument("--backend", default="asyncio")
    ap.add_argument("--count", type=int, default=100_000)
    ap.add_argument("--no-gc", action="store_true")
    ap.add_argument("--endpoint", default="")
    args = ap.parse_args()
    levels = [int(x) for x in args.levels.split(",")]
    if args.what in ("_recv", "_send"):
        import anyio

        if args.no_gc:
            gc.disable()
        if args.what == "_recv":
            anyio.run(_receiver, levels[0], args.count, backend=args.backend)
        else:
            anyio.run(_sender, levels[0], args.count, args.endpoint, backend=args.backend)
        return
    for level in levels:
        if args.what == "stages":
            costs = stages(level, args.rounds)
            row = ", ".join(f"{name} {cost:.2f}" for name, cost in costs.items())
            print(f"level {level}: {row}; total {sum(costs.values()):.2f} CPU us/msg")
        else:
            label = "plain" if level < 0 else f"level {level}"
            result = ends(args.backend, level, args.count, args.no_gc)
            print(f"{args.backend} {label}: {result} (CPU us/msg)", flush=True)


if __name__ == "__main__":
    main()
