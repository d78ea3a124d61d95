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
    """A message was dead-lettered (``reason`` as in :class:`zmtp_qos.DeadLetter`)."""

    peer: str
    reason: str
