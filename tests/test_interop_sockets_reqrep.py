"""REQ, REP, DEALER, ROUTER live against libzmq 4.3.5 (pyzmq): both directions, both bind and
connect roles, tcp and ipc. Blocking pyzmq calls run in worker threads with 5 s timeouts."""

from __future__ import annotations

import functools
import threading
from typing import Any

import anyio
import pytest

import zmtp
from zmtp.testing import TIMEOUT, recv_within, wait_event
from zmtp.testing.pyzmq_sockets import connect_ours, zbind, zmq_module, zrecv, zsend, zsocket

zmq = pytest.importorskip("zmq")

pytestmark = [pytest.mark.anyio, pytest.mark.interop]

roles = pytest.mark.parametrize("ours_binds", [True, False], ids=["ours-binds", "ours-connects"])
transports = pytest.mark.parametrize("transport", ["tcp", "ipc"])


@transports
@roles
async def test_our_req_libzmq_rep(transport: str, ours_binds: bool) -> None:
    with zsocket(zmq.REP) as zrep:
        async with zmtp.Socket(zmtp.REQ, linger=0) as req:
            await connect_ours(req, zrep, transport, ours_binds)
            for i in range(3):
                await req.send_multipart([b"req", str(i).encode()])
                assert await zrecv(zrep) == [b"req", str(i).encode()]
                await zsend(zrep, [b"rep", str(i).encode()])
                assert await recv_within(req) == [b"rep", str(i).encode()]


@transports
@roles
async def test_libzmq_req_our_rep(transport: str, ours_binds: bool) -> None:
    with zsocket(zmq.REQ) as zreq:
        async with zmtp.Socket(zmtp.REP, linger=0) as rep:
            await connect_ours(rep, zreq, transport, ours_binds)
            for i in range(3):
                await zsend(zreq, [b"req", str(i).encode()])
                assert await recv_within(rep) == [b"req", str(i).encode()]
                await rep.send(b"rep%d" % i)
                assert await zrecv(zreq) == [b"rep%d" % i]


@roles
async def test_our_correlated_req_with_libzmq_rep_and_router(ours_binds: bool) -> None:
    """libzmq echoes our request id; a libzmq ROUTER sees [peer, id, "", body]."""
    with zsocket(zmq.REP) as zrep:
        async with zmtp.Socket(zmtp.REQ, linger=0, req_correlate=True, req_relaxed=True) as req:
            await connect_ours(req, zrep, "tcp", ours_binds)
            await req.send(b"one")
            assert await zrecv(zrep) == [b"one"]
            await zsend(zrep, [b"ok"])
            assert await recv_within(req) == [b"ok"]
    with zsocket(zmq.ROUTER) as zrouter:
        async with zmtp.Socket(zmtp.REQ, linger=0, req_correlate=True, req_relaxed=True) as req:
            await connect_ours(req, zrouter, "tcp", ours_binds)
            await req.send(b"first")
            peer, old_id, empty, body = await zrecv(zrouter)
            assert (len(old_id), empty, body) == (4, b"", b"first")
            await req.send(b"second")  # relaxed: abandon the first
            _, new_id, _, _ = await zrecv(zrouter)
            await zsend(zrouter, [peer, old_id, b"", b"stale"])
            await zsend(zrouter, [peer, new_id, b"", b"fresh"])
            assert await recv_within(req) == [b"fresh"]


@transports
@roles
async def test_our_req_libzmq_router(transport: str, ours_binds: bool) -> None:
    with zsocket(zmq.ROUTER) as zrouter:
        async with zmtp.Socket(zmtp.REQ, linger=0, identity=b"our-req") as req:
            await connect_ours(req, zrouter, transport, ours_binds)
            await req.send_multipart([b"a", b"b"])
            assert await zrecv(zrouter) == [b"our-req", b"", b"a", b"b"]
            await zsend(zrouter, [b"our-req", b"", b"reply"])
            assert await recv_within(req) == [b"reply"]


@transports
@roles
async def test_libzmq_req_our_router(transport: str, ours_binds: bool) -> None:
    with zsocket(zmq.REQ, identity=b"bob") as zreq:
        async with zmtp.Socket(zmtp.ROUTER, linger=0) as router:
            await connect_ours(router, zreq, transport, ours_binds)
            await zsend(zreq, [b"y"])
            assert await recv_within(router) == [b"bob", b"", b"y"]  # used verbatim
            await router.send_multipart([b"bob", b"", b"z"])
            assert await zrecv(zreq) == [b"z"]


