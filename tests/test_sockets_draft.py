"""The draft thread-safe types (RFC 41, 48, 49, 51, 52): CLIENT/SERVER, RADIO/DISH,
SCATTER/GATHER, PEER, CHANNEL. pyzmq wheels lack DRAFT, so: ours against ours on every
transport, and byte by byte against a hand-written ZMTP peer."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import pytest

import zmtp
from zmtp.testing import (
    RawPeer,
    bindable,
    linked,
    nothing_pending,
    probe_path,
    raw_client,
    raw_server,
    recv_within,
    send_until_received,
    wait_event,
)
from zmtp.testing.wire import command, frame, message

pytestmark = pytest.mark.anyio

TRANSPORTS = ["tcp", "ipc", "inproc"]


# ---------------------------------------------------------------------- CLIENT / SERVER


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_client_server_routing_ids(transport: str) -> None:
    async with (
        zmtp.Socket(zmtp.SERVER, linger=0) as server,
        zmtp.Socket(zmtp.CLIENT, linger=0) as c1,
        zmtp.Socket(zmtp.CLIENT, linger=0) as c2,
    ):
        endpoint = await server.bind(bindable(transport))
        await c1.connect(endpoint)
        await c2.connect(endpoint)
        await c1.send(b"from-1")
        id1, data = await server.recv_from()
        assert data == b"from-1" and 0 < id1 < 2**32
        await c2.send(b"from-2")
        id2, data = await server.recv_from()
        assert data == b"from-2" and id2 not in (0, id1)
        await server.send_to(id2, b"to-2")
        await server.send_to(id1, b"to-1")
        assert await recv_within(c1) == [b"to-1"]
        assert await recv_within(c2) == [b"to-2"]
        # The multipart view: [routing id (4 bytes BE), data].
        await c1.send(b"again")
        assert await recv_within(server) == [id1.to_bytes(4, "big"), b"again"]


async def test_server_errors_are_clear() -> None:
    async with linked("SERVER", "CLIENT", "inproc") as (server, client):
        with pytest.raises(zmtp.HostUnreachable):
            await server.send_to(12345, b"nobody")
        with pytest.raises(zmtp.UnsupportedOperation, match="routing id"):
            await server.send(b"no id")
        with pytest.raises(zmtp.UnsupportedOperation, match="single-part"):
            await server.send_multipart([b"\0\0\0\1", b"a", b"b"])
        with pytest.raises(ValueError, match="non-zero"):
            await server.send_to(0, b"x")
        with pytest.raises(zmtp.UnsupportedOperation, match="single-part"):
            await client.send_multipart([b"a", b"b"])
        with pytest.raises(zmtp.UnsupportedOperation, match="recv_from"):
            await client.recv_from()


async def test_server_blocks_when_the_client_is_full() -> None:
    opts = {"send_hwm": 1, "send_timeout": 0.05}
    async with linked(
        "SERVER", "CLIENT", "inproc", bind_options=opts, connect_options={"recv_hwm": 1}
    ) as (server, client):
        await client.send(b"hi")
        rid, _ = await server.recv_from()
        await server.send_to(rid, b"1")
        await server.send_to(rid, b"2")
        with pytest.raises(TimeoutError):
            await server.send_to(rid, b"3")  # RFC 41: SHALL NOT discard


async def test_client_server_wire_format_and_multipart_input_dropped() -> None:
    async with raw_server() as srv, zmtp.Socket(zmtp.CLIENT, linger=0) as client:
        await client.connect(srv.endpoint)
        peer = await srv.accept()
        props = await peer.handshake("SERVER")
        assert props == {"Socket-Type": b"CLIENT"}  # no Identity for the draft types
        await client.send(b"hello")
        assert await peer.read_raw_frame() == bytes.fromhex("0005") + b"hello"
        await peer.send(message(b"multi", b"part") + message(b"single"))
        assert await recv_within(client) == [b"single"]
        assert await nothing_pending(client)
    async with zmtp.Socket(zmtp.SERVER, linger=0) as server:
        endpoint = await server.bind("tcp://127.0.0.1:*")
        async with raw_client(endpoint) as peer:
            await peer.handshake("CLIENT")
            await peer.send(message(b"a", b"b") + message(b"req"))
            rid, data = await server.recv_from()
            assert data == b"req"
            await server.send_to(rid, b"rep")
            assert await peer.read_raw_frame() == bytes.fromhex("0003") + b"rep"


# ---------------------------------------------------------------------- RADIO / DISH


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_radio_dish_exact_group_matching(transport: str) -> None:
    async with linked("RADIO", "DISH", transport) as (radio, dish):
        dish.join(b"news")
        dish.join("weather")
        await send_until_received(radio, dish, b"weather")
        await radio.send_group(b"new", b"prefix is not enough")
        await radio.send_group(b"newsy", b"nor is a longer name")
        await radio.send_group(b"news", b"yes")
        await radio.send_multipart([b"weather", b"also yes"])
        assert await dish.recv_group() == (b"news", b"yes")
        assert await recv_within(dish) == [b"weather", b"also yes"]
        dish.leave(b"news")
        await send_until_received(radio, dish, b"weather")
        await radio.send_group(b"news", b"left")
        await radio.send_group(b"weather", b"end")
        assert await dish.recv_group() == (b"weather", b"end")


async def test_radio_dish_errors() -> None:
    async with zmtp.Socket(zmtp.RADIO) as radio, zmtp.Socket(zmtp.DISH) as dish:
        with pytest.raises(ValueError, match="255"):
            dish.join(b"x" * 256)
        dish.join(b"x" * 255)
        with pytest.raises(ValueError, match="already joined"):
            dish.join(b"x" * 255)
        with pytest.raises(ValueError, match="not joined"):
            dish.leave(b"y")
        with pytest.raises(ValueError, match="zero"):
            dish.join(b"a\0b")
        with pytest.raises(zmtp.UnsupportedOperation, match="group"):
            await radio.send(b"no group")
        with pytest.raises(zmtp.UnsupportedOperation, match="single-part"):
            await radio.send_multipart([b"g", b"a", b"b"])
        with pytest.raises(ValueError, match="255"):
            await radio.send_group(b"x" * 256, b"data")
        with pytest.raises(zmtp.UnsupportedOperation):
            await dish.send(b"x")
        with pytest.raises(zmtp.UnsupportedOperation):
            await radio.recv()
        with pytest.raises(zmtp.UnsupportedOperation, match="join"):
            radio.join(b"g")


def peer_body(peer: RawPeer) -> Callable[[], Awaitable[list[bytes] | None]]:
    """A raw DISH's messages without their group frame (for probe_path)."""

    async def recv() -> list[bytes] | None:
        message = await peer.read_message_briefly()
        return None if message is None else message[1:]

    return recv


