"""Hostile peers against our CURVE / PLAIN server sockets, over real tcp connections.

Each attack must close only the attacker's connection, with a monitor event whose reason says
what was wrong; the socket never raises and keeps serving honest clients. The attackers are raw
byte streams driven by the spec-level :class:`RefClient` of ``test_mechanism_curve``.
"""

from __future__ import annotations

import struct
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import anyio
import pytest
from anyio.abc import SocketStream

import zmtp
from tests.test_mechanism_curve import CURVE_GREETING, RefClient
from tests.test_mechanism_helpers import CLIENT_SECRET, SERVER_PUBLIC, SERVER_SECRET
from tests.test_protocol_helpers import peer_greeting
from zmtp.crypto import z85_encode
from zmtp.protocol import encode_properties
from zmtp.protocol.frames import encode_command, encode_frame

pytestmark = pytest.mark.anyio

TIMEOUT = 10.0
PUSH_META = encode_properties({"Socket-Type": b"PUSH"})


class RawPeer:
    """A raw tcp connection to our socket that speaks bytes, not ZMTP."""

    def __init__(self, stream: SocketStream) -> None:
        self.stream = stream
        self.buffer = b""

    async def read_exactly(self, size: int) -> bytes:
        while len(self.buffer) < size:
            self.buffer += await self.stream.receive()
        data, self.buffer = self.buffer[:size], self.buffer[size:]
        return data

    async def read_frame(self) -> tuple[int, bytes]:
        flags, size = await self.read_exactly(2)
        if flags & 0x02:
            size = struct.unpack(">Q", bytes((size,)) + await self.read_exactly(7))[0]
        return flags, await self.read_exactly(size)

    async def closed_by_peer(self) -> bool:
        """True once our socket closes this connection (whatever it sent before that)."""
        try:
            while True:
                await self.stream.receive()
        except (anyio.EndOfStream, anyio.BrokenResourceError, OSError):
            return True

    async def curve_handshake(self, ref: RefClient) -> None:
        """Greeting, HELLO/WELCOME; leaves INITIATE to the caller."""
        await self.stream.send(CURVE_GREETING + ref.hello())
        assert (await self.read_exactly(64))[12:17] == b"CURVE"
        _, welcome = await self.read_frame()
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


@asynccontextmanager
async def raw(endpoint: str) -> AsyncIterator[RawPeer]:
    port = int(endpoint.rsplit(":", 1)[1])
    async with await anyio.connect_tcp("127.0.0.1", port) as stream:
        yield RawPeer(stream)


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
    async with curve_server() as (sock, endpoint, monitor), raw(endpoint) as peer:
        hello = RefClient().hello(extra=b"\0")
        await peer.stream.send(CURVE_GREETING + hello)
        assert "HELLO must be 200 bytes, got 201" in await failure_reason(monitor)
        assert await peer.closed_by_peer()
        await honest_client_still_served(sock, endpoint)


async def test_hello_of_the_wrong_version() -> None:
    async with curve_server() as (sock, endpoint, monitor), raw(endpoint) as peer:
        await peer.stream.send(CURVE_GREETING + RefClient().hello(version=b"\x02\x00"))
        assert "HELLO version 2.0 is not 1.0" in await failure_reason(monitor)
        await honest_client_still_served(sock, endpoint)


async def test_tampered_hello_box() -> None:
    async with curve_server() as (sock, endpoint, monitor), raw(endpoint) as peer:
        hello = bytearray(RefClient().hello())
        hello[-5] ^= 0x20
        await peer.stream.send(CURVE_GREETING + bytes(hello))
        assert "HELLO: box failed to open" in await failure_reason(monitor)
        await honest_client_still_served(sock, endpoint)


async def test_garbage_after_the_greeting() -> None:
    async with curve_server() as (sock, endpoint, monitor), raw(endpoint) as peer:
        await peer.stream.send(CURVE_GREETING + b"GET / HTTP/1.1\r\n\r\n")
        assert "reserved frame flag bits" in await failure_reason(monitor)
        await honest_client_still_served(sock, endpoint)


async def test_not_zmtp_at_all() -> None:
    async with curve_server() as (sock, endpoint, monitor), raw(endpoint) as peer:
        await peer.stream.send(b"GET / HTTP/1.1\r\n\r\n")
        assert "not speaking ZMTP 3.x" in await failure_reason(monitor)
        await honest_client_still_served(sock, endpoint)


