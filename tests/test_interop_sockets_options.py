"""probe_router, router_notify, connect_routing_id, invert_matching, xpub_manual_last_value and
conflate live against libzmq 4.3.5 (pyzmq), in both directions where libzmq has the option.

pyzmq wheels are built without DRAFT, so ZMQ_ROUTER_NOTIFY cannot be set on a libzmq socket:
only our ROUTER's notifications are checked, with libzmq peers. Blocking pyzmq calls run in
worker threads with 5 s timeouts; nothing waits on a delay.
"""

from __future__ import annotations

from typing import Any

import pytest

import zmtp
from zmtp.options import NOTIFY_CONNECT, NOTIFY_DISCONNECT
from zmtp.testing import (
    ipc_path,
    nothing_pending,
    ours_briefly,
    probe_path,
    recv_within,
    wait_event,
)
from zmtp.testing.pyzmq_sockets import connect_ours, zbind, zmq_sender, zrecv, zsend, zsocket

zmq = pytest.importorskip("zmq")

pytestmark = [pytest.mark.anyio, pytest.mark.interop]

roles = pytest.mark.parametrize("ours_binds", [True, False], ids=["ours-binds", "ours-connects"])
transports = pytest.mark.parametrize("transport", ["tcp", "ipc"])


# ---------------------------------------------------------------------- probe_router


@transports
@roles
@pytest.mark.parametrize("prober", ["DEALER", "REQ", "ROUTER"])
async def test_our_probe_reaches_a_libzmq_router(
    prober: str, transport: str, ours_binds: bool
) -> None:
    with zsocket(zmq.ROUTER) as zrouter:
        async with zmtp.Socket(prober, linger=0, probe_router=True, identity=b"ours") as sock:
            await connect_ours(sock, zrouter, transport, ours_binds)
            # Bound or connecting, the probe goes out at once (libzmq's own bound prober
            # only sends it along with its next message, see below).
            assert await zrecv(zrouter) == [b"ours", b""]


async def test_our_router_probe_lets_a_bound_libzmq_router_answer_first() -> None:
    with zsocket(zmq.ROUTER, identity=b"srv") as zrouter:
        opts = {"probe_router": True, "identity": b"cli"}
        async with zmtp.Socket(zmtp.ROUTER, linger=0, **opts) as router:
            await connect_ours(router, zrouter, "tcp", ours_binds=False)
            peer, probe = await zrecv(zrouter)
            assert (peer, probe) == (b"cli", b"")
            await zsend(zrouter, [peer, b"hello"])
            assert await recv_within(router) == [b"srv", b"hello"]


@transports
async def test_libzmq_connecting_prober_to_our_router(transport: str) -> None:
    with zsocket(zmq.DEALER, probe_router=1, identity=b"lz") as zdealer:
        async with zmtp.Socket(zmtp.ROUTER, linger=0) as router:
            await connect_ours(router, zdealer, transport, ours_binds=True)
            assert await recv_within(router) == [b"lz", b""]
            await router.send_multipart([b"lz", b"welcome"])
            assert await zrecv(zdealer) == [b"welcome"]


async def test_libzmq_bound_prober_sends_the_probe_with_its_next_message() -> None:
    """libzmq 4.3.5 quirk: a bound (or ZMQ_IMMEDIATE) prober queues the probe first but only
    flushes it with the next message it sends. Our ROUTER sees it first all the same."""
    with zsocket(zmq.DEALER, probe_router=1) as zdealer:
        async with zmtp.Socket(zmtp.ROUTER, linger=0) as router:
            await connect_ours(router, zdealer, "tcp", ours_binds=False)
            assert await nothing_pending(router)
            await zsend(zdealer, [b"x"])
            routing_id, probe = await recv_within(router)
            assert probe == b"" and routing_id.startswith(b"\x00")
            assert await recv_within(router) == [routing_id, b"x"]


