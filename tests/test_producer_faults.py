"""``zmtp_qos.Producer`` against worker *processes* that are SIGKILLed (asyncio and trio).

The workers are plain level-3 PULL receive loops (tests/qos_worker_proc.py) that write
``start JOB`` before and ``done JOB`` after each job, flushed line by line, so the files
survive a SIGKILL and count how many times every job ran, and where.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections import Counter
from pathlib import Path

import anyio
import pytest
from anyio.abc import Process
from anyio.streams.buffered import BufferedByteReceiveStream

import zmtp
import zmtp_qos
from zmtp_qos import Delivered, Producer
from zmtp_qos.results import Outcome

pytestmark = pytest.mark.anyio

ROOT = Path(__file__).resolve().parent.parent
#: A dead worker's jobs are resubmitted this long after it went away (plus up to a quarter).
CONFIG = zmtp_qos.QoSConfig(dead_letter_timeout=1.0)


async def spawn(endpoint: str, identity: str, out: Path, backend: str, *extra: str) -> Process:
    return await anyio.open_process(
        [
            *(sys.executable, "-m", "tests.qos_worker_proc", endpoint),
            *("--identity", identity, "--out", str(out), "--backend", backend, *extra),
        ],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        stdout=subprocess.PIPE,
    )


async def spawn_cli(endpoint: str, identity: str, out: Path, backend: str) -> Process:
    """``python -m zmtp_qos worker`` (a real ``zmtp_qos.Worker``) whose handler records each
    job's start and end in ``out`` (tests/_worker_jobs.py ``record``)."""
    return await anyio.open_process(
        [
            *(sys.executable, "-m", "zmtp_qos", "worker", "tests._worker_jobs:record"),
            *("--connect", endpoint, "--identity", identity, "--concurrency", "2"),
            *("--backend", backend),
        ],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT), "WORKER_JOBS_OUT": str(out)},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


async def stop(proc: Process) -> None:
    if proc.returncode is None:
        proc.kill()
    await proc.wait()


def runs(path: Path, what: str = "start") -> Counter[str]:
    """How many times each job has a ``what`` line in a worker's file."""
    lines = path.read_text(encoding="utf-8").splitlines() if path.exists() else []
    return Counter(line.split(" ", 1)[1] for line in lines if line.startswith(what + " "))


async def test_sigkilled_worker_jobs_are_resubmitted_to_another_worker(
    anyio_backend: str, tmp_path: Path
) -> None:
    """A worker holding jobs without a verdict is SIGKILLed and never comes back: its jobs
    are dead-lettered peer_timeout, resubmitted, and completed by the worker that is left."""
    count = 20
    jobs = [b"job-%d" % i for i in range(count)]
    victim_file = tmp_path / "victim.txt"
    done: list[bytes] = []
    with anyio.fail_after(60):
        async with Producer(config=CONFIG, linger=0) as producer:
            events = producer.monitor()
            ep = await producer.bind("tcp://127.0.0.1:*")
            victim = await spawn(ep, "victim", victim_file, anyio_backend, "--hang")
            try:
                await events.wait_for(zmtp.HandshakeSucceeded)
                receipts = await producer.submit_many(jobs)
                assert victim.stdout is not None
                lines = BufferedByteReceiveStream(victim.stdout)
                for _ in range(count):  # every job is in flight on the victim
                    assert (await lines.receive_until(b"\n", 1000)).startswith(b"got ")
                victim.send_signal(signal.SIGKILL)
                await victim.wait()
                async with zmtp_qos.Socket(zmtp.PULL, qos=3, identity=b"survivor") as pull:
                    await pull.connect(ep)
                    async with anyio.create_task_group() as tg:

                        async def serve() -> None:
                            while True:
                                handle = await pull.recv()
                                done.append(handle.parts[0])
                                handle.complete()

                        tg.start_soon(serve)
                        await producer.drain()
                        tg.cancel_scope.cancel()
            finally:
                await stop(victim)
    for receipt in receipts:
        assert await receipt == Delivered("survivor")
        assert receipt.attempts == 2
        assert [(r.reason, r.peer) for r in receipt.resubmissions] == [("peer_timeout", "victim")]
    assert sorted(done) == sorted(jobs)  # each once
    assert runs(victim_file) == Counter(j.decode() for j in jobs) and not runs(victim_file, "done")
    stats = producer.stats
    assert (stats.delivered, stats.resubmitted, stats.dead_lettered) == (count, count, 0)


