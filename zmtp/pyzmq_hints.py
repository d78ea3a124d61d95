"""pyzmq's socket methods and option attributes that zmtp spells differently, answered with
the zmtp spelling.

A socket has ``__slots__`` and no ``__getattr__`` hook (nothing per message), so a ported
``sock.setsockopt(...)`` or ``sock.sndhwm = 10`` raised a bare "'Socket' object has no
attribute" that says nothing of where the call went; each name here is a property that
raises ``AttributeError`` with the way to do it instead (``hasattr`` stays False).
"""

from __future__ import annotations

from typing import Any

from .options import PYZMQ_NAMES
from .protocol.errors import InvalidArgument, WrongType

#: pyzmq ``Socket`` methods and their zmtp replacement (docs/from-pyzmq.md has the table).
PYZMQ_METHODS: dict[str, str] = {
    "setsockopt": "sock.set('send_hwm', 10) (zmtp option names, times in seconds)",
    "setsockopt_string": "sock.set(name, value)",
    "getsockopt": "sock.get('linger') (or sock.linger)",
    "getsockopt_string": "sock.get(name)",
    "bind_to_random_port": "sock.bind('tcp://127.0.0.1:*'), which returns the real endpoint",
    "get_monitor_socket": "sock.monitor(), an iterator of typed events",
    "poll": "sock.readable() (no wait), await sock.wait_readable(), or zmtp.Poller",
    "send_unicode": "send_string",
    "recv_unicode": "recv_string",
}


def pyzmq_hint(name: str, hint: str) -> property:
    """A property named like pyzmq's ``name`` that raises, reading or assigning, with
    ``hint``."""

    def refuse(sock: Any, value: Any = None) -> None:
        raise AttributeError(f"zmtp sockets have no {name!r}: use {hint} (docs/from-pyzmq.md)")

    return property(refuse, refuse)  # no docstring: kept out of the API reference


def install_pyzmq_hints(cls: type) -> None:
    """Give ``cls`` a refusing property for every pyzmq name it does not define itself."""
    options = {
        name: f"the option {zmtp} (sock.set, sock.get)" for name, zmtp in PYZMQ_NAMES.items()
    }
    for name, hint in {**PYZMQ_METHODS, **options}.items():
        if not hasattr(cls, name):
            setattr(cls, name, pyzmq_hint(name, hint))


# ---------------------------------------------------------------------- pyzmq's send/recv flags

#: pyzmq's ``zmq.NOBLOCK`` (``zmq.DONTWAIT``): a send or receive that would wait raises
#: :class:`~zmtp.TimedOut` (zmtp's ``zmq.Again``) at once instead.
NOBLOCK = 1
#: pyzmq's ``zmq.DONTWAIT``, the same flag as :data:`NOBLOCK`.
DONTWAIT = NOBLOCK
#: pyzmq's ``zmq.SNDMORE``: the part is held, and goes out with the parts after it as one
#: message at the next send without ``SNDMORE``.
SNDMORE = 2

_SEND_FLAGS = NOBLOCK | SNDMORE


def check_send_flags(flags: object) -> None:
    """Refuse send ``flags`` zmtp does not know, saying what it takes (the send paths call
    this only when flags are given)."""
    if not isinstance(flags, int):
        raise WrongType(
            f"send flags must be an int (zmtp.NOBLOCK, zmtp.SNDMORE), not "
            f"{type(flags).__name__}; an encoding or a pickle protocol is a keyword: "
            "send_string(text, encoding=...), send_pyobj(obj, protocol=...)"
        )
    if flags & ~_SEND_FLAGS or flags < 0:
        raise InvalidArgument(
            f"unknown send flags {flags!r}: zmtp takes pyzmq's NOBLOCK (1, DONTWAIT) and "
            "SNDMORE (2) (docs/from-pyzmq.md)"
        )


def check_recv_flags(flags: object) -> None:
    """Refuse receive ``flags`` zmtp does not know, saying what it takes (the receive paths
    call this only when flags are given)."""
    if not isinstance(flags, int):
        raise WrongType(
            f"recv flags must be an int (zmtp.NOBLOCK), not {type(flags).__name__}; an "
            "encoding is a keyword: recv_string(encoding=...)"
        )
    if flags & ~NOBLOCK or flags < 0:
        raise InvalidArgument(
            f"unknown recv flags {flags!r}: a receive takes only pyzmq's NOBLOCK (1, "
            "DONTWAIT) (docs/from-pyzmq.md)"
        )


# ---------------------------------------------------------------------- pyzmq's socket types

#: libzmq's socket type numbers (pyzmq's ``zmq.PUSH`` is 8) and zmtp's names for them; 11
#: (STREAM) and 18 (DGRAM) are libzmq's raw types, which zmtp does not have.
LIBZMQ_SOCKET_TYPES: dict[int, str] = {
    0: "PAIR",
    1: "PUB",
    2: "SUB",
    3: "REQ",
    4: "REP",
    5: "DEALER",
    6: "ROUTER",
    7: "PULL",
    8: "PUSH",
    9: "XPUB",
    10: "XSUB",
    12: "SERVER",
    13: "CLIENT",
    14: "RADIO",
    15: "DISH",
    16: "GATHER",
    17: "SCATTER",
    19: "PEER",
    20: "CHANNEL",
}


def libzmq_socket_type(socket_type: object) -> str | None:
    """zmtp's name for a socket type given as libzmq's number (``zmq.PUSH``, an ``int``
    enum in pyzmq, left in ported code), or None if ``socket_type`` is not one."""
    if isinstance(socket_type, int) and not isinstance(socket_type, bool):
        return LIBZMQ_SOCKET_TYPES.get(int(socket_type))
    return None
