"""The outboxes of a publisher's usual subscriber set, ready for a fan-out without per-pipe
Python work (PUB/XPUB's shared-encoding path, see :class:`~zmtp.routing.xpubsub.XPub`).

Why: queueing one message on ten subscribers' outboxes cost ten rounds of attribute lookups,
an HWM comparison and an empty-queue test in Python, the largest part of the publisher's
per-subscriber work. Most messages of a publisher go to the same subscriber set (everyone
subscribed to ``b""``, or to one topic): the trie then returns the very same ``set`` object
each time. This keeps, for that set, the outboxes' deques and their bound ``append`` methods,
so that a message whose every target has room and is already non-empty (no writer to wake)
is queued with one length test and one bound call per subscriber. Anything else (a
subscriber at its HWM, an empty outbox whose writer must be woken, another target set) is
left to the caller's per-pipe loop, which keeps every rule exactly as it was: a full pipe
loses only its own copy, ``xpub_nodrop`` sends to nobody, every outbox keeps its order.

A cached set is only used while the trie is unchanged (:attr:`PipeTrie.version`) and the
owner has not called :meth:`invalidate` (a capacity change), and it is built only the second
time in a row the same set comes back, so that merged sets (a message matching several
topics: a new set each time) cost one identity test, not a rebuild per message.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Collection

from ..engine.pipe import Pipe
from ..engine.queue import Message


class FanOutCache:
    """The deques, bound appends and smallest capacity of one target set of pipes."""

    __slots__ = ("_appends", "_capacity", "_pipes", "_queues", "_seen", "_version")

    def __init__(self) -> None:
        self._pipes: Collection[Pipe] | None = None  #: the set the cache was built for
        self._version = -1  #: the trie version it was built at
        self._seen: Collection[Pipe] | None = None  #: the last set that missed
        self._queues: list[deque[Message]] = []
        self._appends: list[Callable[[Message], None]] = []
        self._capacity = 0.0  #: the smallest capacity among them (a pipe may have more)

    def invalidate(self) -> None:
        """Forget the cached set (an outbox's capacity changed, a pipe came or went)."""
        self._pipes = self._seen = None
        self._queues = []
        self._appends = []

    def use(self, pipes: Collection[Pipe], version: int) -> bool:
        """Whether the cache now holds ``pipes`` at trie ``version`` (built if this set also
        missed last time: a set that keeps coming back)."""
        if pipes is self._pipes and version == self._version:
            return True
        if pipes is not self._seen:
            self._seen = pipes
            return False
        outboxes = [pipe.outbox for pipe in pipes]
        self._queues = [outbox.items for outbox in outboxes]
        self._appends = [queue.append for queue in self._queues]
        self._capacity = min(outbox.capacity for outbox in outboxes)
        self._pipes, self._version = pipes, version
        return True

    def offer(self, pipes: Collection[Pipe], version: int, message: Message) -> bool:
        """Queue ``message`` on every pipe of ``pipes`` if the cache holds that set (see
        :meth:`use`), each has room (below the smallest capacity) and none is empty (no
        writer to wake). False, with nothing queued, otherwise: the caller's per-pipe loop
        then applies the HWM and the wake-up edge to each pipe."""
        # (use()'s hit test inlined: a Python call per message less)
        if (pipes is not self._pipes or version != self._version) and not self.use(pipes, version):
            return False
        # A plain loop, not ``max(map(len, queues)) >= capacity or not all(queues)``: on
        # CPython 3.11 the two C-level scans cost ~1,800 more instructions per message for
        # ten queues (max's argument parsing, a call and an int comparison per item).
        capacity = self._capacity
        for queue in self._queues:
            if not queue or len(queue) >= capacity:
                return False
        for append in self._appends:
            append(message)
        return True
