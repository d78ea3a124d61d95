"""The work one side of a 64 B ping-pong does per round trip, counted instead of timed.

Round-trip latency on a shared machine is wall time and moves with the load; what one side
*does* per round trip barely moves: its instructions (callgrind), its Python function calls
(cProfile's call counts), its system calls and its event-loop passes and task steps. This runs
one side, the *measured* process, against a native peer in a spawned process that is not traced
(callgrind follows no children):

* ``req`` / ``rep``: a zmtp REQ (or REP) against a pyzmq REP echo (or REQ client);
* ``raw-client`` / ``raw-server``: the raw anyio TCP ping-pong of ``bench_latency.py`` (the
  floor the latency target is set against) against a blocking-socket echo (or client).

Every count is ``(X(2M) - X(M)) / M`` over M round trips, so start-up, imports and handshakes
cancel out. Modes:

* ``callgrind`` (default): instructions per round trip, trees interleaved as in
  ``callgrind_receiver.py``;
* ``counts``: event-loop passes (asyncio ``_run_once`` calls, trio I/O waits), trio task steps
  and, with ``--calls``, the Python functions called per round trip (cProfile), this tree only;
* run the child under ``strace -f -c`` yourself for system calls (see ``--print-child``).

``--peer-delay`` makes the peer answer late, so every read of ours waits in the event loop:
the path of a round trip between two zmtp processes, which a native peer's answer, there
before we read, does not take.

    .venv/bin/python benchmarks/callgrind_roundtrip.py --side req --backend trio /tmp/before .
    .venv/bin/python benchmarks/callgrind_roundtrip.py --mode counts --side rep --calls
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import shutil
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _callgrind import per_message_by_tree, print_tree_table

HERE = Path(__file__).resolve()
SIDES = ("req", "rep", "raw-client", "raw-server")
WARMUP = 200

# --------------------------------------------------------------------------- native peers


def _pyzmq_rep(endpoint: str, total: int, delay: float = 0.0) -> None:
    import time

    import zmq

    ctx = zmq.Context()
    sock = ctx.socket(zmq.REP)
    sock.connect(endpoint)
    for _ in range(total):
        request = sock.recv()
        if delay:
            time.sleep(delay)
        sock.send(request)
    sock.close(linger=-1)
    ctx.term()


def _pyzmq_req(endpoint: str, total: int, size: int, delay: float = 0.0) -> None:
    import time

    import zmq

    ctx = zmq.Context()
    sock = ctx.socket(zmq.REQ)
    sock.connect(endpoint)
    payload = b"q" * size
    for _ in range(total):
        if delay:
            time.sleep(delay)
        sock.send(payload)
        sock.recv()
    sock.close(linger=-1)
    ctx.term()


def _raw_echo(port: int, total: int, size: int, delay: float = 0.0) -> None:
    import time

    with socket.create_connection(("127.0.0.1", port)) as s:
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        for _ in range(total):
            got = b""
            while len(got) < size:
                got += s.recv(65536)
            if delay:
                time.sleep(delay)
            s.sendall(got)


def _raw_client(port: int, total: int, size: int, delay: float = 0.0) -> None:
    import time

    payload = b"q" * size
    with socket.create_connection(("127.0.0.1", port)) as s:
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        for _ in range(total):
            if delay:
                time.sleep(delay)
            s.sendall(payload)
            got = 0
            while got < size:
                got += len(s.recv(65536))


# --------------------------------------------------------------------------- the measured side


class _Counts:
    """Event-loop passes and task steps while ``on`` (the method of latency_breakdown.py)."""

    def __init__(self) -> None:
        self.on = False
        self.loop_passes = 0
        self.task_steps = 0

    def install_asyncio(self) -> None:
        import asyncio.base_events as base_events

        original = base_events.BaseEventLoop._run_once
        counts = self

        def _run_once(loop: Any) -> None:
            if counts.on:
                counts.loop_passes += 1
            original(loop)

        base_events.BaseEventLoop._run_once = _run_once  # type: ignore[method-assign]

    def install_trio(self) -> None:
        import trio

        counts = self

        class Counter(trio.abc.Instrument):
            def before_io_wait(self, timeout: float) -> None:
                if counts.on:
                    counts.loop_passes += 1

            def before_task_step(self, task: Any) -> None:
                if counts.on:
                    counts.task_steps += 1

        trio.lowlevel.add_instrument(Counter())


async def _measured(args: argparse.Namespace, counts: _Counts | None) -> dict[str, Any]:
    import anyio

    if counts is not None and args.backend == "trio":
        counts.install_trio()
    ctx = multiprocessing.get_context("spawn")
    n, size, total = args.n, args.size, args.n + WARMUP
    delay = args.peer_delay
    payload = b"p" * size
    profile = None
    if args.calls:
        import cProfile

        profile = cProfile.Profile()
    opcodes: dict[str, int] = {}

    def trace_opcodes(frame: Any, event: str, arg: Any) -> Any:
        if event == "opcode":
            code = frame.f_code
            key = f"{Path(code.co_filename).name}:{code.co_firstlineno}({code.co_name})"
            opcodes[key] = opcodes.get(key, 0) + 1
        elif event == "call":
            frame.f_trace_opcodes = True
            frame.f_trace_lines = False
        return trace_opcodes

    def start() -> None:
        if counts is not None:
            counts.on = True
        if profile is not None:
            profile.enable()
        if args.opcodes:
            sys.settrace(trace_opcodes)

    def stop() -> None:
        if args.opcodes:
            sys.settrace(None)
        if profile is not None:
            profile.disable()
        if counts is not None:
            counts.on = False

    if args.side in ("req", "rep"):
        import zmtp

        async with zmtp.Socket(args.side.upper()) as sock:
            endpoint = await sock.bind("tcp://127.0.0.1:*")
            peer = (
                ctx.Process(target=_pyzmq_rep, args=(endpoint, total, delay))
                if args.side == "req"
                else ctx.Process(target=_pyzmq_req, args=(endpoint, total, size, delay))
            )
            peer.start()
            send, recv = sock.send, sock.recv
            with anyio.fail_after(600):
                for i in range(total):
                    if i == WARMUP:
                        start()
                    if args.side == "req":
                        await send(payload)
                        await recv()
                    else:
                        await send(await recv())
                stop()
            peer.join(60)
    else:
        from anyio.abc import SocketAttribute

        multi = await anyio.create_tcp_listener(local_host="127.0.0.1")
        listener = multi.listeners[0]
        port = listener.extra(SocketAttribute.local_port)
        peer = (
            ctx.Process(target=_raw_echo, args=(port, total, size, delay))
            if args.side == "raw-client"
            else ctx.Process(target=_raw_client, args=(port, total, size, delay))
        )
        peer.start()
        stream = await listener.accept()
        await multi.aclose()
        async with stream:
            send, receive = stream.send, stream.receive
            with anyio.fail_after(600):
                for i in range(total):
                    if i == WARMUP:
                        start()
                    if args.side == "raw-client":  # the loop of bench_latency.raw_client
                        await send(payload)
                        got = len(await receive(65536))
                        while got < size:
                            got += len(await receive(65536))
                    else:  # bench_latency.raw_server's echo
                        buf = b""
                        while len(buf) < size:
                            data = await receive(65536)
                            buf = buf + data if buf else data
                        await send(buf[:size])
                stop()
        peer.join(60)
    result: dict[str, Any] = {}
    if counts is not None:
        result["loop_passes"] = counts.loop_passes / n
        result["task_steps"] = counts.task_steps / n
    if profile is not None:
        import pstats

        stats = pstats.Stats(profile).stats  # type: ignore[attr-defined]
        result["calls"] = {
            f"{Path(file).name}:{line}({name})": ncalls
            for (file, line, name), (_cc, ncalls, *_rest) in stats.items()
        }
    if args.opcodes:
        result["opcodes"] = opcodes
    return result


def child_main(args: argparse.Namespace) -> None:
    import anyio

    from zmtp.engine import stream

    if hasattr(stream, "_LEASE_RECHECK"):  # a tree with resting leases (see --lease-recheck)
        stream._LEASE_RECHECK = args.lease_recheck
    counts = _Counts() if args.mode == "counts" else None
    if counts is not None and args.backend == "asyncio":
        counts.install_asyncio()
    result = anyio.run(_measured, args, counts, backend=args.backend)
    if args.result:
        Path(args.result).write_text(json.dumps(result))


# --------------------------------------------------------------------------- the harness


def _child_args(args: argparse.Namespace, n: int) -> list[str]:
    return [
        *("--side", args.side, "--backend", args.backend, "--n", str(n)),
        *("--size", str(args.size), "--lease-recheck", str(args.lease_recheck)),
        *("--peer-delay", str(args.peer_delay)),
    ]


def _counts(args: argparse.Namespace) -> None:
    """Run the child natively for M and 2M round trips; print the per-round-trip deltas."""
    import tempfile

    runs = []
    with tempfile.TemporaryDirectory() as tmp:
        for n in (args.n, 2 * args.n):
            out = Path(tmp) / f"r{n}.json"
            cmd = [sys.executable, str(HERE), "--child", "--mode", "counts", "--result", str(out)]
            cmd += _child_args(args, n) + (["--calls"] if args.calls else [])
            cmd += ["--opcodes"] if args.opcodes else []
            subprocess.run(cmd, check=True, timeout=args.timeout)
            runs.append(json.loads(out.read_text()))
    small, large = runs
    print(
        f"{args.side} on {args.backend}, {args.size} B: per round trip "
        f"{large['loop_passes']:.2f} event-loop passes"
        + (f", {large['task_steps']:.2f} task steps" if args.backend == "trio" else "")
    )
    for key, what in (("calls", "functions called"), ("opcodes", "bytecodes run")):
        if key not in large:
            continue
        few, many = small[key], large[key]
        per_rt = {k: (many.get(k, 0) - few.get(k, 0)) / args.n for k in many.keys() | few}
        rows = sorted(((v, k) for k, v in per_rt.items() if v >= 0.05), reverse=True)
        print(f"  {what} per round trip: {sum(v for v, _ in rows):.1f}")
        for v, k in rows[: args.top]:
            print(f"  {v:8.2f}  {k}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("trees", nargs="*", type=Path, help="checkouts to compare (default: this)")
    ap.add_argument("--side", choices=SIDES, default="req")
    ap.add_argument("--backend", choices=("asyncio", "trio"), default="asyncio")
    ap.add_argument("--mode", choices=("callgrind", "counts"), default="callgrind")
    ap.add_argument("--n", type=int, default=2000, help="M round trips (the second run 2M)")
    ap.add_argument("--size", type=int, default=64)
    ap.add_argument("--cycles", type=int, default=1)
    ap.add_argument("--calls", action="store_true", help="counts: Python calls per round trip")
    ap.add_argument("--opcodes", action="store_true", help="counts: bytecodes per round trip")
    ap.add_argument("--top", type=int, default=60, help="counts: rows of --calls/--opcodes")
    ap.add_argument(
        "--lease-recheck",
        type=float,
        default=0.25,
        help="zmtp's resting-lease recheck interval in the child (s; zmtp uses 0.005): a wall-"
        "time interval, scaled here by callgrind's and the tracers' ~50x slowdown so that it "
        "falls as rarely per round trip as in a real run",
    )
    ap.add_argument(
        "--peer-delay",
        type=float,
        default=0.0,
        help="the native peer sleeps this long (s) before each answer (or request), so that "
        "the measured side's read always waits, as against a peer as slow as itself (a "
        "zmtp-to-zmtp round trip): traced, our side runs ~50x slower, so the fast native "
        "peer's answer is otherwise nearly always there when we read (try 0.002)",
    )
    ap.add_argument("--timeout", type=float, default=900.0, help="per child run (s)")
    ap.add_argument("--print-child", action="store_true", help="print the child command line")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--result", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        child_main(args)
        return 0
    if args.print_child:
        print(" ".join([sys.executable, str(HERE), "--child", *_child_args(args, args.n)]))
        return 0
    if args.mode == "counts":
        _counts(args)
        return 0
    if shutil.which("valgrind") is None:
        sys.exit("error: valgrind is not installed (apt-get install valgrind)")
    trees = [t.resolve() for t in (args.trees or [HERE.parent.parent])]
    per_rt = per_message_by_tree(
        HERE, trees, args.n, lambda n: _child_args(args, n), args.cycles, args.timeout
    )
    print(
        f"\n{args.side} on {args.backend}, {args.size} B: instructions per round trip of the "
        f"measured side ((Ir(2M) - Ir(M)) / M, M = {args.n})\n"
    )
    print_tree_table(per_rt, "Ir/round trip")
    return 0


if __name__ == "__main__":
    os.environ.setdefault("PYTHONHASHSEED", "0")
    sys.exit(main())
