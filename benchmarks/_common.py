"""Shared helpers for the benchmark scripts (not a public module; no pytest).

* :class:`WorkerGroup` runs benchmark roles in separate *spawned* processes, talks to them over
  ``multiprocessing`` pipes, never waits without a timeout, surfaces a child's traceback, and
  always terminates (then kills) every child it started.
* Children protect themselves too (:func:`_child_entry`): SIGINT is ignored (the parent owns
  Ctrl-C), and a watchdog thread exits the child if the parent dies or the child outlives
  ``max_lifetime``.
* :func:`control_recv_async` reads the control pipe from async code without blocking the event
  loop (a worker thread), so a socket's background tasks keep running between rounds.
* Writing a child role: :func:`anyio_role` / :func:`asyncio_role` turn an async function into a
  role, :func:`serve_rounds_async` / :func:`serve_rounds_sync` answer the harness's rounds, and
  :func:`zmtp_socket`, :func:`pyzmq_socket` (+ :func:`pyzmq_bind`), :func:`raw_accept` and
  :func:`raw_connect` set up (and tear down) the sockets every benchmark uses the same way.
* Running a benchmark: :class:`BenchParser` adds and checks the options every script shares
  (``--json``, ``--pin``, ``--profile*``, ``--fail-fast``, ``--quiet``); :func:`start_peers`
  starts a configuration's binding side and its connecting side(s), under cProfile if asked;
  :class:`Session` runs the plan (cycles, ``--fail-fast``, Ctrl-C) and ends it (failures,
  total time, profiles, JSON, exit status).
* Size parsing, statistics, table formatting, JSON metadata and dependency checks.

Control protocol (what every child role does): after setting up it sends ``("ready", info)``;
then it loops on commands from the parent (``("run", params)`` answered with
``("result", dict)``, and ``("quit",)``). Any exception is reported as ``("error", traceback)``.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as _dt
import functools
import importlib.util
import json
import math
import multiprocessing
import multiprocessing.connection
import os
import platform
import signal
import statistics
import subprocess
import sys
import threading
import time
import traceback
from collections.abc import (
    AsyncIterator,
    Awaitable,
    Callable,
    Coroutine,
    Iterable,
    Iterator,
    Sequence,
)
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, TypeVar

from load import start_background_load

REPO_ROOT = Path(__file__).resolve().parent.parent

try:  # a checkout that was not pip-installed: make `import zmtp` work
    import zmtp  # noqa: F401
except ImportError:  # pragma: no cover
    sys.path.insert(0, str(REPO_ROOT))

#: The ``--background-load`` of this run (its busy processes, benchmarks/load.py), for the
#: environment record.
_BACKGROUND_LOAD: dict[str, Any] = {"processes": 0, "same_session": False}

#: Default lifetime cap of a child process (seconds); the parent's own timeouts come first.
DEFAULT_MAX_LIFETIME = 900.0

Message = tuple[Any, ...]
Params = dict[str, Any]
#: A child role: ``func(ctrl, params)``, run in a spawned child (module level: spawn pickles it
#: by name).
RoleFunc = Callable[[Any, Params], None]

#: Every benchmark talks over tcp on the loopback; binding sides pick a free port.
LOCALHOST = "127.0.0.1"
TCP_ANY = f"tcp://{LOCALHOST}:*"


class BenchError(RuntimeError):
    """A benchmark configuration failed (child error, child death or timeout)."""


class BenchTimeout(BenchError):
    """A child did not answer in time."""


# --------------------------------------------------------------------------- dependencies


def have(module: str) -> bool:
    return importlib.util.find_spec(module) is not None


def require(users: dict[str, Iterable[str]]) -> None:
    """Exit with a clear message if a module that a selected benchmark needs is missing.

    ``users`` maps what was selected (an implementation or case name) to the modules it
    imports.
    """
    missing: dict[str, list[str]] = {}
    for user, modules in users.items():
        for m in modules:
            if not have(m):
                missing.setdefault(m, []).append(user)
    if not missing:
        return
    hints = {"zmq": "pyzmq", "trio": "trio", "anyio": "anyio"}
    lines = [f"error: missing Python module(s) {', '.join(sorted(missing))}:"]
    for m, who in sorted(missing.items()):
        lines.append(f"       {m!r} (pip install {hints.get(m, m)}) is needed by {', '.join(who)}")
    lines.append("       Install it, or leave those out with --impl / --case.")
    sys.exit("\n".join(lines))


# --------------------------------------------------------------------------- child side


def _watchdog(parent_pid: int, max_lifetime: float) -> None:
    deadline = time.monotonic() + max_lifetime
    while True:
        time.sleep(0.5)
        if os.getppid() != parent_pid:
            os._exit(3)  # orphaned: the harness is gone
        if time.monotonic() > deadline:
            sys.stderr.write(f"[bench child {os.getpid()}] max lifetime exceeded, exiting\n")
            os._exit(4)


def _child_entry(
    func: Callable[[Any, dict[str, Any]], None],
    conn: multiprocessing.connection.Connection,
    params: dict[str, Any],
    parent_pid: int,
    max_lifetime: float,
) -> None:
    """Body of every spawned child: guards, CPU pinning, then ``func(conn, params)``."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    cpu = params.get("cpu")
    if cpu is not None:  # before any thread (libzmq's I/O thread inherits it)
        os.sched_setaffinity(0, {cpu})
    threading.Thread(
        target=_watchdog, args=(parent_pid, max_lifetime), daemon=True, name="watchdog"
    ).start()
    try:
        func(conn, params)
    except BaseException:
        with contextlib.suppress(Exception):
            conn.send(("error", traceback.format_exc()))
        raise SystemExit(1) from None
    finally:
        with contextlib.suppress(Exception):
            conn.close()


