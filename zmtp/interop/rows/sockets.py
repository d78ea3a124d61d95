"""Rows for PUSH, PULL, PAIR, REQ, REP, DEALER and ROUTER against libzmq.

Every standard pairing of these types appears once with zmtp on each side. Request-reply rows
check the envelopes on the wire as libzmq sees them (delimiters, routing ids, request ids), not
just that a reply comes back.
"""

from __future__ import annotations

import sys

from ..checks import (
    big_payload,
    expect_libzmq_saw,
    expect_messages,
    expect_peer,
    sample_messages,
    transfer,
)
from ..common import CaseFailed, Message
from ..context import CaseContext
from ..registry import register

# Identities set where a case needs to route by name (plain ASCII: libzmq shows them as str).
OUR_ID = b"zmtp-side"
THEIR_ID = b"libzmq-side"


def _bodies(kind: bytes) -> list[Message]:
    """Request or reply bodies for round trips: multipart, an empty frame inside the body (the
    envelope ends at the *first* empty frame), a 1 MiB frame."""
    return [[kind, b"0"], [kind, b"", b"1"], [kind, b"2", big_payload()]]


def expect_generated_id(routing_id: bytes, who: str) -> None:
    """libzmq's (and our) generated routing ids: 5 bytes, 0x00 then a uint32 counter."""
    if len(routing_id) != 5 or routing_id[0] != 0:
        raise CaseFailed(f"{who} generated routing id {routing_id!r}: not 5 bytes starting 0x00")


# ---------------------------------------------------------------------- PUSH, PULL, PAIR


async def _one_way(c: CaseContext, ours_type: str, theirs_type: str, outgoing: bool) -> str:
    async with c.zmtp_socket(ours_type) as ours:
        theirs = c.libzmq_socket(theirs_type)
        peer = await c.link(ours, theirs)
        expect_peer(peer, theirs_type)
        messages = sample_messages(c.count)
        if outgoing:
            c.step(f"zmtp {ours_type} -> libzmq {theirs_type}: {len(messages)} messages")
            n = await transfer(c.end(ours), theirs, messages)
            expect_libzmq_saw(theirs, ours_type)
            return f"{n} msgs incl. 1 MiB in order; libzmq saw Socket-Type {ours_type}"
        c.step(f"libzmq {theirs_type} -> zmtp {ours_type}: {len(messages)} messages")
        n = await transfer(theirs, c.end(ours), messages)
        return f"{n} msgs incl. 1 MiB in order; libzmq accepted Socket-Type {ours_type}"


@register("PUSH->PULL", flow="zmtp->libzmq")
async def push_to_libzmq_pull(c: CaseContext) -> str:
    return await _one_way(c, "PUSH", "PULL", outgoing=True)


@register("PULL<-PUSH", flow="libzmq->zmtp")
async def pull_from_libzmq_push(c: CaseContext) -> str:
    return await _one_way(c, "PULL", "PUSH", outgoing=False)


async def _both_ways(c: CaseContext, socket_type: str, identity: str | None) -> str:
    async with c.zmtp_socket(socket_type) as ours:
        theirs = c.libzmq_socket(socket_type)
        peer = await c.link(ours, theirs)
        expect_peer(peer, socket_type)
        messages = sample_messages(c.count)
        c.step(f"zmtp -> libzmq: {len(messages)} messages")
        n = await transfer(c.end(ours), theirs, messages)
        expect_libzmq_saw(theirs, socket_type, identity)
        c.step(f"libzmq -> zmtp: {len(messages)} messages")
        await transfer(theirs, c.end(ours), messages)
        return f"{n} msgs each way incl. 1 MiB in order; libzmq saw Socket-Type {socket_type}"


@register("PAIR<->PAIR", flow="both")
async def pair_with_libzmq_pair(c: CaseContext) -> str:
    return await _both_ways(c, "PAIR", identity=None)


# ---------------------------------------------------------------------- REQ, REP


