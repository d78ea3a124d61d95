"""Connections killed from outside, through the fault-injecting proxy (zmtp.testing.FaultProxy):
the connecting side reconnects through the proxy and later messages flow."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass

import anyio
import pytest

import zmtp
from tests.test_engine_helpers import TIMEOUT, tcp_host_port, wait_event
from zmtp.testing import FaultProxy

pytestmark = pytest.mark.anyio


@dataclass
class Proxied:
    pull: zmtp.Socket
    push: zmtp.Socket
    pull_monitor: zmtp.Monitor
    push_monitor: zmtp.Monitor
    proxy: FaultProxy


@asynccontextmanager
async def push_through_proxy(hwm: int = 1000) -> AsyncIterator[Proxied]:
    """PULL bound on tcp, a proxy in front of it, a PUSH connected to the proxy; ``hwm`` is
    the PUSH's send HWM and the PULL's receive HWM."""
    async with zmtp.Socket(zmtp.PULL, linger=0, recv_hwm=hwm) as pull:
        pull_monitor = pull.monitor()
        host, port = tcp_host_port(await pull.bind("tcp://127.0.0.1:*"))
        async with (
            FaultProxy(host, port) as proxy,
            zmtp.Socket(zmtp.PUSH, linger=0, reconnect_ivl=0.02, send_hwm=hwm) as push,
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


def _index(message: bytes) -> int:
    return int(message.split(b":")[0])


async def _read_queued(sock: zmtp.Socket, into: list[int]) -> None:
    """Receive until ``recv`` has to wait: everything the socket has queued, nothing more."""
    async with anyio.create_task_group() as tg:

        async def read() -> None:
            while True:
                into.append(_index(await sock.recv()))

        tg.start_soon(read)
        await anyio.wait_all_tasks_blocked()  # ``read`` too: its socket has nothing left
        tg.cancel_scope.cancel()


async def test_connection_cut_mid_stream_reconnects_and_later_messages_flow() -> None:
    """Messages in flight at the cut (in the PUSH's queue, in kernel buffers, in the proxy, in
    the PULL's queue) may be lost: there is no QoS at this level. What must hold: no
    duplicates, no reordering, the stream resumes after the reconnect, and everything sent
    after the cut is delivered.

    No step depends on timing. The producer sends ``before_cut`` messages, fewer than the HWM
    (so it never waits for the network, and the PULL's reader never stops reading and so sees
    the cut), then waits at a gate that opens only once both sides have seen the cut: at the
    cut it has sent exactly ``before_cut`` of ``total`` messages and the application has read
    exactly ``read_before_cut``. The proxy holds the reconnection until the PULL has handed out
    everything the old connection delivered: otherwise PULL fair-queues between the old and
    the new connection and may legitimately interleave them."""
    hwm, total, before_cut, read_before_cut = 1000, 5000, 800, 200
    async with push_through_proxy(hwm) as p:
        sent = 0
        at_gate, gate = anyio.Event(), anyio.Event()

        async def produce() -> None:
            nonlocal sent
            for i in range(total):
                if i == before_cut:
                    at_gate.set()
                    await gate.wait()
                await p.push.send(b"%d:" % i + b"." * 1024)
                sent += 1
            await p.push.send(b"end")

        received: list[int] = []
        with anyio.fail_after(TIMEOUT):
            async with anyio.create_task_group() as tg:
                tg.start_soon(produce)
                while len(received) < read_before_cut:
                    received.append(_index(await p.pull.recv()))
                await at_gate.wait()
                # The premise, by construction: the producer is far from done, and messages it
                # sent are on their way (nothing reads them until after the cut).
                assert sent == before_cut < total and before_cut < hwm
                assert len(received) == read_before_cut < before_cut
                p.proxy.hold()  # the reconnection waits until the old connection is read out
                p.proxy.cut()
                await wait_event(p.push_monitor, zmtp.Disconnected)
                await wait_event(p.pull_monitor, zmtp.Disconnected)  # nothing more arrives on it
                await _read_queued(p.pull, received)  # what the old connection delivered
                assert p.proxy.accepted == 1  # nothing through a new connection yet
                assert received[-1] < before_cut
                p.proxy.release()
                gate.set()
                while (message := await p.pull.recv()) != b"end":
                    received.append(_index(message))
        assert received == sorted(set(received))  # no duplicates, no reordering
        after_cut = list(range(before_cut, total))
        assert received[-len(after_cut) :] == after_cut  # all sent after the cut arrived
        assert p.proxy.accepted == 2  # through a new proxied connection
