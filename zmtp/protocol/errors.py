"""Exceptions raised by the sans-IO protocol core."""

from __future__ import annotations


class ZMTPError(Exception):
    """Base class for everything this package raises."""


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


class InvalidArgument(ZMTPError, ValueError):
    """A value zmtp cannot use: an option out of range, a malformed endpoint, an empty
    message, a key of the wrong length... Also a ``ValueError``, for callers that catch that."""


class WrongType(ZMTPError, TypeError):
    """An argument of the wrong type (a message part that is not bytes or str...). Also a
    ``TypeError``."""


class TimedOut(ZMTPError, TimeoutError):
    """A ``send_timeout`` / ``recv_timeout`` (or an explicit timeout) expired. Also a
    ``TimeoutError``; the message says which operation and which option."""


class UsageError(ZMTPError, RuntimeError):
    """The API was used in an order it does not allow (a socket entered twice, an extension
    installed after bind). Also a ``RuntimeError``."""
