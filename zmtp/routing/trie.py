"""Prefix tries for PUB/SUB subscriptions.

Subscriptions are byte-string prefixes: a message matches when one of the subscribed topics
is a prefix of its first frame (``b""`` matches everything). Two flavours are needed, mirroring
libzmq, and the difference matters on the wire:

* :class:`TopicTrie` (SUB/XSUB side, libzmq ``trie_t``): each topic has a *count*. Subscribing
  twice needs two unsubscribes, and the SUB only tells its publishers ``CANCEL`` when the count
  reaches zero.
* :class:`PipeTrie` (PUB/XPUB side, libzmq ``mtrie_t``): each topic has a *set of subscriber
  pipes*. A second SUBSCRIBE for the same topic from the same peer changes nothing, and one
  CANCEL removes it. That is what makes the two sides agree: a libzmq SUB sends every
  SUBSCRIBE but only the last CANCEL, so a per-peer count on the publisher would leak.

Both are radix (path-compressed) tries: every edge carries a byte string, and a node has at
most one child per first byte. A lookup walks one edge per branching point, comparing whole
edge labels with ``bytes.startswith`` (C speed), so matching costs about the depth of the
branching structure, not the number of topics - thousands of topics cost little more than ten.
Removal prunes empty leaves and re-merges single-child chains, so churn does not degrade it.
"""

from __future__ import annotations

from collections.abc import Collection, Hashable, Iterator
from enum import Enum
from typing import Generic, TypeVar

V = TypeVar("V")
P = TypeVar("P", bound=Hashable)


class _Node(Generic[V]):
    __slots__ = ("children", "label", "value")

    def __init__(self, label: bytes) -> None:
        self.label = label  #: the bytes on the edge from the parent to this node
        self.children: dict[int, _Node[V]] = {}  #: keyed by the first byte of the child's label
        self.value: V | None = None  #: None = no subscription ends here


class _RadixTrie(Generic[V]):
    """The shared structure: insertion with edge splitting, removal with re-merging."""

    def __init__(self) -> None:
        self._root: _Node[V] = _Node(b"")
        self._size = 0  # nodes holding a value

    def __len__(self) -> int:
        """The number of distinct topics with a subscription."""
        return self._size

    def _find(self, key: bytes) -> _Node[V] | None:
        node = self._root
        pos = 0
        n = len(key)
        while pos < n:
            child = node.children.get(key[pos])
            if child is None or not key.startswith(child.label, pos):
                return None
            pos += len(child.label)
            node = child
        return node

    def _insert(self, key: bytes) -> _Node[V]:
        """The node for ``key``, created (splitting an edge if needed) when missing."""
        node = self._root
        pos = 0
        n = len(key)
        while pos < n:
            first = key[pos]
            child = node.children.get(first)
            if child is None:
                leaf: _Node[V] = _Node(key[pos:])
                node.children[first] = leaf
                return leaf
            label = child.label
            if key.startswith(label, pos):
                node = child
                pos += len(label)
                continue
            # Split the edge where key and label diverge (they share at least one byte).
            common = 1
            limit = min(len(label), n - pos)
            while common < limit and label[common] == key[pos + common]:
                common += 1
            middle: _Node[V] = _Node(label[:common])
            child.label = label[common:]
            middle.children[child.label[0]] = child
            node.children[first] = middle
            if pos + common == n:
                return middle
            leaf = _Node(key[pos + common :])
            middle.children[key[pos + common]] = leaf
            return leaf
        return node

    def _path(self, key: bytes) -> list[_Node[V]] | None:
        """Nodes from the root to ``key``'s node (inclusive), or None if it does not exist."""
        node = self._root
        path = [node]
        pos = 0
        n = len(key)
        while pos < n:
            child = node.children.get(key[pos])
            if child is None or not key.startswith(child.label, pos):
                return None
            pos += len(child.label)
            node = child
            path.append(node)
        return path

    def _prune(self, path: list[_Node[V]]) -> None:
        """``path[-1]`` just lost its value: drop or merge nodes that no longer branch."""
        node = path[-1]
        if len(path) == 1:
            return  # the root stays
        parent = path[-2]
        if not node.children:
            del parent.children[node.label[0]]
            # The parent may now be a valueless pass-through with one child: merge it down.
            if len(path) > 2 and parent.value is None and len(parent.children) == 1:
                self._merge_into_child(path[-3], parent)
        elif len(node.children) == 1:
            self._merge_into_child(parent, node)

    @staticmethod
    def _merge_into_child(parent: _Node[V], node: _Node[V]) -> None:
        (child,) = node.children.values()
        child.label = node.label + child.label
        parent.children[node.label[0]] = child

    def _items(self) -> Iterator[tuple[bytes, V]]:
        """Every (topic, value), depth first."""
        stack: list[tuple[bytes, _Node[V]]] = [(b"", self._root)]
        while stack:
            prefix, node = stack.pop()
            if node.value is not None:
                yield prefix, node.value
            for child in node.children.values():
                stack.append((prefix + child.label, child))


#: Up to this many distinct topics, :attr:`TopicTrie.prefixes` lists them for SUB's filter.
PREFIXES_MAX = 8


