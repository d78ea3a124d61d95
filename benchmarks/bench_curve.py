"""CURVE cost: PUSH -> PULL throughput and handshakes/s, zmtp (PyNaCl and pure back-ends) beside
zmtp NULL and pyzmq (libzmq + libsodium) CURVE, each in separate processes over tcp.

Throughput, per (implementation, size): the receiver binds, the sender connects; a pilot round
grows until it lasts >= 20 % of ``--duration``, which sets the message count so a timed round
lasts about ``--duration``; then ``--repeat`` rounds over the same connection. A round's rate is
measured at the RECEIVER from the first to the last message: ``(N - 1) / (t_last - t_first)``.

Handshakes/s: a server process binds; a client process runs ``--handshakes`` sequential
connect -> handshake complete -> disconnect cycles and reports the rate of the middle 80 %. It
includes tcp connect and teardown, i.e. what a reconnecting client costs.

The zmtp back-end is chosen per child with ``ZMTP_CRYPTO_BACKEND`` (``nacl`` / ``pure``). The
published target: zmtp CURVE with PyNaCl at >= 0.5x zmtp NULL at 64 B (the ``vs NULL`` column).

``--codec`` instead measures, in this process and without I/O, what a message costs the
sans-IO core: encoding a batch (``Connection.encode_messages``) and decoding it
(``Connection.receive_data`` in 256 KiB reads), in µs per message, for NULL and CURVE on each
back-end, beside libsodium's own seal/open of the same box (the floor of the nacl rows). The
rounds of all codecs are interleaved, so load drift hits them alike; it is the per-stage
breakdown behind the throughput numbers.

Examples::

    python benchmarks/bench_curve.py --quick                  # ~1 min smoke test
    python benchmarks/bench_curve.py --json curve.json        # full run
    python benchmarks/bench_curve.py --impl zmtp-curve-nacl --sizes 64 --profile receiver
    python benchmarks/bench_curve.py --codec --sizes 64,1k,64k --repeat 15
"""

from __future__ import annotations

import argparse
import contextlib
import os
import pstats
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from time import perf_counter
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import (
    BenchError,
    WorkerGroup,
    control_recv_async,
    environment,
    fmt_rate,
    fmt_ratio,
    log,
    parse_sizes,
    render_table,
    require,
    size_label,
    summarize,
    write_json,
)

Params = dict[str, Any]
LOCALHOST = "127.0.0.1"

# =========================================================================== child roles
# ``func(ctrl, params)`` in a spawned child: set up, send ("ready", info), then answer each
# ("run", {...}) with ("result", {...}) until ("quit",).


def _configure_child(p: Params) -> None:
    if p.get("crypto"):
        os.environ["ZMTP_CRYPTO_BACKEND"] = p["crypto"]


def _zmtp_security(p: Params, server: bool) -> dict[str, Any]:
    if not p.get("curve"):
        return {}
    if server:
        return {"curve_server": True, "curve_secretkey": p["server_secret"]}
    return {"curve_serverkey": p["server_public"], "curve_secretkey": p["client_secret"]}


def _pyzmq_security(sock: Any, p: Params, server: bool) -> None:
    if not p.get("curve"):
        return
    if server:
        sock.curve_server = True
        sock.curve_secretkey = p["server_secret"].encode()
    else:
        sock.curve_serverkey = p["server_public"].encode()
        sock.curve_publickey = p["client_public"].encode()
        sock.curve_secretkey = p["client_secret"].encode()


def _check_size(first: Any, last: Any, size: int) -> None:
    if len(first) != size or len(last) != size:
        raise AssertionError(f"expected {size}-byte messages, got {len(first)} / {len(last)}")


def _run_profiled(p: Params, func: Callable[[], Any]) -> Any:
    path = p.get("profile_path")
    if not path:
        return func()
    import cProfile

    profiler = cProfile.Profile()
    try:
        return profiler.runcall(func)
    finally:
        profiler.dump_stats(path)


# --------------------------------------------------------------------------- zmtp