async def control_recv_async(conn: multiprocessing.connection.Connection) -> Message:
    """Wait for the next control message without blocking the event loop (anyio: asyncio or
    trio), so a socket's reader/writer tasks keep running between rounds.

    Waits for the pipe's fd to become readable (no helper thread, cancellable); falls back to
    a worker thread on anyio versions without ``wait_readable``.
    """
    import anyio

    if not conn.poll():
        wait_readable = getattr(anyio, "wait_readable", None)
        if wait_readable is not None:
            await wait_readable(conn.fileno())
        else:  # pragma: no cover - anyio < 4.7
            import anyio.to_thread

            message: Message = await anyio.to_thread.run_sync(conn.recv, abandon_on_cancel=True)
            return message
    received: Message = conn.recv()
    return received


async def control_recv_asyncio(conn: multiprocessing.connection.Connection) -> Message:
    """Same as :func:`control_recv_async` for plain asyncio code (pyzmq's zmq.asyncio)."""
    import asyncio

    if not conn.poll():
        loop = asyncio.get_running_loop()
        ready = loop.create_future()
        fd = conn.fileno()

        def wake() -> None:
            if not ready.done():
                ready.set_result(None)

        loop.add_reader(fd, wake)
        try:
            await ready
        finally:
            loop.remove_reader(fd)
    received: Message = conn.recv()
    return received


# --------------------------------------------------------------------------- writing roles


def anyio_role(main: Callable[[Any, Params], Awaitable[None]]) -> RoleFunc:
    """Decorator: the role runs ``await main(ctrl, params)`` with ``anyio.run`` on the backend
    ``params["backend"]`` names. The role keeps ``main``'s name, so spawn can pickle it."""

    @functools.wraps(main)
    def role(ctrl: Any, params: Params) -> None:
        import anyio

        anyio.run(main, ctrl, params, backend=params["backend"])

    return role


def asyncio_role(main: Callable[[Any, Params], Coroutine[Any, Any, None]]) -> RoleFunc:
    """Decorator: the role runs ``await main(ctrl, params)`` with ``asyncio.run`` (zmq.asyncio)."""

    @functools.wraps(main)
    def role(ctrl: Any, params: Params) -> None:
        import asyncio

        asyncio.run(main(ctrl, params))

    return role