async def test_radio_wire_format_join_leave_commands() -> None:
    async with zmtp.Socket(zmtp.RADIO, linger=0) as radio:
        endpoint = await radio.bind("tcp://127.0.0.1:*")
        async with raw_client(endpoint) as peer:
            await peer.handshake("DISH")
            await peer.send(command(b"JOIN", b"g"))
            await probe_path(lambda d: radio.send_group(b"g", d), peer_body(peer))
            await radio.send_group(b"h", b"other group")
            await radio.send_group(b"g", b"hello")
            # RFC 48 on ZMTP: the group frame (MORE) then the body.
            assert await peer.read_exact(10) == bytes.fromhex("0101670005") + b"hello"
            await peer.send(message(b"dishes", b"cannot send"))  # silently discarded
            await peer.send(command(b"LEAVE", b"g") + command(b"JOIN", b"end"))
            await probe_path(lambda d: radio.send_group(b"end", d), peer_body(peer))
            await radio.send_group(b"g", b"left")
            await radio.send_group(b"end", b"last")
            assert await peer.read_message() == [b"end", b"last"]


async def test_dish_wire_format_and_rejoin_on_reconnect() -> None:
    async with raw_server() as srv, zmtp.Socket(zmtp.DISH, linger=0, reconnect_ivl=0.01) as dish:
        dish.join(b"g1")
        await dish.connect(srv.endpoint)
        peer = await srv.accept()
        await peer.handshake("RADIO")
        assert await peer.read_raw_frame() == command(b"JOIN", b"g1")  # 04 07 04 JOIN g1
        dish.join(b"g2")
        dish.leave(b"g1")
        assert await peer.read_raw_frame() == bytes.fromhex("040704") + b"JOINg2"
        assert await peer.read_raw_frame() == bytes.fromhex("040805") + b"LEAVEg1"
        await peer.send(
            message(b"g1", b"left group")
            + frame(b"malformed: one frame")
            + message(b"g2", b"too", b"many")
            + message(b"g2", b"ok")
        )
        assert await dish.recv_group() == (b"g2", b"ok")
        assert await nothing_pending(dish)
        await peer.aclose()
        peer = await srv.accept()
        await peer.handshake("RADIO")
        assert await peer.read_command() == (b"JOIN", b"g2")  # re-joined after reconnecting


