"""probe_router, router_notify, connect_routing_id, invert_matching, xpub_manual_last_value and
conflate on PUSH/PULL/DEALER: ours against ours on every transport, and byte by byte against
hand-written ZMTP peers. The libzmq side of each is in test_interop_sockets_options.py."""

from __future__ import annotations

from typing import Any

import anyio
import pytest

import zmtp
from zmtp.options import NOTIFY_CONNECT, NOTIFY_DISCONNECT
from zmtp.testing import (
    TIMEOUT,
    bindable,
    ipc_path,
    linked,
    nothing_pending,
    ours_briefly,
    ours_sender,
    probe_path,
    raw_server,
    recv_within,
    wait_event,
)
from zmtp.testing.wire import message

pytestmark = pytest.mark.anyio

TRANSPORTS = ["tcp", "ipc", "inproc"]
NOTIFY_BOTH = NOTIFY_CONNECT | NOTIFY_DISCONNECT


def unbound(transport: str) -> str:
    """An endpoint nobody listens on yet (a later bind makes a connect() succeed)."""
    return f"ipc://{ipc_path()}" if transport == "ipc" else bindable("inproc")


# ---------------------------------------------------------------------- option validation


@pytest.mark.parametrize("value", [-1, 4, True, "3", 1.0])
def test_router_notify_takes_only_the_libzmq_flags(value: Any) -> None:
    with pytest.raises(ValueError, match="router_notify takes flags"):
        zmtp.Options(router_notify=value)


def test_router_notify_flags_are_libzmqs() -> None:
    assert (NOTIFY_CONNECT, NOTIFY_DISCONNECT) == (1, 2)  # ZMQ_NOTIFY_CONNECT/_DISCONNECT
    assert zmtp.Options(router_notify=NOTIFY_BOTH).router_notify == 3


def test_connect_routing_id_must_be_bytes_but_may_be_anything() -> None:
    with pytest.raises(ValueError, match="connect_routing_id must be bytes"):
        zmtp.Options(connect_routing_id="X")  # type: ignore[arg-type]
    # Like libzmq: any length, any first byte (it never goes on the wire).
    for value in (b"\x00lead", b"x" * 300):
        assert zmtp.Options(connect_routing_id=value).connect_routing_id == value


async def test_connect_routing_id_is_refused_where_it_means_nothing() -> None:
    async with zmtp.Socket(zmtp.DEALER, linger=0) as dealer:
        with pytest.raises(zmtp.UnsupportedOperation, match="only ROUTER"):
            await dealer.connect(bindable("inproc"), routing_id=b"X")
        assert not dealer.engine.endpoints.dialers  # nothing was created


async def test_connect_routing_id_empty_or_duplicate_is_refused() -> None:
    async with zmtp.Socket(zmtp.ROUTER, linger=0) as router:
        with pytest.raises(ValueError, match="must not be empty"):
            await router.connect(bindable("inproc"), routing_id=b"")
        await router.connect(bindable("inproc"), routing_id=b"X")
        with pytest.raises(ValueError, match="already in use"):
            await router.connect(bindable("inproc"), routing_id=b"X")
        assert len(router.engine.endpoints.dialers) == 1


# ---------------------------------------------------------------------- probe_router


@pytest.mark.parametrize("transport", TRANSPORTS)
@pytest.mark.parametrize("prober", ["DEALER", "REQ", "ROUTER"])
async def test_probe_reaches_a_router_first(prober: str, transport: str) -> None:
    opts = {"probe_router": True, "identity": b"P"}
    async with linked("ROUTER", prober, transport, connect_options=opts) as (router, _):
        assert await recv_within(router) == [b"P", b""]  # bare: no REQ delimiter either
        assert await nothing_pending(router)


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_a_bound_prober_probes_each_accepted_peer(transport: str) -> None:
    opts = {"probe_router": True}
    async with linked("DEALER", "ROUTER", transport, bind_options=opts) as (_, router):
        routing_id, body = await recv_within(router)
        assert body == b"" and routing_id.startswith(b"\x00")  # the DEALER sent no Identity


