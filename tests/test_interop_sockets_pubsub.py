"""PUB, SUB, XPUB, XSUB live against libzmq 4.3.5 (pyzmq): both directions, both roles, tcp and
ipc. Subscriptions take a moment to reach a publisher; tests wait for that on a message (a
probe published until it arrives, or the subscription seen on an XPUB), never on a delay."""

from __future__ import annotations

from typing import Any

import anyio
import pytest

import zmtp
from tests.test_sockets_pubsub import flood_past_a_slow_sub
from zmtp.testing import TIMEOUT, ours_briefly, ours_sender, probe_path, recv_within
from zmtp.testing.pyzmq_sockets import connect_ours, zmq_briefly, zmq_sender, zrecv, zsocket

zmq = pytest.importorskip("zmq")

pytestmark = [pytest.mark.anyio, pytest.mark.interop]

roles = pytest.mark.parametrize("ours_binds", [True, False], ids=["ours-binds", "ours-connects"])
transports = pytest.mark.parametrize("transport", ["tcp", "ipc"])


async def our_pub_until_libzmq_sub_receives(pub: zmtp.Socket, zsub: Any, probe: bytes) -> None:
    await probe_path(ours_sender(pub), zmq_briefly(zsub), probe)


async def libzmq_pub_until_our_sub_receives(zpub: Any, sub: zmtp.Socket, probe: bytes) -> None:
    await probe_path(zmq_sender(zpub), ours_briefly(sub), probe)


@transports
@roles
async def test_our_pub_libzmq_sub_topics_and_unsubscribe(transport: str, ours_binds: bool) -> None:
    with zsocket(zmq.SUB) as zsub:
        for topic in (b"a", b"b", b"probe"):
            zsub.subscribe(topic)
        async with zmtp.Socket(zmtp.PUB, linger=0) as pub:
            await connect_ours(pub, zsub, transport, ours_binds)
            await our_pub_until_libzmq_sub_receives(pub, zsub, b"probe")
            for topic in (b"a1", b"c1", b"b1", b"x", b"ab"):
                await pub.send_multipart([topic, b"body"])
            assert [await zrecv(zsub) for _ in range(3)] == [
                [b"a1", b"body"],
                [b"b1", b"body"],
                [b"ab", b"body"],
            ]
            zsub.unsubscribe(b"a")
            await our_pub_until_libzmq_sub_receives(pub, zsub, b"probe-2")
            await pub.send(b"a2")
            await pub.send(b"b2")
            assert await zrecv(zsub) == [b"b2"]


@transports
@roles
async def test_libzmq_pub_our_sub_topics_and_unsubscribe(transport: str, ours_binds: bool) -> None:
    with zsocket(zmq.PUB) as zpub:
        async with zmtp.Socket(zmtp.SUB, linger=0) as sub:
            for topic in (b"a", b"b", b"probe"):
                sub.subscribe(topic)
            await connect_ours(sub, zpub, transport, ours_binds)
            await libzmq_pub_until_our_sub_receives(zpub, sub, b"probe")
            for topic in (b"a1", b"c1", b"b1", b"x", b"ab"):
                zpub.send_multipart([topic, b"body"])
            assert [await recv_within(sub) for _ in range(3)] == [
                [b"a1", b"body"],
                [b"b1", b"body"],
                [b"ab", b"body"],
            ]
            sub.unsubscribe(b"a")  # our side filters at once, whatever libzmq still sends
            zpub.send(b"a2")
            zpub.send(b"b2")
            assert await recv_within(sub) == [b"b2"]


