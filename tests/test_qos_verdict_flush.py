"""A level-3 receiver's COMPs are queued per connection and written in batches (the socket's
verdict flusher, docs/qos.md): every COMP still arrives, in the order given; a NACK never
overtakes a COMP given before it; close writes what is queued (within its linger); and the
counters (``stats``, ``unconfirmed``) count a verdict as soon as it is given.

A raw TCP sender stands in for the PUSH: it never sends CLR, so what the receiver remembers
and answers is exactly what these tests give verdicts for."""

from __future__ import annotations

import anyio
import pytest
from anyio.abc import SocketStream

import zmtp
import zmtp_qos
from tests.test_qos_captures import _frames, _port, _read_until
from tests.test_qos_reconnect import _raw_peer
from zmtp_qos.digest import DIGESTERS
from zmtp_qos.socket import Handle
from zmtp_qos.verdicts import FLUSH_AT

pytestmark = pytest.mark.anyio

SENDER = b"sender-A"


def _data(bodies: list[bytes]) -> bytes:
    """Single-part messages as short frames (flags 0, one size byte)."""
    return b"".join(bytes((0, len(b))) + b for b in bodies)


def _digest(body: bytes) -> bytes:
    return DIGESTERS["x"]([body])


def _verdicts(buf: bytes) -> list[tuple[bytes, bytes]]:
    """(COMP or NACK, digest) of each answer after READY."""
    out = []
    for frame in _frames(buf)[1:]:
        name = frame[3 : 3 + frame[2]]
        data = frame[3 + frame[2] :]
        out.append((name, data[1:9]))
    return out


async def _handles(pull: zmtp_qos.Socket, count: int) -> list[Handle]:
    return [await pull.recv_handle() for _ in range(count)]


async def _setup(pull: zmtp_qos.Socket, bodies: list[bytes]) -> tuple[SocketStream, list[Handle]]:
    ep = await pull.bind("tcp://127.0.0.1:*")
    raw = await _raw_peer(_port(ep), b"PUSH", SENDER, 3)
    await raw.send(_data(bodies))
    handles = await _handles(pull, len(bodies))
    assert [h.parts for h in handles] == [[b] for b in bodies]
    return raw, handles


async def test_comps_are_batched_and_all_arrive_in_verdict_order() -> None:
    bodies = [b"m%d" % i for i in range(20)]
    with anyio.fail_after(20):
        async with zmtp_qos.Socket(zmtp.PULL, qos=3) as pull:
            raw, handles = await _setup(pull, bodies)
            async with raw:
                order = handles[::2] + handles[1::2]
                for handle in order:  # no yield: the COMPs wait for the flusher
                    handle.complete()
                assert pull.runtime is not None and pull.runtime.comps_queued == 20
                buf = bytearray()
                await _read_until(raw, buf, 1 + 20)  # READY, then a COMP per message
                assert pull.runtime.comps_queued == 0
                expected = [(b"COMP", _digest(h.parts[0])) for h in order]
                assert _verdicts(bytes(buf)) == expected


async def test_a_nack_follows_the_comps_given_before_it() -> None:
    bodies = [b"a", b"b", b"c", b"d", b"e"]
    with anyio.fail_after(20):
        async with zmtp_qos.Socket(zmtp.PULL, qos=3) as pull:
            raw, handles = await _setup(pull, bodies)
            async with raw:
                handles[0].complete()
                handles[1].complete()
                handles[2].reject(0x05, "bad")  # terminal: after COMP a and b on the wire
                handles[3].complete()
                handles[4].reject(0x84, "later")
                buf = bytearray()
                await _read_until(raw, buf, 1 + 5)
                names = [b"COMP", b"COMP", b"NACK", b"COMP", b"NACK"]
                expected = [(n, _digest(b)) for n, b in zip(names, bodies, strict=True)]
                assert _verdicts(bytes(buf)) == expected
                assert pull.stats().awaiting_verdict == 0


async def test_more_than_256_queued_are_written_without_a_yield() -> None:
    assert FLUSH_AT == 256  # the bound this test and docs/qos.md name
    bodies = [b"n%d" % i for i in range(300)]
    with anyio.fail_after(30):
        async with zmtp_qos.Socket(zmtp.PULL, qos=3) as pull:
            raw, handles = await _setup(pull, bodies)
            async with raw:
                for handle in handles:
                    handle.complete()
                assert pull.runtime is not None and pull.runtime.comps_queued == 300 - 256
                buf = bytearray()
                await _read_until(raw, buf, 1 + 300)
                expected = [(b"COMP", _digest(b)) for b in bodies]
                assert _verdicts(bytes(buf)) == expected


