"""Level 2 across reconnects: dedup keyed by anchor (not connection), replay before new
messages, level 1 fail-over to the surviving peer. Raw TCP peers stand in for a peer whose
ACK is lost or who never ACKs, so each test sets up its premise deterministically."""

from __future__ import annotations

import anyio
import pytest
from anyio.abc import SocketStream

import zmtp
import zmtp_qos
from tests.test_qos_captures import GREETING, _capture, _frames, _port, _read_until
from zmtp.protocol.properties import encode_properties
from zmtp_qos import Delivered, commands
from zmtp_qos.digest import DIGESTERS
from zmtp_qos.events import QoSDeadLettered, QoSFailedOver, QoSReplayed

pytestmark = pytest.mark.anyio

CLIENT_GREETING = _capture("qos2", "c2s")[:GREETING]


def _ready(socket_type: bytes, identity: bytes, level: int) -> bytes:
    props = {
        "Socket-Type": socket_type,
        "Identity": identity,
        "X-QoS": str(level).encode(),
        "X-QoS-Hash": b"xs",
    }
    return commands.encode_frame(b"READY", encode_properties(props))


async def _raw_peer(port: int, socket_type: bytes, identity: bytes, level: int) -> SocketStream:
    stream = await anyio.connect_tcp("127.0.0.1", port)
    await stream.send(CLIENT_GREETING + _ready(socket_type, identity, level))
    return stream


async def test_dedup_by_anchor_a_replay_after_reconnect_is_delivered_once() -> None:
    """Reference shortcoming 1: its dedup sets were per connection."""
    data = b"\x00\x05cap-1"
    with anyio.fail_after(20):
        async with zmtp_qos.Socket(zmtp.PULL, qos=2) as pull:
            ep = await pull.bind("tcp://127.0.0.1:*")
            first = await _raw_peer(_port(ep), b"PUSH", b"sender-A", 2)
            await first.send(data)
            assert await pull.recv() == b"cap-1"
            await first.aclose()  # the sender never read our ACK: it will replay
            second = await _raw_peer(_port(ep), b"PUSH", b"sender-A", 2)
            async with second:
                await second.send(data + b"\x00\x05cap-2")
                assert await pull.recv() == b"cap-2"  # cap-1 was not delivered again
                buf = bytearray()
                await _read_until(second, buf, 3)  # READY, ACK cap-1, ACK cap-2
                acks = _frames(bytes(buf))[1:]
                assert [f[2:6] for f in acks] == [b"\x03ACK"] * 2  # the replay is still ACKed


async def test_level2_replays_pending_before_new_messages_on_reconnect() -> None:
    """Reference shortcoming 8: replay could be overtaken by new messages."""
    with anyio.fail_after(20):
        async with zmtp_qos.Socket(zmtp.PUSH, qos=2) as push:
            events = push.monitor()
            ep = await push.bind("tcp://127.0.0.1:*")
            raw = await _raw_peer(_port(ep), b"PULL", b"receiver-A", 2)
            receipts = [await push.send(b"m%d" % i) for i in range(5)]
            buf = bytearray()
            await _read_until(raw, buf, 1 + 5)  # written, never ACKed
            await raw.aclose()
            await events.wait_for(zmtp.Disconnected)  # "new" cannot be queued for A
            assert push.runtime is not None
            async with anyio.create_task_group() as tg:
                new_receipts = []

                async def send_new() -> None:  # waits for a peer: queued behind the replay
                    new_receipts.append(await push.send(b"new"))

                tg.start_soon(send_new)
                async with zmtp_qos.Socket(zmtp.PULL, qos=2, identity=b"receiver-A") as pull:
                    await pull.connect(ep)
                    got = [await pull.recv() for _ in range(6)]
                    assert got == [b"m0", b"m1", b"m2", b"m3", b"m4", b"new"]
                    replayed = await events.wait_for(QoSReplayed)
                    assert isinstance(replayed, QoSReplayed)
                    assert (replayed.peer, replayed.count) == ("receiver-A", 5)
                    for r in receipts + new_receipts:
                        assert isinstance(await r, Delivered)  # type: ignore[misc]


async def test_level2_does_not_fail_over_to_another_anchor() -> None:
    with anyio.fail_after(20):
        async with zmtp_qos.Socket(zmtp.PUSH, qos=2, linger=0) as push:
            events = push.monitor()
            ep = await push.bind("tcp://127.0.0.1:*")
            raw = await _raw_peer(_port(ep), b"PULL", b"receiver-A", 2)
            receipt = await push.send(b"pinned")
            buf = bytearray()
            await _read_until(raw, buf, 2)
            await raw.aclose()
            await events.wait_for(zmtp.Disconnected)  # A is gone before new traffic
            async with zmtp_qos.Socket(zmtp.PULL, qos=2, identity=b"receiver-B") as other:
                await other.connect(ep)
                await push.send(b"fresh")
                assert await other.recv() == b"fresh"  # B gets new traffic only
            assert receipt is not None and not receipt.done  # still pinned to A