@transports
@roles
async def test_our_xpub_sees_libzmq_sub_subscriptions_and_sends_welcome(
    transport: str, ours_binds: bool
) -> None:
    with zsocket(zmq.SUB) as zsub:
        zsub.subscribe(b"WEL")
        async with zmtp.Socket(zmtp.XPUB, linger=0, xpub_welcome_msg=b"WELCOME!") as xpub:
            await connect_ours(xpub, zsub, transport, ours_binds)
            assert await zrecv(zsub) == [b"WELCOME!"]
            assert await recv_within(xpub) == [b"\x01WEL"]  # arrived as a SUBSCRIBE command
            zsub.subscribe(b"news")
            assert await recv_within(xpub) == [b"\x01news"]
            await xpub.send(b"sports")
            await xpub.send(b"news!")
            assert await zrecv(zsub) == [b"news!"]
            zsub.unsubscribe(b"news")
            assert await recv_within(xpub) == [b"\x00news"]


@transports
@roles
async def test_libzmq_xsub_raw_subscriptions_and_upstream_to_our_xpub(
    transport: str, ours_binds: bool
) -> None:
    with zsocket(zmq.XSUB) as zxsub:
        async with zmtp.Socket(zmtp.XPUB, linger=0) as xpub:
            await connect_ours(xpub, zxsub, transport, ours_binds)
            # A bound libzmq socket may not have attached our pipe yet (it sends nowhere
            # then): probe with upstream messages until they come through.
            await probe_path(zmq_sender(zxsub), ours_briefly(xpub), b"sync")
            zxsub.send(b"\x01topic")  # a data frame on the wire, even over ZMTP 3.1
            assert await recv_within(xpub) == [b"\x01topic"]
            zxsub.send_multipart([b"upstream", b"message"])
            assert await recv_within(xpub) == [b"upstream", b"message"]
            await xpub.send(b"other")
            await xpub.send(b"topic-1")
            assert await zrecv(zxsub) == [b"topic-1"]
            zxsub.send(b"\x00topic")
            assert await recv_within(xpub) == [b"\x00topic"]


@transports
@roles
async def test_our_xsub_with_libzmq_xpub_and_its_welcome(transport: str, ours_binds: bool) -> None:
    with zsocket(zmq.XPUB, xpub_welcome_msg=b"HELLO") as zxpub:
        async with zmtp.Socket(zmtp.XSUB, linger=0) as xsub:
            await connect_ours(xsub, zxpub, transport, ours_binds)
            await xsub.send(b"\x01abc")
            assert await zrecv(zxpub) == [b"\x01abc"]  # receiving also attaches a bound pipe
            assert await recv_within(xsub) == [b"HELLO"]  # XSUB does not filter the welcome
            xsub.subscribe(b"def")  # the command form, shown to the app the same way
            assert await zrecv(zxpub) == [b"\x01def"]
            zxpub.send(b"abc-1")
            zxpub.send(b"zzz")
            zxpub.send(b"def-1")
            assert await recv_within(xsub) == [b"abc-1"]
            assert await recv_within(xsub) == [b"def-1"]
            await xsub.send(b"\x00abc")
            assert await zrecv(zxpub) == [b"\x00abc"]


@transports
@roles
async def test_libzmq_xpub_welcome_reaches_our_sub(transport: str, ours_binds: bool) -> None:
    with zsocket(zmq.XPUB, xpub_welcome_msg=b"WELCOME!") as zxpub:
        async with zmtp.Socket(zmtp.SUB, linger=0) as sub:
            sub.subscribe(b"")
            await connect_ours(sub, zxpub, transport, ours_binds)
            assert await zrecv(zxpub) == [b"\x01"]  # touching the bound socket attaches us
            assert await recv_within(sub) == [b"WELCOME!"]


