"""Hostile peers against our CURVE / PLAIN server sockets, over real tcp connections.

Each attack must close only the attacker's connection, with a monitor event whose reason says
what was wrong; the socket never raises and keeps serving honest clients. The attackers are
:class:`zmtp.testing.RawPeer` connections driven by the spec-level :class:`RefClient` of
``test_mechanism_curve``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import anyio
import pytest

import zmtp
from tests.test_mechanism_curve import CURVE_GREETING, RefClient
from tests.test_mechanism_helpers import CLIENT_SECRET, SERVER_PUBLIC, SERVER_SECRET
from zmtp.crypto import z85_encode
from zmtp.protocol import encode_properties
from zmtp.protocol.frames import encode_command, encode_frame
from zmtp.testing import RawPeer, raw_client

pytestmark = pytest.mark.anyio

TIMEOUT = 10.0
PUSH_META = encode_properties({"Socket-Type": b"PUSH"})


async def curve_handshake(peer: RawPeer, ref: RefClient) -> None:
    """Greeting, HELLO/WELCOME with the reference client; leaves INITIATE to the caller."""
    await peer.send(CURVE_GREETING + ref.hello())
    assert (await peer.read_exact(64))[12:17] == b"CURVE"
    _, welcome = await peer.read_frame()
    ref.read_welcome(welcome)


@asynccontextmanager
async def curve_server(**options: object) -> AsyncIterator[tuple[zmtp.Socket, str, zmtp.Monitor]]:
    with anyio.fail_after(TIMEOUT):
        async with zmtp.Socket(
            "PULL",
            linger=0,
            curve_server=True,
            curve_secretkey=z85_encode(SERVER_SECRET),
            **options,
        ) as sock:
            monitor = sock.monitor()
            endpoint = await sock.bind("tcp://127.0.0.1:*")
            yield sock, endpoint, monitor


async def failure_reason(monitor: zmtp.Monitor) -> str:
    event = await monitor.wait_for((zmtp.HandshakeFailed, zmtp.Disconnected))
    assert isinstance(event, (zmtp.HandshakeFailed, zmtp.Disconnected))
    return event.reason


async def honest_client_still_served(sock: zmtp.Socket, endpoint: str) -> None:
    async with zmtp.Socket(
        "PUSH",
        linger=0,
        curve_serverkey=z85_encode(SERVER_PUBLIC),
        curve_secretkey=z85_encode(CLIENT_SECRET),
    ) as push:
        await push.connect(endpoint)
        await push.send(b"honest")
        assert await sock.recv() == b"honest"


async def test_hello_of_the_wrong_size() -> None:
    async with curve_server() as (sock, endpoint, monitor), raw_client(endpoint, TIMEOUT) as peer:
        hello = RefClient().hello(extra=b"\0")
        await peer.send(CURVE_GREETING + hello)
        assert "HELLO must be 200 bytes, got 201" in await failure_reason(monitor)
        await peer.wait_closed()  # and the connection is gone
        await honest_client_still_served(sock, endpoint)


async def test_hello_of_the_wrong_version() -> None:
    async with curve_server() as (sock, endpoint, monitor), raw_client(endpoint, TIMEOUT) as peer:
        await peer.send(CURVE_GREETING + RefClient().hello(version=b"\x02\x00"))
        assert "HELLO version 2.0 is not 1.0" in await failure_reason(monitor)
        await honest_client_still_served(sock, endpoint)


async def test_tampered_hello_box() -> None:
    async with curve_server() as (sock, endpoint, monitor), raw_client(endpoint, TIMEOUT) as peer:
        hello = bytearray(RefClient().hello())
        hello[-5] ^= 0x20
        await peer.send(CURVE_GREETING + bytes(hello))
        assert "HELLO: box failed to open" in await failure_reason(monitor)
        await honest_client_still_served(sock, endpoint)


async def test_garbage_after_the_greeting() -> None:
    async with curve_server() as (sock, endpoint, monitor), raw_client(endpoint, TIMEOUT) as peer:
        await peer.send(CURVE_GREETING + b"GET / HTTP/1.1\r\n\r\n")
        assert "reserved frame flag bits" in await failure_reason(monitor)
        await honest_client_still_served(sock, endpoint)


async def test_not_zmtp_at_all() -> None:
    async with curve_server() as (sock, endpoint, monitor), raw_client(endpoint, TIMEOUT) as peer:
        await peer.send(b"GET / HTTP/1.1\r\n\r\n")
        assert "not speaking ZMTP 3.x" in await failure_reason(monitor)
        await honest_client_still_served(sock, endpoint)


async def test_mechanism_mismatch() -> None:
    async with curve_server() as (sock, endpoint, monitor), raw_client(endpoint, TIMEOUT) as peer:
        await peer.send(RawPeer.greeting(b"NULL"))
        assert "mechanism mismatch" in await failure_reason(monitor)
        await honest_client_still_served(sock, endpoint)


async def test_client_that_stops_mid_handshake() -> None:
    async with (
        curve_server(handshake_ivl=0.3) as (sock, endpoint, monitor),
        raw_client(endpoint, TIMEOUT) as peer,
    ):
        await curve_handshake(peer, RefClient())  # then silence instead of INITIATE
        event = await monitor.wait_for(zmtp.HandshakeFailed)
        assert isinstance(event, zmtp.HandshakeFailed)
        assert (event.kind, event.reason) == ("timeout", "handshake timed out")
        await peer.wait_closed()  # and the connection is gone
        await honest_client_still_served(sock, endpoint)


async def test_cookie_from_another_connection() -> None:
    async with (
        curve_server() as (sock, endpoint, monitor),
        raw_client(endpoint, TIMEOUT) as first,
        raw_client(endpoint, TIMEOUT) as second,
    ):
        ref_a, ref_b = RefClient(), RefClient()
        await curve_handshake(first, ref_a)
        await curve_handshake(second, ref_b)
        await second.send(ref_b.initiate(cookie=ref_a.cookie))
        assert "cookie: box failed to open" in await failure_reason(monitor)
        # The first connection is unaffected and completes.
        await first.send(ref_a.initiate(PUSH_META))
        event = await monitor.wait_for(zmtp.HandshakeSucceeded)
        assert isinstance(event, zmtp.HandshakeSucceeded)
        await first.send(ref_a.message(b"from the first"))
        assert await sock.recv() == b"from the first"


async def test_replayed_message_nonce() -> None:
    async with curve_server() as (sock, endpoint, monitor), raw_client(endpoint, TIMEOUT) as peer:
        ref = RefClient()
        await curve_handshake(peer, ref)
        await peer.send(ref.initiate(PUSH_META))
        await monitor.wait_for(zmtp.HandshakeSucceeded)
        message = ref.message(b"pay me once")
        await peer.send(message)
        assert await sock.recv() == b"pay me once"
        await peer.send(message)
        event = await monitor.wait_for(zmtp.Disconnected)
        assert isinstance(event, zmtp.Disconnected)
        assert "nonce 3 is not above the previous one (3): replayed" in event.reason
        await honest_client_still_served(sock, endpoint)


async def test_tampered_message() -> None:
    async with curve_server() as (sock, endpoint, monitor), raw_client(endpoint, TIMEOUT) as peer:
        ref = RefClient()
        await curve_handshake(peer, ref)
        await peer.send(ref.initiate(PUSH_META))
        await monitor.wait_for(zmtp.HandshakeSucceeded)
        forged = bytearray(ref.message(b"transfer 10 EUR"))
        forged[-3] ^= 0x01
        await peer.send(bytes(forged))
        assert "MESSAGE: box failed to open" in await failure_reason(monitor)
        await honest_client_still_served(sock, endpoint)


async def test_plaintext_after_a_curve_handshake() -> None:
    async with curve_server() as (sock, endpoint, monitor), raw_client(endpoint, TIMEOUT) as peer:
        ref = RefClient()
        await curve_handshake(peer, ref)
        await peer.send(ref.initiate(PUSH_META))
        await monitor.wait_for(zmtp.HandshakeSucceeded)
        await peer.send(encode_frame(b"sneaky"))
        assert "unencrypted data frame" in await failure_reason(monitor)
        await honest_client_still_served(sock, endpoint)


async def test_malformed_plain_hello() -> None:
    with anyio.fail_after(TIMEOUT):
        async with zmtp.Socket("PULL", linger=0, plain_server=True) as sock:
            monitor = sock.monitor()
            endpoint = await sock.bind("tcp://127.0.0.1:*")
            async with raw_client(endpoint, TIMEOUT) as peer:
                hello = encode_command(b"HELLO", b"\x05admin\x09short")
                await peer.send(RawPeer.greeting(b"PLAIN") + hello)
                assert "malformed PLAIN HELLO" in await failure_reason(monitor)
                await peer.wait_closed()  # and the connection is gone
