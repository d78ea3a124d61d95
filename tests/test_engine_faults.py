"""Connections killed from outside, through the fault-injecting proxy (tests/faultproxy.py):
the connecting side reconnects through the proxy and later messages flow."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass

import anyio
import pytest

import zmtp
from tests.faultproxy import FaultProxy
from tests.test_engine_helpers import TIMEOUT, tcp_host_port, wait_event

pytestmark = pytest.mark.anyio


@dataclass
class Proxied:
    pull: zmtp.Socket
    push: zmtp.Socket
    pull_monitor: zmtp.Monitor
    push_monitor: zmtp.Monitor
    proxy: FaultProxy


@asynccontextmanager
async def push_through_proxy() -> AsyncIterator[Proxied]:
    """PULL bound on tcp, a proxy in front of it, a PUSH connected to the proxy."""
    async with zmtp.Socket(zmtp.PULL, linger=0) as pull:
        pull_monitor = pull.monitor()
        host, port = tcp_host_port(await pull.bind("tcp://127.0.0.1:*"))
        async with (
            FaultProxy(host, port) as proxy,
            zmtp.Socket(zmtp.PUSH, linger=0, reconnect_ivl=0.02) as push,
        ):
            push_monitor = push.monitor()
            await push.connect(proxy.endpoint)
            await wait_event(push_monitor, zmtp.HandshakeSucceeded)
            await wait_event(pull_monitor, zmtp.HandshakeSucceeded)
            yield Proxied(pull, push, pull_monitor, push_monitor, proxy)


async def test_cut_idle_connection_is_noticed_on_both_sides_and_reconnected() -> None:
    async with push_through_proxy() as p:
        p.proxy.cut()
        await wait_event(p.push_monitor, zmtp.Disconnected)
        await wait_event(p.pull_monitor, zmtp.Disconnected)
        await wait_event(p.push_monitor, zmtp.HandshakeSucceeded)
        assert p.proxy.accepted == 2
        await p.push.send(b"after the cut")
        with anyio.fail_after(TIMEOUT):
            assert await p.pull.recv() == b"after the cut"


async def test_connection_cut_mid_stream_reconnects_and_later_messages_flow() -> None:
    """Messages in flight at the cut (in kernel buffers, in the proxy) may be lost: there is no
    QoS at this level. What must hold: no duplicates, no reordering, the stream resumes after
    the reconnect, and everything queued after the cut is delivered."""
    n = 5000
    async with push_through_proxy() as p:

        async def produce() -> None:
            for i in range(n):
                await p.push.send(b"%d:" % i + b"." * 1024)
            await p.push.send(b"end")

        received: list[int] = []
        with anyio.fail_after(TIMEOUT):
            async with anyio.create_task_group() as tg:
                tg.start_soon(produce)
                while len(received) < 200:
                    received.append(int((await p.pull.recv()).split(b":")[0]))
                p.proxy.cut()  # mid-stream: the producer is far from done
                cut_at = len(received)
                await wait_event(p.push_monitor, zmtp.Disconnected)
                while (message := await p.pull.recv()) != b"end":
                    received.append(int(message.split(b":")[0]))
        assert received == sorted(set(received))  # no duplicates, no reordering
        assert received[-1] == n - 1  # the tail, queued after the cut, all arrived
        assert len(received) > cut_at  # and the stream resumed after the cut
        assert p.proxy.accepted == 2  # through a new proxied connection
