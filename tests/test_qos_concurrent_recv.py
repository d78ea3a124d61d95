"""Several tasks waiting on one level-3 socket at once (a worker's concurrent receivers, two
dead-letter readers) are all woken (regression: each waiter replaced the shared wake-up
event, so only the last one to start waiting was ever woken and the others were stranded;
a "concurrency 10" receive loop ran one job at a time)."""

from __future__ import annotations

import anyio
import pytest

import zmtp
import zmtp_qos
from zmtp_qos import DeadLetter, Producer
from zmtp_qos.letters import DeadLetterStream
from zmtp_qos.socket import Handle

pytestmark = pytest.mark.anyio


async def test_concurrent_receivers_each_get_a_handle() -> None:
    tasks = 5
    held: list[Handle] = []
    all_held = anyio.Event()
    with anyio.fail_after(20):
        async with (
            zmtp_qos.Socket(zmtp.PULL, qos=3, linger=0) as pull,
            zmtp_qos.Socket(zmtp.PUSH, qos=3, linger=0) as push,
        ):
            await push.connect(await pull.bind("tcp://127.0.0.1:*"))

            async def receiver() -> None:
                handle = await pull.recv()
                held.append(handle)  # no verdict until every task holds one
                if len(held) == tasks:
                    all_held.set()
                await all_held.wait()
                handle.complete()

            async with anyio.create_task_group() as tg:
                for _ in range(tasks):
                    tg.start_soon(receiver)
                await anyio.wait_all_tasks_blocked()
                receipts = [await push.send(b"job-%d" % i) for i in range(tasks)]
            assert sorted(h.parts[0] for h in held) == [b"job-%d" % i for i in range(tasks)]
            for receipt in receipts:
                assert isinstance(await receipt, zmtp_qos.Delivered)  # type: ignore[misc]


@pytest.mark.parametrize("source", ["socket", "producer"])
@pytest.mark.parametrize("shape", ["one-stream", "two-streams"])
async def test_two_dead_letter_readers(source: str, shape: str) -> None:
    """Two tasks reading one stream share its letters (each gets one: the shared wake-up
    event strands neither); two streams each see every letter."""
    got: list[DeadLetter] = []
    with anyio.fail_after(20):
        async with (
            zmtp_qos.Socket(zmtp.PULL, qos=3, linger=0) as pull,
            Producer(linger=0) as producer,
        ):
            await producer.connect(await pull.bind("tcp://127.0.0.1:*"))

            def open_stream() -> DeadLetterStream:
                if source == "producer":
                    return producer.dead_letters()
                return producer.socket.dead_letters()

            shared = open_stream()
            streams = [shared, shared] if shape == "one-stream" else [shared, open_stream()]
            each = 1 if shape == "one-stream" else 2

            async def reader(letters: DeadLetterStream) -> None:
                for _ in range(each):
                    got.append(await letters.__anext__())

            async with anyio.create_task_group() as tg:
                for letters in streams:
                    tg.start_soon(reader, letters)
                await anyio.wait_all_tasks_blocked()
                for i in range(2):
                    await producer.submit(b"bad-%d" % i)
                    (await pull.recv()).reject(0x05, "no")
    expected = [b"bad-0", b"bad-1"] * len(set(map(id, streams)))
    assert sorted(letter.parts[0] for letter in got) == sorted(expected)
