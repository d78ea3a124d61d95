"""PUB/XPUB's cached fan-out (zmtp/routing/fanout_cache.py) and the writers' shared batch
encoding (``encode_shared_messages`` in zmtp/protocol/frames.py).

What must not change: the HWM per subscriber (a full one loses only its own copies), the
empty -> non-empty wake-up of each writer, ``xpub_nodrop`` (nobody gets a message while one
is full), the order on each pipe, subscription filtering as subscribers come and go, and a
cancelled blocked send queueing nothing anywhere."""

from __future__ import annotations

from contextlib import AsyncExitStack

import anyio
import pytest

import zmtp
from zmtp.engine.pipe import Pipe
from zmtp.engine.queue import MessageQueue
from zmtp.protocol.commands import CANCEL, SUBSCRIBE
from zmtp.protocol.frames import (
    EncodedMessage,
    FrameDecoder,
    encode_messages,
    encode_shared_messages,
    encoded_message,
)
from zmtp.routing.fanout_cache import FanOutCache
from zmtp.routing.pubsub import Pub
from zmtp.routing.xpubsub import FORGET_SLICE, XPub

from ._sockets_util import TIMEOUT, ours_briefly, ours_sender, probe_until_received, recv_within
from .test_engine_shared_encoding import _host


def _pipe(strategy: XPub, hwm: int = 1000, topic: bytes | None = b"") -> Pipe:
    pipe = Pipe("tcp://127.0.0.1:5555", MessageQueue(hwm), MessageQueue(hwm), persistent=False)
    pipe.attached = True
    strategy.attach(pipe)
    if topic is not None:
        strategy.command(pipe, SUBSCRIBE, topic)
    return pipe


def _wakeups(pipes: list[Pipe]) -> list[int]:
    woken: list[int] = []
    for i, pipe in enumerate(pipes):
        pipe.outbox.on_data = lambda i=i: woken.append(i)  # type: ignore[misc]
    return woken


def _bodies(pipe: Pipe) -> list[bytes]:
    return [m[0] for m in pipe.outbox.items]


# ---------------------------------------------------------------------- the cache itself


def test_a_set_is_cached_the_second_time_it_comes_back() -> None:
    queues = [MessageQueue(4) for _ in range(2)]
    pipes = {Pipe("tcp://x", MessageQueue(4), q, persistent=False) for q in queues}
    cache = FanOutCache()
    for q in queues:
        q.put([b"old"])
    assert not cache.offer(pipes, 0, [b"a"])  # first sighting: maybe a one-off merged set
    assert cache.offer(pipes, 0, [b"b"])
    assert not cache.offer(set(pipes), 0, [b"c"])  # another set object, equal or not
    assert cache.offer(pipes, 0, [b"d"])  # (the first one is still cached)
    assert not cache.offer(pipes, 1, [b"e"])  # the trie changed since
    assert all([m[0] for m in q.items] == [b"old", b"b", b"d"] for q in queues)
    cache.invalidate()
    assert not cache.offer(pipes, 1, [b"f"])


def test_the_cache_declines_an_empty_or_full_outbox() -> None:
    full, other = MessageQueue(2), MessageQueue(5)
    pipes = {Pipe("tcp://x", MessageQueue(4), q, persistent=False) for q in (full, other)}
    cache = FanOutCache()
    cache.offer(pipes, 0, [b"-"])
    assert not cache.offer(pipes, 0, [b"a"])  # both empty: their writers must be woken
    full.put([b"0"])
    assert not cache.offer(pipes, 0, [b"a"])  # one still empty
    other.put([b"0"])
    assert cache.offer(pipes, 0, [b"1"])
    assert not cache.offer(pipes, 0, [b"2"])  # ``full`` is at its capacity now
    assert len(full) == 2 and len(other) == 2


def test_the_budget_is_the_smallest_room_left_and_never_crosses_a_capacity() -> None:
    small, big = MessageQueue(5), MessageQueue(9)
    pipes = {Pipe("tcp://x", MessageQueue(4), q, persistent=False) for q in (small, big)}
    cache = FanOutCache()
    for q in (small, big):
        q.put([b"old"])
    cache.offer(pipes, 0, [b"-"])  # first sighting
    sent = 0
    while cache.offer(pipes, 0, [b"%d" % sent]):
        sent += 1
    assert sent == 4 and len(small) == 5 and len(big) == 5  # one check per budget, not more
    for q in (small, big):  # writers only shorten their queues: the next check sees it
        q.take(2, 1 << 20)
    assert cache.offer(pipes, 0, [b"4"]) and cache.offer(pipes, 0, [b"5"])
    # (the cache goes by the smallest capacity; the caller's loop serves ``big`` past it)
    assert not cache.offer(pipes, 0, [b"6"])
    assert len(small) == 5 and len(big) == 5


