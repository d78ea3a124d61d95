"""ZMTP bytes spelled out by hand, for tests that talk to a socket at the byte level.

Nothing here uses zmtp's own encoders (:mod:`zmtp.protocol`): a byte-level test built from
these checks a socket against the RFCs (RFC 23/37 "Framing", "Commands"), not against itself.

* :func:`frame`, :func:`message`, :func:`command`: frames, multipart messages, commands;
* :func:`properties` / :func:`parse_properties`: the metadata of READY (and INITIATE...);
* :func:`greeting`, :data:`NULL_GREETING`, :func:`ready_command`: a NULL handshake's bytes;
* :func:`ping`: a PING with its TTL and context;
* :func:`count_commands`: how many commands of a name a captured byte stream holds.
"""

from __future__ import annotations

import re
import struct

#: Frame flag bits (RFC 23 "Framing").
MORE, LONG, COMMAND = 0x01, 0x02, 0x04


def frame(body: bytes, more: bool = False, command: bool = False) -> bytes:
    """One frame, short or long as the size requires."""
    flags = (MORE if more else 0) | (COMMAND if command else 0)
    if len(body) > 255:
        return bytes([flags | LONG]) + len(body).to_bytes(8, "big") + body
    return bytes([flags, len(body)]) + body


def message(*parts: bytes) -> bytes:
    """The frames of a message: MORE on every part but the last."""
    return b"".join(frame(p, more=i < len(parts) - 1) for i, p in enumerate(parts))


def command(name: bytes, data: bytes = b"") -> bytes:
    """A command frame: the name's length, the name, the data."""
    return frame(bytes([len(name)]) + name + data, command=True)


def properties(props: dict[str, bytes]) -> bytes:
    """Metadata: each name (1-byte length) and value (4-byte length), in order."""
    out = b""
    for name, value in props.items():
        raw = name.encode()
        out += bytes([len(raw)]) + raw + len(value).to_bytes(4, "big") + value
    return out


def parse_properties(data: bytes) -> dict[str, bytes]:
    """The inverse of :func:`properties` (no validation: tests read what a socket wrote)."""
    props, pos = {}, 0
    while pos < len(data):
        n = data[pos]
        name = data[pos + 1 : pos + 1 + n].decode()
        pos += 1 + n
        size = int.from_bytes(data[pos : pos + 4], "big")
        props[name] = data[pos + 4 : pos + 4 + size]
        pos += 4 + size
    return props


def greeting(minor: int = 1) -> bytes:
    """A NULL-mechanism greeting for ZMTP 3.``minor``, as-server 0 (for any other greeting,
    :meth:`zmtp.testing.RawPeer.greeting`)."""
    return (
        b"\xff"
        + b"\x00" * 8
        + b"\x7f"
        + bytes([3, minor])
        + b"NULL".ljust(20, b"\0")
        + (b"\x00" * 32)
    )


#: The ZMTP 3.1 NULL greeting (as-server 0).
NULL_GREETING = greeting(1)


def ready_command(socket_type: str) -> bytes:
    """A short READY command announcing ``socket_type`` and nothing else."""
    value = socket_type.encode()
    body = b"\x05READY" + b"\x0bSocket-Type" + struct.pack(">I", len(value)) + value
    return b"\x04" + bytes([len(body)]) + body


def ping(ttl_deciseconds: int = 0, context: bytes = b"") -> bytes:
    """A PING command: the TTL in deciseconds (2 bytes), then the context (RFC 37)."""
    return command(b"PING", ttl_deciseconds.to_bytes(2, "big") + context)


def count_commands(stream: bytes, name: bytes) -> int:
    """How many short command frames named ``name`` appear in a byte stream (flags 0x04, a
    1-byte size, then the length-prefixed name)."""
    pattern = b"\x04." + re.escape(bytes([len(name)]) + name)
    return len(re.findall(pattern, stream, flags=re.DOTALL))


__all__ = [
    "COMMAND",
    "LONG",
    "MORE",
    "NULL_GREETING",
    "command",
    "count_commands",
    "frame",
    "greeting",
    "message",
    "parse_properties",
    "ping",
    "properties",
    "ready_command",
]
