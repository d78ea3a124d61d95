"""Builders and parsers for the ZMTP 3.1 commands the core understands.

READY / ERROR (handshake), PING / PONG (heartbeat), SUBSCRIBE / CANCEL (PUB/SUB) and JOIN /
LEAVE (RADIO/DISH). Each builder returns a complete command *frame*; parsers take the command
data (after the name). Anything else a peer sends after the handshake is handed up as a generic
command, which is how extensions (e.g. the QoS layer) carry their own commands.
"""

from __future__ import annotations

from struct import Struct

from .errors import ProtocolError
from .frames import encode_command

READY = b"READY"
ERROR = b"ERROR"
PING = b"PING"
PONG = b"PONG"
SUBSCRIBE = b"SUBSCRIBE"
CANCEL = b"CANCEL"
JOIN = b"JOIN"
LEAVE = b"LEAVE"

_U16 = Struct(">H")

#: The maximum context a PING carries / a PONG echoes (RFC 37).
MAX_PING_CONTEXT = 16
#: The maximum TTL a PING can carry, in deciseconds (16-bit field).
MAX_TTL_DECISECONDS = 0xFFFF


def ready(properties: bytes) -> bytes:
    """READY with already-encoded properties."""
    return encode_command(READY, properties)


def error(reason: str | bytes) -> bytes:
    """ERROR with a reason (truncated to 255 bytes)."""
    raw = reason.encode("utf-8", "replace") if isinstance(reason, str) else reason
    raw = raw[:255]
    return encode_command(ERROR, bytes((len(raw),)) + raw)


def parse_error(data: bytes) -> str:
    """The reason carried by an ERROR command (lenient: a short body yields what is there)."""
    if not data:
        return ""
    n = data[0]
    return bytes(data[1 : 1 + n]).decode("utf-8", "replace")


def ping(ttl_deciseconds: int = 0, context: bytes = b"") -> bytes:
    """PING: TTL in deciseconds (0 = none), then up to 16 bytes of context."""
    if not 0 <= ttl_deciseconds <= MAX_TTL_DECISECONDS:
        raise ValueError("PING TTL must fit in 16 bits of deciseconds")
    if len(context) > MAX_PING_CONTEXT:
        raise ValueError("PING context is at most 16 bytes")
    return encode_command(PING, _U16.pack(ttl_deciseconds) + context)


def parse_ping(data: bytes) -> tuple[int, bytes]:
    """``(ttl_deciseconds, context)``; the context is truncated to 16 bytes like libzmq."""
    if len(data) < 2:
        raise ProtocolError("malformed PING: missing TTL")
    return _U16.unpack_from(data)[0], bytes(data[2 : 2 + MAX_PING_CONTEXT])


def pong(context: bytes = b"") -> bytes:
    """PONG echoing (at most 16 bytes of) a PING's context."""
    return encode_command(PONG, context[:MAX_PING_CONTEXT])


def subscribe(topic: bytes) -> bytes:
    """ZMTP 3.1 SUBSCRIBE command frame."""
    return encode_command(SUBSCRIBE, topic)


def cancel(topic: bytes) -> bytes:
    """ZMTP 3.1 CANCEL command frame."""
    return encode_command(CANCEL, topic)


def join(group: bytes) -> bytes:
    """JOIN (DISH -> RADIO)."""
    check_group(group)
    return encode_command(JOIN, group)


def leave(group: bytes) -> bytes:
    """LEAVE (DISH -> RADIO)."""
    check_group(group)
    return encode_command(LEAVE, group)


def check_group(group: bytes) -> None:
    """RADIO/DISH groups are at most 255 bytes."""
    if len(group) > 255:
        raise ValueError("a group is at most 255 bytes")