def zmtp_receiver(ctrl: Any, p: Params) -> None:
    import anyio

    _configure_child(p)
    _run_profiled(p, lambda: anyio.run(_zmtp_receiver, ctrl, p))


async def _zmtp_receiver(ctrl: Any, p: Params) -> None:
    import zmtp

    async with zmtp.Socket(
        zmtp.PULL, recv_hwm=p["hwm"], linger=0, **_zmtp_security(p, True)
    ) as sock:
        endpoint = await sock.bind(f"tcp://{LOCALHOST}:*")
        ctrl.send(("ready", endpoint))
        recv = sock.recv
        while (cmd := await control_recv_async(ctrl))[0] == "run":
            warmup, count = cmd[1]["warmup"], cmd[1]["count"]
            for _ in range(warmup):
                await recv()
            first = await recv()
            t_first = perf_counter()
            for _ in range(count - 2):
                await recv()
            last = await recv()
            t_last = perf_counter()
            _check_size(first, last, p["size"])
            ctrl.send(("result", {"elapsed": t_last - t_first, "messages": count - 1}))


def zmtp_sender(ctrl: Any, p: Params) -> None:
    import anyio

    _configure_child(p)
    _run_profiled(p, lambda: anyio.run(_zmtp_sender, ctrl, p))


async def _zmtp_sender(ctrl: Any, p: Params) -> None:
    import anyio

    import zmtp

    payload = os.urandom(p["size"])
    async with zmtp.Socket(
        zmtp.PUSH, send_hwm=p["hwm"], linger=0, **_zmtp_security(p, False)
    ) as sock:
        await sock.connect(p["endpoint"])
        ctrl.send(("ready", None))
        send = sock.send
        while (cmd := await control_recv_async(ctrl))[0] == "run":
            for _ in range(cmd[1]["warmup"] + cmd[1]["count"]):
                await send(payload)
            ctrl.send(("result", {}))
        with anyio.move_on_after(5):
            await sock.close(linger=2.0)


def zmtp_handshake_server(ctrl: Any, p: Params) -> None:
    import anyio

    _configure_child(p)
    anyio.run(_zmtp_handshake_server, ctrl, p)


async def _zmtp_handshake_server(ctrl: Any, p: Params) -> None:
    import zmtp

    async with zmtp.Socket(zmtp.PULL, linger=0, **_zmtp_security(p, True)) as sock:
        ctrl.send(("ready", await sock.bind(f"tcp://{LOCALHOST}:*")))
        await control_recv_async(ctrl)


def zmtp_handshake_client(ctrl: Any, p: Params) -> None:
    import anyio

    _configure_child(p)
    _run_profiled(p, lambda: anyio.run(_zmtp_handshake_client, ctrl, p))


async def _zmtp_handshake_client(ctrl: Any, p: Params) -> None:
    import anyio

    import zmtp

    async with zmtp.Socket(
        zmtp.PUSH, linger=0, reconnect_ivl=None, **_zmtp_security(p, False)
    ) as sock:
        ctrl.send(("ready", None))
        while (cmd := await control_recv_async(ctrl))[0] == "run":
            times = []
            monitor = sock.monitor()
            for _ in range(cmd[1]["count"]):
                with anyio.fail_after(10):
                    await sock.connect(p["endpoint"])
                    event = await monitor.wait_for((zmtp.HandshakeSucceeded, zmtp.HandshakeFailed))
                    if not isinstance(event, zmtp.HandshakeSucceeded):
                        raise RuntimeError(f"handshake failed: {event}")
                    times.append(perf_counter())
                    await sock.disconnect(p["endpoint"])
            monitor.close()
            ctrl.send(("result", {"times": times}))


# --------------------------------------------------------------------------- pyzmq


