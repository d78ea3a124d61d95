"""Rows for the libzmq socket options zmtp has too: probe_router, router_notify,
connect_routing_id, invert_matching and conflate, in both directions where libzmq 4.3.5 (as
pyzmq ships it) has the option.

A plain pairing row shows that messages get through; these rows show that an option means the
same on both ends of the wire, so each one checks what the option changes and nothing else. The
semantics are in ``docs/socket-types.md``; the pytest counterparts, with more corners, are in
``tests/test_interop_sockets_options.py``. The libzmq quirks they met shape some rows, and each
such row says so in its docstring and its detail string:

* a *bound* libzmq prober puts its probe on the wire only with its next message;
* ZMQ_ROUTER_NOTIFY is DRAFT in libzmq 4.3.5 (pyzmq's wheels refuse it): only ours is checked;
* a connect routing id needs the side that has it to connect, so those rows run in one role;
* behind an inverted SUB (which filters too) a publisher's inverted filter is invisible, so an
  XSUB row, which does not filter, shows it on the wire;
* conflation is only observable, without guessing at timing, on messages queued while no
  connection exists yet (the receiver's I/O thread, or ours, reads everything eagerly once it
  does): the sender connects before the receiver binds, so those rows run in one role, with a
  tcp port chosen before anyone listens on it.

Nothing waits on a delay: every wait is on a message or a monitor event, bounded by the case's
timeout.
"""

from __future__ import annotations

import itertools
import socket
import time

import anyio

from ...monitor import HandshakeFailed, HandshakeSucceeded, Monitor, PeerInfo
from ...options import NOTIFY_CONNECT, NOTIFY_DISCONNECT
from ..checks import (
    expect_libzmq_saw,
    expect_messages,
    expect_peer,
    probe_until_received,
    publish_until_cancelled,
    recv_skipping,
)
from ..common import PROBE, CaseFailed, Message
from ..context import CaseContext
from ..ends import MessageEnd
from ..registry import register
from .sockets import OUR_ID, THEIR_ID, expect_generated_id

#: The routing id a connect routing id gives the peer (not the Identity that peer announces).
ALIAS = b"alias"
#: Messages a conflating sender queues before there is a connection: only the last may arrive.
QUEUED: list[Message] = [[b"%d" % i] for i in range(10)]
#: How soon (seconds) a connecting side retries while the other has not bound yet: well below
#: the 0.1 s default, so the conflate rows stay fast (it is a retry period, not a wait).
RETRY_IVL = 0.005

# Subscriptions of the invert_matching rows; PUBLISHED is sent once they apply.
TOPICS = [b"a", b"b"]
PUBLISHED: list[Message] = [[b"a1", b"body"], [b"c1"], [b"b1", b"body"], [b"x"], [b"ab"]]
#: What an inverted subscriber to TOPICS gets of PUBLISHED: what matches none of them.
INVERTED: list[Message] = [[b"c1"], [b"x"]]
#: Subscribed last by the XSUB row: subscriptions apply in order, so once the publisher drops
#: it, TOPICS apply too.
SYNC = b"sync"
#: Subscribed by no one: an inverted publisher always sends it (the other half of each round).
KEEP = b"keep"


def _endpoint_known_in_advance(c: CaseContext) -> str:
    """An endpoint the connecting side can dial before anyone binds it.

    ``tcp://127.0.0.1:*`` only becomes a port once bound, and the conflate rows must connect
    first. The kernel picks a free port for a socket that binds it and closes at once; having
    never listened, it leaves nothing behind, so the later bind gets the same port (another
    process taking it in between would fail the bind loudly, not pass the row wrongly).
    """
    if c.transport == "ipc":
        return c.endpoint()
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return f"tcp://127.0.0.1:{port}"


async def _handshake(c: CaseContext, monitor: Monitor) -> PeerInfo:
    """Our side of a handshake, for rows that bind and connect in their own order (not
    :meth:`CaseContext.link`): wait for it on the monitor and return what we learned."""
    event = None
    with anyio.move_on_after(c.timeout):
        event = await monitor.wait_for((HandshakeSucceeded, HandshakeFailed))
    if event is None:
        raise TimeoutError(f"zmtp saw no handshake with libzmq in {c.timeout:g}s")
    if isinstance(event, HandshakeFailed):
        raise CaseFailed(f"zmtp handshake failed ({event.kind}): {event.reason}")
    assert isinstance(event, HandshakeSucceeded)
    return event.peer


