"""A scriptable raw ZMTP peer: it says exactly the bytes a test tells it to, right or wrong.

    async with RawPeer.listen() as peer:          # or: await RawPeer.connect(endpoint)
        await sock.connect(peer.endpoint)
        await peer.accept()
        await peer.send(peer.greeting())          # a correct NULL greeting...
        assert (await peer.recv_greeting()).mechanism == "NULL"
        await peer.send(peer.ready("PUSH"))       # ...and READY as a PUSH
        await peer.recv_frame()                   # the socket's READY
        await peer.send(peer.message(b"hello"))   # a message the socket receives
        await peer.send(peer.frame_header(1 << 40))   # then a frame nobody should accept
        await peer.wait_closed()                  # the socket drops the connection

The builders return bytes, so a test can cut, repeat, reorder or corrupt them: a bad greeting
(``greeting(major=1)``: ZMTP 2.0; ``b"GET / HTTP/1.1"``), an oversized frame (``frame_header(size)``
followed by nothing: silence mid-frame), any command (``command(b"PING", b"...")``), a CURVE
box of random bytes (``command(b"MESSAGE", os.urandom(40))``). Its bytes and its frame
parsing are spelled out by hand (:mod:`zmtp.testing.wire`), not zmtp's own encoders, so a
byte-level test checks a socket against the RFCs rather than against itself. It runs on asyncio
and trio; every read waits at most :attr:`RawPeer.timeout` seconds (``TimeoutError``).

For a socket that connects several times (or a test that accepts many connections),
:func:`raw_server` yields a :class:`RawServer` whose ``accept()`` returns a new peer each time;
:func:`raw_client` connects one, closed at the end of its ``async with``;
:func:`serve_raw_peers` runs a handler on every connection in the background.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from types import TracebackType
from typing import Any

import anyio
from anyio.abc import ByteStream, SocketAttribute, SocketListener

from ..protocol.greeting import GREETING_SIZE, PeerGreeting, parse_greeting
from . import wire
from .wire import COMMAND, LONG, MORE

#: Default bound, in seconds, on each read of a :class:`RawPeer` (a passing test never waits
#: that long; a failing one fails instead of hanging).
TIMEOUT = 5.0


class RawPeer:
    """One raw connection: accepted from :meth:`listen` or a :class:`RawServer`, made by
    :meth:`connect` / :func:`raw_client`, or wrapping a ``stream`` the test opened itself."""

    def __init__(
        self, stream: ByteStream | None = None, *, timeout: float | None = TIMEOUT
    ) -> None:
        self.endpoint = ""
        self.stream: ByteStream | None = stream
        #: Seconds each read may wait (None: no bound).
        self.timeout = timeout
        self._listener: SocketListener | None = None
        self.buf = bytearray()  #: received, not yet read
        self.peer_properties: dict[str, bytes] = {}  #: the READY properties :meth:`handshake` got
        self.peer_minor = -1  #: the minor revision of the greeting :meth:`handshake` got

    # opening

    @classmethod
    def listen(cls) -> RawPeer:
        """Listen on 127.0.0.1 (use as ``async with``); :meth:`accept` takes one client."""
        return cls()

    async def __aenter__(self) -> RawPeer:
        if self.stream is None and self._listener is None:
            multi = await anyio.create_tcp_listener(local_host="127.0.0.1")
            listener = multi.listeners[0]
            assert isinstance(listener, SocketListener)
            self._listener = listener
            self.endpoint = f"tcp://127.0.0.1:{listener.extra(SocketAttribute.local_port)}"
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    async def accept(self) -> None:
        assert self._listener is not None, "use RawPeer.listen() as an async context manager"
        self.stream = await self._listener.accept()

    @classmethod
    async def connect(cls, endpoint: str) -> RawPeer:
        """Connect to a ``tcp://host:port`` or ``ipc://path`` endpoint (``ipc://@name``: the
        abstract namespace)."""
        stream: ByteStream
        if endpoint.startswith("ipc://"):
            path = endpoint.removeprefix("ipc://")
            stream = await anyio.connect_unix("\0" + path[1:] if path.startswith("@") else path)
        else:
            host, port = endpoint.removeprefix("tcp://").rsplit(":", 1)
            stream = await anyio.connect_tcp(host.strip("[]"), int(port))
        peer = cls(stream)
        peer.endpoint = endpoint
        return peer

    async def aclose(self) -> None:
        if self.stream is not None:
            await self.stream.aclose()
        if self._listener is not None:
            await self._listener.aclose()

    @property
    def local_address(self) -> str:
        """This end's ``"host:port"`` (tcp; the path over ipc). For a peer that connected to a
        socket, it is that socket's monitor events' ``peer_address``: which connection an event
        is about."""
        assert self.stream is not None
        address = self.stream.extra(SocketAttribute.local_address)
        if isinstance(address, str):  # ipc: the path
            return address
        return f"{address[0]}:{address[1]}"

    # bytes to send

    @staticmethod
    def greeting(
        mechanism: bytes = b"NULL", as_server: bool = False, major: int = 3, minor: int = 1
    ) -> bytes:
        """A 64-byte greeting; any version (``major=1`` is a ZMTP 2.0 peer)."""
        return (
            b"\xff"
            + bytes(8)
            + b"\x7f"
            + bytes((major, minor))
            + mechanism[:20].ljust(20, b"\0")
            + (b"\x01" if as_server else b"\x00")
            + bytes(31)
        )

    @staticmethod
    def command(name: bytes, data: bytes = b"") -> bytes:
        return wire.command(name, data)

    @staticmethod
    def ready(socket_type: str, **properties: bytes) -> bytes:
        """READY with ``Socket-Type`` and any other properties (``Identity=b"x"``)."""
        props = {"Socket-Type": socket_type.encode(), **properties}
        return wire.command(b"READY", wire.properties(props))

    @staticmethod
    def message(*parts: bytes) -> bytes:
        return wire.message(*parts)

    @staticmethod
    def frame_header(size: int, more: bool = False, command: bool = False) -> bytes:
        """Only a frame's header, announcing ``size`` bytes (send the body, or don't)."""
        flags = (MORE if more else 0) | (COMMAND if command else 0)
        if size > 255:
            return bytes((flags | LONG,)) + size.to_bytes(8, "big")
        return bytes((flags, size))

    # talking

    async def send(self, data: bytes) -> None:
        assert self.stream is not None
        await self.stream.send(data)

    async def handshake(
        self, socket_type: str, minor: int = 1, extra: dict[str, bytes] | None = None
    ) -> dict[str, bytes]:
        """A whole NULL handshake as ``socket_type`` (ZMTP 3.``minor``, ``extra`` READY
        properties): greetings and READY both ways; returns the other side's properties."""
        await self.send(wire.greeting(minor))
        peer = await self.read_exact(64)
        assert peer[:10] == b"\xff" + b"\x00" * 8 + b"\x7f", peer
        self.peer_minor = peer[11]
        props = {"Socket-Type": socket_type.encode(), **(extra or {})}
        await self.send(wire.command(b"READY", wire.properties(props)))
        flags, body = await self.read_frame()
        assert flags & COMMAND and body[1:6] == b"READY", (flags, body)
        self.peer_properties = wire.parse_properties(body[6:])
        return self.peer_properties

    async def recv_greeting(self) -> PeerGreeting:
        """The other side's 64-byte greeting, parsed (whatever its mechanism)."""
        data = await self.read_exact(GREETING_SIZE)
        mechanism = bytes(data[12:32]).rstrip(b"\0")
        return parse_greeting(data, mechanism)

    async def read_exact(self, n: int) -> bytes:
        """The next ``n`` bytes, whatever they are."""
        while len(self.buf) < n:
            await self._receive()
        data = bytes(self.buf[:n])
        del self.buf[:n]
        return data

    async def recv_frame(self) -> tuple[int, bytes]:
        """The next raw frame: ``(flags, body)``."""
        flags, parts, end = await self._next(whole_message=False)
        del self.buf[:end]
        return flags, parts[0]

    read_frame = recv_frame

    async def read_raw_frame(self) -> bytes:
        """The next frame exactly as it is on the wire (header included)."""
        _, _, end = await self._next(whole_message=False)
        raw = bytes(self.buf[:end])
        del self.buf[:end]
        return raw

    async def read_item(self) -> tuple[str, Any]:
        """``("command", (name, data))`` or ``("message", [parts])``, whichever comes next."""
        flags, parts, end = await self._next(whole_message=True)
        del self.buf[:end]
        if flags & COMMAND:
            body = parts[0]
            n = body[0]
            return "command", (body[1 : 1 + n], body[1 + n :])
        return "message", parts

    async def read_message(self) -> list[bytes]:
        """The next message (a command instead fails the test)."""
        kind, value = await self.read_item()
        assert kind == "message", value
        return list(value)

    async def read_command(self) -> tuple[bytes, bytes]:
        """The next command, ``(name, data)`` (a message instead fails the test)."""
        kind, value = await self.read_item()
        assert kind == "command", value
        name, data = value
        return name, data

    async def read_message_briefly(self) -> list[bytes] | None:
        """The next message, or None if none arrives within 10 ms (for probe loops)."""
        with anyio.move_on_after(0.01):
            return await self.read_message()
        return None

    async def expect_silence(self, seconds: float = 0.05) -> None:
        """Assert nothing arrives for a short while (only after a positive sync point: silence
        proves nothing on its own)."""
        assert self.stream is not None
        with anyio.move_on_after(seconds):
            self.buf += await self.stream.receive()
        assert not self.buf, bytes(self.buf)

    async def wait_closed(self) -> bytes:
        """Read until the other side closes (no time bound: wrap it in ``fail_after``);
        returns what came meanwhile."""
        assert self.stream is not None
        data = bytes(self.buf)
        self.buf.clear()
        try:
            while True:
                data += await self.stream.receive()
        except (anyio.EndOfStream, anyio.BrokenResourceError):
            return data

    # parsing

    async def _receive(self) -> None:
        assert self.stream is not None
        with anyio.fail_after(self.timeout):
            self.buf += await self.stream.receive()

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
            await self._receive()