@pytest.mark.parametrize("transport", ["ipc", "inproc"])
async def test_probe_goes_before_messages_queued_while_connecting(transport: str) -> None:
    endpoint = unbound(transport)
    async with (
        zmtp.Socket(zmtp.DEALER, linger=0, probe_router=True, identity=b"D") as dealer,
        zmtp.Socket(zmtp.ROUTER, linger=0) as router,
    ):
        await dealer.connect(endpoint)
        await dealer.send(b"early")  # queued: nothing listens yet
        await router.bind(endpoint)
        assert await recv_within(router) == [b"D", b""]
        assert await recv_within(router) == [b"D", b"early"]


async def test_probe_is_an_empty_frame_on_every_connection() -> None:
    """`00 00` first on each connection, reconnects included (libzmq: once per connect())."""
    async with (
        raw_server() as server,
        zmtp.Socket(zmtp.DEALER, linger=0, probe_router=True, reconnect_ivl=0.01) as dealer,
    ):
        await dealer.connect(server.endpoint)
        for _ in range(2):
            peer = await server.accept()
            await peer.handshake("ROUTER")
            assert await peer.read_raw_frame() == b"\x00\x00"
            await peer.expect_silence()
            await peer.aclose()


async def test_without_probe_router_nothing_is_sent() -> None:
    async with raw_server() as server, zmtp.Socket(zmtp.DEALER, linger=0) as dealer:
        await dealer.connect(server.endpoint)
        peer = await server.accept()
        await peer.handshake("ROUTER")
        await peer.expect_silence()


async def test_router_to_router_probe_lets_the_bound_side_answer_first() -> None:
    """The classic use: the bound ROUTER learns the connecting ROUTER's id from the probe."""
    opts = {"probe_router": True, "identity": b"client"}
    bopts = {"identity": b"server"}
    async with linked("ROUTER", "ROUTER", "tcp", bopts, opts) as (server, client):
        peer_id, probe = await recv_within(server)
        assert (peer_id, probe) == (b"client", b"")
        await server.send_multipart([peer_id, b"hello"])
        assert await recv_within(client) == [b"server", b"hello"]


# ---------------------------------------------------------------------- router_notify


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_router_notify_connect_and_disconnect(transport: str) -> None:
    async with zmtp.Socket(zmtp.ROUTER, linger=0, router_notify=NOTIFY_BOTH) as router:
        endpoint = await router.bind(bindable(transport))
        async with zmtp.Socket(zmtp.DEALER, identity=b"D") as dealer:
            await dealer.connect(endpoint)
            assert await recv_within(router) == [b"D", b""]
            for i in range(3):
                await dealer.send(b"m%d" % i)
        # The DEALER closed (lingering until its messages were written): they come first.
        assert [await recv_within(router) for _ in range(3)] == [
            [b"D", b"m%d" % i] for i in range(3)
        ]
        assert await recv_within(router) == [b"D", b""]
        assert await nothing_pending(router)


@pytest.mark.parametrize(
    ("flags", "expect_connect", "expect_disconnect"),
    [(NOTIFY_CONNECT, True, False), (NOTIFY_DISCONNECT, False, True), (0, False, False)],
)
async def test_router_notify_flags_are_independent(
    flags: int, expect_connect: bool, expect_disconnect: bool
) -> None:
    async with zmtp.Socket(zmtp.ROUTER, linger=0, router_notify=flags) as router:
        endpoint = await router.bind(bindable("tcp"))
        async with router.monitor() as mon:
            async with zmtp.Socket(zmtp.DEALER, linger=0, identity=b"D") as dealer:
                await dealer.connect(endpoint)
                await wait_event(mon, zmtp.HandshakeSucceeded)
                await dealer.send(b"data")
                expected = [[b"D", b""]] if expect_connect else []
                expected.append([b"D", b"data"])
                assert [await recv_within(router) for _ in expected] == expected
            await wait_event(mon, zmtp.Disconnected)  # the notification is queued before it
        if expect_disconnect:
            assert await recv_within(router) == [b"D", b""]
        assert await nothing_pending(router)


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_router_notify_not_when_this_socket_ends_the_connection(transport: str) -> None:
    """libzmq notifies only when the peer or the network ends a connection."""
    async with (
        zmtp.Socket(zmtp.DEALER, linger=0, identity=b"D") as dealer,
        zmtp.Socket(zmtp.ROUTER, linger=0, router_notify=NOTIFY_BOTH) as router,
    ):
        endpoint = await dealer.bind(bindable(transport))
        async with router.monitor() as mon:
            await router.connect(endpoint)
            assert await recv_within(router) == [b"D", b""]
            await router.disconnect(endpoint)
            await wait_event(mon, zmtp.Closed)
        assert await nothing_pending(router)
        # Bound side: unbind() ends the accepted connections here too.
        async with zmtp.Socket(zmtp.DEALER, linger=0, identity=b"E") as other:
            bound = await router.bind(bindable(transport))
            async with router.monitor() as mon:
                await other.connect(bound)
                assert await recv_within(router) == [b"E", b""]
                await router.unbind(bound)
                await wait_event(mon, zmtp.Disconnected)
            assert await nothing_pending(router)


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_router_notify_and_a_probe_each_arrive_once(transport: str) -> None:
    bopts = {"router_notify": NOTIFY_CONNECT}
    copts = {"probe_router": True, "identity": b"D"}
    async with linked("ROUTER", "DEALER", transport, bopts, copts) as (router, dealer):
        assert [await recv_within(router) for _ in range(2)] == [[b"D", b""]] * 2
        await dealer.send(b"data")
        assert await recv_within(router) == [b"D", b"data"]
        assert await nothing_pending(router)


