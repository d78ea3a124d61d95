"""A pipe: the socket's view of one peer.

A pipe holds the peer's inbox and outbox and what the handshake told us about it. For a
``connect()`` endpoint the pipe outlives individual connections (like a libzmq session): messages
queued while the connection is down are sent after the reconnect, and subscriptions are
replayed on every new connection. For an accepted connection the pipe lives as long as that
connection. Inbound messages already queued are still delivered after the connection ends.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..monitor import PeerInfo
from ..protocol.frames import LONG, parse_command
from .queue import Message, MessageQueue

if TYPE_CHECKING:
    from ..protocol.properties import Properties
    from .stream import StreamConnection


class PipeClosed(Exception):
    """A command was sent on a pipe whose connection is gone."""


class Pipe:
    """One peer as seen by routing strategies and extensions."""

    __slots__ = (
        "attached",
        "command_sink",
        "connected",
        "endpoint",
        "extension_state",
        "flushing",
        "inbox",
        "outbox",
        "peer",
        "persistent",
        "routing_id",
        "send",
        "send_is_put",
        "shared_encoding",
        "state",
        "stream",
    )

    def __init__(
        self, endpoint: str, inbox: MessageQueue, outbox: MessageQueue, persistent: bool
    ) -> None:
        self.endpoint = endpoint
        self.inbox = inbox  #: messages from the peer (consumer: the socket)
        self.outbox = outbox  #: messages to the peer (producer: the socket)
        self.persistent = persistent  #: True for a connect() pipe that survives reconnects
        self.peer: PeerInfo | None = None  #: set at each handshake
        self.connected = False  #: a live, handshaken connection is behind this pipe
        self.attached = False  #: known to the routing strategy
        self.routing_id = b""  #: ROUTER / SERVER / PEER address of this peer
        self.state: Any = None  #: per-pipe data for the routing strategy
        self.extension_state: Any = None  #: per-pipe data for an installed extension
        #: A writer took messages from the outbox and is still writing them (linger waits).
        self.flushing = False
        #: Where :meth:`send_command` goes: set by the engine core while a handshaken
        #: connection is behind this pipe (None otherwise).
        self.command_sink: Callable[[bytes, bytes], None] | None = None
        #: The live tcp/ipc connection behind this pipe (None: down, or inproc); the socket's
        #: recv may borrow its read side (lent reads, see zmtp/engine/stream.py).
        self.stream: StreamConnection | None = None
        #: Queue a message (wire parts) for this peer; the caller checked ``outbox.full``.
        #: For tcp/ipc this is ``outbox.put`` (the connection's writer drains it); for inproc it
        #: hands the message straight to the peer socket's receive path.
        self.send: Callable[[Message], None] = outbox.put
        #: ``send`` is ``outbox.put`` (tcp/ipc, and an inproc link with no hooks, whose
        #: outbox is the peer's inbox): a strategy's hot path may then append to
        #: ``outbox.items`` itself, firing ``outbox.on_data`` on the empty -> non-empty edge
        #: as ``put`` does, and save a call per message. Whoever sets ``send`` sets this.
        self.send_is_put = True
        #: The outbox may hold :class:`~zmtp.protocol.frames.EncodedMessage` items, one
        #: message encoded once for many pipes by a fan-out strategy (PUB/XPUB); the writer
        #: then encodes with ``encode_shared_messages``. Off for every other pipe, whose
        #: writer keeps the plain encoder. Either encoder is right for any message: this only
        #: picks the faster one.
        self.shared_encoding = False

    def __repr__(self) -> str:
        who = self.peer.socket_type if self.peer else "?"
        return f"<Pipe {self.endpoint} peer={who} connected={self.connected}>"

    @property
    def properties(self) -> Properties | None:
        return self.peer.properties if self.peer else None

    def send_first(self, messages: list[Message]) -> None:
        """Queue ``messages`` ahead of anything not yet written (extension point: QoS replay
        and fail-over), ignoring the HWM. tcp/ipc: the front of the outbox; inproc: handed
        over now, in order (the peer's inbox is the queue there), which is equally first.
        """
        if self.send == self.outbox.put:
            self.outbox.put_front(messages)
        else:
            for message in messages:
                self.send(message)

    def send_command(self, name: bytes, data: bytes = b"") -> None:
        """Send a command to this peer on its current connection (extension point 5).

        Raises :class:`PipeClosed` if no connection is up.
        """
        sink = self.command_sink
        if sink is None:
            raise PipeClosed(f"no live connection on {self.endpoint}")
        sink(name, data)

    def send_command_frames(self, frames: list[bytes]) -> None:
        """Send several commands at once, each an encoded command frame
        (``zmtp.protocol.frames.encode_command(name, data)``, which an extension may build
        from a precomputed prefix): extension point 5b, for per-message acknowledgements.

        On tcp/ipc the batch is queued on the connection in one call (one buffer for NULL and
        PLAIN); elsewhere (inproc, or before the stream is attached) each frame is parsed and
        sent as :meth:`send_command` would. Raises :class:`PipeClosed` if no connection is up.
        """
        stream = self.stream
        if stream is not None:
            stream.send_command_frames(frames)
            return
        for frame in frames:
            command = parse_command(frame[9:] if frame[0] & LONG else frame[2:])
            self.send_command(command.name, command.data)