@register("REQ->REP", flow="both", requires=("REQ",))
async def req_to_libzmq_rep(c: CaseContext) -> str:
    async with c.zmtp_socket("REQ") as ours:
        theirs = c.libzmq_socket("REP")
        peer = await c.link(ours, theirs)
        expect_peer(peer, "REP")
        for i, (request, reply) in enumerate(zip(_bodies(b"req"), _bodies(b"rep"), strict=True)):
            c.step(f"round trip {i}: zmtp REQ -> libzmq REP")
            await ours.send_multipart(request)
            await expect_messages(theirs, [request])
            if i == 0:  # a REQ announces its (empty) Identity in READY
                expect_libzmq_saw(theirs, "REQ", identity="")
            await theirs.send_multipart(reply)
            await expect_messages(c.end(ours), [reply])
        return "3 multipart round trips (empty frame in body, 1 MiB); libzmq saw Socket-Type REQ"


@register("REP<-REQ", flow="both", requires=("REP",))
async def rep_from_libzmq_req(c: CaseContext) -> str:
    async with c.zmtp_socket("REP") as ours:
        theirs = c.libzmq_socket("REQ")
        peer = await c.link(ours, theirs)
        expect_peer(peer, "REQ")
        for i, (request, reply) in enumerate(zip(_bodies(b"req"), _bodies(b"rep"), strict=True)):
            c.step(f"round trip {i}: libzmq REQ -> zmtp REP")
            await theirs.send_multipart(request)
            await expect_messages(c.end(ours), [request])
            await ours.send_multipart(reply)
            await expect_messages(theirs, [reply])
            if i == 0:
                expect_libzmq_saw(theirs, "REP")
        return "3 multipart round trips (empty frame in body, 1 MiB); libzmq saw Socket-Type REP"


@register("REQ->ROUTER", flow="both", requires=("REQ",))
async def req_to_libzmq_router(c: CaseContext) -> str:
    async with c.zmtp_socket("REQ", identity=OUR_ID) as ours:
        theirs = c.libzmq_socket("ROUTER")
        peer = await c.link(ours, theirs)
        expect_peer(peer, "ROUTER")
        c.step("zmtp REQ -> libzmq ROUTER: [Identity, '', body]")
        await ours.send_multipart([b"hello", b"there"])
        await expect_messages(theirs, [[OUR_ID, b"", b"hello", b"there"]])
        expect_libzmq_saw(theirs, "REQ", identity=OUR_ID.decode())
        c.step("a reply without delimiter (discarded), then a good one")
        await theirs.send_many([[OUR_ID, b"no delimiter"], [OUR_ID, b"", b"reply", b"1"]])
        await expect_messages(c.end(ours), [[b"reply", b"1"]])
        c.step("second round trip")
        await ours.send(b"again")
        await expect_messages(theirs, [[OUR_ID, b"", b"again"]])
        await theirs.send_multipart([OUR_ID, b"", b"reply 2"])
        await expect_messages(c.end(ours), [[b"reply 2"]])
        return "libzmq ROUTER saw [Identity, '', body]; malformed reply discarded; 2 round trips"


@register("REQ->ROUTER[correlate]", flow="both", requires=("REQ",))
async def correlated_req_to_libzmq_router(c: CaseContext) -> str:
    async with c.zmtp_socket("REQ", req_correlate=True, req_relaxed=True) as ours:
        theirs = c.libzmq_socket("ROUTER")
        peer = await c.link(ours, theirs)
        expect_peer(peer, "ROUTER")
        c.step("first request: [generated id, request id, '', body]")
        await ours.send(b"first")
        [[routing_id, old_id, empty, body]] = await theirs.recv_many(1)
        expect_generated_id(routing_id, "libzmq ROUTER")
        if (len(old_id), empty, body) != (4, b"", b"first"):
            raise CaseFailed(f"libzmq ROUTER saw request id {old_id!r}, {empty!r}, {body!r}")
        c.step("second request (relaxed: abandons the first)")
        await ours.send(b"second")
        await expect_messages(theirs, [[routing_id, _next_request_id(old_id), b"", b"second"]])
        c.step("a stale reply (first request id), then the right one")
        await theirs.send_many(
            [
                [routing_id, old_id, b"", b"stale"],
                [routing_id, _next_request_id(old_id), b"", b"fresh"],
            ]
        )
        await expect_messages(c.end(ours), [[b"fresh"]])
        return "request ids consecutive (host order); stale reply dropped, matching one taken"


