"""The sender's in-flight cap (docs/qos-protocol.md §5.3): every un-settled message counts
against ``send_hwm``, wherever it is. The receiver's dedup capacity (``recv_hwm``) relies on
it: a sender that let more than its cap be un-ACKed could replay a digest the receiver has
already evicted (the 8120 duplicates of the first level-2 soak, docs/qos.md)."""

from __future__ import annotations

import contextlib
import tracemalloc

import anyio
import pytest

import zmtp
import zmtp_qos
from tests.test_qos_captures import _port
from tests.test_qos_reconnect import _raw_peer

pytestmark = pytest.mark.anyio

BIG = 4 << 20  #: a few of these fill the loopback socket buffers: the writer blocks


async def _accepted_until_blocked(push: zmtp_qos.Socket, size: int) -> int:
    """How many sends return before one blocks for 0.5 s."""
    n = 0
    while True:
        with anyio.move_on_after(0.5):
            await push.send(bytes(size - 8) + b"%08d" % n)
            n += 1
            continue
        return n


@pytest.mark.parametrize("level", [1, 2])
async def test_messages_queued_behind_a_blocked_writer_count_against_send_hwm(
    level: int,
) -> None:
    """A peer that never reads: its writer is stuck, so sends pile up in the outbox. They
    are un-settled too (the old gate counted only written ones: 5 sends got through here)."""
    with anyio.fail_after(30):
        async with zmtp_qos.Socket(zmtp.PUSH, qos=level, send_hwm=4, linger=0) as push:
            events = push.monitor()
            ep = await push.bind("tcp://127.0.0.1:*")
            raw = await _raw_peer(_port(ep), b"PULL", b"receiver-A", level)  # never reads
            async with raw:
                await events.wait_for(zmtp.HandshakeSucceeded)
                assert await _accepted_until_blocked(push, BIG) == 4
                assert push.runtime is not None and push.runtime.in_flight == 4


async def test_a_send_that_times_out_leaves_no_receipt_behind() -> None:
    """A send that never got its slot: not pending, never dead-lettered at close."""
    with anyio.fail_after(30):
        async with zmtp_qos.Socket(zmtp.PUSH, qos=2, send_hwm=1, linger=0) as push:
            letters: list[zmtp_qos.DeadLetter] = []
            ep = await push.bind("tcp://127.0.0.1:*")
            raw = await _raw_peer(_port(ep), b"PULL", b"receiver-A", 2)  # never ACKs
            async with raw:
                await push.send(b"pending")
                assert push.runtime is not None
                with pytest.raises(TimeoutError):
                    with anyio.fail_after(0.3):
                        await push.send(b"never sent")
                assert push.runtime.in_flight == 1
                push.runtime.on_dead_letter = lambda letter, receipt: letters.append(letter)
        assert [letter.parts for letter in letters] == [[b"pending"]]


async def test_send_timeout_applies_to_the_in_flight_cap() -> None:
    with anyio.fail_after(30):
        async with zmtp_qos.Socket(
            zmtp.PUSH, qos=2, send_hwm=1, send_timeout=0.2, linger=0
        ) as push:
            ep = await push.bind("tcp://127.0.0.1:*")
            raw = await _raw_peer(_port(ep), b"PULL", b"receiver-A", 2)  # never ACKs
            async with raw:
                await push.send(b"pending")
                with pytest.raises(zmtp.TimedOut, match="send_timeout"):
                    await push.send(b"blocked")


async def test_sender_memory_is_bounded_while_a_peer_never_acks() -> None:
    """A peer that reads everything and never ACKs: sends block at ``send_hwm`` and the
    sender's memory stops growing, however many more sends are tried (each timed-out try
    used to leave its message behind)."""
    size = 10_000
    with anyio.fail_after(60):
        async with zmtp_qos.Socket(zmtp.PUSH, qos=2, send_hwm=50, linger=0) as push:
            events = push.monitor()
            ep = await push.bind("tcp://127.0.0.1:*")
            raw = await _raw_peer(_port(ep), b"PULL", b"receiver-A", 2)
            async with raw, anyio.create_task_group() as tg:

                async def drain() -> None:  # reads every byte, never answers
                    with contextlib.suppress(anyio.EndOfStream, anyio.ClosedResourceError):
                        while True:
                            await raw.receive()

                tg.start_soon(drain)
                await events.wait_for(zmtp.HandshakeSucceeded)
                tracemalloc.start()
                try:
                    assert await _accepted_until_blocked(push, size) == 50
                    at_cap, _ = tracemalloc.get_traced_memory()
                    for n in range(200):
                        with anyio.move_on_after(0.01):
                            await push.send(b"%d" % n + bytes(size))
                    after, _ = tracemalloc.get_traced_memory()
                finally:
                    tracemalloc.stop()
                assert push.runtime is not None and push.runtime.in_flight == 50
                assert after - at_cap < 20 * size  # 200 tries would be 2 MB if kept
                tg.cancel_scope.cancel()
