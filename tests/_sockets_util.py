"""Helpers for the socket-type tests (tests/test_sockets_*.py, tests/test_interop_sockets_*.py).

* ``bindable(transport)``: an endpoint to bind for tcp / ipc / inproc;
* ``linked(...)``: bind one of our sockets, connect another, wait for both handshakes;
* ``RawPeer``: a hand-written ZMTP peer on a raw anyio TCP stream. Its bytes are spelled out
  here (not produced by our encoder) so that the byte-level tests check our sockets against
  the RFCs, not against themselves;
* pyzmq helpers: sockets with ``linger=0`` and timeouts, blocking calls run in a worker thread.

Nothing sleeps to wait for something: waits are on monitor events or messages, bounded by
``anyio.fail_after(TIMEOUT)``.
"""

from __future__ import annotations

import os
import tempfile
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager
from typing import Any, TypeVar

import anyio
from anyio.abc import SocketAttribute, SocketListener, SocketStream

import zmtp

#: Upper bound for anything that should happen "now" (a passing test never waits for it).
TIMEOUT = 5.0

E = TypeVar("E", bound=zmtp.MonitorEvent)


def unique(prefix: str = "zt") -> str:
    return f"{prefix}-{uuid.uuid4().hex[:10]}"


def ipc_path() -> str:
    """A short socket path (sun_path is limited to ~107 bytes; pytest's tmp_path can be long)."""
    return os.path.join(tempfile.gettempdir(), unique() + ".sock")


def bindable(transport: str) -> str:
    if transport == "tcp":
        return "tcp://127.0.0.1:*"
    if transport == "ipc":
        return f"ipc://{ipc_path()}"
    if transport == "inproc":
        return f"inproc://{unique()}"
    raise AssertionError(transport)


async def wait_event(monitor: zmtp.Monitor, kind: type[E]) -> E:
    with anyio.fail_after(TIMEOUT):
        event = await monitor.wait_for(kind)
    assert isinstance(event, kind)
    return event


@asynccontextmanager
async def linked(
    bind_type: str,
    connect_type: str,
    transport: str = "tcp",
    bind_options: dict[str, Any] | None = None,
    connect_options: dict[str, Any] | None = None,
    before_connect: Callable[[zmtp.Socket, zmtp.Socket], None] | None = None,
) -> AsyncIterator[tuple[zmtp.Socket, zmtp.Socket]]:
    """A bound and a connected socket of ours, both handshakes complete."""
    async with (
        zmtp.Socket(bind_type, linger=0, **(bind_options or {})) as bound,
        zmtp.Socket(connect_type, linger=0, **(connect_options or {})) as connecting,
    ):
        async with bound.monitor() as bmon, connecting.monitor() as cmon:
            endpoint = await bound.bind(bindable(transport))
            if before_connect is not None:
                before_connect(bound, connecting)
            await connecting.connect(endpoint)
            await wait_event(bmon, zmtp.HandshakeSucceeded)
            await wait_event(cmon, zmtp.HandshakeSucceeded)
        yield bound, connecting


async def recv_within(sock: zmtp.Socket, seconds: float = TIMEOUT) -> list[bytes]:
    with anyio.fail_after(seconds):
        return await sock.recv_multipart()


async def nothing_pending(sock: zmtp.Socket) -> bool:
    """True if no message is waiting *now* (the strategy is asked directly, no waiting)."""
    await anyio.lowlevel.checkpoint()
    return sock.engine.strategy.try_recv() is None


# ---------------------------------------------------------------------- raw ZMTP peer

MORE, LONG, COMMAND = 0x01, 0x02, 0x04


def frame(body: bytes, more: bool = False, command: bool = False) -> bytes:
    """One ZMTP frame (RFC 37 "Framing"), short or long as the size requires."""
    flags = (MORE if more else 0) | (COMMAND if command else 0)
    if len(body) > 255:
        return bytes([flags | LONG]) + len(body).to_bytes(8, "big") + body
    return bytes([flags, len(body)]) + body


def message(*parts: bytes) -> bytes:
    return b"".join(frame(p, more=i < len(parts) - 1) for i, p in enumerate(parts))


def command(name: bytes, data: bytes = b"") -> bytes:
    return frame(bytes([len(name)]) + name + data, command=True)


def properties(props: dict[str, bytes]) -> bytes:
    out = b""
    for name, value in props.items():
        raw = name.encode()
        out += bytes([len(raw)]) + raw + len(value).to_bytes(4, "big") + value
    return out


def parse_properties(data: bytes) -> dict[str, bytes]:
    props, pos = {}, 0
    while pos < len(data):
        n = data[pos]
        name = data[pos + 1 : pos + 1 + n].decode()
        pos += 1 + n
        size = int.from_bytes(data[pos : pos + 4], "big")
        props[name] = data[pos + 4 : pos + 4 + size]
        pos += 4 + size
    return props


