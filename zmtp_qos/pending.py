"""The sender's pending tracker (docs/qos-protocol.md §5.1): messages written but not yet settled.

Entries are kept per peer key (a connection at level 1, an anchor at levels 2 and 3) and, within
a key, by digest as a FIFO: two byte-identical messages in flight are two entries, and the first
ACK settles the oldest (the reference overwrote one with the other and leaked a slot, its
shortcoming 7). Record an entry *before* its bytes are written, so an immediate ACK always finds
it (shortcoming 6).

Hot path (one track and one settle per message): a key's entries are one dict, digest ->
``(seq, entry)``, or a list of such pairs, oldest first, for byte-identical messages in flight
together. Tracking is one dict store; settling is one dict pop. ``seq`` (the write order)
is only read when a key's entries are taken for a replay or a fail-over, which sorts by it.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Iterator
from typing import Generic, Protocol, TypeVar, Union


class Trackable(Protocol):
    digest: bytes


E = TypeVar("E", bound=Trackable)
_Item = tuple[int, E]
_Slot = Union[tuple[int, E], list[tuple[int, E]]]  # noqa: UP007 (a runtime alias on 3.10)


class PendingTracker(Generic[E]):
    """Pending entries by peer key and digest (FIFO per digest), in write order."""

    def __init__(self) -> None:
        self._by_key: dict[Hashable, dict[bytes, _Slot[E]]] = {}
        self._seq = 0
        self._count = 0

    def __len__(self) -> int:
        return self._count

    def count(self, key: Hashable) -> int:
        slots = self._by_key.get(key)
        if not slots:
            return 0
        return sum(len(slot) if isinstance(slot, list) else 1 for slot in slots.values())

    def peer_keys(self) -> list[Hashable]:
        return [key for key, slots in self._by_key.items() if slots]

    def track(self, key: Hashable, entry: E) -> None:
        """Record ``entry`` as pending for ``key`` (call before writing it)."""
        self.track_all(key, (entry,))

    def track_all(self, key: Hashable, entries: Iterable[E]) -> None:
        """Record ``entries`` as pending for ``key``, in write order (a writer's batch)."""
        slots = self._by_key.get(key)
        if slots is None:
            slots = self._by_key[key] = {}
        seq = self._seq
        added = 0
        for entry in entries:
            seq += 1
            added += 1
            digest = entry.digest
            slot = slots.get(digest)
            if slot is None:
                slots[digest] = (seq, entry)
            elif isinstance(slot, list):
                slot.append((seq, entry))
            else:
                slots[digest] = [slot, (seq, entry)]  # identical messages: FIFO
        self._seq = seq
        self._count += added

    def settle(self, digest: bytes, key: Hashable | None = None) -> E | None:
        """Remove and return the oldest entry with ``digest`` for ``key`` (None: the oldest
        with that digest under any key)."""
        if key is None:
            key = self._oldest_key(digest)
        slots = self._by_key.get(key)
        if not slots:
            return None
        slot = slots.pop(digest, None)
        if slot is None:
            return None
        self._count -= 1
        if not isinstance(slot, list):
            return slot[1]
        first = slot.pop(0)
        slots[digest] = slot[0] if len(slot) == 1 else slot
        return first[1]

    def take(self, key: Hashable) -> list[E]:
        """Remove and return every entry of ``key``, in write order."""
        slots = self._by_key.pop(key, None)
        if not slots:
            return []
        items = _items(slots)
        self._count -= len(items)
        return [entry for _, entry in items]

    def entries(self, key: Hashable) -> list[E]:
        """The entries of ``key`` in write order (not removed)."""
        slots = self._by_key.get(key)
        return [entry for _, entry in _items(slots)] if slots else []

    def __iter__(self) -> Iterator[E]:
        for slots in list(self._by_key.values()):
            for _, entry in _items(slots):
                yield entry

    def _oldest_key(self, digest: bytes) -> Hashable | None:
        best: tuple[int, Hashable] | None = None
        for key, slots in self._by_key.items():
            slot = slots.get(digest)
            if slot is None:
                continue
            seq = slot[0][0] if isinstance(slot, list) else slot[0]
            if best is None or seq < best[0]:
                best = (seq, key)
        return None if best is None else best[1]


def _items(slots: dict[bytes, _Slot[E]]) -> list[_Item[E]]:
    """Every ``(seq, entry)`` of one key, in write order."""
    items: list[_Item[E]] = []
    for slot in slots.values():
        if isinstance(slot, list):
            items.extend(slot)
        else:
            items.append(slot)
    items.sort(key=_seq_of)
    return items


def _seq_of(item: _Item[E]) -> int:
    return item[0]
