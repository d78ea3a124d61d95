"""Handshake properties and peer validation (docs/qos-protocol.md §2).

We advertise ``X-QoS`` (the level) and ``X-QoS-Hash: "xs"`` at levels 1-3 and nothing at level
0. A peer is refused, with the spec's reasons, when its level differs from ours (there is no
silent downgrade), when both sides offer digest algorithms and none is shared, or - at level 2
and above - when it has no stable anchor (:mod:`zmtp_qos.anchor`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from .digest import PREFERENCE, choose_algorithm

LEVEL_PROPERTY = "X-QoS"
HASH_PROPERTY = "X-QoS-Hash"
LEVELS = (0, 1, 2, 3)


def local_properties(level: int) -> dict[str, bytes]:
    """What we add to READY (or CURVE metadata) at ``level``."""
    if level == 0:
        return {}
    return {LEVEL_PROPERTY: str(level).encode("ascii"), HASH_PROPERTY: PREFERENCE.encode("ascii")}


@dataclass(frozen=True)
class Negotiated:
    """The outcome of a successful validation."""

    level: int
    algorithm: str  #: the digest letter this side uses on the connection


def peer_level(properties: Mapping[str, bytes]) -> int | None:
    """The peer's ``X-QoS`` as an int (absent = 0); None when it is not a decimal number."""
    raw = properties.get(LEVEL_PROPERTY)
    if raw is None:
        return 0
    text = bytes(raw).decode("ascii", errors="replace").strip()
    if not text.isdigit() or len(text) > 3:
        return None
    return int(text)


def validate_peer(
    level: int, properties: Mapping[str, bytes], anchor: bytes | None
) -> Negotiated | str:
    """Validate a peer (docs/qos-protocol.md §2.2): the negotiated result, or the reason to
    reject it."""
    theirs = peer_level(properties)
    if theirs is None:
        return f"QoS mismatch: local={level} peer={properties.get(LEVEL_PROPERTY)!r}"
    if theirs != level:
        return f"QoS mismatch: local={level} peer={theirs}"
    if level == 0:
        return Negotiated(0, "")
    peer_hash = bytes(properties.get(HASH_PROPERTY, b"")).decode("ascii", errors="replace")
    if peer_hash and not set(peer_hash) & set(PREFERENCE):
        return f"QoS hash mismatch: local={PREFERENCE} peer={peer_hash}"
    if level >= 2 and not anchor:
        return f"QoS {level} requires a stable peer anchor (CURVE public key or non-empty Identity)"
    return Negotiated(level, choose_algorithm(peer_hash))
