"""zmtp: a pure-Python ZeroMQ stack (ZMTP 3.1) on anyio, interoperable with libzmq.

Quick use::

    import anyio, zmtp

    async def main():
        async with zmtp.Socket(zmtp.PULL) as pull, zmtp.Socket(zmtp.PUSH) as push:
            endpoint = await pull.bind("tcp://127.0.0.1:*")
            await push.connect(endpoint)
            await push.send(b"hello")
            print(await pull.recv())

    anyio.run(main)
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .errors import (
    BindError,
    HostUnreachable,
    InvalidArgument,
    InvalidState,
    MessageTooLarge,
    OptionError,
    ProtocolError,
    SocketClosed,
    TimedOut,
    UnknownOption,
    UnsupportedOperation,
    UsageError,
    WrongType,
    ZMTPError,
)
from .lazyload import lazy_attributes
from .options import NOTIFY_CONNECT, NOTIFY_DISCONNECT, Options
from .protocol.sockettypes import SocketType
from .pyzmq_hints import DONTWAIT, NOBLOCK, SNDMORE
from .socket import Socket

if TYPE_CHECKING:
    from .auth.authenticator import Authenticator
    from .context import Context
    from .crypto.keys import curve_keypair, curve_public
    from .extension import SocketExtension
    from .monitor import (
        Accepted,
        AcceptFailed,
        BindFailed,
        Closed,
        ConnectDelayed,
        Connected,
        ConnectRetried,
        DatagramDropped,
        Disconnected,
        HandshakeFailed,
        HandshakeSucceeded,
        Listening,
        Monitor,
        MonitorEvent,
        MonitorStopped,
        PeerInfo,
    )
    from .poller import POLLIN, POLLOUT, Poller
    from .protocol.mechanism import AuthRequest, AuthResult
    from .transport.endpoint import EndpointError

# Imported on first use (zmtp/lazyload.py): a plain socket needs none of these, and some are
# costly (CURVE keys import ``cryptography``). Keep this table and the TYPE_CHECKING imports
# above in step; tests/test_import_lazy.py checks that every name in __all__ resolves.
_MONITOR_EVENTS = (
    "Accepted",
    "AcceptFailed",
    "BindFailed",
    "Closed",
    "ConnectDelayed",
    "Connected",
    "ConnectRetried",
    "DatagramDropped",
    "Disconnected",
    "HandshakeFailed",
    "HandshakeSucceeded",
    "Listening",
    "Monitor",
    "MonitorEvent",
    "MonitorStopped",
    "PeerInfo",
)
_LAZY = {
    "Authenticator": ".auth.authenticator",
    "AuthRequest": ".protocol.mechanism",
    "AuthResult": ".protocol.mechanism",
    "Context": ".context",
    "curve_keypair": ".crypto.keys",
    "curve_public": ".crypto.keys",
    "SocketExtension": ".extension",
    "POLLIN": ".poller",
    "POLLOUT": ".poller",
    "Poller": ".poller",
    "EndpointError": ".transport.endpoint",
    **dict.fromkeys(_MONITOR_EVENTS, ".monitor"),
}
# Subpackages the eager __init__ loaded as a side effect (``zmtp.crypto.curve_keypair`` after a
# bare ``import zmtp`` kept working): still reachable, loaded on first use.
_SUBMODULES = ("auth", "context", "crypto", "poller")
_lazy_getattr, __dir__ = lazy_attributes(__name__, globals(), _LAZY, _SUBMODULES)
if not TYPE_CHECKING:  # hidden from mypy: a module __getattr__ would make every typo "Any"
    __getattr__ = _lazy_getattr

__version__ = "0.1.0"

PAIR = SocketType.PAIR
PUB = SocketType.PUB
SUB = SocketType.SUB
REQ = SocketType.REQ
REP = SocketType.REP
DEALER = SocketType.DEALER
ROUTER = SocketType.ROUTER
PULL = SocketType.PULL
PUSH = SocketType.PUSH
XPUB = SocketType.XPUB
XSUB = SocketType.XSUB
SERVER = SocketType.SERVER
CLIENT = SocketType.CLIENT
RADIO = SocketType.RADIO
DISH = SocketType.DISH
GATHER = SocketType.GATHER
SCATTER = SocketType.SCATTER
PEER = SocketType.PEER
CHANNEL = SocketType.CHANNEL

__all__ = [
    "CHANNEL",
    "CLIENT",
    "DEALER",
    "DISH",
    "DONTWAIT",
    "GATHER",
    "NOBLOCK",
    "NOTIFY_CONNECT",
    "NOTIFY_DISCONNECT",
    "PAIR",
    "PEER",
    "POLLIN",
    "POLLOUT",
    "PUB",
    "PULL",
    "PUSH",
    "RADIO",
    "REP",
    "REQ",
    "ROUTER",
    "SCATTER",
    "SERVER",
    "SNDMORE",
    "SUB",
    "XPUB",
    "XSUB",
    "AcceptFailed",
    "Accepted",
    "AuthRequest",
    "AuthResult",
    "Authenticator",
    "BindError",
    "BindFailed",
    "Closed",
    "ConnectDelayed",
    "ConnectRetried",
    "Connected",
    "Context",
    "DatagramDropped",
    "Disconnected",
    "EndpointError",
    "HandshakeFailed",
    "HandshakeSucceeded",
    "HostUnreachable",
    "InvalidArgument",
    "InvalidState",
    "Listening",
    "MessageTooLarge",
    "Monitor",
    "MonitorEvent",
    "MonitorStopped",
    "OptionError",
    "Options",
    "PeerInfo",
    "Poller",
    "ProtocolError",
    "Socket",
    "SocketClosed",
    "SocketExtension",
    "SocketType",
    "TimedOut",
    "UnknownOption",
    "UnsupportedOperation",
    "UsageError",
    "WrongType",
    "ZMTPError",
    "__version__",
    "curve_keypair",
    "curve_public",
]