async def _publish_until_delivered(
    sender: MessageEnd,
    receiver: MessageEnd,
    topic: bytes,
    *,
    timeout: float,
) -> int:
    """After an inverted subscriber cancelled ``topic`` (which its publisher applies in its own
    time), publish ``[topic, n]`` then ``[KEEP, n]`` until ``[topic, n]`` arrives; returns the
    rounds. The mirror of :func:`~zmtp.interop.publish_until_cancelled`: with invert_matching
    a subscription blocks a topic and its cancel lets it through. ``[KEEP, n]`` alone means the
    publisher still dropped the topic; anything else fails the case."""
    deadline = time.monotonic() + timeout
    for n in itertools.count():
        number = n.to_bytes(4, "big")
        await sender.send_many([[topic, number], [KEEP, number]])
        [first] = await recv_skipping(receiver, 1, PROBE, timeout)
        if first == [KEEP, number]:
            if time.monotonic() >= deadline:
                break
            continue
        [second] = await recv_skipping(receiver, 1, PROBE, timeout)
        if [first, second] != [[topic, number], [KEEP, number]]:
            raise CaseFailed(
                f"round {n} after cancelling {topic!r}: received {first!r} then {second!r}"
            )
        return n + 1
    raise TimeoutError(f"the publisher still dropped {topic!r} after {n + 1} rounds")


# ---------------------------------------------------------------------- probe_router


@register("DEALER->ROUTER[probe_router]", flow="both", requires=("DEALER",))
async def probing_dealer_to_libzmq_router(c: CaseContext) -> str:
    """Our prober sends its probe at once in either role (unlike libzmq's bound prober), so the
    libzmq ROUTER learns our generated id and can speak first."""
    async with c.zmtp_socket("DEALER", probe_router=True) as ours:
        theirs = c.libzmq_socket("ROUTER")
        peer = await c.link(ours, theirs)
        expect_peer(peer, "ROUTER")
        c.step("libzmq ROUTER receives [our id, ''] before we send anything")
        [[routing_id, *probe]] = await theirs.recv_many(1)
        if probe != [b""]:
            raise CaseFailed(f"libzmq ROUTER's first message is {probe!r}, not the probe ['']")
        expect_generated_id(routing_id, "libzmq ROUTER")
        expect_libzmq_saw(theirs, "DEALER", identity="")
        c.step("libzmq ROUTER speaks first, to the id it learned from the probe")
        await theirs.send_multipart([routing_id, b"welcome"])
        await expect_messages(c.end(ours), [[b"welcome"]])
        await ours.send(b"thanks")
        await expect_messages(theirs, [[routing_id, b"thanks"]])
        return f"probe [{routing_id.hex()}, ''] first; libzmq ROUTER spoke first to that id"


@register("ROUTER<-DEALER[probe_router]", flow="both", requires=("ROUTER",))
async def router_from_probing_libzmq_dealer(c: CaseContext) -> str:
    """libzmq 4.3.5's *bound* prober queues the probe but puts it on the wire only with its
    next message, so when libzmq binds it sends one first (that the probe still comes first is
    the check); a connecting libzmq prober sends it at once, and we answer it alone."""
    async with c.zmtp_socket("ROUTER") as ours:
        theirs = c.libzmq_socket("DEALER", probe_router=1)
        peer = await c.link(ours, theirs)
        expect_peer(peer, "DEALER")
        if c.binds == "libzmq":
            c.step("bound libzmq prober: its probe goes out with its next message, and first")
            await theirs.send_multipart([b"hello"])
            [[routing_id, *probe], hello] = await c.end(ours).recv_many(2)
            if probe != [b""] or hello != [routing_id, b"hello"]:
                raise CaseFailed(f"expected [id, ''] then [id, 'hello'], got {probe!r}, {hello!r}")
        else:
            c.step("connecting libzmq prober: [its id, ''] arrives on its own")
            [[routing_id, *probe]] = await c.end(ours).recv_many(1)
            if probe != [b""]:
                raise CaseFailed(f"our ROUTER's first message is {probe!r}, not the probe ['']")
        expect_generated_id(routing_id, "zmtp ROUTER")
        c.step("we answer the id the probe gave us")
        await ours.send_multipart([routing_id, b"welcome"])
        await expect_messages(theirs, [[b"welcome"]])
        expect_libzmq_saw(theirs, "ROUTER", identity="")
        if c.binds == "libzmq":
            return "bound libzmq prober: probe came first, with its next message (libzmq quirk)"
        return f"probe [{routing_id.hex()}, ''] arrived alone; we spoke first to that id"


