"""Where does a ping-pong round trip spend its time? An analysis tool, not a benchmark.

Runs an echo server and a client in two spawned processes (zmtp REQ/REP or PAIR, or the raw
anyio TCP echo of bench_latency.py), and timestamps, with ``perf_counter_ns`` (CLOCK_MONOTONIC
on Linux, so comparable across the two processes), in each of them:

* ``app_tx`` / ``app_rx``: the application calls ``send`` / gets its message from ``recv``;
* ``tx0`` / ``tx1``: bytes start / finish leaving (zmtp: around the writer task's
  ``stream.send`` or the eager ``_write_now``; raw: around ``stream.send``);
* ``rx``: ``stream.receive`` returned data (zmtp: in the connection's reader task);
* ``parsed`` / ``handled`` (zmtp): the sans-IO decode of that data, then the delivery of its
  events to the socket (routing, inbox, waking the application).

It prints the median of every segment along the critical path (client ``c_``, server ``s_``)
and the event-loop passes per round trip (asyncio ``_run_once`` calls, trio I/O waits), trio
task steps and sleeps (voluntary context switches, ``getrusage``: the process waited in the
kernel and had to be woken), per process. Wrapping costs ~1 us per mark, so read the
*structure* (which hops exist, how many loop passes) more than the absolute numbers;
``bench_latency.py`` gives those.

The zmtp marks patch engine internals (``StreamConnection.__init__`` and ``_write_now``,
``Connection.receive_data``, ``StreamConnection._process_input``): if they change, this tool
says so instead of measuring something else.

usage: latency_breakdown.py [--backend asyncio|trio] [--kind reqrep|pair|raw] [--n N]
                            [--pin none|split|same] [--answer-spin SECONDS]

With ``strace -f -c -e trace=recvfrom,sendto,write,epoll_wait,epoll_ctl`` in front, the
system calls per round trip and side are the counts / (2 x (N + warm-up)).
"""

from __future__ import annotations

import argparse
import itertools
import os
import resource
import statistics
import sys
from array import array
from pathlib import Path
from time import perf_counter_ns
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import PIN_CHOICES, WorkerGroup, check_pin, pin_cpu

WARMUP = 2000
Params = dict[str, Any]


class _Recorder:
    def __init__(self) -> None:
        self.events: dict[str, array[int]] = {}
        self.on = False
        self.counts = {"loop_passes": 0, "task_steps": 0, "sleeps": 0}
        self._nvcsw = 0

    def mark(self, name: str) -> None:
        if self.on:
            a = self.events.get(name)
            if a is None:
                a = self.events[name] = array("q")
            a.append(perf_counter_ns())

    def reset(self) -> None:
        self.events.clear()
        for k in self.counts:
            self.counts[k] = 0
        self._nvcsw = resource.getrusage(resource.RUSAGE_SELF).ru_nvcsw

    def result(self) -> Params:
        # Voluntary context switches: the process went to sleep (in epoll_wait, waiting for
        # the peer), which costs a wake-up on the peer's send (see the answer spin in
        # zmtp/engine/stream.py).
        self.counts["sleeps"] = resource.getrusage(resource.RUSAGE_SELF).ru_nvcsw - self._nvcsw
        return {
            "events": {k: v.tobytes() for k, v in self.events.items()},
            "counts": dict(self.counts),
        }


REC = _Recorder()


def _count_loop_passes(backend: str) -> None:
    """asyncio: count BaseEventLoop._run_once; trio: an instrument counting I/O waits and
    task steps (installed from inside the run)."""
    if backend == "asyncio":
        import asyncio.base_events as base_events

        original = base_events.BaseEventLoop._run_once

        def _run_once(self: Any) -> None:
            if REC.on:
                REC.counts["loop_passes"] += 1
            original(self)

        base_events.BaseEventLoop._run_once = _run_once  # type: ignore[method-assign]


def _trio_instrument() -> None:
    import trio

    class Counter(trio.abc.Instrument):
        def before_io_wait(self, timeout: float) -> None:
            if REC.on:
                REC.counts["loop_passes"] += 1

        def before_task_step(self, task: Any) -> None:
            if REC.on:
                REC.counts["task_steps"] += 1

    trio.lowlevel.add_instrument(Counter())


class _TimedStream:
    """Wraps an anyio ByteStream: marks ``rx`` after receive(), ``tx0``/``tx1`` around send()."""

    def __init__(self, inner: Any, prefix: str) -> None:
        self._inner = inner
        self._prefix = prefix

    async def receive(self, max_bytes: int = 65536) -> bytes:
        data: bytes = await self._inner.receive(max_bytes)
        REC.mark(self._prefix + "rx")
        return data

    async def send(self, item: bytes) -> None:
        REC.mark(self._prefix + "tx0")
        await self._inner.send(item)
        REC.mark(self._prefix + "tx1")

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


