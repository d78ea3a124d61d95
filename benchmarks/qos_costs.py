"""Where a QoS message's CPU goes: the hot path's stages in one process, and each end's CPU.

Two measurements behind docs/performance.md ("QoS levels"), in CPU time (not wall time), so
that a machine loaded by other work moves them little:

* ``stages``: a :class:`zmtp_qos.runtime.QoSRuntime` sender and receiver on stub pipes, no I/O:
  per batch of 256 messages, ``register`` (each), ``before_send_batch``, the receiver's
  ``on_receive_batch`` (digest + ACK frame), the ACK frames through the frame decoder,
  ``on_command_batch`` (settle), and at level 2 the receiver's CLR run. CPU µs per message.
* ``ends``: PUSH and PULL in two processes over tcp; each reports, per message over the timed
  run: user and system CPU (``getrusage``), wall time, the cyclic GC's CPU time and its
  collections per generation (``gc.callbacks``), voluntary and involuntary context switches
  (``/proc/self/status``: a voluntary one is a sleep waiting on the other side), on asyncio the
  selector waits and the time spent in them (the idle share), and at the sender the mean
  number of messages in flight. ``--perf`` adds each process's syscalls per message
  (``perf stat`` on the syscall tracepoints; whole process life, warm-up included).

    python benchmarks/qos_costs.py stages --levels 1,2
    python benchmarks/qos_costs.py ends --backend asyncio --count 100000 --levels=-1,1,2,3 --perf

Level -1 is a plain ``zmtp.Socket`` (ends only). ``--no-gc`` runs ``ends`` with the cyclic
garbage collector disabled in both processes (what the collector costs per message).
"""

from __future__ import annotations

import argparse
import gc
import itertools
import os
import resource
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


#: ``--gc-freeze``: ``gc.freeze()`` once the socket is up (zmtp is imported inside the run).
_freeze_after_setup = [False]


def _setup_done() -> None:
    """What an application can do once started: move every object made so far (modules,
    the socket) to the permanent generation, which full collections then skip."""
    if _freeze_after_setup[0]:
        gc.freeze()


class _Probe:
    """One end's costs over the timed run, per message (see the module docstring)."""

    def __init__(self) -> None:
        self.start()
        gc.callbacks.append(self._on_gc)
        self._hook_selector()

    def _on_gc(self, phase: str, info: dict[str, int]) -> None:
        now = time.process_time()  # CPU: on a loaded machine the wall clock is the scheduler's
        generation = info["generation"]
        if phase == "start":
            self._gc_t = now
            self.collections[generation] += 1
        else:
            self.gc_by_gen[generation] += now - self._gc_t

    def _hook_selector(self) -> None:
        import asyncio

        try:
            selector = asyncio.get_running_loop()._selector  # type: ignore[attr-defined]
        except (RuntimeError, AttributeError):
            return  # trio: its waits show only in the context switches
        select = selector.select
        clock = time.perf_counter

        def timed_select(timeout: float | None = None) -> Any:
            self.waits += 1
            t0 = clock()
            try:
                return select(timeout)
            finally:
                self.wait_s += clock() - t0

        selector.select = timed_select

    @staticmethod
    def _switches() -> tuple[int, int]:
        values = {}
        with open("/proc/self/status") as f:
            for line in f:
                key, _, value = line.partition(":")
                if key.endswith("ctxt_switches"):
                    values[key] = int(value)
        return values["voluntary_ctxt_switches"], values["nonvoluntary_ctxt_switches"]

    def start(self) -> None:
        self._gc_t = self.wait_s = 0.0
        self.waits = 0
        self.collections = [0, 0, 0]
        self.gc_by_gen = [0.0, 0.0, 0.0]
        self._t0 = (resource.getrusage(resource.RUSAGE_SELF), time.perf_counter())
        self._csw0 = self._switches()

    def report(self, n: int) -> str:
        usage, wall = resource.getrusage(resource.RUSAGE_SELF), time.perf_counter()
        (vcsw, ivcsw), (vcsw0, ivcsw0) = self._switches(), self._csw0
        usage0, wall0 = self._t0
        us = 1e6 / n
        return (
            f"user {(usage.ru_utime - usage0.ru_utime) * us:.2f}"
            f" sys {(usage.ru_stime - usage0.ru_stime) * us:.2f}"
            f" wall {(wall - wall0) * us:.2f} gc {sum(self.gc_by_gen) * us:.2f}"
            f" (collections {'/'.join(map(str, self.collections))},"
            f" {'/'.join(f'{t * us:.2f}' for t in self.gc_by_gen)} by generation)"
            f" vcsw/msg {(vcsw - vcsw0) / n:.4f} ivcsw/msg {(ivcsw - ivcsw0) / n:.4f}"
            f" waits/msg {self.waits / n:.4f} waiting {self.wait_s * us:.2f}"
        )