async def test_our_prober_probes_again_after_the_libzmq_router_restarts() -> None:
    """libzmq (without ZMQ_IMMEDIATE) would not: its pipe, and its probe, outlive the
    connection. The new ROUTER learns about us all the same."""
    endpoint = f"ipc://{ipc_path()}"
    async with zmtp.Socket(zmtp.DEALER, linger=0, probe_router=True, identity=b"D") as dealer:
        with zsocket(zmq.ROUTER) as zrouter:
            zrouter.bind(endpoint)
            await dealer.connect(endpoint)
            assert await zrecv(zrouter) == [b"D", b""]
        with zsocket(zmq.ROUTER) as zrouter:
            zrouter.bind(endpoint)
            assert await zrecv(zrouter) == [b"D", b""]


# ---------------------------------------------------------------------- router_notify


@transports
@roles
async def test_our_router_notifies_about_libzmq_peers(transport: str, ours_binds: bool) -> None:
    opts = {"router_notify": NOTIFY_CONNECT | NOTIFY_DISCONNECT}
    async with zmtp.Socket(zmtp.ROUTER, linger=0, **opts) as router:
        with zsocket(zmq.DEALER, identity=b"lz") as zdealer:
            await connect_ours(router, zdealer, transport, ours_binds)
            assert await recv_within(router) == [b"lz", b""]
            await zsend(zdealer, [b"data"])
            assert await recv_within(router) == [b"lz", b"data"]
            async with router.monitor() as mon:
                zdealer.close(linger=0)
                await wait_event(mon, zmtp.Disconnected)
        assert await recv_within(router) == [b"lz", b""]
        assert await nothing_pending(router)


def test_libzmq_4_3_5_has_router_notify_only_as_draft() -> None:
    """Why the tests above only check our side: pyzmq's libzmq refuses the option."""
    with zsocket(zmq.ROUTER) as zrouter, pytest.raises(zmq.ZMQError):
        zrouter.setsockopt(zmq.ROUTER_NOTIFY, 3)


# ---------------------------------------------------------------------- connect_routing_id


@transports
async def test_libzmq_connect_routing_id_to_our_router(transport: str) -> None:
    async with zmtp.Socket(zmtp.ROUTER, linger=0, identity=b"ours") as router:
        endpoint = await router.bind(
            f"ipc://{ipc_path()}" if transport == "ipc" else "tcp://127.0.0.1:*"
        )
        with zsocket(zmq.ROUTER, identity=b"lz", connect_routing_id=b"X") as zrouter:
            zrouter.connect(endpoint)
            await zsend(zrouter, [b"X", b"hi"])  # at once: libzmq knows the peer as X
            assert await recv_within(router) == [b"lz", b"hi"]
            await router.send_multipart([b"lz", b"back"])
            assert await zrecv(zrouter) == [b"X", b"back"]


async def test_libzmq_connect_routing_id_to_our_dealer() -> None:
    async with zmtp.Socket(zmtp.DEALER, linger=0) as dealer:
        endpoint = await dealer.bind("tcp://127.0.0.1:*")
        with zsocket(zmq.ROUTER, connect_routing_id=b"mine") as zrouter:
            zrouter.connect(endpoint)
            await zsend(zrouter, [b"mine", b"hi"])
            assert await recv_within(dealer) == [b"hi"]
            await dealer.send(b"back")
            assert await zrecv(zrouter) == [b"mine", b"back"]


@transports
@pytest.mark.parametrize("how", ["argument", "option"])
async def test_our_connect_routing_id_to_libzmq(transport: str, how: str) -> None:
    with zsocket(zmq.ROUTER, identity=b"lz") as zrouter:
        endpoint = zbind(zrouter, transport)
        opts: dict[str, Any] = {"identity": b"ours"}
        if how == "option":
            opts["connect_routing_id"] = b"X"
        async with zmtp.Socket(zmtp.ROUTER, linger=0, **opts) as router:
            if how == "argument":
                await router.connect(endpoint, routing_id=b"X")
            else:
                await router.connect(endpoint)
            await router.send_multipart([b"X", b"hi"])  # before the handshake: queued
            assert await zrecv(zrouter) == [b"ours", b"hi"]
            await zsend(zrouter, [b"ours", b"back"])
            assert await recv_within(router) == [b"X", b"back"]


