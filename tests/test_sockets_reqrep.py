"""REQ, REP, DEALER, ROUTER: ours against ours on every transport, and byte by byte against a
hand-written ZMTP peer (the envelopes of
docs/libzmq-notes.md#req-rep-dealer-and-router-envelopes)."""

from __future__ import annotations

import struct

import anyio
import pytest

import zmtp
from zmtp.testing import (
    TIMEOUT,
    linked,
    nothing_pending,
    raw_client,
    raw_server,
    recv_within,
    wait_event,
)
from zmtp.testing.wire import command, frame, message

pytestmark = pytest.mark.anyio

TRANSPORTS = ["tcp", "ipc", "inproc"]


# ---------------------------------------------------------------------- REQ / REP


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_req_rep_round_trips_and_alternates(transport: str) -> None:
    async with linked("REP", "REQ", transport) as (rep, req):
        for i in range(3):
            await req.send_multipart([b"q", str(i).encode()])
            assert await recv_within(rep) == [b"q", str(i).encode()]
            await rep.send_multipart([b"r", str(i).encode()])
            assert await recv_within(req) == [b"r", str(i).encode()]


async def test_req_enforces_alternation_with_clear_errors() -> None:
    async with linked("REP", "REQ", "inproc") as (rep, req):
        with pytest.raises(zmtp.InvalidState, match="no request pending"):
            await req.recv()
        await req.send(b"one")
        with pytest.raises(zmtp.InvalidState, match="already pending"):
            await req.send(b"two")
        with pytest.raises(zmtp.InvalidState, match="no request to answer"):
            await rep.send(b"early")
        assert await rep.recv() == b"one"
        with pytest.raises(zmtp.InvalidState, match="send\\(\\) the reply"):
            await rep.recv()
        await rep.send(b"ok")
        assert await req.recv() == b"ok"


async def test_req_load_balances_and_takes_the_reply_only_from_the_peer_asked() -> None:
    async with (
        zmtp.Socket(zmtp.REQ, linger=0) as req,
        zmtp.Socket(zmtp.REP, linger=0) as rep1,
        zmtp.Socket(zmtp.REP, linger=0) as rep2,
    ):
        e1 = await rep1.bind("inproc://lb-rep1-" + str(id(req)))
        e2 = await rep2.bind("inproc://lb-rep2-" + str(id(req)))
        await req.connect(e1)
        await req.connect(e2)
        await req.send(b"a")
        assert await recv_within(rep1) == [b"a"]
        await rep1.send(b"from-1")
        assert await req.recv() == b"from-1"
        await req.send(b"b")
        assert await recv_within(rep2) == [b"b"]  # round-robin: the second REP this time
        await rep2.send(b"from-2")
        assert await req.recv() == b"from-2"


async def test_req_relaxed_abandons_the_pending_request() -> None:
    async with linked("REP", "REQ", "tcp", connect_options={"req_relaxed": True}) as (rep, req):
        await req.send(b"first")
        assert await recv_within(rep) == [b"first"]
        await req.send(b"second")  # allowed: the first request is abandoned
        await rep.send(b"late reply to first")
        assert await recv_within(rep) == [b"second"]
        await rep.send(b"reply to second")
        # Without correlation the late reply is indistinguishable (as in libzmq)...
        assert await req.recv() == b"late reply to first"


async def test_req_correlate_discards_a_late_reply() -> None:
    opts = {"req_relaxed": True, "req_correlate": True}
    async with linked("REP", "REQ", "tcp", connect_options=opts) as (rep, req):
        await req.send(b"first")
        assert await recv_within(rep) == [b"first"]
        await req.send(b"second")
        await rep.send(b"late reply to first")
        assert await recv_within(rep) == [b"second"]
        await rep.send(b"reply to second")
        assert await recv_within(req) == [b"reply to second"]  # ...with it, it is discarded


async def test_req_recv_timeout_resets_it_after_the_peer_died() -> None:
    async with zmtp.Socket(zmtp.REQ, linger=0, recv_timeout=0.05) as req:
        async with zmtp.Socket(zmtp.REP, linger=0) as rep:
            endpoint = await rep.bind("tcp://127.0.0.1:*")
            await req.connect(endpoint)
            await req.send(b"lost")
            assert await recv_within(rep) == [b"lost"]
        # The REP is gone with our request. recv times out and the REQ may send again.
        with pytest.raises(TimeoutError):
            await req.recv()
        req.options.recv_timeout = None  # read per call, like ZMQ_RCVTIMEO; no race below
        async with zmtp.Socket(zmtp.REP, linger=0) as rep2:
            await rep2.bind(endpoint)
            await req.send(b"again")
            assert await recv_within(rep2) == [b"again"]
            await rep2.send(b"answer")
            with anyio.fail_after(TIMEOUT):
                assert await req.recv_multipart() == [b"answer"]