def greeting(minor: int = 1) -> bytes:
    """A NULL-mechanism greeting for ZMTP 3.``minor``, as-server 0."""
    return (
        b"\xff"
        + b"\x00" * 8
        + b"\x7f"
        + bytes([3, minor])
        + b"NULL".ljust(20, b"\0")
        + (b"\x00" * 32)
    )


class RawPeer:
    """A ZMTP peer written by hand on a byte stream (NULL mechanism)."""

    def __init__(self, stream: SocketStream) -> None:
        self.stream = stream
        self.buf = bytearray()
        self.peer_properties: dict[str, bytes] = {}
        self.peer_minor = -1

    async def _fill(self, n: int) -> None:
        while len(self.buf) < n:
            with anyio.fail_after(TIMEOUT):
                self.buf += await self.stream.receive()

    async def read_exact(self, n: int) -> bytes:
        await self._fill(n)
        data = bytes(self.buf[:n])
        del self.buf[:n]
        return data

    async def send(self, data: bytes) -> None:
        await self.stream.send(data)

    async def handshake(
        self, socket_type: str, minor: int = 1, extra: dict[str, bytes] | None = None
    ) -> dict[str, bytes]:
        """Exchange greetings and READY; returns the peer's READY properties."""
        await self.send(greeting(minor))
        peer = await self.read_exact(64)
        assert peer[:10] == b"\xff" + b"\x00" * 8 + b"\x7f", peer
        self.peer_minor = peer[11]
        props = {"Socket-Type": socket_type.encode(), **(extra or {})}
        await self.send(command(b"READY", properties(props)))
        flags, body = await self.read_frame()
        assert flags & COMMAND and body[1:6] == b"READY", (flags, body)
        self.peer_properties = parse_properties(body[6:])
        return self.peer_properties

    def _parse_frame(self, pos: int) -> tuple[int, bytes, int] | None:
        """(flags, body, end) of the frame at ``pos`` in the buffer, or None if incomplete."""
        buf = self.buf
        if len(buf) < pos + 2:
            return None
        flags = buf[pos]
        if flags & LONG:
            if len(buf) < pos + 9:
                return None
            start = pos + 9
            end = start + int.from_bytes(buf[pos + 1 : pos + 9], "big")
        else:
            start = pos + 2
            end = start + buf[pos + 1]
        if len(buf) < end:
            return None
        return flags, bytes(buf[start:end]), end

    async def _next(self, whole_message: bool) -> tuple[int, list[bytes], int]:
        """Wait for a complete frame (or message); nothing is consumed until it is complete,
        so a cancelled read loses nothing."""
        while True:
            parsed = self._parse_frame(0)
            if parsed is not None:
                flags, body, end = parsed
                parts = [body]
                while whole_message and not flags & COMMAND and flags & MORE:
                    parsed = self._parse_frame(end)
                    if parsed is None:
                        break
                    flags, body, end = parsed
                    parts.append(body)
                else:
                    return self.buf[0], parts, end
            with anyio.fail_after(TIMEOUT):
                self.buf += await self.stream.receive()

    async def read_frame(self) -> tuple[int, bytes]:
        flags, parts, end = await self._next(whole_message=False)
        del self.buf[:end]
        return flags, parts[0]

    async def read_raw_frame(self) -> bytes:
        """The next frame exactly as it is on the wire (header included)."""
        _, _, end = await self._next(whole_message=False)
        raw = bytes(self.buf[:end])
        del self.buf[:end]
        return raw

    async def read_item(self) -> tuple[str, Any]:
        """("command", (name, data)) or ("message", [parts]); PINGs are not expected here."""
        flags, parts, end = await self._next(whole_message=True)
        del self.buf[:end]
        if flags & COMMAND:
            body = parts[0]
            n = body[0]
            return "command", (body[1 : 1 + n], body[1 + n :])
        return "message", parts

    async def read_message(self) -> list[bytes]:
        kind, value = await self.read_item()
        assert kind == "message", value
        return list(value)

    async def read_command(self) -> tuple[bytes, bytes]:
        kind, value = await self.read_item()
        assert kind == "command", value
        return value  # type: ignore[no-any-return]

    async def read_message_briefly(self) -> list[bytes] | None:
        """The next message, or None if none arrives within 10 ms (for probe loops)."""
        with anyio.move_on_after(0.01):
            return await self.read_message()
        return None

    async def expect_silence(self, seconds: float = 0.05) -> None:
        """Assert nothing arrives for a short while (used only after a positive sync point)."""
        with anyio.move_on_after(seconds):
            self.buf += await self.stream.receive()
        assert not self.buf, bytes(self.buf)

    async def aclose(self) -> None:
        await self.stream.aclose()


@asynccontextmanager
async def raw_client(endpoint: str) -> AsyncIterator[RawPeer]:
    """A raw peer connected to one of our sockets bound on ``tcp://host:port``."""
    host, port = endpoint.removeprefix("tcp://").rsplit(":", 1)
    stream = await anyio.connect_tcp(host, int(port))
    peer = RawPeer(stream)
    try:
        yield peer
    finally:
        await peer.aclose()


