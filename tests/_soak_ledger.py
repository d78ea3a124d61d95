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

``never_accepted`` is explained by a connection of that peer that ended, on either side (the
victim's ledger names each end and its reason, the peer's own monitor its disconnects and
failed handshakes), or by a peer that never completed a handshake. ``not_written`` and
``unreceived`` are explained only by an end *the victim* recorded: an echo it wrote on a
connection it still holds must arrive. A shortfall without such an end is a loss too, as is a
reply out of order or twice. So ``lost`` is strict: every message the victim accepted reaches
its application, and nothing goes missing on a connection that stayed up.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

#: A peer's monitor events that end one of its connections (or its attempt at one).
PEER_ENDS = ("DISCONNECTED", "HANDSHAKE_FAILED_NO_DETAIL", "HANDSHAKE_FAILED_PROTOCOL")


@dataclass
class PeerRecord:
    """What one well-behaved peer did, from its own side."""

    name: str  #: its routing id (``good-...`` / ``standing-...``)
    sent: list[bytes] = field(default_factory=list)
    got: list[bytes] = field(default_factory=list)
    #: Its libzmq monitor's events, by name (HANDSHAKE_SUCCEEDED, DISCONNECTED...).
    events: Counter[str] = field(default_factory=Counter)
    #: The same with their times (``time.time()``, comparable with the victim's), the first
    #: ones only; and when it was opened and sent its first message.
    timeline: list[str] = field(default_factory=list)

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
    history: list[str]  #: the victim's (per connection: handshake, end, counts, times)
    timeline: list[str]  #: the peer's

    @property
    def summary(self) -> str:
        return (
            f"{self.name}: sent {self.sent}, victim accepted {self.accepted}, delivered "
            f"{self.delivered}, wrote back {self.written}, peer received {self.received}; "
            f"lost {self.lost}; {self.explanation or 'unexplained'}; victim's ends {self.ends}; "
            f"peer's events {self.peer_events}; victim's history {self.history}; "
            f"peer's timeline {self.timeline}"
        )


def in_order(got: list[bytes], sent: list[bytes]) -> bool:
    """Whether ``got`` is ``sent`` with some messages missing: none twice, none reordered."""
    rest = iter(sent)
    return all(any(message == candidate for candidate in rest) for message in got)


def judge(peer: PeerRecord, entry: dict[str, Any] | None) -> Verdict:
    """Split ``peer``'s shortfall with the victim's ledger ``entry`` (None: the victim never
    saw a handshake from it)."""
    entry = entry or {
        "connections": 0,
        "accepted": 0,
        "delivered": 0,
        "written": 0,
        "ends": [],
        "history": [],
    }
    sent, received = len(peer.sent), len(peer.got)
    accepted, delivered, written = entry["accepted"], entry["delivered"], entry["written"]
    ends: list[str] = entry["ends"]
    undelivered = max(0, accepted - delivered)
    never_accepted = max(0, sent - accepted)
    not_written = max(0, delivered - written)
    unreceived = max(0, written - received)
    victim_ended = bool(ends)
    peer_ended = any(peer.events[name] for name in PEER_ENDS)
    explanation = ""
    lost = undelivered
    if not in_order(peer.got, peer.sent):
        lost = max(lost, 1)
        explanation = "replies out of order or duplicated"
    elif sent - received > undelivered:
        if entry["connections"] == 0 and accepted == 0 and not victim_ended:
            explanation = f"never completed a handshake ({sent} never accepted)"
        elif not (victim_ended or peer_ended):
            lost = max(lost, sent - received)
        else:
            if not victim_ended:  # (an echo written on a connection the victim still holds)
                lost += not_written + unreceived
            explanation = (
                f"{never_accepted} never accepted, {not_written} echoes dropped and "
                f"{unreceived} unreceived when a connection ended"
                + ("" if victim_ended else " (the echoes are lost: no end on the victim's side)")
            )
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
        entry.get("history", []),
        peer.timeline,
    )