@transports
@roles
async def test_our_dealer_libzmq_rep(transport: str, ours_binds: bool) -> None:
    with zsocket(zmq.REP) as zrep:
        async with zmtp.Socket(zmtp.DEALER, linger=0) as dealer:
            await connect_ours(dealer, zrep, transport, ours_binds)
            await dealer.send_multipart([b"no delimiter: dropped by REP"])
            await dealer.send_multipart([b"", b"hello"])
            assert await zrecv(zrep) == [b"hello"]
            await zsend(zrep, [b"world"])
            assert await recv_within(dealer) == [b"", b"world"]


@transports
@roles
async def test_libzmq_dealer_our_rep(transport: str, ours_binds: bool) -> None:
    with zsocket(zmq.DEALER) as zdealer:
        async with zmtp.Socket(zmtp.REP, linger=0) as rep:
            await connect_ours(rep, zdealer, transport, ours_binds)
            await zsend(zdealer, [b"hop", b"", b"hello"])
            assert await recv_within(rep) == [b"hello"]
            await rep.send(b"world")
            assert await zrecv(zdealer) == [b"hop", b"", b"world"]


@transports
@roles
async def test_our_dealer_libzmq_router(transport: str, ours_binds: bool) -> None:
    with zsocket(zmq.ROUTER) as zrouter:
        async with zmtp.Socket(zmtp.DEALER, linger=0, identity=b"d1") as dealer:
            await connect_ours(dealer, zrouter, transport, ours_binds)
            await dealer.send_multipart([b"x", b"y"])
            assert await zrecv(zrouter) == [b"d1", b"x", b"y"]
            await zsend(zrouter, [b"d1", b"back"])
            assert await recv_within(dealer) == [b"back"]


@transports
@roles
async def test_libzmq_dealers_our_router_generated_ids(transport: str, ours_binds: bool) -> None:
    with zsocket(zmq.DEALER) as zd1, zsocket(zmq.DEALER) as zd2:
        async with zmtp.Socket(zmtp.ROUTER, linger=0, identity=b"rtr") as router:
            endpoint = await connect_ours(router, zd1, transport, ours_binds)
            if ours_binds:
                async with router.monitor() as mon:
                    zd2.connect(endpoint)
                    await wait_event(mon, zmtp.HandshakeSucceeded)
            else:
                zd2.bind(f"{endpoint}-2" if transport == "ipc" else "tcp://127.0.0.1:*")
                async with router.monitor() as mon:
                    await router.connect(zd2.getsockopt(zmq.LAST_ENDPOINT).decode())
                    await wait_event(mon, zmtp.HandshakeSucceeded)
            ids = []
            for zd in (zd1, zd2):
                await zsend(zd, [b"hi"])
                rid, body = await recv_within(router)
                assert body == b"hi" and len(rid) == 5 and rid[0] == 0
                ids.append(rid)
                await router.send_multipart([rid, b"reply"])
                frame = await anyio.to_thread.run_sync(functools.partial(zd.recv, copy=False))
                assert frame.bytes == b"reply"
                # A ROUTER sends its Identity in READY; libzmq shows it as metadata
                # (docs/libzmq-notes.md#null-handshake-and-ready-properties).
                assert frame.get("Identity") == "rtr" and frame.get("Socket-Type") == "ROUTER"
            assert int.from_bytes(ids[1][1:], "big") == int.from_bytes(ids[0][1:], "big") + 1


@transports
async def test_multi_hop_libzmq_req_through_our_router_dealer_to_libzmq_rep(
    transport: str,
) -> None:
    with zsocket(zmq.REQ) as zreq, zsocket(zmq.REP) as zrep:
        async with (
            zmtp.Socket(zmtp.ROUTER, linger=0) as frontend,
            zmtp.Socket(zmtp.DEALER, linger=0) as backend,
        ):
            await connect_ours(frontend, zreq, transport, ours_binds=True)
            await connect_ours(backend, zrep, transport, ours_binds=False)
            for i in range(3):
                await zsend(zreq, [b"request %d" % i])
                envelope = await recv_within(frontend)  # [peer id, "", body]
                await backend.send_multipart(envelope)
                assert await zrecv(zrep) == [b"request %d" % i]
                await zsend(zrep, [b"reply %d" % i])
                back = await recv_within(backend)
                assert back[0] == envelope[0] and back[1:] == [b"", b"reply %d" % i]
                await frontend.send_multipart(back)
                assert await zrecv(zreq) == [b"reply %d" % i]


