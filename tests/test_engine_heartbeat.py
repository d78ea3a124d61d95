"""Heartbeats (ZMTP 3.1 PING/PONG, docs/libzmq-notes.md#heartbeats) between our sockets and against
a raw peer scripted byte by byte: PINGs are sent, answered, and silence is punished."""

from __future__ import annotations

import anyio
import pytest

import zmtp
from tests.test_engine_helpers import TIMEOUT, assert_no_event, linked, wait_event
from zmtp.testing import RawPeer, raw_client, serve_raw_peers, wire

pytestmark = pytest.mark.anyio

IVL = 0.1


async def test_heartbeats_keep_an_idle_connection_alive() -> None:
    """Both sides PING every 0.1 s and drop the peer 0.3 s after an unanswered PING; an idle
    but healthy connection must survive many such periods (tcp only: ipc runs the same
    connection code, and this test has to wait)."""
    options = {"heartbeat_ivl": IVL, "heartbeat_timeout": 3 * IVL}
    async with linked(zmtp.PULL, zmtp.PUSH, "tcp://127.0.0.1:*", **options) as link:
        async with anyio.create_task_group() as tg:
            tg.start_soon(assert_no_event, link.binder_monitor, zmtp.Disconnected, 1.0)
            tg.start_soon(assert_no_event, link.connector_monitor, zmtp.Disconnected, 1.0)
        await link.connector.send(b"still here")
        with anyio.fail_after(TIMEOUT):
            assert await link.binder.recv() == b"still here"


async def test_pings_are_sent_every_heartbeat_ivl_with_our_ttl() -> None:
    async with zmtp.Socket(
        zmtp.PUSH, linger=0, heartbeat_ivl=IVL, heartbeat_ttl=1.5, heartbeat_timeout=TIMEOUT
    ) as push:
        endpoint = await push.bind("tcp://127.0.0.1:*")
        async with raw_client(endpoint) as peer:
            with anyio.fail_after(TIMEOUT):
                await peer.handshake("PULL")
                start = anyio.current_time()
                pings = [await peer.read_raw_frame() for _ in range(3)]
            elapsed = anyio.current_time() - start
        # libzmq's layout: TTL in deciseconds (1.5 s -> 0x000f), no context
        assert pings == [b"\x04\x07\x04PING\x00\x0f"] * 3
        assert elapsed >= 3 * IVL - 0.02  # the third PING cannot leave before 3 intervals


async def silent_pull(peer: RawPeer) -> None:
    """Completes the handshake as a PULL, then reads (and ignores) everything: never a PONG."""
    await peer.handshake("PULL")
    await peer.wait_closed()


async def test_silent_peer_is_dropped_after_the_heartbeat_timeout() -> None:
    async with (
        serve_raw_peers(silent_pull) as endpoint,
        zmtp.Socket(zmtp.PUSH, linger=0, heartbeat_ivl=IVL, heartbeat_timeout=3 * IVL) as push,
    ):
        monitor = push.monitor()
        await push.connect(endpoint)
        await wait_event(monitor, zmtp.HandshakeSucceeded)
        start = anyio.current_time()
        event = await wait_event(monitor, zmtp.Disconnected)
        assert "heartbeat" in event.reason
        assert anyio.current_time() - start >= IVL + 3 * IVL - 0.02  # first PING + timeout


async def test_connecting_side_reconnects_after_a_heartbeat_timeout() -> None:
    async with (
        serve_raw_peers(silent_pull) as endpoint,
        zmtp.Socket(
            zmtp.PUSH, linger=0, heartbeat_ivl=IVL, heartbeat_timeout=IVL, reconnect_ivl=0.01
        ) as push,
    ):
        monitor = push.monitor()
        await push.connect(endpoint)
        await wait_event(monitor, zmtp.HandshakeSucceeded)
        await wait_event(monitor, zmtp.Disconnected)
        await wait_event(monitor, zmtp.HandshakeSucceeded)  # a timeout is not a protocol error


LOL_CONTEXT = b"LOL" + b"z" * 55  # libzmq tests/test_heartbeats.cpp: 58 bytes of context


@pytest.mark.parametrize(
    ("ping", "expected_pong"),
    [
        (wire.ping(0, b"ctx-1234"), b"\x04\x0d\x04PONGctx-1234"),
        (wire.ping(0, b""), b"\x04\x05\x04PONG"),
        # the context is echoed up to 16 bytes, like libzmq
        (wire.ping(0, LOL_CONTEXT), b"\x04\x15\x04PONG" + LOL_CONTEXT[:16]),
    ],
    ids=["context", "no-context", "long-context"],
)
async def test_ping_is_answered_with_a_pong_echoing_its_context(
    ping: bytes, expected_pong: bytes
) -> None:
    """Even with our own heartbeats off, as libzmq does."""
    async with zmtp.Socket(zmtp.PULL, linger=0) as pull:
        endpoint = await pull.bind("tcp://127.0.0.1:*")
        async with raw_client(endpoint) as peer:
            with anyio.fail_after(TIMEOUT):
                await peer.handshake("PUSH")
                await peer.send(ping)
                assert await peer.read_raw_frame() == expected_pong


@pytest.mark.parametrize("with_message", [False, True], ids=["ping-alone", "message-then-ping"])
async def test_peer_ping_ttl_followed_by_silence_drops_the_peer(with_message: bool) -> None:
    """With a message in the same read (one write by the peer), the TTL is armed too: the
    engine skips re-reading the timer deadlines after a read of data only, and a PING, which
    never surfaces as an event, must not pass for one (it leaves a PONG to write)."""
    async with zmtp.Socket(zmtp.PULL, linger=0) as pull:
        monitor = pull.monitor()
        endpoint = await pull.bind("tcp://127.0.0.1:*")
        async with raw_client(endpoint) as peer:
            with anyio.fail_after(TIMEOUT):
                await peer.handshake("PUSH")
                first = wire.message(b"first") if with_message else b""
                await peer.send(first + wire.ping(3))  # TTL 0.3 s, then silence
                start = anyio.current_time()
                if with_message:
                    assert await pull.recv() == b"first"
                event = await wait_event(monitor, zmtp.Disconnected)
                assert "TTL" in event.reason
                assert event.peer_address == peer.local_address
                assert anyio.current_time() - start >= 0.3 - 0.02
                await peer.wait_closed()  # and the connection really is gone


async def test_traffic_cancels_a_peer_ping_ttl() -> None:
    """Any traffic is a sign of life: after one PING with TTL 0.3 s, a peer that keeps sending
    messages (and no more PINGs) for longer than the TTL is never dropped."""
    async with zmtp.Socket(zmtp.PULL, linger=0) as pull:
        monitor = pull.monitor()
        endpoint = await pull.bind("tcp://127.0.0.1:*")
        async with raw_client(endpoint) as peer:
            with anyio.fail_after(TIMEOUT):
                await peer.handshake("PUSH")
                await peer.send(wire.ping(3))
                for i in range(5):  # 0.5 s of traffic, one message every 0.1 s
                    await anyio.sleep(0.1)  # pacing the peer, not waiting for an outcome
                    await peer.send(wire.message(b"%d" % i))
            await assert_no_event(monitor, zmtp.Disconnected, 0.1)
            with anyio.fail_after(TIMEOUT):
                assert [await pull.recv() for _ in range(5)] == [b"%d" % i for i in range(5)]
