"""The four QoS commands, ACK, CLR, COMP, NACK: encode, and parse leniently
(docs/qos-protocol.md §4).

Each travels as an ordinary ZMTP command; zmtp frames it (``pipe.send_command(name, data)``),
so this module deals in the command's *data* only, plus :func:`encode_frame` for tests and
tools that need the full wire frame.

Parsing is lenient toward the reference implementation and strict toward memory: the digest is
8 bytes whatever the algorithm byte says, a NACK too short for a code means code 0 with no text,
and a text length that overruns the data takes what remains. Nothing here allocates more than
the data it was given.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from .digest import DIGEST_SIZE

ACK = b"ACK"
CLR = b"CLR"
COMP = b"COMP"
NACK = b"NACK"
NAMES = frozenset({ACK, CLR, COMP, NACK})

_u16 = struct.Struct(">H")
_u64 = struct.Struct(">Q")


@dataclass(frozen=True)
class DigestRef:
    """``[algo u8][digest 8]``: which message a command is about."""

    algorithm: int  #: the letter byte (0x78 ``x``, 0x73 ``s``); any byte is accepted
    digest: bytes


@dataclass(frozen=True)
class NackData:
    """A parsed NACK: the message it refers to, its code and text."""

    ref: DigestRef
    code: int
    text: str


def digest_data(algorithm: str, digest: bytes) -> bytes:
    """Data of an ACK, CLR or COMP."""
    if len(digest) != DIGEST_SIZE:
        raise ValueError("a QoS digest is 8 bytes")
    return algorithm.encode("ascii") + digest


def nack_data(algorithm: str, digest: bytes, code: int, text: bytes) -> bytes:
    """Data of a NACK; ``text`` is UTF-8 of at most 65535 bytes (see codes.cut_text)."""
    if not 0 <= code <= 0xFF:
        raise ValueError("a NACK code is one byte")
    if len(text) > 0xFFFF:
        raise ValueError("a NACK text is at most 65535 bytes")
    return digest_data(algorithm, digest) + bytes((code,)) + _u16.pack(len(text)) + text


def parse_digest(data: bytes) -> DigestRef | None:
    """``[algo][digest 8]`` from an ACK/CLR/COMP/NACK; None if the data is too short."""
    if len(data) < 1 + DIGEST_SIZE:
        return None
    return DigestRef(data[0], bytes(data[1 : 1 + DIGEST_SIZE]))


def parse_nack(data: bytes) -> NackData | None:
    """A NACK's fields; None if even the digest is missing."""
    ref = parse_digest(data)
    if ref is None:
        return None
    rest = data[1 + DIGEST_SIZE :]
    if len(rest) < 3:
        return NackData(ref, 0, "")
    (size,) = _u16.unpack_from(rest, 1)
    text = bytes(rest[3 : 3 + size]).decode("utf-8", errors="replace")
    return NackData(ref, rest[0], text)


def encode_frame(name: bytes, data: bytes) -> bytes:
    """The full ZMTP command frame for ``name`` + ``data`` (flags 0x04, 0x06 when long)."""
    body = bytes((len(name),)) + name + data
    if len(body) > 255:
        return b"\x06" + _u64.pack(len(body)) + body
    return bytes((0x04, len(body))) + body
