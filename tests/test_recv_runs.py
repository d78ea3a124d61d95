"""Receive runs (``FairQueue.fq_take_run``, ``zmtp.Socket.recv``'s fast path): while one pipe
alone has messages, the socket pops them with ``next(strategy.run)`` instead of a fair-queue
call each. Nothing else may change: the order, the round-robin once another pipe has
messages, the HWM edge (the reader is woken exactly when a receive takes a full inbox below
its capacity), a pipe leaving the ready list with its last message, a multipart message
``recv`` refuses, a SUB's unsubscribe purging what is queued, ``readable()`` setting a
message aside, and no runs at all under an extension.
"""

from __future__ import annotations

from contextlib import AsyncExitStack
from typing import Any

import anyio
import pytest

import zmtp
from tests.test_engine_helpers import TIMEOUT
from zmtp.engine.pipe import Pipe
from zmtp.engine.queue import MessageQueue, Received
from zmtp.protocol.errors import InvalidArgument
from zmtp.routing.base import NO_RUN, FairQueue

pytestmark = pytest.mark.anyio


def _queue(capacity: float) -> tuple[FairQueue, Pipe, list[int]]:
    inbox = MessageQueue(capacity)
    woken: list[int] = []
    inbox.on_space = lambda: woken.append(len(inbox))
    pipe = Pipe("tcp://test", inbox, MessageQueue(3), persistent=False)
    fq = FairQueue()
    inbox.on_data = lambda: fq.readable(pipe)
    return fq, pipe, woken


def _drain(fq: FairQueue, limit: int) -> list[Received]:
    got: list[Received] = []
    while True:
        message = next(fq.run, None)
        if message is None:
            message = fq.fq_take_run(limit)
            if message is None:
                return got
        got.append(message)


def test_a_run_stops_before_the_hwm_edge_and_before_the_last_message() -> None:
    fq, pipe, woken = _queue(5)
    pipe.inbox.put_received([b"%d" % i for i in range(12)])
    assert fq.fq_take_run(64) == b"0"
    assert fq.run_length == 6  # 11 left: 6 pops keep it at 5 (full), the 7th is the edge's
    assert [next(fq.run) for _ in range(6)] == [b"%d" % i for i in range(1, 7)]
    assert next(fq.run, None) is None and woken == []
    assert fq.fq_take_run(64) == b"7"  # 5 -> 4 in fq_recv: the reader is woken there
    assert woken == [4]
    assert fq.run_length == 3  # not the last one: fq_recv takes the pipe off the ready list
    assert _drain(fq, 64) == [b"8", b"9", b"10", b"11"]
    assert woken == [4]
    assert not pipe.inbox.items and fq.fq_recv() is None
    pipe.inbox.put_received([b"again"])  # readable again: the ready list was kept right
    assert fq.fq_take_run(64) == b"again" and fq.fq_recv() is None


def test_a_run_is_bounded_by_the_limit() -> None:
    fq, pipe, woken = _queue(float("inf"))
    pipe.inbox.put_received([b"%d" % i for i in range(100)])
    assert fq.fq_take_run(10) == b"0" and fq.run_length == 9
    assert _drain(fq, 10) == [b"%d" % i for i in range(1, 100)]
    assert fq.fq_take_run(1) is None and woken == []


def test_another_pipe_turning_readable_ends_the_run_and_round_robin_resumes() -> None:
    fq, first, _ = _queue(float("inf"))
    second_inbox = MessageQueue(float("inf"))
    second = Pipe("tcp://other", second_inbox, MessageQueue(3), persistent=False)
    second_inbox.on_data = lambda: fq.readable(second)
    first.inbox.put_received([b"a%d" % i for i in range(6)])
    assert fq.fq_take_run(64) == b"a0" and fq.run_length == 4
    assert next(fq.run) == b"a1"
    second_inbox.put_received([b"b0", b"b1"])
    assert fq.run is NO_RUN
    assert _drain(fq, 64) == [b"a2", b"b0", b"a3", b"b1", b"a4", b"a5"]


async def _filled_pull(pull: zmtp.Socket, push: zmtp.Socket, name: str, n: int) -> None:
    await pull.bind(f"inproc://recv-runs-{name}")
    await push.connect(f"inproc://recv-runs-{name}")
    with anyio.fail_after(TIMEOUT):
        for i in range(n):
            await push.send(b"%d" % i)


