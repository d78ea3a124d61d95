"""Bad input closes only the offending connection, with a monitor event that says why, while
another, healthy connection on the same socket keeps working (the project's rule for bad input)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

import anyio
import pytest

import zmtp
from tests.test_engine_helpers import TIMEOUT, linked, unique_name, wait_event
from zmtp.testing import RawPeer, raw_client, wire

pytestmark = pytest.mark.anyio


@dataclass
class Healthy:
    """A bound PULL, its monitor, and a PUSH connected to it that must keep working."""

    pull: zmtp.Socket
    monitor: zmtp.Monitor
    push: zmtp.Socket
    endpoint: str

    async def assert_still_working(self) -> None:
        await self.push.send(b"still alive")
        with anyio.fail_after(TIMEOUT):
            assert await self.pull.recv() == b"still alive"
        assert [p.socket_type for p in self.pull.peers] == ["PUSH"]


@asynccontextmanager
async def healthy_pull(**pull_options: Any) -> AsyncIterator[Healthy]:
    async with linked(
        zmtp.PULL, zmtp.PUSH, "tcp://127.0.0.1:*", binder_options=pull_options
    ) as link:
        yield Healthy(link.binder, link.binder_monitor, link.connector, link.endpoint)


async def failure_of(
    monitor: zmtp.Monitor, peer: RawPeer, kind: type[zmtp.MonitorEvent] = zmtp.HandshakeFailed
) -> Any:
    """The ``kind`` event (HandshakeFailed / Disconnected) of the raw peer's connection."""
    with anyio.fail_after(TIMEOUT):
        while True:
            event = await monitor.wait_for((zmtp.HandshakeFailed, zmtp.Disconnected))
            if event.peer_address == peer.local_address:
                assert isinstance(event, kind), event
                return event


# --------------------------------------------------------------------------- not ZMTP 3


