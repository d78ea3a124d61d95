"""The sender's pending tracker (docs/qos-protocol.md §5.1): messages written but not yet settled.

Entries are kept per peer key (a connection at level 1, an anchor at levels 2 and 3) and, within
a key, by digest as a FIFO: two byte-identical messages in flight are two entries, and the first
ACK settles the oldest (the reference overwrote one with the other and leaked a slot, its
shortcoming 7). Record an entry *before* its bytes are written, so an immediate ACK always finds
it (shortcoming 6).

Hot path (one track and one settle per message): a key's entries are one dict, digest -> entry,
or a list of entries, oldest first, for byte-identical messages in flight together. Tracking is
one dict store and settling one dict pop, with no object made per message (fewer objects for
the cyclic GC to walk). The tracker numbers each entry (``entry.seq``) in write order; the
number is only read when a key's entries are taken for a replay or a fail-over, which sorts by it.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterator, Sequence
from itertools import repeat
from typing import Any, Generic, Protocol, TypeVar, Union, cast


class Trackable(Protocol):
    #: Both set by :meth:`PendingTracker.track_all`: the key it is tracked under (kept after
    #: it leaves the tracker: where it was last written), and the write order. (Its digest is
    #: the tracker's key for it, not stored on the entry: nothing reads it there.)
    key: Any
    seq: int


E = TypeVar("E", bound=Trackable)
_Slot = Union[E, list[E]]  # noqa: UP007 (a runtime alias on 3.10)


class PendingTracker(Generic[E]):
    """Pending entries by peer key and digest (FIFO per digest), in write order."""

    def __init__(self) -> None:
        self._by_key: dict[Hashable, dict[Hashable, _Slot[E]]] = {}
        self._seq = 0
        self._count = 0
        #: How many digests have a FIFO (a list of identical messages in flight) under any
        #: key: while there is none, :meth:`settle_all` needs no per-digest Python code.
        self._fifos = 0

    def __len__(self) -> int:
        return self._count

    def count(self, key: Hashable) -> int:
        slots = self._by_key.get(key)
        if not slots:
            return 0
        return sum(len(slot) if isinstance(slot, list) else 1 for slot in slots.values())

    def peer_keys(self) -> list[Hashable]:
        return [key for key, slots in self._by_key.items() if slots]

    def track(self, key: Hashable, entry: E, digest: Hashable) -> None:
        """Record ``entry`` (its message's digest ``digest``) as pending for ``key`` (call
        before writing it)."""
        self.track_all(key, (entry,), (digest,))

    def track_all(self, key: Hashable, entries: Sequence[E], digests: Sequence[Hashable]) -> None:
        """Record ``entries`` as pending for ``key``, in write order (a writer's batch), with
        their messages' ``digests`` (parallel): each entry's ``seq`` and ``key`` are set here.

        The usual batch (no digest already in flight under ``key``, none twice in it) is
        stored by one ``isdisjoint`` test and one ``update`` in C, the loop left per entry
        only numbering it; otherwise one ``setdefault`` per entry, a byte-identical message
        already in flight joining its FIFO behind it."""
        if len(entries) != len(digests):
            raise ValueError("track_all: as many digests as entries")
        slots = self._by_key.get(key)
        if slots is None:
            slots = self._by_key[key] = {}
        seq = start = self._seq
        if slots.keys().isdisjoint(digests):
            before = len(slots)
            slots.update(zip(digests, entries, strict=True))
            if len(slots) - before == len(entries):
                for entry in entries:
                    seq += 1
                    entry.seq = seq
                    entry.key = key
                self._seq = seq
                self._count += seq - start
                return
            for digest in digests:  # a digest twice in the batch: undo, take the loop
                slots.pop(digest, None)
        setdefault = slots.setdefault
        for entry, digest in zip(entries, digests, strict=True):
            seq += 1
            entry.seq = seq
            entry.key = key
            slot = setdefault(digest, entry)
            if slot is not entry:  # identical messages in flight: FIFO
                if isinstance(slot, list):
                    slot.append(entry)
                else:
                    slots[digest] = [slot, entry]
                    self._fifos += 1
        self._seq = seq
        self._count += seq - start

    def settle(self, digest: Hashable, key: Hashable | None = None) -> E | None:
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
            return slot
        return self._next_of(slots, digest, slot)

    def _next_of(self, slots: dict[Hashable, _Slot[E]], digest: Hashable, fifo: list[E]) -> E:
        """The oldest of a FIFO just popped from ``slots``; the rest go back."""
        first = fifo.pop(0)
        if len(fifo) == 1:
            slots[digest] = fifo[0]
            self._fifos -= 1
        else:
            slots[digest] = fifo
        return first

    def settle_all(self, key: Hashable, digests: Sequence[Hashable]) -> list[E | None]:
        """:meth:`settle` for each of ``digests`` under ``key``, in order, in one call (a
        read's run of ACKs): the oldest entry each, or None for an unknown digest.

        The usual run (every digest known, no identical messages in flight) is popped by one
        C-level ``map`` and checked by ``all`` (entries are truthy objects): no Python code
        per digest. Otherwise what was popped is put back and the run settled in turn."""
        slots = self._by_key.get(key)
        if not slots:
            return [None] * len(digests)
        pop = slots.pop
        popped: list[_Slot[E] | None] = list(map(pop, digests, repeat(None)))
        if not self._fifos and all(popped):
            self._count -= len(popped)
            return cast("list[E | None]", popped)  # no FIFO: every slot is an entry
        for digest, slot in zip(digests, popped, strict=True):
            if slot is not None:  # each slot was popped once: the first time its digest came
                slots[digest] = slot
        found: list[E | None] = []
        append = found.append
        settled = 0
        for digest in digests:
            slot = pop(digest, None)
            if slot is None:
                append(None)
                continue
            settled += 1
            if isinstance(slot, list):
                append(self._next_of(slots, digest, slot))
            else:
                append(slot)
        self._count -= settled
        return found

    def take(self, key: Hashable) -> list[E]:
        """Remove and return every entry of ``key``, in write order."""
        slots = self._by_key.pop(key, None)
        if not slots:
            return []
        entries = _in_order(slots)
        self._count -= len(entries)
        self._fifos -= sum(1 for slot in slots.values() if isinstance(slot, list))
        return entries

    def entries(self, key: Hashable) -> list[E]:
        """The entries of ``key`` in write order (not removed)."""
        slots = self._by_key.get(key)
        return _in_order(slots) if slots else []

    def __iter__(self) -> Iterator[E]:
        for slots in list(self._by_key.values()):
            yield from _in_order(slots)

    def _oldest_key(self, digest: Hashable) -> Hashable | None:
        best: tuple[int, Hashable] | None = None
        for key, slots in self._by_key.items():
            slot = slots.get(digest)
            if slot is None:
                continue
            seq = slot[0].seq if isinstance(slot, list) else slot.seq
            if best is None or seq < best[0]:
                best = (seq, key)
        return None if best is None else best[1]


def _in_order(slots: dict[Hashable, _Slot[E]]) -> list[E]:
    """Every entry of one key, in write order."""
    entries: list[E] = []
    for slot in slots.values():
        if isinstance(slot, list):
            entries.extend(slot)
        else:
            entries.append(slot)
    entries.sort(key=_seq_of)
    return entries


def _seq_of(entry: Trackable) -> int:
    return entry.seq
