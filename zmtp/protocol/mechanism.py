"""The security-mechanism interface, and the NULL mechanism.

A mechanism runs the command exchange that follows the greeting and, for CURVE, transforms
every frame afterwards. The :class:`~zmtp.protocol.connection.Connection` owns greeting, framing,
heartbeats and the socket-type check; a mechanism only sees handshake commands and answers with
frames to send. This keeps each mechanism (NULL here, PLAIN and CURVE in their own modules) a
small state machine testable with byte strings.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import ClassVar

from . import commands
from .errors import ProtocolError
from .frames import Command, FrameTransform, encode_messages
from .properties import Properties, parse_properties


class PeerRejected(ProtocolError):
    """The peer sent ERROR during the handshake (``reason`` carries its text)."""


class Mechanism(ABC):
    """One side of a security handshake.

    ``local_metadata`` is our encoded property list (Socket-Type, Identity, extension
    properties); mechanisms send it in READY (NULL, PLAIN) or inside boxes (CURVE).
    """

    #: Wire name in the greeting, e.g. ``b"NULL"``.
    name: ClassVar[bytes]

    def __init__(self, local_metadata: bytes, as_server: bool) -> None:
        self.local_metadata = local_metadata
        self.as_server = as_server
        self.peer_properties: Properties | None = None
        self.complete = False
        self.user_id = ""
        self.peer_curve_key = b""

    @abstractmethod
    def start(self) -> list[bytes]:
        """Frames to send as soon as both greetings are exchanged."""

    @abstractmethod
    def handle_command(self, command: Command) -> list[bytes]:
        """Process one handshake command; return frames to send. Raise ProtocolError if bad."""

    # Post-handshake framing. NULL and PLAIN send frames as they are; CURVE overrides these.
    #: Applied by the decoder to every post-handshake frame (None = frames pass unchanged).
    decode_transform: FrameTransform | None = None

    def encode_messages(self, messages: Sequence[Sequence[bytes]]) -> bytes:
        """Wire bytes for a batch of messages."""
        return encode_messages(messages)

    def encode_command(self, frame: bytes) -> bytes:
        """Wire bytes for a post-handshake command frame (already encoded in clear)."""
        return frame


def raise_peer_error(command: Command) -> None:
    """Turn an ERROR command into :class:`PeerRejected`."""
    raise PeerRejected(f"peer sent ERROR: {commands.parse_error(command.data) or '(no reason)'}")


class NullMechanism(Mechanism):
    """RFC 37 NULL: both sides send READY with their metadata right after the greeting.

    libzmq sends READY immediately in both roles instead of the RFC's client-first order, so we
    do the same and accept READY whenever it comes.
    """

    name = b"NULL"

    def start(self) -> list[bytes]:
        return [commands.ready(self.local_metadata)]

    def handle_command(self, command: Command) -> list[bytes]:
        if command.name == commands.READY:
            if self.peer_properties is not None:
                raise ProtocolError("duplicate READY")
            self.peer_properties = parse_properties(command.data)
            self.complete = True
            return []
        if command.name == commands.ERROR:
            raise_peer_error(command)
        raise ProtocolError(
            f"unexpected {command.name.decode('ascii', 'replace')} in NULL handshake"
        )
