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

The room is not measured per message either. When the per-queue check passes, the cache
keeps a *budget*: how many more messages every queue has room for (the smallest room left,
capped at :data:`MAX_BUDGET`). A queue only gets longer through the publisher's own sends,
which spend the budget (one message each) or, on any other path, end it (:meth:`spent`):
a writer only ever shortens its queue. So while the budget lasts, no HWM can be crossed,
and what is left to test per message is that no queue is empty, which ``all()`` does in C
for the whole set (the consumer's wake-up edge: a writer that took everything and parked
must be woken by the next message, through the caller's per-pipe loop).

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

#: The most messages fanned out on one check of every queue's room: bounds how stale the
#: check may get, and keeps the counter a small int.
MAX_BUDGET = 256


class FanOutCache:
    """The deques, bound appends and smallest capacity of one target set of pipes."""

    __slots__ = ("_appends", "_budget", "_capacity", "_pipes", "_queues", "_seen", "_version")

    def __init__(self) -> None:
        self._pipes: Collection[Pipe] | None = None  #: the set the cache was built for
        self._version = -1  #: the trie version it was built at
        self._seen: Collection[Pipe] | None = None  #: the last set that missed
        self._queues: list[deque[Message]] = []
        self._appends: list[Callable[[Message], None]] = []
        self._capacity = 0.0  #: the smallest capacity among them (a pipe may have more)
        #: Messages every queue of the set still has room for, with no other path queueing
        #: in between (see the module docstring); 0: check each queue's room again.
        self._budget = 0

    def invalidate(self) -> None:
        """Forget the cached set (an outbox's capacity changed, a pipe came or went)."""
        self._pipes = self._seen = None
        self._queues = []
        self._appends = []
        self._budget = 0

    def spent(self) -> None:
        """Another path queued a message on some outbox (a message for one subscriber, an
        extension's path): the next fast fan-out checks every queue's room again."""
        self._budget = 0

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
        self._budget = 0
        return True

    def offer(self, pipes: Collection[Pipe], version: int, message: Message) -> bool:
        """Queue ``message`` on every pipe of ``pipes`` if the cache holds that set (see
        :meth:`use`), each has room (below the smallest capacity) and none is empty (no
        writer to wake). False, with nothing queued, otherwise: the caller's per-pipe loop
        then applies the HWM and the wake-up edge to each pipe."""
        # (use()'s hit test inlined: a Python call per message less)
        if (pipes is not self._pipes or version != self._version) and not self.use(pipes, version):
            self._budget = 0  # the caller's loop queues on pipes that may be ours
            return False
        budget = self._budget
        if budget and all(self._queues):  # room left from the last check, and none empty
            self._budget = budget - 1
        elif not self._check_room():
            return False
        for append in self._appends:
            append(message)
        return True

    def _check_room(self) -> bool:
        """Every queue non-empty and below the smallest capacity: then set the budget of
        messages after this one that all of them still have room for. False (budget 0)
        otherwise."""
        # A plain loop, not ``max(map(len, queues))`` and ``all(queues)``: on CPython 3.11
        # the two C-level scans cost more for ten queues (max's argument parsing, a call and
        # an int comparison per item); this runs once per budget, not per message.
        self._budget = 0
        capacity = self._capacity
        longest = 0
        for queue in self._queues:
            length = len(queue)
            if not length or length >= capacity:
                return False
            if length > longest:
                longest = length
        room = capacity - longest - 1  # after this message
        self._budget = MAX_BUDGET if room >= MAX_BUDGET else int(room)
        return True
