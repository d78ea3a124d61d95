"""``dead_letter_timeout`` also covers messages that no peer ever took (decided in
docs/qos.md, "When no peer takes a message"): a message queued on a ``connect()`` pipe that
never connects, or (level 1) failed over while nobody is connected, is dead-lettered
``peer_timeout`` with no peer named, instead of a receipt that never resolves. The same for a
QoS REQ's request: its ``recv`` raises ``DeadLetterError``."""

from __future__ import annotations

import os
import tempfile

import anyio
import pytest

import zmtp
import zmtp_qos
from tests.test_qos_captures import _port, _read_until
from tests.test_qos_reconnect import _raw_peer
from zmtp_qos import DeadLetter, DeadLetterError, Delivered, QoSConfig
from zmtp_qos.events import QoSDeadLettered, QoSFailedOver

pytestmark = pytest.mark.anyio

TIMEOUT = 0.4
CONFIG = QoSConfig(dead_letter_timeout=TIMEOUT)


def _nowhere(transport: str) -> str:
    """An endpoint nobody listens on yet (ipc/inproc: a fresh name)."""
    tag = os.urandom(6).hex()
    if transport == "ipc":
        return f"ipc://{tempfile.gettempdir()}/zmtp-qos-nopeer-{tag}.sock"
    return f"inproc://qos-nopeer-{tag}"


@pytest.mark.parametrize("transport", ["ipc", "inproc"])
@pytest.mark.parametrize("level", [1, 2, 3])
async def test_a_message_no_peer_took_is_dead_lettered_and_never_sent(
    level: int, transport: str
) -> None:
    endpoint = _nowhere(transport)
    with anyio.fail_after(20):
        async with zmtp_qos.Socket(zmtp.PUSH, qos=level, config=CONFIG, linger=0) as push:
            events = push.monitor()
            await push.connect(endpoint)
            start = anyio.current_time()
            receipt = await push.send(b"nobody")  # queued on the connect() pipe
            assert receipt is not None
            letter = await receipt
            assert anyio.current_time() - start >= TIMEOUT
            assert isinstance(letter, DeadLetter)
            assert (letter.reason, letter.peer, letter.parts) == ("peer_timeout", "", [b"nobody"])
            event = await events.wait_for(QoSDeadLettered)
            assert isinstance(event, QoSDeadLettered) and event.reason == "peer_timeout"
            assert push.stats().in_flight == 0 and push.stats().dead_lettered == 1
            # A peer that comes later gets the new messages only: the dead letter stays dead.
            async with zmtp_qos.Socket(zmtp.PULL, qos=level) as pull:
                await pull.bind(endpoint)
                fresh = await push.send(b"fresh")
                if level == 3:
                    handle = await pull.recv_handle()
                    assert handle.parts == [b"fresh"]
                    handle.complete()
                else:
                    assert await pull.recv() == b"fresh"
                assert isinstance(await fresh, Delivered)  # type: ignore[misc]


async def test_over_tcp_with_no_listener() -> None:
    listener = await anyio.create_tcp_listener(local_host="127.0.0.1")
    port = listener.extra(anyio.abc.SocketAttribute.local_port)  # type: ignore[attr-defined]
    await listener.aclose()  # nobody listens there now
    with anyio.fail_after(20):
        async with zmtp_qos.Socket(zmtp.PUSH, qos=2, config=CONFIG, linger=0) as push:
            await push.connect(f"tcp://127.0.0.1:{port}")
            letter = await push.send(b"nobody")  # type: ignore[misc]
            letter = await letter  # type: ignore[misc]
            assert isinstance(letter, DeadLetter) and letter.reason == "peer_timeout"