async def test_rep_echoes_a_multi_hop_envelope() -> None:
    async with linked("REP", "DEALER", "inproc") as (rep, dealer):
        await dealer.send_multipart([b"hop2", b"hop1", b"", b"body", b"more"])
        assert await recv_within(rep) == [b"body", b"more"]
        await rep.send(b"reply")
        assert await recv_within(dealer) == [b"hop2", b"hop1", b"", b"reply"]


async def test_rep_discards_requests_without_a_delimiter() -> None:
    async with linked("REP", "DEALER", "tcp") as (rep, dealer):
        await dealer.send_multipart([b"no", b"delimiter"])
        await dealer.send_multipart([b"trailing", b""])  # empty last frame: not a delimiter
        await dealer.send_multipart([b"", b"good"])
        assert await recv_within(rep) == [b"good"]
        await rep.send(b"reply")
        assert await nothing_pending(rep)


async def test_rep_drops_the_reply_when_the_requester_is_gone() -> None:
    async with zmtp.Socket(zmtp.REP, linger=0) as rep:
        endpoint = await rep.bind("tcp://127.0.0.1:*")
        async with rep.monitor() as mon:
            async with zmtp.Socket(zmtp.REQ, linger=0) as req:
                await req.connect(endpoint)
                await req.send(b"q")
                assert await recv_within(rep) == [b"q"]
            await wait_event(mon, zmtp.Disconnected)
        await rep.send(b"nobody listens")  # neither blocks nor raises
        with pytest.raises(zmtp.InvalidState):
            await rep.send(b"twice")


# ---------------------------------------------------------------------- byte level


async def test_req_wire_format_and_malformed_replies_are_dropped_not_fatal() -> None:
    async with raw_server() as server, zmtp.Socket(zmtp.REQ, linger=0) as req:
        await req.connect(server.endpoint)
        peer = await server.accept()
        props = await peer.handshake("REP")
        assert props["Socket-Type"] == b"REQ" and props["Identity"] == b""
        await req.send_multipart([b"a", b"b"])
        # as libzmq's REQ (libzmq-notes.md): 01 00 | 01 01 61 | 00 01 62
        assert await peer.read_exact(8) == bytes.fromhex("0100010161000162")
        await peer.send(message(b"no-delimiter"))  # libzmq would drop the connection here
        await peer.send(message(b"x", b"", b"wrong first frame"))
        await peer.send(message(b"", b"reply"))
        assert await recv_within(req) == [b"reply"]


async def test_req_correlate_wire_format() -> None:
    async with raw_server() as server, zmtp.Socket(zmtp.REQ, linger=0, req_correlate=True) as req:
        await req.connect(server.endpoint)
        peer = await server.accept()
        await peer.handshake("ROUTER")
        await req.send(b"x")
        raw = await peer.read_exact(6 + 2 + 3)
        assert raw[:2] == b"\x01\x04" and raw[6:] == bytes.fromhex("0100000178")
        request_id = raw[2:6]
        await peer.send(
            message(struct.pack("=I", struct.unpack("=I", request_id)[0] + 1), b"", b"no")
        )
        await peer.send(message(request_id, b"", b"yes"))
        assert await recv_within(req) == [b"yes"]
        await req.send(b"y")  # ids increase by one per request, in host byte order
        raw = await peer.read_exact(6)
        assert struct.unpack("=I", raw[2:6])[0] == (struct.unpack("=I", request_id)[0] + 1) % 2**32


async def test_rep_wire_format_echoes_envelope() -> None:
    async with zmtp.Socket(zmtp.REP, linger=0) as rep:
        endpoint = await rep.bind("tcp://127.0.0.1:*")
        async with raw_client(endpoint) as peer:
            await peer.handshake("DEALER")
            await peer.send(message(b"hop1", b"req"))  # no delimiter: silently discarded
            await peer.send(message(b"hop1", b"", b"req"))
            assert await recv_within(rep) == [b"req"]
            await rep.send(b"rep")
            # as libzmq's REP (libzmq-notes.md): 01 04 hop1 | 01 00 | 00 03 rep
            assert (
                await peer.read_exact(13)
                == bytes.fromhex("0104") + b"hop1" + bytes.fromhex("01000003") + b"rep"
            )