class TopicTrie(_RadixTrie[int]):
    """Counted subscriptions of a SUB/XSUB (libzmq ``trie_t``)."""

    def __init__(self) -> None:
        super().__init__()
        self._prefixes: tuple[bytes, ...] | None = ()

    def add(self, topic: bytes) -> bool:
        """Count one more subscription; True if the topic is new."""
        node = self._insert(topic)
        if node.value is None:
            node.value = 1
            self._size += 1
            self._update_prefixes()
            return True
        node.value += 1
        return False

    def remove(self, topic: bytes) -> bool:
        """Count one subscription less; True if that was the last one (False if unknown)."""
        path = self._path(topic)
        if path is None or path[-1].value is None:
            return False
        node = path[-1]
        assert node.value is not None
        if node.value > 1:
            node.value -= 1
            return False
        node.value = None
        self._size -= 1
        self._prune(path)
        self._update_prefixes()
        return True

    def _update_prefixes(self) -> None:
        self._prefixes = tuple(self.topics()) if self._size <= PREFIXES_MAX else None

    @property
    def prefixes(self) -> tuple[bytes, ...] | None:
        """Every subscribed topic while there are at most ``PREFIXES_MAX`` (else None), kept
        up to date by ``add``/``remove``: ``data.startswith(prefixes)`` is then exactly
        :meth:`matches` (some topic is a prefix of ``data``; an empty tuple matches
        nothing), in one C call instead of a walk in Python per message. A SUB filtering
        every message on one or a few topics is the common case (issue 15)."""
        return self._prefixes

    def count(self, topic: bytes) -> int:
        node = self._find(topic)
        return 0 if node is None or node.value is None else node.value

    def matches(self, data: bytes) -> bool:
        """Whether some subscribed topic is a prefix of ``data``."""
        node = self._root
        if node.value is not None:
            return True
        pos = 0
        n = len(data)
        children = node.children
        while pos < n:
            child = children.get(data[pos])
            if child is None:
                return False
            label = child.label
            if not data.startswith(label, pos):
                return False
            if child.value is not None:
                return True
            pos += len(label)
            children = child.children
        return False

    @property
    def matches_everything(self) -> bool:
        """True when subscribed to ``b""`` (lets SUB skip filtering altogether)."""
        return self._root.value is not None

    def topics(self) -> list[bytes]:
        """Every subscribed topic once (what a SUB re-sends after reconnecting)."""
        return [topic for topic, _ in self._items()]


class RemoveResult(Enum):
    """What :meth:`PipeTrie.remove` did (libzmq ``mtrie_t::rm_result``)."""

    NOT_FOUND = "not found"
    LAST_VALUE_REMOVED = "last value removed"
    VALUES_REMAIN = "values remain"


class PipeTrie(_RadixTrie[set[P]], Generic[P]):
    """Subscriber sets of a PUB/XPUB (libzmq ``mtrie_t``): topic -> the pipes subscribed."""

    def __init__(self) -> None:
        super().__init__()
        #: Counts every :meth:`add` and :meth:`remove`: the sets :meth:`match` returns may
        #: have changed since a caller last saw this value (a publisher caches their outboxes).
        self.version = 0

    def add(self, topic: bytes, pipe: P) -> bool:
        """Subscribe ``pipe``; True if nobody was subscribed to the topic before."""
        self.version += 1
        node = self._insert(topic)
        if node.value is None:
            node.value = {pipe}
            self._size += 1
            return True
        node.value.add(pipe)
        return False

    def remove(self, topic: bytes, pipe: P) -> RemoveResult:
        """Unsubscribe ``pipe`` from exactly ``topic``."""
        self.version += 1
        path = self._path(topic)
        if path is None:
            return RemoveResult.NOT_FOUND
        node = path[-1]
        pipes = node.value
        if pipes is None or pipe not in pipes:
            return RemoveResult.NOT_FOUND
        pipes.discard(pipe)
        if pipes:
            return RemoveResult.VALUES_REMAIN
        node.value = None
        self._size -= 1
        self._prune(path)
        return RemoveResult.LAST_VALUE_REMOVED

    def match(self, data: bytes) -> Collection[P]:
        """Every pipe subscribed to a prefix of ``data``, each once.

        The common cases allocate nothing: no match returns an empty tuple, and a single
        matching topic returns its own set (callers must not modify the result).
        """
        node = self._root
        found: set[P] | None = node.value
        children = node.children
        if not children:  # only b"" (everyone subscribed to everything) or nothing at all
            return () if found is None else found
        merged = False
        pos = 0
        n = len(data)
        while pos < n:
            child = children.get(data[pos])
            if child is None:
                break
            label = child.label
            if not data.startswith(label, pos):
                break
            pipes = child.value
            if pipes is not None:
                if found is None:
                    found = pipes
                elif merged:
                    found |= pipes
                else:
                    found = found | pipes
                    merged = True
            pos += len(label)
            children = child.children
        return () if found is None else found

    def topics_of(self, pipe: P) -> list[bytes]:
        """Every topic ``pipe`` is subscribed to (a full walk: only for rare operations)."""
        return [topic for topic, pipes in self._items() if pipe in pipes]