async def test_our_connect_routing_id_to_a_libzmq_dealer() -> None:
    with zsocket(zmq.DEALER, identity=b"lz") as zdealer:
        endpoint = zbind(zdealer, "tcp")
        async with zmtp.Socket(zmtp.ROUTER, linger=0) as router:
            await router.connect(endpoint, routing_id=b"peer-1")
            await router.send_multipart([b"peer-1", b"job"])
            assert await zrecv(zdealer) == [b"job"]
            await zsend(zdealer, [b"done"])
            assert await recv_within(router) == [b"peer-1", b"done"]


# ---------------------------------------------------------------------- invert_matching


@transports
@roles
async def test_our_inverted_xpub_to_libzmq_xsub(transport: str, ours_binds: bool) -> None:
    """libzmq's XSUB does not filter: it receives exactly what our XPUB chose to send."""
    with zsocket(zmq.XSUB) as zxsub:
        async with zmtp.Socket(zmtp.XPUB, linger=0, invert_matching=True) as xpub:
            await connect_ours(xpub, zxsub, transport, ours_binds)
            # A bound libzmq socket attaches our pipe only while it processes commands:
            # wait until its upstream messages reach us, then subscribe.
            await probe_path(zmq_sender(zxsub), ours_briefly(xpub), b"sync")
            zxsub.send(b"\x01a")
            assert await recv_within(xpub) == [b"\x01a"]
            for topic in (b"a1", b"b1", b"ab", b"c"):
                await xpub.send(topic)
            assert [await zrecv(zxsub) for _ in range(2)] == [[b"b1"], [b"c"]]


@transports
async def test_our_inverted_pub_to_libzmq_inverted_sub(transport: str) -> None:
    with zsocket(zmq.SUB, invert_matching=1) as zsub:
        zsub.subscribe(b"a")
        async with zmtp.Socket(zmtp.XPUB, linger=0, invert_matching=True) as xpub:
            await connect_ours(xpub, zsub, transport, ours_binds=True)
            assert await recv_within(xpub) == [b"\x01a"]
            for topic in (b"a1", b"b1", b"ab", b"c"):
                await xpub.send(topic)
            assert [await zrecv(zsub) for _ in range(2)] == [[b"b1"], [b"c"]]


@transports
@roles
async def test_libzmq_inverted_xpub_to_our_inverted_sub(transport: str, ours_binds: bool) -> None:
    with zsocket(zmq.XPUB, invert_matching=1) as zxpub:
        async with zmtp.Socket(zmtp.SUB, linger=0, invert_matching=True) as sub:
            sub.subscribe(b"a")
            await connect_ours(sub, zxpub, transport, ours_binds)
            assert await zrecv(zxpub) == [b"\x01a"]
            for topic in (b"a1", b"b1", b"ab", b"c"):
                zxpub.send(topic)
            assert [await recv_within(sub) for _ in range(2)] == [[b"b1"], [b"c"]]
            assert await nothing_pending(sub)


async def test_libzmq_inverted_pub_reaches_our_sub_without_subscriptions() -> None:
    """Both sides inverted: a SUB that subscribed to nothing receives everything."""
    with zsocket(zmq.PUB, invert_matching=1) as zpub:
        async with zmtp.Socket(zmtp.SUB, linger=0, invert_matching=True) as sub:
            await connect_ours(sub, zpub, "tcp", ours_binds=False)
            await probe_path(zmq_sender(zpub), ours_briefly(sub), b"anything")


# ---------------------------------------------------------------------- xpub_manual_last_value


