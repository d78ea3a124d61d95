"""``zmtp.Socket.send``, ``send_multipart`` and ``send_prepared`` are one operation.

Their fast path is spelled out three times on purpose (one coroutine call per message less,
docs/performance.md, "send/recv fast paths"), with a note to keep the three in step. These
tests pin them to each other through the public API, each script run once per path with the
same message: the same bytes on the wire, the same refusals (type and text) with nothing
queued, and the same high-water-mark behaviour (how many are taken, the timeout, a cancelled
blocked send losing nothing and sending nothing). The cancel/yield cadence all three share is
tests/test_send_cadence.py's ("every kind of send counts alike"). ``send_prepared`` takes only
a fresh list of ``bytes`` (its contract), so the scripts use bytes.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Coroutine
from typing import Any

import anyio
import pytest

import zmtp
from zmtp.testing.rawpeer import RawPeer

pytestmark = pytest.mark.anyio

Send = Callable[[zmtp.Socket, list[bytes]], Coroutine[Any, Any, None]]


async def _send(sock: zmtp.Socket, message: list[bytes]) -> None:
    (part,) = message
    await sock.send(part)


async def _send_multipart(sock: zmtp.Socket, message: list[bytes]) -> None:
    await sock.send_multipart(iter(message))


async def _send_prepared(sock: zmtp.Socket, message: list[bytes]) -> None:
    await sock.send_prepared(list(message))  # a fresh list: its contract


PATHS: dict[str, Send] = {
    "send": _send,
    "send_multipart": _send_multipart,
    "send_prepared": _send_prepared,
}
each_path = pytest.mark.parametrize("path", list(PATHS))


def _paths_for(message: list[bytes]) -> list[Send]:
    """The paths that can send ``message`` (``send`` takes one part)."""
    return [send for name, send in PATHS.items() if name != "send" or len(message) == 1]


def _nowhere() -> str:
    return f"inproc://send-paths-{os.urandom(6).hex()}"


#: Messages of one part (each path) and of several (send_multipart and send_prepared): empty,
#: short and long frames.
MESSAGES = [[b"one"], [b""], [b"L" * 300], [b"a", b"", b"b" * 256]]


@each_path
async def test_the_bytes_on_the_wire_are_the_same(path: str) -> None:
    with anyio.fail_after(20):
        async with RawPeer.listen() as peer, zmtp.Socket(zmtp.PUSH, linger=0) as push:
            await push.connect(peer.endpoint)
            await peer.accept()
            await peer.handshake("PULL")
            sent = [m for m in MESSAGES if path != "send" or len(m) == 1]
            for message in sent:
                await PATHS[path](push, message)
            for message in sent:
                frames = [await peer.read_raw_frame() for _ in message]
                assert b"".join(frames) == RawPeer.message(*message)
            await peer.expect_silence()


@pytest.mark.parametrize(
    ("socket_type", "message"),
    [
        ("PULL", [b"x"]),  # cannot send
        ("SUB", [b"x"]),
        ("REP", [b"x"]),  # no request to answer
        ("RADIO", [b"x"]),  # a RADIO message is a group and a body
        ("RADIO", [b"g", b"a", b"b"]),
    ],
)
async def test_a_send_the_socket_refuses_is_refused_alike(
    socket_type: str, message: list[bytes]
) -> None:
    errors = set()
    for send in _paths_for(message):
        async with zmtp.Socket(socket_type, linger=0) as sock:
            with pytest.raises(zmtp.ZMTPError) as raised:
                await send(sock, message)
            errors.add((raised.type, str(raised.value)))
    assert len(errors) == 1, errors


@each_path
async def test_a_req_refuses_a_second_request_alike_and_sends_only_the_first(path: str) -> None:
    endpoint = _nowhere()
    with anyio.fail_after(20):
        async with zmtp.Socket(zmtp.REP) as rep, zmtp.Socket(zmtp.REQ, linger=0) as req:
            await rep.bind(endpoint)
            await req.connect(endpoint)
            await PATHS[path](req, [b"first"])
            with pytest.raises(zmtp.InvalidState):
                await PATHS[path](req, [b"second"])
            assert await rep.recv() == b"first"
            await rep.send(b"reply")
            assert await req.recv() == b"reply"
            await PATHS[path](req, [b"third"])  # the refusal left the REQ in step
            assert await rep.recv() == b"third"


@each_path
async def test_a_send_on_a_closed_socket_is_refused(path: str) -> None:
    push = zmtp.Socket(zmtp.PUSH, linger=0)
    async with push:
        await push.connect(_nowhere())
    with pytest.raises(zmtp.SocketClosed):
        await PATHS[path](push, [b"late"])


@each_path
async def test_the_hwm_takes_as_many_times_out_and_cancels_alike(path: str) -> None:
    """Over inproc a PUSH holds ``send_hwm`` plus the PULL's ``recv_hwm`` messages: the next
    send blocks, times out after ``send_timeout`` (or is cancelled) with nothing queued, and
    goes once the PULL reads one; the PULL gets exactly the messages taken, in order."""
    send = PATHS[path]
    endpoint = _nowhere()
    with anyio.fail_after(20):
        async with (
            zmtp.Socket(zmtp.PULL, recv_hwm=2) as pull,
            zmtp.Socket(zmtp.PUSH, send_hwm=3, send_timeout=0.2, linger=0) as push,
        ):
            await pull.bind(endpoint)
            await push.connect(endpoint)
            taken = 0
            while True:
                try:
                    await send(push, [b"m%d" % taken])
                except TimeoutError:
                    break
                taken += 1
                assert taken <= 5, "the high-water mark never blocked"
            assert taken == 5
            push.options.send_timeout = None
            with anyio.CancelScope() as scope:
                async with anyio.create_task_group() as tg:
                    tg.start_soon(send, push, [b"cancelled"])
                    await anyio.wait_all_tasks_blocked()
                    scope.cancel()
            done = anyio.Event()

            async def blocked() -> None:
                await send(push, [b"last"])
                done.set()

            async with anyio.create_task_group() as tg:
                tg.start_soon(blocked)
                await anyio.wait_all_tasks_blocked()
                assert not done.is_set()
                got = [await pull.recv()]
                await done.wait()
                got += [await pull.recv() for _ in range(taken)]
            assert got == [b"m%d" % i for i in range(taken)] + [b"last"]