# ---------------------------------------------------------------------- SCATTER / GATHER


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_scatter_gather_round_robin(transport: str) -> None:
    async with (
        zmtp.Socket(zmtp.SCATTER, linger=0) as scatter,
        zmtp.Socket(zmtp.GATHER, linger=0) as g1,
        zmtp.Socket(zmtp.GATHER, linger=0) as g2,
    ):
        for g in (g1, g2):
            async with scatter.monitor() as mon:
                await scatter.connect(await g.bind(bindable(transport)))
                await wait_event(mon, zmtp.HandshakeSucceeded)
        for i in range(4):
            await scatter.send(str(i).encode())
        got = [await g1.recv(), await g1.recv(), await g2.recv(), await g2.recv()]
        assert sorted(got) == [b"0", b"1", b"2", b"3"]
        with pytest.raises(zmtp.UnsupportedOperation, match="single-part"):
            await scatter.send_multipart([b"a", b"b"])
        with pytest.raises(zmtp.UnsupportedOperation):
            await scatter.recv()
        with pytest.raises(zmtp.UnsupportedOperation):
            await g1.send(b"x")


async def test_gather_drops_multipart_input() -> None:
    async with zmtp.Socket(zmtp.GATHER, linger=0) as gather:
        endpoint = await gather.bind("tcp://127.0.0.1:*")
        async with raw_client(endpoint) as peer:
            await peer.handshake("SCATTER")
            await peer.send(message(b"a", b"b") + message(b"ok"))
            assert await recv_within(gather) == [b"ok"]
            assert await nothing_pending(gather)


# ---------------------------------------------------------------------- PEER


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_peer_connect_returns_the_routing_id_at_once(transport: str) -> None:
    async with zmtp.Socket(zmtp.PEER, linger=0) as a, zmtp.Socket(zmtp.PEER, linger=0) as b:
        endpoint = await a.bind(bindable(transport))
        rid = await b.connect_peer(endpoint)
        assert 0 < rid < 2**32
        await b.send_to(rid, b"first words")  # queued before the handshake even completed
        rid_b, data = await a.recv_from()
        assert data == b"first words"
        await a.send_to(rid_b, b"answer")
        assert await b.recv_from() == (rid, b"answer")


async def test_peer_errors() -> None:
    async with zmtp.Socket(zmtp.PEER, immediate=True) as p, zmtp.Socket(zmtp.SERVER) as s:
        with pytest.raises(zmtp.UnsupportedOperation, match="immediate"):
            await p.connect_peer("tcp://127.0.0.1:1")
        with pytest.raises(zmtp.UnsupportedOperation, match="connect_peer"):
            await s.connect_peer("tcp://127.0.0.1:1")
        with pytest.raises(zmtp.HostUnreachable):
            await p.send_to(7, b"x")


async def test_peer_wire_format() -> None:
    async with raw_server() as srv, zmtp.Socket(zmtp.PEER, linger=0) as peer_sock:
        rid = await peer_sock.connect_peer(srv.endpoint)
        await peer_sock.send_to(rid, b"hi")
        raw = await srv.accept()
        assert await raw.handshake("PEER") == {"Socket-Type": b"PEER"}
        assert await raw.read_raw_frame() == bytes.fromhex("0002") + b"hi"
        await raw.send(message(b"x", b"y") + message(b"back"))
        assert await peer_sock.recv_from() == (rid, b"back")


# ---------------------------------------------------------------------- CHANNEL


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_channel_single_peer_single_part(transport: str) -> None:
    async with linked("CHANNEL", "CHANNEL", transport) as (a, b):
        await a.send(b"ping")
        assert await recv_within(b) == [b"ping"]
        await b.send(b"pong")
        assert await recv_within(a) == [b"pong"]
        with pytest.raises(zmtp.UnsupportedOperation, match="single-part"):
            await a.send_multipart([b"a", b"b"])


async def test_channel_refuses_a_second_peer_and_multipart_input() -> None:
    async with zmtp.Socket(zmtp.CHANNEL, linger=0) as channel:
        endpoint = await channel.bind("tcp://127.0.0.1:*")
        async with raw_client(endpoint) as first:
            await first.handshake("CHANNEL")
            await first.send(message(b"a", b"b") + message(b"ok"))
            assert await recv_within(channel) == [b"ok"]
            async with channel.monitor() as mon, raw_client(endpoint) as second:
                await second.handshake("CHANNEL")
                failed = await wait_event(mon, zmtp.HandshakeFailed)
            assert "already has a peer" in failed.reason