# ---------------------------------------------------------------------- router_notify


@register("ROUTER<-DEALER[router_notify]", flow="libzmq->zmtp", requires=("ROUTER",))
async def notifying_router_from_libzmq_dealer(c: CaseContext) -> str:
    """Only our side: ZMQ_ROUTER_NOTIFY is DRAFT in libzmq 4.3.5 and pyzmq's wheels refuse it.
    libzmq closes with linger while its messages may still be on their way, so the disconnect
    notification has to queue up behind them."""
    notify = NOTIFY_CONNECT | NOTIFY_DISCONNECT
    async with c.zmtp_socket("ROUTER", router_notify=notify) as ours:
        theirs = c.libzmq_socket("DEALER", routing_id=THEIR_ID)
        peer = await c.link(ours, theirs)
        expect_peer(peer, "DEALER")
        c.step("connect notification")
        await expect_messages(c.end(ours), [[THEIR_ID, b""]])
        messages = [[b"data", b"1"], [b"data", b"2"], [b"last"]]
        c.step("libzmq DEALER sends 3 messages and closes at once (linger: they still go out)")
        await theirs.send_many(messages)
        # LibzmqSocket.close() would drop what is unsent (linger 0): close the pyzmq socket
        # itself, lingering, so the messages go out before the connection ends.
        theirs.raw.close(linger=int(c.timeout * 1000))
        c.step("its messages, then the disconnect notification")
        expected = [[THEIR_ID, *m] for m in messages] + [[THEIR_ID, b""]]
        await expect_messages(c.end(ours), expected)
        return "[id, ''] on connect, then 3 msgs, then [id, ''] when libzmq closed"


# ---------------------------------------------------------------------- connect_routing_id


@register(
    "ROUTER->ROUTER[connect_routing_id]", flow="both", binds=("libzmq",), requires=("ROUTER",)
)
async def router_with_connect_routing_id_to_libzmq(c: CaseContext) -> str:
    """libzmq binds only: the connect routing id is ours, so we must be the side that connects.
    We send to the id before the connection is up, and the peer keeps it whatever Identity it
    announces."""
    async with c.zmtp_socket("ROUTER", identity=OUR_ID) as ours:
        theirs = c.libzmq_socket("ROUTER", routing_id=THEIR_ID)
        async with ours.monitor() as monitor:
            endpoint = theirs.bind(c.endpoint())
            c.step(f"connect to {endpoint} as {ALIAS!r}, send to it at once (queued)")
            await ours.connect(endpoint, routing_id=ALIAS)
            await ours.send_multipart([ALIAS, b"hi"])
            await expect_messages(theirs, [[OUR_ID, b"hi"]])
            expect_libzmq_saw(theirs, "ROUTER", identity=OUR_ID.decode())
            peer = await _handshake(c, monitor)
        expect_peer(peer, "ROUTER")
        if peer.identity != THEIR_ID:
            raise CaseFailed(f"our PeerInfo says Identity {peer.identity!r}, not {THEIR_ID!r}")
        c.step(f"libzmq answers; we see it as {ALIAS!r}, not its Identity {THEIR_ID!r}")
        await theirs.send_multipart([OUR_ID, b"back"])
        await expect_messages(c.end(ours), [[ALIAS, b"back"]])
        return f"sent to {ALIAS.decode()} before the handshake; libzmq routed as that id too"


