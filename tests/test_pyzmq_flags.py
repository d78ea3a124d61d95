"""pyzmq's send/recv flags on the async socket (docs/from-pyzmq.md, "send and recv flags").

``zmtp.NOBLOCK`` (``DONTWAIT``) raises ``TimedOut``, zmtp's ``zmq.Again``, where the call
would wait; ``zmtp.SNDMORE`` holds parts for the next send without it, which sends them all
as one message; ``copy`` and ``track`` are accepted and change nothing; anything else is
refused with what to write instead. Every wait is bounded (``fail_after``).
"""

from __future__ import annotations

import os

import anyio
import pytest

import zmtp
import zmtp_qos

pytestmark = pytest.mark.anyio


def _endpoint() -> str:
    return f"inproc://pyzmq-flags-{os.urandom(6).hex()}"


def test_flag_values_are_pyzmqs() -> None:
    zmq = pytest.importorskip("zmq")
    assert zmtp.NOBLOCK == zmtp.DONTWAIT == zmq.NOBLOCK == zmq.DONTWAIT == 1
    assert zmtp.SNDMORE == zmq.SNDMORE == 2


async def test_noblock_send_without_a_peer_raises_timed_out() -> None:
    async with zmtp.Socket(zmtp.PUSH) as push:
        await push.bind(_endpoint())
        with anyio.fail_after(5):
            with pytest.raises(zmtp.TimedOut, match="NOBLOCK"):
                await push.send(b"x", zmtp.NOBLOCK)
            with pytest.raises(TimeoutError):
                await push.send(b"x", flags=zmtp.DONTWAIT)
            with pytest.raises(zmtp.TimedOut):
                await push.send_multipart([b"a", b"b"], zmtp.NOBLOCK)


async def test_noblock_send_with_room_sends_and_keeps_order() -> None:
    endpoint = _endpoint()
    async with zmtp.Socket(zmtp.PULL) as pull, zmtp.Socket(zmtp.PUSH) as push:
        await pull.bind(endpoint)
        await push.connect(endpoint)
        with anyio.fail_after(5):
            await push.send(b"plain")
            await push.send(b"one", zmtp.NOBLOCK)
            await push.send_multipart([b"two", "parts"], flags=zmtp.NOBLOCK)
            await push.send(b"zero", 0)  # flags=0 spelled out: a plain send
            assert await pull.recv() == b"plain"
            assert await pull.recv() == b"one"
            assert await pull.recv_multipart() == [b"two", b"parts"]
            assert await pull.recv() == b"zero"


async def test_noblock_send_at_the_hwm_raises_and_drops_nothing_queued() -> None:
    """A PUSH whose only pipe is full (send_hwm 1, inproc, nobody reading): NOBLOCK raises
    TimedOut; the queued messages still arrive, and a NOBLOCK retry succeeds once there is
    room."""
    endpoint = _endpoint()
    async with (
        zmtp.Socket(zmtp.PULL, recv_hwm=1) as pull,
        zmtp.Socket(zmtp.PUSH, send_hwm=1) as push,
    ):
        await pull.bind(endpoint)
        await push.connect(endpoint)
        sent = []
        with anyio.fail_after(5):
            for i in range(100):
                try:
                    await push.send(b"%d" % i, zmtp.NOBLOCK)
                except zmtp.TimedOut:
                    break
                sent.append(b"%d" % i)
            else:
                pytest.fail("a 1-message HWM took 100 messages")
            assert sent
            for data in sent:
                assert await pull.recv() == data
            while True:  # room again: the retry goes
                try:
                    await push.send(b"retry", zmtp.NOBLOCK)
                    break
                except zmtp.TimedOut:
                    pass
            assert await pull.recv() == b"retry"