async def test_pull_alternates_when_a_second_peer_sends_during_a_run() -> None:
    async with (
        zmtp.Socket(zmtp.PULL, recv_hwm=0) as pull,
        zmtp.Socket(zmtp.PUSH, send_hwm=0, linger=0) as a,
        zmtp.Socket(zmtp.PUSH, send_hwm=0, linger=0) as b,
    ):
        await _filled_pull(pull, a, "alternate", 8)
        with anyio.fail_after(TIMEOUT):
            assert await pull.recv() == b"0"
            assert pull.engine.strategy.run_length > 0  # a run is under way
            assert await pull.recv() == b"1"
            await b.connect("inproc://recv-runs-alternate")
            for i in range(3):
                await b.send(b"b%d" % i)
            got = [await pull.recv() for _ in range(9)]
        assert got == [b"2", b"b0", b"3", b"b1", b"4", b"b2", b"5", b"6", b"7"]


async def test_a_refused_multipart_message_keeps_its_place_in_a_run() -> None:
    async with (
        zmtp.Socket(zmtp.PULL, recv_hwm=0) as pull,
        zmtp.Socket(zmtp.PUSH, send_hwm=0, linger=0) as push,
    ):
        await _filled_pull(pull, push, "multipart", 3)
        with anyio.fail_after(TIMEOUT):
            await push.send_multipart([b"m1", b"m2"])
            for i in range(3, 6):
                await push.send(b"%d" % i)
            assert [await pull.recv() for _ in range(3)] == [b"0", b"1", b"2"]
            with pytest.raises(InvalidArgument):
                await pull.recv()
            assert await pull.recv_multipart() == [b"m1", b"m2"]
            assert [await pull.recv() for _ in range(3)] == [b"3", b"4", b"5"]
            assert not pull.readable()


async def test_readable_sets_aside_the_next_message_of_a_run_in_order() -> None:
    async with (
        zmtp.Socket(zmtp.PULL, recv_hwm=0) as pull,
        zmtp.Socket(zmtp.PUSH, send_hwm=0, linger=0) as push,
    ):
        await _filled_pull(pull, push, "readable", 10)
        with anyio.fail_after(TIMEOUT):
            assert await pull.recv() == b"0"
            assert pull.readable()
            assert [await pull.recv() for _ in range(9)] == [b"%d" % i for i in range(1, 10)]
            assert not pull.readable()


async def test_sub_unsubscribe_during_a_run_purges_what_it_would_pop() -> None:
    async with (
        zmtp.Socket(zmtp.SUB, recv_hwm=0) as sub,
        zmtp.Socket(zmtp.PUB, send_hwm=0, linger=0) as pub,
    ):
        sub.subscribe(b"x")
        sub.subscribe(b"y")
        await sub.bind("inproc://recv-runs-sub")
        await pub.connect("inproc://recv-runs-sub")
        with anyio.fail_after(TIMEOUT):
            while not sub.readable():  # the subscriptions reach the PUB
                await pub.send(b"y-probe")
                await anyio.sleep(0.01)
            while await sub.recv() == b"y-probe" and sub.readable():
                pass
            for i in range(10):
                await pub.send(b"x%d" % i)
                await pub.send(b"y%d" % i)
            assert await sub.recv() == b"x0"
            assert sub.engine.strategy.run_length > 0
            sub.unsubscribe(b"x")
            got = [await sub.recv() for _ in range(10)]  # no readable(): it ends runs itself
            assert not sub.readable()
        assert got == [b"y%d" % i for i in range(10)]


class _Plain(zmtp.SocketExtension):
    """An extension with every hook at its default."""


async def test_no_runs_under_an_extension() -> None:
    async with (
        zmtp.Socket(zmtp.PULL, recv_hwm=0) as pull,
        zmtp.Socket(zmtp.PUSH, send_hwm=0, linger=0) as push,
    ):
        pull.install_extension(_Plain())
        await _filled_pull(pull, push, "extension", 10)
        with anyio.fail_after(TIMEOUT):
            for i in range(10):
                assert await pull.recv() == b"%d" % i
                assert pull.engine.strategy.run is NO_RUN


async def test_no_runs_with_conflate() -> None:
    for kind in (zmtp.PULL, zmtp.SUB, zmtp.XSUB):
        async with zmtp.Socket(kind, conflate=True) as sock:
            assert not sock.engine.strategy.recv_runs
    async with zmtp.Socket(zmtp.SUB) as sock:
        assert sock.engine.strategy.recv_runs


