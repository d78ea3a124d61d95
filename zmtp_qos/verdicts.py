"""A level-3 receiver's COMPs of one connection, decided and not yet written.

The handles of a connection share its :class:`VerdictQueue`: ``complete()`` appends the digest
to it and goes to the runtime only when the queue has just become non-empty (to wake the
socket's verdict flusher) or holds ``FLUSH_AT`` (to write them at once). The usual verdict
is then one list append, with no lookup of its connection's queue and no shared counter.
:meth:`zmtp_qos.runtime.QoSRuntime.flush_verdicts` empties the queues it writes; a queue lives
as long as its connection's QoS state (``PeerState.verdicts``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from zmtp.engine.pipe import Pipe

    from .runtime import QoSRuntime

#: Queued COMPs of one connection written without waiting for the flusher: a bound on what a
#: verdict loop that never yields holds back.
FLUSH_AT = 256
#: The queue lengths after an append at which the runtime is told
#: (:meth:`~zmtp_qos.runtime.QoSRuntime.comps_waiting`).
WAKE_OR_FLUSH = frozenset({1, FLUSH_AT})


class VerdictQueue(list[bytes]):
    """The digests completed on ``pipe`` since its last flush, in verdict order; ``runtime``
    is the receiver's, which its handles give their other verdicts to (NACK)."""

    __slots__ = ("pipe", "runtime")

    def __init__(self, pipe: Pipe, runtime: QoSRuntime) -> None:
        super().__init__()
        self.pipe = pipe
        self.runtime = runtime