async def test_sndmore_parts_go_as_one_message() -> None:
    endpoint = _endpoint()
    async with zmtp.Socket(zmtp.PULL) as pull, zmtp.Socket(zmtp.PUSH) as push:
        await pull.bind(endpoint)
        await push.connect(endpoint)
        with anyio.fail_after(5):
            await push.send(b"a", zmtp.SNDMORE)
            await push.send_multipart([b"b", "c"], zmtp.SNDMORE)
            await push.send_string("d", zmtp.SNDMORE)
            await push.send(b"e")
            await push.send(b"f", zmtp.SNDMORE)
            await push.send_multipart([b"g", b"h"])
            await push.send(b"i", zmtp.SNDMORE | zmtp.NOBLOCK)
            await push.send(b"j", zmtp.NOBLOCK)
            await push.send(b"k", zmtp.SNDMORE)
            await push.send_prepared([b"l"])
            await push.send(b"alone")
            assert await pull.recv_multipart() == [b"a", b"b", b"c", b"d", b"e"]
            assert await pull.recv_multipart() == [b"f", b"g", b"h"]
            assert await pull.recv_multipart() == [b"i", b"j"]
            assert await pull.recv_multipart() == [b"k", b"l"]
            assert await pull.recv_multipart() == [b"alone"]


async def test_sndmore_parts_are_dropped_with_a_message_that_fails() -> None:
    """As pyzmq's Again leaves no part behind: a NOBLOCK last part that cannot go drops the
    held parts too, so a retry of the whole message sends it once."""
    endpoint = _endpoint()
    async with zmtp.Socket(zmtp.PUSH) as push:
        await push.bind(endpoint)
        with anyio.fail_after(5):
            await push.send(b"head", zmtp.SNDMORE)
            with pytest.raises(zmtp.TimedOut):
                await push.send(b"tail", zmtp.NOBLOCK)
            async with zmtp.Socket(zmtp.PULL) as pull:
                await pull.connect(endpoint)
                await push.send(b"head", zmtp.SNDMORE)
                await push.send(b"tail")
                assert await pull.recv_multipart() == [b"head", b"tail"]


async def test_sndmore_on_router_and_dealer() -> None:
    """The pyzmq ROUTER idiom: identity, delimiter and body sent part by part."""
    endpoint = _endpoint()
    async with (
        zmtp.Socket(zmtp.ROUTER) as router,
        zmtp.Socket(zmtp.DEALER, identity=b"worker") as dealer,
    ):
        await router.bind(endpoint)
        await dealer.connect(endpoint)
        with anyio.fail_after(5):
            await dealer.send(b"", zmtp.SNDMORE)
            await dealer.send(b"hello")
            identity, empty, body = await router.recv_multipart()
            assert (identity, empty, body) == (b"worker", b"", b"hello")
            await router.send(identity, zmtp.SNDMORE)
            await router.send(b"", zmtp.SNDMORE)
            await router.send(b"welcome")
            assert await dealer.recv_multipart() == [b"", b"welcome"]


async def test_sndmore_on_req_is_checked_at_the_first_part() -> None:
    endpoint = _endpoint()
    async with zmtp.Socket(zmtp.REP) as rep, zmtp.Socket(zmtp.REQ) as req:
        await rep.bind(endpoint)
        await req.connect(endpoint)
        with anyio.fail_after(5):
            await req.send(b"q1", zmtp.SNDMORE)
            await req.send(b"q2")
            with pytest.raises(zmtp.InvalidState):
                await req.send(b"again", zmtp.SNDMORE)  # out of turn: refused at once
            assert await rep.recv_multipart() == [b"q1", b"q2"]
            with pytest.raises(zmtp.InvalidArgument, match="only pyzmq's NOBLOCK"):
                await rep.recv(zmtp.SNDMORE)
            await rep.send(b"r1", zmtp.SNDMORE)
            await rep.send(b"r2")
            assert await req.recv_multipart() == [b"r1", b"r2"]


async def test_rep_sndmore_without_a_request_is_refused() -> None:
    async with zmtp.Socket(zmtp.REP) as rep:
        await rep.bind(_endpoint())
        with pytest.raises(zmtp.InvalidState):
            await rep.send(b"x", zmtp.SNDMORE)


async def test_noblock_recv() -> None:
    endpoint = _endpoint()
    async with zmtp.Socket(zmtp.PULL) as pull, zmtp.Socket(zmtp.PUSH) as push:
        await pull.bind(endpoint)
        await push.connect(endpoint)
        with anyio.fail_after(5):
            with pytest.raises(zmtp.TimedOut, match="NOBLOCK"):
                await pull.recv(zmtp.NOBLOCK)
            with pytest.raises(zmtp.TimedOut):
                await pull.recv_multipart(flags=zmtp.DONTWAIT)
            await push.send(b"one")
            await push.send_multipart([b"two", b"parts"])
            await push.send_json({"three": 3})
            received = []
            while len(received) < 3:  # a polling loop: NOBLOCK lets the connections run
                try:
                    if not received:
                        received.append(await pull.recv(zmtp.NOBLOCK))
                    elif len(received) == 1:
                        received.append(await pull.recv_multipart(zmtp.NOBLOCK))
                    else:
                        received.append(await pull.recv_json(zmtp.NOBLOCK))
                except zmtp.TimedOut:
                    pass
            assert received == [b"one", [b"two", b"parts"], {"three": 3}]