async def test_a_message_waiting_less_than_the_timeout_is_still_delivered() -> None:
    endpoint = _nowhere("inproc")
    config = QoSConfig(dead_letter_timeout=30)
    with anyio.fail_after(20):
        async with zmtp_qos.Socket(zmtp.PUSH, qos=2, config=config, linger=0) as push:
            await push.connect(endpoint)
            receipt = await push.send(b"patient")
            async with zmtp_qos.Socket(zmtp.PULL, qos=2) as pull:
                await pull.bind(endpoint)
                assert await pull.recv() == b"patient"
                assert isinstance(await receipt, Delivered)  # type: ignore[misc]


async def test_level1_failed_over_with_nobody_connected_is_dead_lettered() -> None:
    with anyio.fail_after(20):
        async with zmtp_qos.Socket(zmtp.PUSH, qos=1, config=CONFIG, linger=0) as push:
            events = push.monitor()
            ep = await push.bind("tcp://127.0.0.1:*")
            raw = await _raw_peer(_port(ep), b"PULL", b"", 1)  # reads, never ACKs
            await events.wait_for(zmtp.HandshakeSucceeded)
            receipts = [await push.send(b"m%d" % i) for i in range(3)]
            buf = bytearray()
            await _read_until(raw, buf, 1 + 3)
            await raw.aclose()
            failed_over = await events.wait_for(QoSFailedOver)  # to nobody: held
            assert isinstance(failed_over, QoSFailedOver) and failed_over.count == 3
            for receipt in receipts:
                letter = await receipt  # type: ignore[misc]
                assert isinstance(letter, DeadLetter)
                assert (letter.reason, letter.peer) == ("peer_timeout", "")
            assert push.stats().in_flight == 0


@pytest.mark.parametrize("level", [1, 2, 3])
async def test_req_whose_request_no_rep_took_raises_dead_letter_error(level: int) -> None:
    endpoint = _nowhere("inproc")
    with anyio.fail_after(20):
        async with zmtp_qos.Socket(zmtp.REQ, qos=level, config=CONFIG, linger=0) as req:
            await req.connect(endpoint)
            await req.send(b"anyone?")
            with pytest.raises(DeadLetterError) as caught:
                await req.recv()
            letter = caught.value.letter
            assert (letter.reason, letter.peer, letter.parts[-1]) == (
                "peer_timeout",
                "",
                b"anyone?",
            )
            assert req.stats().dead_lettered == 1
            # REQ is ready again; a REP that comes now gets the new request, not the old one.
            async with zmtp_qos.Socket(zmtp.REP, qos=level) as rep:
                await rep.bind(endpoint)
                await req.send(b"second")
                got = await rep.recv()
                if level == 3:
                    assert got.parts == [b"second"]
                    async with got:
                        await rep.send(b"answer")
                else:
                    assert got == b"second"
                    await rep.send(b"answer")
                assert await req.recv() == b"answer"


async def test_level1_req_whose_rep_went_with_no_other_raises_dead_letter_error() -> None:
    with anyio.fail_after(20):
        async with zmtp_qos.Socket(zmtp.REQ, qos=1, config=CONFIG, linger=0) as req:
            ep = await req.bind("tcp://127.0.0.1:*")
            async with zmtp_qos.Socket(zmtp.REP, qos=1, linger=0) as rep:
                await rep.connect(ep)
                await req.send(b"job")
                assert await rep.recv() == b"job"
            with pytest.raises(DeadLetterError) as caught:
                await req.recv()
            assert caught.value.letter.reason == "peer_timeout"