def pyzmq_receiver(ctrl: Any, p: Params) -> None:
    import zmq

    ctx = zmq.Context()
    sock = ctx.socket(zmq.PULL)
    sock.rcvhwm = p["hwm"]
    sock.linger = 0
    _pyzmq_security(sock, p, True)
    try:
        sock.bind(f"tcp://{LOCALHOST}:*")
        ctrl.send(("ready", sock.getsockopt_string(zmq.LAST_ENDPOINT)))
        recv = sock.recv
        while (cmd := ctrl.recv())[0] == "run":
            warmup, count = cmd[1]["warmup"], cmd[1]["count"]
            for _ in range(warmup):
                recv()
            first = recv()
            t_first = perf_counter()
            for _ in range(count - 2):
                recv()
            last = recv()
            t_last = perf_counter()
            _check_size(first, last, p["size"])
            ctrl.send(("result", {"elapsed": t_last - t_first, "messages": count - 1}))
    finally:
        sock.close(linger=0)
        ctx.term()


def pyzmq_sender(ctrl: Any, p: Params) -> None:
    import zmq

    ctx = zmq.Context()
    sock = ctx.socket(zmq.PUSH)
    sock.sndhwm = p["hwm"]
    sock.linger = 0
    _pyzmq_security(sock, p, False)
    payload = os.urandom(p["size"])
    try:
        sock.connect(p["endpoint"])
        ctrl.send(("ready", None))
        send = sock.send
        while (cmd := ctrl.recv())[0] == "run":
            for _ in range(cmd[1]["warmup"] + cmd[1]["count"]):
                send(payload)
            ctrl.send(("result", {}))
    finally:
        sock.close(linger=0)
        ctx.term()


def pyzmq_handshake_server(ctrl: Any, p: Params) -> None:
    import zmq

    ctx = zmq.Context()
    sock = ctx.socket(zmq.PULL)
    sock.linger = 0
    _pyzmq_security(sock, p, True)
    try:
        sock.bind(f"tcp://{LOCALHOST}:*")
        ctrl.send(("ready", sock.getsockopt_string(zmq.LAST_ENDPOINT)))
        while not ctrl.poll(0.05):
            sock.getsockopt(zmq.EVENTS)  # attach and release pipes as connections come and go
        ctrl.recv()
    finally:
        sock.close(linger=0)
        ctx.term()


def pyzmq_handshake_client(ctrl: Any, p: Params) -> None:
    import zmq
    from zmq.utils.monitor import recv_monitor_message

    ctx = zmq.Context()
    sock = ctx.socket(zmq.PUSH)
    sock.linger = 0
    _pyzmq_security(sock, p, False)
    monitor = sock.get_monitor_socket(zmq.EVENT_HANDSHAKE_SUCCEEDED)
    try:
        ctrl.send(("ready", None))
        while (cmd := ctrl.recv())[0] == "run":
            times = []
            for _ in range(cmd[1]["count"]):
                sock.connect(p["endpoint"])
                if not monitor.poll(10_000):
                    raise RuntimeError("no HANDSHAKE_SUCCEEDED within 10 s")
                recv_monitor_message(monitor)
                times.append(perf_counter())
                sock.disconnect(p["endpoint"])
            ctrl.send(("result", {"times": times}))
    finally:
        sock.disable_monitor()
        monitor.close(linger=0)
        sock.close(linger=0)
        ctx.term()


# =========================================================================== harness


@dataclass(frozen=True)
class Impl:
    name: str
    receiver: Callable[[Any, Params], None]
    sender: Callable[[Any, Params], None]
    hs_server: Callable[[Any, Params], None]
    hs_client: Callable[[Any, Params], None]
    requires: tuple[str, ...]
    params: Params = field(default_factory=dict)


IMPLS: dict[str, Impl] = {
    i.name: i
    for i in (
        Impl(
            "zmtp-null",
            zmtp_receiver,
            zmtp_sender,
            zmtp_handshake_server,
            zmtp_handshake_client,
            ("anyio",),
        ),
        Impl(
            "zmtp-curve-nacl",
            zmtp_receiver,
            zmtp_sender,
            zmtp_handshake_server,
            zmtp_handshake_client,
            ("anyio", "nacl"),
            {"curve": True, "crypto": "nacl"},
        ),
        Impl(
            "zmtp-curve-pure",
            zmtp_receiver,
            zmtp_sender,
            zmtp_handshake_server,
            zmtp_handshake_client,
            ("anyio",),
            {"curve": True, "crypto": "pure"},
        ),
        Impl(
            "pyzmq-curve",
            pyzmq_receiver,
            pyzmq_sender,
            pyzmq_handshake_server,
            pyzmq_handshake_client,
            ("zmq",),
            {"curve": True},
        ),
    )
}