async def test_http_client_is_refused_at_once() -> None:
    """Refused from its first bytes, not after the 30 s handshake timeout."""
    async with healthy_pull() as healthy, raw_client(healthy.endpoint) as http:
        start = anyio.current_time()
        await http.send(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        event = await failure_of(healthy.monitor, http)
        assert anyio.current_time() - start < 2.0
        assert event.kind == "protocol"
        assert "not speaking ZMTP" in event.reason and "GET" in event.reason
        with anyio.fail_after(TIMEOUT):
            await http.wait_closed()
        await healthy.assert_still_working()


async def test_zmtp_2_greeting_is_refused() -> None:
    async with healthy_pull() as healthy, raw_client(healthy.endpoint) as old:
        # ZMTP 2.0 (RFC 15): signature, revision 0x01, socket type PUSH (0x08), empty identity
        await old.send(b"\xff" + b"\x00" * 8 + b"\x7f" + b"\x01" + b"\x08" + b"\x00\x00")
        event = await failure_of(healthy.monitor, old)
        assert event.kind == "protocol"
        assert "ZMTP 2.0" in event.reason
        await healthy.assert_still_working()


@pytest.mark.parametrize(
    ("garbage", "fragment"),
    [
        (wire.message(b"hello"), "before the handshake"),
        (b"\xf0\x05hello", "reserved"),
        (wire.command(b"READY", b"\x0bSocket-Type\x00\x00\x00\x09PUSH"), "malformed metadata"),
        (wire.command(b"READY", b""), "Socket-Type"),
    ],
    ids=["message-before-ready", "reserved-flags", "truncated-property", "no-socket-type"],
)
async def test_garbage_after_a_valid_greeting_is_refused(garbage: bytes, fragment: str) -> None:
    async with healthy_pull() as healthy, raw_client(healthy.endpoint) as peer:
        await peer.send(wire.NULL_GREETING + garbage)
        event = await failure_of(healthy.monitor, peer)
        assert event.kind == "protocol"
        assert fragment in event.reason
        await healthy.assert_still_working()


@pytest.mark.parametrize("announced", [4096, 2**40])
async def test_oversized_handshake_command_is_refused_at_its_header(announced: int) -> None:
    """``max_handshake_size`` reaches the connection: a READY announcing more is refused as
    soon as its header arrives (no body sent), long before the handshake timeout."""
    async with (
        healthy_pull(max_handshake_size=1024) as healthy,
        raw_client(healthy.endpoint) as peer,
    ):
        start = anyio.current_time()
        await peer.send(wire.NULL_GREETING + b"\x06" + announced.to_bytes(8, "big"))
        event = await failure_of(healthy.monitor, peer)
        assert anyio.current_time() - start < 2.0
        assert event.kind == "protocol"
        assert "1024" in event.reason, event.reason
        await healthy.assert_still_working()


async def test_peer_error_during_the_handshake_is_reported() -> None:
    async with healthy_pull() as healthy, raw_client(healthy.endpoint) as peer:
        await peer.send(wire.NULL_GREETING + wire.command(b"ERROR", b"\x0bgo away now"))
        event = await failure_of(healthy.monitor, peer)
        assert event.kind == "peer-error"
        assert "go away now" in event.reason
        await healthy.assert_still_working()


# --------------------------------------------------------------------------- after the handshake


async def test_frame_larger_than_max_message_size_drops_the_connection() -> None:
    """Checked from the frame header alone; what the peer sent before it is still delivered."""
    async with healthy_pull(max_message_size=1000) as healthy, raw_client(healthy.endpoint) as peer:
        with anyio.fail_after(TIMEOUT):
            await peer.handshake("PUSH")
        oversized_header = b"\x02" + (2000).to_bytes(8, "big") + b"only the start"
        await peer.send(wire.message(b"before") + oversized_header)
        event = await failure_of(healthy.monitor, peer, zmtp.Disconnected)
        assert "2000" in event.reason and "max_message_size" in event.reason
        with anyio.fail_after(TIMEOUT):
            assert await healthy.pull.recv() == b"before"
            await peer.wait_closed()
        await healthy.assert_still_working()


async def test_oversized_message_from_our_own_push_is_refused_by_the_pull() -> None:
    async with (
        healthy_pull(max_message_size=1000) as healthy,
        zmtp.Socket(zmtp.PUSH, linger=0, reconnect_ivl=None) as big,
    ):
        big_monitor = big.monitor()
        await big.connect(healthy.endpoint)
        await wait_event(big_monitor, zmtp.HandshakeSucceeded)
        await big.send(b"x" * 1001)
        assert "max_message_size" in (await wait_event(healthy.monitor, zmtp.Disconnected)).reason
        await wait_event(big_monitor, zmtp.Disconnected)
        await healthy.assert_still_working()


async def test_malformed_ping_drops_the_connection() -> None:
    async with healthy_pull() as healthy, raw_client(healthy.endpoint) as peer:
        with anyio.fail_after(TIMEOUT):
            await peer.handshake("PUSH")
        await peer.send(wire.command(b"PING", b"\x00"))  # the TTL needs two bytes
        event = await failure_of(healthy.monitor, peer, zmtp.Disconnected)
        assert "PING" in event.reason
        await healthy.assert_still_working()


# --------------------------------------------------------------------------- wrong socket type


@pytest.mark.parametrize(
    ("binder_type", "connector_type"),
    [(zmtp.PUSH, zmtp.PUSH), (zmtp.PULL, zmtp.PAIR)],
    ids=["PUSH-PUSH", "PULL-PAIR"],
)
@pytest.mark.parametrize("transport", ["tcp", "inproc"])
async def test_wrong_socket_type_fails_the_handshake_on_both_sides(
    binder_type: zmtp.SocketType, connector_type: zmtp.SocketType, transport: str
) -> None:
    endpoint = "tcp://127.0.0.1:*" if transport == "tcp" else f"inproc://{unique_name()}"
    async with (
        zmtp.Socket(binder_type, linger=0) as binder,
        zmtp.Socket(connector_type, linger=0) as connector,
    ):
        binder_monitor, connector_monitor = binder.monitor(), connector.monitor()
        await connector.connect(await binder.bind(endpoint))
        for monitor in (binder_monitor, connector_monitor):
            event = await wait_event(monitor, zmtp.HandshakeFailed)
            assert event.kind == "protocol"
            assert "incompatible socket types" in event.reason
            assert binder_type.value in event.reason and connector_type.value in event.reason
        assert binder.peers == connector.peers == []


async def test_wrong_socket_type_peer_is_sent_our_ready_and_an_error() -> None:
    """RFC 37: answer a bad socket type with ERROR, then close (libzmq just closes). Everything
    we had to say is flushed before the close, so the peer learns why."""
    async with healthy_pull() as healthy, raw_client(healthy.endpoint) as peer:
        with anyio.fail_after(TIMEOUT):
            await peer.send(wire.NULL_GREETING + wire.ready_command("PULL"))
            assert (await peer.read_exact(64))[:12] == wire.NULL_GREETING[:12]
            name, data = await peer.read_command()
            assert (name, b"Socket-Type" in data, data.endswith(b"PULL")) == (b"READY", True, True)
            assert await peer.read_command() == (b"ERROR", b"\x13Invalid socket type")
            await peer.wait_closed()
        event = await failure_of(healthy.monitor, peer)
        assert "PULL cannot talk to PULL" in event.reason
        await healthy.assert_still_working()


async def test_wrong_socket_type_leaves_other_connections_working() -> None:
    async with healthy_pull() as healthy, zmtp.Socket(zmtp.PAIR, linger=0) as wrong:
        wrong_monitor = wrong.monitor()
        await wrong.connect(healthy.endpoint)
        ours = await wait_event(healthy.monitor, zmtp.HandshakeFailed)
        theirs = await wait_event(wrong_monitor, zmtp.HandshakeFailed)
        assert "PULL cannot talk to PAIR" in ours.reason
        assert "PAIR cannot talk to PULL" in theirs.reason
        await healthy.assert_still_working()


# --------------------------------------------------------------------------- silent clients


@pytest.mark.parametrize("sends", [b"", wire.NULL_GREETING], ids=["nothing", "greeting-only"])
async def test_silent_client_fails_the_handshake_with_a_timeout(sends: bytes) -> None:
    async with healthy_pull(handshake_ivl=0.3) as healthy:
        # Timed from before the connect: the server's clock starts when it accepts, which can
        # come before the connect returns here (tens of ms before, on a loaded machine).
        start = anyio.current_time()
        async with raw_client(healthy.endpoint) as peer:
            if sends:
                await peer.send(sends)
            event = await failure_of(healthy.monitor, peer)
            assert event.kind == "timeout"
            assert "timed out" in event.reason
            assert anyio.current_time() - start >= 0.3 - 0.02
            await healthy.assert_still_working()