def test_an_emptied_queue_is_declined_while_the_budget_lasts() -> None:
    queues = [MessageQueue(100) for _ in range(3)]
    pipes = {Pipe("tcp://x", MessageQueue(4), q, persistent=False) for q in queues}
    cache = FanOutCache()
    for q in queues:
        q.put([b"old"])
    cache.offer(pipes, 0, [b"-"])
    assert cache.offer(pipes, 0, [b"a"])  # a budget of 97 from here
    queues[1].take(10, 1 << 20)  # its writer took everything: it must be woken next time
    assert not cache.offer(pipes, 0, [b"b"])
    queues[1].put([b"b"])  # (the caller's loop, which wakes it)
    assert cache.offer(pipes, 0, [b"c"])


def test_spent_ends_the_budget() -> None:
    queues = [MessageQueue(4) for _ in range(2)]
    pipes = {Pipe("tcp://x", MessageQueue(4), q, persistent=False) for q in queues}
    cache = FanOutCache()
    for q in queues:
        q.put([b"old"])
    cache.offer(pipes, 0, [b"-"])
    assert cache.offer(pipes, 0, [b"a"])  # room for 2 more after this one
    queues[0].put([b"other path"])
    queues[0].put([b"other path"])
    cache.spent()
    assert not cache.offer(pipes, 0, [b"b"])  # re-checked: queues[0] is at its capacity
    assert len(queues[0]) == 4 and len(queues[1]) == 2


# ---------------------------------------------------------------------- through the strategy


def test_a_message_for_one_subscriber_ends_the_budget() -> None:
    """A topic only one subscriber has goes by the per-pipe path: the cached set's room
    must be measured again, or that subscriber would get past its HWM."""
    pub = Pub(_host())
    both = _pipe(pub, hwm=6, topic=b"x")
    other = _pipe(pub, hwm=6, topic=b"x")
    pub.command(both, SUBSCRIBE, b"only")  # b"only..." matches ``both`` alone
    for n in range(3):
        assert pub.try_send([b"x%d" % n])  # {both, other}: cached, a budget of 2 left
    for n in range(5):
        assert pub.try_send([b"only%d" % n])  # ``both`` alone: fills it to its HWM
    assert pub.try_send([b"x3"])
    assert len(both.outbox) == 6 and _bodies(both)[-1] == b"only2"
    assert _bodies(other) == [b"x0", b"x1", b"x2", b"x3"]


def test_hwm_exact_through_the_budget_with_many_subscribers() -> None:
    pub = Pub(_host())
    pipes = [_pipe(pub, hwm=300 + 7 * i) for i in range(10)]
    woken = _wakeups(pipes)
    for n in range(400):
        assert pub.try_send([b"%d" % n])
    assert sorted(woken) == list(range(10))  # once each, on the first message
    for i, pipe in enumerate(pipes):
        assert _bodies(pipe) == [b"%d" % n for n in range(300 + 7 * i)]
    for pipe in pipes[::2]:  # half the writers drain all: each is woken by the next message
        pipe.outbox.take(1000, 1 << 30)
    woken.clear()
    assert pub.try_send([b"400"])
    assert sorted(woken) == [0, 2, 4, 6, 8]
    assert all(_bodies(p) == [b"400"] for p in pipes[::2])
    assert all(len(p.outbox) == 300 + 7 * i for i, p in enumerate(pipes) if i % 2)


