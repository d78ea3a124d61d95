"""A socket's ``async with`` and its task group (zmtp/socket.py, ``_GroupTask``).

On asyncio the group is held by a task of the socket's own, so that the application's task
gains no cancel scope per socket (anyio's asyncio cancel check walks them all, on every
periodic check of the send and receive fast paths); on trio it is entered in the
application's task as before. What ``async with`` promised must hold on both: the socket's
tasks end before its ``async with`` does, an error out of one of them surfaces at that
socket's exit (and does not hang the body), and a sending loop over many sockets entered one
by one still sees a cancel within the fast path's bound.
"""

from __future__ import annotations

from contextlib import AsyncExitStack

import anyio
import pytest

import zmtp
from tests.test_engine_helpers import TIMEOUT

pytestmark = pytest.mark.anyio

CANCEL_CHECK_EVERY = 16  # zmtp/socket.py's _CANCEL_CHECK_MASK + 1
SOCKETS = 50  # issue 15: a sender process of "100 peers" holds about 50


async def pubs(stack: AsyncExitStack, name: str, count: int = SOCKETS) -> list[zmtp.Socket]:
    """``count`` PUB sockets, each entered with its own ``async with`` in this task and bound
    over inproc: with no subscriber a send never blocks, so only the fast path's periodic
    checks can see a cancel."""
    socks = []
    for i in range(count):
        pub = await stack.enter_async_context(zmtp.Socket(zmtp.PUB, linger=0))
        await pub.bind(f"inproc://task-group-{name}-{i}")
        socks.append(pub)
    return socks


async def test_a_cancel_reaches_a_send_loop_over_many_sockets_within_the_bound() -> None:
    """The task cancels its own scope in the middle of a burst over 50 sockets (no other task
    runs meanwhile, so only a fast-path check can see it): each socket sends at most 16 more
    times before one raises."""
    async with AsyncExitStack() as stack:
        socks = await pubs(stack, "self-cancel")
        after = [0] * len(socks)
        cancelled = False
        with anyio.fail_after(TIMEOUT):  # the test's own bound, if the cancel went unseen
            with anyio.CancelScope() as scope:
                i = 0
                while True:
                    k = i % len(socks)
                    if i == 1000:
                        scope.cancel()
                        cancelled = True
                    await socks[k].send(b"x")
                    if cancelled:
                        after[k] += 1
                    i += 1
        assert scope.cancelled_caught
        assert max(after) <= CANCEL_CHECK_EVERY, after


async def test_a_cancel_left_pending_by_a_shield_reaches_a_send_loop_within_the_bound() -> None:
    """A cancel that arrived while the task was shielded is seen after the shield, by the
    fast path's checks alone."""
    async with AsyncExitStack() as stack:
        socks = await pubs(stack, "shielded")
        sent = 0
        with anyio.fail_after(TIMEOUT):
            with anyio.CancelScope() as outer:
                with anyio.CancelScope(shield=True):
                    outer.cancel()
                    for i in range(100):
                        await socks[i % len(socks)].send(b"shielded")  # not cancelled here
                while True:
                    await socks[sent % len(socks)].send(b"x")
                    sent += 1
        assert outer.cancelled_caught
        assert sent <= CANCEL_CHECK_EVERY * len(socks), sent


async def test_a_deadline_reaches_a_send_loop_over_many_sockets() -> None:
    async with AsyncExitStack() as stack:
        socks = await pubs(stack, "deadline")
        sent = 0
        with anyio.fail_after(TIMEOUT):
            with anyio.move_on_after(0.05) as scope:
                while True:
                    await socks[sent % len(socks)].send(b"x")
                    sent += 1
        assert scope.cancelled_caught and sent > 0


async def test_a_blocked_send_of_one_of_many_sockets_is_cancellable() -> None:
    async with AsyncExitStack() as stack:
        await pubs(stack, "blocked", count=10)
        push = await stack.enter_async_context(zmtp.Socket(zmtp.PUSH, immediate=True, linger=0))
        await push.connect("tcp://127.0.0.1:1")  # nobody there: send blocks
        with anyio.fail_after(TIMEOUT):
            with anyio.move_on_after(0.1) as scope:
                await push.send(b"never")
        assert scope.cancelled_caught


@pytest.mark.parametrize("how", ["normal", "error", "outer-cancel"])
async def test_the_sockets_tasks_end_before_its_async_with_does(how: str) -> None:
    """A task of the socket that ends only some time after the socket's teardown began:
    however the body ends, the ``async with`` returns after it."""
    ended = anyio.Event()

    async def lingering(core: zmtp.engine.core.SocketCore) -> None:
        while not core.closed:
            await core.send_wakeup().wait()  # set by the teardown
        await anyio.sleep(0.05)  # well after the teardown began: the exit must wait for it
        ended.set()

    with anyio.fail_after(TIMEOUT):
        with anyio.CancelScope() as outer:
            try:  # an error of the body leaves as itself, not in anyio's ExceptionGroup
                async with zmtp.Socket(zmtp.PUSH, linger=0) as push:
                    push.engine.spawn(lingering, push.engine)
                    await push.connect("tcp://127.0.0.1:1")  # a dialer task too
                    if how == "error":
                        raise KeyError("body")
                    if how == "outer-cancel":
                        outer.cancel()
                        await anyio.sleep_forever()
            except Exception as error:
                assert how == "error"
                assert repr(error) == repr(KeyError("body"))
            assert ended.is_set()
            assert push.closed
    assert outer.cancelled_caught == (how == "outer-cancel")


async def test_an_error_in_a_socket_task_surfaces_at_that_sockets_exit() -> None:
    """A socket task that raises (a bug: they catch their own errors) ends the socket, a
    blocked ``recv`` of its body does not hang, and the error comes out of that socket's
    ``async with`` (in anyio's ExceptionGroup), not out of an enclosing socket's, which keeps
    working."""

    async def boom() -> None:
        raise ValueError("a bug in a socket task")

    with anyio.fail_after(TIMEOUT):
        async with (
            zmtp.Socket(zmtp.PULL, linger=0) as outer_pull,
            zmtp.Socket(zmtp.PUSH, linger=0) as outer_push,
        ):
            await outer_pull.bind("inproc://task-group-error")
            await outer_push.connect("inproc://task-group-error")
            with pytest.raises(Exception) as info:  # an ExceptionGroup (a 3.11+ name)
                async with zmtp.Socket(zmtp.PULL, linger=0) as pull:
                    await pull.bind("inproc://task-group-error-inner")
                    pull.engine.spawn(boom)
                    await pull.recv()  # ends: the socket is closed (or the body cancelled)
            assert info.group_contains(ValueError, match="a bug")
            assert pull.closed
            await outer_push.send(b"still working")
            assert await outer_pull.recv() == b"still working"


async def test_an_error_of_the_body_is_caught_around_the_async_with() -> None:
    """Regression: ``except zmtp.TimedOut:`` around ``async with zmtp.Socket(...)`` (the
    pyzmq habit, and what docs/from-pyzmq.md's errors table promises) did not catch the
    body's timeout: it left wrapped in anyio's ExceptionGroup, on both backends."""
    with anyio.fail_after(TIMEOUT):
        with pytest.raises(zmtp.TimedOut, match="recv_timeout"):
            async with zmtp.Socket(zmtp.PULL, recv_timeout=0.01) as pull:
                await pull.bind("tcp://127.0.0.1:*")
                await pull.recv()
        assert pull.closed
        with pytest.raises(ValueError, match="body"):
            async with zmtp.Context() as ctx:
                await ctx.socket(zmtp.PUSH)
                raise ValueError("body")
