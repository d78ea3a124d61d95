"""Lent reads: a socket's ``recv`` reads its only tcp/ipc peer itself while that connection's
reader task is parked (zmtp/engine/stream.py). These tests pin what must not change because of
it: every other source of a message, a close, a timeout or a cancel still ends the wait; nothing
is lost; the reader takes over again when the application stops receiving (PINGs answered,
disconnects noticed). On asyncio and trio.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import anyio
import pytest

import zmtp
from zmtp.engine import stream as stream_module
from zmtp.engine.stream import StreamConnection
from zmtp.testing import TIMEOUT, RawPeer, bindable, linked, raw_server, recv_within, wait_event
from zmtp.testing.pyzmq_sockets import zmq_module, zrecv, zsend, zsocket
from zmtp.testing.wire import command

pytestmark = pytest.mark.anyio


async def until(condition: Callable[[], bool]) -> None:
    """Yield to the event loop until ``condition`` holds (bounded by TIMEOUT)."""
    with anyio.fail_after(TIMEOUT):
        while not condition():
            await anyio.sleep(0.001)


def in_lent_read(sock: zmtp.Socket) -> bool:
    return sock.engine.lent_connection is not None


@pytest.fixture
def lent_reads(monkeypatch: pytest.MonkeyPatch) -> list[StreamConnection]:
    """Records every lent read (the connection it borrowed)."""
    seen: list[StreamConnection] = []
    original = StreamConnection.lent_read

    async def counted(self: StreamConnection) -> bytes | None:
        seen.append(self)
        return await original(self)

    monkeypatch.setattr(StreamConnection, "lent_read", counted)
    return seen


@pytest.mark.parametrize("transport", ["tcp", "ipc"])
async def test_request_reply_reads_are_lent_to_the_application(
    transport: str, lent_reads: list[StreamConnection], anyio_backend: str
) -> None:
    rounds = 50
    async with (
        linked(zmtp.REP, zmtp.REQ, transport) as (rep, req),
        anyio.create_task_group() as tg,
    ):

        async def serve() -> None:
            for _ in range(rounds):
                await rep.send(await rep.recv())

        tg.start_soon(serve)
        with anyio.fail_after(TIMEOUT):
            for i in range(rounds):
                await req.send(b"%d" % i)
                assert await req.recv() == b"%d" % i
    if anyio_backend == "asyncio" and transport == "ipc":
        # Never lent there: anyio's UNIX stream cannot be cancelled cleanly on asyncio
        # (zmtp/engine/stream.py, _cancel_clean_receive; tests/test_engine_close.py).
        assert lent_reads == []
        return
    # After the first exchange each side's reader stays parked and both recv calls read the
    # socket themselves; allow a few deliveries by the reader at the start.
    assert len(lent_reads) >= rounds, len(lent_reads)


async def steady_recv(sock: zmtp.Socket, rounds: int = 5) -> list[bytes]:
    """Echo ``rounds`` messages, then receive one more. Answering and asking again without
    yielding in between is what leaves the reader parked, so that last recv is a lent read."""
    for _ in range(rounds):
        await sock.send_multipart(await recv_within(sock))
    return await recv_within(sock)


async def drive(peer: zmtp.Socket, receiver: zmtp.Socket, rounds: int = 5) -> None:
    """The other side of :func:`steady_recv`; returns once ``receiver`` is in a lent read."""
    for i in range(rounds):
        await peer.send(b"%d" % i)
        assert (await recv_within(peer))[-1] == b"%d" % i
    await until(lambda: in_lent_read(receiver))


async def test_a_second_peer_interrupts_a_lent_read() -> None:
    async with linked(zmtp.ROUTER, zmtp.DEALER) as (router, first):
        got: list[list[bytes]] = []

        async def receive() -> None:
            got.append(await steady_recv(router))

        async with anyio.create_task_group() as tg:
            tg.start_soon(receive)
            await drive(first, router)
            async with zmtp.Socket(zmtp.DEALER, linger=0, identity=b"second") as second:
                await second.connect(router.last_endpoint)
                await second.send(b"from the second peer")
                await until(lambda: bool(got))
        assert got == [[b"second", b"from the second peer"]]
        await first.send(b"still fine")
        assert (await recv_within(router))[1:] == [b"still fine"]


async def test_close_interrupts_a_lent_read() -> None:
    async with linked(zmtp.PAIR, zmtp.PAIR) as (bound, connecting):
        outcome: list[BaseException] = []

        async def receive() -> None:
            try:
                await steady_recv(connecting)
            except zmtp.SocketClosed as exc:
                outcome.append(exc)

        async with anyio.create_task_group() as tg:
            tg.start_soon(receive)
            await drive(bound, connecting)
            with anyio.fail_after(TIMEOUT):
                await connecting.close()
        assert len(outcome) == 1


@pytest.mark.parametrize("how", ["recv_timeout", "cancel"])
@pytest.mark.parametrize("answer_spin", [None, 0.5], ids=["default", "abandoned-in-spin"])
async def test_an_abandoned_lent_read_loses_nothing(how: str, answer_spin: float | None) -> None:
    # With a 0.5 s answer spin the recv is abandoned inside the spin (test_engine_answer_spin).
    options = {} if answer_spin is None else {"answer_spin": answer_spin}
    async with linked(zmtp.PAIR, zmtp.PAIR, connect_options=options) as (bound, connecting):
        async with anyio.create_task_group() as tg:

            async def receive() -> None:
                for _ in range(5):
                    await connecting.send_multipart(await recv_within(connecting))
                if how == "recv_timeout":
                    connecting.options.recv_timeout = 0.05
                    with pytest.raises(TimeoutError):
                        await connecting.recv()
                    connecting.options.recv_timeout = None
                else:
                    with anyio.move_on_after(0.05) as scope:
                        await connecting.recv()
                    assert scope.cancelled_caught

            tg.start_soon(receive)
            await drive(bound, connecting)
        assert not in_lent_read(connecting)
        for i in range(3):
            await bound.send(b"%d" % i)
        with anyio.fail_after(TIMEOUT):
            assert [await connecting.recv() for _ in range(3)] == [b"0", b"1", b"2"]


async def test_two_receivers_on_one_socket_each_get_a_message() -> None:
    async with linked(zmtp.PAIR, zmtp.PAIR) as (bound, connecting):
        got: list[bytes] = []

        async def steady() -> None:
            got.append((await steady_recv(connecting))[0])

        async def plain() -> None:
            got.append((await recv_within(connecting))[0])

        async with anyio.create_task_group() as tg:
            tg.start_soon(steady)
            await drive(bound, connecting)
            tg.start_soon(plain)
            await anyio.lowlevel.checkpoint()
            await bound.send(b"a")
            await bound.send(b"b")
        assert sorted(got) == [b"a", b"b"]


async def raw_steady_recv(peer: Any, sock: zmtp.Socket, rounds: int = 5) -> None:
    """As :func:`drive` + :func:`steady_recv` with a hand-written peer: ``sock`` answers
    ``rounds`` messages in a background task and then waits in a lent read."""
    for i in range(rounds):
        await peer.send(b"\x00\x01" + b"%d" % i)  # one frame: flags, size, body
        assert await peer.read_message() == [b"%d" % i]
    await until(lambda: in_lent_read(sock))


async def test_the_reader_answers_pings_once_the_application_stops_receiving() -> None:
    async with raw_server() as server, zmtp.Socket(zmtp.PAIR, linger=0) as sock:
        await sock.connect(server.endpoint)
        peer = await server.accept()
        await peer.handshake("PAIR")
        async with anyio.create_task_group() as tg:
            tg.start_soon(steady_recv, sock)
            await raw_steady_recv(peer, sock)
            await peer.send(b"\x00\x04last")  # ends steady_recv: nobody calls recv any more
        # Only the connection's own reader can see this PING now.
        await peer.send(command(b"PING", b"\x00\x00ctx"))
        assert await peer.read_command() == (b"PONG", b"ctx")
        await peer.send(b"\x00\x05later")
        assert await recv_within(sock) == [b"later"]


async def test_a_resting_lease_goes_back_to_the_reader_when_the_socket_waits_otherwise(
    monkeypatch: pytest.MonkeyPatch, anyio_backend: str
) -> None:
    # After a lent read that delivered, the reader is not woken (the lease rests: the
    # application usually asks again at once). A wait that does not lend (Poller's
    # wait_readable here) must hand the read side back at once, not after the recheck.
    monkeypatch.setattr(stream_module, "_LEASE_RECHECK", 3600.0)
    async with raw_server() as server, zmtp.Socket(zmtp.PAIR, linger=0) as sock:
        await sock.connect(server.endpoint)
        peer = await server.accept()
        await peer.handshake("PAIR")
        async with anyio.create_task_group() as tg:
            tg.start_soon(steady_recv, sock)
            await raw_steady_recv(peer, sock)
            await peer.send(b"\x00\x04last")  # steady_recv's lent read delivers it: rests
        assert sock.engine.resting_lender is not None
        await peer.send(b"\x00\x05later")
        with anyio.fail_after(TIMEOUT):
            await sock.wait_readable()
        assert await recv_within(sock) == [b"later"]


@pytest.mark.parametrize("answer_spin", [None, 0.5], ids=["default", "leaves-in-spin"])
async def test_a_peer_that_leaves_during_a_lent_read_is_noticed(answer_spin: float | None) -> None:
    # With a 0.5 s answer spin the peer leaves while the recv spins (test_engine_answer_spin).
    options = {} if answer_spin is None else {"answer_spin": answer_spin}
    async with (
        raw_server() as server,
        zmtp.Socket(zmtp.PAIR, linger=0, reconnect_ivl=0.01, **options) as sock,
        sock.monitor() as monitor,
    ):
        await sock.connect(server.endpoint)
        peer = await server.accept()
        await peer.handshake("PAIR")
        await wait_event(monitor, zmtp.HandshakeSucceeded)
        got: list[list[bytes]] = []

        async def receive() -> None:
            got.append(await steady_recv(sock))

        async with anyio.create_task_group() as tg:
            tg.start_soon(receive)
            await raw_steady_recv(peer, sock)
            await peer.aclose()
            await wait_event(monitor, zmtp.Disconnected)
            # The recv keeps waiting (PAIR reconnects); the next connection delivers to it.
            peer = await server.accept()
            await peer.handshake("PAIR")
            await peer.send(b"\x00\x05again")
        assert got == [[b"again"]]
        await peer.aclose()


async def test_a_socket_with_several_peers_does_not_lend(
    lent_reads: list[StreamConnection],
) -> None:
    async with zmtp.Socket(zmtp.PULL, linger=0) as pull:
        endpoint = await pull.bind(bindable("tcp"))
        async with (
            zmtp.Socket(zmtp.PUSH, linger=0) as one,
            zmtp.Socket(zmtp.PUSH, linger=0) as two,
        ):
            await one.connect(endpoint)
            await two.connect(endpoint)
            await until(lambda: len(pull.peers) == 2)
            for i in range(10):
                await (one if i % 2 else two).send(b"%d" % i)
            with anyio.fail_after(TIMEOUT):
                got = sorted([await pull.recv() for _ in range(10)])
        assert got == sorted(b"%d" % i for i in range(10))
        assert lent_reads == []


async def test_a_message_from_another_peer_kicks_the_lent_read_with_a_ping() -> None:
    """The lender's peer is asked for a PONG; its answer ends the read, and the other peer's
    message is delivered."""
    async with zmtp.Socket(zmtp.ROUTER, linger=0) as router:
        endpoint = await router.bind(bindable("tcp"))
        host, port = endpoint.removeprefix("tcp://").rsplit(":", 1)
        got: list[list[bytes]] = []

        async def serve() -> None:
            got.append(await steady_recv(router))

        peer = RawPeer(await anyio.connect_tcp(host, int(port)))
        try:
            await peer.handshake("DEALER", extra={"Identity": b"raw"})
            async with anyio.create_task_group() as tg:
                tg.start_soon(serve)
                await raw_steady_recv(peer, router)
                async with zmtp.Socket(zmtp.DEALER, linger=0, identity=b"other") as other:
                    await other.connect(endpoint)
                    await other.send(b"hello")
                    assert await peer.read_command() == (b"PING", b"\x00\x00")
                    assert not got  # still waiting on the raw peer...
                    await peer.send(command(b"PONG"))  # ...until it answers
                    await until(lambda: bool(got))
            assert got == [[b"other", b"hello"]]
        finally:
            await peer.aclose()


async def test_a_zmtp_3_0_peer_is_never_lent(lent_reads: list[StreamConnection]) -> None:
    """ZMTP 3.0 has no PING, so a lent read could not be kicked: such peers are not lent."""
    async with raw_server() as server, zmtp.Socket(zmtp.PAIR, linger=0) as sock:
        await sock.connect(server.endpoint)
        peer = await server.accept()
        await peer.handshake("PAIR", minor=0)
        for i in range(10):
            await peer.send(b"\x00\x01" + b"%d" % i)
            assert await recv_within(sock) == [b"%d" % i]
            await sock.send(b"ack")
            assert await peer.read_message() == [b"ack"]
        assert lent_reads == []


async def test_libzmq_answers_the_kick(lent_reads: list[StreamConnection]) -> None:
    """Live: our ROUTER lent to a libzmq DEALER; a second libzmq DEALER's message gets
    through because libzmq's I/O thread answers the kick's PING."""
    zmq = zmq_module()
    async with zmtp.Socket(zmtp.ROUTER, linger=0) as router:
        endpoint = await router.bind(bindable("tcp"))
        with (
            zsocket(zmq.DEALER, identity=b"first") as first,
            zsocket(zmq.DEALER, identity=b"second") as second,
        ):
            first.connect(endpoint)
            got: list[list[bytes]] = []

            async def serve() -> None:
                got.append(await steady_recv(router))

            async with anyio.create_task_group() as tg:
                tg.start_soon(serve)
                for i in range(5):
                    await zsend(first, [b"%d" % i])
                    assert await zrecv(first) == [b"%d" % i]
                await until(lambda: in_lent_read(router))
                second.connect(endpoint)
                await zsend(second, [b"hello"])
                await until(lambda: bool(got))
            assert got == [[b"second", b"hello"]]
    assert lent_reads  # the steady state was reached, so the kick was what ended the read


async def test_a_lender_that_never_answers_the_kick_is_dropped() -> None:
    """A peer that breaks RFC 37 by not answering PING cannot hold the other peers' messages
    for ever: after ``handshake_ivl`` its connection fails like a heartbeat timeout."""
    async with (
        zmtp.Socket(zmtp.ROUTER, linger=0, handshake_ivl=0.3) as router,
        router.monitor() as monitor,
    ):
        endpoint = await router.bind(bindable("tcp"))
        host, port = endpoint.removeprefix("tcp://").rsplit(":", 1)
        got: list[list[bytes]] = []

        async def serve() -> None:
            got.append(await steady_recv(router))

        peer = RawPeer(await anyio.connect_tcp(host, int(port)))
        try:
            await peer.handshake("DEALER", extra={"Identity": b"mute"})
            await wait_event(monitor, zmtp.HandshakeSucceeded)
            async with anyio.create_task_group() as tg:
                tg.start_soon(serve)
                await raw_steady_recv(peer, router)
                async with zmtp.Socket(zmtp.DEALER, linger=0, identity=b"other") as other:
                    await other.connect(endpoint)
                    await other.send(b"hello")
                    assert await peer.read_command() == (b"PING", b"\x00\x00")  # never answered
                    event = await wait_event(monitor, zmtp.Disconnected)
                    assert "no answer to PING" in event.reason
                    await until(lambda: bool(got))
            assert got == [[b"other", b"hello"]]
        finally:
            await peer.aclose()


@pytest.mark.parametrize("transport", ["tcp", "ipc"])
async def test_trio_lent_reads_read_the_raw_socket(
    transport: str, monkeypatch: pytest.MonkeyPatch, anyio_backend: str
) -> None:
    """On trio a lent read reads the connection's socket itself (``_recv_ready``, without
    anyio's and trio's socket layers) and waits with trio's own ``wait_readable`` on the fd
    (``_trio_wait_readable``, without anyio's), both when it has to wait and when the bytes
    are there already; asyncio keeps the stream's own receive. Nothing is lost or reordered
    either way."""
    if anyio_backend == "asyncio" and transport == "ipc":
        pytest.skip("asyncio never lends ipc reads (test_request_reply_reads_are_lent_...)")
    # The resting lease must not go back to the reader while the test waits for the bytes.
    monkeypatch.setattr(stream_module, "_LEASE_RECHECK", TIMEOUT)
    raw_reads: list[tuple[int, bool]] = []  # per raw read: its fd, whether it found bytes
    waits: list[object] = []  # what each trio wait was given
    original_read = stream_module._recv_ready
    original_wait = stream_module._trio_wait_readable

    def counted_read(sock: Any, size: int) -> bytes | None:
        data = original_read(sock, size)
        raw_reads.append((sock.fileno(), data is not None))
        return data

    def counted_wait() -> tuple[Callable[[int], Awaitable[None]], type[Exception]]:
        wait, closed = original_wait()

        async def waited(fd: int) -> None:
            waits.append(fd)
            await wait(fd)

        return waited, closed

    monkeypatch.setattr(stream_module, "_recv_ready", counted_read)
    monkeypatch.setattr(stream_module, "_trio_wait_readable", counted_wait)
    fds: list[int] = []
    async with linked(zmtp.PAIR, zmtp.PAIR, transport) as (bound, connecting):
        got: list[list[bytes]] = []

        async def receive() -> None:
            for _ in range(5):
                await connecting.send_multipart(await recv_within(connecting))
            got.append(await recv_within(connecting))  # a lent read that waits
            connection = connecting.engine.resting_lender
            assert connection is not None
            fd = stream_module._socket_fd(connection.stream)
            fds.append(fd)
            await until(lambda: stream_module._input_waiting(fd))
            got.append(await recv_within(connecting))  # a lent read that finds the bytes

        async with anyio.create_task_group() as tg:
            tg.start_soon(receive)
            await drive(bound, connecting)
            await bound.send(b"waited for")
            await until(lambda: len(got) == 1)
            await bound.send(b"already there")
        assert got == [[b"waited for"], [b"already there"]]
    if anyio_backend == "asyncio":
        assert raw_reads == [] and waits == []
        return
    # The connecting side's reads (both sockets lend theirs): the one that waited (nothing
    # there, then the bytes), then the one that found them.
    ours = [found for fd, found in raw_reads if fd == fds[0]]
    assert ours[-3:] == [False, True, True], raw_reads
    assert waits and all(type(fd) is int and fd >= 0 for fd in waits), waits


async def test_trio_closing_under_a_lent_wait_ends_the_connection(anyio_backend: str) -> None:
    """trio's own ``wait_readable`` (which a trio lent read waits with) raises trio's
    ``ClosedResourceError`` when the fd is closed under it (``notify_closing``): the lent read
    reports it as anyio's, so the connection ends as "connection closed" (as the stream's own
    receive said), the waiting recv keeps waiting, and it gets the next message once the
    connection is back."""
    if anyio_backend != "trio":
        pytest.skip("trio's wait_readable only")
    import trio

    async with linked(zmtp.PAIR, zmtp.PAIR) as (bound, connecting):
        got: list[list[bytes]] = []

        async def receive() -> None:
            got.append(await steady_recv(connecting))

        async with anyio.create_task_group() as tg:
            tg.start_soon(receive)
            await drive(bound, connecting)
            connection = connecting.engine.lent_connection
            assert connection is not None
            (old_peer,) = bound.peers
            trio.lowlevel.notify_closing(stream_module._socket_fd(connection.stream))
            await until(lambda: bool(connection.end_reason))
            assert (connection.end_reason, connection.end_kind) == ("connection closed", "io")
            # The bound side has dropped the old connection and has the new one.
            await until(lambda: len(bound.peers) == 1 and bound.peers[0] is not old_peer)
            with anyio.fail_after(TIMEOUT):
                await bound.send(b"after")
                await until(lambda: bool(got))
        assert got == [[b"after"]]
