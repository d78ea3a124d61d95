"""The load balancer's one-pipe fast path (``LoadBalancer._lone``, zmtp/routing/base.py) follows
every change of the attached pipes: one peer, a second (round robin again), back to one (the
one left, not the one gone), none (a send waits), and a new one.

The fast path keeps the only pipe instead of looking at the pipe list per message, so a stale
one would send to a departed peer or skip round robin; these tests would then lose messages
(a receive times out) or find them at the wrong peer.
"""

from __future__ import annotations

import anyio
import pytest

import zmtp
from tests.test_engine_helpers import TIMEOUT, unique_name

pytestmark = pytest.mark.anyio

#: A load-balancing sender, and the peer type it sends to.
PAIRS = [(zmtp.PUSH, zmtp.PULL), (zmtp.DEALER, zmtp.DEALER)]


async def _recv_all(sock: zmtp.Socket, count: int) -> list[bytes]:
    with anyio.fail_after(TIMEOUT):
        return [await sock.recv() for _ in range(count)]


@pytest.mark.parametrize(("sender_type", "peer_type"), PAIRS)
async def test_one_two_one_none_one_peers(
    sender_type: zmtp.SocketType, peer_type: zmtp.SocketType
) -> None:
    a, b = f"inproc://{unique_name()}", f"inproc://{unique_name()}"
    async with (
        zmtp.Socket(peer_type) as peer_a,
        zmtp.Socket(peer_type) as peer_b,
        zmtp.Socket(sender_type, linger=0, send_timeout=0.05) as sender,
    ):
        await peer_a.bind(a)
        await peer_b.bind(b)
        await sender.connect(a)
        for i in range(3):  # one peer: everything to it, in order
            await sender.send(b"a%d" % i)
        assert await _recv_all(peer_a, 3) == [b"a0", b"a1", b"a2"]

        await sender.connect(b)  # two peers: round robin
        for i in range(4):
            await sender.send(b"r%d" % i)
        got_a, got_b = await _recv_all(peer_a, 2), await _recv_all(peer_b, 2)
        assert sorted(got_a + got_b) == [b"r0", b"r1", b"r2", b"r3"]
        assert {got_a[0][1:], got_a[1][1:]} in ({b"0", b"2"}, {b"1", b"3"})  # alternating

        await sender.disconnect(a)  # one peer again: the one left
        for i in range(3):
            await sender.send(b"b%d" % i)
        assert await _recv_all(peer_b, 3) == [b"b0", b"b1", b"b2"]

        await sender.disconnect(b)  # no peer: a send waits (and times out), nothing queued
        with pytest.raises(TimeoutError):
            await sender.send(b"nowhere")

        await sender.connect(a)  # a new single peer
        await sender.send(b"back")
        assert await _recv_all(peer_a, 1) == [b"back"]