def test_a_full_subscriber_loses_only_its_own_copies_and_comes_back() -> None:
    pub = Pub(_host())
    pipes = [_pipe(pub, hwm=4) for _ in range(3)]
    woken = _wakeups(pipes)
    for n in range(6):
        assert pub.try_send([b"%d" % n])
    assert sorted(woken) == [0, 1, 2]  # once each, on the first message
    assert all(_bodies(p) == [b"0", b"1", b"2", b"3"] for p in pipes)
    first = pipes[0].outbox.take(2, 1 << 20)  # its writer takes two
    assert [m[0] for m in first] == [b"0", b"1"]
    for n in range(6, 9):
        assert pub.try_send([b"%d" % n])
    assert _bodies(pipes[0]) == [b"2", b"3", b"6", b"7"]  # room for two: 8 is its loss
    assert _bodies(pipes[1]) == _bodies(pipes[2]) == [b"0", b"1", b"2", b"3"]
    queued = [p.outbox.items[0] for p in pipes]
    assert type(queued[0]) is EncodedMessage and queued[1] is queued[2]
    for pipe in pipes:  # every writer drains: the next message wakes each of them again
        pipe.outbox.take(10, 1 << 20)
    woken.clear()
    assert pub.try_send([b"9"])
    assert sorted(woken) == [0, 1, 2] and all(_bodies(p) == [b"9"] for p in pipes)


def test_different_hwms_are_each_applied() -> None:
    pub = Pub(_host())
    small, big = _pipe(pub, hwm=2), _pipe(pub, hwm=6)
    for n in range(8):
        assert pub.try_send([b"%d" % n])
    assert _bodies(small) == [b"0", b"1"]
    assert _bodies(big) == [b"%d" % n for n in range(6)]


def test_nodrop_sends_to_nobody_while_one_is_full() -> None:
    xpub = XPub(_host(xpub_nodrop=True))
    pipes = [_pipe(xpub, hwm=3), _pipe(xpub, hwm=3), _pipe(xpub, hwm=8)]
    sent = 0
    while xpub.try_send([b"%d" % sent]):
        sent += 1
    assert sent == 3 and all(len(p.outbox) == 3 for p in pipes)
    assert not xpub.try_send([b"x"])
    pipes[0].outbox.take(1, 1 << 20)
    assert not xpub.try_send([b"x"])  # the second is still full
    pipes[1].outbox.take(1, 1 << 20)
    assert xpub.try_send([b"3"])
    assert _bodies(pipes[2]) == [b"0", b"1", b"2", b"3"]


def test_subscribers_joining_and_leaving_mid_run() -> None:
    pub = Pub(_host())
    a, b = _pipe(pub), _pipe(pub)
    late = _pipe(pub, topic=None)  # attached, not subscribed yet
    for n in range(3):
        assert pub.try_send([b"%d" % n])  # the cache holds {a, b} now
    # A new subscriber to b"" changes the very set object the trie returns.
    pub.command(late, SUBSCRIBE, b"")
    assert pub.try_send([b"3"])
    pub.command(a, CANCEL, b"")
    assert pub.try_send([b"4"])
    pub.detach(b)
    assert pub.try_send([b"5"])
    joined = _pipe(pub)  # attach + subscribe
    assert pub.try_send([b"6"])
    assert _bodies(a) == [b"0", b"1", b"2", b"3"]
    assert _bodies(b) == [b"0", b"1", b"2", b"3", b"4"]
    assert _bodies(late) == [b"3", b"4", b"5", b"6"]
    assert _bodies(joined) == [b"6"]


def test_topic_filtering_with_a_cached_set() -> None:
    pub = Pub(_host())
    news = [_pipe(pub, topic=b"news") for _ in range(2)]
    everything = _pipe(pub)
    for n in range(4):
        assert pub.try_send([b"news%d" % n])  # all three: a merged set, never cached
        assert pub.try_send([b"other%d" % n])  # everything only
    assert all(_bodies(p) == [b"news%d" % n for n in range(4)] for p in news)
    assert len(everything.outbox) == 8


def test_a_departing_peer_with_many_topics_takes_no_message() -> None:
    host = _host()
    pub = Pub(host)
    stay = _pipe(pub)
    going = _pipe(pub)
    for n in range(FORGET_SLICE + 5):
        pub.command(going, SUBSCRIBE, b"t%d" % n)
    # Arrivals are applied APPLY_SLICE per event-loop pass: run the passes the rest waits for.
    while host.deferred:
        if not host.deferred[0]():
            continue
        host.deferred.pop(0)
    for n in range(3):
        assert pub.try_send([b"%d" % n])  # cached: {stay, going}
    pub.disconnected(going)  # its topics go in slices; meanwhile its outbox reads as full
    assert host.deferred and len(going.outbox) == 0
    assert pub.try_send([b"3"])
    assert len(going.outbox) == 0 and _bodies(stay)[-1] == b"3"


