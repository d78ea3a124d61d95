"""``zmtp trace --listen ENDPOINT --to ENDPOINT``: a relay that shows the ZMTP on the wire.

Every connection a client makes to ``--listen`` is relayed to ``--to``; each direction is
decoded with :class:`zmtp.cli.wire.WireDecoder` (the protocol core's parsers) and printed as it
passes, one line per event with a timestamp, the connection number and the direction (``C>S``
client to server, ``S>C`` back): the greeting (version, mechanism, as-server), the handshake
commands and their properties, then every frame (flags, size, a preview) and command
(SUBSCRIBE/CANCEL, PING/PONG with TTL, JOIN/LEAVE, the QoS commands with their digests). After a
CURVE handshake only frame sizes can be shown. Bytes are relayed unchanged, and as they come.

``--capture FILE`` also writes every chunk to FILE (JSON lines: time, connection, direction,
bytes in base64), and ``--read FILE`` decodes such a capture later, printing what the live trace
printed. ``--pcap FILE`` writes what was relayed (live, or read from a capture) as a pcapng file
that Wireshark opens (:mod:`zmtp.cli.pcapng`). ``--json`` prints JSON lines instead of text.
Ctrl-C (SIGINT) stops it cleanly.
"""

from __future__ import annotations

import argparse
import base64
import datetime
import itertools
import json
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from typing import IO, Any

import anyio
from anyio.abc import ByteStream

from ..transport.endpoint import TcpEndpoint
from ..transport.streams import listen, peer_address
from .common import add_backend_argument, open_stream, run_on, stream_endpoint, until_interrupted
from .pcapng import DEFAULT_SERVER_PORT, PcapngWriter
from .wire import WireDecoder, WireEvent

HELP = "relay between a client and a server, printing each direction's ZMTP decoded"

CLIENT_TO_SERVER, SERVER_TO_CLIENT = "C>S", "S>C"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--listen",
        metavar="ENDPOINT",
        help="where clients connect (tcp://127.0.0.1:6000, tcp://127.0.0.1:* for any port, "
        "ipc://path); the endpoint is printed on stderr once listening",
    )
    parser.add_argument("--to", metavar="ENDPOINT", help="the server each connection is relayed to")
    parser.add_argument(
        "--capture", metavar="FILE", help="also write every chunk to FILE (for --read)"
    )
    parser.add_argument(
        "--read",
        metavar="FILE",
        help="decode a capture written by --capture instead of relaying ('-': stdin)",
    )
    parser.add_argument(
        "--pcap",
        metavar="FILE",
        help="also write what was relayed (or, with --read, the capture) to FILE as pcapng, "
        "for Wireshark: made-up TCP 127.0.0.1 -> 127.0.0.2 on the port of --to (else 5555), "
        "exactly the bytes relayed (a ZMTP dissector decodes it: Decode As zmtp on that port)",
    )
    parser.add_argument("--json", action="store_true", help="print JSON lines instead of text")
    add_backend_argument(parser)
    parser.epilog = (
        "Either --listen and --to, or --read. Stops on Ctrl-C (exit status 0). Exit status 1 "
        "if it cannot listen, 2 for bad usage or an unreadable capture."
    )


@dataclass
class Printer:
    """Prints decoded events, text or JSON lines, with their time, connection and direction."""

    out: IO[str]
    as_json: bool

    def event(self, when: float, conn: int, direction: str, event: WireEvent) -> None:
        if self.as_json:
            record = {"time": when, "conn": conn, "dir": direction, **event.to_json()}
            self.out.write(json.dumps(record) + "\n")
        else:
            self.out.write(f"{_clock(when)} #{conn} {direction} {event.describe()}\n")
        self.out.flush()

    def note(self, when: float, conn: int, text: str) -> None:
        if self.as_json:
            self.out.write(json.dumps({"time": when, "conn": conn, "note": text}) + "\n")
        else:
            self.out.write(f"{_clock(when)} #{conn} -- {text}\n")
        self.out.flush()


def _clock(when: float) -> str:
    stamp = datetime.datetime.fromtimestamp(when, datetime.timezone.utc)
    return stamp.strftime("%H:%M:%S.%f")


class Capture:
    """The capture file: one JSON object per line, flushed as written."""

    def __init__(self, out: IO[str] | None) -> None:
        self.out = out

    def write(self, when: float, conn: int, what: str, data: bytes = b"", text: str = "") -> None:
        if self.out is None:
            return
        record: dict[str, Any] = {"time": when, "conn": conn, "dir": what}
        if data:
            record["data"] = base64.b64encode(data).decode()
        if text:
            record["note"] = text
        self.out.write(json.dumps(record) + "\n")
        self.out.flush()


def _now() -> float:
    return datetime.datetime.now(datetime.timezone.utc).timestamp()