async def serve_rounds_async(
    ctrl: Any,
    run: Callable[[Params], Awaitable[Params]],
    recv_control: Callable[[Any], Awaitable[Message]] = control_recv_async,
) -> None:
    """Answer every ``("run", r)`` with ``("result", await run(r))``; return on any other
    command (``("quit",)``). ``recv_control`` is :func:`control_recv_asyncio` in plain asyncio."""
    while True:
        cmd = await recv_control(ctrl)
        if cmd[0] != "run":
            return
        ctrl.send(("result", await run(cmd[1])))


def serve_rounds_sync(ctrl: Any, run: Callable[[Params], Params]) -> None:
    """Blocking twin of :func:`serve_rounds_async`."""
    while True:
        cmd = ctrl.recv()
        if cmd[0] != "run":
            return
        ctrl.send(("result", run(cmd[1])))


@contextlib.asynccontextmanager
async def zmtp_socket(
    kind: str, hwm: int, linger: float = 0.0, **options: Any
) -> AsyncIterator[Any]:
    """A zmtp socket of type ``kind`` ("PULL"...) with both HWMs at ``hwm``; when the block ends
    normally it is closed with ``linger`` seconds (the close itself bounded at 5 s)."""
    import anyio

    import zmtp

    async with zmtp.Socket(kind, send_hwm=hwm, recv_hwm=hwm, **options) as sock:
        yield sock
        with anyio.move_on_after(5):
            await sock.close(linger=linger)


@contextlib.contextmanager
def pyzmq_socket(kind: str, hwm: int, *, asyncio: bool = False, linger: int = 0) -> Iterator[Any]:
    """A pyzmq socket of type ``kind`` ("PULL"...; zmq.asyncio if ``asyncio``) in a context of its
    own, both HWMs at ``hwm``; closed with ``linger`` ms, and the context terminated, however the
    block ends."""
    import zmq

    if asyncio:
        import zmq.asyncio

        ctx: Any = zmq.asyncio.Context()
    else:
        ctx = zmq.Context()
    sock = ctx.socket(getattr(zmq, kind))
    sock.sndhwm = sock.rcvhwm = hwm
    try:
        yield sock
    finally:
        sock.close(linger=linger)
        ctx.term()


def pyzmq_bind(sock: Any) -> str:
    """Bind a pyzmq socket to a free port on the loopback; the endpoint it got."""
    import zmq

    sock.bind(TCP_ANY)
    return str(sock.getsockopt_string(zmq.LAST_ENDPOINT))


@contextlib.asynccontextmanager
async def raw_accept(ctrl: Any) -> AsyncIterator[Any]:
    """A raw anyio TCP listener on a free loopback port: report ``("ready", endpoint)``, then
    yield the one connection accepted (closed, with the listener, when the block ends)."""
    import anyio
    from anyio.abc import SocketAttribute, SocketListener

    multi = await anyio.create_tcp_listener(local_host=LOCALHOST)
    listener = multi.listeners[0]
    assert isinstance(listener, SocketListener)
    ctrl.send(("ready", f"tcp://{LOCALHOST}:{listener.extra(SocketAttribute.local_port)}"))
    async with multi, await listener.accept() as stream:
        yield stream


async def raw_connect(endpoint: str) -> Any:
    """A raw anyio TCP stream to ``tcp://host:port`` (use it with ``async with``)."""
    import anyio

    host, port = endpoint.removeprefix("tcp://").rsplit(":", 1)
    return await anyio.connect_tcp(host, int(port))


# --------------------------------------------------------------------------- parent side