async def test_router_sends_identity_in_ready_and_generates_5_byte_ids() -> None:
    async with zmtp.Socket(zmtp.ROUTER, linger=0, identity=b"rtr") as router:
        endpoint = await router.bind("tcp://127.0.0.1:*")
        async with raw_client(endpoint) as a, raw_client(endpoint) as b:
            assert (await a.handshake("DEALER"))["Identity"] == b"rtr"
            await b.handshake("DEALER", extra={"Identity": b""})
            await a.send(message(b"from-a"))
            id_a, body = await recv_within(router)
            assert body == b"from-a"
            await b.send(message(b"from-b"))
            id_b, body = await recv_within(router)
            assert body == b"from-b"
            for rid in (id_a, id_b):
                assert len(rid) == 5 and rid[0] == 0
            assert int.from_bytes(id_b[1:], "big") == (int.from_bytes(id_a[1:], "big") + 1) % 2**32
            await router.send_multipart([id_b, b"to-b", b"2"])
            assert await b.read_message() == [b"to-b", b"2"]


# ---------------------------------------------------------------------- DEALER / ROUTER


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_dealer_router_identity_verbatim_and_reply_routing(transport: str) -> None:
    async with linked("ROUTER", "DEALER", transport, connect_options={"identity": b"bob"}) as (
        router,
        dealer,
    ):
        await dealer.send_multipart([b"", b"hello"])
        assert await recv_within(router) == [b"bob", b"", b"hello"]
        await router.send_multipart([b"bob", b"", b"world"])
        assert await recv_within(dealer) == [b"", b"world"]


async def test_dealer_round_robin_and_fair_queue() -> None:
    async with (
        zmtp.Socket(zmtp.DEALER, linger=0) as dealer,
        zmtp.Socket(zmtp.ROUTER, linger=0) as r1,
        zmtp.Socket(zmtp.ROUTER, linger=0) as r2,
    ):
        for r in (r1, r2):
            async with dealer.monitor() as mon:
                await dealer.connect(await r.bind("tcp://127.0.0.1:*"))
                await wait_event(mon, zmtp.HandshakeSucceeded)
        for i in range(4):
            await dealer.send(str(i).encode())
        got1 = [(await recv_within(r1))[1] for _ in range(2)]
        got2 = [(await recv_within(r2))[1] for _ in range(2)]
        assert sorted(got1 + got2) == [b"0", b"1", b"2", b"3"] and len(set(got1)) == 2


async def test_router_unroutable_is_dropped_or_raises_with_mandatory() -> None:
    async with linked("ROUTER", "DEALER", "tcp", connect_options={"identity": b"d"}) as (
        router,
        _,
    ):
        await router.send_multipart([b"nobody", b"x"])  # silently dropped
        with pytest.raises(ValueError, match="at least two parts"):
            await router.send(b"only-an-id")
    async with linked(
        "ROUTER",
        "DEALER",
        "tcp",
        bind_options={"router_mandatory": True},
        connect_options={"identity": b"d"},
    ) as (router, dealer):
        with pytest.raises(zmtp.HostUnreachable, match="nobody"):
            await router.send_multipart([b"nobody", b"x"])
        # A lone frame is a usage error even when it names a known peer, and before the
        # unknown-peer check (libzmq: EINVAL ahead of EHOSTUNREACH).
        for lone in ([b"d"], [b"nobody"]):
            with pytest.raises(ValueError, match="at least two parts"):
                await router.send_multipart(lone)
        prepared = [b"nobody", b"x"]
        with pytest.raises(zmtp.HostUnreachable, match="nobody"):
            await router.send_prepared(prepared)
        assert prepared == [b"nobody", b"x"]  # a failed send leaves the message whole
        with pytest.raises(TypeError):
            await router.send_multipart([b"d", 5])
        await router.send_multipart([b"d", b"ok"])
        await router.send_multipart([b"d", "str", memoryview(b"mv")])
        assert await recv_within(dealer) == [b"ok"]
        assert await recv_within(dealer) == [b"str", b"mv"]


async def test_router_mandatory_blocks_at_hwm_instead_of_dropping() -> None:
    opts = {"router_mandatory": True, "send_hwm": 1, "send_timeout": 0.05}
    async with linked(
        "ROUTER",
        "DEALER",
        "inproc",
        bind_options=opts,
        connect_options={"identity": b"d", "recv_hwm": 1},
    ) as (router, dealer):
        await router.send_multipart([b"d", b"1"])
        await router.send_multipart([b"d", b"2"])  # inproc HWM = send_hwm + peer recv_hwm
        with pytest.raises(TimeoutError):
            await router.send_multipart([b"d", b"3"])
        # A send waiting for room is delivered whole (the id frame is taken off only once
        # the message is queued), and the application's list stays its own.
        waiting = [b"d", b"3a", b"3b"]
        router.set("send_timeout", None)
        sent = anyio.Event()

        async def send_waiting() -> None:
            await router.send_multipart(waiting)
            sent.set()

        async with anyio.create_task_group() as tg:
            tg.start_soon(send_waiting)
            await anyio.wait_all_tasks_blocked()
            assert not sent.is_set()
            assert await recv_within(dealer) == [b"1"]
            with anyio.fail_after(TIMEOUT):
                await sent.wait()
        assert await recv_within(dealer) == [b"2"]
        assert await recv_within(dealer) == [b"3a", b"3b"]
        assert waiting == [b"d", b"3a", b"3b"]