def _next_request_id(request_id: bytes) -> bytes:
    """The id after ``request_id``: a uint32 counter copied in host byte order (as libzmq)."""
    value = (int.from_bytes(request_id, sys.byteorder) + 1) & 0xFFFFFFFF
    return value.to_bytes(4, sys.byteorder)


@register("ROUTER<-REQ", flow="both", requires=("ROUTER",))
async def router_from_libzmq_req(c: CaseContext) -> str:
    async with c.zmtp_socket("ROUTER", identity=OUR_ID) as ours:
        theirs = c.libzmq_socket("REQ", routing_id=THEIR_ID)
        peer = await c.link(ours, theirs)
        expect_peer(peer, "REQ")
        for i in range(2):
            c.step(f"round trip {i}: Identity {THEIR_ID!r} used verbatim")
            await theirs.send_multipart([b"request", str(i).encode()])
            await expect_messages(c.end(ours), [[THEIR_ID, b"", b"request", str(i).encode()]])
            await ours.send_multipart([THEIR_ID, b"", b"reply", str(i).encode()])
            await expect_messages(theirs, [[b"reply", str(i).encode()]])
        expect_libzmq_saw(theirs, "ROUTER", identity=OUR_ID.decode())
        return "libzmq REQ's Identity used verbatim; 2 round trips; libzmq saw our Identity"


# ---------------------------------------------------------------------- DEALER, ROUTER

ENVELOPE = [b"hop1", b"hop2", b""]


@register("DEALER->REP", flow="both", requires=("DEALER",))
async def dealer_to_libzmq_rep(c: CaseContext) -> str:
    async with c.zmtp_socket("DEALER") as ours:
        theirs = c.libzmq_socket("REP")
        peer = await c.link(ours, theirs)
        expect_peer(peer, "REP")
        c.step("a request without delimiter (dropped by REP), then [hop1, hop2, '', body]")
        await ours.send_multipart([b"no delimiter"])
        await ours.send_multipart([*ENVELOPE, b"hello", b"world"])
        await expect_messages(theirs, [[b"hello", b"world"]])
        expect_libzmq_saw(theirs, "DEALER", identity="")
        c.step("libzmq REP echoes the envelope")
        await theirs.send_multipart([b"reply", b"parts"])
        await expect_messages(c.end(ours), [[*ENVELOPE, b"reply", b"parts"]])
        return "libzmq REP echoed a 2-hop envelope; message without delimiter dropped"


@register("REP<-DEALER", flow="both", requires=("REP",))
async def rep_from_libzmq_dealer(c: CaseContext) -> str:
    async with c.zmtp_socket("REP") as ours:
        theirs = c.libzmq_socket("DEALER")
        peer = await c.link(ours, theirs)
        expect_peer(peer, "DEALER")
        c.step("a request without delimiter (dropped), then [hop1, hop2, '', body]")
        await theirs.send_many([[b"no delimiter"], [*ENVELOPE, b"hello", b"world"]])
        await expect_messages(c.end(ours), [[b"hello", b"world"]])
        c.step("zmtp REP echoes the envelope")
        await ours.send_multipart([b"reply", b"parts"])
        await expect_messages(theirs, [[*ENVELOPE, b"reply", b"parts"]])
        expect_libzmq_saw(theirs, "REP")
        c.step("second request, one hop")
        await theirs.send_multipart([b"hop", b"", b"again"])
        await expect_messages(c.end(ours), [[b"again"]])
        await ours.send(b"reply 2")
        await expect_messages(theirs, [[b"hop", b"", b"reply 2"]])
        return "zmtp REP echoed 2-hop and 1-hop envelopes; message without delimiter dropped"


