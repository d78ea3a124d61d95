"""Per-hop delivery guarantees (QoS 1-3) for zmtp sockets, wire-compatible with omq-qos.

See docs/qos.md. The sans-IO core lives in small modules (digest, commands, handshake, anchor,
config, dedup, pending, codes, results); the runtime plugs into zmtp through its extension
points (docs/extensions.md); zmtp itself never imports this package.
"""

from __future__ import annotations

from .codes import (
    BadInput,
    InternalError,
    Overloaded,
    ProcessingError,
    ProcessingTimeout,
    Rejected,
)
from .config import QoSConfig
from .producer import JobFailed, JobReceipt, Producer, ProducerStats, ResubmitPolicy
from .results import DeadLetter, DeadLetterError, Delivered, NackError, Receipt
from .socket import Handle, ReplyHandle, Socket, VerdictError
from .stats import QoSStats
from .worker import Worker, WorkerStats

__all__ = [
    "BadInput",
    "DeadLetter",
    "DeadLetterError",
    "Delivered",
    "Handle",
    "InternalError",
    "JobFailed",
    "JobReceipt",
    "NackError",
    "Overloaded",
    "ProcessingError",
    "ProcessingTimeout",
    "Producer",
    "ProducerStats",
    "QoSConfig",
    "QoSStats",
    "Receipt",
    "Rejected",
    "ReplyHandle",
    "ResubmitPolicy",
    "Socket",
    "VerdictError",
    "Worker",
    "WorkerStats",
]
