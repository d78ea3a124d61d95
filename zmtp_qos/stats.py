"""A snapshot of a QoS socket's counters (``sock.stats()``), readable at any time.

A snapshot, not live views: reading it never touches the send or receive path, and the
numbers of one snapshot are consistent with each other (taken without a checkpoint between).
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class QoSStats:
    """What a QoS socket is responsible for right now, and what it has settled so far.

    Sender side: ``in_flight`` counts every un-settled message (it is what ``send_hwm``
    bounds): the ones in ``pending``, plus those queued but not yet written to any connection,
    waiting for a peer (level 1 after a fail-over with nobody connected) or waiting for a
    level-3 back-off (``retrying``). Receiver side: ``dedup`` and ``awaiting_verdict``.
    """

    level: int
    #: Un-settled messages, wherever they are (what ``send_hwm`` bounds).
    in_flight: int = 0
    #: Per peer (its anchor at levels 2-3, its address at level 1): messages written to it
    #: and not yet acknowledged, plus (levels 2-3) those held while it is disconnected.
    pending: dict[str, int] = field(default_factory=dict)
    #: Level 3: messages NACKed retryably, waiting for their back-off to end.
    retrying: int = 0
    #: Receiver, levels 2-3: digests in the de-duplication sets (all anchors).
    dedup: int = 0
    #: Receiver, level 3: messages handed to the application and awaiting a verdict.
    awaiting_verdict: int = 0
    #: Sender: receipts resolved delivered (ACK at levels 1-2, COMP at 3) since the start.
    delivered: int = 0
    #: Sender: dead letters since the start (a QoS REQ's too: its dead-lettered requests).
    dead_lettered: int = 0