async def test_router_refuses_a_duplicate_identity_with_a_reason() -> None:
    async with zmtp.Socket(zmtp.ROUTER, linger=0) as router:
        endpoint = await router.bind("tcp://127.0.0.1:*")
        async with (
            zmtp.Socket(zmtp.DEALER, linger=0, identity=b"dup") as first,
            zmtp.Socket(zmtp.DEALER, linger=0, identity=b"dup", reconnect_ivl=None) as second,
        ):
            async with router.monitor() as mon:
                await first.connect(endpoint)
                await wait_event(mon, zmtp.HandshakeSucceeded)
                await second.connect(endpoint)
                failed = await wait_event(mon, zmtp.HandshakeFailed)
            assert "duplicate identity" in failed.reason and "dup" in failed.reason
            await first.send(b"still works")
            assert await recv_within(router) == [b"dup", b"still works"]


async def test_router_handover_gives_the_identity_to_the_newcomer() -> None:
    async with zmtp.Socket(zmtp.ROUTER, linger=0, router_handover=True) as router:
        endpoint = await router.bind("tcp://127.0.0.1:*")
        async with (
            zmtp.Socket(zmtp.DEALER, linger=0, identity=b"dup", reconnect_ivl=None) as old,
            zmtp.Socket(zmtp.DEALER, linger=0, identity=b"dup") as new,
        ):
            async with router.monitor() as rmon, old.monitor() as omon:
                await old.connect(endpoint)
                await wait_event(rmon, zmtp.HandshakeSucceeded)
                await new.connect(endpoint)
                await wait_event(rmon, zmtp.HandshakeSucceeded)
                gone = await wait_event(omon, zmtp.Disconnected)
            assert gone.reason
            await router.send_multipart([b"dup", b"to the newcomer"])
            assert await recv_within(new) == [b"to the newcomer"]


async def test_router_handover_on_inproc() -> None:
    async with zmtp.Socket(zmtp.ROUTER, linger=0, router_handover=True) as router:
        endpoint = await router.bind("inproc://handover-" + str(id(router)))
        async with (
            zmtp.Socket(zmtp.DEALER, linger=0, identity=b"dup") as old,
            zmtp.Socket(zmtp.DEALER, linger=0, identity=b"dup") as new,
        ):
            await old.connect(endpoint)
            await new.connect(endpoint)
            await router.send_multipart([b"dup", b"x"])
            assert await recv_within(new) == [b"x"]
            assert await nothing_pending(old)


async def test_router_reidentifies_a_reconnected_peer() -> None:
    """The routing table follows connections: a peer that comes back under another Identity
    is addressed by the new one."""
    async with zmtp.Socket(zmtp.DEALER, linger=0, identity=b"first") as d1:
        endpoint = await d1.bind("tcp://127.0.0.1:*")
        router = zmtp.Socket(zmtp.ROUTER, linger=0, router_mandatory=True)
        async with router, router.monitor() as mon:
            await router.connect(endpoint)
            await wait_event(mon, zmtp.HandshakeSucceeded)
            await router.send_multipart([b"first", b"hi"])
            assert await recv_within(d1) == [b"hi"]
            await d1.unbind(endpoint)
            await wait_event(mon, zmtp.Disconnected)
            with pytest.raises(zmtp.HostUnreachable):
                await router.send_multipart([b"first", b"gone"])
            async with zmtp.Socket(zmtp.DEALER, linger=0, identity=b"second") as d2:
                await d2.bind(endpoint)
                await wait_event(mon, zmtp.HandshakeSucceeded)
                await router.send_multipart([b"second", b"hello again"])
                assert await recv_within(d2) == [b"hello again"]


@pytest.mark.parametrize("transport", ["tcp", "inproc"])
async def test_router_to_router(transport: str) -> None:
    async with linked(
        "ROUTER",
        "ROUTER",
        transport,
        bind_options={"identity": b"server"},
        connect_options={"identity": b"client"},
    ) as (server, client):
        await client.send_multipart([b"server", b"ping"])
        assert await recv_within(server) == [b"client", b"ping"]
        await server.send_multipart([b"client", b"pong"])
        assert await recv_within(client) == [b"server", b"pong"]


async def test_raw_helpers_match_libzmq_captures() -> None:
    # The byte helpers are hand-written; pin two of them to bytes captured from libzmq.
    assert command(b"SUBSCRIBE", b"A") == bytes.fromhex("040b09") + b"SUBSCRIBEA"
    assert frame(b"ALOL") == bytes.fromhex("0004") + b"ALOL"