async def test_two_connections_verdicts_interleaved_go_each_to_its_own_in_order() -> None:
    """Each connection has its own verdict queue: COMPs given alternately on two senders'
    messages reach each sender in the order given there, all counted while queued; a NACK on
    one writes both connections' COMPs given before it."""
    with anyio.fail_after(20):
        async with zmtp_qos.Socket(zmtp.PULL, qos=3) as pull:
            ep = await pull.bind("tcp://127.0.0.1:*")
            a = await _raw_peer(_port(ep), b"PUSH", b"sender-A", 3)
            b = await _raw_peer(_port(ep), b"PUSH", b"sender-B", 3)
            async with a, b:
                await a.send(_data([b"a0", b"a1", b"a2"]))
                first = await _handles(pull, 3)
                await b.send(_data([b"b0", b"b1", b"b2"]))
                second = await _handles(pull, 3)
                assert [h.parts for h in first + second] == [
                    [x] for x in (b"a0", b"a1", b"a2", b"b0", b"b1", b"b2")
                ]
                order = [second[2], first[1], second[0], first[0]]
                for handle in order:  # no yield: all four wait for the flusher
                    handle.complete()
                assert pull.runtime is not None and pull.runtime.comps_queued == 4
                first[2].reject(0x05, "bad")  # flushes both queues first
                assert pull.runtime.comps_queued == 0
                second[1].complete()
                buf_a, buf_b = bytearray(), bytearray()
                await _read_until(a, buf_a, 1 + 3)
                await _read_until(b, buf_b, 1 + 3)
                assert _verdicts(bytes(buf_a)) == [
                    (b"COMP", _digest(b"a1")),
                    (b"COMP", _digest(b"a0")),
                    (b"NACK", _digest(b"a2")),
                ]
                assert _verdicts(bytes(buf_b)) == [
                    (b"COMP", _digest(b"b2")),
                    (b"COMP", _digest(b"b0")),
                    (b"COMP", _digest(b"b1")),
                ]
                assert pull.stats().awaiting_verdict == 0


async def test_a_verdict_after_its_connection_ended_is_dropped_quietly() -> None:
    """The sender is gone (it replays what it did not hear about): completing its message
    raises nothing, writes nothing, and leaves nothing queued; a second verdict is still an
    error; a new connection's verdicts go out as usual."""
    with anyio.fail_after(20):
        async with zmtp_qos.Socket(zmtp.PULL, qos=3) as pull:
            events = pull.monitor()
            raw, (gone, also_gone) = await _setup(pull, [b"g0", b"g1"])
            await raw.aclose()
            await events.wait_for(zmtp.Disconnected)
            gone.complete()
            also_gone.complete()
            await pull.wait_written()
            assert pull.runtime is not None and pull.runtime.comps_queued == 0
            with pytest.raises(zmtp_qos.VerdictError):
                gone.complete()
            again = await _raw_peer(_port(pull.raw.last_endpoint), b"PUSH", SENDER, 3)
            async with again:
                await again.send(_data([b"g2"]))
                (handle,) = await _handles(pull, 1)
                handle.complete()
                buf = bytearray()
                await _read_until(again, buf, 1 + 1)
                assert _verdicts(bytes(buf)) == [(b"COMP", _digest(b"g2"))]


async def test_close_right_after_the_verdicts_writes_them() -> None:
    """(Within its linger, as every queued answer: linger 0 drops what is unwritten.)"""
    bodies = [b"c%d" % i for i in range(8)]
    with anyio.fail_after(20):
        async with zmtp_qos.Socket(zmtp.PULL, qos=3, linger=5.0) as pull:
            raw, handles = await _setup(pull, bodies)
            for handle in handles:
                handle.complete()
        # Closed without a yield after the last verdict: the COMPs left before it went.
        async with raw:
            buf = bytearray()
            await _read_until(raw, buf, 1 + 8)
            assert _verdicts(bytes(buf)) == [(b"COMP", _digest(b)) for b in bodies]


async def test_close_of_the_raw_socket_lingers_for_queued_comps() -> None:
    """The zmtp socket's own close (its linger calls the runtime's) writes them too."""
    bodies = [b"r%d" % i for i in range(4)]
    with anyio.fail_after(20):
        async with zmtp_qos.Socket(zmtp.PULL, qos=3, linger=5.0) as pull:
            raw, handles = await _setup(pull, bodies)
            for handle in handles:
                handle.complete()
            await pull.raw.close()
        async with raw:
            buf = bytearray()
            await _read_until(raw, buf, 1 + 4)
            assert _verdicts(bytes(buf)) == [(b"COMP", _digest(b)) for b in bodies]


