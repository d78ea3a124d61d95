"""Shared helpers for the engine tests (our sockets against our sockets). No tests here.

* endpoints for every transport (``endpoint_for``, the ``transport`` / ``stream_transport``
  fixtures);
* ``linked(...)``: a bound and a connected socket whose handshakes both completed;
* ``RawPeer``: a hand-written ZMTP peer on a raw anyio byte stream, for bad input and
  heartbeat tests. Its wire bytes are spelled out here rather than produced by our encoder, so
  that an encoder bug cannot hide behind a decoder bug.

Nothing here sleeps to wait for something to happen: waits are on monitor events or on
received messages, always bounded by ``anyio.fail_after(TIMEOUT)``.
"""

from __future__ import annotations

import contextlib
import socket as pysocket
import struct
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import anyio
import pytest
from anyio.abc import ByteStream, SocketAttribute

import zmtp

#: Upper bound for anything that should happen "now". Generous: a loaded CI machine is slow,
#: and a passing test never waits for it.
TIMEOUT = 5.0

TRANSPORTS = ("tcp", "ipc", "ipc-abstract", "inproc")
STREAM_TRANSPORTS = ("tcp", "ipc", "ipc-abstract")

E = TypeVar("E", bound=zmtp.MonitorEvent)


def unique_name(prefix: str = "zmtp-test") -> str:
    return f"{prefix}-{uuid.uuid4().hex[:12]}"


def endpoint_for(transport: str, tmp_path: Path) -> str:
    """A bindable endpoint for ``transport`` (tcp uses an ephemeral port)."""
    if transport == "tcp":
        return "tcp://127.0.0.1:*"
    if transport == "ipc":
        return f"ipc://{tmp_path / 'x.sock'}"
    if transport == "ipc-abstract":
        return f"ipc://@{unique_name()}"
    if transport == "inproc":
        return f"inproc://{unique_name()}"
    raise AssertionError(transport)


