"""Monitor events: what happened to a socket's endpoints and connections, as typed objects.

``async for event in socket.monitor(): ...`` yields these. They mirror libzmq's
``zmq_socket_monitor`` events, with the reason of every failure spelled out.
"""

from __future__ import annotations

from collections import deque
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from types import TracebackType

import anyio

from .protocol.properties import Properties


@dataclass(frozen=True)
class PeerInfo:
    """Who is on the other end of a connection, as learned in the handshake."""

    socket_type: str  #: the peer's Socket-Type
    identity: bytes  #: its Identity property (b"" if none)
    properties: Properties  #: every property it sent (names case-insensitive)
    zmtp_version: tuple[int, int]  #: (3, 0) or (3, 1)
    mechanism: str  #: "NULL", "PLAIN", "CURVE"
    endpoint: str  #: the endpoint we bound or connected
    #: The peer's transport address: "127.0.0.1:5555"; for ipc the path we connected to, or on
    #: an accepted connection libzmq's "localhost:uid:gid:pid" of the peer process (Linux;
    #: "" elsewhere); "inproc".
    address: str
    user_id: str = ""  #: set by authentication on a server
    #: The peer's long-term CURVE public key: the client's on a server (what authentication
    #: checked, and what the QoS layer keys peers by), the server's on a client.
    curve_public_key: bytes = b""


@dataclass(frozen=True)
class MonitorEvent:
    """Base class: every event names the endpoint it concerns."""

    endpoint: str


@dataclass(frozen=True)
class Listening(MonitorEvent):
    """bind() succeeded; ``endpoint`` is the resolved address (actual port)."""


@dataclass(frozen=True)
class BindFailed(MonitorEvent):
    reason: str


@dataclass(frozen=True)
class Accepted(MonitorEvent):
    peer_address: str


@dataclass(frozen=True)
class AcceptFailed(MonitorEvent):
    """A listener could not take a connection (libzmq's ``ZMQ_EVENT_ACCEPT_FAILED``), and keeps
    listening: the process is out of file descriptors (EMFILE, ENFILE) or memory, or the
    listener already holds ``max_connections`` connections (then ``peer_address`` names the
    peer that was refused and closed; otherwise it is "" and the connection waits in the
    kernel's backlog until the listener tries again, shortly after)."""

    reason: str
    peer_address: str = ""


@dataclass(frozen=True)
class Connected(MonitorEvent):
    peer_address: str


@dataclass(frozen=True)
class ConnectDelayed(MonitorEvent):
    """A connect attempt failed; another will follow (see ConnectRetried)."""

    reason: str


@dataclass(frozen=True)
class ConnectRetried(MonitorEvent):
    """The next connect attempt is scheduled ``interval`` seconds from now."""

    interval: float


@dataclass(frozen=True)
class HandshakeSucceeded(MonitorEvent):
    peer: PeerInfo


@dataclass(frozen=True)
class HandshakeFailed(MonitorEvent):
    """``kind``: "protocol", "timeout", "peer-error" (peer sent ERROR) or "rejected"
    (refused by authentication or an extension's validator)."""

    reason: str
    kind: str
    peer_address: str = ""


@dataclass(frozen=True)
class Disconnected(MonitorEvent):
    reason: str
    peer_address: str = ""


@dataclass(frozen=True)
class Closed(MonitorEvent):
    """A listener (bind) or dialer (connect) endpoint was closed."""


@dataclass(frozen=True)
class DatagramDropped(MonitorEvent):
    """udp:// only: one datagram was dropped, and why. Received: malformed (empty, or a group
    length past its end) or over the 8192-byte limit, from ``peer_address``. Sent: a message too
    large for one datagram, or one the OS refused, for ``peer_address``. libzmq drops (or
    mangles) these silently; UDP's own losses (full buffers, the network) are not seen here."""

    reason: str
    peer_address: str = ""


@dataclass(frozen=True)
class MonitorStopped(MonitorEvent):
    """The socket closed; always the last event. ``endpoint`` is empty."""

    endpoint: str = ""


@dataclass(eq=False)
class Monitor:
    """An async iterator over one socket's events, from its creation until the socket closes.

    Unbounded: events are small and rare, and dropping one would make tests and diagnostics
    lie. Iteration ends after :class:`MonitorStopped`.
    """

    _events: deque[MonitorEvent] = field(default_factory=deque)
    _wakeup: anyio.Event | None = None
    _closed: bool = False
    _detach: object = None

    @property
    def ended(self) -> bool:
        """Whether this monitor takes no more events (closed, or its socket stopped it)."""
        return self._closed

    def push(self, event: MonitorEvent) -> None:
        """Queue ``event`` for the reader (the engine core calls this; see
        ``SocketCore.emit``). Ignored once the monitor has ended."""
        if self._closed:
            return
        self._events.append(event)
        if isinstance(event, MonitorStopped):
            self._closed = True
        if self._wakeup is not None:
            self._wakeup.set()
            self._wakeup = None

    def __aiter__(self) -> AsyncIterator[MonitorEvent]:
        return self._iterate()

    async def _iterate(self) -> AsyncIterator[MonitorEvent]:
        while True:
            event = await self.receive()
            if event is None:
                return
            yield event

    async def receive(self) -> MonitorEvent | None:
        """The next event, waiting if needed; None once the stream has ended."""
        while not self._events:
            if self._closed:
                return None
            self._wakeup = anyio.Event()
            await self._wakeup.wait()
        return self._events.popleft()

    async def wait_for(
        self, kind: type[MonitorEvent] | tuple[type[MonitorEvent], ...]
    ) -> MonitorEvent:
        """Skip events until one of ``kind`` arrives (raises EOFError if the socket closed)."""
        while True:
            event = await self.receive()
            if event is None:
                raise EOFError("socket closed before the awaited monitor event")
            if isinstance(event, kind):
                return event

    def close(self) -> None:
        """Stop receiving events."""
        self._closed = True
        self._events.clear()
        if self._wakeup is not None:
            self._wakeup.set()

    async def __aenter__(self) -> Monitor:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()
