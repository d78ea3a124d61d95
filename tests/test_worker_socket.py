"""What the worker needed from the socket layers (both backends): the read gate
(``SocketExtension.can_receive`` / ``Socket.wake_readers``, and the QoS socket's
``set_receive_limit``), ``SocketCore.wait_written`` and the QoS receiver's
``unconfirmed`` / ``wait_confirmed``."""

from __future__ import annotations

import os
import tempfile

import anyio
import pytest

import zmtp
import zmtp_qos
from zmtp.engine.pipe import Pipe
from zmtp.engine.queue import Message
from zmtp_qos import Delivered

pytestmark = pytest.mark.anyio

#: A negative check (something must NOT happen) waits this long.
QUIET = 0.3


def _endpoint(transport: str) -> str:
    if transport == "tcp":
        return "tcp://127.0.0.1:*"
    return f"ipc://{tempfile.gettempdir()}/zmtp-worker-{os.getpid()}-{id(object())}.sock"


async def until(condition: object) -> None:
    assert callable(condition)
    while not condition():
        await anyio.sleep(0.005)


class Gate(zmtp.SocketExtension):
    """Consumes every message (as QoS 3 does) and lets the connection read while fewer than
    ``limit`` have arrived (the gate is asked before each read: one already waiting for
    bytes still delivers them, so the gate closes on what was read, as a queue limit does)."""

    def __init__(self) -> None:
        self.limit = 1
        self.received: list[Message] = []

    def can_receive(self, pipe: Pipe) -> bool:
        return len(self.received) < self.limit

    def on_receive(self, pipe: Pipe, message: Message) -> bool:
        self.received.append(message)
        return False


@pytest.mark.parametrize("transport", ["tcp", "ipc"])
async def test_extension_read_gate_stops_and_resumes_reading(transport: str) -> None:
    gate = Gate()
    with anyio.fail_after(20):
        async with zmtp.Socket(zmtp.PULL) as pull, zmtp.Socket(zmtp.PUSH) as push:
            pull.install_extension(gate)
            ep = await pull.bind(_endpoint(transport))
            await push.connect(ep)
            await push.send(b"first")
            await until(lambda: len(gate.received) == 1)
            await push.send(b"second")
            await push.engine.wait_written()  # it has left the sender
            await anyio.sleep(QUIET)  # negative check: nothing is read while closed
            assert len(gate.received) == 1 and pull.peers  # the connection stays up
            gate.limit = 2
            pull.wake_readers()
            await until(lambda: len(gate.received) == 2)
    assert gate.received == [[b"first"], [b"second"]]


async def test_receive_limit_pauses_a_level3_receiver() -> None:
    with anyio.fail_after(20):
        async with (
            zmtp_qos.Socket(zmtp.PULL, qos=3) as pull,
            zmtp_qos.Socket(zmtp.PUSH, qos=3) as push,
        ):
            pull.set_receive_limit(1)
            await push.connect(await pull.bind("tcp://127.0.0.1:*"))
            first = await push.send(b"one")
            await until(lambda: pull.pending_handles == 1)
            second = await push.send(b"two")
            await push.wait_written()
            await anyio.sleep(QUIET)  # negative check: the limit keeps "two" unread
            assert pull.pending_handles == 1
            handle = await pull.recv_handle()  # below the limit: reading resumes
            handle.complete()
            await until(lambda: pull.pending_handles == 1)
            (await pull.recv_handle()).complete()
            assert isinstance(await first, Delivered)  # type: ignore[misc]
            assert isinstance(await second, Delivered)  # type: ignore[misc]
            pull.set_receive_limit(None)


async def test_receive_limit_is_for_level3_receivers() -> None:
    async with zmtp_qos.Socket(zmtp.PUSH, qos=3) as push, zmtp_qos.Socket(zmtp.PULL) as pull:
        with pytest.raises(zmtp.UnsupportedOperation):
            push.set_receive_limit(1)
        with pytest.raises(zmtp.UnsupportedOperation):
            pull.set_receive_limit(1)
    async with zmtp_qos.Socket(zmtp.PULL, qos=3) as pull3:
        with pytest.raises(ValueError):
            pull3.set_receive_limit(0)


async def test_wait_written_waits_for_the_writes() -> None:
    """A PULL that reads little (recv_hwm 1, the application not receiving) keeps 40 MiB
    queued at the sender: wait_written returns only once they have all been written."""
    big = b"x" * (1 << 20)
    with anyio.fail_after(30):
        async with (
            zmtp.Socket(zmtp.PULL, recv_hwm=1) as pull,
            zmtp.Socket(zmtp.PUSH) as push,
        ):
            await push.connect(await pull.bind("tcp://127.0.0.1:*"))
            await until(lambda: push.peers)  # wait_written is about live connections
            for _ in range(40):
                await push.send(big)
            assert push.engine.unwritten()
            done = anyio.Event()

            async def waiter() -> None:
                await push.engine.wait_written()
                done.set()

            async with anyio.create_task_group() as tg:
                tg.start_soon(waiter)
                for _ in range(20):
                    await anyio.sleep(0)
                assert not done.is_set()  # more than the kernel buffers hold is queued
                for _ in range(40):
                    assert await pull.recv() == big
                await done.wait()
            assert not push.engine.unwritten()


async def test_wait_confirmed_means_the_producer_settled() -> None:
    with anyio.fail_after(20):
        async with (
            zmtp_qos.Socket(zmtp.PULL, qos=3) as pull,
            zmtp_qos.Socket(zmtp.PUSH, qos=3) as push,
        ):
            await push.connect(await pull.bind("tcp://127.0.0.1:*"))
            receipts = [await push.send(b"%d" % i) for i in range(5)]
            for _ in range(5):
                (await pull.recv_handle()).complete()
            await pull.wait_written()
            await pull.wait_confirmed()
            assert pull.unconfirmed() == 0
            # The producer resolves a receipt before it sends the CLR: all are settled.
            assert all(r is not None and isinstance(r.outcome, Delivered) for r in receipts)