class Worker:
    """One spawned child process running ``func(conn, params)``."""

    def __init__(
        self,
        name: str,
        func: Callable[[Any, dict[str, Any]], None],
        params: dict[str, Any],
        max_lifetime: float = DEFAULT_MAX_LIFETIME,
    ) -> None:
        ctx = multiprocessing.get_context("spawn")
        self.name = name
        self.conn, child_conn = ctx.Pipe(duplex=True)
        self.inbox: list[Message] = []
        self.proc = ctx.Process(
            target=_child_entry,
            args=(func, child_conn, params, os.getpid(), max_lifetime),
            name=f"bench-{name}",
            daemon=True,
        )
        self.proc.start()
        child_conn.close()
        self.exit_expected = False

    def send(self, message: Message) -> None:
        try:
            self.conn.send(message)
        except (BrokenPipeError, EOFError, OSError) as exc:
            raise BenchError(f"{self.name}: cannot send to the child ({exc})") from None

    def stop(self, timeout: float) -> None:
        """Join, then terminate, then kill: the process is gone when this returns."""
        proc = self.proc
        proc.join(timeout)
        if proc.is_alive():
            proc.terminate()
            proc.join(2.0)
        if proc.is_alive():
            proc.kill()
            proc.join(2.0)
        with contextlib.suppress(Exception):
            self.conn.close()
        with contextlib.suppress(Exception):
            proc.close()


class WorkerGroup:
    """The processes of one benchmark configuration. Use as a context manager: leaving it
    (normally, on error, on Ctrl-C) stops every child."""

    def __init__(self, timeout: float, max_lifetime: float = DEFAULT_MAX_LIFETIME) -> None:
        self.timeout = timeout
        self.max_lifetime = max_lifetime
        self.workers: list[Worker] = []

    def __enter__(self) -> WorkerGroup:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close(graceful=exc[0] is None)

    def start(
        self,
        name: str,
        func: Callable[[Any, dict[str, Any]], None],
        params: dict[str, Any],
        cpu: int | None = None,
    ) -> Worker:
        """Start a child; ``cpu`` pins it (and every thread it starts) to that CPU."""
        if cpu is not None:
            params = {**params, "cpu": cpu}
        worker = Worker(name, func, params, self.max_lifetime)
        self.workers.append(worker)
        return worker

    def _pump(self, timeout: float) -> None:
        """Move every available message into the workers' inboxes; raise on errors/deaths."""
        waitables: list[Any] = []
        for w in self.workers:
            waitables.append(w.conn)
            waitables.append(w.proc.sentinel)
        ready = multiprocessing.connection.wait(waitables, timeout)
        for w in self.workers:
            while True:
                try:
                    if not w.conn.poll():
                        break
                    message = w.conn.recv()
                except (EOFError, OSError):
                    break
                if message and message[0] == "error":
                    raise BenchError(f"{w.name} failed:\n{message[1]}")
                w.inbox.append(message)
            if w.proc.sentinel in ready and not w.exit_expected and not w.inbox:
                w.proc.join(0.1)
                raise BenchError(f"{w.name} exited unexpectedly (exit code {w.proc.exitcode})")

    def expect(self, worker: Worker, kind: str, timeout: float | None = None) -> Message:
        """The next message of ``kind`` from ``worker``, within ``timeout`` seconds."""
        limit = self.timeout if timeout is None else timeout
        deadline = time.monotonic() + limit
        while True:
            if worker.inbox:
                message = worker.inbox.pop(0)
                if message[0] != kind:
                    raise BenchError(f"{worker.name}: expected {kind!r}, got {message!r}")
                return message
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise BenchTimeout(f"{worker.name}: no {kind!r} within {limit:g} s")
            self._pump(min(remaining, 1.0))

    def close(self, graceful: bool = True) -> None:
        """Ask children to quit (if graceful), then make sure every one is gone."""
        if graceful:
            for w in self.workers:
                w.exit_expected = True
                with contextlib.suppress(Exception):
                    w.conn.send(("quit",))
        for w in self.workers:
            w.exit_expected = True
            w.stop(5.0 if graceful else 0.0)
        self.workers.clear()


# --------------------------------------------------------------------------- profiling


def profiled_role(ctrl: Any, params: dict[str, Any]) -> None:
    """Child entry that runs ``params["role"]``, under cProfile if ``params["profile_path"]``
    is set (the stats are written there when the role returns)."""
    role = params["role"]
    path = params.get("profile_path")
    if not path:
        role(ctrl, params)
        return
    import cProfile

    profiler = cProfile.Profile()
    profiler.enable()
    try:
        role(ctrl, params)
    finally:
        profiler.disable()
        profiler.dump_stats(path)


