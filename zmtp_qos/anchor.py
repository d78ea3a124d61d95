"""Peer anchors (docs/qos-protocol.md §2.3): what "the same peer" means across reconnects.

The peer's CURVE long-term public key when the mechanism is CURVE, else its non-empty
``Identity``; never an address. The two kinds are prefixed so an Identity can never collide
with a key.
"""

from __future__ import annotations

from zmtp.monitor import PeerInfo


def peer_anchor(peer: PeerInfo) -> bytes | None:
    """The anchor of ``peer``, or None if it has none (allowed at level 1 only)."""
    if peer.mechanism == "CURVE" and peer.curve_public_key:
        return b"curve:" + peer.curve_public_key
    if peer.identity:
        return b"id:" + peer.identity
    return None


def describe(anchor: bytes | None) -> str:
    """A printable form for logs and monitor events."""
    if anchor is None:
        return "-"
    if anchor.startswith(b"curve:"):
        return "curve:" + anchor[6:].hex()
    return anchor[3:].decode("utf-8", errors="backslashreplace")