async def test_counters_are_exact_right_after_complete() -> None:
    bodies = [b"k%d" % i for i in range(3)]
    with anyio.fail_after(20):
        async with zmtp_qos.Socket(zmtp.PULL, qos=3) as pull:
            raw, handles = await _setup(pull, bodies)
            async with raw:
                assert pull.stats().awaiting_verdict == 3
                handles[0].complete()
                handles[1].complete()
                # No yield since: the COMPs may still be queued, the counters see them.
                stats = pull.stats()
                assert (stats.awaiting_verdict, stats.dedup) == (1, 2)
                assert pull.unconfirmed() == 2
                handles[2].complete()
                assert pull.unconfirmed() == 3
                await pull.wait_written()
                buf = bytearray()
                await _read_until(raw, buf, 1 + 3)
                assert _verdicts(bytes(buf)) == [(b"COMP", _digest(b)) for b in bodies]


async def test_a_copy_of_a_completed_message_is_answered_not_delivered() -> None:
    """A copy arriving after the verdict (the sender did not hear the COMP yet) is answered
    COMP from the dedup set, after the queued COMPs, and never becomes a handle."""
    with anyio.fail_after(20):
        async with zmtp_qos.Socket(zmtp.PULL, qos=3) as pull:
            raw, handles = await _setup(pull, [b"x", b"y"])
            async with raw:
                handles[0].complete()
                handles[1].complete()
                buf = bytearray()
                await _read_until(raw, buf, 1 + 2)
                await raw.send(_data([b"x", b"z"]))
                (handle,) = await _handles(pull, 1)
                assert handle.parts == [b"z"]
                handle.complete()
                await _read_until(raw, buf, 1 + 4)
                assert _verdicts(bytes(buf)) == [
                    (b"COMP", _digest(b)) for b in (b"x", b"y", b"x", b"z")
                ]
                assert pull.pending_handles == 0


@pytest.mark.parametrize("transport", ["tcp", "inproc"])
async def test_end_to_end_every_receipt_is_delivered(transport: str) -> None:
    where = "tcp://127.0.0.1:*" if transport == "tcp" else "inproc://qos-verdict-flush"
    with anyio.fail_after(30):
        async with (
            zmtp_qos.Socket(zmtp.PULL, qos=3) as pull,
            zmtp_qos.Socket(zmtp.PUSH, qos=3) as push,
        ):
            await push.connect(await pull.bind(where))
            receipts = [await push.send(b"e%d" % i) for i in range(500)]
            for _ in range(500):
                (await pull.recv_handle()).complete()
            outcomes = [await r for r in receipts]  # type: ignore[misc]
            assert all(isinstance(o, zmtp_qos.Delivered) for o in outcomes)
            assert pull.stats().awaiting_verdict == 0
            # The same bytes again, once the first is settled: a new message, delivered.
            # (Regression: over inproc the sender's CLR came back inside the COMP's send,
            # before the flush had remembered the digest, which then stayed and answered
            # the next copy as a duplicate.)
            for _ in range(3):
                receipt = await push.send(b"again")
                (await pull.recv_handle()).complete()
                assert isinstance(await receipt, zmtp_qos.Delivered)  # type: ignore[misc]


@pytest.mark.parametrize("reject", [False, True])
async def test_a_copy_awaiting_the_verdict_is_answered_on_its_own_connection(
    reject: bool,
) -> None:
    """The sender reconnects (same anchor) and replays a message whose verdict is pending:
    the copy is not delivered again, and the one verdict answers it on the new connection."""
    with anyio.fail_after(20):
        async with zmtp_qos.Socket(zmtp.PULL, qos=3) as pull:
            events = pull.monitor()
            first, (handle,) = await _setup(pull, [b"job"])
            await first.aclose()
            await events.wait_for(zmtp.Disconnected)
            second = await _raw_peer(_port(pull.raw.last_endpoint), b"PUSH", SENDER, 3)
            async with second:
                await second.send(_data([b"job", b"other"]))
                (other,) = await _handles(pull, 1)
                assert other.parts == [b"other"]  # the copy of b"job" was not delivered
                if reject:
                    handle.reject(0x84, "again")
                else:
                    handle.complete()
                other.complete()
                buf = bytearray()
                await _read_until(second, buf, 1 + 2)
                name = b"NACK" if reject else b"COMP"
                assert _verdicts(bytes(buf)) == [
                    (name, _digest(b"job")),
                    (b"COMP", _digest(b"other")),
                ]
                assert pull.runtime is not None and not pull.runtime.copies
                assert pull.stats().awaiting_verdict == 0
