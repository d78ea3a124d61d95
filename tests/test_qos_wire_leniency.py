"""Live checks of the handshake and command leniency rules (docs/qos-protocol.md §2.2, §4,
§6.9, §7) against raw peers: an unknown algorithm letter is never sent back, a peer with no
algorithm in common is refused with the spec's reason, an ACK with an unknown algorithm
byte still settles by its digest, and property names are case-insensitive (ZMTP's rule; the
reference compares them case-sensitively)."""

from __future__ import annotations

import anyio
import pytest
from anyio.abc import SocketStream

import zmtp
import zmtp_qos
from tests.test_qos_captures import _frames, _port, _read_until
from tests.test_qos_reconnect import CLIENT_GREETING
from zmtp.protocol.properties import encode_properties
from zmtp_qos import Delivered, commands
from zmtp_qos.digest import DIGESTERS

pytestmark = pytest.mark.anyio


async def _peer(port: int, props: dict[str, bytes]) -> SocketStream:
    stream = await anyio.connect_tcp("127.0.0.1", port)
    await stream.send(CLIENT_GREETING + commands.encode_frame(b"READY", encode_properties(props)))
    return stream


async def test_an_unknown_algorithm_letter_is_never_sent() -> None:
    """Reference shortcoming 9: the peer prefers ``q`` (unknown): we pick ``s``, the first of
    ours it has, and our ACK carries ``s`` and the SHA-1 digest, never ``q``."""
    with anyio.fail_after(20):
        async with zmtp_qos.Socket(zmtp.PULL, qos=1) as pull:
            ep = await pull.bind("tcp://127.0.0.1:*")
            props = {"Socket-Type": b"PUSH", "X-QoS": b"1", "X-QoS-Hash": b"qs"}
            async with await _peer(_port(ep), props) as raw:
                await raw.send(b"\x00\x05hello")
                assert await pull.recv() == b"hello"
                buf = bytearray()
                await _read_until(raw, buf, 2)  # READY, ACK
                ack = _frames(bytes(buf))[1]
                assert ack == commands.encode_frame(b"ACK", b"s" + DIGESTERS["s"]([b"hello"]))


async def test_no_algorithm_in_common_is_refused_with_the_reason() -> None:
    with anyio.fail_after(20):
        async with zmtp_qos.Socket(zmtp.PULL, qos=1) as pull:
            events = pull.monitor()
            ep = await pull.bind("tcp://127.0.0.1:*")
            props = {"Socket-Type": b"PUSH", "X-QoS": b"1", "X-QoS-Hash": b"q"}
            async with await _peer(_port(ep), props):
                event = await events.wait_for(zmtp.HandshakeFailed)
                assert isinstance(event, zmtp.HandshakeFailed)
                assert event.kind == "rejected"
                assert event.reason == "QoS hash mismatch: local=xs peer=q"


async def test_an_ack_with_an_unknown_algorithm_byte_settles_by_digest() -> None:
    """Lenient on receive: the digest is 8 bytes whatever the algorithm byte says."""
    with anyio.fail_after(20):
        async with zmtp_qos.Socket(zmtp.PUSH, qos=1) as push:
            events = push.monitor()
            ep = await push.bind("tcp://127.0.0.1:*")
            props = {"Socket-Type": b"PULL", "X-QoS": b"1", "X-QoS-Hash": b"xs"}
            async with await _peer(_port(ep), props) as raw:
                await events.wait_for(zmtp.HandshakeSucceeded)
                receipt = await push.send(b"hello")
                buf = bytearray()
                await _read_until(raw, buf, 2)  # READY, the message
                await raw.send(commands.encode_frame(b"ACK", b"q" + DIGESTERS["x"]([b"hello"])))
                assert isinstance(await receipt, Delivered)  # type: ignore[misc]


@pytest.mark.parametrize("level", [1, 2])
async def test_property_names_are_case_insensitive(level: int) -> None:
    """ZMTP property names are case-insensitive; the reference's are not (a peer spelling
    ``x-qos`` is level 0 to it). We send the reference's exact spelling, and accept any."""
    with anyio.fail_after(20):
        async with zmtp_qos.Socket(zmtp.PULL, qos=level) as pull:
            ep = await pull.bind("tcp://127.0.0.1:*")
            props = {
                "socket-type": b"PUSH",
                "IDENTITY": b"sender-A",
                "x-qos": str(level).encode(),
                "X-QOS-HASH": b"xs",
            }
            async with await _peer(_port(ep), props) as raw:
                await raw.send(b"\x00\x05hello")
                assert await pull.recv() == b"hello"
                buf = bytearray()
                await _read_until(raw, buf, 2)
                assert _frames(bytes(buf))[1][2:6] == b"\x03ACK"