def _patch_engine(prefix: str) -> None:
    from zmtp.engine import stream as st
    from zmtp.protocol import connection as pc

    conn_cls = st.StreamConnection
    for name in ("__init__", "_process_input", "_write_now"):
        if not hasattr(conn_cls, name):
            raise SystemExit(f"StreamConnection.{name} is gone: update latency_breakdown.py")
    init, process, write_now = conn_cls.__init__, conn_cls._process_input, conn_cls._write_now
    receive_data = pc.Connection.receive_data

    def patched_init(self: Any, socket: Any, stream: Any, *args: Any, **kwargs: Any) -> None:
        init(self, socket, _TimedStream(stream, prefix), *args, **kwargs)

    # trio's lent reads (and the answer spin) read the stream's socket itself
    # (StreamConnection.lent_read, through stream._recv_ready) when the stream is a
    # SocketStream: the wrapper passes for one (its extras are the inner stream's), and a raw
    # read that brings bytes marks rx as the wrapper's receive does.
    from anyio.abc import SocketStream

    SocketStream.register(_TimedStream)
    recv_ready = getattr(st, "_recv_ready", None)
    if recv_ready is not None:

        def patched_recv_ready(sock: Any, size: int) -> bytes | None:
            data: bytes | None = recv_ready(sock, size)
            if data is not None:
                REC.mark(prefix + "rx")
            return data

        st._recv_ready = patched_recv_ready

    def patched_receive_data(self: Any, data: bytes, now: float = 0.0) -> Any:
        events = receive_data(self, data, now)
        REC.mark(prefix + "parsed")
        return events

    # "handled" once a read's events are applied (a data-only read is delivered in
    # _process_input itself, not by _handle_events).
    def patched_process(self: Any, data: bytes) -> bool | None:
        delivered: bool | None = process(self, data)
        REC.mark(prefix + "handled")
        return delivered

    def patched_write_now(self: Any) -> bool:
        REC.mark(prefix + "tx0")
        done: bool = write_now(self)
        REC.mark(prefix + "tx1")
        return done

    conn_cls.__init__ = patched_init  # type: ignore[method-assign]
    conn_cls._process_input = patched_process  # type: ignore[method-assign]
    conn_cls._write_now = patched_write_now  # type: ignore[method-assign]
    pc.Connection.receive_data = patched_receive_data  # type: ignore[method-assign]


_TYPES = {"reqrep": ("REP", "REQ"), "pair": ("PAIR", "PAIR")}


def _zmtp_options(p: Params) -> Params:
    spin = p.get("answer_spin")
    return {} if spin is None else {"answer_spin": spin}


# --------------------------------------------------------------------------- roles


def server(ctrl: Any, p: Params) -> None:
    import anyio

    _count_loop_passes(p["backend"])
    anyio.run(_server, ctrl, p, backend=p["backend"])


async def _server(ctrl: Any, p: Params) -> None:
    import anyio

    if p["backend"] == "trio":
        _trio_instrument()
    total = p["n"] + WARMUP
    if p["kind"] == "raw":
        from anyio.abc import SocketAttribute

        multi = await anyio.create_tcp_listener(local_host="127.0.0.1")
        listener = multi.listeners[0]
        ctrl.send(("ready", f"tcp://127.0.0.1:{listener.extra(SocketAttribute.local_port)}"))
        stream = _TimedStream(await listener.accept(), "s_")
        REC.on = True
        size = p["size"]
        buf = b""
        with anyio.fail_after(60 + total * 0.01):
            for i in range(total):
                if i == WARMUP:
                    REC.reset()
                while len(buf) < size:
                    buf += await stream.receive(65536)
                await stream.send(buf[:size])
                buf = buf[size:]
        REC.on = False
        await stream.aclose()
        await multi.aclose()
    else:
        _patch_engine("s_")
        import zmtp

        async with zmtp.Socket(_TYPES[p["kind"]][0], **_zmtp_options(p)) as sock:
            ctrl.send(("ready", await sock.bind("tcp://127.0.0.1:*")))
            REC.on = True
            recv, send, mark = sock.recv, sock.send, REC.mark
            with anyio.fail_after(60 + total * 0.01):
                for i in range(total):
                    if i == WARMUP:
                        REC.reset()
                    message = await recv()
                    mark("s_app_rx")
                    await send(message)
            REC.on = False
            await sock.close(linger=1)
    ctrl.send(("result", REC.result()))


def client(ctrl: Any, p: Params) -> None:
    import anyio

    _count_loop_passes(p["backend"])
    anyio.run(_client, ctrl, p, backend=p["backend"])


