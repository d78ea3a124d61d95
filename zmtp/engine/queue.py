"""A one-direction message queue between a producer and a consumer, with a high-water mark.

The same object is the *outbox* of one side and the *inbox* of the other: for tcp/ipc the
other side is a connection's writer (or reader) task; for inproc it is the peer socket itself,
which is how inproc passes part lists by reference with no encoding and no extra task.

Wake-ups are callbacks fired on edges only (empty -> non-empty for the consumer, full -> not
full for the producer), so the steady state costs one ``deque`` operation and one length check.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable

Message = list[bytes]

#: What a receive queue may hold: a message as its list of parts, or - for a one-part message
#: on the receive path of a socket type that opted in (``RoutingStrategy.bare_single_part``,
#: with no extension installed or one that opted in too, ``SocketExtension.bare_single_part``)
#: - its only part as a bare ``bytes``. Why: a ``bytes`` is not
#: tracked by the cyclic garbage collector and costs no list allocation, and a PULL or SUB
#: inbox can hold a hundred thousand messages (issue 15: the collector walking the queued
#: lists cost 0.7 us a message). The receive API turns it back with :func:`as_parts`, so
#: applications never see the difference. Send queues (outboxes) only ever hold ``Message``.
Received = bytes | list[bytes]


def as_parts(message: Received) -> Message:
    """``message`` as its list of parts (a bare one-part message wrapped in a new list)."""
    return [message] if isinstance(message, bytes) else message


def _noop() -> None:
    return None


class MessageQueue:
    __slots__ = ("capacity", "items", "on_data", "on_space")

    def __init__(self, capacity: float) -> None:
        self.items: deque[Message] = deque()
        self.capacity = capacity  # float so that math.inf means "no limit"
        self.on_data: Callable[[], None] = _noop  #: consumer wake-up (queue became non-empty)
        self.on_space: Callable[[], None] = _noop  #: producer wake-up (queue left "full")

    def __len__(self) -> int:
        return len(self.items)

    @property
    def full(self) -> bool:
        return len(self.items) >= self.capacity

    def put(self, message: Message) -> None:
        """Append one message (the caller checked ``full`` if it honours the HWM)."""
        items = self.items
        items.append(message)
        if len(items) == 1:
            self.on_data()

    def put_many(self, messages: Iterable[Message]) -> None:
        """Append a batch (a reader's whole chunk); the HWM is checked before the next read."""
        items = self.items
        was_empty = not items
        items.extend(messages)
        if was_empty and items:
            self.on_data()

    def put_received(self, messages: Iterable[Received]) -> None:
        """:meth:`put_many` for an inbox of a ``bare_single_part`` socket type, whose batches
        may hold bare one-part messages (see ``Received``); the consumer takes them back
        as ``Received`` (``FairQueue.fq_recv``). The deque is annotated with ``Message``, the
        type every other queue holds; this is the one way bare messages are put in."""
        items = self.items
        was_empty = not items
        items.extend(messages)  # type: ignore[arg-type]
        if was_empty and items:
            self.on_data()

    def put_only(self, message: Received) -> None:
        """Make ``message`` the queue's only item (``ZMQ_CONFLATE``). Replacing in place when
        the queue already holds one keeps the edge-triggered wake-ups right: the consumer was
        told about "non-empty" once, and it still is. ``message`` may be bare on an inbox of
        a ``bare_single_part`` type (see :meth:`put_received`)."""
        items = self.items
        if items:
            items.clear()
            items.append(message)  # type: ignore[arg-type]
        else:
            self.put_received((message,))

    def put_front(self, messages: Iterable[Message]) -> None:
        """Put ``messages`` (in their order) ahead of everything queued, past the HWM: a
        replay after a fail-over goes out before newer messages (extensions such as QoS use
        it on a pipe's ``outbox``; on inproc the outbox is the peer's inbox). Keeps the
        empty -> non-empty wake-up edge."""
        batch = list(messages)
        if not batch:
            return
        items = self.items
        was_empty = not items
        items.extendleft(reversed(batch))
        if was_empty:
            self.on_data()

    def get(self) -> Message:
        """Pop the oldest message (the caller checked it is not empty)."""
        items = self.items
        message = items.popleft()
        if len(items) + 1 == self.capacity:
            self.on_space()
        return message

    def take(self, max_count: int, max_bytes: int) -> list[Message]:
        """Pop a writer's batch: up to ``max_count`` messages and roughly ``max_bytes``.

        The byte budget is turned into a count from the size of the first message's first part
        instead of summing every message (which cost as much as encoding them): a batch of
        uniform messages lands on the budget, and mixed sizes can overshoot it by a factor of
        their size ratio at most, bounded by ``max_count``.
        """
        items = self.items
        n = len(items)
        if not n:
            return []
        was_full = n >= self.capacity
        first = items[0]
        count = min(n, max_count, max(1, max_bytes // (len(first[0]) + 1)))
        if count == n:
            batch = list(items)
            items.clear()
        else:
            popleft = items.popleft
            batch = [popleft() for _ in range(count)]
        if was_full and len(items) < self.capacity:
            self.on_space()
        return batch

    def clear(self) -> list[Message]:
        """Remove and return everything (used when a pipe is dropped)."""
        dropped = list(self.items)
        was_full = len(self.items) >= self.capacity
        self.items.clear()
        if was_full:
            self.on_space()
        return dropped
