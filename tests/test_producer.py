"""``zmtp_qos.Producer`` in one process (asyncio and trio): receipts, final dead letters,
resubmission after ``peer_timeout`` and its bound, drain, counters.

The workers here are plain level-3 PULL receive loops (``recv()`` -> verdict); a worker that
"dies" is a PULL closed with ``linger=0`` while it holds a job without a verdict: for the
producer that is a peer that went away and did not come back. The same with real processes
and SIGKILL is in tests/test_producer_faults.py.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable

import anyio
import pytest

import zmtp
import zmtp_qos
from zmtp_qos import DeadLetter, Delivered, Producer
from zmtp_qos.socket import Handle

pytestmark = pytest.mark.anyio

FAST = zmtp_qos.QoSConfig(dead_letter_timeout=0.4, max_retries=1, backoff_base=0.01)


def worker(identity: bytes) -> zmtp_qos.Socket:
    return zmtp_qos.Socket(zmtp.PULL, qos=3, identity=identity, linger=0)


async def serve(pull: zmtp_qos.Socket, verdict: Callable[[Handle], Awaitable[None]]) -> None:
    while True:
        await verdict(await pull.recv())


async def complete(handle: Handle) -> None:
    handle.complete()


async def connected(producer: Producer, pull: zmtp_qos.Socket, endpoint: str) -> None:
    events = producer.monitor()
    await pull.connect(endpoint)
    await events.wait_for(zmtp.HandshakeSucceeded)
    events.close()


async def test_submit_resolves_delivered_and_drain_waits_for_all() -> None:
    with anyio.fail_after(20):
        async with Producer(linger=0) as producer, worker(b"w1") as pull:
            ep = await producer.bind("tcp://127.0.0.1:*")
            await connected(producer, pull, ep)
            async with anyio.create_task_group() as tg:
                tg.start_soon(serve, pull, complete)
                single = await producer.submit(b"job-0")
                receipts = await producer.submit_many([b"job-%d" % i, b"arg"] for i in range(1, 50))
                await producer.drain()
                assert producer.outstanding == 0
                tg.cancel_scope.cancel()
            assert single.parts == [b"job-0"]
            assert receipts[0].parts == [b"job-1", b"arg"]
            for receipt in [single, *receipts]:
                assert receipt.done and receipt.attempts == 1 and not receipt.resubmissions
                assert await receipt == Delivered("w1")
                assert await receipt.result() == Delivered("w1")
            stats = producer.stats
            assert (stats.submitted, stats.delivered, stats.dead_lettered) == (50, 50, 0)
            assert (stats.resubmitted, stats.outstanding) == (0, 0)


async def test_terminal_nack_is_a_final_dead_letter_not_resubmitted() -> None:
    runs: list[list[bytes]] = []

    async def refuse(handle: Handle) -> None:
        runs.append(handle.parts)
        handle.reject(0x02, "bad job")

    with anyio.fail_after(20):
        async with Producer(config=FAST, linger=0) as producer, worker(b"w1") as pull:
            ep = await producer.bind("tcp://127.0.0.1:*")
            await connected(producer, pull, ep)
            async with anyio.create_task_group() as tg:
                tg.start_soon(serve, pull, refuse)
                letters = producer.dead_letters()
                receipt = await producer.submit(b"job")
                letter = await letters.__anext__()
                await producer.drain()
                tg.cancel_scope.cancel()
            assert letter == DeadLetter(
                [b"job"], "terminal_nack", "w1", zmtp_qos.NackError(2, "bad job")
            )
            assert await receipt == letter
            with pytest.raises(zmtp_qos.JobFailed) as failed:
                await receipt.result()
            assert failed.value.letter == letter and failed.value.attempts == 1
            assert str(failed.value) == (
                "job [b'job'] failed (terminal_nack, peer w1, submitted 1 time(s)): "
                "NackError(code=2, text='bad job')"
            )
            assert receipt.attempts == 1 and runs == [[b"job"]]
            stats = producer.stats
            assert stats.resubmitted == 0 and stats.dead_letters_by_reason == {"terminal_nack": 1}


async def test_exhausted_retries_are_final_not_resubmitted() -> None:
    runs: list[list[bytes]] = []

    async def fail(handle: Handle) -> None:
        runs.append(handle.parts)
        handle.reject(0x83, "boom")  # INTERNAL: retryable

    with anyio.fail_after(20):
        async with Producer(config=FAST, linger=0) as producer, worker(b"w1") as pull:
            ep = await producer.bind("tcp://127.0.0.1:*")
            await connected(producer, pull, ep)
            async with anyio.create_task_group() as tg:
                tg.start_soon(serve, pull, fail)
                receipt = await producer.submit(b"job")
                letter = await receipt
                tg.cancel_scope.cancel()
            assert isinstance(letter, DeadLetter) and letter.reason == "retry_exhausted"
            assert letter.error == zmtp_qos.NackError(0x83, "boom")
            assert runs == [[b"job"], [b"job"]]  # the first attempt and max_retries=1 retry
            assert receipt.attempts == 1 and producer.stats.resubmitted == 0


async def take_and_die(producer: Producer, identity: bytes, endpoint: str) -> list[bytes]:
    """A worker that takes one job and goes away without a verdict (never coming back)."""
    async with worker(identity) as pull:
        await connected(producer, pull, endpoint)
        handle = await pull.recv()
        return list(handle.parts)


async def test_peer_timeout_is_resubmitted_to_another_worker() -> None:
    with anyio.fail_after(30):
        async with Producer(config=FAST, linger=0) as producer:
            ep = await producer.bind("tcp://127.0.0.1:*")
            async with worker(b"dies") as dying:
                await connected(producer, dying, ep)
                receipt = await producer.submit([b"job", b"1"])
                assert (await dying.recv()).parts == [b"job", b"1"]
            async with worker(b"lives") as pull:
                await connected(producer, pull, ep)
                handle = await pull.recv()
                assert handle.parts == [b"job", b"1"]
                handle.complete()
                assert await receipt == Delivered("lives")
            assert receipt.attempts == 2
            [first] = receipt.resubmissions
            assert (first.reason, first.peer) == ("peer_timeout", "dies")
            assert first.parts == [b"job", b"1"]
            stats = producer.stats
            assert (stats.delivered, stats.resubmitted, stats.dead_lettered) == (1, 1, 0)


async def test_resubmissions_are_bounded() -> None:
    with anyio.fail_after(30):
        async with Producer(config=FAST, max_resubmits=1, linger=0) as producer:
            ep = await producer.bind("tcp://127.0.0.1:*")
            letters = producer.dead_letters()
            async with worker(b"first") as first:
                await connected(producer, first, ep)
                receipt = await producer.submit(b"job")
                await first.recv()
            assert await take_and_die(producer, b"second", ep) == [b"job"]
            letter = await letters.__anext__()
            assert await receipt == letter
            assert (letter.reason, letter.peer) == ("peer_timeout", "second")
            assert receipt.attempts == 2 and [r.peer for r in receipt.resubmissions] == ["first"]
            assert producer.stats.dead_letters_by_reason == {"peer_timeout": 1}


@pytest.mark.parametrize("option", ["off", "policy"])
async def test_resubmission_can_be_turned_off_or_decided_by_a_policy(option: str) -> None:
    asked: list[tuple[str, int]] = []

    def policy(letter: DeadLetter, made: int) -> bool:
        asked.append((letter.reason, made))
        return False

    choice = False if option == "off" else policy
    with anyio.fail_after(30):
        async with Producer(config=FAST, resubmit_on_peer_timeout=choice, linger=0) as producer:
            ep = await producer.bind("tcp://127.0.0.1:*")
            async with worker(b"gone") as gone:
                await connected(producer, gone, ep)
                receipt = await producer.submit(b"job")
                await gone.recv()
            letter = await receipt
            assert isinstance(letter, DeadLetter) and letter.reason == "peer_timeout"
            assert receipt.attempts == 1 and producer.stats.resubmitted == 0
    assert asked == ([] if option == "off" else [("peer_timeout", 0)])


async def test_jobs_pending_at_close_end_socket_closed_not_resubmitted() -> None:
    with anyio.fail_after(20):
        async with worker(b"slow") as pull:
            async with Producer(config=FAST, linger=0) as producer:
                await connected(producer, pull, await producer.bind("tcp://127.0.0.1:*"))
                receipt = await producer.submit(b"held without a verdict")
                await pull.recv()
            assert receipt.done
            letter = await receipt
            assert isinstance(letter, DeadLetter) and letter.reason == "socket_closed"
            assert producer.stats.resubmitted == 0 and producer.outstanding == 0


async def test_a_resubmission_still_waiting_at_close_ends_socket_closed() -> None:
    """The worker died and no other is connected: the resubmission waits for a worker until
    the producer closes, and then the job is a dead letter ``socket_closed``."""
    with anyio.fail_after(30):
        async with Producer(config=FAST, linger=0) as producer:
            ep = await producer.bind("tcp://127.0.0.1:*")
            async with worker(b"gone") as gone:
                await connected(producer, gone, ep)
                receipt = await producer.submit(b"job")
                await gone.recv()
            while not receipt.resubmissions:  # the sweep (every 0.1 s) resubmits it
                await anyio.sleep(0.05)
            assert not receipt.done and producer.outstanding == 1
        letter = await receipt
        assert isinstance(letter, DeadLetter) and letter.reason == "socket_closed"
        assert receipt.attempts == 1 and producer.outstanding == 0


async def test_a_resubmission_not_started_at_close_ends_socket_closed() -> None:
    """The peer_timeout and the close in one step: the close starts before the resubmission
    task has run; the job still gets its outcome."""
    with anyio.fail_after(30):
        slow = zmtp_qos.QoSConfig(dead_letter_timeout=60.0)
        async with Producer(config=slow, linger=0) as producer:
            ep = await producer.bind("tcp://127.0.0.1:*")
            async with worker(b"gone") as gone:
                await connected(producer, gone, ep)
                receipt = await producer.submit(b"job")
                await gone.recv()
            runtime = producer.socket.runtime
            assert runtime is not None
            while runtime.anchors[b"id:gone"].pipe is not None:  # the disconnect is seen
                await anyio.sleep(0.01)
            runtime.clock = lambda: time.monotonic() + 3600.0  # an hour later
            assert runtime.sweep() == 1 and len(receipt.resubmissions) == 1
        letter = await receipt
        assert isinstance(letter, DeadLetter) and letter.reason == "socket_closed"
        assert producer.outstanding == 0


async def test_scatter_producer_and_gather_worker() -> None:
    with anyio.fail_after(20):
        async with (
            Producer(zmtp.SCATTER, linger=0) as producer,
            zmtp_qos.Socket(zmtp.GATHER, qos=3, identity=b"g", linger=0) as gather,
        ):
            await connected(producer, gather, await producer.bind("tcp://127.0.0.1:*"))
            receipt = await producer.submit(b"job")
            (await gather.recv()).complete()
            assert await receipt == Delivered("g")


def test_producer_checks_its_arguments() -> None:
    with pytest.raises(ValueError, match="PUSH or a SCATTER"):
        Producer(zmtp.PULL)
    with pytest.raises(ValueError, match="max_resubmits"):
        Producer(max_resubmits=-1)


async def test_submit_outside_the_context_is_an_error() -> None:
    with pytest.raises(RuntimeError, match="async with"):
        await Producer().submit(b"job")
