"""``python -m zmtp_qos worker MODULE:FUNCTION --connect ENDPOINT ...``: a
:class:`zmtp_qos.Worker` process (docs/worker.md, "Command line").

The handler is imported from ``MODULE:FUNCTION`` (the current directory is on the path, as
with ``python -m``). SIGTERM or the first SIGINT (Ctrl-C) stops it gracefully: no new jobs,
the taken ones finish and their verdicts reach the producers; a second one kills it (jobs in
flight get no verdict: their producers redeliver them). Logs go to stderr; on a terminal a
one-line status is printed every ``--status-interval`` seconds.
"""

from __future__ import annotations

import argparse
import importlib
import logging
import signal
import sys
import time
from collections.abc import Callable
from typing import Any

import anyio

from zmtp.cli.cat import CatError, read_certificate
from zmtp.cli.common import add_backend_argument, number_option, run_on
from zmtp.errors import ZMTPError

HELP = "run a job worker: a QoS 3 PULL that calls MODULE:FUNCTION for every job"

OK, FAILED, USAGE, KILLED = 0, 1, 2, 130

log = logging.getLogger("zmtp_qos.worker")


class UsageProblem(Exception):
    """Something on the command line that cannot work (exit status 2)."""


_positive_int = number_option(int, "an integer", minimum=1)
_seconds = number_option(float, "a number of seconds", minimum=0, exclusive=True)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "handler",
        metavar="MODULE:FUNCTION",
        help="the job handler: called with the job's parts (list of bytes); async or not",
    )
    where = parser.add_argument_group("endpoints (at least one)")
    where.add_argument(
        "-c",
        "--connect",
        action="append",
        default=[],
        metavar="ENDPOINT",
        help="a producer's endpoint to connect to (repeatable)",
    )
    where.add_argument(
        "-b",
        "--bind",
        action="append",
        default=[],
        metavar="ENDPOINT",
        help="an endpoint to bind, producers connect to it (repeatable)",
    )
    work = parser.add_argument_group("work")
    work.add_argument(
        "--concurrency", type=_positive_int, default=10, metavar="N", help="handler tasks (10)"
    )
    work.add_argument(
        "--threads",
        type=_positive_int,
        metavar="N",
        help="threads for a synchronous handler (default: the concurrency)",
    )
    work.add_argument(
        "--prefetch",
        type=_positive_int,
        metavar="N",
        help="jobs taken without a verdict at most (default: 2 x concurrency)",
    )
    work.add_argument(
        "--processing-timeout",
        type=_seconds,
        metavar="SECS",
        help="a handler running longer is cancelled and answered NACK TIMEOUT (none)",
    )
    work.add_argument(
        "--type",
        choices=("PULL", "GATHER"),
        default="PULL",
        type=str.upper,
        help="socket type (PULL)",
    )
    work.add_argument(
        "--identity",
        metavar="ID",
        help="the worker's anchor: a worker restarted with the same identity gets the jobs "
        "it left without a verdict (default: random)",
    )
    sec = parser.add_argument_group(
        "CURVE (keys: Z85 text, or certificate files; under CURVE the anchor is our public key)"
    )
    sec.add_argument("--curve-serverkey", metavar="Z85", help="the producer's (server's) key")
    sec.add_argument(
        "--curve-server-cert", metavar="FILE", help="the server's public key from its certificate"
    )
    sec.add_argument("--curve-secretkey", metavar="Z85", help="our secret key")
    sec.add_argument("--curve-publickey", metavar="Z85", help="our public key (default: derived)")
    sec.add_argument(
        "--curve-cert", metavar="FILE", help="our keys from a secret certificate (czmq/pyzmq)"
    )
    sec.add_argument(
        "--curve-server",
        action="store_true",
        help="be the CURVE server (with --bind; needs our secret key); any client key is "
        "accepted, as libzmq does without ZAP",
    )
    out = parser.add_argument_group("output")
    out.add_argument(
        "--log-level",
        choices=("debug", "info", "warning", "error"),
        default="info",
        help="log level on stderr (info); debug logs every job",
    )
    out.add_argument(
        "--status-interval",
        type=_seconds,
        default=5.0,
        metavar="SECS",
        help="period of the one-line status, printed only when stderr is a terminal (5)",
    )
    add_backend_argument(parser)
    parser.epilog = (
        "SIGTERM or Ctrl-C: graceful stop (the jobs taken finish, their verdicts reach the "
        "producers); a second one: kill (jobs in flight get no verdict and are redelivered).\n"
        "Exit status: 0 stopped cleanly, 1 the worker failed, 2 bad usage (handler not found, "
        "no endpoint, bad key), 130 killed by a second signal.\n"
        "Example: python -m zmtp_qos worker jobs:resize --connect tcp://127.0.0.1:5555 "
        "--concurrency 20"
    )


