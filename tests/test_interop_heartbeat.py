"""Heartbeats against libzmq: libzmq answers our PINGs, we answer libzmq's, and a peer that
goes silent after its handshake is dropped after the heartbeat timeout."""

from __future__ import annotations

import time
from pathlib import Path

import anyio
import pytest

import zmtp
from zmtp.interop import Libzmq, LibzmqSocket, ZmtpEnd, compare_messages, link
from zmtp.testing import FaultProxy, bind_endpoint, event_within, silent_zmtp_peer, tcp_port
from zmtp.testing.fixtures import TEST_TIMEOUT, libzmq_env  # noqa: F401
from zmtp.testing.wire import count_commands

pytestmark = [pytest.mark.anyio, pytest.mark.interop]

IVL, TIMEOUT = 0.1, 0.3  # seconds
IDLE = 1.0  # several heartbeat timeouts of idle connection
LIBZMQ_HEARTBEATS = {"heartbeat_ivl": 100, "heartbeat_timeout": 300, "heartbeat_ttl": 300}  # ms


async def assert_still_connected(
    ours: zmtp.Socket, theirs: LibzmqSocket, monitor: zmtp.Monitor, within: float, what: str
) -> None:
    """No disconnect or failed handshake for ``within`` seconds, a message still gets through
    to libzmq, and there was no reconnect: the heartbeat kept the very same connection."""
    dropped = await event_within(monitor, (zmtp.Disconnected, zmtp.HandshakeFailed), within)
    assert dropped is None, f"{what}: {dropped}"
    await ours.send(b"still connected")
    assert await theirs.recv_multipart() == [b"still connected"]
    assert await event_within(monitor, zmtp.Connected, 0) is None  # no reconnect either


@pytest.mark.parametrize("binds", ["zmtp", "libzmq"])
@pytest.mark.parametrize("transport", ["tcp", "ipc"])
async def test_libzmq_answers_our_pings(
    lz: Libzmq, tmp_path: Path, transport: str, binds: str
) -> None:
    with anyio.fail_after(TEST_TIMEOUT):
        theirs = lz.socket("PULL")
        async with zmtp.Socket(
            zmtp.PUSH, heartbeat_ivl=IVL, heartbeat_timeout=TIMEOUT, linger=0
        ) as ours:
            await link(ours, theirs, binds=binds, endpoint=bind_endpoint(transport, tmp_path))
            monitor = ours.monitor()
            # Idle for several timeouts: only PING/PONG keep the connection alive.
            await assert_still_connected(
                ours, theirs, monitor, IDLE, "our heartbeat dropped libzmq"
            )


async def test_ping_pong_on_the_wire_with_libzmq(lz: Libzmq) -> None:
    """Through a recording relay: we send PINGs every IVL, libzmq PONGs each one."""
    with anyio.fail_after(TEST_TIMEOUT):
        theirs = lz.socket("PULL")
        port = tcp_port(theirs.bind("tcp://127.0.0.1:*"))
        async with (
            FaultProxy("127.0.0.1", port, record=True) as relay,
            zmtp.Socket(zmtp.PUSH, heartbeat_ivl=IVL, heartbeat_timeout=TIMEOUT, linger=0) as ours,
        ):
            monitor = ours.monitor()
            await ours.connect(relay.endpoint)
            await monitor.wait_for(zmtp.HandshakeSucceeded)
            assert await event_within(monitor, zmtp.Disconnected, IDLE) is None
            pings = count_commands(bytes(relay.recorded["up"]), b"PING")
            pongs = count_commands(bytes(relay.recorded["down"]), b"PONG")
            assert pings >= IDLE / IVL / 2, f"only {pings} PINGs in {IDLE}s"
            assert pongs >= pings - 1, f"libzmq answered {pongs} of {pings} PINGs"
            await ours.send(b"ok")
            assert await theirs.recv_multipart() == [b"ok"]


@pytest.mark.parametrize("binds", ["zmtp", "libzmq"])
@pytest.mark.parametrize("transport", ["tcp", "ipc"])
async def test_we_answer_libzmq_pings(
    lz: Libzmq, tmp_path: Path, transport: str, binds: str
) -> None:
    with anyio.fail_after(TEST_TIMEOUT):
        theirs = lz.socket("PUSH", **LIBZMQ_HEARTBEATS)
        theirs_monitor = theirs.monitor()
        async with zmtp.Socket(zmtp.PULL, linger=0) as ours:  # our own heartbeats are off
            await link(ours, theirs, binds=binds, endpoint=bind_endpoint(transport, tmp_path))
            monitor = ours.monitor()
            events = await theirs_monitor.events_within(IDLE)
            names = [e.name for e in events]
            assert "DISCONNECTED" not in names, f"libzmq dropped us: {names}"
            assert "CONNECTED" not in names and "ACCEPTED" not in names, names
            # libzmq's PINGs carry a TTL of 0.3 s; answering them must not trip it on our side.
            assert await event_within(monitor, zmtp.Disconnected, 0) is None
            await theirs.send_multipart([b"still connected"])
            assert await ours.recv_multipart() == [b"still connected"]