@pytest.mark.parametrize("worker", ["receive-loop", "cli-worker"])
async def test_three_workers_one_sigkilled_mid_run(
    anyio_backend: str, tmp_path: Path, worker: str
) -> None:
    """Producer -> 3 worker processes; one is SIGKILLed after it completed a few jobs. Every
    job completes at least once, and no job whose COMP reached the producer runs again. The
    workers are plain receive loops (tests/qos_worker_proc.py), or ``python -m zmtp_qos
    worker`` (a ``zmtp_qos.Worker`` with its concurrency and prefetch)."""
    count = 300
    names = ["w0", "w1", "w2"]
    victim_name = names[0]
    files = {name: tmp_path / f"{name}.txt" for name in names}
    delivered_by: Counter[str] = Counter()
    victim_busy = anyio.Event()

    def note(outcome: Outcome) -> None:
        if isinstance(outcome, Delivered):
            delivered_by[outcome.peer] += 1
            if delivered_by[victim_name] >= 10:
                victim_busy.set()

    with anyio.fail_after(120):
        async with Producer(config=CONFIG, linger=0) as producer:
            events = producer.monitor()
            ep = await producer.bind("tcp://127.0.0.1:*")
            procs = {}
            try:
                for name in names:
                    if worker == "cli-worker":
                        procs[name] = await spawn_cli(ep, name, files[name], anyio_backend)
                        continue
                    procs[name] = await spawn(
                        ep,
                        name,
                        files[name],
                        anyio_backend,
                        "--concurrency",
                        "2",
                        "--sleep",
                        "0.01",
                    )
                for _ in names:
                    await events.wait_for(zmtp.HandshakeSucceeded)
                receipts = []
                for i in range(count):
                    receipt = await producer.submit(b"job-%d" % i)
                    receipt.add_done_callback(note)
                    receipts.append(receipt)
                await victim_busy.wait()
                procs[victim_name].send_signal(signal.SIGKILL)
                await producer.drain()
            finally:
                for proc in procs.values():
                    await stop(proc)
    started = {name: runs(path) for name, path in files.items()}
    completed = {name: runs(path, "done") for name, path in files.items()}
    survivors = [n for n in names if n != victim_name]
    resubmitted = 0
    for i, receipt in enumerate(receipts):
        job = f"job-{i}"
        outcome = await receipt
        assert isinstance(outcome, Delivered), (job, outcome)  # completed at least once
        assert completed[outcome.peer][job] >= 1, job
        on_survivors = sum(started[n][job] for n in survivors)
        if outcome.peer == victim_name:
            # Its COMP reached the producer: it never ran anywhere else, nor again.
            assert receipt.attempts == 1 and started[victim_name][job] == 1, job
            assert on_survivors == 0, job
        elif receipt.attempts == 1:
            assert on_survivors == 1 and started[victim_name][job] == 0, job
        else:  # lost with the victim (run there or not), resubmitted, completed by a survivor
            resubmitted += 1
            assert [r.peer for r in receipt.resubmissions] == [victim_name], job
            assert on_survivors == 1 and started[victim_name][job] <= 1, job
    assert resubmitted > 0  # the kill really was mid-run
    assert delivered_by[victim_name] >= 10 and all(delivered_by[n] for n in survivors)
    stats = producer.stats
    assert (stats.delivered, stats.dead_lettered, stats.resubmitted) == (count, 0, resubmitted)
    ran_twice = sum(1 for i in range(count) if sum(s[f"job-{i}"] for s in started.values()) > 1)
    print(f"COMP per worker {dict(delivered_by)}; {resubmitted} resubmitted, {ran_twice} ran twice")