def load_handler(spec: str) -> Callable[[list[bytes]], Any]:
    """``package.module:function`` (a dotted attribute path after the colon is allowed)."""
    module_name, sep, attribute = spec.partition(":")
    if not sep or not module_name or not attribute:
        raise UsageProblem(f"{spec!r}: expected MODULE:FUNCTION")
    try:
        obj: Any = importlib.import_module(module_name)
    except ImportError as exc:
        raise UsageProblem(f"cannot import {module_name!r}: {exc}") from None
    for name in attribute.split("."):
        try:
            obj = getattr(obj, name)
        except AttributeError:
            raise UsageProblem(f"{module_name!r} has no {attribute!r}") from None
    if not callable(obj):
        raise UsageProblem(f"{spec} is not callable")
    handler: Callable[[list[bytes]], Any] = obj
    return handler


def socket_options(args: argparse.Namespace) -> dict[str, Any]:
    """The CURVE options the command line asks for (none: NULL)."""
    from zmtp.crypto import curve_keypair, curve_public

    secret, public = args.curve_secretkey, args.curve_publickey
    try:
        if args.curve_cert:
            keys = read_certificate(args.curve_cert)
            if "secret-key" not in keys:
                raise UsageProblem(f"{args.curve_cert}: no secret-key (use the _secret file)")
            secret, public = keys["secret-key"], keys["public-key"]
        server_key = args.curve_serverkey
        if args.curve_server_cert:
            server_key = read_certificate(args.curve_server_cert)["public-key"]
    except CatError as exc:
        raise UsageProblem(str(exc)) from None
    options: dict[str, Any] = {}
    try:
        if args.curve_server:
            if secret is None:
                raise UsageProblem("--curve-server needs --curve-secretkey or --curve-cert")
            options.update(curve_server=True, curve_secretkey=secret)
            options["curve_publickey"] = public or curve_public(secret)
        elif server_key is not None:
            if secret is None:
                public, secret = curve_keypair()  # throw-away: a new anchor every run
            options.update(
                curve_serverkey=server_key,
                curve_secretkey=secret,
                curve_publickey=public or curve_public(secret),
            )
    except (ValueError, TypeError) as exc:
        raise UsageProblem(f"bad CURVE key: {exc}") from None
    return options


def run(args: argparse.Namespace) -> int:
    logging.basicConfig(
        stream=sys.stderr,
        level=getattr(logging, args.log_level.upper()),
        format="%(asctime)s pid=%(process)d %(levelname)s %(name)s: %(message)s",
    )
    from .worker import Worker

    try:
        handler = load_handler(args.handler)
        if not args.connect and not args.bind:
            raise UsageProblem("give at least one --connect or --bind endpoint")
        options = socket_options(args)
        worker = Worker(
            handler,
            connect=args.connect,
            bind=args.bind,
            socket_type=args.type,
            concurrency=args.concurrency,
            threads=args.threads,
            prefetch=args.prefetch,
            processing_timeout=args.processing_timeout,
            identity=args.identity,
            options=options,
        )
    except (UsageProblem, ValueError) as exc:
        print(f"python -m zmtp_qos worker: {exc}", file=sys.stderr)
        return USAGE

    async def main() -> int:
        killed = False
        async with anyio.create_task_group() as tg:

            async def on_signals() -> None:
                nonlocal killed
                with anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
                    seen = 0
                    async for signum in signals:
                        seen += 1
                        name = signal.Signals(signum).name
                        if seen == 1:
                            log.info("%s: stopping gracefully (again to kill)", name)
                            worker.stop()
                        else:
                            log.warning("%s again: killing", name)
                            killed = True
                            worker.kill()

            tg.start_soon(on_signals)
            if sys.stderr.isatty():
                tg.start_soon(status_lines, worker, args.status_interval)
            try:
                await worker.run()
            except (OSError, ZMTPError) as exc:
                print(f"python -m zmtp_qos worker: {exc}", file=sys.stderr)
                tg.cancel_scope.cancel()
                return FAILED
            tg.cancel_scope.cancel()
        return KILLED if killed else OK

    return run_on(args.backend, main)


async def status_lines(worker: Any, interval: float) -> None:
    """One line per ``interval`` on stderr (a terminal): done, failed, in flight, rate."""
    last_done, last_time = 0, time.monotonic()
    while True:
        await anyio.sleep(interval)
        stats = worker.stats
        failed = sum(stats.failed.values())
        done = stats.completed + failed
        now = time.monotonic()
        rate = (done - last_done) / (now - last_time) if now > last_time else 0.0
        last_done, last_time = done, now
        print(
            f"status: done {stats.completed}, failed {failed}, in flight {stats.in_flight} "
            f"(taken {stats.prefetched}), {rate:.1f} jobs/s",
            file=sys.stderr,
            flush=True,
        )
