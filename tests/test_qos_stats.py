"""The QoS counters (``sock.stats()``) are readable at any time: in flight, pending per
peer, retrying, dedup size, awaiting a verdict, delivered and dead-lettered."""

from __future__ import annotations

import anyio
import pytest

import zmtp
import zmtp_qos
from tests.test_qos_captures import _port, _read_until
from tests.test_qos_reconnect import _raw_peer
from zmtp_qos import QoSStats

pytestmark = pytest.mark.anyio


async def test_level2_pending_per_peer_while_connected_and_held() -> None:
    config = zmtp_qos.QoSConfig(dead_letter_timeout=0.3)
    with anyio.fail_after(20):
        async with zmtp_qos.Socket(zmtp.PUSH, qos=2, config=config, linger=0) as push:
            assert push.stats() == QoSStats(level=2)
            events = push.monitor()
            ep = await push.bind("tcp://127.0.0.1:*")
            a = await _raw_peer(_port(ep), b"PULL", b"receiver-A", 2)  # never ACKs
            await events.wait_for(zmtp.HandshakeSucceeded)
            b = await _raw_peer(_port(ep), b"PULL", b"receiver-B", 2)
            await events.wait_for(zmtp.HandshakeSucceeded)
            receipts = [await push.send(b"m%d" % i) for i in range(5)]
            buf_a, buf_b = bytearray(), bytearray()
            await _read_until(a, buf_a, 1 + 3)  # round-robin: A gets m0 m2 m4, B m1 m3
            await _read_until(b, buf_b, 1 + 2)
            stats = push.stats()
            assert stats.pending == {"receiver-A": 3, "receiver-B": 2}
            assert stats.in_flight == 5 and stats.delivered == 0
            await a.aclose()
            await events.wait_for(zmtp.Disconnected)
            assert push.stats().pending == {"receiver-A": 3, "receiver-B": 2}  # held for A
            letters = push.dead_letters()
            for _ in range(3):
                assert (await letters.__anext__()).reason == "peer_timeout"
            stats = push.stats()
            assert stats.pending == {"receiver-B": 2}
            assert (stats.in_flight, stats.dead_lettered) == (2, 3)
            await b.aclose()
            assert all(r is not None for r in receipts)


async def test_level1_pending_per_connection_and_delivered() -> None:
    with anyio.fail_after(20):
        async with (
            zmtp_qos.Socket(zmtp.PULL, qos=1) as pull,
            zmtp_qos.Socket(zmtp.PUSH, qos=1) as push,
        ):
            await push.connect(await pull.bind("tcp://127.0.0.1:*"))
            receipts = [await push.send(b"m%d" % i) for i in range(4)]
            for _ in range(4):
                await pull.recv()
            for r in receipts:
                await r  # type: ignore[misc]
            stats = push.stats()
            assert (stats.in_flight, stats.pending, stats.delivered) == (0, {}, 4)
            assert pull.stats() == QoSStats(level=1)  # level 1 keeps no dedup set


async def test_receiver_dedup_size_and_awaiting_verdict() -> None:
    with anyio.fail_after(20):
        async with (
            zmtp_qos.Socket(zmtp.PULL, qos=3) as pull,
            zmtp_qos.Socket(zmtp.PUSH, qos=3, identity=b"sender-A") as push,
        ):
            await push.connect(await pull.bind("tcp://127.0.0.1:*"))
            receipts = [await push.send(b"m%d" % i) for i in range(3)]
            handles = [await pull.recv_handle() for _ in range(3)]
            assert pull.stats().awaiting_verdict == 3
            assert pull.stats().dedup == 0  # level 3 learns a digest at its verdict
            assert push.stats().pending == {pull.raw.options.identity.decode(): 3}
            for handle in handles:
                handle.complete()
            for r in receipts:
                await r  # type: ignore[misc]
            stats = pull.stats()
            assert stats.awaiting_verdict == 0
            # Each COMP was followed by a CLR, which empties the set again.
            while pull.stats().dedup:
                await anyio.sleep(0.01)
            assert push.stats().delivered == 3


async def test_level2_receiver_dedup_size_until_clr() -> None:
    with anyio.fail_after(20):
        async with zmtp_qos.Socket(zmtp.PULL, qos=2) as pull:
            ep = await pull.bind("tcp://127.0.0.1:*")
            raw = await _raw_peer(_port(ep), b"PUSH", b"sender-A", 2)
            async with raw:
                await raw.send(b"\x00\x02m0\x00\x02m1")
                assert [await pull.recv(), await pull.recv()] == [b"m0", b"m1"]
                assert pull.stats().dedup == 2  # no CLR sent by this raw sender


async def test_req_stats_count_the_request_awaiting_its_reply() -> None:
    config = zmtp_qos.QoSConfig(dead_letter_timeout=0.3)
    with anyio.fail_after(20):
        async with zmtp_qos.Socket(zmtp.REQ, qos=2, config=config, linger=0) as req:
            ep = await req.bind("tcp://127.0.0.1:*")
            async with zmtp_qos.Socket(zmtp.REP, qos=2, identity=b"rep-A", linger=0) as rep:
                await rep.connect(ep)
                await req.send(b"job")
                assert await rep.recv() == b"job"
                assert req.stats().pending == {"rep-A": 1}
            assert req.stats().in_flight == 1  # pinned to rep-A while it is away
            with pytest.raises(zmtp_qos.DeadLetterError):
                await req.recv()
            assert req.stats() == QoSStats(level=2, dead_lettered=1)


def test_level_zero_stats_are_zero() -> None:
    assert zmtp_qos.Socket(zmtp.PUSH).stats() == QoSStats(level=0)