@pytest.fixture(params=TRANSPORTS)
def transport(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture(params=STREAM_TRANSPORTS)
def stream_transport(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def endpoint(transport: str, tmp_path: Path) -> str:
    """A bind address on each transport (tcp, ipc path, abstract ipc, inproc)."""
    return endpoint_for(transport, tmp_path)


@pytest.fixture
def stream_endpoint(stream_transport: str, tmp_path: Path) -> str:
    """A bind address on each stream transport (tcp, ipc path, abstract ipc)."""
    return endpoint_for(stream_transport, tmp_path)


async def wait_event(monitor: zmtp.Monitor, kind: type[E], timeout: float = TIMEOUT) -> E:
    """The next event of ``kind`` (skipping others), or fail the test after ``timeout``."""
    with anyio.fail_after(timeout):
        event = await monitor.wait_for(kind)
    assert isinstance(event, kind)
    return event


async def drain_events(monitor: zmtp.Monitor, timeout: float = TIMEOUT) -> list[type[Any]]:
    """Every remaining event type of a monitor, until MonitorStopped ends the iteration."""
    with anyio.fail_after(timeout):
        return [type(event) async for event in monitor]


@dataclass
class Link:
    """Two connected sockets and the monitors opened before they were linked."""

    binder: zmtp.Socket
    connector: zmtp.Socket
    endpoint: str  #: the resolved endpoint (real port)
    binder_monitor: zmtp.Monitor
    connector_monitor: zmtp.Monitor


@asynccontextmanager
async def linked(
    binder_type: zmtp.SocketType,
    connector_type: zmtp.SocketType,
    endpoint: str,
    binder_options: dict[str, Any] | None = None,
    connector_options: dict[str, Any] | None = None,
    binder_extension: zmtp.SocketExtension | None = None,
    connector_extension: zmtp.SocketExtension | None = None,
    **common: Any,
) -> AsyncIterator[Link]:
    """Bind one socket, connect another, and yield once *both* handshakes completed.

    ``linger=0`` unless the options say otherwise (the tests that check linger set it).
    """
    b_opts = {"linger": 0, **common, **(binder_options or {})}
    c_opts = {"linger": 0, **common, **(connector_options or {})}
    async with (
        zmtp.Socket(binder_type, **b_opts) as binder,
        zmtp.Socket(connector_type, **c_opts) as connector,
    ):
        if binder_extension is not None:
            binder.install_extension(binder_extension)
        if connector_extension is not None:
            connector.install_extension(connector_extension)
        bmon, cmon = binder.monitor(), connector.monitor()
        resolved = await binder.bind(endpoint)
        await connector.connect(resolved)
        await wait_event(bmon, zmtp.HandshakeSucceeded)
        await wait_event(cmon, zmtp.HandshakeSucceeded)
        yield Link(binder, connector, resolved, bmon, cmon)


def tcp_host_port(endpoint: str) -> tuple[str, int]:
    host, _, port = endpoint.removeprefix("tcp://").rpartition(":")
    return host.strip("[]"), int(port)


def ipv6_loopback_available() -> bool:
    """Whether this machine can bind ``::1`` (sandboxes and containers often cannot)."""
    if not pysocket.has_ipv6:
        return False
    try:
        with pysocket.socket(pysocket.AF_INET6, pysocket.SOCK_STREAM) as s:
            s.bind(("::1", 0))
    except OSError:
        return False
    return True


# --------------------------------------------------------------------------- raw ZMTP peer

#: A ZMTP 3.1 greeting with the NULL mechanism, as-server 0 (RFC 37), spelled out byte by byte.
NULL_GREETING = (
    b"\xff"
    + b"\x00" * 8
    + b"\x7f"  # signature
    + b"\x03\x01"  # version 3.1
    + b"NULL"
    + b"\x00" * 16  # mechanism, zero-padded to 20 bytes
    + b"\x00"  # as-server
    + b"\x00" * 31  # filler
)
assert len(NULL_GREETING) == 64

#: What a raw stream raises when the other side has gone.
STREAM_ERRORS = (anyio.EndOfStream, anyio.BrokenResourceError, anyio.ClosedResourceError, OSError)

COMMAND_FLAG = 0x04
LONG_FLAG = 0x02
MORE_FLAG = 0x01


def command_frame(name: bytes, data: bytes = b"") -> bytes:
    """A short command frame (bodies below 256 bytes are all the tests need)."""
    body = bytes([len(name)]) + name + data
    assert len(body) < 256
    return bytes([COMMAND_FLAG, len(body)]) + body


def ready_frame(socket_type: bytes, **extra: bytes) -> bytes:
    """READY with a Socket-Type property (and any extra ones, ``X_Name`` -> ``X-Name``)."""
    props = {"Socket-Type": socket_type}
    props.update({name.replace("_", "-"): value for name, value in extra.items()})
    data = b"".join(
        bytes([len(k)]) + k.encode() + struct.pack(">I", len(v)) + v for k, v in props.items()
    )
    return command_frame(b"READY", data)


def ping_frame(ttl_deciseconds: int = 0, context: bytes = b"") -> bytes:
    return command_frame(b"PING", struct.pack(">H", ttl_deciseconds) + context)


def message_frames(*parts: bytes) -> bytes:
    out = []
    for i, part in enumerate(parts):
        more = MORE_FLAG if i < len(parts) - 1 else 0
        if len(part) < 256:
            out.append(bytes([more, len(part)]) + part)
        else:
            out.append(bytes([more | LONG_FLAG]) + struct.pack(">Q", len(part)) + part)
    return b"".join(out)


class RawPeer:
    """A raw byte stream with a read buffer: just enough ZMTP to script a peer by hand."""

    def __init__(self, stream: ByteStream) -> None:
        self.stream = stream
        self._buf = bytearray()

    @property
    def local_address(self) -> str:
        """This end's "host:port", as our socket reports it in monitor events."""
        host, port = self.stream.extra(SocketAttribute.local_address)[:2]
        return f"{host}:{port}"

    async def send(self, data: bytes) -> None:
        await self.stream.send(data)

    async def receive_exactly(self, n: int) -> bytes:
        while len(self._buf) < n:
            self._buf += await self.stream.receive()
        data = bytes(self._buf[:n])
        del self._buf[:n]
        return data

    async def read_frame(self) -> tuple[int, bytes]:
        """(flags, body) of the next frame."""
        flags, size = await self.receive_exactly(2)
        if flags & LONG_FLAG:
            rest = await self.receive_exactly(7)
            size = struct.unpack(">Q", bytes([size]) + rest)[0]
        return flags, await self.receive_exactly(size)

    async def read_raw_command(self) -> bytes:
        """The next frame, which must be a command, exactly as it was on the wire."""
        flags, body = await self.read_frame()
        assert flags & COMMAND_FLAG, f"expected a command frame, got flags 0x{flags:02x}"
        return bytes([flags, len(body)]) + body if len(body) < 256 else body

    async def read_command(self) -> tuple[bytes, bytes]:
        flags, body = await self.read_frame()
        assert flags & COMMAND_FLAG, f"expected a command frame, got flags 0x{flags:02x}"
        n = body[0]
        return body[1 : 1 + n], body[1 + n :]

    async def handshake(self, socket_type: bytes) -> bytes:
        """Send our greeting + READY, read the peer's; returns the peer's READY data."""
        await self.send(NULL_GREETING + ready_frame(socket_type))
        greeting = await self.receive_exactly(64)
        assert greeting[:1] == b"\xff" and greeting[10:12] == b"\x03\x01"
        name, data = await self.read_command()
        assert name == b"READY"
        return data

    async def wait_closed(self) -> None:
        """Read (and discard) until the other side closes the connection."""
        with contextlib.suppress(*STREAM_ERRORS):
            while True:
                await self.stream.receive()


@asynccontextmanager
async def raw_client(endpoint: str) -> AsyncIterator[RawPeer]:
    """A raw TCP connection to one of our bound sockets."""
    host, port = tcp_host_port(endpoint)
    stream = await anyio.connect_tcp(host, port)
    async with stream:
        yield RawPeer(stream)


@asynccontextmanager
async def raw_server(
    handler: Callable[[RawPeer], Awaitable[None]],
) -> AsyncIterator[str]:
    """A raw TCP listener on 127.0.0.1; every accepted connection runs ``handler`` (and is
    closed when it returns). Yields the ``tcp://`` endpoint to connect our socket to."""
    listener = await anyio.create_tcp_listener(local_host="127.0.0.1")
    port = listener.extra(SocketAttribute.local_port)

    async def serve(stream: ByteStream) -> None:
        # Our socket may go away at any point (the test ends, it drops a bad peer): that
        # ends the handler, it is not an error of the test.
        with contextlib.suppress(*STREAM_ERRORS):
            async with stream:
                await handler(RawPeer(stream))

    async with listener, anyio.create_task_group() as tg:
        tg.start_soon(listener.serve, serve)
        yield f"tcp://127.0.0.1:{port}"
        tg.cancel_scope.cancel()


async def assert_no_event(
    monitor: zmtp.Monitor, kind: type[zmtp.MonitorEvent], seconds: float
) -> None:
    """Fail if an event of ``kind`` arrives within ``seconds`` (absence needs a timer)."""
    with anyio.move_on_after(seconds):
        event = await monitor.wait_for(kind)
        pytest.fail(f"unexpected {event!r}")
