"""Public exceptions."""

from __future__ import annotations

from .protocol.errors import MessageTooLarge, ProtocolError, ZMTPError


class SocketClosed(ZMTPError):
    """The socket was closed (or was never entered with ``async with``)."""


class UnsupportedOperation(ZMTPError):
    """The socket type cannot do this (e.g. ``recv`` on PUSH, multipart on CLIENT)."""


class InvalidState(ZMTPError):
    """The call is not allowed in the socket's current state (e.g. REQ sending twice)."""


class HostUnreachable(ZMTPError):
    """ROUTER_MANDATORY: no peer has the routing id the message is addressed to."""


__all__ = [
    "HostUnreachable",
    "InvalidState",
    "MessageTooLarge",
    "ProtocolError",
    "SocketClosed",
    "UnsupportedOperation",
    "ZMTPError",
]
