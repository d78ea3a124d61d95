"""What the soak (tests/_soak.py) calls a lost message, and how it tells one from a message
that was never the victim's to lose.

A well-behaved peer's shortfall (messages it sent that did not come back) is split with the
victim's per-peer ledger (tests/_soak_victim.py, counted at the socket's extension hooks):

* ``never_accepted`` = sent - accepted: never taken off the wire by the victim. They were in
  the peer's own queue or in a kernel buffer when a connection ended (libzmq drops what a
  DEALER queued for a connection that breaks, and its ``linger`` drops what never got out), or
  the peer never completed a handshake.
* ``undelivered`` = accepted - delivered: the victim's connection accepted them and its
  application never got them. **Always a loss** (a bug of zmtp), whatever happened to the
  connection.
* ``not_written`` = delivered - written: echoes the ROUTER dropped (no route: the peer's
  connection had ended; or the outbox of an ended connection was discarded).
* ``unreceived`` = written - received: echoes written that the peer never read (in the
  kernel's buffers when the connection was reset).

``never_accepted``, ``not_written`` and ``unreceived`` are explained only by a connection of
that peer that ended while it was still talking (the victim's ledger names each end and its
reason, the peer's own monitor its disconnects) or, for ``never_accepted`` alone, by a peer
that never completed a handshake. A shortfall without such an end is a loss too, as is a
reply out of order or twice. So ``lost`` is strict: every message the victim accepted reaches
its application, and nothing goes missing on a connection that stayed up.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any


@dataclass
class PeerRecord:
    """What one well-behaved peer did, from its own side."""

    name: str  #: its routing id (``good-...`` / ``standing-...``)
    sent: list[bytes] = field(default_factory=list)
    got: list[bytes] = field(default_factory=list)
    #: Its libzmq monitor's events, by name (HANDSHAKE_SUCCEEDED, DISCONNECTED...).
    events: Counter[str] = field(default_factory=Counter)

    @property
    def whole(self) -> bool:
        return self.got == self.sent


@dataclass
class Verdict:
    name: str
    sent: int
    received: int
    accepted: int
    delivered: int
    written: int
    #: Messages lost by the victim (see the module docstring): 0 unless zmtp has a bug.
    lost: int
    #: Why the rest of the shortfall is not the victim's loss ("" when there is none).
    explanation: str
    ends: list[str]
    peer_events: dict[str, int]

    @property
    def summary(self) -> str:
        return (
            f"{self.name}: sent {self.sent}, victim accepted {self.accepted}, delivered "
            f"{self.delivered}, wrote back {self.written}, peer received {self.received}; "
            f"lost {self.lost}; {self.explanation or 'unexplained'}; victim's ends {self.ends}; "
            f"peer's events {self.peer_events}"
        )


def in_order(got: list[bytes], sent: list[bytes]) -> bool:
    """Whether ``got`` is ``sent`` with some messages missing: none twice, none reordered."""
    rest = iter(sent)
    return all(any(message == candidate for candidate in rest) for message in got)


def judge(peer: PeerRecord, entry: dict[str, Any] | None) -> Verdict:
    """Split ``peer``'s shortfall with the victim's ledger ``entry`` (None: the victim never
    saw a handshake from it)."""
    entry = entry or {"connections": 0, "accepted": 0, "delivered": 0, "written": 0, "ends": []}
    sent, received = len(peer.sent), len(peer.got)
    accepted, delivered, written = entry["accepted"], entry["delivered"], entry["written"]
    ends: list[str] = entry["ends"]
    undelivered = max(0, accepted - delivered)
    shortfall = sent - received
    broken = bool(ends) or peer.events["DISCONNECTED"] > 0
    never_handshaken = entry["connections"] == 0
    explanation = ""
    lost = undelivered
    if not in_order(peer.got, peer.sent):
        lost = max(lost, 1)
        explanation = "replies out of order or duplicated"
    elif shortfall > undelivered:
        if broken:
            explanation = (
                f"{sent - accepted} never accepted, {delivered - written} echoes dropped and "
                f"{written - received} unreceived when a connection ended"
            )
        elif never_handshaken and accepted == 0:
            explanation = f"never completed a handshake ({sent} never accepted)"
        else:
            lost = shortfall
    return Verdict(
        peer.name,
        sent,
        received,
        accepted,
        delivered,
        written,
        lost,
        explanation,
        ends,
        dict(peer.events),
    )
