"""The engine core's public means for the layers built on a socket (QoS, the blocking API):
``Socket.engine`` emits monitor events and wakes blocked senders and receivers, and
``MessageQueue.put_front`` puts messages on a pipe ahead of newer ones (a replay after a
fail-over), over tcp, ipc (path and abstract) and inproc. docs/architecture.md, "Contracts"."""

from __future__ import annotations

from dataclasses import dataclass

import anyio
import pytest

import zmtp
from tests import test_engine_helpers as helpers
from tests.test_engine_helpers import TIMEOUT, linked
from zmtp.engine.queue import MessageQueue

pytestmark = pytest.mark.anyio

endpoint = helpers.endpoint  # fixture
transport = helpers.transport  # fixture


@dataclass(frozen=True)
class Replayed(zmtp.MonitorEvent):
    """An event of an extension's own."""

    count: int = 0


async def test_an_extension_emits_its_own_monitor_events() -> None:
    async with zmtp.Socket(zmtp.PUSH, linger=0) as push:
        monitor = push.monitor()
        push.engine.emit(Replayed("tcp://x:1", 3))
        with anyio.fail_after(TIMEOUT):
            event = await monitor.wait_for(Replayed)
        assert event == Replayed("tcp://x:1", 3)


async def test_put_front_goes_out_ahead_of_what_was_queued(endpoint: str) -> None:
    async with (
        zmtp.Socket(zmtp.PULL, linger=0) as pull,
        zmtp.Socket(zmtp.PUSH, linger=0, reconnect_ivl=0.02) as push,
    ):
        resolved = await pull.bind(endpoint)
        await pull.unbind(resolved)  # the PUSH queues until the PULL is back
        await push.connect(resolved)
        await push.send(b"new")
        (pipe,) = push.engine.pipes
        pipe.outbox.put_front([[b"old-1"], [b"old-2"]])
        await pull.bind(resolved)
        with anyio.fail_after(TIMEOUT):
            got = [await pull.recv() for _ in range(3)]
        assert got == [b"old-1", b"old-2", b"new"]


def test_put_front_keeps_the_wakeup_edge_and_passes_the_hwm() -> None:
    queue = MessageQueue(2)
    woken: list[int] = []
    queue.on_data = lambda: woken.append(len(queue))
    queue.put_front([])
    assert woken == []
    queue.put_front([[b"a"], [b"b"]])
    assert woken == [2]  # empty -> non-empty, once
    queue.put_front([[b"z"]])  # past the HWM of 2: a replay is never refused
    assert woken == [2]
    assert [queue.get() for _ in range(3)] == [[b"z"], [b"a"], [b"b"]]


async def test_wake_senders_and_receivers_retry_blocked_calls(endpoint: str) -> None:
    """A woken send or recv that still finds nothing keeps waiting (no spurious return)."""
    async with linked(zmtp.PAIR, zmtp.PAIR, endpoint) as link:
        results: list[bytes] = []

        async def receive() -> None:
            results.append(await link.binder.recv())

        async with anyio.create_task_group() as tg:
            tg.start_soon(receive)
            await anyio.wait_all_tasks_blocked()
            link.binder.engine.wake_receivers()
            link.binder.wake_senders()
            await anyio.wait_all_tasks_blocked()
            assert results == []
            await link.connector.send(b"x")
        assert results == [b"x"]
