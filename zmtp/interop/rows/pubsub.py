"""Rows for PUB, SUB, XPUB and XSUB against libzmq, every standard pairing.

Subscriptions reach a publisher in its own time, so the cases wait on messages, never on
delays: numbered probes until one gets through (:func:`~zmtp.interop.probe_until_received`),
subscription notifications on an XPUB, or, for a cancel seen by an XSUB (which does not filter),
publishing until the publisher stops sending the topic
(:func:`~zmtp.interop.publish_until_cancelled`). A libzmq publisher applies subscriptions only
when its thread touches the socket; every libzmq call here does.
"""

from __future__ import annotations

from ..checks import (
    expect_libzmq_saw,
    expect_messages,
    expect_peer,
    probe_until_received,
    publish_until_cancelled,
)
from ..common import PROBE, Message
from ..context import CaseContext
from ..registry import register

TOPICS = [b"a", b"b"]
#: Published after the probes: what a subscriber to TOPICS must get, in order.
PUBLISHED: list[Message] = [[b"a1", b"body"], [b"c1"], [b"b1", b"body"], [b"x"], [b"ab"]]
MATCHING: list[Message] = [[b"a1", b"body"], [b"b1", b"body"], [b"ab"]]


@register("PUB->SUB", flow="zmtp->libzmq", requires=("PUB",))
async def pub_to_libzmq_sub(c: CaseContext) -> str:
    async with c.zmtp_socket("PUB") as ours:
        theirs = c.libzmq_socket("SUB", subscribe=TOPICS)
        peer = await c.link(ours, theirs)
        expect_peer(peer, "SUB")
        c.step("probes until libzmq's subscriptions reach us")
        await theirs.set_option("subscribe", PROBE)  # after TOPICS, on the same connection
        probes = await probe_until_received(c.end(ours), theirs)
        expect_libzmq_saw(theirs, "PUB")
        c.step("topics a, b of a1 c1 b1 x ab")
        await c.end(ours).send_many(PUBLISHED)
        await expect_messages(theirs, MATCHING, skip=PROBE)
        c.step("libzmq unsubscribes a; a2 b2")
        await theirs.set_option("unsubscribe", b"a")
        await c.end(ours).send_many([[b"a2"], [b"b2"]])
        await expect_messages(theirs, [[b"b2"]], skip=PROBE)
        return f"{probes} probe(s) to sync; prefixes a, b honoured; unsubscribe a honoured"


@register("SUB<-PUB", flow="libzmq->zmtp", requires=("SUB",))
async def sub_from_libzmq_pub(c: CaseContext) -> str:
    async with c.zmtp_socket("SUB") as ours:
        for topic in TOPICS:
            ours.subscribe(topic)
        theirs = c.libzmq_socket("PUB")
        peer = await c.link(ours, theirs)
        expect_peer(peer, "PUB")
        c.step("probes until our subscriptions reach libzmq")
        ours.subscribe(PROBE)  # after TOPICS, on the same connection
        probes = await probe_until_received(theirs, c.end(ours))
        c.step("topics a, b of a1 c1 b1 x ab")
        await theirs.send_many(PUBLISHED)
        await expect_messages(c.end(ours), MATCHING, skip=PROBE)
        c.step("we unsubscribe a; a2 b2")
        ours.unsubscribe(b"a")
        await theirs.send_many([[b"a2"], [b"b2"]])
        await expect_messages(c.end(ours), [[b"b2"]], skip=PROBE)
        return f"{probes} probe(s) to sync; libzmq PUB honoured prefixes a, b; unsubscribe a"


