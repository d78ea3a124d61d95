"""Socket-type names and the RFC 37 compatibility table (identical to libzmq's)."""

from __future__ import annotations

from enum import Enum


class SocketType(str, Enum):
    """Every ZMTP socket type. The value is the wire name sent as ``Socket-Type``."""

    PAIR = "PAIR"
    PUB = "PUB"
    SUB = "SUB"
    REQ = "REQ"
    REP = "REP"
    DEALER = "DEALER"
    ROUTER = "ROUTER"
    PULL = "PULL"
    PUSH = "PUSH"
    XPUB = "XPUB"
    XSUB = "XSUB"
    SERVER = "SERVER"
    CLIENT = "CLIENT"
    RADIO = "RADIO"
    DISH = "DISH"
    GATHER = "GATHER"
    SCATTER = "SCATTER"
    PEER = "PEER"
    CHANNEL = "CHANNEL"

    def __str__(self) -> str:
        return self.value


_COMPATIBLE: dict[str, frozenset[str]] = {
    "REQ": frozenset({"REP", "ROUTER"}),
    "REP": frozenset({"REQ", "DEALER"}),
    "DEALER": frozenset({"REP", "DEALER", "ROUTER"}),
    "ROUTER": frozenset({"REQ", "DEALER", "ROUTER"}),
    "PUB": frozenset({"SUB", "XSUB"}),
    "XPUB": frozenset({"SUB", "XSUB"}),
    "SUB": frozenset({"PUB", "XPUB"}),
    "XSUB": frozenset({"PUB", "XPUB"}),
    "PUSH": frozenset({"PULL"}),
    "PULL": frozenset({"PUSH"}),
    "PAIR": frozenset({"PAIR"}),
    "CLIENT": frozenset({"SERVER"}),
    "SERVER": frozenset({"CLIENT"}),
    "RADIO": frozenset({"DISH"}),
    "DISH": frozenset({"RADIO"}),
    "SCATTER": frozenset({"GATHER"}),
    "GATHER": frozenset({"SCATTER"}),
    "PEER": frozenset({"PEER"}),
    "CHANNEL": frozenset({"CHANNEL"}),
}


def compatible(ours: str, peer: str) -> bool:
    """Whether a socket of type ``ours`` may talk to a peer announcing ``peer``."""
    return peer in _COMPATIBLE.get(ours, frozenset())


def compatible_peers(ours: str) -> frozenset[str]:
    """The peer types ``ours`` accepts."""
    return _COMPATIBLE[ours]
