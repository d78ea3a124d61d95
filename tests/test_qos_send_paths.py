"""A QoS sender's ``send(data)`` and ``send_multipart([data])`` are one operation.

At QoS >= 1 a PUSH or SCATTER's ``send`` is its own spelled-out copy of the tracked path (one
coroutine fewer per message, docs/performance.md) while ``send_multipart`` takes the general
one; the code asks that the two be kept in step. These tests pin them to each other through
the public API only (so they outlive refactors of either): every script runs once per path and
expects the same wire bytes, receipts, stats, monitor events, dead letters, HWM blocking,
cancellation and errors. A raw peer (:class:`zmtp.testing.rawpeer.RawPeer`) stands in for
the receiver where the bytes on the wire are the point.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Coroutine
from typing import Any

import anyio
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import zmtp
import zmtp_qos
from zmtp.testing.rawpeer import RawPeer
from zmtp_qos import DeadLetter, Delivered, QoSConfig, Receipt
from zmtp_qos.digest import digest_x
from zmtp_qos.events import QoSDeadLettered

pytestmark = pytest.mark.anyio

SendOne = Callable[[zmtp_qos.Socket, Any], Coroutine[Any, Any, "Receipt | None"]]


async def _send(sock: zmtp_qos.Socket, data: Any) -> Receipt | None:
    return await sock.send(data)


async def _send_multipart(sock: zmtp_qos.Socket, data: Any) -> Receipt | None:
    return await sock.send_multipart([data])


PATHS: dict[str, SendOne] = {"send": _send, "send_multipart": _send_multipart}
each_path = pytest.mark.parametrize("path", list(PATHS))
each_level = pytest.mark.parametrize("level", [1, 2, 3])
#: The sender and the receiver type it pairs with.
each_kind = pytest.mark.parametrize("kind", [("PUSH", "PULL"), ("SCATTER", "GATHER")])

#: Every type a part may be, and what goes on the wire for it (str as UTF-8). The long one
#: takes the long frame form; the empty one is a frame of size 0.
VALUES: list[tuple[Any, bytes]] = [
    (b"bytes", b"bytes"),
    (bytearray(b"a bytearray"), b"a bytearray"),
    (memoryview(b"a memoryview"), b"a memoryview"),
    ("h\u00e9llo", "h\u00e9llo".encode()),
    (b"", b""),
    (b"L" * 300, b"L" * 300),
]


def _nowhere() -> str:
    """An inproc endpoint nobody has bound (yet)."""
    return f"inproc://qos-send-paths-{os.urandom(6).hex()}"


def _ready_properties(level: int) -> dict[str, bytes]:
    """What a QoS receiver at ``level`` announces (an Identity: the anchor levels 2-3 need)."""
    return {"X-QoS": str(level).encode(), "X-QoS-Hash": b"xs", "Identity": b"raw-receiver"}


@each_path
@each_level
@each_kind
async def test_the_wire_bytes_receipts_and_stats_are_the_same(
    path: str, level: int, kind: tuple[str, str]
) -> None:
    """The frames written, the settlement by the receiver's ACK (COMP at level 3, whose digest
    is over the converted bytes: a str or a view settles as its bytes do) and the CLR that
    follows at levels 2-3 echoing it, the receipts and the counters."""
    sender_type, receiver_type = kind
    settle = b"COMP" if level == 3 else b"ACK"
    with anyio.fail_after(20):
        async with (
            RawPeer.listen() as peer,
            zmtp_qos.Socket(sender_type, qos=level, linger=0) as sender,
        ):
            await sender.connect(peer.endpoint)
            await peer.accept()
            await peer.handshake(receiver_type, extra=_ready_properties(level))
            receipts = [await PATHS[path](sender, value) for value, _ in VALUES]
            assert all(isinstance(r, Receipt) and not r.done for r in receipts)
            assert sender.stats().in_flight == len(VALUES)
            for _, wire in VALUES:
                assert await peer.read_raw_frame() == RawPeer.message(wire)
            refs = [b"x" + digest_x([wire]) for _, wire in VALUES]
            await peer.send(b"".join(RawPeer.command(settle, ref) for ref in refs))
            outcomes = [await r for r in receipts if r is not None]
            assert all(isinstance(o, Delivered) for o in outcomes)
            assert len({o for o in outcomes}) == 1  # all from the one peer
            if level >= 2:
                assert [await peer.read_command() for _ in refs] == [(b"CLR", r) for r in refs]
            stats = sender.stats()
            assert (stats.in_flight, stats.delivered, stats.dead_lettered) == (0, len(VALUES), 0)
            await peer.expect_silence()  # nothing else: no second copy of anything


@pytest.mark.parametrize("value", [123, 1.5, None, object(), [b"nested"]])
@each_level
async def test_a_part_of_a_wrong_type_is_refused_alike_and_takes_no_slot(
    value: Any, level: int
) -> None:
    """The same exception (type and text) from both paths, the one a plain zmtp socket
    raises; nothing is counted in flight and nothing is sent."""
    errors: list[tuple[type[BaseException], str]] = []
    async with zmtp.Socket(zmtp.PUSH, linger=0) as plain:
        with pytest.raises(Exception) as raised:
            await plain.send_multipart([value])
        errors.append((raised.type, str(raised.value)))
    for send in PATHS.values():
        async with zmtp_qos.Socket(zmtp.PUSH, qos=level, linger=0) as push:
            await push.connect(_nowhere())
            with pytest.raises(Exception) as raised:
                await send(push, value)
            errors.append((raised.type, str(raised.value)))
            assert push.stats().in_flight == 0
    assert len(set(errors)) == 1, errors


@each_path
@each_level
async def test_a_send_after_close_is_refused_and_takes_no_slot(path: str, level: int) -> None:
    push = zmtp_qos.Socket(zmtp.PUSH, qos=level, linger=0)
    async with push:
        await push.connect(_nowhere())
    with pytest.raises(zmtp.SocketClosed):
        await PATHS[path](push, b"late")
    assert push.stats().in_flight == 0


@each_path
@each_level
async def test_the_hwm_blocks_times_out_and_cancels_alike(path: str, level: int) -> None:
    """``send_hwm`` un-settled messages block the next send even once they are written (the
    receiver has them, unacknowledged): it times out after ``send_timeout`` or is cancelled,
    either way without a slot taken or a message sent; a blocked send goes as soon as one
    message is settled, and each message is written once, in order."""
    send = PATHS[path]
    settle = b"COMP" if level == 3 else b"ACK"
    with anyio.fail_after(20):
        async with (
            RawPeer.listen() as peer,
            zmtp_qos.Socket(zmtp.PUSH, qos=level, send_hwm=2, send_timeout=0.2, linger=0) as push,
        ):
            await push.connect(peer.endpoint)
            await peer.accept()
            await peer.handshake("PULL", extra=_ready_properties(level))
            receipts = [await send(push, b"m0"), await send(push, b"m1")]
            assert [await peer.read_message(), await peer.read_message()] == [[b"m0"], [b"m1"]]
            with pytest.raises(TimeoutError):
                await send(push, b"timed out")
            assert push.stats().in_flight == 2
            push.raw.options.send_timeout = None
            with anyio.CancelScope() as scope:
                async with anyio.create_task_group() as tg:
                    tg.start_soon(send, push, b"cancelled")
                    await anyio.wait_all_tasks_blocked()
                    scope.cancel()
            assert push.stats().in_flight == 2
            got: list[Receipt | None] = []

            async def blocked() -> None:
                got.append(await send(push, b"m2"))

            async with anyio.create_task_group() as tg:
                tg.start_soon(blocked)
                await anyio.wait_all_tasks_blocked()
                assert got == []  # still blocked: two un-settled
                ref = b"x" + digest_x([b"m0"])
                await peer.send(RawPeer.command(settle, ref))
                items = [await peer.read_item()]
                if level >= 2:  # the CLR for m0 too, in either order
                    items.append(await peer.read_item())
                # m2: not "timed out", not "cancelled"
                expected: list[tuple[str, Any]] = [("message", [b"m2"])]
                if level >= 2:
                    expected.append(("command", (b"CLR", ref)))
                assert sorted(items) == sorted(expected)
            receipts += got
            first = receipts[0]
            assert first is not None and isinstance(await first, Delivered)
            assert not any(r is None or r.done for r in receipts[1:])
            assert push.stats().in_flight == 2


@each_path
@each_level
async def test_dead_letters_and_their_events_are_the_same(path: str, level: int) -> None:
    """Nobody ever takes the messages: each is dead-lettered once, after
    ``dead_letter_timeout``, with its bytes as sent, on its receipt, the dead-letter stream
    and the monitor alike."""
    config = QoSConfig(dead_letter_timeout=0.3)
    with anyio.fail_after(20):
        async with zmtp_qos.Socket(zmtp.PUSH, qos=level, config=config, linger=0) as push:
            events = push.monitor()
            letters = push.dead_letters()
            await push.connect(_nowhere())
            receipts = [await PATHS[path](push, value) for value, _ in VALUES]
            expected = [DeadLetter([wire], "peer_timeout", "") for _, wire in VALUES]
            assert [await r for r in receipts if r is not None] == expected
            streamed = []
            async for letter in letters:
                streamed.append(letter)
                if len(streamed) == len(VALUES):
                    break
            assert streamed == expected
            reasons = []
            for _ in VALUES:
                event = await events.wait_for(QoSDeadLettered)
                assert isinstance(event, QoSDeadLettered)
                reasons.append((event.reason, event.peer))
            assert reasons == [("peer_timeout", "")] * len(VALUES)
            stats = push.stats()
            assert (stats.in_flight, stats.dead_lettered, stats.delivered) == (0, len(VALUES), 0)


#: A part of any accepted type (what it is, and its bytes before the message's unique prefix).
_parts = st.one_of(
    st.tuples(st.sampled_from(["bytes", "bytearray", "memoryview"]), st.binary(max_size=300)),
    st.tuples(st.just("str"), st.text(max_size=20).map(str.encode)),
)


def _part(kind: str, data: bytes) -> Any:
    """``data`` as a part of type ``kind`` (str: ``data`` is its UTF-8)."""
    if kind == "str":
        return data.decode()
    return {"bytes": bytes, "bytearray": bytearray, "memoryview": memoryview}[kind](data)


@settings(deadline=None, max_examples=20, suppress_health_check=[HealthCheck.too_slow])
@given(
    script=st.lists(st.tuples(st.sampled_from(sorted(PATHS)), _parts), min_size=1, max_size=12),
    level=st.sampled_from([1, 2, 3]),
)
async def test_sends_through_either_path_mix_in_one_ordered_stream(
    script: list[tuple[str, tuple[str, bytes]]], level: int
) -> None:
    """Any interleaving of the two paths, with parts of any accepted type, is one stream:
    received in order, each once, every receipt delivered. (Each message is unique: at levels
    2-3 a byte-identical one still in the receiver's dedup window is, by design, a copy.)"""
    sent = [b"%d:" % i + data for i, (_, (_, data)) in enumerate(script)]
    endpoint = _nowhere()
    with anyio.fail_after(20):
        async with (
            zmtp_qos.Socket(zmtp.PULL, qos=level) as pull,
            zmtp_qos.Socket(zmtp.PUSH, qos=level, linger=0) as push,
        ):
            await pull.bind(endpoint)
            await push.connect(endpoint)
            receipts = []
            for (name, (kind, _)), wire in zip(script, sent, strict=True):
                receipts.append(await PATHS[name](push, _part(kind, wire)))
            bodies = []
            for _ in script:
                message = await pull.recv()
                if level == 3:
                    message.complete()
                    message = message.parts[0]
                bodies.append(message)
            assert bodies == sent
            outcomes = [await r for r in receipts if r is not None]
            assert len(outcomes) == len(script)
            assert all(isinstance(o, Delivered) for o in outcomes)
            assert push.stats().in_flight == 0 and push.stats().delivered == len(script)