@register("PUB->XSUB", flow="zmtp->libzmq", requires=("PUB",))
async def pub_to_libzmq_xsub(c: CaseContext) -> str:
    async with c.zmtp_socket("PUB") as ours:
        theirs = c.libzmq_socket("XSUB")
        peer = await c.link(ours, theirs)
        expect_peer(peer, "XSUB")
        c.step("libzmq XSUB subscribes a, b, probe with \\x01topic data frames")
        await theirs.send_many([[b"\x01" + t] for t in [*TOPICS, PROBE]])
        probes = await probe_until_received(c.end(ours), theirs)
        c.step("topics a, b of a1 c1 b1 x ab (an XSUB does not filter: we do)")
        await c.end(ours).send_many(PUBLISHED)
        await expect_messages(theirs, MATCHING, skip=PROBE)
        c.step("libzmq XSUB sends \\x00a; we publish a, b until a stops")
        await theirs.send_multipart([b"\x00a"])
        rounds = await publish_until_cancelled(c.end(ours), theirs, b"a", b"b")
        return f"{probes} probe(s) to sync; we filtered for a, b; \\x00a applied ({rounds} rounds)"


@register("XSUB<-PUB", flow="both", requires=("XSUB",))
async def xsub_from_libzmq_pub(c: CaseContext) -> str:
    async with c.zmtp_socket("XSUB") as ours:
        theirs = c.libzmq_socket("PUB")
        peer = await c.link(ours, theirs)
        expect_peer(peer, "PUB")
        c.step("we subscribe a, b, probe with \\x01topic data frames")
        await c.end(ours).send_many([[b"\x01" + t] for t in [*TOPICS, PROBE]])
        probes = await probe_until_received(theirs, c.end(ours))
        c.step("topics a, b of a1 c1 b1 x ab (we do not filter: libzmq does)")
        await theirs.send_many(PUBLISHED)
        await expect_messages(c.end(ours), MATCHING, skip=PROBE)
        c.step("we send \\x00a; libzmq publishes a, b until a stops")
        await ours.send(b"\x00a")
        rounds = await publish_until_cancelled(theirs, c.end(ours), b"a", b"b")
        return f"{probes} probe(s) to sync; libzmq filtered for a, b; \\x00a applied ({rounds})"


@register("XPUB<-SUB", flow="both", requires=("XPUB",))
async def xpub_from_libzmq_sub(c: CaseContext) -> str:
    async with c.zmtp_socket("XPUB", xpub_welcome_msg=b"WELCOME!") as ours:
        theirs = c.libzmq_socket("SUB", subscribe=b"WEL")  # a SUB filters the welcome too
        peer = await c.link(ours, theirs)
        expect_peer(peer, "SUB")
        c.step("welcome message and the first subscription notification")
        await expect_messages(theirs, [[b"WELCOME!"]])
        expect_libzmq_saw(theirs, "XPUB")
        await expect_messages(c.end(ours), [[b"\x01WEL"]])
        c.step("libzmq subscribes news")
        await theirs.set_option("subscribe", b"news")
        await expect_messages(c.end(ours), [[b"\x01news"]])
        await c.end(ours).send_many([[b"sports"], [b"news!", b"more"]])
        await expect_messages(theirs, [[b"news!", b"more"]])
        c.step("libzmq unsubscribes news, then WEL")
        await theirs.set_option("unsubscribe", b"news")
        await expect_messages(c.end(ours), [[b"\x00news"]])
        await theirs.set_option("unsubscribe", b"WEL")
        await expect_messages(c.end(ours), [[b"\x00WEL"]])
        return "welcome delivered; \\x01WEL \\x01news \\x00news \\x00WEL notified; news routed"


@register("XPUB<-XSUB", flow="both", requires=("XPUB",))
async def xpub_from_libzmq_xsub(c: CaseContext) -> str:
    async with c.zmtp_socket("XPUB") as ours:
        theirs = c.libzmq_socket("XSUB")
        peer = await c.link(ours, theirs)
        expect_peer(peer, "XSUB")
        c.step("libzmq XSUB sends \\x01topic as a data frame")
        await theirs.send_multipart([b"\x01topic"])
        await expect_messages(c.end(ours), [[b"\x01topic"]])
        c.step("an upstream message")
        await theirs.send_multipart([b"upstream", b"message"])
        await expect_messages(c.end(ours), [[b"upstream", b"message"]])
        c.step("we publish other, topic-1")
        await c.end(ours).send_many([[b"other"], [b"topic-1", b"x"]])
        await expect_messages(theirs, [[b"topic-1", b"x"]])
        expect_libzmq_saw(theirs, "XPUB")
        c.step("libzmq XSUB sends \\x00topic, then subscribes end")
        await theirs.send_many([[b"\x00topic"], [b"\x01end"]])
        await expect_messages(c.end(ours), [[b"\x00topic"], [b"\x01end"]])
        await c.end(ours).send_many([[b"topic-2"], [b"end"]])
        await expect_messages(theirs, [[b"end"]])  # topic-2 was not sent: the cancel applied
        return "\\x01topic/\\x00topic data frames applied and delivered; upstream delivered"


