"""The subscription tries (zmtp/routing/trie.py) against a naive model, and their speed with
thousands of topics (measured and printed, never asserted: timing belongs in benchmarks)."""

from __future__ import annotations

import random
import time

from hypothesis import given, settings
from hypothesis import strategies as st

from zmtp.routing.trie import PREFIXES_MAX, PipeTrie, RemoveResult, TopicTrie

# Small alphabet so that topics share prefixes and edges get split and merged a lot.
topics = st.binary(max_size=6).map(lambda b: bytes(x % 3 + 0x61 for x in b))
ops = st.lists(
    st.tuples(st.sampled_from(["add", "remove", "match"]), topics, st.integers(0, 3)),
    max_size=80,
)


@settings(max_examples=300, deadline=None)
@given(ops)
def test_topic_trie_counts_like_a_multiset(operations: list[tuple[str, bytes, int]]) -> None:
    trie = TopicTrie()
    model: dict[bytes, int] = {}
    for op, topic, _ in operations:
        if op == "add":
            assert trie.add(topic) == (topic not in model)
            model[topic] = model.get(topic, 0) + 1
        elif op == "remove":
            last = model.get(topic) == 1
            assert trie.remove(topic) == last
            if topic in model:
                model[topic] -= 1
                if not model[topic]:
                    del model[topic]
        else:
            expected = any(topic.startswith(t) for t in model)
            assert trie.matches(topic) == expected
            if trie.prefixes is not None:  # SUB's fast filter gives the same answer
                assert topic.startswith(trie.prefixes) == expected
        assert len(trie) == len(model)
        assert sorted(trie.topics()) == sorted(model)
        for t, n in model.items():
            assert trie.count(t) == n
        # Listed exactly while there are few topics (an empty tuple matches nothing).
        if len(model) <= PREFIXES_MAX:
            assert trie.prefixes is not None and sorted(trie.prefixes) == sorted(model)
        else:
            assert trie.prefixes is None
    assert trie.matches_everything == (b"" in model)


@settings(max_examples=300, deadline=None)
@given(ops)
def test_pipe_trie_keeps_a_set_per_topic(operations: list[tuple[str, bytes, int]]) -> None:
    trie: PipeTrie[int] = PipeTrie()
    model: dict[bytes, set[int]] = {}
    for op, topic, pipe in operations:
        if op == "add":
            assert trie.add(topic, pipe) == (topic not in model)
            model.setdefault(topic, set()).add(pipe)
        elif op == "remove":
            pipes = model.get(topic)
            result = trie.remove(topic, pipe)
            if pipes is None or pipe not in pipes:
                assert result is RemoveResult.NOT_FOUND
            else:
                pipes.discard(pipe)
                if pipes:
                    assert result is RemoveResult.VALUES_REMAIN
                else:
                    assert result is RemoveResult.LAST_VALUE_REMOVED
                    del model[topic]
        else:
            expected = set().union(*(p for t, p in model.items() if topic.startswith(t)))
            assert set(trie.match(topic)) == expected
        assert len(trie) == len(model)
    for p in range(4):
        assert sorted(trie.topics_of(p)) == sorted(t for t, ps in model.items() if p in ps)


def test_match_does_not_let_callers_corrupt_the_trie_when_merging() -> None:
    trie: PipeTrie[str] = PipeTrie()
    trie.add(b"a", "x")
    trie.add(b"ab", "y")
    assert set(trie.match(b"abc")) == {"x", "y"}
    assert set(trie.match(b"a")) == {"x"}  # the merge above made a copy


def test_edges_are_split_and_merged_back() -> None:
    trie = TopicTrie()
    trie.add(b"abcdef")
    trie.add(b"abcxyz")  # splits the edge at "abc"
    trie.add(b"ab")
    assert trie.matches(b"abq") and trie.matches(b"abcdefg") and not trie.matches(b"a")
    trie.remove(b"ab")
    trie.remove(b"abcxyz")  # "abc" has one child left: merged back into one edge
    root_children = trie._root.children
    assert len(root_children) == 1
    (only,) = root_children.values()
    assert only.label == b"abcdef" and not only.children
    trie.remove(b"abcdef")
    assert not trie._root.children and len(trie) == 0


def test_thousands_of_topics_stay_fast() -> None:
    """Benchmark, printed with ``-s``: 5000 topics, 50 000 lookups. Only correctness asserted."""
    rng = random.Random(7)
    words = [f"market.{rng.randrange(40)}.{rng.randrange(10**6):06d}".encode() for _ in range(5000)]
    sub = TopicTrie()
    pub: PipeTrie[int] = PipeTrie()
    t0 = time.perf_counter()
    for i, w in enumerate(words):
        sub.add(w)
        pub.add(w, i % 50)
    t1 = time.perf_counter()
    probes = [w + b"|payload" for w in rng.choices(words, k=25_000)]
    probes += [f"market.{rng.randrange(40)}.x".encode() for _ in range(25_000)]
    hits = 0
    for p in probes:
        hits += sub.matches(p)
        pub.match(p)
    t2 = time.perf_counter()
    assert hits == 25_000
    for w in words[::2]:
        sub.remove(w)
    assert all(sub.matches(w) for w in words[1::2])
    print(
        f"\ntrie: {len(words)} inserts x2 in {1e3 * (t1 - t0):.1f} ms; "
        f"{len(probes)} lookups x2 in {1e3 * (t2 - t1):.1f} ms "
        f"({1e6 * (t2 - t1) / (2 * len(probes)):.2f} us each)"
    )


def test_match_with_only_the_empty_topic_returns_its_own_set() -> None:
    """The root-only shortcut (a trie holding no topic but ``b""``): every message matches,
    and the very same set comes back each time (the publisher's FanOutCache keys on that
    identity); with a longer topic added and removed again, the walk and the shortcut agree."""
    trie: PipeTrie[str] = PipeTrie()
    assert trie.match(b"anything") == ()
    trie.add(b"", "x")
    first = trie.match(b"d" * 64)
    assert set(first) == {"x"}
    assert trie.match(b"") is first
    assert trie.match(b"other") is first
    trie.add(b"ab", "y")
    assert set(trie.match(b"abc")) == {"x", "y"}
    assert trie.match(b"b") is first
    assert trie.remove(b"ab", "y") is RemoveResult.LAST_VALUE_REMOVED
    assert trie.match(b"abc") is first
    assert trie.remove(b"", "x") is RemoveResult.LAST_VALUE_REMOVED
    assert trie.match(b"abc") == ()