async def _client(ctrl: Any, p: Params) -> None:
    import anyio

    if p["backend"] == "trio":
        _trio_instrument()
    payload = os.urandom(p["size"])
    mark = REC.mark
    total = p["n"] + WARMUP
    if p["kind"] == "raw":
        host, port = p["endpoint"].removeprefix("tcp://").rsplit(":", 1)
        stream = _TimedStream(await anyio.connect_tcp(host, int(port)), "c_")
        REC.on = True
        for i in range(total):
            if i == WARMUP:
                REC.reset()
            mark("c_app_tx")
            await stream.send(payload)
            got = 0
            while got < len(payload):
                got += len(await stream.receive(65536))
            mark("c_app_rx")
        REC.on = False
        await stream.aclose()
    else:
        _patch_engine("c_")
        import zmtp

        async with zmtp.Socket(_TYPES[p["kind"]][1], **_zmtp_options(p)) as sock:
            await sock.connect(p["endpoint"])
            recv, send = sock.recv, sock.send
            REC.on = True
            for i in range(total):
                if i == WARMUP:
                    REC.reset()
                mark("c_app_tx")
                await send(payload)
                await recv()
                mark("c_app_rx")
            REC.on = False
            await sock.close(linger=1)
    ctrl.send(("result", REC.result()))


# --------------------------------------------------------------------------- report

RAW_PATH = ["c_app_tx", "c_tx0", "c_tx1", "s_rx", "s_tx0", "s_tx1", "c_rx", "c_app_rx"]
ZMTP_PATH = [
    "c_app_tx",
    "c_tx0",
    "c_tx1",
    "s_rx",
    "s_parsed",
    "s_handled",
    "s_app_rx",
    "s_tx0",
    "s_tx1",
    "c_rx",
    "c_parsed",
    "c_handled",
    "c_app_rx",
]


def _events(raw: Params) -> dict[str, list[int]]:
    out = {}
    for name, data in raw["events"].items():
        a = array("q")
        a.frombytes(data)
        out[name] = a.tolist()
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--backend", choices=("asyncio", "trio"), default="asyncio")
    ap.add_argument("--kind", choices=("reqrep", "pair", "raw"), default="reqrep")
    ap.add_argument("--n", type=int, default=10_000, help="timed round trips (after 2000)")
    ap.add_argument("--size", type=int, default=64)
    ap.add_argument("--pin", choices=PIN_CHOICES, default="none")
    ap.add_argument(
        "--answer-spin", type=float, default=None, help="zmtp answer_spin option (seconds)"
    )
    ap.add_argument("--timeout", type=float, default=120.0)
    args = ap.parse_args(argv)
    pin_error = check_pin(args.pin)
    if pin_error:
        ap.error(pin_error)
    p = {
        "backend": args.backend,
        "kind": args.kind,
        "size": args.size,
        "n": args.n,
        "answer_spin": args.answer_spin,
    }
    with WorkerGroup(timeout=args.timeout) as group:
        srv = group.start("server", server, p, cpu=pin_cpu(args.pin, 0))
        _, endpoint = group.expect(srv, "ready")
        cli = group.start("client", client, {**p, "endpoint": endpoint}, cpu=pin_cpu(args.pin, 1))
        _, cres = group.expect(cli, "result", args.timeout)
        _, sres = group.expect(srv, "result", args.timeout)
    ev = _events(cres) | _events(sres)
    n = len(ev["c_app_tx"])
    path = RAW_PATH if args.kind == "raw" else ZMTP_PATH
    for name in path:
        if abs(len(ev.get(name, ())) - n) > 1:
            print(f"warning: {len(ev.get(name, ()))} {name!r} marks for {n} round trips")

    def seg(a: str, b: str) -> float:
        # Aligned from the end: the last round trip is the last mark of every key, whereas
        # a process may have marked the first timed round trip just before its reset.
        m = min(len(ev[a]), len(ev[b]))
        xa, xb = ev[a][-m:], ev[b][-m:]
        return statistics.median(y - x for x, y in zip(xa, xb, strict=True)) / 1000

    print(
        f"{args.kind} on {args.backend}, {n} round trips of {args.size} B, pin {args.pin}: "
        f"round trip p50 {seg('c_app_tx', 'c_app_rx'):.1f} us"
    )
    for a, b in itertools.pairwise(path):
        print(f"  {a:>9} -> {b:<9} {seg(a, b):7.1f} us")
    for who, res in (("client", cres), ("server", sres)):
        c = res["counts"]
        steps = f", {c['task_steps'] / n:.2f} task steps" if args.backend == "trio" else ""
        print(
            f"  {who}: {c['loop_passes'] / n:.2f} event-loop passes{steps}, "
            f"{c['sleeps'] / n:.2f} sleeps per round trip"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