@register("XSUB->XPUB", flow="both", requires=("XSUB",))
async def xsub_to_libzmq_xpub(c: CaseContext) -> str:
    async with c.zmtp_socket("XSUB") as ours:
        theirs = c.libzmq_socket("XPUB", xpub_welcome_msg=b"HELLO")
        peer = await c.link(ours, theirs)
        expect_peer(peer, "XPUB")
        c.step("we send \\x01abc (a data frame, as libzmq's XSUB does)")
        await ours.send(b"\x01abc")
        await expect_messages(theirs, [[b"\x01abc"]])
        expect_libzmq_saw(theirs, "XSUB")
        c.step("libzmq's welcome message (an XSUB does not filter it)")
        await expect_messages(c.end(ours), [[b"HELLO"]])
        c.step("subscribe(def): the SUBSCRIBE command form")
        ours.subscribe(b"def")
        await expect_messages(theirs, [[b"\x01def"]])
        await theirs.send_many([[b"abc-1"], [b"zzz"], [b"def-1", b"more"]])
        await expect_messages(c.end(ours), [[b"abc-1"], [b"def-1", b"more"]])
        c.step("an upstream message")
        await ours.send_multipart([b"upstream", b"data"])
        await expect_messages(theirs, [[b"upstream", b"data"]])
        c.step("we send \\x00abc; unsubscribe(def) (CANCEL)")
        await ours.send(b"\x00abc")
        await expect_messages(theirs, [[b"\x00abc"]])
        ours.unsubscribe(b"def")
        await expect_messages(theirs, [[b"\x00def"]])
        ours.subscribe(b"end")
        await expect_messages(theirs, [[b"\x01end"]])
        await theirs.send_many([[b"abc-2"], [b"def-2"], [b"end"]])
        await expect_messages(c.end(ours), [[b"end"]])  # libzmq applied both cancels
        return "libzmq XPUB applied and delivered our data-frame and command subscriptions"


@register("SUB->XPUB", flow="both", requires=("SUB",))
async def sub_to_libzmq_xpub(c: CaseContext) -> str:
    async with c.zmtp_socket("SUB") as ours:
        ours.subscribe(b"news")
        theirs = c.libzmq_socket("XPUB", xpub_welcome_msg=b"news:welcome")
        peer = await c.link(ours, theirs)
        expect_peer(peer, "XPUB")
        c.step("libzmq XPUB sees our SUBSCRIBE; we get its welcome")
        await expect_messages(theirs, [[b"\x01news"]])
        expect_libzmq_saw(theirs, "SUB")
        await expect_messages(c.end(ours), [[b"news:welcome"]])
        c.step("libzmq publishes sports, news!")
        await theirs.send_many([[b"sports"], [b"news!", b"more"]])
        await expect_messages(c.end(ours), [[b"news!", b"more"]])
        c.step("subscribe(weather), unsubscribe(news)")
        ours.subscribe(b"weather")
        await expect_messages(theirs, [[b"\x01weather"]])
        ours.unsubscribe(b"news")
        await expect_messages(theirs, [[b"\x00news"]])
        await theirs.send_many([[b"news-2"], [b"weather-1"]])
        await expect_messages(c.end(ours), [[b"weather-1"]])
        return "libzmq XPUB saw \\x01news \\x01weather \\x00news; welcome and topics delivered"
