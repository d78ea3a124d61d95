"""``zmtp.testing.RawPeer`` scripting a zmtp socket's peer byte by byte, on both backends: a
correct handshake and message, then an oversized frame; a ZMTP 2.0 greeting; and connecting to
a bound socket (tcp and ipc) and reading its frames; serve_raw_peers."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

import zmtp
from zmtp.protocol.frames import COMMAND
from zmtp.testing import RawPeer, serve_raw_peers

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


@pytest.mark.parametrize("transport", ["ipc", "ipc-abstract"])
async def test_connect_over_ipc(transport: str, tmp_path: Path) -> None:
    name = f"@zmtp-rawpeer-{id(tmp_path)}" if transport == "ipc-abstract" else f"{tmp_path}/s"
    async with zmtp.Socket(zmtp.PULL, linger=0) as pull:
        with anyio.fail_after(DEADLINE):
            endpoint = await pull.bind(f"ipc://{name}")
            peer = await RawPeer.connect(endpoint)
            try:
                assert (await peer.handshake("PUSH"))["Socket-Type"] == b"PULL"
                await peer.send(peer.message(b"over ipc"))
                assert await pull.recv() == b"over ipc"
            finally:
                await peer.aclose()


async def test_serve_raw_peers_handles_every_connection_and_names_it() -> None:
    """A reconnecting socket meets the handler twice (on the accepting side, ``local_address``
    is the listener's own address; on a connecting one, the socket's ``peer_address``: see
    test_engine_heartbeat.py)."""
    addresses: list[str] = []

    async def drop_after_handshake(peer: RawPeer) -> None:
        await peer.handshake("PULL")
        addresses.append(peer.local_address)

    async with (
        serve_raw_peers(drop_after_handshake) as endpoint,
        zmtp.Socket(zmtp.PUSH, linger=0, reconnect_ivl=0.01) as push,
    ):
        monitor = push.monitor()
        await push.connect(endpoint)
        with anyio.fail_after(DEADLINE):
            first = await monitor.wait_for(zmtp.Disconnected)
            await monitor.wait_for(zmtp.HandshakeSucceeded)
            await monitor.wait_for(zmtp.Disconnected)
        assert isinstance(first, zmtp.Disconnected)
        assert len(addresses) >= 2
        assert set(addresses) == {endpoint.removeprefix("tcp://")}
