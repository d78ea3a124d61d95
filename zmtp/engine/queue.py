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

    def get(self) -> Message:
        """Pop the oldest message (the caller checked it is not empty)."""
        items = self.items
        message = items.popleft()
        if len(items) + 1 == self.capacity:
            self.on_space()
        return message

    def take(self, max_count: int, max_bytes: int) -> list[Message]:
        """Pop up to ``max_count`` messages / about ``max_bytes`` bytes (a writer's batch)."""
        items = self.items
        n = len(items)
        was_full = n >= self.capacity
        if n <= max_count and n * 64 <= max_bytes:
            # Cheap estimate first: small batches of small messages are taken whole.
            size = sum(len(p) for m in items for p in m)
            if size <= max_bytes:
                batch = list(items)
                items.clear()
                if was_full:
                    self.on_space()
                return batch
        batch = []
        size = 0
        popleft = items.popleft
        while items and len(batch) < max_count and size < max_bytes:
            message = popleft()
            batch.append(message)
            for part in message:
                size += len(part)
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
