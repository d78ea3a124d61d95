"""QoS >= 1 against plain libzmq (pyzmq), live: the two refuse each other with the
level-mismatch reason on our side (no silent downgrade), and our connecting socket keeps
reconnecting on its schedule without accumulating state."""

from __future__ import annotations

import os

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


def _fds() -> int:
    return len(os.listdir("/proc/self/fd"))


async def _refusals(events: zmtp.Monitor, count: int, level: int) -> None:
    for _ in range(count):
        event = await events.wait_for(zmtp.HandshakeFailed)
        assert isinstance(event, zmtp.HandshakeFailed)
        assert event.reason == f"QoS mismatch: local={level} peer=0"


WARM_UP = 10
MANY = 100
#: Transient: the refused connection being torn down while we count. A leak of one fd or
#: task per reconnect would show as MANY.
SLACK = 4


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="counts fds in /proc")
@pytest.mark.parametrize("level", [1, 2, 3])
async def test_many_refused_reconnects_leak_no_fds_tasks_or_state(level: int) -> None:
    """Our connecting QoS PUSH against a plain libzmq PULL, refused at every reconnect:
    file descriptors, tasks and QoS state stay flat over many rounds."""
    ctx = zmq.Context()
    pull = ctx.socket(zmq.PULL)
    pull.linger = 0
    try:
        port = pull.bind_to_random_port("tcp://127.0.0.1")
        with anyio.fail_after(60):
            async with zmtp_qos.Socket(zmtp.PUSH, qos=level, reconnect_ivl=0.01, linger=0) as push:
                events = push.monitor()
                await push.connect(f"tcp://127.0.0.1:{port}")
                await _refusals(events, WARM_UP, level)
                fds, tasks = _fds(), len(anyio.get_running_tasks())
                await _refusals(events, MANY, level)
                assert _fds() - fds <= SLACK, (fds, _fds())
                assert len(anyio.get_running_tasks()) - tasks <= SLACK
                runtime = push.runtime
                assert runtime is not None
                assert (runtime.live, runtime.anchors, runtime.in_flight) == ([], {}, 0)
                assert len(push.raw.engine.pipes) == 1  # the one connect() pipe
                assert push.raw.peers == []
    finally:
        pull.close()
        ctx.term()


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="counts fds in /proc")
async def test_a_reconnecting_libzmq_push_refused_many_times_leaks_nothing() -> None:
    """The other way: libzmq's PUSH keeps reconnecting to our QoS PULL, refused each time."""
    ctx = zmq.Context()
    push = ctx.socket(zmq.PUSH)
    push.linger = 0
    push.reconnect_ivl = 10
    try:
        with anyio.fail_after(60):
            async with zmtp_qos.Socket(zmtp.PULL, qos=2) as pull:
                events = pull.monitor()
                push.connect(await pull.bind("tcp://127.0.0.1:*"))
                await _refusals(events, WARM_UP, 2)
                fds, tasks = _fds(), len(anyio.get_running_tasks())
                await _refusals(events, MANY // 3, 2)
                assert _fds() - fds <= SLACK, (fds, _fds())
                assert len(anyio.get_running_tasks()) - tasks <= SLACK
                assert pull.raw.peers == [] and len(pull.raw.engine.pipes) == 0
                assert pull.stats() == zmtp_qos.QoSStats(level=2)
    finally:
        push.close()
        ctx.term()
