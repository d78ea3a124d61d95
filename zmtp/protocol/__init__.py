"""The sans-IO ZMTP 3.1 protocol core: bytes in, events out. No I/O, no clock, no anyio."""

from .connection import Connection, State
from .errors import MessageTooLarge, ProtocolError, ZMTPError
from .events import (
    CommandReceived,
    CommandsReceived,
    ConnectionFailed,
    Event,
    HandshakeComplete,
    MessagesReceived,
)
from .frames import Command, FrameDecoder, encode_command, encode_frame, encode_message
from .mechanism import Mechanism, NullMechanism, PeerRejected
from .properties import Properties, encode_properties, parse_properties
from .sockettypes import SocketType, compatible

__all__ = [
    "Command",
    "CommandReceived",
    "CommandsReceived",
    "Connection",
    "ConnectionFailed",
    "Event",
    "FrameDecoder",
    "HandshakeComplete",
    "Mechanism",
    "MessageTooLarge",
    "MessagesReceived",
    "NullMechanism",
    "PeerRejected",
    "Properties",
    "ProtocolError",
    "SocketType",
    "State",
    "ZMTPError",
    "compatible",
    "encode_command",
    "encode_frame",
    "encode_message",
    "encode_properties",
    "parse_properties",
]