class _Model:
    """A fair queue over ``pipes`` inboxes of one capacity, with a producer per inbox that
    waits for room whenever a batch leaves its inbox full (``waiting``), until ``on_space``."""

    def __init__(self, pipes: int, capacity: float) -> None:
        self.fq = FairQueue()
        self.inboxes: list[MessageQueue] = []
        self.waiting = [False] * pipes
        for index in range(pipes):
            inbox = MessageQueue(capacity)
            pipe = Pipe(f"tcp://peer{index}", inbox, MessageQueue(3), persistent=False)
            inbox.on_space = lambda i=index: self.waiting.__setitem__(i, False)
            inbox.on_data = lambda p=pipe: self.fq.readable(p)
            self.inboxes.append(inbox)

    def put(self, index: int, batch: list[bytes]) -> None:
        inbox = self.inboxes[index]
        inbox.put_received(batch)
        if inbox.full:
            self.waiting[index] = True

    def stuck(self) -> list[int]:
        """The producers still waiting although their inbox has room."""
        return [i for i, q in enumerate(self.inboxes) if self.waiting[i] and not q.full]


@pytest.mark.parametrize("seed", range(60))
def test_runs_hand_out_what_fq_recv_alone_would(seed: int) -> None:
    """Against a fair queue read with ``fq_recv`` only, fed the same batches at the same
    points: the same messages in the same order, whatever the number of pipes, their HWM,
    the runs' limits, and where runs are ended early (a batch to an idle pipe, a receive
    outside the fast path, an explicit end). And no producer is left waiting on an inbox
    with room once a run is over: the plain queue wakes it at the pop that makes room, a run
    by its end at the latest (each new run starts with an ``fq_recv``)."""
    import random

    rng = random.Random(seed)
    _check_runs_against_fq_recv(rng, rng.randint(1, 4))


@pytest.mark.parametrize("seed", range(40))
def test_partial_rounds_hand_out_what_fq_recv_alone_would(seed: int) -> None:
    """The same with more ready pipes than a run's limit (the many-peers case: a run is
    then a part of one round, one message from each of a prefix of the ready pipes)."""
    import random

    rng = random.Random(1000 + seed)
    _check_runs_against_fq_recv(rng, rng.randint(5, 24))


def test_a_part_of_a_round_stops_at_the_first_pipe_that_cannot_give_one_more() -> None:
    """Five pipes, limit 4: the run after ``fq_recv``'s message is one message from each of
    the next pipes in round-robin order, cut before a pipe at its HWM edge (``fq_recv``
    wakes its reader) or holding its last message; ending it early turns the round-robin
    by what it handed out."""
    model = _Model(5, 3)
    for index, count in enumerate([3, 4, 4, 3, 4]):
        model.put(index, [b"%d.%d" % (index, i) for i in range(count)])
    fq = model.fq
    assert fq.fq_take_run(4) == b"0.0"  # 3 -> 2: the edge, in fq_recv
    assert fq.run_length == 2  # pipes 1 and 2; pipe 3 is at its HWM edge (3 == capacity)
    assert next(fq.run) == b"1.0"
    fq.fq_end_run()  # one of two handed out: pipe 2 is next
    assert fq.fq_recv() == b"2.0"
    assert fq.fq_recv() == b"3.0" and not model.stuck()
    assert fq.fq_take_run(64) == b"4.0"
    assert fq.run_length == 0  # pipe 0 alone (pipe 1 is at its edge): no run for one
    expected = [b"%d.1" % i for i in range(5)] + [b"%d.2" % i for i in range(5)]
    assert _drain(fq, 64) == [*expected, b"1.3", b"2.3", b"4.3"]
    assert not model.stuck() and fq.fq_recv() is None


def _check_runs_against_fq_recv(rng: Any, pipes: int) -> None:
    capacity = rng.choice([1, 2, 5, 40, float("inf")])
    runs, plain = _Model(pipes, capacity), _Model(pipes, capacity)
    got_runs: list[Received] = []
    got_plain: list[Received] = []
    counter = 0
    for _step in range(200):
        action = rng.random()
        if action < 0.3:
            index = rng.randrange(pipes)
            batch = [b"%d" % (counter + i) for i in range(rng.randint(1, 30))]
            counter += len(batch)
            runs.put(index, batch)
            plain.put(index, batch)
        elif action < 0.35:
            runs.fq.fq_end_run()
            assert not runs.stuck()
        else:
            for _ in range(rng.randint(1, 40)):
                expected = plain.fq.fq_recv()
                assert not plain.stuck()
                message = next(runs.fq.run, None) if rng.random() > 0.1 else None
                if message is None:
                    if rng.random() < 0.5:
                        message = runs.fq.fq_recv()
                    else:
                        message = runs.fq.fq_take_run(rng.choice([2, 3, 8, 64]))
                    assert not runs.stuck()  # every run before this one is over
                got_plain.append(expected)  # type: ignore[arg-type]
                got_runs.append(message)  # type: ignore[arg-type]
                assert message == expected, len(got_plain)
    assert got_runs == got_plain