class RawServer:
    """A TCP listener a socket connects to; :meth:`accept` gives one :class:`RawPeer` per
    connection (a reconnecting socket makes several)."""

    def __init__(self, listener: SocketListener, timeout: float | None = TIMEOUT) -> None:
        self.listener = listener
        self.timeout = timeout
        self.endpoint = f"tcp://127.0.0.1:{listener.extra(SocketAttribute.local_port)}"

    async def accept(self) -> RawPeer:
        with anyio.fail_after(self.timeout):
            return RawPeer(await self.listener.accept(), timeout=self.timeout)


@asynccontextmanager
async def raw_server(timeout: float | None = TIMEOUT) -> AsyncIterator[RawServer]:
    """A :class:`RawServer` on 127.0.0.1, an ephemeral port, closed at the end."""
    multi = await anyio.create_tcp_listener(local_host="127.0.0.1")
    try:
        listener = multi.listeners[0]
        assert isinstance(listener, SocketListener)
        yield RawServer(listener, timeout)
    finally:
        await multi.aclose()


#: What reading or writing a raw stream raises once the other side has gone.
STREAM_ERRORS = (anyio.EndOfStream, anyio.BrokenResourceError, anyio.ClosedResourceError, OSError)


@asynccontextmanager
async def serve_raw_peers(
    handler: Callable[[RawPeer], Awaitable[None]], timeout: float | None = TIMEOUT
) -> AsyncIterator[str]:
    """Listen on 127.0.0.1 and run ``handler`` on a :class:`RawPeer` for every connection, in
    the background, until the ``async with`` ends; yields the ``tcp://`` endpoint.

    For a peer that must keep answering (or keep ignoring) whatever connects, reconnects
    included, while the test watches the socket. The socket dropping a connection ends that
    handler quietly (:data:`STREAM_ERRORS`): it is what such tests provoke, not a failure.
    """

    async def serve(stream: ByteStream) -> None:
        with contextlib.suppress(*STREAM_ERRORS):
            async with stream:
                await handler(RawPeer(stream, timeout=timeout))

    async with raw_server(timeout) as server, anyio.create_task_group() as tg:
        tg.start_soon(server.listener.serve, serve)
        yield server.endpoint
        tg.cancel_scope.cancel()


@asynccontextmanager
async def raw_client(endpoint: str, timeout: float | None = TIMEOUT) -> AsyncIterator[RawPeer]:
    """A :class:`RawPeer` connected to a socket bound on ``tcp://host:port`` or ``ipc://path``,
    closed at the end."""
    peer = await RawPeer.connect(endpoint)
    peer.timeout = timeout
    try:
        yield peer
    finally:
        await peer.aclose()


__all__ = [
    "STREAM_ERRORS",
    "TIMEOUT",
    "RawPeer",
    "RawServer",
    "raw_client",
    "raw_server",
    "serve_raw_peers",
]