def print_profiles(paths: list[Path], profile_dir: Path, top: int) -> None:
    """Print the top ``top`` functions by tottime of each profile written."""
    import io
    import pstats

    for path in paths:
        if not path.exists():
            print(f"\n(no profile written for {path.name}: the child did not finish cleanly)")
            continue
        out = io.StringIO()
        with contextlib.suppress(Exception):
            stats = pstats.Stats(str(path), stream=out)
            stats.sort_stats("tottime").print_stats(top)
        print(f"\n===== cProfile {path.name} (top {top} by tottime) =====")
        text = out.getvalue()
        start = text.find("   ncalls")
        print(text[start:] if start >= 0 else text)
    print(f"(profiles kept in {profile_dir})")


# --------------------------------------------------------------------------- CPU pinning

PIN_CHOICES = ("none", "split", "same")
PIN_HELP = (
    "CPU pinning of the child processes (Linux): none (default; the kernel places them, "
    "which varies from run to run), split (the binding side on CPU 0, the connecting side(s) "
    "on the next CPUs: one core per process, libzmq's I/O thread shares its process's core), "
    "same (all on CPU 0: most stable ping-pong, but throughput sides compete for one core)"
)


def pin_cpu(mode: str, role_index: int) -> int | None:
    """The CPU for the ``role_index``-th process of a configuration (0 = the binding side)."""
    if mode == "none":
        return None
    cpus = sorted(os.sched_getaffinity(0))
    if mode == "same" or role_index == 0:
        return cpus[0]
    if len(cpus) < 2:
        raise BenchError("--pin split needs at least 2 CPUs")
    return cpus[1 + (role_index - 1) % (len(cpus) - 1)]


def check_pin(mode: str) -> str | None:
    """An error message if ``mode`` cannot be used here."""
    if mode == "none":
        return None
    if not hasattr(os, "sched_setaffinity"):
        return "--pin needs os.sched_setaffinity (Linux)"
    if mode == "split" and len(os.sched_getaffinity(0)) < 2:
        return "--pin split needs at least 2 CPUs"
    return None


# --------------------------------------------------------------------------- running a benchmark


