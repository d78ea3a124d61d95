"""The answer spin: a lent read right after an eager write keeps the event loop polling for up
to ``answer_spin`` before the process may sleep (zmtp/engine/stream.py). These tests run the
spin long (0.5 s) so that what happens inside it is exercised: a close ends it, a PING is
answered and another peer's message delivered during it, and a one-way stream never spins. A
recv abandoned and a peer leaving inside a spin: ``test_an_abandoned_lent_read_loses_nothing``
and ``test_a_peer_that_leaves_during_a_lent_read_is_noticed`` (tests/test_engine_lent_reads.py,
parametrised). On asyncio and trio.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

import anyio
import pytest

import zmtp
from zmtp.engine import stream as stream_module
from zmtp.engine.stream import StreamConnection
from zmtp.testing import TIMEOUT, linked, raw_server, recv_within
from zmtp.testing.wire import command

pytestmark = pytest.mark.anyio

#: Far longer than any step of these tests: whatever they do to a waiting recv happens inside
#: its spin (each spin ends as soon as data comes).
LONG_SPIN = {"answer_spin": 0.5}


async def until(condition: Callable[[], bool]) -> None:
    """Yield to the event loop until ``condition`` holds (bounded by TIMEOUT)."""
    with anyio.fail_after(TIMEOUT):
        while not condition():
            await anyio.sleep(0.001)


@pytest.fixture
def spins(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """Records every answer spin started (trio's raw polling or asyncio's loop polling)."""
    seen: list[str] = []
    poll_raw = StreamConnection._poll_raw
    keep_polling = stream_module._keep_loop_polling

    async def counted_poll_raw(self: StreamConnection, deadline: float) -> bytes | None:
        seen.append("raw")
        return await poll_raw(self, deadline)

    def counted_keep_polling(seconds: float) -> Callable[[], None]:
        seen.append("loop")
        return keep_polling(seconds)

    monkeypatch.setattr(StreamConnection, "_poll_raw", counted_poll_raw)
    monkeypatch.setattr(stream_module, "_keep_loop_polling", counted_keep_polling)
    yield seen


@contextlib.asynccontextmanager
async def pairs_with(**options: Any) -> AsyncIterator[tuple[zmtp.Socket, zmtp.Socket]]:
    """Two linked PAIR sockets, both with ``options``."""
    async with linked(zmtp.PAIR, zmtp.PAIR, bind_options=options, connect_options=options) as (
        bound,
        connecting,
    ):
        yield bound, connecting


async def echo(sock: zmtp.Socket, rounds: int) -> None:
    for _ in range(rounds):
        await sock.send_multipart(await recv_within(sock))


async def ping_pong(peer: zmtp.Socket, rounds: int) -> None:
    for i in range(rounds):
        await peer.send(b"%d" % i)
        assert (await recv_within(peer))[-1] == b"%d" % i


@pytest.mark.parametrize("types", [(zmtp.REP, zmtp.REQ), (zmtp.PAIR, zmtp.PAIR)])
async def test_a_ping_pong_spins_for_its_answers(types: tuple[str, str], spins: list[str]) -> None:
    rounds = 20
    async with (
        linked(*types, bind_options=LONG_SPIN, connect_options=LONG_SPIN) as (
            server,
            client,
        ),
        anyio.create_task_group() as tg,
    ):
        tg.start_soon(echo, server, rounds)
        await ping_pong(client, rounds)
    # Both sides answer or ask with an eager write and then wait for the other; allow the
    # first exchanges, which the readers deliver.
    assert len(spins) >= rounds, spins


async def test_no_spin_with_answer_spin_zero(spins: list[str]) -> None:
    async with pairs_with(answer_spin=0.0) as (server, client), anyio.create_task_group() as tg:
        tg.start_soon(echo, server, 20)
        await ping_pong(client, 20)
    assert spins == []


async def test_a_one_way_stream_never_spins(spins: list[str]) -> None:
    async with linked(zmtp.PULL, zmtp.PUSH, bind_options=LONG_SPIN, connect_options=LONG_SPIN) as (
        pull,
        push,
    ):
        for i in range(50):
            await push.send(b"%d" % i)
            assert await recv_within(pull) == [b"%d" % i]
    assert spins == []


def test_answer_spin_is_bounded() -> None:
    for bad in (-0.001, 1.5):
        with pytest.raises(zmtp.OptionError):
            zmtp.Socket(zmtp.PAIR, answer_spin=bad)


async def spinning(server: zmtp.Socket, client: zmtp.Socket, spins: list[str]) -> None:
    """Ping-pong until ``server`` (echoing in another task) waits inside an answer spin."""
    before = len(spins)
    for i in range(5):
        await client.send(b"%d" % i)
        assert (await recv_within(client))[-1] == b"%d" % i
    await until(lambda: len(spins) > before and server.engine.lent_connection is not None)


async def test_close_ends_a_spin(spins: list[str]) -> None:
    async with linked(zmtp.PAIR, zmtp.PAIR, bind_options=LONG_SPIN) as (server, client):
        outcome: list[BaseException] = []

        async def serve() -> None:
            try:
                await echo(server, 6)
            except zmtp.SocketClosed as exc:
                outcome.append(exc)

        async with anyio.create_task_group() as tg:
            tg.start_soon(serve)
            await spinning(server, client, spins)
            with anyio.fail_after(TIMEOUT):
                await server.close()
        assert len(outcome) == 1


async def raw_ping_pong(peer: Any, sock: zmtp.Socket, spins: list[str], rounds: int) -> None:
    """Drive ``sock`` (echoing in another task) from a hand-written peer until it waits
    inside an answer spin."""
    before = len(spins)
    for i in range(rounds):
        await peer.send(b"\x00\x01" + b"%d" % i)  # one frame: flags, size, body
        assert await peer.read_message() == [b"%d" % i]
    await until(lambda: len(spins) > before and sock.engine.lent_connection is not None)


async def test_a_ping_during_a_spin_is_answered(spins: list[str]) -> None:
    async with raw_server() as server, zmtp.Socket(zmtp.PAIR, linger=0, **LONG_SPIN) as sock:
        await sock.connect(server.endpoint)
        peer = await server.accept()
        await peer.handshake("PAIR")
        async with anyio.create_task_group() as tg:
            tg.start_soon(echo, sock, 6)
            await raw_ping_pong(peer, sock, spins, 5)
            await peer.send(command(b"PING", b"\x00\x00ctx"))
            assert await peer.read_command() == (b"PONG", b"ctx")
            await peer.send(b"\x00\x04last")
            assert await peer.read_message() == [b"last"]


async def test_several_peers_still_deliver_while_one_spins(spins: list[str]) -> None:
    # A DEALER peer connecting to a ROUTER that spins on its first peer: the second peer's
    # message reaches the waiting recv (the kick's PONG or the spin's end let it through).
    async with linked(zmtp.ROUTER, zmtp.DEALER, bind_options=LONG_SPIN) as (router, first):
        got: list[list[bytes]] = []

        async def serve() -> None:
            await echo(router, 5)
            got.append(await recv_within(router))

        async with anyio.create_task_group() as tg:
            tg.start_soon(serve)
            await spinning(router, first, spins)
            async with zmtp.Socket(zmtp.DEALER, linger=0, identity=b"second") as second:
                await second.connect(router.last_endpoint)
                await second.send(b"from the second peer")
                await until(lambda: bool(got))
        assert got == [[b"second", b"from the second peer"]]


async def test_the_spin_backs_off_when_answers_come_later(spins: list[str]) -> None:
    # Every answer comes 10 ms after the request, long after a 1 ms spin: after two misses
    # in a row only every 16th lent read spins (zmtp/engine/stream.py, _SPIN_PROBE_EVERY).
    rounds = 40
    async with pairs_with(answer_spin=0.001) as (server, client), anyio.create_task_group() as tg:

        async def slow_echo() -> None:
            for _ in range(rounds):
                message = await recv_within(server)
                await anyio.sleep(0.01)
                await server.send_multipart(message)

        tg.start_soon(slow_echo)
        await ping_pong(client, rounds)
    client_spins = len(spins)  # the server's spins wait for the next request: also misses
    assert client_spins <= 2 * (2 + rounds // 16 + 1), spins