async def test_router_notify_not_for_a_refused_duplicate() -> None:
    async with zmtp.Socket(zmtp.ROUTER, linger=0, router_notify=NOTIFY_BOTH) as router:
        endpoint = await router.bind(bindable("tcp"))
        async with (
            zmtp.Socket(zmtp.DEALER, linger=0, identity=b"D") as first,
            zmtp.Socket(zmtp.DEALER, linger=0, identity=b"D") as second,
            router.monitor() as mon,
        ):
            await first.connect(endpoint)
            assert await recv_within(router) == [b"D", b""]
            await second.connect(endpoint)
            failed = await wait_event(mon, zmtp.HandshakeFailed)
            assert "duplicate identity" in failed.reason
            assert await nothing_pending(router)


async def test_router_notify_not_for_the_connection_handed_over() -> None:
    opts = {"router_notify": NOTIFY_BOTH, "router_handover": True}
    async with zmtp.Socket(zmtp.ROUTER, linger=0, **opts) as router:
        endpoint = await router.bind(bindable("tcp"))
        async with (
            zmtp.Socket(zmtp.DEALER, linger=0, identity=b"D", reconnect_ivl=None) as first,
            zmtp.Socket(zmtp.DEALER, linger=0, identity=b"D") as second,
            router.monitor() as mon,
        ):
            await first.connect(endpoint)
            assert await recv_within(router) == [b"D", b""]
            await second.connect(endpoint)
            assert await recv_within(router) == [b"D", b""]  # the newcomer, under the id
            await wait_event(mon, zmtp.Disconnected)  # the old one, closed by us
            await second.send(b"from-second")
            assert await recv_within(router) == [b"D", b"from-second"]
            assert await nothing_pending(router)


async def test_router_notify_on_each_reconnect_of_a_connect_endpoint() -> None:
    async with zmtp.Socket(zmtp.ROUTER, linger=0, router_notify=NOTIFY_BOTH) as router:
        endpoint = bindable("ipc")
        await router.connect(endpoint)
        for identity in (b"one", b"two"):
            async with zmtp.Socket(zmtp.DEALER, linger=0, identity=identity) as dealer:
                await dealer.bind(endpoint)
                assert await recv_within(router) == [identity, b""]
            assert await recv_within(router) == [identity, b""]


# ---------------------------------------------------------------------- connect_routing_id


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_connect_routing_id_addresses_the_peer_at_once(transport: str) -> None:
    async with (
        zmtp.Socket(zmtp.ROUTER, linger=0, identity=b"srv") as server,
        zmtp.Socket(zmtp.ROUTER, linger=0, identity=b"cli", connect_routing_id=b"X") as client,
    ):
        endpoint = await server.bind(bindable(transport))
        await client.connect(endpoint)
        # No handshake yet, but the id is known: queued, like libzmq's test_connect_rid.
        await client.send_multipart([b"X", b"hi"])
        assert await recv_within(server) == [b"cli", b"hi"]
        await server.send_multipart([b"cli", b"back"])
        assert await recv_within(client) == [b"X", b"back"]  # not b"srv": our name for it
        assert client.options.connect_routing_id == b""  # consumed by that connect()