@dataclass
class Result:
    impl: str
    kind: str  #: "throughput" or "handshakes"
    size: int = 0
    runs: list[float] = field(default_factory=list)  #: msgs/s or handshakes/s per round
    error: str | None = None
    loadavg: float = field(default_factory=lambda: os.getloadavg()[0])

    def rate(self, stat: str) -> float | None:
        return summarize(self.runs)[stat] if self.runs else None


def _keys() -> Params:
    from zmtp.crypto import curve_keypair

    server_public, server_secret = curve_keypair()
    client_public, client_secret = curve_keypair()
    return {
        "server_public": server_public,
        "server_secret": server_secret,
        "client_public": client_public,
        "client_secret": client_secret,
    }


def _profile_params(args: argparse.Namespace, label: str, role: str) -> Params:
    if args.profile not in (role, "both"):
        return {}
    path = Path(args.profile_dir) / f"{label}-{role}.prof"
    with contextlib.suppress(FileNotFoundError):
        path.unlink()
    args.profile_files.append(path)
    return {"profile_path": str(path)}


def _round(
    group: WorkerGroup, receiver: Any, sender: Any, warmup: int, count: int, timeout: float
) -> float:
    for w in (receiver, sender):
        w.send(("run", {"warmup": warmup, "count": count}))
    _, data = group.expect(receiver, "result", timeout)
    group.expect(sender, "result", timeout)
    return float(data["messages"] / data["elapsed"])