async def _receiver(level: int, count: int) -> None:
    import anyio

    async with _socket(level, "PULL") as pull:
        print(await pull.bind("tcp://127.0.0.1:*"), flush=True)
        _setup_done()
        recv = pull.recv
        probe = _Probe()
        for n in (count // 5, count):  # warm-up, then the timed run
            probe.start()
            for _ in range(n):
                message = await recv()
                if level == 3:
                    message.complete()
        print(probe.report(count), flush=True)
        await anyio.sleep(0.5)  # let the last acknowledgements go out


async def _sender(level: int, count: int, endpoint: str, yield_every: int) -> None:
    import anyio
    from anyio.lowlevel import checkpoint

    body = os.urandom(56)
    pack = struct.Struct("<Q").pack
    counter = itertools.count()
    async with _socket(level, "PUSH", linger=10) as push:  # a plain PUSH flushes at close
        await push.connect(endpoint)
        _setup_done()
        runtime = getattr(push, "runtime", None)
        send = push.send
        probe = _Probe()
        for n in (count // 5, count):
            probe.start()
            in_flight = 0
            for i in range(n):
                await send(pack(next(counter)) + body)
                if runtime is not None and not i % 64:
                    in_flight += runtime.in_flight
                if yield_every and not i % yield_every:
                    await checkpoint()  # diagnostic: let the loop read ACKs sooner
            while runtime is not None and runtime.in_flight:
                await anyio.sleep(0.0005)
        print(probe.report(count), f"in-flight(mean) {in_flight * 64 / count:.0f}", flush=True)


#: Syscalls ``--perf`` counts (Linux tracepoints through ``perf stat``).
SYSCALLS = ("sendto", "sendmsg", "recvfrom", "recvmsg", "epoll_wait", "epoll_ctl", "write", "read")


def _perf_counts(path: str, n: int) -> str:
    """Per-message syscall counts of one process (its whole life, warm-up and startup
    included: n is the messages it handled, warm-up included)."""
    counts = []
    with open(path) as f:
        for line in f:
            fields = line.strip().split(",")
            if len(fields) > 2 and fields[2].startswith("syscalls:sys_enter_"):
                name = fields[2].removeprefix("syscalls:sys_enter_")
                if fields[0].isdigit() and int(fields[0]) > 0:
                    counts.append(f"{name} {int(fields[0]) / n:.4f}")
    return " ".join(counts)


def ends(
    backend: str,
    level: int,
    count: int,
    no_gc: bool,
    perf: bool = False,
    yield_every: int = 0,
    gc_freeze: bool = False,
) -> str:
    me = [sys.executable, __file__]
    flags = [
        *(["--no-gc"] if no_gc else []),
        *(["--gc-freeze"] if gc_freeze else []),
        f"--yield-every={yield_every}",
    ]
    common = ["--backend", backend, "--count", str(count), f"--levels={level}", *flags]
    events = ",".join(f"syscalls:sys_enter_{name}" for name in SYSCALLS)
    outs = [f"/tmp/qos_costs_perf_{os.getpid()}_{end}.csv" for end in ("recv", "send")]
    wrap = [[*("perf", "stat", "-x,", "-e", events, "-o", out)] if perf else [] for out in outs]
    receiver = subprocess.Popen(
        [*wrap[0], *me, "_recv", *common], stdout=subprocess.PIPE, text=True
    )
    assert receiver.stdout is not None
    endpoint = receiver.stdout.readline().strip()
    sender = subprocess.Popen(
        [*wrap[1], *me, "_send", *common, "--endpoint", endpoint],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        sent, _ = sender.communicate(timeout=600)
    finally:
        sender.kill()
    try:
        received, _ = receiver.communicate(timeout=60)
    finally:
        receiver.kill()
    result = f"\n  sender   {sent.strip()}\n  receiver {received.strip()}"
    if perf:
        n = count + count // 5
        result += f"\n  sender syscalls/msg   {_perf_counts(outs[1], n)}"
        result += f"\n  receiver syscalls/msg {_perf_counts(outs[0], n)}"
        for out in outs:
            os.unlink(out)
    return result


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("what", choices=["stages", "ends", "_recv", "_send"])
    ap.add_argument("--levels", default="1,2")
    ap.add_argument("--rounds", type=int, default=400, help="stages: batches of 256")
    ap.add_argument("--backend", default="asyncio")
    ap.add_argument("--count", type=int, default=100_000)
    ap.add_argument("--no-gc", action="store_true")
    ap.add_argument(
        "--gc-freeze", action="store_true", help="ends: gc.freeze() once the socket is up"
    )
    ap.add_argument("--perf", action="store_true", help="ends: syscall counts (perf stat)")
    ap.add_argument(
        "--yield-every",
        type=int,
        default=0,
        help="ends, diagnostic: the sender yields to the event loop every N sends",
    )
    ap.add_argument("--endpoint", default="")
    args = ap.parse_args()
    levels = [int(x) for x in args.levels.split(",")]
    if args.what in ("_recv", "_send"):
        import anyio

        if args.no_gc:
            gc.disable()
        _freeze_after_setup[0] = args.gc_freeze
        if args.what == "_recv":
            anyio.run(_receiver, levels[0], args.count, backend=args.backend)
        else:
            anyio.run(
                _sender,
                levels[0],
                args.count,
                args.endpoint,
                args.yield_every,
                backend=args.backend,
            )
        return
    for level in levels:
        if args.what == "stages":
            costs = stages(level, args.rounds)
            row = ", ".join(f"{name} {cost:.2f}" for name, cost in costs.items())
            print(f"level {level}: {row}; total {sum(costs.values()):.2f} CPU us/msg")
        else:
            label = "plain" if level < 0 else f"level {level}"
            result = ends(
                args.backend,
                level,
                args.count,
                args.no_gc,
                args.perf,
                args.yield_every,
                args.gc_freeze,
            )
            print(f"{args.backend} {label}: {result} (CPU us/msg)", flush=True)


if __name__ == "__main__":
    main()