# ---------------------------------------------------------------------- the writers' encoding


def test_an_equal_batch_reuses_the_previous_bytes() -> None:
    batch: list[list[bytes]] = [encoded_message([b"m%d" % n]) for n in range(5)]
    wire = encode_shared_messages(batch)
    assert wire == encode_messages([list(m) for m in batch])
    assert encode_shared_messages(list(batch)) is wire  # another writer, the same run
    # A run that differs inside (one copy dropped, another message in its place) is encoded
    # on its own, even with the same first and last message and length.
    other = [batch[0], batch[1], [b"welcome"], batch[3], batch[4]]
    assert FrameDecoder().feed(encode_shared_messages(other)) == [list(m) for m in other]
    shorter = batch[:4]
    assert FrameDecoder().feed(encode_shared_messages(shorter)) == [list(m) for m in shorter]


# ---------------------------------------------------------------------- end to end


async def _subscribe(pub: zmtp.Socket, sub: zmtp.Socket, endpoint: str) -> None:
    sub.subscribe(b"")
    await sub.connect(endpoint)
    await probe_until_received(ours_sender(pub), ours_briefly(sub), b"probe")


async def _data(sub: zmtp.Socket, count: int) -> list[bytes]:
    got: list[bytes] = []
    while len(got) < count:
        (body,) = await recv_within(sub)
        if not body.startswith(b"probe"):
            got.append(body)
    return got


@pytest.mark.anyio
async def test_a_subscriber_joining_mid_run_gets_everything_after_it_joined() -> None:
    async with zmtp.Socket(zmtp.PUB, linger=0, send_hwm=0) as pub:
        endpoint = await pub.bind("tcp://127.0.0.1:*")
        async with AsyncExitStack() as stack:
            subs = [
                await stack.enter_async_context(zmtp.Socket(zmtp.SUB, linger=0, recv_hwm=0))
                for _ in range(3)
            ]
            for sub in subs[:2]:
                await _subscribe(pub, sub, endpoint)
            first = [b"a%d" % n for n in range(600)]
            for body in first:
                await pub.send(body)
            await _subscribe(pub, subs[2], endpoint)
            second = [b"b%d" % n for n in range(600)]
            for body in second:
                await pub.send(body)
            with anyio.fail_after(TIMEOUT):
                for sub in subs[:2]:
                    assert await _data(sub, 1200) == first + second
                assert await _data(subs[2], 600) == second


@pytest.mark.anyio
async def test_a_cancelled_nodrop_send_queues_nothing_anywhere() -> None:
    async with zmtp.Socket(zmtp.XPUB, linger=0, send_hwm=4, xpub_nodrop=True) as pub:
        endpoint = await pub.bind("tcp://127.0.0.1:*")
        async with AsyncExitStack() as stack:
            subs = [
                await stack.enter_async_context(
                    zmtp.Socket(zmtp.SUB, linger=0, recv_hwm=1, read_size=4096)
                )
                for _ in range(2)
            ]
            for sub in subs:
                await _subscribe(pub, sub, endpoint)
            while True:  # skip the subscription notices
                with anyio.move_on_after(0.2):
                    await pub.recv()
                    continue
                break
            body = b"x" * 8000  # shared, and quick to fill the kernel's buffers
            sent = 0
            with anyio.fail_after(4 * TIMEOUT):
                while True:  # nobody reads: the pipes fill, then a send blocks
                    with anyio.move_on_after(0.5) as scope:
                        await pub.send_multipart([b"%d" % sent, body])
                    if scope.cancelled_caught:
                        break
                    sent += 1
                heads: list[list[bytes]] = [[] for _ in subs]

                async def read(sub: zmtp.Socket, into: list[bytes]) -> None:
                    while not into or into[-1] != b"last":
                        parts = await recv_within(sub)
                        if not parts[0].startswith(b"probe"):
                            into.append(parts[0])

                async with anyio.create_task_group() as tg:  # they read now: room again
                    for sub, into in zip(subs, heads, strict=True):
                        tg.start_soon(read, sub, into)
                    await pub.send_multipart([b"last", b""])
            assert sent > 4
            for into in heads:
                assert into == [b"%d" % n for n in range(sent)] + [b"last"]