class BenchParser(argparse.ArgumentParser):
    """A benchmark's command line: the script adds its own options, then
    :meth:`add_harness_options`; :meth:`parse_bench_args` parses and sets up what those
    shared options need."""

    def __init__(self, doc: str, epilog: str) -> None:
        super().__init__(
            description=doc.split("\n\n")[0],
            formatter_class=argparse.RawDescriptionHelpFormatter,
            epilog=epilog,
        )
        self._profile_roles: tuple[str, ...] = ()

    def add_harness_options(
        self, profile_roles: tuple[str, str], profile_help: str, unit: str = "config"
    ) -> None:
        """``--json``, ``--pin``, ``--profile {role,role,both}``, ``--profile-dir``,
        ``--profile-top``, ``--fail-fast`` (at the first failed ``unit``) and ``--quiet``."""
        self._profile_roles = profile_roles
        self.add_argument("--json", metavar="PATH", help="also write results as JSON")
        self.add_argument("--pin", choices=PIN_CHOICES, default="none", help=PIN_HELP)
        self.add_argument("--profile", choices=(*profile_roles, "both"), help=profile_help)
        self.add_argument(
            "--profile-dir", default=None, help="where .prof files go (default: a temp directory)"
        )
        self.add_argument(
            "--profile-top", type=int, default=15, help="rows per profile (by tottime)"
        )
        self.add_argument(
            "--fail-fast", action="store_true", help=f"stop at the first failed {unit}"
        )
        self.add_argument("--quiet", action="store_true", help="no progress on stderr")
        self.add_argument(
            "--background-load",
            type=int,
            default=0,
            metavar="N",
            help="run N busy-loop processes for the whole run: a reproducible loaded machine "
            "(benchmarks/load.py; default 0)",
        )
        self.add_argument(
            "--load-same-session",
            action="store_true",
            help="with --background-load: the busy processes in the benchmark's session, "
            "competing thread by thread (see benchmarks/load.py)",
        )

    def parse_bench_args(self, argv: list[str] | None) -> argparse.Namespace:
        """Parse; check ``--pin``; with ``--profile`` make the profile directory. Adds
        ``profile_roles`` (the roles to profile), ``profile_files`` (filled by
        :func:`start_peers`) and ``cycle`` (set by :meth:`Session.run`)."""
        args = self.parse_args(argv)
        pin_error = check_pin(args.pin)
        if pin_error:
            self.error(pin_error)
        if args.background_load < 0:
            self.error("--background-load must be >= 0")
        start_background_load(args.background_load, args.load_same_session)
        _BACKGROUND_LOAD.update(processes=args.background_load, same_session=args.load_same_session)
        if args.profile is None:
            args.profile_roles = ()
        elif args.profile == "both":
            args.profile_roles = self._profile_roles
        else:
            args.profile_roles = (args.profile,)
        args.profile_files = []
        args.cycle = 1
        if args.profile:
            import tempfile

            args.profile_dir = args.profile_dir or tempfile.mkdtemp(prefix="zmtp-bench-prof-")
            if Path(args.profile_dir).exists() and not Path(args.profile_dir).is_dir():
                self.error(f"--profile-dir {args.profile_dir} exists and is not a directory")
            Path(args.profile_dir).mkdir(parents=True, exist_ok=True)
        else:
            args.profile_dir = None
        return args

    def sizes(self, text: str) -> list[int]:
        """:func:`parse_sizes`, or exit with a usage error."""
        try:
            return parse_sizes(text)
        except ValueError as exc:
            self.error(str(exc))

    def names(self, text: str, known: Iterable[str], what: str) -> list[str]:
        """The comma-separated names in ``text``, or exit if one is not in ``known``."""
        choices = list(known)
        names = [n.strip() for n in text.split(",") if n.strip()]
        unknown = [n for n in names if n not in choices]
        if unknown:
            self.error(f"unknown {what}(s) {unknown}; choose from {choices}")
        return names


@dataclass(frozen=True)
class Role:
    """A child process of a configuration: ``func(ctrl, params)``, called ``label`` in errors.
    It runs under cProfile, into ``profile_file`` in ``--profile-dir``, when ``profile_as`` is
    one of the roles ``--profile`` asked for."""

    label: str
    func: RoleFunc
    params: Params
    profile_as: str = ""
    profile_file: str = ""


def _role_params(args: argparse.Namespace, role: Role) -> Params:
    params = {**role.params, "role": role.func}
    if args.profile_dir is not None and role.profile_as in args.profile_roles:
        path = Path(args.profile_dir) / role.profile_file
        path.unlink(missing_ok=True)  # never report a stale profile from an earlier run
        args.profile_files.append(path)
        params["profile_path"] = str(path)
    return params


def start_peers(
    group: WorkerGroup,
    args: argparse.Namespace,
    binder: Role,
    connectors: Sequence[Role] = (),
    wait_ready: bool = True,
) -> tuple[Worker, list[Worker]]:
    """Start ``binder`` (pinned as process 0 by ``--pin``) and wait for its ``("ready",
    endpoint)``; then start the ``connectors`` (processes 1, 2...; ``params["endpoint"]`` is
    the binder's endpoint) and, if ``wait_ready``, wait until each is ready."""
    server = group.start(
        binder.label, profiled_role, _role_params(args, binder), cpu=pin_cpu(args.pin, 0)
    )
    _, endpoint = group.expect(server, "ready")
    clients = [
        group.start(
            role.label,
            profiled_role,
            {**_role_params(args, role), "endpoint": endpoint},
            cpu=pin_cpu(args.pin, 1 + i),
        )
        for i, role in enumerate(connectors)
    ]
    if wait_ready:
        for client in clients:
            group.expect(client, "ready")
    return server, clients


class Outcome(Protocol):
    """What :meth:`Session.run` needs of a configuration's result."""

    error: str | None


R = TypeVar("R", bound=Outcome)


