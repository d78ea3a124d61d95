"""Events the sans-IO :class:`~zmtp.protocol.connection.Connection` hands to its driver.

Messages are delivered in batches (one :class:`MessagesReceived` per run of messages in a chunk)
because a Python object per message is the dominant cost at high rates; ordering between
messages and commands is preserved exactly.
"""

from __future__ import annotations

from dataclasses import dataclass

from .frames import Command
from .mechanism import AuthRequest
from .properties import Properties


@dataclass(slots=True)
class HandshakeComplete:
    """Both READYs (or the mechanism's equivalent) exchanged; data may flow."""

    socket_type: str  #: the peer's announced Socket-Type
    identity: bytes  #: the peer's Identity property (b"" if absent)
    properties: Properties  #: every property the peer sent (case-insensitive names)
    zmtp_minor: int  #: 0 for a ZMTP 3.0 peer (legacy subscriptions), 1 otherwise
    mechanism: str  #: "NULL", "PLAIN", "CURVE"
    user_id: str = ""  #: set by an authenticator on the server side
    curve_public_key: bytes = b""  #: the client's long-term CURVE key, as seen by a server


@dataclass(slots=True)
class MessagesReceived:
    """One or more complete messages, each a list of frames, in arrival order. With
    ``Connection.bare_single_part`` a one-part message may be its bare ``bytes`` instead."""

    messages: list[bytes | list[bytes]]


@dataclass(slots=True)
class CommandReceived:
    """A post-handshake command the core does not consume itself (SUBSCRIBE, JOIN, X-...)."""

    name: bytes
    data: bytes


@dataclass(slots=True)
class CommandsReceived:
    """A run of consecutive post-handshake commands (PING/PONG aside), in arrival order:
    emitted instead of one :class:`CommandReceived` each when the driver asked for batches
    (``Connection.batch_commands``; an extension acknowledging every message)."""

    commands: list[Command]


@dataclass(slots=True)
class AuthenticationRequested:
    """The server mechanism holds the client's credentials and waits for a decision.

    The connection processes no further handshake input until the driver calls
    ``Connection.complete_authentication(AuthResult(...))``; the handshake timeout keeps
    running meanwhile. ``request.address`` and ``request.identity`` are for the driver to fill.
    """

    request: AuthRequest


@dataclass(slots=True)
class ConnectionFailed:
    """The connection must be closed. Always the last event a connection produces.

    ``kind`` is ``"protocol"`` (the peer broke the protocol), ``"timeout"`` (handshake or
    heartbeat deadline passed), ``"peer-error"`` (the peer sent ERROR) or ``"rejected"``
    (authentication refused the peer).
    ``during_handshake`` tells monitor code whether this is a ``handshake_failed``.
    """

    reason: str
    kind: str
    during_handshake: bool


Event = (
    HandshakeComplete
    | MessagesReceived
    | CommandReceived
    | CommandsReceived
    | AuthenticationRequested
    | ConnectionFailed
)