def measure_throughput(impl: Impl, size: int, args: argparse.Namespace) -> Result:
    res = Result(impl.name, "throughput", size)
    base = {"size": size, "hwm": args.hwm, **_keys(), **impl.params}
    label = f"{impl.name}-{size}"
    timeout = max(args.timeout, 20 * args.duration)
    with WorkerGroup(timeout=args.timeout) as group:
        receiver = group.start(
            f"{impl.name}/receiver",
            impl.receiver,
            {**base, **_profile_params(args, label, "receiver")},
        )
        _, endpoint = group.expect(receiver, "ready")
        sender = group.start(
            f"{impl.name}/sender",
            impl.sender,
            {**base, "endpoint": endpoint, **_profile_params(args, label, "sender")},
        )
        group.expect(sender, "ready")
        count, target = 20, max(0.05, 0.2 * args.duration)
        for _ in range(12):  # pilot rounds: grow until one lasts >= 20 % of the duration
            start = time.monotonic()
            rate = _round(group, receiver, sender, max(5, count // 5), count, timeout)
            if time.monotonic() - start >= target:
                break
            count *= 4
        count = max(20, min(args.max_count, int(rate * args.duration)))
        for i in range(args.repeat):
            rate = _round(group, receiver, sender, max(5, count // 10), count, timeout)
            res.runs.append(rate)
            log(
                f"    run {i + 1}/{args.repeat}: {fmt_rate(rate)}msgs/s ({count:,} msgs)",
                args.quiet,
            )
    return res


def measure_handshakes(impl: Impl, args: argparse.Namespace) -> Result:
    res = Result(impl.name, "handshakes")
    base = {**_keys(), **impl.params}
    with WorkerGroup(timeout=args.timeout) as group:
        server = group.start(f"{impl.name}/hs-server", impl.hs_server, base)
        _, endpoint = group.expect(server, "ready")
        client = group.start(
            f"{impl.name}/hs-client",
            impl.hs_client,
            {
                **base,
                "endpoint": endpoint,
                **_profile_params(args, f"{impl.name}-handshakes", "sender"),
            },
        )
        group.expect(client, "ready")
        for i in range(args.repeat):
            client.send(("run", {"count": args.handshakes}))
            _, data = group.expect(client, "result", max(args.timeout, args.handshakes * 0.5))
            times = data["times"]
            lo, hi = len(times) // 10, len(times) - 1 - len(times) // 10
            rate = (hi - lo) / (times[hi] - times[lo])
            res.runs.append(rate)
            log(f"    run {i + 1}/{args.repeat}: {rate:,.0f} handshakes/s", args.quiet)
        server.send(("quit",))
    return res


# =========================================================================== in-process codec


def _codec_pair(codec: str) -> tuple[Any, Any]:
    """A PUSH and a PULL :class:`zmtp.protocol.Connection`, handshake done, for ``codec``
    (``null`` or a crypto back-end name)."""
    from zmtp.crypto import decode_key, get_backend
    from zmtp.protocol import Connection
    from zmtp.protocol.curve import CurveClient, CurveServer
    from zmtp.protocol.events import AuthenticationRequested
    from zmtp.protocol.mechanism import AuthResult

    if codec == "null":
        a, b = Connection("PUSH"), Connection("PULL")
    else:
        keys = {k: decode_key(v) for k, v in _keys().items()}
        box = get_backend(codec)
        client = CurveClient(
            b"", keys["server_public"], keys["client_public"], keys["client_secret"], backend=box
        )
        a = Connection("PUSH", mechanism=client)
        b = Connection("PULL", mechanism=CurveServer(b"", keys["server_secret"], backend=box))
    while True:
        to_b, to_a = a.data_to_send(), b.data_to_send()
        if not to_a and not to_b:
            return a, b
        for conn, data in ((b, to_b), (a, to_a)):
            for event in conn.receive_data(data) if data else ():
                if isinstance(event, AuthenticationRequested):
                    conn.complete_authentication(AuthResult.allow())


def _codec_round(codec: str, size: int, count: int) -> tuple[float, float]:
    """µs per message to encode ``count`` messages of ``size`` bytes, and to decode them."""
    sender, receiver = _codec_pair(codec)
    batch = [[os.urandom(size)]] * count
    start = perf_counter()
    wire = sender.encode_messages(batch)
    encoded = perf_counter()
    received = 0
    for offset in range(0, len(wire), 256 * 1024):
        for event in receiver.receive_data(wire[offset : offset + 256 * 1024]):
            received += len(event.messages)
    decoded = perf_counter()
    if received != count:
        raise BenchError(f"{codec}: decoded {received} of {count} messages")
    return (encoded - start) / count * 1e6, (decoded - encoded) / count * 1e6


def _sodium_round(size: int, count: int) -> tuple[float, float]:
    """µs per call of libsodium's seal and open for a CURVE MESSAGE box of a ``size`` payload,
    through the same cffi entry points the nacl codec calls (the floor of its rows)."""
    from zmtp.crypto import get_backend

    sodium = get_backend("nacl").bind_nonce_prefix(os.urandom(32), b"CurveZMQMESSAGEC").sodium
    if sodium is None:
        raise BenchError("PyNaCl has no cffi module: no libsodium floor to measure")
    seal, open_, nonce, key = sodium.seal_easy, sodium.open_easy, sodium.nonce_ptr, sodium.key
    plain = b"\x00" + os.urandom(size)
    box, out = sodium.buffer(size + 17), sodium.buffer(size + 1)
    start = perf_counter()
    for _ in range(count):
        seal(box, plain, size + 1, nonce, key)
    sealed = perf_counter()
    for _ in range(count):
        if open_(out, box, size + 17, nonce, key):
            raise BenchError("libsodium refused its own box")
    opened = perf_counter()
    return (sealed - start) / count * 1e6, (opened - sealed) / count * 1e6


def measure_codecs(args: argparse.Namespace) -> str:
    """The ``--codec`` table: median (or best) of ``--repeat`` interleaved rounds."""
    from zmtp.crypto import nacl_available

    codecs = ["null", "pure", *(["nacl", "libsodium"] if nacl_available() else [])]
    rows = []
    for size in parse_sizes(args.sizes):
        count = max(20, min(4096, (16 << 20) // (size + 64)))
        times: dict[str, tuple[list[float], list[float]]] = {c: ([], []) for c in codecs}
        for codec in codecs:  # warm-up, untimed: imports, allocator, specialised bytecode
            _sodium_round(size, 10) if codec == "libsodium" else _codec_round(codec, size, 10)
        for _ in range(args.repeat):
            for codec in codecs:
                n = count if codec != "pure" else max(10, count // 40)
                enc, dec = (
                    _sodium_round(size, n) if codec == "libsodium" else _codec_round(codec, size, n)
                )
                times[codec][0].append(enc)
                times[codec][1].append(dec)
        pick = "min" if args.stat == "best" else "median"  # times: lower is better
        null_enc, null_dec = (summarize(t)[pick] for t in times["null"])
        for codec in codecs:
            enc, dec = (summarize(t)[pick] for t in times[codec])
            rows.append(
                [
                    "libsodium seal/open" if codec == "libsodium" else f"zmtp-{codec}",
                    size_label(size),
                    f"{enc:,.3f}",
                    f"{dec:,.3f}",
                    f"{enc / null_enc:,.1f}x" if codec != "null" else "-",
                    f"{dec / null_dec:,.1f}x" if codec != "null" else "-",
                ]
            )
        log(f"[codec] {size_label(size)} done", args.quiet)
    return render_table(
        ["codec", "size", "encode µs/msg", "decode µs/msg", "encode vs NULL", "decode vs NULL"],
        rows,
    )


# =========================================================================== output


def throughput_table(results: list[Result], stat: str) -> str:
    ref = {(r.impl, r.size): r.rate(stat) for r in results}
    rows = []
    for r in results:
        rate = r.rate(stat)
        if rate is None:
            rows.append([r.impl, size_label(r.size), "FAILED", "-", "-", "-", "-"])
            continue
        null, lib = ref.get(("zmtp-null", r.size)), ref.get(("pyzmq-curve", r.size))
        rows.append(
            [
                r.impl,
                size_label(r.size),
                fmt_rate(rate),
                f"{rate * r.size / 1e6:,.1f}",
                fmt_ratio(rate / null) if null else "-",
                fmt_ratio(rate / lib) if lib else "-",
                f"{summarize(r.runs)['spread'] * 100:.0f}%" if len(r.runs) > 1 else "-",
            ]
        )
    return render_table(
        ["implementation", "size", "msgs/s", "MB/s", "vs zmtp NULL", "vs pyzmq CURVE", "spread"],
        rows,
    )


def handshake_table(results: list[Result], stat: str) -> str:
    lib = next((r.rate(stat) for r in results if r.impl == "pyzmq-curve"), None)
    rows = []
    for r in results:
        rate = r.rate(stat)
        if rate is None:
            rows.append([r.impl, "FAILED", "-", "-"])
            continue
        rows.append(
            [
                r.impl,
                f"{rate:,.0f}",
                f"{1e3 / rate:.2f}",
                fmt_ratio(rate / lib) if lib else "-",
            ]
        )
    return render_table(["implementation", "handshakes/s", "ms each", "vs pyzmq CURVE"], rows)


def print_profiles(paths: list[Path], top: int) -> None:
    for path in paths:
        if not path.exists():
            continue
        print(f"\n--- profile {path.name} (top {top} by tottime) ---")
        pstats.Stats(str(path)).sort_stats("tottime").print_stats(top)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--impl", default=",".join(IMPLS), help=f"subset of {', '.join(IMPLS)}")
    ap.add_argument("--sizes", default="64,64k", help="message sizes (default 64,64k)")
    ap.add_argument("--duration", type=float, default=1.5, help="seconds per timed round")
    ap.add_argument("--repeat", type=int, default=3, help="timed rounds per configuration")
    ap.add_argument("--stat", choices=("median", "best"), default="median")
    ap.add_argument("--hwm", type=int, default=1000)
    ap.add_argument("--handshakes", type=int, default=200, help="handshakes per round")
    ap.add_argument("--max-count", type=int, default=5_000_000)
    ap.add_argument("--timeout", type=float, default=60.0)
    ap.add_argument("--no-throughput", action="store_true")
    ap.add_argument("--no-handshakes", action="store_true")
    ap.add_argument(
        "--codec",
        action="store_true",
        help="only the in-process encode/decode cost per message (no I/O, no child processes)",
    )
    ap.add_argument(
        "--quick",
        action="store_true",
        help="short smoke run: --duration 0.4 --repeat 1 --handshakes 40",
    )
    ap.add_argument("--json", metavar="PATH")
    ap.add_argument("--profile", choices=("receiver", "sender", "both"))
    ap.add_argument("--profile-dir", default="/tmp")
    ap.add_argument("--profile-top", type=int, default=18)
    ap.add_argument("--quiet", action="store_true")
    args = ap.parse_args(argv)
    if args.quick:
        args.duration, args.repeat, args.handshakes = 0.4, 1, 40
    args.profile_files = []
    names = [n.strip() for n in args.impl.split(",") if n.strip()]
    unknown = [n for n in names if n not in IMPLS]
    if unknown:
        ap.error(f"unknown implementation(s) {unknown}; choose from {list(IMPLS)}")
    impls = [IMPLS[n] for n in names]
    if args.codec:
        require({"codec": ("zmtp",)})
        print(
            f"\nCURVE codec cost, in process, no I/O ({args.stat} of {args.repeat} interleaved"
            " rounds; a batch encoded at once, decoded in 256 KiB reads)\n"
        )
        print(measure_codecs(args))
        return 0
    require({impl.name: impl.requires for impl in impls})
    sizes = parse_sizes(args.sizes)
    env = environment()
    log(
        f"python {env['python']}, {env['cpu_count']} CPUs, load {env['loadavg']}; "
        f"{env['versions']}",
        args.quiet,
    )

    started = time.monotonic()
    throughput: list[Result] = []
    handshakes: list[Result] = []
    if not args.no_throughput:
        for size in sizes:
            for impl in impls:
                log(f"[throughput] {impl.name} {size_label(size)}", args.quiet)
                try:
                    throughput.append(measure_throughput(impl, size, args))
                except BenchError as exc:
                    log(f"    FAILED: {exc}", args.quiet)
                    throughput.append(Result(impl.name, "throughput", size, error=str(exc)))
    if not args.no_handshakes:
        for impl in impls:
            log(f"[handshakes] {impl.name}", args.quiet)
            try:
                handshakes.append(measure_handshakes(impl, args))
            except BenchError as exc:
                log(f"    FAILED: {exc}", args.quiet)
                handshakes.append(Result(impl.name, "handshakes", error=str(exc)))

    print(
        f"\nCURVE benchmark: {args.stat} of {args.repeat} round(s); PUSH -> PULL over "
        f"tcp://127.0.0.1, separate processes, HWM {args.hwm}; zmtp on asyncio."
    )
    if throughput:
        print("\nThroughput (measured at the receiver; MB = 10^6 bytes of payload)\n")
        print(throughput_table(throughput, args.stat))
    if handshakes:
        print(
            f"\nSequential handshakes (connect -> handshake done -> disconnect; "
            f"{args.handshakes} per round, middle 80 %)\n"
        )
        print(handshake_table(handshakes, args.stat))
    print(f"\n(total {time.monotonic() - started:.0f} s)")
    if args.profile_files:
        print_profiles(args.profile_files, args.profile_top)
    if args.json:
        write_json(
            args.json,
            {
                "environment": env,
                "args": {k: v for k, v in vars(args).items() if k != "profile_files"},
                "throughput": [vars(r) for r in throughput],
                "handshakes": [vars(r) for r in handshakes],
            },
        )
    failed = [r for r in throughput + handshakes if r.error]
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
