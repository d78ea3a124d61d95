"""The root of zmtp's exception hierarchy, importable from every layer.

It sits at the bottom of the import graph (it imports nothing of zmtp), so the crypto layer,
the sans-IO protocol core and everything above raise the same classes; ``zmtp.errors``
exports them all. Each non-root class keeps the built-in base a caller may already catch.
"""

from __future__ import annotations


class ZMTPError(Exception):
    """Base class for everything this package raises."""


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