@transports
async def test_our_sub_resubscribes_after_the_libzmq_publisher_restarts(transport: str) -> None:
    async with zmtp.Socket(zmtp.SUB, linger=0, reconnect_ivl=0.02) as sub:
        sub.subscribe(b"t1")
        sub.subscribe(b"t2")
        with zsocket(zmq.XPUB) as zxpub:
            endpoint = await connect_ours(sub, zxpub, transport, ours_binds=False)
            assert sorted([(await zrecv(zxpub))[0] for _ in range(2)]) == [b"\x01t1", b"\x01t2"]
            zxpub.send(b"t1-before")
            assert await recv_within(sub) == [b"t1-before"]
        with zsocket(zmq.XPUB) as zxpub2:
            await zbind_again(zxpub2, endpoint)
            assert sorted([(await zrecv(zxpub2))[0] for _ in range(2)]) == [b"\x01t1", b"\x01t2"]
            zxpub2.send(b"t2-after")
            assert await recv_within(sub) == [b"t2-after"]


@transports
async def test_libzmq_sub_resubscribes_after_our_publisher_restarts(transport: str) -> None:
    with zsocket(zmq.SUB, reconnect_ivl=20) as zsub:
        zsub.subscribe(b"t")
        async with zmtp.Socket(zmtp.XPUB, linger=0) as xpub:
            endpoint = await connect_ours(xpub, zsub, transport, ours_binds=True)
            assert await recv_within(xpub) == [b"\x01t"]
        async with zmtp.Socket(zmtp.XPUB, linger=0) as xpub2:
            await xpub2.bind(endpoint)
            # libzmq re-sends its subscriptions only once the application thread handles the
            # reconnection (docs/libzmq-notes.md#bound-libzmq-sockets-attach-peers-lazily): keep
            # touching the SUB while waiting.
            with anyio.fail_after(TIMEOUT):
                while True:
                    zsub.getsockopt(zmq.EVENTS)
                    with anyio.move_on_after(0.01):
                        assert await xpub2.recv_multipart() == [b"\x01t"]
                        break
            await xpub2.send(b"t-after")
            assert await zrecv(zsub) == [b"t-after"]


@transports
async def test_a_slow_libzmq_sub_does_not_block_our_pub(transport: str) -> None:
    with zsocket(zmq.SUB, rcvhwm=5) as zslow:
        zslow.subscribe(b"")
        async with (
            zmtp.Socket(zmtp.PUB, linger=0, send_hwm=5) as pub,
            zmtp.Socket(zmtp.SUB, linger=0) as fast,
        ):
            endpoint = await connect_ours(pub, zslow, transport, ours_binds=True)
            await our_pub_until_libzmq_sub_receives(pub, zslow, b"probe")
            fast.subscribe(b"")
            await fast.connect(endpoint)
            await probe_path(ours_sender(pub), ours_briefly(fast))
            received = await flood_past_a_slow_sub(pub, fast)  # the libzmq SUB reads nothing
            slow_count = 0
            while await anyio.to_thread.run_sync(lambda: zslow.poll(100)):
                zslow.recv()
                slow_count += 1
            assert slow_count < 300  # the slow subscriber lost messages at its HWM...
            assert received[-1] == b"last"  # ...and only it: the PUB never blocked


async def test_libzmq_sub_subscribing_to_255_byte_topics_over_3_1() -> None:
    """The LONG-flag SUBSCRIBE (246-255 byte topics) that 4.3.5's v3.1 encoder got right."""
    topic = b"T" * 255
    with zsocket(zmq.SUB) as zsub:
        zsub.subscribe(topic)
        async with zmtp.Socket(zmtp.XPUB, linger=0) as xpub:
            await connect_ours(xpub, zsub, "tcp", ours_binds=True)
            assert await recv_within(xpub) == [b"\x01" + topic]
            await xpub.send(topic + b"!")
            assert await zrecv(zsub) == [topic + b"!"]


async def zbind_again(sock: Any, endpoint: str) -> None:
    """Bind where a just-closed libzmq socket was: its close finishes in libzmq's I/O thread,
    so the address can be busy for a moment; retry until it is free (bounded)."""
    with anyio.fail_after(TIMEOUT):
        while True:
            try:
                sock.bind(endpoint)
                return
            except zmq.ZMQError as exc:
                if exc.errno != zmq.EADDRINUSE:
                    raise
            await anyio.sleep(0.01)