async def test_connect_routing_id_names_only_the_next_connect() -> None:
    async with (
        zmtp.Socket(zmtp.DEALER, linger=0, identity=b"a") as a,
        zmtp.Socket(zmtp.DEALER, linger=0, identity=b"b") as b,
        zmtp.Socket(zmtp.DEALER, linger=0, identity=b"c") as c,
        zmtp.Socket(zmtp.ROUTER, linger=0, connect_routing_id=b"first") as router,
    ):
        ea, eb, ec = [await s.bind(bindable("tcp")) for s in (a, b, c)]
        await router.connect(ea, routing_id=b"explicit")  # per call: the option stays
        await router.connect(eb)  # takes the option
        await router.connect(ec)  # nothing left: the peer's Identity
        with anyio.fail_after(TIMEOUT):  # a bound DEALER waits for its peer to attach
            for sock in (a, b, c):
                await sock.send(b"who")
        got = sorted([(await recv_within(router))[0] for _ in range(3)])
        assert got == [b"c", b"explicit", b"first"]


async def test_connect_routing_id_survives_reconnects_and_queues_meanwhile() -> None:
    endpoint = bindable("ipc")
    async with zmtp.Socket(zmtp.ROUTER, linger=0, reconnect_ivl=0.01) as router:
        await router.connect(endpoint, routing_id=b"X")
        for identity in (b"one", b"two"):
            await router.send_multipart([b"X", b"for " + identity])  # sent while down
            async with zmtp.Socket(zmtp.DEALER, linger=0, identity=identity) as dealer:
                await dealer.bind(endpoint)
                assert await recv_within(dealer) == [b"for " + identity]
                await dealer.send(b"from " + identity)
                assert await recv_within(router) == [b"X", b"from " + identity]


async def test_connect_routing_id_in_notifications_and_freed_by_disconnect() -> None:
    async with (
        zmtp.Socket(zmtp.DEALER, linger=0, identity=b"D") as dealer,
        zmtp.Socket(zmtp.ROUTER, linger=0, router_notify=NOTIFY_CONNECT) as router,
    ):
        endpoint = await dealer.bind(bindable("tcp"))
        await router.connect(endpoint, routing_id=b"X")
        assert await recv_within(router) == [b"X", b""]
        await router.disconnect(endpoint)
        await router.connect(endpoint, routing_id=b"X")  # free again
        assert await recv_within(router) == [b"X", b""]


async def test_connect_routing_id_with_immediate_attaches_at_the_handshake() -> None:
    opts = {"immediate": True, "router_mandatory": True}
    async with (
        zmtp.Socket(zmtp.DEALER, linger=0) as dealer,
        zmtp.Socket(zmtp.ROUTER, linger=0, **opts) as router,
    ):
        endpoint = bindable("ipc")
        await router.connect(endpoint, routing_id=b"X")
        with pytest.raises(zmtp.HostUnreachable):
            await router.send_multipart([b"X", b"not yet"])
        async with router.monitor() as mon:
            await dealer.bind(endpoint)
            await wait_event(mon, zmtp.HandshakeSucceeded)
        await router.send_multipart([b"X", b"now"])
        assert await recv_within(dealer) == [b"now"]


# ---------------------------------------------------------------------- invert_matching