async def test_we_pong_libzmq_on_the_wire(lz: Libzmq) -> None:
    with anyio.fail_after(TEST_TIMEOUT):
        theirs = lz.socket("PUSH", **LIBZMQ_HEARTBEATS)
        async with zmtp.Socket(zmtp.PULL, linger=0) as ours:
            monitor = ours.monitor()
            port = tcp_port(await ours.bind("tcp://127.0.0.1:*"))
            async with FaultProxy("127.0.0.1", port, record=True) as relay:
                theirs.connect(relay.endpoint)
                await monitor.wait_for(zmtp.HandshakeSucceeded)
                assert await event_within(monitor, zmtp.Disconnected, IDLE) is None
                pings = count_commands(bytes(relay.recorded["up"]), b"PING")
                pongs = count_commands(bytes(relay.recorded["down"]), b"PONG")
                assert pings >= IDLE / 0.1 / 2, f"libzmq sent only {pings} PINGs"
                assert pongs >= pings - 1, f"we answered {pongs} of {pings} PINGs"
                await theirs.send_multipart([b"ok"])
                assert await ours.recv_multipart() == [b"ok"]


async def test_libzmq_honours_the_ttl_in_our_pings(lz: Libzmq) -> None:
    """Our PING carries heartbeat_ttl in deciseconds; libzmq drops the connection when nothing
    else follows within it. PING every 0.5 s with TTL 0.2 s: the first PING at 0.5 s arms
    libzmq's TTL timer, and nothing else arrives, so libzmq closes at about 0.7 s."""
    with anyio.fail_after(TEST_TIMEOUT):
        theirs = lz.socket("PULL")
        theirs_monitor = theirs.monitor()
        async with zmtp.Socket(
            zmtp.PUSH, heartbeat_ivl=0.5, heartbeat_ttl=0.2, heartbeat_timeout=5.0, linger=0
        ) as ours:
            monitor = ours.monitor()
            await link(ours, theirs, binds="libzmq", endpoint="tcp://127.0.0.1:*")
            started = anyio.current_time()
            await theirs_monitor.wait_for("DISCONNECTED", touch=False)
            elapsed = anyio.current_time() - started
            assert 0.6 <= elapsed < 1.2, f"libzmq dropped us after {elapsed:.2f}s"
            event = await monitor.wait_for(zmtp.Disconnected)
            assert isinstance(event, zmtp.Disconnected) and "closed by peer" in event.reason


async def test_silent_peer_dropped_after_heartbeat_timeout() -> None:
    """A peer that completes the handshake and then says nothing (not even PONG) is dropped
    once heartbeat_timeout passes after a PING, with the reason in the monitor."""
    with anyio.fail_after(TEST_TIMEOUT):
        async with (
            silent_zmtp_peer("PULL") as peer,
            zmtp.Socket(zmtp.PUSH, heartbeat_ivl=IVL, heartbeat_timeout=TIMEOUT, linger=0) as ours,
        ):
            monitor = ours.monitor()
            await ours.connect(peer.endpoint)
            await monitor.wait_for(zmtp.HandshakeSucceeded)
            started = anyio.current_time()
            event = await monitor.wait_for((zmtp.Disconnected, zmtp.HandshakeFailed))
            elapsed = anyio.current_time() - started
            assert isinstance(event, zmtp.Disconnected), event
            assert "heartbeat" in event.reason, event.reason
            # First PING after IVL, dropped TIMEOUT later (allow for scheduling slack).
            assert IVL + TIMEOUT - 0.05 <= elapsed < IVL + TIMEOUT + 0.5, elapsed
            assert count_commands(bytes(peer.received[0]), b"PING") >= 1


