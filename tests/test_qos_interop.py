"""QoS >= 1 against plain libzmq (pyzmq), live: the two refuse each other with the
level-mismatch reason on our side (no silent downgrade), and our connecting socket keeps
reconnecting on its schedule without accumulating state."""

from __future__ import annotations

import anyio
import pytest
import zmq

import zmtp
import zmtp_qos

pytestmark = [pytest.mark.anyio, pytest.mark.interop]


@pytest.mark.parametrize("level", [1, 2, 3])
async def test_qos_push_refuses_libzmq_pull_and_keeps_reconnecting(level: int) -> None:
    ctx = zmq.Context()
    pull = ctx.socket(zmq.PULL)
    pull.linger = 0
    try:
        port = pull.bind_to_random_port("tcp://127.0.0.1")
        with anyio.fail_after(30):
            async with zmtp_qos.Socket(zmtp.PUSH, qos=level, reconnect_ivl=0.02, linger=0) as push:
                events = push.monitor()
                await push.connect(f"tcp://127.0.0.1:{port}")
                for _ in range(3):  # refused at every reconnect
                    event = await events.wait_for(zmtp.HandshakeFailed)
                    assert isinstance(event, zmtp.HandshakeFailed)
                    assert event.kind == "rejected"
                    assert event.reason == f"QoS mismatch: local={level} peer=0"
                assert push.raw.peers == []
                assert push.runtime is not None
                assert push.runtime.live == [] and push.runtime.in_flight == 0
    finally:
        pull.close()
        ctx.term()


async def test_qos_pull_refuses_libzmq_push() -> None:
    ctx = zmq.Context()
    push = ctx.socket(zmq.PUSH)
    push.linger = 0
    try:
        with anyio.fail_after(30):
            async with zmtp_qos.Socket(zmtp.PULL, qos=1) as pull:
                events = pull.monitor()
                endpoint = await pull.bind("tcp://127.0.0.1:*")
                push.connect(endpoint)
                event = await events.wait_for(zmtp.HandshakeFailed)
                assert isinstance(event, zmtp.HandshakeFailed)
                assert event.reason == "QoS mismatch: local=1 peer=0"
                assert pull.raw.peers == []
    finally:
        push.close()
        ctx.term()
