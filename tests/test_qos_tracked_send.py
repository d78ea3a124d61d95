"""The tracked ``send`` of a level >= 1 PUSH (``zmtp_qos.sending.tracked_send``) and the
zmtp extension point it queues through (``zmtp.Socket.try_send_part``): the QoS rules on its
fast path (a peer with room, no wait for a slot) and off it.

Cancel safety: a send cancelled before zmtp took its message leaves nothing tracked and its
slot free; the receipts of the sends that returned stay valid. The ``send_hwm`` window with
a peer that never ACKs, and level-1 fail-over in write order, through the same send.
"""

from __future__ import annotations

import anyio
import pytest

import zmtp
import zmtp_qos
from tests.test_qos_captures import _port, _read_until
from tests.test_qos_reconnect import _raw_peer
from zmtp_qos import Delivered
from zmtp_qos.events import QoSFailedOver
from zmtp_qos.runtime import QoSRuntime

pytestmark = pytest.mark.anyio


def _runtime(push: zmtp_qos.Socket) -> QoSRuntime:
    runtime = push.runtime
    assert isinstance(runtime, QoSRuntime)
    return runtime


async def test_the_tracked_send_is_bound_once_and_level_0_keeps_zmtps() -> None:
    """A level-1 PUSH's ``send`` is its tracked closure (not a method: no ``self`` per
    message); level 0 hands out the raw socket's own."""
    push = zmtp_qos.Socket(zmtp.PUSH, qos=1)
    assert push.send.__qualname__ == "tracked_send.<locals>.send"
    plain = zmtp_qos.Socket(zmtp.PUSH, qos=0)
    assert plain.send == plain.raw.send


async def test_a_send_cancelled_before_it_queued_leaves_nothing_and_the_others_deliver() -> None:
    """In a cancelled scope the sends that ``try_send_part`` queues return their receipts;
    the first one that reaches zmtp's cancel check (every 16th) is cancelled before its
    message is queued: not in flight, not in ``queued``, never delivered. The receipts
    returned before it resolve ``Delivered``, and the next send goes out after them."""
    with anyio.fail_after(20):
        async with (
            zmtp_qos.Socket(zmtp.PULL, qos=1) as pull,
            zmtp_qos.Socket(zmtp.PUSH, qos=1, linger=5) as push,
        ):
            events = push.monitor()
            await push.connect(await pull.bind("tcp://127.0.0.1:*"))
            await events.wait_for(zmtp.HandshakeSucceeded)
            runtime = _runtime(push)
            receipts: list[zmtp_qos.Receipt] = []
            with anyio.CancelScope() as scope:
                scope.cancel()
                for n in range(64):
                    receipts.append(await push.send(b"m%d" % n))
            assert scope.cancelled_caught
            assert 0 < len(receipts) < 16  # the cadence's check cancelled one send
            lost = b"m%d" % len(receipts)
            assert runtime.in_flight == len(receipts)
            assert set(map(id, runtime.queued.values())) <= set(map(id, receipts))
            last = await push.send(b"last")
            got = [await pull.recv() for _ in range(len(receipts) + 1)]
            assert got == [b"m%d" % n for n in range(len(receipts))] + [b"last"]
            assert lost not in got
            for receipt in [*receipts, last]:
                assert isinstance(await receipt, Delivered)  # type: ignore[misc]
            assert runtime.in_flight == 0 and runtime.queued == {}


async def test_a_send_cancelled_while_waiting_for_a_slot_takes_none() -> None:
    """``send_hwm`` 3 and a peer that never ACKs: three sends return at once, the fourth
    waits for a slot; cancelled there it leaves the count at 3 and nothing filed, and a
    ``send_timeout`` ends a later one the same way (the window is un-ACKed messages)."""
    with anyio.fail_after(20):
        async with zmtp_qos.Socket(
            zmtp.PUSH, qos=1, send_hwm=3, send_timeout=0.2, linger=0
        ) as push:
            events = push.monitor()
            ep = await push.bind("tcp://127.0.0.1:*")
            raw = await _raw_peer(_port(ep), b"PULL", b"", 1)  # never ACKs
            async with raw:
                await events.wait_for(zmtp.HandshakeSucceeded)
                receipts = [await push.send(b"m%d" % n) for n in range(3)]
                await _read_until(raw, bytearray(), 1 + 3)  # READY and the three written
                runtime = _runtime(push)
                assert runtime.in_flight == 3 and runtime.queued == {}
                with anyio.move_on_after(0.1) as scope:
                    await push.send(b"no slot")
                assert scope.cancelled_caught
                assert runtime.in_flight == 3 and runtime.queued == {}
                with pytest.raises(zmtp.TimedOut):
                    await push.send(b"timed out")
                assert runtime.in_flight == 3 and runtime.queued == {}
                assert not any(receipt.done for receipt in receipts)


async def test_level1_fail_over_keeps_the_write_order() -> None:
    """The un-ACKed messages of a lost connection reach the survivor in the order they were
    sent, ahead of what is sent after the loss."""
    with anyio.fail_after(20):
        async with (
            zmtp_qos.Socket(zmtp.PUSH, qos=1) as push,
            zmtp_qos.Socket(zmtp.PULL, qos=1) as survivor,
        ):
            events = push.monitor()
            ep = await push.bind("tcp://127.0.0.1:*")
            raw = await _raw_peer(_port(ep), b"PULL", b"", 1)  # never ACKs
            await events.wait_for(zmtp.HandshakeSucceeded)
            receipts = [await push.send(b"m%d" % n) for n in range(20)]
            await _read_until(raw, bytearray(), 1 + 20)
            await survivor.connect(ep)
            await events.wait_for(zmtp.HandshakeSucceeded)
            await raw.aclose()
            failed_over = await events.wait_for(QoSFailedOver)
            assert isinstance(failed_over, QoSFailedOver) and failed_over.count == 20
            after = await push.send(b"after")
            got = [await survivor.recv() for _ in range(21)]
            assert got == [b"m%d" % n for n in range(20)] + [b"after"]
            for receipt in [*receipts, after]:
                assert isinstance(await receipt, Delivered)  # type: ignore[misc]


async def test_try_send_part_declines_as_try_send_prepared_does() -> None:
    """``try_send_part`` skips only the shape check: no peer yet, a closed socket, a socket
    type with a send check (REQ) and the cancel cadence still decline: the 16th call, and
    each after it until ``send_prepared`` (which the caller falls back to) has taken its
    cancel check."""
    async with zmtp.Socket(zmtp.PUSH, linger=0) as push:
        assert not push.try_send_part([b"no peer yet"])
        await push.connect("tcp://127.0.0.1:1")  # never up: the pipe queues
        results = [push.try_send_part([b"%d" % n]) for n in range(20)]
        assert results == [True] * 15 + [False] * 5
        await push.send_prepared([b"the fallback"])
        assert push.try_send_part([b"again"])
    assert not push.try_send_part([b"closed"])
    async with zmtp.Socket(zmtp.REQ, linger=0) as req:  # a type with a send check
        await req.connect("tcp://127.0.0.1:1")
        assert not req.try_send_part([b"checked by send_prepared"])