async def test_mechanism_mismatch() -> None:
    async with curve_server() as (sock, endpoint, monitor), raw(endpoint) as peer:
        await peer.stream.send(peer_greeting(mechanism=b"NULL"))
        assert "mechanism mismatch" in await failure_reason(monitor)
        await honest_client_still_served(sock, endpoint)


async def test_client_that_stops_mid_handshake() -> None:
    async with curve_server(handshake_ivl=0.3) as (sock, endpoint, monitor), raw(endpoint) as peer:
        await peer.curve_handshake(RefClient())  # then silence instead of INITIATE
        event = await monitor.wait_for(zmtp.HandshakeFailed)
        assert isinstance(event, zmtp.HandshakeFailed)
        assert (event.kind, event.reason) == ("timeout", "handshake timed out")
        assert await peer.closed_by_peer()
        await honest_client_still_served(sock, endpoint)


async def test_cookie_from_another_connection() -> None:
    async with (
        curve_server() as (sock, endpoint, monitor),
        raw(endpoint) as first,
        raw(endpoint) as second,
    ):
        ref_a, ref_b = RefClient(), RefClient()
        await first.curve_handshake(ref_a)
        await second.curve_handshake(ref_b)
        await second.stream.send(ref_b.initiate(cookie=ref_a.cookie))
        assert "cookie: box failed to open" in await failure_reason(monitor)
        # The first connection is unaffected and completes.
        await first.stream.send(ref_a.initiate(PUSH_META))
        event = await monitor.wait_for(zmtp.HandshakeSucceeded)
        assert isinstance(event, zmtp.HandshakeSucceeded)
        await first.stream.send(ref_a.message(b"from the first"))
        assert await sock.recv() == b"from the first"


async def test_replayed_message_nonce() -> None:
    async with curve_server() as (sock, endpoint, monitor), raw(endpoint) as peer:
        ref = RefClient()
        await peer.curve_handshake(ref)
        await peer.stream.send(ref.initiate(PUSH_META))
        await monitor.wait_for(zmtp.HandshakeSucceeded)
        message = ref.message(b"pay me once")
        await peer.stream.send(message)
        assert await sock.recv() == b"pay me once"
        await peer.stream.send(message)
        event = await monitor.wait_for(zmtp.Disconnected)
        assert isinstance(event, zmtp.Disconnected)
        assert "nonce 3 is not above the previous one (3): replayed" in event.reason
        await honest_client_still_served(sock, endpoint)


async def test_tampered_message() -> None:
    async with curve_server() as (sock, endpoint, monitor), raw(endpoint) as peer:
        ref = RefClient()
        await peer.curve_handshake(ref)
        await peer.stream.send(ref.initiate(PUSH_META))
        await monitor.wait_for(zmtp.HandshakeSucceeded)
        forged = bytearray(ref.message(b"transfer 10 EUR"))
        forged[-3] ^= 0x01
        await peer.stream.send(bytes(forged))
        assert "MESSAGE: box failed to open" in await failure_reason(monitor)
        await honest_client_still_served(sock, endpoint)


async def test_plaintext_after_a_curve_handshake() -> None:
    async with curve_server() as (sock, endpoint, monitor), raw(endpoint) as peer:
        ref = RefClient()
        await peer.curve_handshake(ref)
        await peer.stream.send(ref.initiate(PUSH_META))
        await monitor.wait_for(zmtp.HandshakeSucceeded)
        await peer.stream.send(encode_frame(b"sneaky"))
        assert "unencrypted data frame" in await failure_reason(monitor)
        await honest_client_still_served(sock, endpoint)


async def test_malformed_plain_hello() -> None:
    with anyio.fail_after(TIMEOUT):
        async with zmtp.Socket("PULL", linger=0, plain_server=True) as sock:
            monitor = sock.monitor()
            endpoint = await sock.bind("tcp://127.0.0.1:*")
            async with raw(endpoint) as peer:
                hello = encode_command(b"HELLO", b"\x05admin\x09short")
                await peer.stream.send(peer_greeting(mechanism=b"PLAIN") + hello)
                assert "malformed PLAIN HELLO" in await failure_reason(monitor)
                assert await peer.closed_by_peer()