@register("ROUTER<-ROUTER[connect_routing_id]", flow="both", binds=("zmtp",), requires=("ROUTER",))
async def router_from_libzmq_with_connect_routing_id(c: CaseContext) -> str:
    """zmtp binds only: the connect routing id is libzmq's, so libzmq must be the side that
    connects. It sends to the id at once; we route by the Identity it announces."""
    async with c.zmtp_socket("ROUTER", identity=OUR_ID) as ours:
        theirs = c.libzmq_socket("ROUTER", routing_id=THEIR_ID, connect_routing_id=ALIAS)
        async with ours.monitor() as monitor:
            endpoint = await ours.bind(c.endpoint())
            c.step(f"libzmq connects to {endpoint} naming us {ALIAS!r}, sends to it at once")
            theirs.connect(endpoint)
            await theirs.send_multipart([ALIAS, b"hi"])
            await expect_messages(c.end(ours), [[THEIR_ID, b"hi"]])
            peer = await _handshake(c, monitor)
        expect_peer(peer, "ROUTER")
        c.step(f"we answer {THEIR_ID!r}; libzmq sees us as {ALIAS!r}")
        await ours.send_multipart([THEIR_ID, b"back"])
        await expect_messages(theirs, [[ALIAS, b"back"]])
        expect_libzmq_saw(theirs, "ROUTER", identity=OUR_ID.decode())
        return f"libzmq sent to {ALIAS.decode()} before the handshake; replies routed both ways"


# ---------------------------------------------------------------------- invert_matching


@register("PUB->SUB[invert_matching]", flow="zmtp->libzmq", requires=("PUB",))
async def inverted_pub_to_libzmq_sub(c: CaseContext) -> str:
    """Both ends inverted. The SUB filters too, with the same subscriptions, so what it
    delivers does not depend on when they reach us (the probes only wait for the connection);
    our filter shows on the wire in PUB->XSUB[invert_matching]."""
    async with c.zmtp_socket("PUB", invert_matching=True) as ours:
        theirs = c.libzmq_socket("SUB", invert_matching=1, subscribe=TOPICS)
        peer = await c.link(ours, theirs)
        expect_peer(peer, "SUB")
        c.step("probes (subscribed by no one: they pass both inverted filters)")
        probes = await probe_until_received(c.end(ours), theirs)
        expect_libzmq_saw(theirs, "PUB")
        c.step("a1 c1 b1 x ab: libzmq SUB, subscribed to a and b, gets c1 x")
        await c.end(ours).send_many(PUBLISHED)
        await expect_messages(theirs, INVERTED, skip=PROBE)
        c.step("libzmq unsubscribes a: a gets through once we apply the cancel")
        await theirs.set_option("unsubscribe", b"a")
        rounds = await _publish_until_delivered(c.end(ours), theirs, b"a", timeout=c.timeout)
        return f"{probes} probe(s); got c1 x of a1 c1 b1 x ab; unsubscribed a: in round {rounds}"


@register("PUB->XSUB[invert_matching]", flow="zmtp->libzmq", requires=("PUB",))
async def inverted_pub_to_libzmq_xsub(c: CaseContext) -> str:
    """An XSUB does not filter (ZMQ_INVERT_MATCHING changes nothing there), so what arrives is
    what our inverted PUB chose to send: subscribed topics are the ones it drops."""
    async with c.zmtp_socket("PUB", invert_matching=True) as ours:
        theirs = c.libzmq_socket("XSUB")
        peer = await c.link(ours, theirs)
        expect_peer(peer, "XSUB")
        c.step("libzmq XSUB subscribes a, b, then sync; we publish sync, keep until sync stops")
        await theirs.send_many([[b"\x01" + t] for t in [*TOPICS, SYNC]])
        rounds = await publish_until_cancelled(c.end(ours), theirs, SYNC, KEEP)
        expect_libzmq_saw(theirs, "PUB")
        c.step("a1 c1 b1 x ab: we send only c1 x")
        await c.end(ours).send_many(PUBLISHED)
        await expect_messages(theirs, INVERTED)
        c.step("libzmq XSUB sends \\x00a: we send a again once we apply it")
        await theirs.send_multipart([b"\x00a"])
        again = await _publish_until_delivered(c.end(ours), theirs, b"a", timeout=c.timeout)
        return (
            f"a, b, sync dropped on the wire (round {rounds}); \\x00a let a through (round {again})"
        )