class _Shuttle:
    """A libzmq ROUTER->DEALER proxy in a thread, stoppable (zmq.proxy is not)."""

    def __init__(self, front: Any, back: Any) -> None:
        self.front, self.back = front, back
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        zmq = zmq_module()
        poller = zmq.Poller()
        poller.register(self.front, zmq.POLLIN)
        poller.register(self.back, zmq.POLLIN)
        while not self.stop.is_set():
            for sock, _ in poller.poll(10):
                other = self.back if sock is self.front else self.front
                other.send_multipart(sock.recv_multipart())

    def __enter__(self) -> _Shuttle:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.thread.join(TIMEOUT)


@transports
async def test_multi_hop_our_req_through_libzmq_proxy_to_our_rep(transport: str) -> None:
    """Our REP echoes the whole envelope the libzmq ROUTER pushed, so the reply finds home."""
    with zsocket(zmq.ROUTER) as zfront, zsocket(zmq.DEALER) as zback:
        front_ep = zbind(zfront, transport)
        back_ep = zbind(zback, transport)
        with _Shuttle(zfront, zback):
            async with (
                zmtp.Socket(zmtp.REQ, linger=0) as req,
                zmtp.Socket(zmtp.REP, linger=0) as rep,
            ):
                await req.connect(front_ep)
                await rep.connect(back_ep)
                for i in range(3):
                    await req.send(b"q%d" % i)
                    assert await recv_within(rep) == [b"q%d" % i]
                    await rep.send(b"a%d" % i)
                    assert await recv_within(req) == [b"a%d" % i]


@transports
@roles
async def test_router_to_router(transport: str, ours_binds: bool) -> None:
    with zsocket(zmq.ROUTER, identity=b"theirs", router_mandatory=1) as zrouter:
        async with zmtp.Socket(zmtp.ROUTER, linger=0, identity=b"ours") as router:
            await connect_ours(router, zrouter, transport, ours_binds)
            await router.send_multipart([b"theirs", b"ping"])
            assert await zrecv(zrouter) == [b"ours", b"ping"]
            await zsend(zrouter, [b"ours", b"pong"])
            assert await recv_within(router) == [b"theirs", b"pong"]


@transports
async def test_router_mandatory_with_a_libzmq_dealer(transport: str) -> None:
    async with zmtp.Socket(zmtp.ROUTER, linger=0, router_mandatory=True) as router:
        with zsocket(zmq.DEALER, identity=b"d") as zdealer:
            await connect_ours(router, zdealer, transport, ours_binds=True)
            with pytest.raises(zmtp.HostUnreachable):
                await router.send_multipart([b"unknown", b"x"])
            await router.send_multipart([b"d", b"ok"])
            assert await zrecv(zdealer) == [b"ok"]
            async with router.monitor() as mon:
                zdealer.close(linger=0)
                await wait_event(mon, zmtp.Disconnected)
        with pytest.raises(zmtp.HostUnreachable):
            await router.send_multipart([b"d", b"gone"])


async def test_libzmq_refuses_an_incompatible_type_and_we_report_why() -> None:
    with zsocket(zmq.PUB) as zpub:
        endpoint = zbind(zpub, "tcp")
        async with zmtp.Socket(zmtp.REQ, linger=0, reconnect_ivl=None) as req:
            async with req.monitor() as mon:
                await req.connect(endpoint)
                failed = await wait_event(mon, zmtp.HandshakeFailed)
            assert failed.reason == "incompatible socket types: REQ cannot talk to PUB"
    with zsocket(zmq.REP) as zrep:
        async with zmtp.Socket(zmtp.PULL, linger=0) as pull:
            async with pull.monitor() as mon:
                endpoint = await pull.bind("tcp://127.0.0.1:*")
                zrep.connect(endpoint)
                failed = await wait_event(mon, zmtp.HandshakeFailed)
            assert failed.reason == "incompatible socket types: PULL cannot talk to REP"
