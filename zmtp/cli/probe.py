"""``zmtp probe ENDPOINT``: what does the peer at this endpoint speak?

Connects with a raw stream, sends a NULL client greeting and reads what comes back, decoded by
:class:`zmtp.cli.wire.WireDecoder`: the peer's greeting (ZMTP revision, mechanism, as-server)
and, for a NULL peer, its READY (socket type and every property). It never sends a READY of its
own, so it never joins the peer's traffic: the peer sees a connection that closes during the
handshake. Where the handshake stops, the report says why: nothing listening, a service that is
not ZMTP, a PLAIN or CURVE peer (which needs credentials to go further), an ERROR from the peer
(say, authentication refused us), or silence.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import asdict, dataclass, field
from typing import Any

import anyio

from ..protocol.greeting import encode_greeting
from .common import add_backend_argument, open_stream, run_on, stream_endpoint
from .wire import CommandFrame, Frame, Greeting, Malformed, NotZmtp, WireDecoder

HELP = "connect to an endpoint and report what the peer speaks (ZMTP revision, mechanism, type)"

#: Exit statuses.
OK, NO_PEER, TIMED_OUT = 0, 1, 2


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("endpoint", metavar="ENDPOINT", help="tcp://host:port or ipc://path")
    parser.add_argument("--json", action="store_true", help="print the report as one JSON object")
    parser.add_argument(
        "--timeout",
        type=float,
        default=5.0,
        help="seconds to wait for the connection and for each answer (default: 5)",
    )
    add_backend_argument(parser)
    parser.epilog = (
        "Stages: connect, greeting, handshake, ready. Exit status: 0 the peer speaks ZMTP "
        "(its greeting was read; for NULL also its READY), 1 no ZMTP peer there (nothing "
        "listening, not ZMTP, closed, or an ERROR), 2 it went silent (timeout) or bad usage."
    )


@dataclass
class ProbeReport:
    endpoint: str
    stage: str = "connect"  #: how far it got: connect, greeting, handshake, ready
    ok: bool = False
    connected: bool = False
    zmtp: str | None = None  #: the peer's revision, "3.1"
    mechanism: str | None = None
    as_server: bool | None = None
    socket_type: str | None = None
    properties: dict[str, str] = field(default_factory=dict)
    stopped: str | None = None  #: why the handshake stopped where it did
    seconds: float = 0.0
    status: int = NO_PEER

    def text(self) -> str:
        lines = [f"endpoint:    {self.endpoint}"]
        lines.append(f"connected:   {'yes' if self.connected else 'no'}")
        if self.zmtp is not None:
            lines.append(
                f"greeting:    ZMTP {self.zmtp}, mechanism {self.mechanism}, "
                f"as-server {int(bool(self.as_server))}"
            )
        if self.socket_type is not None:
            lines.append(f"socket type: {self.socket_type}")
        for name, value in self.properties.items():
            lines.append(f"property:    {name} = {value}")
        lines.append(f"stage:       {self.stage}")
        if self.stopped:
            lines.append(f"stopped:     {self.stopped}")
        lines.append(f"verdict:     {self.verdict()} ({self.seconds * 1000:.1f} ms)")
        return "\n".join(lines)

    def verdict(self) -> str:
        if self.stage == "ready":
            return f"a ZMTP {self.zmtp} {self.socket_type} peer, mechanism {self.mechanism}"
        if self.zmtp is not None and self.ok:
            return f"a ZMTP {self.zmtp} peer, mechanism {self.mechanism}"
        return "no ZMTP peer answered" if self.status == NO_PEER else "timed out"

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["seconds"] = round(self.seconds, 4)
        data["verdict"] = self.verdict()
        return data


async def probe(endpoint_text: str, timeout: float) -> ProbeReport:
    """Probe one endpoint; never raises for anything the peer does."""
    report = ProbeReport(endpoint_text)
    started = time.perf_counter()
    try:
        endpoint = stream_endpoint(endpoint_text)
        report.endpoint = str(endpoint)
        with anyio.fail_after(timeout):
            stream = await open_stream(endpoint)
    except TimeoutError:
        report.stopped, report.status = f"no connection within {timeout:g}s", TIMED_OUT
        return _done(report, started)
    except OSError as exc:
        report.stopped = f"nothing listening: {exc.strerror or exc}"
        return _done(report, started)
    report.connected, report.stage = True, "greeting"
    decoder = WireDecoder()
    greeting = encode_greeting(b"NULL", False)
    async with stream:
        # Signature and major version first: libzmq sends the rest of its greeting (mechanism
        # included) only after it has read ours that far, and closes without sending it if
        # a whole greeting with another mechanism arrives at once. The rest of ours follows
        # once theirs is in.
        await stream.send(greeting[:11])
        done = False
        while not done:
            try:
                with anyio.fail_after(timeout):
                    chunk = await stream.receive()
            except TimeoutError:
                waited = "greeting" if report.stage == "greeting" else "READY"
                report.stopped = f"the peer sent no {waited} within {timeout:g}s"
                report.status = TIMED_OUT
                break
            except (anyio.EndOfStream, anyio.BrokenResourceError, OSError):
                report.stopped = _closed_why(report)
                break
            for event in decoder.feed(chunk):
                if isinstance(event, Greeting):
                    await stream.send(greeting[11:])
                done = _apply(report, event)
                if done:
                    break
    return _done(report, started)


def _closed_why(report: ProbeReport) -> str:
    if report.stage == "greeting":
        return "the peer closed the connection before sending a ZMTP greeting"
    return "the peer closed the connection during the handshake"


def _apply(report: ProbeReport, event: object) -> bool:
    """Record what ``event`` says; True when the probe has its answer."""
    if isinstance(event, NotZmtp):
        report.stopped = f"not a ZMTP 3.x service: {event.describe()[len('not ZMTP: ') :]}"
    elif isinstance(event, Greeting):
        report.zmtp = f"{event.major}.{event.minor}"
        report.mechanism, report.as_server = event.mechanism, event.as_server
        report.stage = "handshake"
        if event.mechanism != "NULL":
            report.ok, report.status = True, OK
            report.stopped = f"{event.mechanism} needs credentials to go further " + (
                "(the peer's socket type and properties travel encrypted)"
                if event.mechanism == "CURVE"
                else "(the peer tells its socket type only to a client it accepted)"
            )
    elif isinstance(event, CommandFrame) and event.name == "READY":
        props = event.fields.get("properties", {})
        report.properties = dict(props)
        report.socket_type = next(
            (v for k, v in props.items() if k.lower() == "socket-type"), "(none)"
        )
        report.stage, report.ok, report.status = "ready", True, OK
    elif isinstance(event, CommandFrame) and event.name == "ERROR":
        report.stopped = f"the peer sent ERROR: {event.fields.get('reason', '')!r}"
    elif isinstance(event, Malformed):
        report.stopped = f"the peer broke the protocol: {event.reason}"
    elif isinstance(event, (CommandFrame, Frame)):
        report.stopped = f"unexpected during the handshake: {event.describe()}"
    return report.ok or report.stopped is not None


def _done(report: ProbeReport, started: float) -> ProbeReport:
    report.seconds = time.perf_counter() - started
    return report


def run(args: argparse.Namespace) -> int:
    try:
        stream_endpoint(args.endpoint)
    except ValueError as exc:
        print(f"zmtp probe: {exc}", file=sys.stderr)
        return 2

    async def main() -> int:
        report = await probe(args.endpoint, args.timeout)
        print(json.dumps(report.to_json()) if args.json else report.text())
        return report.status

    return run_on(args.backend, main)
