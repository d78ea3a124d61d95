"""QoS monitor events, delivered through the socket's own monitor (``sock.monitor()``).

A peer refused for QoS reasons is the core's ``HandshakeFailed(kind="rejected")`` with the
spec's reason; these report what the QoS layer does afterwards.
"""

from __future__ import annotations

from dataclasses import dataclass

from zmtp.monitor import MonitorEvent


@dataclass(frozen=True)
class QoSReplayed(MonitorEvent):
    """Level 2/3: pending messages re-sent, first, to a reconnected anchor."""

    peer: str
    count: int


@dataclass(frozen=True)
class QoSFailedOver(MonitorEvent):
    """Level 1: a lost connection's un-ACKed (and unsent) messages moved to other peers
    (or held until one connects)."""

    count: int


@dataclass(frozen=True)
class QoSRetried(MonitorEvent):
    """Level 3: a retryable NACK; the message goes again after ``delay`` seconds."""

    peer: str
    code: int
    retry: int  #: 1 for the first retry
    delay: float


@dataclass(frozen=True)
class QoSDeadLettered(MonitorEvent):
    """A message was dead-lettered (``reason`` as in :class:`zmtp_qos.DeadLetter`).

    ``endpoint`` is that of the connection the message was placed on, as the socket names
    its pipes (the ``connect()`` address, or the bound endpoint for an accepted connection):
    the one it was last written to (for a peer gone past ``dead_letter_timeout``, its last
    connection), or the ``connect()`` endpoint it was queued for when nobody ever answered
    there. It is "" only for a message that was on no connection: unplaced, waiting for any
    peer because its pipe was removed before it was written (``disconnect()``, or the close
    of a socket whose connections never came up) or, at level 1, failed over while no peer
    was connected and never written anywhere.
    """

    peer: str
    reason: str
