"""Exceptions raised by the sans-IO protocol core."""

from __future__ import annotations

from ..base_errors import InvalidArgument, TimedOut, UsageError, WrongType, ZMTPError

__all__ = [
    "InvalidArgument",
    "MessageTooLarge",
    "ProtocolError",
    "TimedOut",
    "UsageError",
    "WrongType",
    "ZMTPError",
]


class ProtocolError(ZMTPError):
    """The peer broke ZMTP (bad greeting, malformed frame or command, wrong socket type...).

    Fatal for that one connection. ``reason`` is a short human-readable sentence that ends up in
    ``handshake_failed`` / ``disconnected`` monitor events.
    """

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class MessageTooLarge(ProtocolError):
    """A frame's header announced more bytes than ``max_message_size`` allows."""