async def test_inverted_xpub_sends_to_peers_not_subscribed() -> None:
    """An XSUB does not filter: what it receives is exactly what the XPUB chose to send."""
    async with (
        zmtp.Socket(zmtp.XPUB, linger=0, invert_matching=True) as xpub,
        zmtp.Socket(zmtp.XSUB, linger=0) as xa,
        zmtp.Socket(zmtp.XSUB, linger=0) as xnone,
    ):
        endpoint = await xpub.bind(bindable("tcp"))
        async with xpub.monitor() as mon:
            for sock in (xa, xnone):
                await sock.connect(endpoint)
                await wait_event(mon, zmtp.HandshakeSucceeded)
        xa.subscribe(b"a")
        assert await recv_within(xpub) == [b"\x01a"]
        for topic in (b"a1", b"b1", b"ab", b"c"):
            await xpub.send(topic)
        assert [await recv_within(xa) for _ in range(2)] == [[b"b1"], [b"c"]]
        # A peer without subscriptions gets everything (libzmq's reverse_match).
        assert [await recv_within(xnone) for _ in range(4)] == [[b"a1"], [b"b1"], [b"ab"], [b"c"]]


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_inverted_pub_and_sub(transport: str) -> None:
    opts = {"invert_matching": True}
    async with linked("XPUB", "SUB", transport, opts, opts) as (xpub, sub):
        sub.subscribe(b"a")
        assert await recv_within(xpub) == [b"\x01a"]
        for topic in (b"a1", b"b1", b"ab", b"c"):
            await xpub.send(topic)
        assert [await recv_within(sub) for _ in range(2)] == [[b"b1"], [b"c"]]
        assert await nothing_pending(sub)


async def test_inverted_sub_filters_on_its_side_too() -> None:
    async with (
        raw_server() as server,
        zmtp.Socket(zmtp.SUB, linger=0, invert_matching=True) as sub,
    ):
        sub.subscribe(b"a")
        await sub.connect(server.endpoint)
        peer = await server.accept()
        await peer.handshake("PUB")
        assert await peer.read_command() == (b"SUBSCRIBE", b"a")
        await peer.send(message(b"a1") + message(b"b1") + message(b"ab", b"x") + message(b"c"))
        assert await recv_within(sub) == [b"b1"]
        assert await recv_within(sub) == [b"c"]
        assert await nothing_pending(sub)


async def test_inverted_sub_without_subscriptions_receives_everything_and_b_empty_nothing() -> None:
    opts = {"invert_matching": True}
    async with linked("PUB", "SUB", "inproc", opts, opts) as (pub, sub):
        await pub.send(b"x")  # inproc hands it over at once: no subscription, so it passes
        assert await recv_within(sub) == [b"x"]
        sub.subscribe(b"")  # matches every message: now nothing passes
        await pub.send(b"y")
        assert await nothing_pending(sub)


async def test_inverted_sub_purges_queued_messages_a_new_subscription_excludes() -> None:
    opts = {"invert_matching": True}
    async with linked("PUB", "SUB", "inproc", opts, opts) as (pub, sub):
        for topic in (b"a1", b"b1", b"a2"):
            await pub.send(topic)  # all queued at the SUB (no subscription yet)
        sub.subscribe(b"a")
        assert await recv_within(sub) == [b"b1"]
        assert await nothing_pending(sub)


async def test_xsub_ignores_invert_matching() -> None:
    """As libzmq: XSUB does not filter, so inversion does not apply to what it receives."""
    async with linked("PUB", "XSUB", "inproc", connect_options={"invert_matching": True}) as (
        pub,
        xsub,
    ):
        xsub.subscribe(b"a")
        await probe_path(ours_sender(pub), ours_briefly(xsub), b"a-probe")
        await pub.send(b"a1")
        await pub.send(b"b1")  # the (plain) PUB does not send it
        assert await recv_within(xsub) == [b"a1"]
        assert await nothing_pending(xsub)


# ---------------------------------------------------------------------- xpub_manual_last_value


@pytest.mark.parametrize("transport", ["tcp", "inproc"])
async def test_xpub_manual_last_value_sends_the_cached_value_to_the_newcomer_only(
    transport: str,
) -> None:
    async with zmtp.Socket(zmtp.XPUB, linger=0, xpub_manual_last_value=True) as xpub:
        endpoint = await xpub.bind(bindable(transport))
        async with (
            zmtp.Socket(zmtp.SUB, linger=0) as first,
            zmtp.Socket(zmtp.SUB, linger=0) as second,
        ):
            for sub, cached in ((first, b"t-cached-1"), (second, b"t-cached-2")):
                await sub.connect(endpoint)
                sub.subscribe(b"t")
                assert await recv_within(xpub) == [b"\x01t"]
                xpub.subscribe(b"t")  # manual: apply it to that peer
                await xpub.send(cached)  # only to the peer heard last
                assert await recv_within(sub) == [cached]
            await xpub.send(b"t-live")  # then to everyone subscribed again
            assert await recv_within(first) == [b"t-live"]
            assert await recv_within(second) == [b"t-live"]
            assert await nothing_pending(first)


