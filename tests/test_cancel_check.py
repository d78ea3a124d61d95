"""zmtp/cancel_check.py: the running backend's own ``checkpoint_if_cancelled``, which a socket
looks up once when entered and its send and receive cadences await, behaves exactly as
anyio's ``checkpoint_if_cancelled``: it raises in a cancelled scope (an outer one too, through
unshielded inner scopes), not under a shield, and never lets another task run. And the sends
that await it see a cancel within 16 calls, losing nothing.
"""

from __future__ import annotations

import contextlib
import sys

import anyio
import anyio.lowlevel
import pytest

import zmtp
from tests.test_engine_helpers import TIMEOUT, unique_name
from zmtp.cancel_check import backend_cancel_check

pytestmark = pytest.mark.anyio

CANCEL_CHECK_EVERY = 16  # zmtp/socket.py's _CANCEL_CHECK_MASK + 1


async def test_it_is_the_running_backends_own(anyio_backend_name: str) -> None:
    check = backend_cancel_check()
    if anyio_backend_name == "trio":
        import trio

        assert check is trio.lowlevel.checkpoint_if_cancelled
    else:
        current_token = getattr(anyio.lowlevel, "current_token", None)
        if current_token is None:  # anyio < 4.11: anyio's own
            assert check is anyio.lowlevel.checkpoint_if_cancelled
        else:
            assert check == current_token().backend_class.checkpoint_if_cancelled
            assert check is not anyio.lowlevel.checkpoint_if_cancelled


def test_outside_an_event_loop_it_is_anyios() -> None:
    assert backend_cancel_check() is anyio.lowlevel.checkpoint_if_cancelled
    assert "trio" in sys.modules  # the trio branch was tried: it found no run


async def test_it_raises_in_a_cancelled_scope_and_an_outer_one() -> None:
    check = backend_cancel_check()
    with anyio.CancelScope() as scope:
        scope.cancel()
        await check()
        pytest.fail("not cancelled")
    assert scope.cancelled_caught
    with anyio.CancelScope() as outer:
        with anyio.CancelScope():
            outer.cancel()
            await check()
            pytest.fail("not cancelled")
    assert outer.cancelled_caught


async def test_it_does_not_raise_under_a_shield() -> None:
    check = backend_cancel_check()
    with anyio.CancelScope() as outer:
        with anyio.CancelScope(shield=True):
            outer.cancel()
            await check()  # shielded: nothing raised
            passed = True
    assert passed


async def test_it_never_lets_another_task_run() -> None:
    check = backend_cancel_check()
    ran = False

    async def other() -> None:
        nonlocal ran
        ran = True

    async with anyio.create_task_group() as tg:
        tg.start_soon(other)
        for _ in range(50):
            await check()
        assert not ran  # the task was ready all along: a check is no scheduling point
    assert ran


@pytest.mark.parametrize("nested", [False, True])
async def test_a_send_loop_sees_a_cancel_within_16_sends_and_loses_nothing(nested: bool) -> None:
    """The socket's own check, on the send path: in a scope cancelled before the first send
    (or around an unshielded inner scope), the loop ends within 16 sends; every send that
    returned queued its message, the one that raised queued nothing."""
    name = f"inproc://{unique_name()}"
    async with (
        zmtp.Socket(zmtp.PULL, recv_hwm=0) as pull,
        zmtp.Socket(zmtp.PUSH, send_hwm=0, linger=0) as push,
    ):
        await pull.bind(name)
        await push.connect(name)
        returned: list[bytes] = []
        with anyio.fail_after(TIMEOUT):
            with anyio.CancelScope() as scope:
                scope.cancel()
                # unshielded: the outer cancel still counts (asyncio walks the scopes)
                with anyio.CancelScope() if nested else contextlib.nullcontext():
                    for i in range(10 * CANCEL_CHECK_EVERY):
                        await push.send(b"m%d" % i)
                        returned.append(b"m%d" % i)
        assert scope.cancelled_caught
        assert len(returned) < CANCEL_CHECK_EVERY
        await push.send(b"end")
        with anyio.fail_after(TIMEOUT):
            got = [await pull.recv() for _ in range(len(returned) + 1)]
        assert got == [*returned, b"end"]
        assert not pull.readable()


async def test_a_shielded_send_loop_is_not_interrupted() -> None:
    name = f"inproc://{unique_name()}"
    count = 4 * CANCEL_CHECK_EVERY
    async with (
        zmtp.Socket(zmtp.PULL, recv_hwm=0) as pull,
        zmtp.Socket(zmtp.PUSH, send_hwm=0, linger=0) as push,
    ):
        await pull.bind(name)
        await push.connect(name)
        with anyio.CancelScope() as outer:
            outer.cancel()
            with anyio.CancelScope(shield=True):
                for i in range(count):
                    await push.send(b"s%d" % i)
        assert not outer.cancelled_caught
        with anyio.fail_after(TIMEOUT):
            got = [await pull.recv() for _ in range(count)]
        assert got == [b"s%d" % i for i in range(count)]


async def test_a_recv_loop_sees_a_cancel_and_loses_nothing() -> None:
    """The receive cadence awaits the same check (every 64 receives)."""
    name = f"inproc://{unique_name()}"
    total = 200
    async with (
        zmtp.Socket(zmtp.PULL, recv_hwm=0) as pull,
        zmtp.Socket(zmtp.PUSH, send_hwm=0, linger=0) as push,
    ):
        await pull.bind(name)
        await push.connect(name)
        for i in range(total):
            await push.send(b"r%d" % i)
        got: list[bytes] = []
        with anyio.fail_after(TIMEOUT):
            with anyio.CancelScope() as scope:
                scope.cancel()
                while True:
                    got.append(await pull.recv())
        assert scope.cancelled_caught
        assert len(got) < 64
        with anyio.fail_after(TIMEOUT):
            got += [await pull.recv() for _ in range(total - len(got))]
        assert got == [b"r%d" % i for i in range(total)]