class Session:
    """One run of a benchmark script: logs the environment, runs the plan, and ends it."""

    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.env = environment()
        log(
            f"python {self.env['python']} on {self.env['platform']}, {self.env['cpu_count']} "
            f"CPUs, load {self.env['loadavg']}, "
            f"background load {self.env['background_load']['processes']}; "
            f"{self.env['versions']}",
            args.quiet,
        )
        self.started = time.monotonic()
        self.interrupted = False

    def run(self, plan: Sequence[tuple[str, R, Callable[[], object]]], cycles: int = 1) -> None:
        """Run every ``(label, result, measure)`` of ``plan``, the whole plan ``cycles`` times
        in turn (``args.cycle`` says which). A :class:`BenchError` is recorded in ``result``
        (the first one) and the plan goes on, unless ``--fail-fast``; Ctrl-C stops it and sets
        ``interrupted``."""
        args = self.args
        steps = len(plan) * cycles
        step = 0
        try:
            for cycle in range(1, cycles + 1):
                args.cycle = cycle
                for label, result, measure in plan:
                    step += 1
                    cyc = f" (cycle {cycle}/{cycles})" if cycles > 1 else ""
                    log(f"[{step}/{steps}] {label}{cyc}", args.quiet)
                    try:
                        measure()
                    except BenchError as exc:
                        result.error = result.error or str(exc)
                        log(f"    FAILED: {exc}", False)
                        if args.fail_fast:
                            return
        except KeyboardInterrupt:
            self.interrupted = True
            log("interrupted: printing what was measured", False)

    def finish(
        self,
        failures: Sequence[tuple[str, str]],
        benchmark: str,
        settings: dict[str, Any],
        tables: dict[str, str],
        **results: Any,
    ) -> int:
        """After the tables: the ``(label, error)`` failures, the total time, the profiles,
        the JSON (``results`` go between the environment and the tables); the exit status."""
        args = self.args
        for label, error in failures:
            print(f"\nFAILED {label}:\n{error}")
        print(f"\n(total {time.monotonic() - self.started:.0f} s)")
        if args.profile_dir is not None:
            print_profiles(args.profile_files, Path(args.profile_dir), args.profile_top)
        if args.json:
            payload = {
                "benchmark": benchmark,
                "stat": args.stat,
                "settings": settings,
                "environment": self.env,
                **results,
                "tables": tables,
                "interrupted": self.interrupted,
            }
            write_json(args.json, payload)
            log(f"wrote {args.json}", args.quiet)
        return 130 if self.interrupted else 1 if failures else 0


# --------------------------------------------------------------------------- sizes & stats


def parse_size(text: str) -> int:
    """``64``, ``1k``/``1KiB``, ``64K``, ``1m``/``1MiB`` -> bytes (binary multiples)."""
    t = text.strip().lower().removesuffix("ib").removesuffix("b")
    mult = 1
    if t and t[-1] in "km":
        mult = 1024 if t[-1] == "k" else 1024 * 1024
        t = t[:-1]
    value = int(float(t) * mult)
    if value <= 0:
        raise ValueError(f"size must be positive: {text!r}")
    return value


def parse_sizes(text: str) -> list[int]:
    return [parse_size(s) for s in text.split(",") if s.strip()]


def size_label(size: int) -> str:
    if size >= 1024 * 1024 and size % (1024 * 1024) == 0:
        return f"{size // (1024 * 1024)} MiB"
    if size >= 1024 and size % 1024 == 0:
        return f"{size // 1024} KiB"
    return f"{size} B"


def summarize(values: Sequence[float], higher_is_better: bool = True) -> dict[str, float]:
    """median / best / min / max / spread (max-min over median, as a fraction)."""
    med = statistics.median(values)
    lo, hi = min(values), max(values)
    return {
        "median": med,
        "best": hi if higher_is_better else lo,
        "min": lo,
        "max": hi,
        "spread": (hi - lo) / med if med else 0.0,
    }


def percentile(sorted_values: Sequence[float], q: float) -> float:
    """Nearest-rank percentile (q in 0..100) of an already sorted sequence."""
    if not sorted_values:
        return float("nan")
    n = len(sorted_values)
    rank = math.ceil(q / 100 * n)  # the smallest value with at least q % of samples <= it
    return float(sorted_values[max(0, min(n - 1, rank - 1))])


