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