async def test_our_xpub_manual_last_value_with_libzmq_subs() -> None:
    async with zmtp.Socket(zmtp.XPUB, linger=0, xpub_manual_last_value=True) as xpub:
        endpoint = await xpub.bind("tcp://127.0.0.1:*")
        with zsocket(zmq.SUB) as first, zsocket(zmq.SUB) as second:
            for zsub, cached in ((first, b"t=1"), (second, b"t=2")):
                zsub.subscribe(b"t")
                zsub.connect(endpoint)
                assert await recv_within(xpub) == [b"\x01t"]
                xpub.subscribe(b"t")
                await xpub.send(cached)  # the newcomer only
                assert await zrecv(zsub) == [cached]
            await xpub.send(b"t=3")
            assert await zrecv(first) == [b"t=3"]
            assert await zrecv(second) == [b"t=3"]


async def test_libzmq_xpub_manual_last_value_with_our_subs() -> None:
    with zsocket(zmq.XPUB, xpub_manual_last_value=1) as zxpub:
        endpoint = zbind(zxpub, "tcp")
        async with (
            zmtp.Socket(zmtp.SUB, linger=0) as first,
            zmtp.Socket(zmtp.SUB, linger=0) as second,
        ):
            for sub, cached in ((first, b"t=1"), (second, b"t=2")):
                sub.subscribe(b"t")
                await sub.connect(endpoint)
                assert await zrecv(zxpub) == [b"\x01t"]
                zxpub.subscribe(b"t")
                zxpub.send(cached)
                assert await recv_within(sub) == [cached]
            zxpub.send(b"t=3")
            assert await recv_within(first) == [b"t=3"]
            assert await recv_within(second) == [b"t=3"]


# ---------------------------------------------------------------------- conflate


@pytest.mark.parametrize(
    ("ours", "theirs"), [("PUSH", "PULL"), ("DEALER", "ROUTER")], ids=["push", "dealer"]
)
async def test_our_conflating_sender_to_libzmq(ours: str, theirs: str) -> None:
    """Sent before libzmq listens: only the newest reaches it."""
    endpoint = f"ipc://{ipc_path()}"
    async with zmtp.Socket(ours, linger=0, conflate=True, identity=b"S") as out:
        await out.connect(endpoint)
        for i in range(10):
            await out.send(b"%d" % i)
        with zsocket(getattr(zmq, theirs)) as zinto:
            zinto.bind(endpoint)
            head = [b"S"] if theirs == "ROUTER" else []
            assert await zrecv(zinto) == [*head, b"9"]
            await out.send(b"end")
            assert await zrecv(zinto) == [*head, b"end"]


@pytest.mark.parametrize(
    ("theirs", "ours"), [("PUSH", "PULL"), ("DEALER", "DEALER")], ids=["pull", "dealer"]
)
async def test_libzmq_conflating_sender_to_ours(theirs: str, ours: str) -> None:
    endpoint = f"ipc://{ipc_path()}"
    with zsocket(getattr(zmq, theirs), conflate=1) as zout:
        zout.connect(endpoint)
        for i in range(10):
            zout.send(b"%d" % i)  # conflating: never blocks, keeps the newest
        async with zmtp.Socket(ours, linger=0) as into:
            await into.bind(endpoint)
            assert await recv_within(into) == [b"9"]
            zout.send(b"end")
            assert await recv_within(into) == [b"end"]


@pytest.mark.parametrize("ours", ["PULL", "DEALER"])
async def test_our_conflating_receiver_from_libzmq(ours: str) -> None:
    """libzmq flushes what it queued while unconnected in one write once connected: our
    receiver keeps only the newest of it."""
    endpoint = f"ipc://{ipc_path()}"
    with zsocket(zmq.PUSH if ours == "PULL" else zmq.DEALER) as zout:
        zout.connect(endpoint)
        for i in range(10):
            zout.send(b"%d" % i, zmq.NOBLOCK)  # queued in libzmq's pipe (HWM 1000)
        async with zmtp.Socket(ours, linger=0, conflate=True) as into:
            await into.bind(endpoint)
            assert await recv_within(into) == [b"9"]
            zout.send(b"end")
            assert await recv_within(into) == [b"end"]