async def test_level1_fails_over_un_acked_messages_to_the_survivor() -> None:
    with anyio.fail_after(20):
        async with (
            zmtp_qos.Socket(zmtp.PUSH, qos=1) as push,
            zmtp_qos.Socket(zmtp.PULL, qos=1) as survivor,
        ):
            events = push.monitor()  # before bind: it sees every handshake
            ep = await push.bind("tcp://127.0.0.1:*")
            raw = await _raw_peer(_port(ep), b"PULL", b"", 1)  # never ACKs
            await events.wait_for(zmtp.HandshakeSucceeded)
            receipts = [await push.send(b"m%d" % i) for i in range(4)]
            buf = bytearray()
            await _read_until(raw, buf, 1 + 4)
            await survivor.connect(ep)
            await events.wait_for(zmtp.HandshakeSucceeded)
            await raw.aclose()
            failed_over = await events.wait_for(QoSFailedOver)
            assert isinstance(failed_over, QoSFailedOver) and failed_over.count == 4
            got = sorted([await survivor.recv() for _ in range(4)])
            assert got == [b"m0", b"m1", b"m2", b"m3"]
            for r in receipts:
                assert isinstance(await r, Delivered)  # type: ignore[misc]


async def test_level2_dead_letters_after_the_timeout_and_streams_them() -> None:
    config = zmtp_qos.QoSConfig(dead_letter_timeout=0.2)
    with anyio.fail_after(20):
        async with zmtp_qos.Socket(zmtp.PUSH, qos=2, config=config, linger=0) as push:
            events = push.monitor()
            ep = await push.bind("tcp://127.0.0.1:*")
            raw = await _raw_peer(_port(ep), b"PULL", b"receiver-A", 2)
            receipt = await push.send(b"doomed")
            buf = bytearray()
            await _read_until(raw, buf, 2)
            letters = push.dead_letters()
            await raw.aclose()
            await events.wait_for(zmtp.Disconnected)
            letter = await letters.__anext__()
            assert letter.reason == "peer_timeout" and letter.parts == [b"doomed"]
            assert letter.peer == "receiver-A"
            event = await events.wait_for(QoSDeadLettered)
            assert isinstance(event, QoSDeadLettered)
            assert (event.peer, event.reason) == ("receiver-A", "peer_timeout")
            assert event.endpoint == ep  # its last connection's (issue 10: it was "")
            assert await receipt == letter  # type: ignore[misc]
            assert push.runtime is not None and push.runtime.in_flight == 0


async def test_receiver_dedup_ttl_sweep_runs() -> None:
    """Reference shortcoming 2: its TTL sweep never ran."""
    config = zmtp_qos.QoSConfig(dedup_ttl=0.1, dead_letter_timeout=0.1)
    data = b"\x00\x05cap-1"
    with anyio.fail_after(20):
        async with zmtp_qos.Socket(zmtp.PULL, qos=2, config=config) as pull:
            ep = await pull.bind("tcp://127.0.0.1:*")
            raw = await _raw_peer(_port(ep), b"PUSH", b"sender-A", 2)
            async with raw:
                await raw.send(data)
                assert await pull.recv() == b"cap-1"
                assert pull.runtime is not None
                while len(pull.runtime.dedup):  # swept by the socket's own timer
                    await anyio.sleep(0.05)
                await raw.send(data)  # past the TTL: a new message again
                assert await pull.recv() == b"cap-1"


async def test_level3_replay_while_the_first_copy_is_processed_is_not_delivered_again() -> None:
    """The dedup set learns a level-3 digest at its verdict; a replay that arrives before it
    (the first connection died with the message in the application's hands) was delivered a
    second time. It is now answered by the verdict, on the connection the sender is on now."""
    data = b"\x00\x05cap-1"
    with anyio.fail_after(20):
        async with zmtp_qos.Socket(zmtp.PULL, qos=3) as pull:
            ep = await pull.bind("tcp://127.0.0.1:*")
            first = await _raw_peer(_port(ep), b"PUSH", b"sender-A", 3)
            await first.send(data)
            handle = await pull.recv_handle()
            assert handle.parts == [b"cap-1"]
            await first.aclose()  # no verdict yet: the sender will replay cap-1
            second = await _raw_peer(_port(ep), b"PUSH", b"sender-A", 3)
            async with second:
                await second.send(data + b"\x00\x05cap-2")
                following = await pull.recv_handle()
                assert following.parts == [b"cap-2"]  # cap-1 was not delivered again
                handle.complete()
                following.complete()
                buf = bytearray()
                await _read_until(second, buf, 3)  # READY, COMP cap-1, COMP cap-2
                comps = _frames(bytes(buf))[1:]
                assert [f[2:7] for f in comps] == [b"\x04COMP"] * 2
                assert comps[0][7:] == b"x" + DIGESTERS["x"]([b"cap-1"])
