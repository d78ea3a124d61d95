"""Per-hop delivery guarantees (QoS 1-3) for zmtp sockets, wire-compatible with omq-qos.

See docs/qos.md. The sans-IO core lives in small modules (digest, commands, handshake, anchor,
config, dedup, pending, codes, results); the runtime plugs into zmtp through its extension
points (docs/extensions.md); zmtp itself never imports this package.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from zmtp.lazyload import lazy_attributes

from .codes import (
    BadInput,
    InternalError,
    Overloaded,
    ProcessingError,
    ProcessingTimeout,
    Rejected,
)
from .config import QoSConfig
from .results import DeadLetter, DeadLetterError, Delivered, NackError, Receipt
from .socket import Handle, ReplyHandle, Socket, VerdictError
from .stats import QoSStats

if TYPE_CHECKING:
    from .producer import JobFailed, JobReceipt, Producer, ProducerStats, ResubmitPolicy
    from .worker import Worker, WorkerStats

# Imported on first use (zmtp/lazyload.py): a QoS socket needs neither the Producer nor the
# Worker machinery (threads, memory streams), and ``import zmtp_qos`` stays cheap
# (docs/performance.md, import row).
_LAZY = {
    **dict.fromkeys(
        ("JobFailed", "JobReceipt", "Producer", "ProducerStats", "ResubmitPolicy"), ".producer"
    ),
    **dict.fromkeys(("Worker", "WorkerStats"), ".worker"),
}
_lazy_getattr, __dir__ = lazy_attributes(__name__, globals(), _LAZY, ("producer", "worker"))
if not TYPE_CHECKING:  # hidden from mypy: a module __getattr__ would make every typo "Any"
    __getattr__ = _lazy_getattr

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