def fmt_rate(value: float | None) -> str:
    if value is None:
        return "-"
    if value >= 1e6:
        return f"{value / 1e6:,.2f} M"
    if value >= 1e3:
        return f"{value / 1e3:,.1f} k"
    return f"{value:,.0f}"


def fmt_ratio(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}x"


def fmt_spread(values: Sequence[float]) -> str:
    """The rounds' spread (see :func:`summarize`) as a percentage; "-" for fewer than two."""
    return f"{summarize(values)['spread'] * 100:.0f}%" if len(values) > 1 else "-"


def fmt_verdict(ratio: float, target: float | None, higher: bool = True) -> str:
    """`` (met >= 0.5x)`` / `` (MISSED <= 1.1x)``: ``ratio`` against a target, higher or lower
    being better; "" without a target."""
    if target is None:
        return ""
    met = ratio >= target if higher else ratio <= target
    return f" ({'met' if met else 'MISSED'} {'>=' if higher else '<='} {target:g}x)"


def fmt_us(ns: float | None) -> str:
    return "-" if ns is None else f"{ns / 1000:,.1f}"


def render_table(headers: Sequence[str], rows: Sequence[Sequence[str]], align: str = "") -> str:
    """A plain-text table; ``align`` is one char per column, 'l' or 'r' (default: l then r)."""
    widths = [len(h) for h in headers]
    for row in rows:
        for i, cell in enumerate(row):
            widths[i] = max(widths[i], len(cell))
    if not align:
        align = "l" + "r" * (len(headers) - 1)

    def line(cells: Sequence[str]) -> str:
        parts = [
            c.ljust(widths[i]) if align[i] == "l" else c.rjust(widths[i])
            for i, c in enumerate(cells)
        ]
        return "| " + " | ".join(parts) + " |"

    sep = (
        "|"
        + "|".join(
            ("-" * (w + 1) + ":") if a == "r" else ("-" * (w + 2))
            for w, a in zip(widths, align, strict=True)
        )
        + "|"
    )
    out = [line(headers), sep]
    out.extend(line(r) for r in rows)
    return "\n".join(out)


# --------------------------------------------------------------------------- metadata


def _version(module: str) -> str | None:
    try:
        from importlib.metadata import version

        return version(module)
    except Exception:
        return None


def environment() -> dict[str, Any]:
    """What a reader needs to interpret the numbers."""
    info: dict[str, Any] = {
        "date": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "python": sys.version.split()[0],
        "implementation": platform.python_implementation(),
        "platform": platform.platform(),
        "machine": platform.machine(),
        "cpu_count": os.cpu_count(),
        "loadavg": list(os.getloadavg()) if hasattr(os, "getloadavg") else None,
        "background_load": dict(_BACKGROUND_LOAD),
        "versions": {name: _version(name) for name in ("zmtp", "anyio", "trio", "pyzmq", "PyNaCl")},
    }
    try:
        import zmq

        info["versions"]["libzmq"] = zmq.zmq_version()
    except Exception:
        info["versions"]["libzmq"] = None
    with contextlib.suppress(Exception):  # read-only git query
        info["git_commit"] = (
            subprocess.run(
                ["git", "-C", str(REPO_ROOT), "rev-parse", "--short", "HEAD"],
                capture_output=True,
                text=True,
                timeout=5,
                check=False,
            ).stdout.strip()
            or None
        )
        dirty = subprocess.run(
            ["git", "-C", str(REPO_ROOT), "status", "--porcelain", "--untracked-files=no"],
            capture_output=True,
            text=True,
            timeout=5,
            check=False,
        ).stdout.strip()
        info["git_dirty"] = bool(dirty)
    return info


def write_json(path: str, payload: dict[str, Any]) -> None:
    Path(path).write_text(json.dumps(payload, indent=2, sort_keys=False) + "\n")


def log(message: str, quiet: bool = False) -> None:
    if not quiet:
        print(message, file=sys.stderr, flush=True)