# ---------------------------------------------------------------------- conflate


@pytest.mark.parametrize("transport", ["ipc", "inproc"])
@pytest.mark.parametrize(("sender", "receiver"), [("PUSH", "PULL"), ("DEALER", "ROUTER")])
async def test_conflating_sender_keeps_only_the_newest_queued(
    sender: str, receiver: str, transport: str
) -> None:
    """Queued before any peer listens (an inproc connect pipe waiting for its bind too):
    only the newest is delivered."""
    endpoint = unbound(transport)
    opts = {"conflate": True, "identity": b"S"} if sender == "DEALER" else {"conflate": True}
    async with (
        zmtp.Socket(sender, linger=0, **opts) as out,
        zmtp.Socket(receiver, linger=0) as into,
    ):
        await out.connect(endpoint)
        for i in range(10):
            await out.send(b"%d" % i)
        await into.bind(endpoint)
        head = [b"S"] if receiver == "ROUTER" else []
        assert await recv_within(into) == [*head, b"9"]
        await out.send(b"end")
        assert await recv_within(into) == [*head, b"end"]


async def test_conflating_push_never_blocks_once_it_has_a_peer() -> None:
    opts = {"conflate": True, "send_hwm": 1, "send_timeout": 0.05}
    async with zmtp.Socket(zmtp.PUSH, linger=0, **opts) as push:
        with pytest.raises(TimeoutError):
            await push.send(b"no peer")  # like libzmq: no pipe, nothing to conflate into
        await push.connect(unbound("ipc"))
        for i in range(100):
            await push.send(b"%d" % i)  # never waits: the queue holds only the newest
        (pipe,) = push.engine.pipes
        assert list(pipe.outbox.items) == [[b"99"]]


async def test_conflating_push_over_inproc_keeps_the_hwm() -> None:
    """An inproc peer's inbox is its own: the sender hands messages over as usual."""
    popts = {"conflate": True, "send_hwm": 1, "send_timeout": 0.05}
    async with linked("PULL", "PUSH", "inproc", {"recv_hwm": 1}, popts) as (pull, push):
        await push.send(b"a")
        await push.send(b"b")  # HWM of an inproc link: send_hwm + recv_hwm
        with pytest.raises(TimeoutError):
            await push.send(b"c")
        assert [await recv_within(pull) for _ in range(2)] == [[b"a"], [b"b"]]


@pytest.mark.parametrize("receiver", ["PULL", "DEALER"])
async def test_conflating_receiver_over_inproc(receiver: str) -> None:
    sender = "PUSH" if receiver == "PULL" else "DEALER"
    async with linked(receiver, sender, "inproc", {"conflate": True}) as (into, out):
        for i in range(10):
            await out.send(b"%d" % i)
        assert await recv_within(into) == [b"9"]
        assert await nothing_pending(into)


async def test_conflating_pull_over_tcp_keeps_the_newest_of_a_burst() -> None:
    async with raw_server() as server, zmtp.Socket(zmtp.PULL, linger=0, conflate=True) as pull:
        await pull.connect(server.endpoint)
        peer = await server.accept()
        await peer.handshake("PUSH")
        await peer.send(b"".join(message(b"%d" % i) for i in range(10)))  # one write
        assert await recv_within(pull) == [b"9"]
        await peer.send(message(b"next"))
        with anyio.fail_after(TIMEOUT):
            assert await pull.recv() == b"next"


# ---------------------------------------------------------------------- first messages on inproc


async def test_a_connecting_xpub_welcomes_a_bound_sub_once_over_inproc() -> None:
    """The welcome goes out through the same "first message" path as a probe: over inproc
    from the connecting side it is handed over once, when the link is complete (it used to
    be handed over twice, leaving the SUB's fair queue with a stale entry)."""
    async with (
        zmtp.Socket(zmtp.SUB, linger=0) as sub,
        zmtp.Socket(zmtp.XPUB, linger=0, xpub_welcome_msg=b"W") as xpub,
    ):
        sub.subscribe(b"W")
        endpoint = await sub.bind(bindable("inproc"))
        await xpub.connect(endpoint)
        assert await recv_within(sub) == [b"W"]
        assert await nothing_pending(sub)