class RawServer:
    """A TCP listener our socket connects to; ``accept()`` yields one RawPeer per connection."""

    def __init__(self, listener: SocketListener) -> None:
        self.listener = listener
        self.endpoint = f"tcp://127.0.0.1:{listener.extra(SocketAttribute.local_port)}"

    async def accept(self) -> RawPeer:
        with anyio.fail_after(TIMEOUT):
            return RawPeer(await self.listener.accept())


@asynccontextmanager
async def raw_server() -> AsyncIterator[RawServer]:
    multi = await anyio.create_tcp_listener(local_host="127.0.0.1")
    try:
        listener = multi.listeners[0]
        assert isinstance(listener, SocketListener)
        yield RawServer(listener)
    finally:
        await multi.aclose()


# ---------------------------------------------------------------------- pyzmq


def zmq_module() -> Any:
    import zmq

    return zmq


@contextmanager
def zsocket(kind: int, **options: Any) -> Iterator[Any]:
    """A pyzmq socket with linger 0 and 5 s timeouts (options set by attribute name)."""
    zmq = zmq_module()
    sock = zmq.Context.instance().socket(kind)
    sock.linger = 0
    sock.rcvtimeo = sock.sndtimeo = int(TIMEOUT * 1000)
    for name, value in options.items():
        setattr(sock, name, value)
    try:
        yield sock
    finally:
        sock.close(linger=0)


def zbind(sock: Any, transport: str) -> str:
    if transport == "tcp":
        port = sock.bind_to_random_port("tcp://127.0.0.1")
        return f"tcp://127.0.0.1:{port}"
    endpoint = f"ipc://{ipc_path()}"
    sock.bind(endpoint)
    return endpoint


async def zrecv(sock: Any) -> list[bytes]:
    """recv_multipart in a worker thread (bounded by the socket's rcvtimeo)."""
    parts: list[bytes] = await anyio.to_thread.run_sync(sock.recv_multipart)
    return parts


async def zsend(sock: Any, parts: list[bytes]) -> None:
    await anyio.to_thread.run_sync(sock.send_multipart, parts)


async def connect_ours(ours: zmtp.Socket, theirs: Any, transport: str, ours_binds: bool) -> str:
    """Link our socket and a pyzmq socket in the given roles; wait for our handshake."""
    async with ours.monitor() as mon:
        if ours_binds:
            endpoint = await ours.bind(bindable(transport))
            theirs.connect(endpoint)
        else:
            endpoint = zbind(theirs, transport)
            await ours.connect(endpoint)
        await wait_event(mon, zmtp.HandshakeSucceeded)
    return endpoint


# ---------------------------------------------------------------------- probing a path


async def probe_until_received(
    send: Callable[[bytes], Awaitable[None]],
    recv: Callable[[], Awaitable[list[bytes] | None]],
    prefix: bytes = b"probe",
) -> None:
    """Send numbered probes until one comes out the other end, then consume the rest.

    For paths that only open at some unknown moment (a subscription reaching a publisher, a
    bound libzmq socket attaching our pipe). ``recv`` returns the next message or None after
    a short wait. Once the path is open every later probe arrives, in order, so reading up
    to the last one sent is exact: nothing is left in flight, and nothing is guessed.
    """
    sent = 0
    got: list[bytes] | None = None
    with anyio.fail_after(TIMEOUT):
        while got is None:
            sent += 1
            await send(prefix + b"-%d" % sent)
            got = await recv()
        last = [prefix + b"-%d" % sent]
        while got != last:
            assert got is None or got[0].startswith(prefix), got
            got = await recv()


def ours_briefly(sock: zmtp.Socket) -> Callable[[], Awaitable[list[bytes] | None]]:
    async def recv() -> list[bytes] | None:
        with anyio.move_on_after(0.01):
            return await sock.recv_multipart()
        return None

    return recv


async def send_until_received(radio: zmtp.Socket, dish: zmtp.Socket, group: bytes) -> None:
    """Probe ``group`` from a RADIO until the DISH gets one: over tcp/ipc/inproc until its JOIN
    has reached the RADIO; over udp until the RADIO's socket is open (or past a lost
    datagram), as UDP gives no other signal."""
    briefly = ours_briefly(dish)

    async def recv() -> list[bytes] | None:
        message = await briefly()
        if message is None:
            return None
        assert message[0] == group
        return message[1:]

    await probe_until_received(lambda data: radio.send_group(group, data), recv)


def zmq_briefly(sock: Any) -> Callable[[], Awaitable[list[bytes] | None]]:
    def poll_recv() -> list[bytes] | None:
        if sock.poll(10):
            parts: list[bytes] = sock.recv_multipart()
            return parts
        return None

    async def recv() -> list[bytes] | None:
        return await anyio.to_thread.run_sync(poll_recv)

    return recv


def ours_sender(sock: zmtp.Socket) -> Callable[[bytes], Awaitable[None]]:
    return sock.send


def zmq_sender(sock: Any) -> Callable[[bytes], Awaitable[None]]:
    async def send(data: bytes) -> None:
        sock.send(data)  # PUB/XPUB/XSUB never block

    return send
