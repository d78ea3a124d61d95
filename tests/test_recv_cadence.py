"""The receive fast path's cadence (zmtp/socket.py, ``_RECV_TICKS``): a receive loop that
never blocks checks for a cancel every 64 calls and yields to the scheduler every 1024, both
before it takes a message, so a cancel seen there loses nothing; ``recv`` and
``recv_multipart`` share the count. And the fair queue's HWM edge (``FairQueue.fq_recv``):
the reader is woken exactly once, when the inbox goes from full to not full.

The yields are counted by a probe task that does nothing but checkpoint, as in
tests/test_send_cadence.py (on trio possibly one batch off: the counts allow one more or less).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import anyio
import pytest

import zmtp
from tests.test_engine_helpers import TIMEOUT
from tests.test_send_cadence import probe
from zmtp.engine.pipe import Pipe
from zmtp.engine.queue import MessageQueue
from zmtp.routing.base import FairQueue

pytestmark = pytest.mark.anyio

RECV_YIELD_EVERY = 1024  # 16 cancel checks of 64 receives (zmtp/socket.py)
CANCEL_CHECK_EVERY = 64


@asynccontextmanager
async def filled_pull(count: int, name: str) -> AsyncIterator[zmtp.Socket]:
    """A PULL whose inbox already holds ``count`` messages ``b"0"``, ``b"1"``... (inproc: a
    send queues straight into the peer's inbox), so that no receive below blocks."""
    async with (
        zmtp.Socket(zmtp.PULL, recv_hwm=0) as pull,
        zmtp.Socket(zmtp.PUSH, send_hwm=0, linger=0) as push,
    ):
        await pull.bind(f"inproc://recv-cadence-{name}")
        await push.connect(f"inproc://recv-cadence-{name}")
        with anyio.fail_after(TIMEOUT):
            for i in range(count):
                await push.send(b"%d" % i)
        assert pull.readable()
        yield pull


async def test_a_busy_receiver_yields_every_1024_receives() -> None:
    """Fairness: a receive loop that always finds a message still lets other tasks run."""
    rounds = 8
    async with filled_pull(rounds * RECV_YIELD_EVERY + 1, "busy") as pull, probe() as turns:
        before = turns()
        for i in range(rounds * RECV_YIELD_EVERY):
            assert await pull.recv() == b"%d" % i
        yields = turns() - before
    # 8 (the count started before the fill's readable(): one more or less), trio's one off
    assert rounds - 2 <= yields <= rounds + 1, yields


async def test_recv_and_recv_multipart_share_the_cadence() -> None:
    rounds = 4
    async with filled_pull(rounds * RECV_YIELD_EVERY + 1, "kinds") as pull, probe() as turns:
        before = turns()
        for i in range(0, rounds * RECV_YIELD_EVERY, 2):
            assert await pull.recv() == b"%d" % i
            assert await pull.recv_multipart() == [b"%d" % (i + 1)]
        yields = turns() - before
    assert rounds - 2 <= yields <= rounds + 1, yields  # 8 with two counts apart


@pytest.mark.parametrize("kind", ["recv", "recv_multipart"])
async def test_a_cancel_is_seen_within_64_receives_and_loses_nothing(kind: str) -> None:
    """A receive loop that never blocks, in a scope cancelled before it starts: a later
    receive raises within 64 calls, and every message is still there, in order."""
    total = 3 * RECV_YIELD_EVERY
    async with filled_pull(total, f"cancel-{kind}") as pull:
        receive = pull.recv if kind == "recv" else pull.recv_multipart
        got: list[bytes] = []
        for _attempt in range(RECV_YIELD_EVERY // CANCEL_CHECK_EVERY + 2):
            before = len(got)
            with anyio.CancelScope() as scope:
                scope.cancel()
                while True:
                    message = await receive()
                    got.append(message if isinstance(message, bytes) else message[0])
            assert scope.cancelled_caught
            assert len(got) - before <= CANCEL_CHECK_EVERY  # seen at the next check or yield
        with anyio.fail_after(TIMEOUT):
            while len(got) < total:
                message = await receive()
                got.append(message if isinstance(message, bytes) else message[0])
        assert got == [b"%d" % i for i in range(total)]
        assert not pull.readable()


async def test_a_deadline_interrupts_a_receive_loop_that_never_blocks() -> None:
    total = 4 * RECV_YIELD_EVERY
    async with filled_pull(total, "deadline") as pull:
        got: list[bytes] = []
        with anyio.move_on_after(0) as scope:
            while True:
                got.append(await pull.recv())
        assert scope.cancelled_caught
        assert len(got) < CANCEL_CHECK_EVERY
        with anyio.fail_after(TIMEOUT):
            got += [await pull.recv() for _ in range(total - len(got))]
        assert got == [b"%d" % i for i in range(total)]


def test_the_reader_is_woken_once_when_a_full_inbox_gets_room() -> None:
    """``fq_recv``'s HWM edge, tested on the length before the pop: an inbox filled past its
    capacity (a reader's whole read goes in at once) wakes its reader exactly once, when a
    receive takes it from ``capacity`` messages to one less, never again on the way down."""
    inbox = MessageQueue(3)
    woken: list[int] = []
    inbox.on_space = lambda: woken.append(len(inbox))
    pipe = Pipe("tcp://test", inbox, MessageQueue(3), persistent=False)
    fq = FairQueue()
    inbox.on_data = lambda: fq.readable(pipe)
    inbox.put_received([b"%d" % i for i in range(5)])
    got = []
    while (message := fq.fq_recv()) is not None:
        got.append(message)
    assert got == [b"%d" % i for i in range(5)]
    assert woken == [2]  # 3 -> 2: the one full -> not full edge
    inbox.put_received([b"a", b"b", b"c"])  # exactly full
    assert fq.fq_recv() == b"a"
    assert woken == [2, 2]
    assert fq.fq_recv() == b"b" and fq.fq_recv() == b"c" and fq.fq_recv() is None
    assert woken == [2, 2]
