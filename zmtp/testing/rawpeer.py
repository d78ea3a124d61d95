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
box of random bytes (``command(b"MESSAGE", os.urandom(40))``). It uses the protocol core's
encoders and parsers (:mod:`zmtp.protocol`) and runs on asyncio and trio.
"""

from __future__ import annotations

from types import TracebackType

import anyio
from anyio.abc import ByteStream, SocketAttribute, SocketListener

from ..protocol.frames import COMMAND, LONG, MORE, FrameDecoder, encode_command, encode_message
from ..protocol.greeting import GREETING_SIZE, PeerGreeting, parse_greeting
from ..protocol.properties import encode_properties


class RawPeer:
    """One raw connection (accepted from :meth:`listen`, or made by :meth:`connect`)."""

    def __init__(self) -> None:
        self.endpoint = ""
        self.stream: ByteStream | None = None
        self._listener: SocketListener | None = None
        self._buffer = b""
        self._frames = FrameDecoder()

    # opening

    @classmethod
    def listen(cls) -> RawPeer:
        """Listen on 127.0.0.1 (use as ``async with``); :meth:`accept` takes one client."""
        return cls()

    async def __aenter__(self) -> RawPeer:
        if self.stream is None:
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
        """Connect to a ``tcp://host:port`` endpoint."""
        host, port = endpoint.removeprefix("tcp://").rsplit(":", 1)
        peer = cls()
        peer.stream = await anyio.connect_tcp(host.strip("[]"), int(port))
        peer.endpoint = endpoint
        return peer

    async def aclose(self) -> None:
        if self.stream is not None:
            await self.stream.aclose()
        if self._listener is not None:
            await self._listener.aclose()

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
        return encode_command(name, data)

    @staticmethod
    def ready(socket_type: str, **properties: bytes) -> bytes:
        """READY with ``Socket-Type`` and any other properties (``Identity=b"x"``)."""
        props = {"Socket-Type": socket_type.encode(), **properties}
        return encode_command(b"READY", encode_properties(props))

    @staticmethod
    def message(*parts: bytes) -> bytes:
        return encode_message(list(parts))

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

    async def recv_greeting(self) -> PeerGreeting:
        """The other side's 64-byte greeting, parsed (whatever its mechanism)."""
        while len(self._buffer) < GREETING_SIZE:
            await self._read()
        data, self._buffer = self._buffer[:GREETING_SIZE], self._buffer[GREETING_SIZE:]
        mechanism = bytes(data[12:32]).rstrip(b"\0")
        return parse_greeting(data, mechanism)

    async def recv_frame(self) -> tuple[int, bytes]:
        """The next raw frame: ``(flags, body)``."""
        frame = self._frames.next_frame(self._take())
        while frame is None:
            await self._read()
            frame = self._frames.next_frame(self._take())
        return frame

    async def wait_closed(self) -> bytes:
        """Read until the other side closes; returns what came meanwhile."""
        assert self.stream is not None
        data = self._take()
        try:
            while True:
                data += await self.stream.receive()
        except (anyio.EndOfStream, anyio.BrokenResourceError):
            return data

    def _take(self) -> bytes:
        data, self._buffer = self._buffer, b""
        return data

    async def _read(self) -> None:
        assert self.stream is not None
        self._buffer += await self.stream.receive()
