"""The receiver's de-duplication store at levels 2 and 3, keyed by anchor
(docs/qos-protocol.md §5.1).

One ordered set of digests per anchor (digest -> time added) with a capacity (the socket's
``recv_hwm``; the oldest digest is evicted first) and a TTL (``dedup_ttl``, swept every ttl/2
by the owner calling :meth:`DedupStore.sweep`). Keying by anchor, not by connection, is what
keeps a replay after a reconnect from being delivered twice (the reference's shortcoming 1).
Byte-identical messages are one entry: the digest is the message's identity on the wire.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import KeysView


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
        pop = entries.pop
        for digest in digests:
            pop(digest, None)
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
