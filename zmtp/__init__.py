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

from .auth import Authenticator, AuthRequest, AuthResult
from .context import Context
from .crypto import curve_keypair, curve_public
from .errors import (
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
from .options import NOTIFY_CONNECT, NOTIFY_DISCONNECT, Options
from .poller import POLLIN, POLLOUT, Poller
from .protocol.sockettypes import SocketType
from .socket import Socket
from .transport.endpoint import EndpointError

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
    "GATHER",
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
    "SUB",
    "XPUB",
    "XSUB",
    "AcceptFailed",
    "Accepted",
    "AuthRequest",
    "AuthResult",
    "Authenticator",
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
