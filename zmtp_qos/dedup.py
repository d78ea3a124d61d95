"""The receiver's de-duplication store at levels 2 and 3, keyed by anchor
(docs/qos-protocol.md §5.1).

One ordered set of digests per anchor (digest -> time added) with a capacity (the socket's
``recv_hwm``; the oldest digest is evicted first) and a TTL (``dedup_ttl``, swept every ttl/2
by the owner calling :meth:`DedupStore.sweep`). Keying by anchor, not by connection, is what
keeps a replay after a reconnect from being delivered twice (the reference's shortcoming 1).
Byte-identical messages are one entry: the digest is the message's identity on the wire.
"""

from __future__ import annotations

from collections import OrderedDict, deque
from collections.abc import KeysView
from itertools import repeat


class DedupStore:
    """Digests seen per anchor, bounded in count and age."""

    def __init__(self, capacity: int, ttl: float) -> None:
        if capacity < 1:
            raise ValueError("dedup capacity must be at least 1")
        self.capacity = capacity
        self.ttl = ttl
        self._sets: dict[bytes, OrderedDict[bytes, float]] = {}

    def __len__(self) -> int:
        return sum(len(s) for s in self._sets.values())

    def seen(self, anchor: bytes, digest: bytes) -> bool:
        entries = self._sets.get(anchor)
        return entries is not None and digest in entries

    def add(self, anchor: bytes, digest: bytes, now: float) -> None:
        """Remember ``digest`` (refreshing it if present); evicts the oldest over capacity."""
        entries = self._sets.get(anchor)
        if entries is None:
            entries = self._sets[anchor] = OrderedDict()
        elif digest in entries:
            entries.move_to_end(digest)  # refreshed: now the newest
        entries[digest] = now
        while len(entries) > self.capacity:
            entries.popitem(last=False)

    def admit(self, anchor: bytes, digest: bytes, now: float) -> bool:
        """Level 2's receive in one lookup: remember ``digest`` and return True if it is new;
        False (nothing changed, as :meth:`seen`) if it is already known."""
        entries = self._sets.get(anchor)
        if entries is None:
            entries = self._sets[anchor] = OrderedDict()
        elif digest in entries:
            return False
        entries[digest] = now  # new keys go last: no move_to_end needed
        if len(entries) > self.capacity:
            entries.popitem(last=False)
        return True

    def admit_all(self, anchor: bytes, digests: list[bytes], now: float) -> list[int]:
        """:meth:`admit` for each of ``digests`` in turn (a level-2 read's batch) in one call;
        returns the positions of the duplicates (empty: every message is new).

        The usual batch (none known, no longer than the capacity) is added by one C-level
        ``update`` after one ``isdisjoint`` check, instead of a call and a lookup per message
        (a digest repeated within it is a duplicate from its second time on, as in turn);
        anything else goes digest by digest, exactly as :meth:`admit` in a loop. Either way
        the same duplicates and the same evictions (the newest ``capacity`` digests stay:
        with the batch no longer than that, none of it is evicted before its repeat)."""
        entries = self._sets.get(anchor)
        if entries is None:
            entries = self._sets[anchor] = OrderedDict()
        count = len(digests)
        capacity = self.capacity
        if count <= capacity and entries.keys().isdisjoint(digests):
            before = len(entries)
            entries.update(dict.fromkeys(digests, now))
            repeats: list[int] = []
            if len(entries) - before != count:  # a digest twice in the batch
                seen: set[bytes] = set()
                for i, digest in enumerate(digests):
                    if digest in seen:
                        repeats.append(i)
                    seen.add(digest)
            if len(entries) > capacity:
                popitem = entries.popitem
                for _ in range(len(entries) - capacity):
                    popitem(last=False)
            return repeats
        admit = self.admit
        return [i for i, digest in enumerate(digests) if not admit(anchor, digest, now)]

    def remove(self, anchor: bytes, digest: bytes) -> bool:
        """CLR: forget ``digest``; whether it was known."""
        entries = self._sets.get(anchor)
        if entries is None or entries.pop(digest, None) is None:
            return False
        if not entries:
            del self._sets[anchor]
        return True

    def remove_all(self, anchor: bytes, digests: list[bytes]) -> None:
        """A run of CLRs: forget each of ``digests`` (unknown ones are ignored)."""
        entries = self._sets.get(anchor)
        if entries is None:
            return
        deque(map(entries.pop, digests, repeat(None)), 0)  # each popped, the loop in C
        if not entries:
            del self._sets[anchor]

    def sweep(self, now: float) -> int:
        """Drop digests older than the TTL; how many were dropped."""
        dropped = 0
        horizon = now - self.ttl
        for anchor in list(self._sets):
            entries = self._sets[anchor]
            while entries:
                digest, added = next(iter(entries.items()))
                if added > horizon:
                    break
                del entries[digest]
                dropped += 1
            if not entries:
                del self._sets[anchor]
        return dropped

    def size(self, anchor: bytes) -> int:
        entries = self._sets.get(anchor)
        return len(entries) if entries is not None else 0

    def known(self, anchor: bytes) -> KeysView[bytes]:
        """The digests remembered for ``anchor``, for a read's worth of tests without a call
        each (the level-3 receiver: ``isdisjoint`` in C, or ``in``). A live view."""
        entries = self._sets.get(anchor)
        return (entries if entries is not None else _NONE).keys()

    def add_all(self, anchor: bytes, digests: list[bytes], now: float) -> None:
        """:meth:`add` for a batch (a flush of level-3 COMPs): each remembered (refreshed if
        present) in order, then the oldest evicted over capacity."""
        entries = self._sets.get(anchor)
        if entries is None:
            entries = self._sets[anchor] = OrderedDict()
        if entries.keys().isdisjoint(digests):
            entries.update(dict.fromkeys(digests, now))  # the usual batch: all new, in C
        else:
            move = entries.move_to_end
            for digest in digests:
                if digest in entries:
                    move(digest)  # refreshed: now the newest
                entries[digest] = now
        while len(entries) > self.capacity:
            entries.popitem(last=False)


#: What :meth:`DedupStore.known` views for an anchor with nothing remembered (never filled).
_NONE: dict[bytes, float] = {}