@register("SUB<-PUB[invert_matching]", flow="libzmq->zmtp", requires=("SUB",))
async def inverted_sub_from_libzmq_pub(c: CaseContext) -> str:
    """Both ends inverted: our SUB delivers what matches none of its subscriptions, whether
    libzmq's PUB applied them yet or not (it does when its thread touches the socket)."""
    async with c.zmtp_socket("SUB", invert_matching=True) as ours:
        for topic in TOPICS:
            ours.subscribe(topic)
        theirs = c.libzmq_socket("PUB", invert_matching=1)
        peer = await c.link(ours, theirs)
        expect_peer(peer, "PUB")
        c.step("probes (subscribed by no one: they pass both inverted filters)")
        probes = await probe_until_received(theirs, c.end(ours))
        c.step("a1 c1 b1 x ab: our SUB, subscribed to a and b, gets c1 x")
        await theirs.send_many(PUBLISHED)
        await expect_messages(c.end(ours), INVERTED, skip=PROBE)
        c.step("we unsubscribe a: a gets through once libzmq applies the cancel")
        ours.unsubscribe(b"a")
        rounds = await _publish_until_delivered(theirs, c.end(ours), b"a", timeout=c.timeout)
        return f"{probes} probe(s); got c1 x of a1 c1 b1 x ab; unsubscribed a: in round {rounds}"


# ---------------------------------------------------------------------- conflate


@register("PUSH->PULL[conflate]", flow="zmtp->libzmq", binds=("libzmq",), requires=("PUSH",))
async def conflating_push_to_libzmq_pull(c: CaseContext) -> str:
    """libzmq binds only: a sender conflates what waits for a connection, and only a connect()
    endpoint holds messages before it has one (a bound PUSH with no peer waits, as libzmq).
    So we connect first, queue 10, and libzmq binds after."""
    endpoint = _endpoint_known_in_advance(c)
    async with c.zmtp_socket("PUSH", conflate=True, reconnect_ivl=RETRY_IVL) as ours:
        async with ours.monitor() as monitor:
            c.step(f"we connect to {endpoint} (nobody there yet) and queue 10 messages")
            await ours.connect(endpoint)
            await c.end(ours).send_many(QUEUED)
            theirs = c.libzmq_socket("PULL")
            c.step("libzmq PULL binds: only the newest arrives")
            theirs.bind(endpoint)
            await expect_messages(theirs, QUEUED[-1:])
            expect_libzmq_saw(theirs, "PUSH")
            peer = await _handshake(c, monitor)
        expect_peer(peer, "PULL")
        c.step("one more: it comes next, so the 9 older ones are gone, not late")
        await ours.send(b"end")
        await expect_messages(theirs, [[b"end"]])
        return "10 queued before libzmq bound: only the newest arrived, then the next"


@register("PULL<-PUSH[conflate]", flow="libzmq->zmtp", binds=("zmtp",), requires=("PULL",))
async def conflating_pull_from_libzmq_push(c: CaseContext) -> str:
    """zmtp binds only: libzmq queues on a connect() pipe while it has no connection and then
    sends the lot in one write, which our receiver conflates; a bound libzmq PUSH with no peer
    would refuse to queue. So libzmq connects first, queues 10, and we bind after."""
    endpoint = _endpoint_known_in_advance(c)
    theirs = c.libzmq_socket("PUSH", reconnect_ivl=max(1, int(RETRY_IVL * 1000)))
    c.step(f"libzmq connects to {endpoint} (nobody there yet) and queues 10 messages")
    theirs.connect(endpoint)
    await theirs.send_many(QUEUED)
    async with c.zmtp_socket("PULL", conflate=True) as ours:
        async with ours.monitor() as monitor:
            c.step("we bind: libzmq flushes all 10 at once, we keep the newest")
            await ours.bind(endpoint)
            await expect_messages(c.end(ours), QUEUED[-1:])
            peer = await _handshake(c, monitor)
        expect_peer(peer, "PUSH")
        c.step("one more: it comes next, so the 9 older ones are gone, not late")
        await theirs.send_multipart([b"end"])
        await expect_messages(c.end(ours), [[b"end"]])
        return "10 queued by libzmq before we bound: we kept only the newest, then the next"
