"""The 64-byte ZMTP 3.x greeting: building ours and reading the peer's incrementally.

We always send all 64 bytes at once (RFC 37 allows it; libzmq handles it). Reading is staged so
that an incompatible peer is refused as early as its bytes allow, instead of waiting for 64
bytes that will never come: a first byte other than 0xFF, or byte 9 without bit 0, is ZMTP 1.0
or not ZMTP at all (an HTTP client, say); a major version below 3 is ZMTP 2.0. Major 3 minor 0 is
ZMTP 3.0 (we keep the minor: it decides how subscriptions are encoded); anything newer is spoken
to as 3.1, as RFC 37 "Version Negotiation" asks.
"""

from __future__ import annotations

from dataclasses import dataclass

from .errors import ProtocolError

GREETING_SIZE = 64
_MECH_OFFSET = 12
_MECH_SIZE = 20
_ALLOWED_MECH_CHARS = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.+")


def encode_greeting(mechanism: bytes, as_server: bool, minor: int = 1) -> bytes:
    """Our greeting: signature with zero padding, version 3.``minor``, mechanism, as-server."""
    if not mechanism or len(mechanism) > _MECH_SIZE or not set(mechanism) <= _ALLOWED_MECH_CHARS:
        raise ValueError(f"invalid mechanism name {mechanism!r}")
    return (
        b"\xff"
        + bytes(8)
        + b"\x7f"
        + bytes((3, minor))
        + mechanism.ljust(_MECH_SIZE, b"\0")
        + (b"\x01" if as_server else b"\x00")
        + bytes(31)
    )


@dataclass(frozen=True)
class PeerGreeting:
    """What we keep from the peer's greeting."""

    major: int
    minor: int
    mechanism: bytes
    as_server: bool  # informational only: libzmq always sends 0, so roles come from config


def check_greeting_prefix(data: bytes) -> None:
    """Refuse a peer as soon as the bytes seen so far prove it cannot speak ZMTP 3.x."""
    if not data:
        return
    if data[0] != 0xFF:
        raise ProtocolError(
            "peer is not speaking ZMTP 3.x (unversioned ZMTP 1.0 or not ZMTP at all: "
            f"first bytes {bytes(data[:8])!r})"
        )
    if len(data) >= 10 and not data[9] & 0x01:
        raise ProtocolError("peer speaks unversioned ZMTP 1.0, which is not supported")
    if len(data) >= 11 and data[10] < 2:
        # Revision byte 0 is ZMTP 1.0 framing, 1 is ZMTP 2.0 (RFC 15). libzmq treats any other
        # value (2, or 4 and up) as 3.x, and so do we.
        version = "1.0" if data[10] == 0 else "2.0"
        raise ProtocolError(f"peer speaks ZMTP {version}; only ZMTP 3.x is supported")


def parse_greeting(data: bytes, expected_mechanism: bytes) -> PeerGreeting:
    """Parse a complete 64-byte greeting and check the mechanism matches ours."""
    if len(data) < GREETING_SIZE:
        raise ValueError("a greeting is 64 bytes")
    check_greeting_prefix(data)
    major, minor = data[10], data[11]
    if major != 3:
        minor = 1  # other versions are spoken to as 3.1, as libzmq does (RFC 37 negotiation)
    mech = bytes(data[_MECH_OFFSET : _MECH_OFFSET + _MECH_SIZE]).rstrip(b"\0")
    if mech != expected_mechanism:
        raise ProtocolError(
            f"security mechanism mismatch: we use {expected_mechanism.decode()}, "
            f"peer uses {mech.decode('ascii', 'replace') or '(none)'}"
        )
    return PeerGreeting(major=major, minor=min(minor, 1), mechanism=mech, as_server=data[32] == 1)
