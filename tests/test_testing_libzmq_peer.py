"""``zmtp.testing.libzmq_peer``: pyzmq peers in a thread and in a subprocess, echoing or
receiving, NULL and CURVE, talked to from zmtp on both backends; a subprocess peer SIGKILLed."""

from __future__ import annotations

import anyio
import pytest

import zmtp
from zmtp.testing import libzmq_peer

pytestmark = [pytest.mark.anyio, pytest.mark.interop]
pytest.importorskip("zmq")
DEADLINE = 30


@pytest.mark.parametrize("process", [False, True], ids=["thread", "process"])
async def test_echo_peer(process: bool) -> None:
    with libzmq_peer("REP", echo=True, process=process) as peer:
        async with zmtp.Socket(zmtp.REQ, linger=0) as req:
            await req.connect(peer.endpoint)
            with anyio.fail_after(DEADLINE):
                await req.send_multipart([b"ping", b"1"])
                assert await req.recv_multipart() == [b"ping", b"1"]
    assert peer.received == [[b"ping", b"1"]]


async def test_curve_peer_in_a_process_reports_what_it_got() -> None:
    server_public, server_secret = zmtp.curve_keypair()
    with libzmq_peer(
        "DEALER", echo=True, process=True, curve_server=True, curve_secretkey=server_secret.encode()
    ) as peer:
        public, secret = zmtp.curve_keypair()
        async with zmtp.Socket(
            zmtp.DEALER,
            curve_serverkey=server_public,
            curve_publickey=public,
            curve_secretkey=secret,
            linger=0,
        ) as dealer:
            await dealer.connect(peer.endpoint)
            with anyio.fail_after(DEADLINE):
                await dealer.send(b"boxed")
                assert await dealer.recv() == b"boxed"
    assert peer.received == [[b"boxed"]]


async def test_a_process_peer_can_be_killed() -> None:
    peer = libzmq_peer("PULL", process=True)
    async with zmtp.Socket(zmtp.PUSH, linger=0) as push:
        monitor = push.monitor()
        await push.connect(peer.endpoint)
        with anyio.fail_after(DEADLINE):
            await monitor.wait_for(zmtp.HandshakeSucceeded)
            peer.kill()
            await monitor.wait_for(zmtp.Disconnected)
        monitor.close()