@pytest.mark.parametrize("binds", ["zmtp", "libzmq"])
async def test_libzmq_ping_between_frames_of_a_multipart_message(lz: Libzmq, binds: str) -> None:
    """libzmq's heartbeat timer makes the next frame its encoder produces a PING, wherever it
    is (stream_engine_base.cpp ``timer_event`` sets ``_next_msg = produce_ping_message``),
    including between two frames of a multipart message. Observed on the wire:
    ``03 <len 2048> ... | 04 07 04 PING 00 00 | 03 <len 2048> ...``. libzmq's own decoder
    handles such a PING and goes on assembling the message; so must we.

    A consumer slower than the sender makes it happen within a few heartbeats: the socket
    buffers fill while libzmq is in the middle of a 64-part message. (The pauses model the
    application's processing time; the check is that nothing is dropped.)"""
    with anyio.fail_after(TEST_TIMEOUT):
        theirs = lz.socket("PUSH", heartbeat_ivl=10, heartbeat_timeout=10_000)
        async with zmtp.Socket(zmtp.PULL, recv_hwm=1, linger=0) as ours:
            await link(ours, theirs, binds=binds, endpoint="tcp://127.0.0.1:*")
            monitor = ours.monitor()
            messages = [[i.to_bytes(4, "big")] + [bytes(2048)] * 63 for i in range(100)]
            await theirs.send_many(messages)  # queued in libzmq, below its HWM
            end = ZmtpEnd(ours, timeout=2.0)
            received: list[list[bytes]] = []
            for i in range(len(messages)):
                try:
                    received += await end.recv_many(1)
                except TimeoutError:
                    dropped = await event_within(monitor, zmtp.Disconnected, 0)
                    raise AssertionError(f"after {i} messages: {dropped}") from None
                if i % 5 == 4:
                    await anyio.sleep(0.03)  # slow consumer
                    dropped = await event_within(monitor, zmtp.Disconnected, 0)
                    assert dropped is None, f"after {i + 1} messages: {dropped}"
            compare_messages(messages, received)


#: A busy application: each event-loop pass takes longer than the heartbeat timeout.
PASS_STALL = TIMEOUT * 1.5
BUSY_FOR = 3.0  # seconds: about 20 heartbeat intervals of such passes


@pytest.mark.parametrize("transport", ["tcp", "ipc"])
async def test_a_late_event_loop_does_not_drop_a_peer_that_answered(
    lz: Libzmq, tmp_path: Path, transport: str
) -> None:
    """Every pass of our event loop takes longer than the heartbeat timeout (an application
    that blocks between awaits, a starved machine): our PINGs leave one pass after they were
    due, libzmq answers each at once, and its PONG waits in the kernel until our reader's turn.
    The peer was never silent, so it must not be dropped (docs/security.md, "Heartbeats on a
    late event loop"): a PING's timeout runs from when it was written, as libzmq's does, and
    input waiting unread counts as traffic."""
    with anyio.fail_after(TEST_TIMEOUT):
        theirs = lz.socket("PULL")
        async with zmtp.Socket(
            zmtp.PUSH, heartbeat_ivl=IVL, heartbeat_timeout=TIMEOUT, linger=0
        ) as ours:
            await link(ours, theirs, binds="zmtp", endpoint=bind_endpoint(transport, tmp_path))
            monitor = ours.monitor()
            deadline = time.monotonic() + BUSY_FOR
            while time.monotonic() < deadline:
                time.sleep(PASS_STALL)  # the fault this test injects: a blocked loop
                await anyio.lowlevel.checkpoint()
            await assert_still_connected(
                ours, theirs, monitor, IVL, "a late loop dropped a live peer"
            )


async def test_a_full_inbox_does_not_drop_a_peer_that_answered(lz: Libzmq) -> None:
    """Our application stops receiving: the inbox fills to recv_hwm, the reader stops reading,
    and libzmq's PONGs wait in the kernel behind its messages. That is our own back-pressure,
    not a silent peer: the connection stays, and every message arrives once we read again."""
    count = 2000
    payload = b"p" * 1024
    with anyio.fail_after(TEST_TIMEOUT):
        theirs = lz.socket("PUSH")
        async with zmtp.Socket(
            zmtp.PULL, heartbeat_ivl=IVL, heartbeat_timeout=TIMEOUT, recv_hwm=10, linger=0
        ) as ours:
            await link(ours, theirs, binds="zmtp", endpoint="tcp://127.0.0.1:*")
            monitor = ours.monitor()
            async with anyio.create_task_group() as tg:
                tg.start_soon(theirs.send_many, [[payload]] * count)
                # Not receiving for several heartbeat timeouts, while the peer's bytes queue.
                dropped = await event_within(monitor, zmtp.Disconnected, IDLE)
                assert dropped is None, f"our own back-pressure dropped a live peer: {dropped}"
                for _ in range(count):
                    assert await ours.recv() == payload