@pytest.mark.parametrize("peers", [1, 3, 80])
async def test_inproc_senders_blocked_at_the_hwm_during_runs_are_woken(peers: int) -> None:
    """Senders that fill the receiver's queue while its runs are under way (the receiver
    yields between receives) and wait for room are woken: every message arrives (80 peers:
    more ready pipes than a run's limit, so runs are parts of one round)."""
    total = 3000 if peers < 10 else 150
    async with zmtp.Socket(zmtp.PULL, recv_hwm=20) as pull:
        await pull.bind(f"inproc://recv-runs-blocked-{peers}")
        got: list[bytes] = []

        async def sender(index: int) -> None:
            async with zmtp.Socket(zmtp.PUSH, send_hwm=10) as push:
                await push.connect(f"inproc://recv-runs-blocked-{peers}")
                for i in range(total):
                    await push.send(b"%d:%d" % (index, i))

        with anyio.fail_after(TIMEOUT):
            async with anyio.create_task_group() as tg:
                for index in range(peers):
                    tg.start_soon(sender, index)
                for i in range(peers * total):
                    got.append(await pull.recv())
                    if i % 7 == 0:
                        await anyio.sleep(0)  # the senders run in the middle of a run
        for index in range(peers):
            mine = [m for m in got if m.startswith(b"%d:" % index)]
            assert mine == [b"%d:%d" % (index, i) for i in range(total)]


async def test_pull_with_more_ready_peers_than_a_run_takes_them_in_turn() -> None:
    """80 peers with messages queued (more than a run's limit of 64): every round of 80
    receives holds one message of each peer, in the round-robin order, each peer's in its
    own order, as ``fq_recv`` alone hands them out."""
    peers, each = 80, 4
    async with zmtp.Socket(zmtp.PULL, recv_hwm=0) as pull:
        await pull.bind("inproc://recv-runs-many")
        async with AsyncExitStack() as stack:
            for index in range(peers):
                push = await stack.enter_async_context(zmtp.Socket(zmtp.PUSH, send_hwm=0, linger=0))
                await push.connect("inproc://recv-runs-many")
                with anyio.fail_after(TIMEOUT):
                    for i in range(each):
                        await push.send(b"%d:%d" % (index, i))
            with anyio.fail_after(TIMEOUT):
                got = [await pull.recv()]
                assert pull.engine.strategy.run_length > 1  # a part of one round
                got += [await pull.recv() for _ in range(peers * each - 1)]
    assert pull_runs_seen(got, peers, each)


def pull_runs_seen(got: list[bytes], peers: int, each: int) -> bool:
    """Whether ``got`` is ``each`` rounds of every peer once, each in the first round's
    order, every peer's messages in order."""
    first = [m.split(b":")[0] for m in got[:peers]]
    assert sorted(first) == sorted(b"%d" % i for i in range(peers))
    for turn in range(each):
        assert got[turn * peers : (turn + 1) * peers] == [b"%s:%d" % (f, turn) for f in first]
    return True


@pytest.mark.parametrize("topics", [(b"a",), (b"a", b"bc")])
@pytest.mark.parametrize("invert", [False, True])
@pytest.mark.parametrize("mixed", [False, True])
async def test_sub_prefix_filter_of_a_batch(
    topics: tuple[bytes, ...], invert: bool, mixed: bool
) -> None:
    """SUB's filter of a read's batch (``bytes.startswith`` mapped in C over bare messages,
    one topic passed bare; message by message when a list is in the batch): the same
    messages either way."""
    async with zmtp.Socket(zmtp.SUB, invert_matching=invert) as sub:
        for topic in topics:
            sub.subscribe(topic)
        strategy = sub.engine.strategy
        pipe = Pipe("tcp://test", MessageQueue(float("inf")), MessageQueue(3), persistent=False)
        batch: list[Received] = [b"a1", b"b2", b"bc3", b"", b"x", b"abc", b"bcd"]
        if mixed:
            batch[1:1] = [[b"a-list", b"more"], [b"z-list"]]
        strategy.incoming_received(pipe, batch)
        kept = list(pipe.inbox.items)
        expected = [
            m
            for m in batch
            if (m if isinstance(m, bytes) else m[0]).startswith(topics) is not invert
        ]
        assert kept == expected
        assert kept  # (either way, something is kept)
