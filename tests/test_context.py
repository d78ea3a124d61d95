"""zmtp.Context and zmtp.sync.Context: make sockets with default options, close them together."""

from __future__ import annotations

import anyio
import pytest

import zmtp
import zmtp.sync


@pytest.mark.anyio
async def test_async_context_makes_and_closes_sockets() -> None:
    with anyio.fail_after(10):
        async with zmtp.Context(linger=0) as ctx:
            pull = await ctx.socket(zmtp.PULL, recv_timeout=5.0)
            push = await ctx.socket(zmtp.PUSH)
            await push.connect(await pull.bind("tcp://127.0.0.1:*"))
            await push.send(b"through a context")
            assert await pull.recv() == b"through a context"
            assert pull.get("linger") == 0 and pull.get("recv_timeout") == 5.0
            assert ctx.sockets == [pull, push]
        assert pull.closed and push.closed


@pytest.mark.anyio
async def test_async_context_must_be_entered() -> None:
    with pytest.raises(zmtp.SocketClosed, match="context was never opened"):
        await zmtp.Context().socket(zmtp.PUSH)


def test_sync_context_term_closes_everything() -> None:
    with zmtp.sync.Context(recv_timeout=5.0) as ctx:
        pull = ctx.socket(zmtp.PULL)
        push = ctx.socket(zmtp.PUSH, linger=0)
        push.connect(pull.bind("tcp://127.0.0.1:*"))
        push.send(b"x")
        assert pull.recv() == b"x"
        assert push.get("recv_timeout") == 5.0
    assert pull.closed and push.closed
    with pytest.raises(zmtp.SocketClosed, match="terminated"):
        ctx.socket(zmtp.PUSH)
    zmtp.sync.Context().destroy()  # nothing made: nothing to close


# A context opens its sockets in one task group (Socket.open_in) rather than one per socket:
# what each socket's own ``async with`` guaranteed must still hold.


@pytest.mark.anyio
async def test_a_context_socket_is_open_and_cannot_be_entered_again() -> None:
    async with zmtp.Context(linger=0) as ctx:
        push = await ctx.socket(zmtp.PUSH)
        with pytest.raises(zmtp.UsageError, match="entered only once"):
            async with push:
                pass  # pragma: no cover
        await push.bind("inproc://context-open")  # open: it has a group to run tasks in


@pytest.mark.anyio
async def test_a_cancel_interrupts_a_blocked_send_of_a_context_socket() -> None:
    with anyio.fail_after(10):
        async with zmtp.Context(linger=0) as ctx:
            push = await ctx.socket(zmtp.PUSH, immediate=True)
            await push.connect("tcp://127.0.0.1:1")  # nobody there: send blocks
            with anyio.move_on_after(0.1) as scope:
                await push.send(b"never")
            assert scope.cancelled_caught
        assert push.closed


@pytest.mark.anyio
async def test_a_deadline_interrupts_a_send_loop_over_many_context_sockets() -> None:
    """PUB sockets with no subscriber never block: only the fast path's checks and yields
    let the deadline in."""
    with anyio.fail_after(10):
        async with zmtp.Context(linger=0) as ctx:
            pubs = [await ctx.socket(zmtp.PUB) for _ in range(20)]
            for i, pub in enumerate(pubs):
                await pub.bind(f"inproc://context-pub-{i}")
            sent = 0
            with anyio.move_on_after(0.05) as scope:
                while True:
                    await pubs[sent % len(pubs)].send(b"x")
                    sent += 1
            assert scope.cancelled_caught and sent > 0


@pytest.mark.anyio
async def test_an_error_in_a_context_closes_its_sockets_at_once() -> None:
    """As a socket's own ``async with``: an exception leaving the block closes with linger 0
    (a queued message with nowhere to go does not hold the exit), and the exception comes
    out as itself, as through the sockets' own ``async with`` (not in anyio's
    ExceptionGroup)."""
    with anyio.fail_after(10):
        with pytest.raises(KeyError, match="out"):
            async with zmtp.Context(linger=None) as ctx:
                push = await ctx.socket(zmtp.PUSH)
                await push.connect("tcp://127.0.0.1:1")
                with anyio.move_on_after(0):  # queue it if the pipe is there, else skip
                    await push.send(b"queued, nobody to take it")
                pull = await ctx.socket(zmtp.PULL)
                raise KeyError("out")
    assert push.closed and pull.closed
