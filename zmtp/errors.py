"""Public exceptions."""

from __future__ import annotations

from .protocol.errors import (
    InvalidArgument,
    MessageTooLarge,
    ProtocolError,
    TimedOut,
    UsageError,
    WrongType,
    ZMTPError,
)

#: What a closed socket says when used.
CLOSED = "socket is closed: make a new socket (a closed one cannot be reopened)"
#: What a socket used outside ``async with`` says.
NEVER_OPENED = (
    "socket was never opened: use it inside `async with zmtp.Socket(...) as sock:` "
    "(from synchronous code, use zmtp.sync.Socket)"
)


class SocketClosed(ZMTPError):
    """The socket was closed, or was never opened (entered with ``async with``); the message
    says which."""


class UnsupportedOperation(ZMTPError):
    """The socket type cannot do this (e.g. ``recv`` on PUSH, multipart on CLIENT)."""


class InvalidState(ZMTPError):
    """The call is not allowed in the socket's current state (e.g. REQ sending twice)."""


class OptionError(InvalidArgument):
    """A socket option with a value it cannot take (also a ``ValueError``)."""


class UnknownOption(OptionError, TypeError):
    """A socket option name that does not exist (also a ``TypeError``, as for an unknown
    keyword argument); the message lists the valid names."""


class BindError(ZMTPError, OSError):
    """``bind`` could not listen on the endpoint (address in use, no such interface, a host
    that does not resolve). Also the ``OSError`` the system raised, with its ``errno`` (pyzmq
    raises ``ZMQError(EADDRINUSE)``); the message names the endpoint, which the system's
    does not."""


class HostUnreachable(ZMTPError):
    """ROUTER_MANDATORY: no peer has the routing id the message is addressed to."""


__all__ = [
    "CLOSED",
    "NEVER_OPENED",
    "BindError",
    "HostUnreachable",
    "InvalidArgument",
    "InvalidState",
    "MessageTooLarge",
    "OptionError",
    "ProtocolError",
    "SocketClosed",
    "TimedOut",
    "UnknownOption",
    "UnsupportedOperation",
    "UsageError",
    "WrongType",
    "ZMTPError",
]