@register("DEALER->ROUTER", flow="both", requires=("DEALER",))
async def dealer_to_libzmq_router(c: CaseContext) -> str:
    async with c.zmtp_socket("DEALER") as ours:
        theirs = c.libzmq_socket("ROUTER", routing_id=THEIR_ID)
        peer = await c.link(ours, theirs)
        expect_peer(peer, "ROUTER")
        if peer.identity != THEIR_ID:
            raise CaseFailed(f"our PeerInfo says Identity {peer.identity!r}, not {THEIR_ID!r}")
        messages = [[b"x", b"y"], [b""], [b"one"]]
        c.step("zmtp DEALER -> libzmq ROUTER (no Identity: libzmq generates one)")
        await c.end(ours).send_many(messages)
        received = await theirs.recv_many(len(messages))
        routing_id = received[0][0]
        expect_generated_id(routing_id, "libzmq ROUTER")
        expect_libzmq_saw(theirs, "DEALER", identity="")
        expected = [[routing_id, *m] for m in messages]
        if received != expected:
            raise CaseFailed(f"libzmq ROUTER received {received!r}, expected {expected!r}")
        c.step("libzmq ROUTER -> zmtp DEALER by that id")
        await theirs.send_many([[routing_id, *m] for m in reversed(messages)])
        await expect_messages(c.end(ours), list(reversed(messages)))
        return f"libzmq generated id {routing_id.hex()}; 3 msgs each way routed by it"


@register("ROUTER<-DEALER", flow="both", requires=("ROUTER",))
async def router_from_libzmq_dealer(c: CaseContext) -> str:
    async with c.zmtp_socket("ROUTER", identity=OUR_ID) as ours:
        theirs = c.libzmq_socket("DEALER")
        peer = await c.link(ours, theirs)
        expect_peer(peer, "DEALER")
        messages = [[b"hi", b"there"], [b""], [b"one"]]
        c.step("libzmq DEALER -> zmtp ROUTER (no Identity: we generate one)")
        await theirs.send_many(messages)
        received = await c.end(ours).recv_many(len(messages))
        routing_id = received[0][0]
        expect_generated_id(routing_id, "zmtp ROUTER")
        expected = [[routing_id, *m] for m in messages]
        if received != expected:
            raise CaseFailed(f"zmtp ROUTER received {received!r}, expected {expected!r}")
        c.step("zmtp ROUTER -> libzmq DEALER by that id")
        await c.end(ours).send_many([[routing_id, *m] for m in reversed(messages)])
        await expect_messages(theirs, list(reversed(messages)))
        expect_libzmq_saw(theirs, "ROUTER", identity=OUR_ID.decode())
        return f"we generated id {routing_id.hex()}; 3 msgs each way; libzmq saw our Identity"


@register("DEALER<->DEALER", flow="both", requires=("DEALER",))
async def dealer_with_libzmq_dealer(c: CaseContext) -> str:
    return await _both_ways(c, "DEALER", identity="")


@register("ROUTER<->ROUTER", flow="both", requires=("ROUTER",))
async def router_with_libzmq_router(c: CaseContext) -> str:
    async with c.zmtp_socket("ROUTER", identity=OUR_ID, router_mandatory=True) as ours:
        theirs = c.libzmq_socket("ROUTER", routing_id=THEIR_ID, router_mandatory=1)
        peer = await c.link(ours, theirs)
        expect_peer(peer, "ROUTER")
        # We learned libzmq's Identity from its READY, so we can speak first.
        c.step(f"zmtp ROUTER -> libzmq ROUTER addressed {THEIR_ID!r}")
        await ours.send_multipart([THEIR_ID, b"ping", b"1"])
        await expect_messages(theirs, [[OUR_ID, b"ping", b"1"]])
        expect_libzmq_saw(theirs, "ROUTER", identity=OUR_ID.decode())
        c.step(f"libzmq ROUTER (router_mandatory) -> zmtp ROUTER addressed {OUR_ID!r}")
        await theirs.send_many([[OUR_ID, b"pong", b"1"], [OUR_ID, b"pong", b"2"]])
        await expect_messages(c.end(ours), [[THEIR_ID, b"pong", b"1"], [THEIR_ID, b"pong", b"2"]])
        return "both routed by Identity; libzmq router_mandatory found us"
