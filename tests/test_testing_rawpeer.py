"""``zmtp.testing.RawPeer`` scripting a zmtp socket's peer byte by byte, on both backends: a
correct handshake and message, then an oversized frame; a ZMTP 2.0 greeting; and connecting to
a bound socket and reading its frames."""

from __future__ import annotations

import anyio
import pytest

import zmtp
from zmtp.protocol.frames import COMMAND
from zmtp.testing import RawPeer

pytestmark = pytest.mark.anyio
DEADLINE = 30


async def test_scripted_handshake_message_then_oversized_frame() -> None:
    async with RawPeer.listen() as peer, zmtp.Socket(zmtp.PULL, max_message_size=1000) as pull:
        with anyio.fail_after(DEADLINE):
            await pull.connect(peer.endpoint)
            await peer.accept()
            await peer.send(peer.greeting())
            greeting = await peer.recv_greeting()
            assert (greeting.major, greeting.mechanism) == (3, b"NULL")
            await peer.send(peer.ready("PUSH"))
            flags, body = await peer.recv_frame()
            assert flags & COMMAND and body.startswith(b"\x05READY")
            await peer.send(peer.message(b"hello", b"raw"))
            assert await pull.recv_multipart() == [b"hello", b"raw"]
            await peer.send(peer.frame_header(1 << 40))  # and no body: silence mid-frame
            await peer.wait_closed()  # refused at the header, over max_message_size


async def test_old_greeting_is_refused() -> None:
    async with RawPeer.listen() as peer, zmtp.Socket(zmtp.PULL) as pull:
        with anyio.fail_after(DEADLINE):
            await pull.connect(peer.endpoint)
            await peer.accept()
            await peer.send(peer.greeting(major=1)[:11])  # revision 1: ZMTP 2.0
            await peer.wait_closed()


async def test_connect_to_a_bound_socket() -> None:
    async with zmtp.Socket(zmtp.PUSH) as push:
        endpoint = await push.bind("tcp://127.0.0.1:*")
        with anyio.fail_after(DEADLINE):
            peer = await RawPeer.connect(endpoint)
            async with peer:
                await peer.send(peer.greeting() + peer.ready("PULL"))
                assert (await peer.recv_greeting()).minor == 1
                await peer.recv_frame()  # READY
                await push.send(b"to the raw peer")
                assert await peer.recv_frame() == (0, b"to the raw peer")
