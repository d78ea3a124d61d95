"""``zmtp_qos.Producer`` with real ``zmtp_qos.Worker`` objects (both backends, tcp): the jobs
of a worker that is killed, or stopped, and never comes back are resubmitted to another
worker, and only the ones it had started may run twice."""

from __future__ import annotations

import collections
from collections.abc import Awaitable, Callable

import anyio
import pytest

import zmtp_qos
from zmtp_qos import Delivered, Producer, Worker

pytestmark = pytest.mark.anyio

#: A gone worker's jobs are dead-lettered peer_timeout (then resubmitted) this soon.
CONFIG = zmtp_qos.QoSConfig(dead_letter_timeout=0.5)


async def until(condition: Callable[[], bool], what: str) -> None:
    """Wait for ``condition()``, ``what`` says what for (the caller's fail_after bounds it)."""
    while not condition():
        await anyio.sleep(0.005)


async def test_killed_worker_never_back_its_jobs_run_on_another_worker() -> None:
    """kill() with jobs in flight (running and prefetched): no verdict; the victim never
    returns, so after dead_letter_timeout they are dead-lettered peer_timeout and the
    producer resubmits them to the other Worker, which completes each once."""
    ran: dict[str, collections.Counter[bytes]] = {
        "victim": collections.Counter(),
        "survivor": collections.Counter(),
    }

    async def hang(parts: list[bytes]) -> None:
        ran["victim"][parts[0]] += 1
        await anyio.sleep_forever()

    async def finish(parts: list[bytes]) -> None:
        ran["survivor"][parts[0]] += 1

    jobs = [b"job-%d" % i for i in range(6)]
    with anyio.fail_after(30):
        async with Producer(config=CONFIG, linger=0) as producer:
            ep = await producer.bind("tcp://127.0.0.1:*")
            victim = Worker(hang, connect=[ep], identity="victim", concurrency=2, prefetch=4)
            async with anyio.create_task_group() as tg:
                await tg.start(victim.run)
                receipts = await producer.submit_many(jobs)
                await until(lambda: victim.stats.in_flight == 2, "two handlers running")
                await until(lambda: victim.stats.prefetched == 4, "four jobs taken")
                victim.kill()
            assert not any(r.done for r in receipts)
            assert sum(ran["victim"].values()) == 2
            survivor = Worker(finish, connect=[ep], identity="survivor", concurrency=3)
            async with anyio.create_task_group() as tg:
                await tg.start(survivor.run)
                await producer.drain()
                survivor.stop()
    for receipt in receipts:
        assert await receipt == Delivered("survivor")
        assert receipt.attempts == 2
        assert [(r.reason, r.peer) for r in receipt.resubmissions] == [("peer_timeout", "victim")]
    assert ran["survivor"] == collections.Counter(jobs)  # each once on the survivor
    stats = producer.stats
    assert (stats.delivered, stats.resubmitted, stats.dead_lettered) == (6, 6, 0)
    assert survivor.stats.completed == 6 and victim.stats.completed == 0


async def test_stopped_worker_never_back_its_untaken_jobs_run_once_elsewhere() -> None:
    """stop() with more jobs queued than it had taken: the taken ones complete there (COMP
    at the producer when run() returns); the rest get no verdict, are resubmitted once the
    stopped worker is gone for dead_letter_timeout, and run once on the other worker: none
    is lost, none runs twice."""
    ran: collections.Counter[bytes] = collections.Counter()
    where: dict[bytes, str] = {}
    release = anyio.Event()

    def handler(name: str) -> Callable[[list[bytes]], Awaitable[None]]:
        async def run(parts: list[bytes]) -> None:
            ran[parts[0]] += 1
            where[parts[0]] = name
            if name == "first":
                await release.wait()

        return run

    jobs = [b"job-%d" % i for i in range(8)]
    with anyio.fail_after(30):
        async with Producer(config=CONFIG, linger=0) as producer:
            ep = await producer.bind("tcp://127.0.0.1:*")
            first = Worker(
                handler("first"), connect=[ep], identity="first", concurrency=2, prefetch=2
            )
            async with anyio.create_task_group() as tg:
                await tg.start(first.run)
                receipts = await producer.submit_many(jobs)
                await until(lambda: first.stats.in_flight == 2, "two handlers running")
                first.stop()
                await until(lambda: first.stopping, "stopping")
                release.set()
            taken = [job for job in jobs if ran[job]]
            assert len(taken) == 2
            for job, receipt in zip(jobs, receipts, strict=True):
                assert receipt.done == (job in taken), job  # COMP arrived before run() ended
            second = Worker(handler("second"), connect=[ep], identity="second", concurrency=4)
            async with anyio.create_task_group() as tg:
                await tg.start(second.run)
                await producer.drain()
                second.stop()
    assert ran == collections.Counter(jobs)  # every job once
    for job, receipt in zip(jobs, receipts, strict=True):
        outcome = await receipt
        assert isinstance(outcome, Delivered)
        assert outcome.peer == where[job] == ("first" if job in taken else "second")
        assert receipt.attempts == (1 if job in taken else 2)