async def test_noblock_recv_refusals() -> None:
    async with zmtp.Socket(zmtp.PUSH) as push, zmtp.Socket(zmtp.REQ) as req:
        with pytest.raises(zmtp.UnsupportedOperation):
            await push.recv(zmtp.NOBLOCK)
        await req.connect(_endpoint())
        with pytest.raises(zmtp.ZMTPError):
            await req.recv(zmtp.NOBLOCK)  # no request out: REQ's own refusal, not TimedOut
    with pytest.raises(zmtp.SocketClosed):
        await push.recv(zmtp.NOBLOCK)
    with pytest.raises(zmtp.SocketClosed):
        await push.send(b"x", zmtp.NOBLOCK)
    with pytest.raises(zmtp.SocketClosed):
        await zmtp.Socket(zmtp.PULL).recv(zmtp.NOBLOCK)  # never opened


async def test_copy_and_track_change_nothing() -> None:
    endpoint = _endpoint()
    async with zmtp.Socket(zmtp.PULL) as pull, zmtp.Socket(zmtp.PUSH) as push:
        await pull.bind(endpoint)
        await push.connect(endpoint)
        with anyio.fail_after(5):
            assert await push.send(bytearray(b"buf"), copy=False, track=True) is None
            await push.send_multipart([memoryview(b"mv")], copy=False)
            assert await pull.recv(copy=False) == b"buf"
            assert await pull.recv_multipart(copy=False, track=True) == [b"mv"]


@pytest.mark.parametrize("flags", [4, -1, 1 << 8])
async def test_unknown_flags_are_refused(flags: int) -> None:
    async with zmtp.Socket(zmtp.PUSH) as push, zmtp.Socket(zmtp.PULL) as pull:
        with pytest.raises(zmtp.InvalidArgument, match="NOBLOCK"):
            await push.send(b"x", flags)
        with pytest.raises(zmtp.InvalidArgument, match="NOBLOCK"):
            await pull.recv(flags | zmtp.SNDMORE)


async def test_encoding_in_flags_place_says_it_is_a_keyword() -> None:
    async with zmtp.Socket(zmtp.PUSH) as push, zmtp.Socket(zmtp.PULL) as pull:
        with pytest.raises(zmtp.WrongType, match="encoding=") as info:
            await push.send_string("x", "latin-1")  # type: ignore[arg-type]
        assert isinstance(info.value, TypeError)
        with pytest.raises(zmtp.WrongType, match="encoding="):
            await pull.recv_string("latin-1")  # type: ignore[arg-type]


async def test_serializers_take_flags_in_pyzmqs_order() -> None:
    endpoint = _endpoint()
    async with zmtp.Socket(zmtp.PULL) as pull, zmtp.Socket(zmtp.PUSH) as push:
        await pull.bind(endpoint)
        await push.connect(endpoint)
        with anyio.fail_after(5):
            await push.send_pyobj({"p": 1}, zmtp.SNDMORE, protocol=2)
            await push.send_json([1], zmtp.SNDMORE)
            await push.send_string("é", zmtp.SNDMORE, encoding="latin-1")
            await push.send_serialized("s", lambda o: [o.encode()])
            assert len(await pull.recv_multipart()) == 4
            await push.send_pyobj((1, 2), zmtp.NOBLOCK)
            await push.send_string("é", zmtp.NOBLOCK, encoding="latin-1")
            await push.send_serialized(7, lambda o: [b"%d" % o], zmtp.NOBLOCK)
            assert await pull.recv_pyobj(0) == (1, 2)
            assert await pull.recv_string(0, encoding="latin-1") == "é"
            assert await pull.recv_serialized(lambda parts: int(parts[0]), 0) == 7


