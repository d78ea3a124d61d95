"""A QoS socket takes exactly what ``zmtp.Socket.send`` / ``send_multipart`` take, with the same
meaning, at every level (issue 10): bytes, bytearray, memoryview and str (as UTF-8), any
iterable of parts; anything else is zmtp's own ``TypeError`` with zmtp's wording, and costs no
receipt. The digest covers the bytes that went out (the receiver's ACK/COMP settles the
receipt, and it equals the digest of the encoded bytes), so dedup and the Ruby-compatible
digests hold. ``Producer.submit`` takes the same parts. Both backends."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import anyio
import pytest

import zmtp
import zmtp_qos
from zmtp_qos import Delivered, Producer

pytestmark = pytest.mark.anyio

WIRE = [b"caf\xc3\xa9", b"ba", b"mv", b"plain"]


def _parts() -> list[Any]:
    """One of each accepted kind, meaning the bytes of ``WIRE``."""
    return ["café", bytearray(b"ba"), memoryview(b"xmvx")[1:3], b"plain"]


async def _received(pull: zmtp_qos.Socket, level: int) -> list[bytes]:
    if level == 3:
        handle = await pull.recv_handle()
        handle.complete()
        return list(handle.parts)
    return await pull.recv_multipart()


@pytest.mark.parametrize("transport", ["tcp", "inproc"])
@pytest.mark.parametrize("level", [0, 1, 2, 3])
async def test_str_and_bytes_like_parts_go_out_as_zmtp_sends_them(
    level: int, transport: str
) -> None:
    where = "tcp://127.0.0.1:*" if transport == "tcp" else f"inproc://qos-types-{level}"
    with anyio.fail_after(20):
        async with (
            zmtp_qos.Socket(zmtp.PULL, qos=level) as pull,
            zmtp_qos.Socket(zmtp.PUSH, qos=level) as push,
        ):
            await push.connect(await pull.bind(where))
            sends: list[tuple[Callable[[], Any], list[bytes]]] = [
                (lambda: push.send("café"), [WIRE[0]]),
                (lambda: push.send(bytearray(b"ba")), [WIRE[1]]),
                (lambda: push.send(memoryview(b"xmvx")[1:3]), [WIRE[2]]),
                (lambda: push.send_multipart(_parts()), WIRE),
                (lambda: push.send_multipart(tuple(_parts())), WIRE),
                (lambda: push.send_multipart(p for p in _parts()), WIRE),
            ]
            for send, wire in sends:
                receipt = await send()
                assert await _received(pull, level) == wire
                if level == 0:
                    assert receipt is None
                    continue
                # The peer's digest (over the bytes it received: ``wire``, UTF-8 too) found
                # the entry the sender tracked under its own digest: they are the same.
                assert isinstance(await receipt, Delivered)


async def _plain_refusal(send: Callable[[zmtp.Socket], Any]) -> BaseException:
    """What plain zmtp raises for the same call."""
    async with zmtp.Socket(zmtp.PUSH) as plain:
        try:
            await send(plain)
        except Exception as error:
            return error
    raise AssertionError("plain zmtp accepted it")


REFUSED: list[tuple[str, Callable[[Any], Any]]] = [
    ("send(int)", lambda s: s.send(5)),  # bytes(5) would be five NUL bytes
    ("send(None)", lambda s: s.send(None)),
    ("send(list)", lambda s: s.send([b"a"])),
    ("send_multipart(int part)", lambda s: s.send_multipart([b"a", 5])),
    ("send_multipart(dict part)", lambda s: s.send_multipart([{}])),
    ("send_multipart([])", lambda s: s.send_multipart([])),
]


@pytest.mark.parametrize("level", [0, 1, 2, 3])
@pytest.mark.parametrize("case", REFUSED, ids=[name for name, _ in REFUSED])
async def test_what_zmtp_refuses_is_refused_alike(
    level: int, case: tuple[str, Callable[[Any], Any]]
) -> None:
    _, send = case
    expected = await _plain_refusal(send)
    assert isinstance(expected, (TypeError, ValueError))
    with anyio.fail_after(20):
        async with zmtp_qos.Socket(zmtp.PUSH, qos=level, linger=0) as push:
            await push.connect("inproc://qos-types-nobody")
            with pytest.raises(type(expected), match=re.escape(str(expected))):
                await send(push)
            assert push.stats().in_flight == 0  # no receipt, no send_hwm slot taken


async def test_producer_submit_takes_the_same_parts() -> None:
    with anyio.fail_after(20):
        async with (
            Producer(linger=0) as producer,
            zmtp_qos.Socket(zmtp.PULL, qos=3, linger=0) as pull,
        ):
            await pull.connect(await producer.bind("tcp://127.0.0.1:*"))
            single = await producer.submit("café")
            multi = await producer.submit(_parts())
            for wire in ([WIRE[0]], WIRE):
                assert await _received(pull, 3) == wire
            assert isinstance(await single.result(), Delivered)
            assert isinstance(await multi.result(), Delivered)
            assert (single.parts, multi.parts) == ([WIRE[0]], WIRE)
            expected = await _plain_refusal(lambda s: s.send_multipart([b"a", 5]))
            with pytest.raises(type(expected), match=re.escape(str(expected))):
                await producer.submit([b"a", 5])  # type: ignore[list-item]
            assert producer.outstanding == 0
