"""Every plain send path asks the socket type's send check exactly when the type has one.

``zmtp.Socket`` reads ``RoutingStrategy.send_check`` (a class attribute) once, into a slot
(``_send_unchecked``), so that its send paths make a specialised read per message
(docs/performance.md, "Plain send paths read the send check from a slot"). These tests pin
the behaviour through the public API: a type with a send check (REQ)
still refuses what it must on every path, and a type without one (PUSH) never runs it.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Coroutine
from typing import Any

import anyio
import pytest

import zmtp

pytestmark = pytest.mark.anyio

Send = Callable[[zmtp.Socket, bytes], Coroutine[Any, Any, None]]


async def _send(sock: zmtp.Socket, data: bytes) -> None:
    await sock.send(data)


async def _send_multipart(sock: zmtp.Socket, data: bytes) -> None:
    await sock.send_multipart([data])


async def _send_prepared(sock: zmtp.Socket, data: bytes) -> None:
    await sock.send_prepared([data])


PATHS: dict[str, Send] = {
    "send": _send,
    "send_multipart": _send_multipart,
    "send_prepared": _send_prepared,
}
each_path = pytest.mark.parametrize("path", list(PATHS))


def _endpoint() -> str:
    return f"inproc://send-check-slot-{os.urandom(6).hex()}"


@each_path
async def test_req_send_check_runs_on_every_path(path: str) -> None:
    """REQ's alternation (its send check) refuses a second request on each path, and the
    refusal queues nothing: the REP sees the first request only."""
    send = PATHS[path]
    endpoint = _endpoint()
    async with zmtp.Socket(zmtp.REP) as rep, zmtp.Socket(zmtp.REQ) as req:
        await rep.bind(endpoint)
        await req.connect(endpoint)
        with anyio.fail_after(5):
            await send(req, b"first")
            with pytest.raises(zmtp.InvalidState):
                await send(req, b"second")
            assert await rep.recv() == b"first"
            await rep.send(b"reply")
            assert await req.recv() == b"reply"
            await send(req, b"third")  # alternation restored: allowed again
            assert await rep.recv() == b"third"


@each_path
async def test_push_never_runs_check_send(path: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """PUSH has no send check: no path calls ``check_send`` (200 sends, past the cancel
    cadence's checks), and every message arrives in order."""
    send = PATHS[path]
    endpoint = _endpoint()
    async with zmtp.Socket(zmtp.PULL) as pull, zmtp.Socket(zmtp.PUSH) as push:
        await pull.bind(endpoint)
        await push.connect(endpoint)
        strategy = push.engine.strategy

        def refuse(parts: list[bytes]) -> None:
            raise AssertionError("check_send called for a type without a send check")

        monkeypatch.setattr(strategy, "check_send", refuse)
        with anyio.fail_after(5):
            for i in range(200):
                await send(push, b"%d" % i)
            for i in range(200):
                assert await pull.recv() == b"%d" % i