async def test_qos_socket_takes_flags_where_zmtps_methods_serve() -> None:
    """Level 0 hands out the zmtp socket's own methods: every flag works. A tracking level
    refuses non-zero flags, saying what to write instead; 0 is a plain call."""
    endpoint, plain_endpoint = _endpoint(), _endpoint()
    async with (
        zmtp_qos.Socket(zmtp.PULL, qos=1) as pull,
        zmtp_qos.Socket(zmtp.PUSH, qos=1) as push,
        zmtp_qos.Socket(zmtp.PULL) as plain_pull,
        zmtp_qos.Socket(zmtp.PUSH) as plain,
    ):
        await pull.bind(endpoint)
        await push.connect(endpoint)
        await plain_pull.bind(plain_endpoint)
        await plain.connect(plain_endpoint)
        with anyio.fail_after(5):
            await plain.send(b"a", zmtp.SNDMORE)
            await plain.send(b"b")
            assert await plain_pull.recv_multipart() == [b"a", b"b"]
            with pytest.raises(zmtp.TimedOut):
                await plain_pull.recv(zmtp.NOBLOCK)
            with pytest.raises(zmtp.UnsupportedOperation, match="send_multipart"):
                await push.send(b"x", zmtp.SNDMORE)
            with pytest.raises(zmtp.UnsupportedOperation, match="send_timeout=0"):
                await push.send_multipart([b"x"], zmtp.NOBLOCK)
            with pytest.raises(zmtp.InvalidArgument):
                await push.send(b"x", 4)
            receipt = await push.send(b"tracked", 0)
            assert await pull.recv() == b"tracked"
            assert receipt is not None


async def test_pyzmq_socket_type_constants_are_accepted() -> None:
    """zmq.PUSH (libzmq's number, an int enum in pyzmq) left in ported code makes the zmtp
    socket it names, plain or QoS; a libzmq type zmtp lacks (STREAM) is still refused."""
    zmq = pytest.importorskip("zmq")
    endpoint = _endpoint()
    async with (
        zmtp_qos.Socket(zmq.PULL, qos=1) as pull,
        zmtp_qos.Socket(zmq.PUSH, qos=1) as push,
    ):
        assert (pull.raw.socket_type, push.raw.socket_type) == ("PULL", "PUSH")
        await pull.bind(endpoint)
        await push.connect(endpoint)
        with anyio.fail_after(5):
            await push.send(b"typed by pyzmq")
            assert await pull.recv() == b"typed by pyzmq"
    assert zmtp.Socket(8).socket_type == "PUSH"
    with pytest.raises(zmtp.InvalidArgument):
        zmtp.Socket(zmq.STREAM)
    with pytest.raises(zmtp.InvalidArgument):
        zmtp.Socket(True)  # type: ignore[arg-type]


async def test_a_finished_sndmore_message_leaves_the_plain_path_as_it_was(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Holding parts routes the next send through the send-check slot; once the message has
    gone, a type without a send check (PUSH) skips ``check_send`` again on every path (200
    sends, past the cancel cadence), and one with a check (REQ) still runs it."""
    endpoint = _endpoint()
    async with zmtp.Socket(zmtp.PULL) as pull, zmtp.Socket(zmtp.PUSH) as push:
        await pull.bind(endpoint)
        await push.connect(endpoint)
        with anyio.fail_after(10):
            await push.send(b"head", zmtp.SNDMORE)
            await push.send(b"tail")
            assert await pull.recv_multipart() == [b"head", b"tail"]

            def refuse(parts: list[bytes]) -> None:
                raise AssertionError("check_send ran for PUSH after its SNDMORE message")

            monkeypatch.setattr(push.engine.strategy, "check_send", refuse)
            sent = 0
            for i in range(200):
                await push.send(b"%d" % i)
                await push.send_multipart([b"m%d" % i])
                sent += 2 + push.try_send_prepared([b"p%d" % i])  # declines at the cadence
            for _ in range(sent):
                await pull.recv()
    endpoint = _endpoint()
    async with zmtp.Socket(zmtp.REP) as rep, zmtp.Socket(zmtp.REQ) as req:
        await rep.bind(endpoint)
        await req.connect(endpoint)
        with anyio.fail_after(5):
            await req.send(b"a", zmtp.SNDMORE)
            await req.send(b"b")
            with pytest.raises(zmtp.InvalidState):
                await req.send(b"second request")  # the check runs again, plain path
            assert await rep.recv_multipart() == [b"a", b"b"]
