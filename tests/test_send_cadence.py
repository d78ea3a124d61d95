"""The send fast path's cadence (zmtp/socket.py, ``_SendCadence``): a scheduler yield by one
socket restarts every socket's count in that thread, so N sockets sending in turn yield once
per round of 256 sends each rather than N times; one socket alone still yields every 256
sends (fairness); and the yield, which is now also the cancel check, loses nothing.

The yields are counted by a probe task that does nothing but checkpoint: it runs once each
time the sender lets the event loop run (on trio possibly one batch late: the tasks of a
batch run in random order, so the counts allow one more or less).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import AsyncExitStack, asynccontextmanager

import anyio
import pytest
from anyio.lowlevel import checkpoint

import zmtp
from tests.test_engine_helpers import TIMEOUT

pytestmark = pytest.mark.anyio

YIELD_EVERY = 256  # zmtp/socket.py's _YIELD_EVERY


@asynccontextmanager
async def probe() -> AsyncIterator[Callable[[], int]]:
    """A task that counts its turns; yields a function returning the count so far."""
    turns = 0

    async def spin() -> None:
        nonlocal turns
        while True:
            turns += 1
            await checkpoint()

    async with anyio.create_task_group() as tg:
        tg.start_soon(spin)
        await anyio.sleep(0)  # let it start
        yield lambda: turns
        tg.cancel_scope.cancel()


@asynccontextmanager
async def pushes(count: int, name: str) -> AsyncIterator[list[zmtp.Socket]]:
    """``count`` PUSH sockets, each connected to its own PULL over inproc, entered in this
    task (as an application holding many sockets does); nothing is read, and the HWM is off
    so that no send blocks."""
    async with AsyncExitStack() as stack:
        socks = []
        for i in range(count):
            pull = await stack.enter_async_context(zmtp.Socket(zmtp.PULL, recv_hwm=0))
            push = await stack.enter_async_context(zmtp.Socket(zmtp.PUSH, send_hwm=0, linger=0))
            await pull.bind(f"inproc://cadence-{name}-{i}")
            await push.connect(f"inproc://cadence-{name}-{i}")
            socks.append(push)
        for push in socks:  # every peer attached: no send below waits for one
            with anyio.fail_after(TIMEOUT):
                await push.send(b"warm-up")
        yield socks


async def test_sockets_sending_in_turn_yield_once_per_round() -> None:
    n, rounds = 8, 4
    async with pushes(n, "round") as socks, probe() as turns:
        before = turns()
        for _ in range(rounds * YIELD_EVERY):
            for sock in socks:
                await sock.send(b"x")
        yields = turns() - before
    # A count per socket, knowing nothing of the others, yielded n times per round (32 here);
    # the first socket to reach 256 yields and the others start their count again: rounds - 1
    # or rounds (the counts may start again once, at the first check), trio's one off aside.
    assert rounds - 2 <= yields <= rounds + 1, yields


async def test_one_socket_still_yields_every_256_sends() -> None:
    """Fairness: a busy sender still lets the other tasks run as often as it always did."""
    async with pushes(1, "one") as (sock,), probe() as turns:
        before = turns()
        for _ in range(8 * YIELD_EVERY):
            await sock.send(b"x")
        yields = turns() - before
    # 7 or 8 (the count may start again once, at the first check); the probe's count is
    # one off on trio, which runs the tasks of a batch in random order.
    assert 6 <= yields <= 9, yields


async def test_every_kind_of_send_counts_alike() -> None:
    """send, send_multipart and send_prepared share the cadence (three spelled-out copies)."""
    async with pushes(3, "kinds") as (a, b, c), probe() as turns:
        before = turns()
        for i in range(4 * YIELD_EVERY):
            await a.send(b"x")
            await b.send_multipart([b"x", b"y"])
            await c.send_prepared([b"x%d" % i])
        yields = turns() - before
    assert 2 <= yields <= 5, yields  # 3 or 4, trio's one off aside (12 with counts apart)


async def test_a_deadline_interrupts_a_send_loop_that_never_blocks() -> None:
    """Sends that always find room (PUB, no subscriber) never suspend but at the cadence's
    yield: a deadline must still end the loop, on each of several sockets of one task."""
    async with AsyncExitStack() as stack:
        pubs = [await stack.enter_async_context(zmtp.Socket(zmtp.PUB, linger=0)) for _ in range(5)]
        for pub in pubs:
            await pub.bind(f"inproc://cadence-pub-{id(pub)}")
        sent = 0
        with anyio.fail_after(TIMEOUT):  # the test's own bound, if the deadline went unseen
            with anyio.move_on_after(0.05) as scope:
                while True:
                    await pubs[sent % len(pubs)].send(b"x")
                    sent += 1
        assert scope.cancelled_caught
        assert sent > 0


async def test_a_blocked_send_is_cancelled_and_queues_nothing() -> None:
    async with (
        zmtp.Socket(zmtp.PULL, recv_hwm=1) as pull,
        zmtp.Socket(zmtp.PUSH, send_hwm=1, linger=0) as push,
    ):
        await pull.bind("inproc://cadence-blocked")
        await push.connect("inproc://cadence-blocked")
        queued = 0
        with anyio.move_on_after(0.2) as scope:
            while True:  # the inproc queue holds send_hwm + recv_hwm, then send blocks
                await push.send(b"q%d" % queued)
                queued += 1
        assert scope.cancelled_caught
        assert queued >= 1
        with anyio.fail_after(TIMEOUT):
            got = [await pull.recv() for _ in range(queued)]
        assert got == [b"q%d" % i for i in range(queued)]
        assert not pull.readable()  # the cancelled send queued nothing


async def test_a_cancel_at_any_check_or_yield_loses_nothing() -> None:
    """A deadline that falls anywhere in a long burst over several sockets: every send that
    returned queued its message, the one that raised queued nothing, order kept per socket."""
    n = 3
    async with AsyncExitStack() as stack:
        pull = await stack.enter_async_context(zmtp.Socket(zmtp.PULL, recv_hwm=0))
        await pull.bind("inproc://cadence-lossless")
        socks = []
        for _ in range(n):
            push = await stack.enter_async_context(zmtp.Socket(zmtp.PUSH, send_hwm=0, linger=0))
            await push.connect("inproc://cadence-lossless")
            socks.append(push)
        returned: list[list[bytes]] = [[] for _ in range(n)]
        with anyio.fail_after(TIMEOUT):
            with anyio.move_on_after(0.05) as scope:
                i = 0
                while True:
                    k = i % n
                    message = b"%d:%d" % (k, i)
                    await socks[k].send(message)
                    returned[k].append(message)
                    i += 1
        assert scope.cancelled_caught
        for k, sock in enumerate(socks):
            await sock.send(b"%d:end" % k)
        got: list[list[bytes]] = [[] for _ in range(n)]
        ended = 0
        with anyio.fail_after(TIMEOUT):
            while ended < n:
                message = await pull.recv()
                k = int(message.split(b":")[0])
                if message.endswith(b":end"):
                    ended += 1
                else:
                    got[k].append(message)
        assert got == returned
