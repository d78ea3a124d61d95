"""Socket options: typed, with libzmq's defaults, times in seconds.

libzmq option names map one-to-one (``ZMQ_SNDHWM`` -> ``send_hwm``...); the table is in
``docs/options.md``. Times are floats in seconds instead of integer milliseconds, and "infinite"
is ``None`` instead of -1.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields
from typing import Any


@dataclass
class Options:
    """Every option a socket understands. Pass them as keyword arguments to ``Socket``."""

    #: ``ZMQ_ROUTING_ID``: sent as the ``Identity`` property (REQ, DEALER, ROUTER); 0-255 bytes,
    #: must not start with a zero byte (reserved for generated ids).
    identity: bytes = b""
    #: ``ZMQ_SNDHWM``: messages queued per peer before ``send`` blocks (or PUB drops). 0 = no limit.
    send_hwm: int = 1000
    #: ``ZMQ_RCVHWM``: messages queued per peer before we stop reading from it. 0 = no limit.
    recv_hwm: int = 1000
    #: ``ZMQ_LINGER``: on close, how long to keep flushing queued messages (None = until done).
    linger: float | None = None
    #: ``ZMQ_SNDTIMEO``: ``send`` raises ``TimeoutError`` after this long (None = block).
    send_timeout: float | None = None
    #: ``ZMQ_RCVTIMEO``: ``recv`` raises ``TimeoutError`` after this long (None = block).
    recv_timeout: float | None = None
    #: ``ZMQ_RECONNECT_IVL``: first reconnect delay; a random jitter of up to the same again
    #: is added, like libzmq. None disables reconnecting.
    reconnect_ivl: float | None = 0.1
    #: ``ZMQ_RECONNECT_IVL_MAX``: if > reconnect_ivl, the delay doubles up to this.
    reconnect_ivl_max: float = 0.0
    #: ``ZMQ_HANDSHAKE_IVL``: the whole handshake must finish in this time (None/0 = no limit).
    handshake_ivl: float | None = 30.0
    #: ``ZMQ_HEARTBEAT_IVL``: send a PING this often (0 = off). We always answer PINGs.
    heartbeat_ivl: float = 0.0
    #: ``ZMQ_HEARTBEAT_TTL``: the TTL our PINGs ask the peer to apply (0.1 s resolution).
    heartbeat_ttl: float = 0.0
    #: ``ZMQ_HEARTBEAT_TIMEOUT``: close if nothing arrives this long after a PING
    #: (None = heartbeat_ivl).
    heartbeat_timeout: float | None = None
    #: ``ZMQ_MAXMSGSIZE``: largest frame accepted, checked per frame like libzmq (-1 = no limit).
    max_message_size: int = -1
    #: ``ZMQ_IMMEDIATE``: queue messages only to completed connections (default: a connect()
    #: endpoint queues messages even before its connection is up, like libzmq).
    immediate: bool = False
    #: ``ZMQ_BACKLOG``: listen backlog.
    backlog: int = 100
    #: Bytes requested per read from a stream transport.
    read_size: int = 256 * 1024

    def __post_init__(self) -> None:
        if not isinstance(self.identity, bytes) or len(self.identity) > 255:
            raise ValueError("identity must be at most 255 bytes")
        if self.identity.startswith(b"\0"):
            raise ValueError("identities starting with a zero byte are reserved")
        for name in ("send_hwm", "recv_hwm"):
            if getattr(self, name) < 0:
                raise ValueError(f"{name} must be >= 0 (0 = no limit)")
        if self.heartbeat_ttl < 0 or self.heartbeat_ttl > 6553.5:
            raise ValueError("heartbeat_ttl must be between 0 and 6553.5 seconds")

    @classmethod
    def from_kwargs(cls, kwargs: dict[str, Any]) -> Options:
        """Build options, rejecting unknown names with the list of valid ones."""
        known = {f.name for f in fields(cls)}
        unknown = set(kwargs) - known
        if unknown:
            raise TypeError(
                f"unknown socket option(s) {sorted(unknown)}; valid options: {sorted(known)}"
            )
        return cls(**kwargs)


def hwm_capacity(hwm: int) -> float:
    """A high-water mark as a queue capacity (0 means unlimited, as in libzmq)."""
    return math.inf if hwm == 0 else hwm
