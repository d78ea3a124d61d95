"""The sender's pending tracker (docs/qos-protocol.md §5.1): messages written but not yet settled.

Entries are kept per peer key (a connection at level 1, an anchor at levels 2 and 3) in the
order they were written, and indexed by digest as a FIFO: two byte-identical messages in flight
are two entries, and the first ACK settles the oldest (the reference overwrote one with the
other and leaked a slot, its shortcoming 7). Record an entry *before* its bytes are written,
so an immediate ACK always finds it (shortcoming 6).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Hashable, Iterator
from typing import Generic, Protocol, TypeVar


class Trackable(Protocol):
    digest: bytes


E = TypeVar("E", bound=Trackable)


class PendingTracker(Generic[E]):
    """Pending entries by peer key (write order) and by digest (FIFO)."""

    def __init__(self) -> None:
        self._by_key: dict[Hashable, dict[int, E]] = {}
        self._by_digest: dict[bytes, deque[tuple[int, Hashable, E]]] = {}
        self._seq = 0
        self._count = 0

    def __len__(self) -> int:
        return self._count

    def count(self, key: Hashable) -> int:
        entries = self._by_key.get(key)
        return len(entries) if entries is not None else 0

    def peer_keys(self) -> list[Hashable]:
        return list(self._by_key)

    def track(self, key: Hashable, entry: E) -> None:
        """Record ``entry`` as pending for ``key`` (call before writing it)."""
        self._seq += 1
        seq = self._seq
        self._by_key.setdefault(key, {})[seq] = entry
        self._by_digest.setdefault(entry.digest, deque()).append((seq, key, entry))
        self._count += 1

    def settle(self, digest: bytes, key: Hashable | None = None) -> E | None:
        """Remove and return the oldest entry with ``digest`` (for ``key`` if given)."""
        queue = self._by_digest.get(digest)
        if not queue:
            return None
        for index, (seq, entry_key, entry) in enumerate(queue):
            if key is None or entry_key == key:
                del queue[index]
                if not queue:
                    del self._by_digest[digest]
                self._drop_from_key(entry_key, seq)
                return entry
        return None

    def take(self, key: Hashable) -> list[E]:
        """Remove and return every entry of ``key``, in write order."""
        entries = self._by_key.pop(key, None)
        if not entries:
            return []
        seqs = set(entries)
        for digest in {entry.digest for entry in entries.values()}:
            kept = deque(item for item in self._by_digest[digest] if item[0] not in seqs)
            if kept:
                self._by_digest[digest] = kept
            else:
                del self._by_digest[digest]
        self._count -= len(entries)
        return list(entries.values())

    def entries(self, key: Hashable) -> list[E]:
        """The entries of ``key`` in write order (not removed)."""
        entries = self._by_key.get(key)
        return list(entries.values()) if entries else []

    def __iter__(self) -> Iterator[E]:
        for entries in list(self._by_key.values()):
            yield from list(entries.values())

    def _drop_from_key(self, key: Hashable, seq: int) -> None:
        entries = self._by_key[key]
        del entries[seq]
        if not entries:
            del self._by_key[key]
        self._count -= 1