class Relay:
    def __init__(
        self, upstream: str, printer: Printer, capture: Capture, pcap: PcapngWriter | None = None
    ) -> None:
        self.upstream = stream_endpoint(upstream)
        self.printer = printer
        self.capture = capture
        self.pcap = pcap
        self.numbers = itertools.count(1)

    def note(self, conn: int, text: str) -> None:
        when = _now()
        self.printer.note(when, conn, text)
        self.capture.write(when, conn, "note", text=text)

    async def handle(self, client: ByteStream) -> None:
        conn = next(self.numbers)
        self.note(conn, f"connection from {peer_address(client) or 'a client'}")
        async with client:
            try:
                server = await open_stream(self.upstream)
            except OSError as exc:
                self.note(conn, f"cannot reach {self.upstream}: {exc.strerror or exc}; closed")
                return
            try:
                async with server, anyio.create_task_group() as tg:
                    tg.start_soon(
                        self.pump, conn, CLIENT_TO_SERVER, client, server, tg.cancel_scope
                    )
                    tg.start_soon(
                        self.pump, conn, SERVER_TO_CLIENT, server, client, tg.cancel_scope
                    )
            finally:
                if self.pcap is not None:
                    self.pcap.close(_now(), conn)  # also on Ctrl-C: the file ends cleanly

    async def pump(
        self,
        conn: int,
        direction: str,
        source: ByteStream,
        sink: ByteStream,
        both: anyio.CancelScope,
    ) -> None:
        decoder = WireDecoder()
        who = "client" if direction == CLIENT_TO_SERVER else "server"
        while True:
            try:
                data = await source.receive()
            except (anyio.EndOfStream, anyio.BrokenResourceError, OSError):
                self.note(conn, f"{who} closed")
                both.cancel()  # ZMTP has no half-close: close both sides, as libzmq would
                return
            when = _now()
            self.capture.write(when, conn, direction, data)
            if self.pcap is not None:
                self.pcap.data(when, conn, direction == CLIENT_TO_SERVER, data)
            for event in decoder.feed(data):
                self.printer.event(when, conn, direction, event)
            try:
                await sink.send(data)
            except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
                self.note(conn, f"{'server' if who == 'client' else 'client'} gone")
                both.cancel()
                return


async def relay(args: argparse.Namespace) -> int:
    printer = Printer(sys.stdout, args.json)
    try:
        capture_file = open(args.capture, "w") if args.capture else None  # noqa: SIM115
        pcap_file = open(args.pcap, "wb") if args.pcap else None  # noqa: SIM115
    except OSError as exc:
        print(f"zmtp trace: cannot write {exc.filename}: {exc.strerror or exc}", file=sys.stderr)
        return 1
    try:
        upstream = stream_endpoint(args.to)
        port = upstream.port if isinstance(upstream, TcpEndpoint) else DEFAULT_SERVER_PORT
        pcap = PcapngWriter(pcap_file, port) if pcap_file is not None else None
        relay = Relay(args.to, printer, Capture(capture_file), pcap)
        try:
            bound = await listen(stream_endpoint(args.listen), backlog=16)
        except OSError as exc:
            print(f"zmtp trace: cannot listen on {args.listen}: {exc}", file=sys.stderr)
            return 1
        print(
            f"zmtp trace: listening on {bound.endpoint}, relaying to {relay.upstream}",
            file=sys.stderr,
            flush=True,
        )
        with anyio.CancelScope() as scope:
            async with anyio.create_task_group() as tg:
                tg.start_soon(until_interrupted, scope)
                await bound.listener.serve(relay.handle, tg)
        await bound.aclose()
        print("zmtp trace: stopped", file=sys.stderr, flush=True)
        return 0
    finally:
        if capture_file is not None:
            capture_file.close()
        if pcap_file is not None:
            pcap_file.close()


def read_capture(lines: Iterator[str], printer: Printer, pcap: PcapngWriter | None = None) -> int:
    """Decode a capture, printing what the live trace printed (and writing it to ``pcap``:
    each connection ends at its last record)."""
    decoders: dict[tuple[int, str], WireDecoder] = {}
    last: dict[int, float] = {}
    try:
        for number, line in enumerate(lines, 1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
                when, conn, what = float(record["time"]), int(record["conn"]), str(record["dir"])
                if what == "note":
                    printer.note(when, conn, str(record.get("note", "")))
                    continue
                if what not in (CLIENT_TO_SERVER, SERVER_TO_CLIENT):
                    raise ValueError(f"unknown direction {what!r}")
                data = base64.b64decode(record.get("data", ""), validate=True)
            except (ValueError, KeyError, TypeError) as exc:
                print(f"zmtp trace: capture line {number}: {exc}", file=sys.stderr)
                return 2
            if pcap is not None:
                pcap.data(when, conn, what == CLIENT_TO_SERVER, data)
                last[conn] = when
            decoder = decoders.setdefault((conn, what), WireDecoder())
            for event in decoder.feed(data):
                printer.event(when, conn, what, event)
        return 0
    finally:
        if pcap is not None:
            for conn, when in last.items():
                pcap.close(when, conn)


def run(args: argparse.Namespace) -> int:
    if args.read is not None:
        if args.listen or args.to:
            print("zmtp trace: --read decodes a capture: no --listen/--to", file=sys.stderr)
            return 2
        printer = Printer(sys.stdout, args.json)
        try:
            capture = sys.stdin if args.read == "-" else open(args.read)  # noqa: SIM115
        except OSError as exc:
            print(f"zmtp trace: cannot read {args.read}: {exc}", file=sys.stderr)
            return 2
        try:
            pcap_file = open(args.pcap, "wb") if args.pcap else None  # noqa: SIM115
        except OSError as exc:
            print(f"zmtp trace: cannot write {args.pcap}: {exc}", file=sys.stderr)
            return 2
        try:
            pcap = PcapngWriter(pcap_file) if pcap_file is not None else None
            return read_capture(iter(capture), printer, pcap)
        finally:
            if pcap_file is not None:
                pcap_file.close()
            if capture is not sys.stdin:
                capture.close()
    if not args.listen or not args.to:
        print("zmtp trace: needs --listen and --to (or --read FILE)", file=sys.stderr)
        return 2
    try:
        stream_endpoint(args.listen)
        stream_endpoint(args.to)
    except ValueError as exc:
        print(f"zmtp trace: {exc}", file=sys.stderr)
        return 2

    async def main() -> int:
        return await relay(args)

    return run_on(args.backend, main)