async def test_dead_letter_streams_listen_from_creation_and_each_sees_every_letter(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """``sock.dead_letters()`` listens from the call, not from the first ``__anext__`` (it
    was an async generator: a letter before the first read was missed and logged)."""
    with anyio.fail_after(20):
        async with zmtp_qos.Socket(zmtp.PUSH, qos=2, config=CONFIG, linger=0) as push:
            first, second = push.dead_letters(), push.dead_letters()
            await push.connect(_nowhere("inproc"))
            receipts = [await push.send(b"a"), await push.send(b"b")]
            for receipt in receipts:
                await receipt  # type: ignore[misc]
            for stream in (first, second):  # read only now: nothing was missed
                assert [(await stream.__anext__()).parts for _ in range(2)] == [[b"a"], [b"b"]]
            async with second:
                pass  # closed
            with caplog.at_level("WARNING", logger="zmtp_qos"):
                await push.send(b"c")
                assert (await first.__anext__()).parts == [b"c"]
                await first.aclose()
                with pytest.raises(StopAsyncIteration):
                    await second.__anext__()
                await push.send(b"d")  # nobody awaits it, no stream open: logged
                while not [r for r in caplog.records if r.name == "zmtp_qos"]:
                    await anyio.sleep(0.05)


async def test_a_dead_letter_stream_ends_when_the_socket_closes() -> None:
    """``async for`` over the stream finishes at close, after the letters of the close."""
    got: list[str] = []
    with anyio.fail_after(20):
        async with anyio.create_task_group() as tg:
            push = zmtp_qos.Socket(zmtp.PUSH, qos=2, config=CONFIG, linger=0)
            async with push:
                letters = push.dead_letters()

                async def read_all() -> None:
                    async for letter in letters:
                        got.append(letter.reason)

                tg.start_soon(read_all)
                await push.connect(_nowhere("inproc"))
                await push.send(b"dropped at close")  # linger=0: socket_closed at once
            # read_all() returns by itself: the task group exits without cancelling it
    assert got == ["socket_closed"]


# ------------------------------------------------- disconnect() of an endpoint with queued messages


@pytest.mark.parametrize("level", [1, 2, 3])
async def test_messages_queued_for_a_disconnected_endpoint_go_to_the_live_peer(level: int) -> None:
    """Regression: ``disconnect()`` of an endpoint dropped the messages queued on its pipe, but
    their receipts stayed pending (holding their ``send_hwm`` slots) until close. Never
    written to any peer, they are pinned to none: they go to a peer that is connected."""
    nowhere = _nowhere("inproc")
    with anyio.fail_after(20):
        async with (
            zmtp_qos.Socket(zmtp.PULL, qos=level) as pull,
            zmtp_qos.Socket(zmtp.PUSH, qos=level, config=CONFIG, linger=0) as push,
        ):
            live = await pull.bind(f"inproc://qos-live-{os.urandom(6).hex()}")
            events = push.monitor()
            await push.connect(nowhere)  # never connects: round robin still queues there
            await push.connect(live)
            await events.wait_for(zmtp.HandshakeSucceeded)
            receipts = [await push.send(b"m%d" % i) for i in range(6)]
            await push.disconnect(nowhere)
            got = []
            for _ in range(6):
                if level == 3:
                    handle = await pull.recv_handle()
                    got.append(handle.parts[0])
                    handle.complete()
                else:
                    got.append(await pull.recv())
            assert sorted(got) == [b"m%d" % i for i in range(6)]
            for receipt in receipts:
                assert isinstance(await receipt, Delivered)  # type: ignore[misc]
            assert push.stats().in_flight == 0


@pytest.mark.parametrize("level", [1, 2, 3])
async def test_messages_queued_for_a_disconnected_endpoint_with_no_peer_are_dead_lettered(
    level: int,
) -> None:
    """The same with no other peer: they wait for one as any unplaced message does, and are
    dead-lettered ``peer_timeout`` after ``dead_letter_timeout``."""
    nowhere = _nowhere("inproc")
    with anyio.fail_after(20):
        async with zmtp_qos.Socket(zmtp.PUSH, qos=level, config=CONFIG, linger=0) as push:
            await push.connect(nowhere)
            receipts = [await push.send(b"m%d" % i) for i in range(3)]
            await push.disconnect(nowhere)
            for receipt in receipts:
                letter = await receipt  # type: ignore[misc]
                assert isinstance(letter, DeadLetter) and letter.reason == "peer_timeout"
            assert push.stats().in_flight == 0


# ------------------------------------------------------- what is left at the linger deadline

CLOSE_REASON = {1: "dropped_at_close", 2: "socket_closed", 3: "socket_closed"}


@pytest.mark.parametrize("linger", [0, 0.3])
@pytest.mark.parametrize("level", [1, 2, 3])
async def test_at_the_linger_deadline_a_message_on_no_connection_names_no_peer(
    level: int, linger: float
) -> None:
    """Regression: a message queued on a ``connect()`` pipe that never connected was
    dead-lettered at close naming the peer ``"-"`` (the printable form of "no anchor"), and,
    with a linger, twice: the pipe's teardown after the linger deadline made a new entry for
    the message still queued there and dead-lettered that one too (``dead_lettered == 2``, a
    second letter on the stream)."""
    with anyio.fail_after(20):
        push = zmtp_qos.Socket(zmtp.PUSH, qos=level, config=CONFIG, linger=linger)
        async with push:
            letters = push.dead_letters()
            events = push.monitor()
            await push.connect(_nowhere("inproc"))
            receipt = await push.send(b"nobody")
        letter = await receipt  # type: ignore[misc]
        assert isinstance(letter, DeadLetter)
        assert (letter.reason, letter.peer, letter.parts) == (CLOSE_REASON[level], "", [b"nobody"])
        if linger:  # dead-lettered within the close, before the monitor stops
            event = await events.wait_for(QoSDeadLettered)
            assert isinstance(event, QoSDeadLettered) and event.peer == ""
        assert [seen.parts async for seen in letters] == [[b"nobody"]]  # one letter, once
        assert push.stats().dead_lettered == 1 and push.stats().in_flight == 0


async def test_at_the_linger_deadline_level1_names_the_peer_it_was_written_to() -> None:
    """Level 1 has no anchor: the letter of a message written and never ACKed names the
    peer's address (as its ``Delivered`` would), not ``"-"``."""
    with anyio.fail_after(20):
        push = zmtp_qos.Socket(zmtp.PUSH, qos=1, config=CONFIG, linger=0.3)
        async with push:
            events = push.monitor()
            ep = await push.bind("tcp://127.0.0.1:*")
            raw = await _raw_peer(_port(ep), b"PULL", b"", 1)  # reads, never ACKs
            handshake = await events.wait_for(zmtp.HandshakeSucceeded)
            assert isinstance(handshake, zmtp.HandshakeSucceeded)
            receipt = await push.send(b"unanswered")
            await _read_until(raw, bytearray(), 1 + 1)  # READY, then the message
        await raw.aclose()
        letter = await receipt  # type: ignore[misc]
        assert isinstance(letter, DeadLetter)
        assert letter.reason == "dropped_at_close"
        assert letter.peer == handshake.peer.address != ""
        assert push.stats().dead_lettered == 1


async def test_at_the_linger_deadline_level1_failed_over_to_nobody_names_no_peer() -> None:
    """Failed over with nobody connected, the message is on no connection: ``""``, as its
    ``peer_timeout`` letter would say (the linger ends before ``dead_letter_timeout``)."""
    config = QoSConfig(dead_letter_timeout=30)
    with anyio.fail_after(20):
        push = zmtp_qos.Socket(zmtp.PUSH, qos=1, config=config, linger=0.3)
        async with push:
            events = push.monitor()
            ep = await push.bind("tcp://127.0.0.1:*")
            raw = await _raw_peer(_port(ep), b"PULL", b"", 1)
            await events.wait_for(zmtp.HandshakeSucceeded)
            receipt = await push.send(b"orphan")
            await _read_until(raw, bytearray(), 1 + 1)
            await raw.aclose()
            await events.wait_for(QoSFailedOver)
        letter = await receipt  # type: ignore[misc]
        assert isinstance(letter, DeadLetter)
        assert (letter.reason, letter.peer) == ("dropped_at_close", "")
        assert push.stats().dead_lettered == 1
