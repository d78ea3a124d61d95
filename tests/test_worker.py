"""zmtp_qos.Worker against a plain level-3 PUSH producer (both backends, tcp): concurrency,
threads, prefetch, verdicts and NACK codes, processing timeout, middleware, stop and kill."""

from __future__ import annotations

import collections
import itertools
import logging
import os
import signal
import tempfile
import threading
from collections.abc import Awaitable, Callable
from typing import Any

import anyio
import pytest

import zmtp
import zmtp_qos
from zmtp_qos import DeadLetter, Delivered, QoSConfig, Receipt, Worker
from zmtp_qos.events import QoSRetried

pytestmark = pytest.mark.anyio

#: Fast retries for the producer (the defaults back off from 0.1 s).
RETRY_FAST = QoSConfig(max_retries=2, backoff_base=0.01, backoff_max=0.05)


async def until(condition: Callable[[], bool], what: str = "condition") -> None:
    """Wait for ``condition`` (the caller's fail_after bounds it)."""
    while not condition():
        await anyio.sleep(0.005)


async def send_all(push: zmtp_qos.Socket, payloads: list[bytes]) -> list[Receipt]:
    receipts = []
    for payload in payloads:
        receipt = await push.send(payload)
        assert receipt is not None
        receipts.append(receipt)
    return receipts


async def test_concurrency_peak_is_exactly_n() -> None:
    n = 4
    running = 0
    peak = 0
    full = anyio.Event()

    async def handler(parts: list[bytes]) -> None:
        nonlocal running, peak
        running += 1
        peak = max(peak, running)
        if running == n:
            full.set()
        await full.wait()  # the first n wait for each other: the peak is reached
        await anyio.sleep(0)
        running -= 1

    with anyio.fail_after(30):
        async with zmtp_qos.Socket(zmtp.PUSH, qos=3) as push:
            ep = await push.bind("tcp://127.0.0.1:*")
            worker = Worker(handler, connect=[ep], concurrency=n)
            async with anyio.create_task_group() as tg:
                await tg.start(worker.run)
                receipts = await send_all(push, [b"%d" % i for i in range(40)])
                outcomes = [await r for r in receipts]
                worker.stop()
    assert all(isinstance(o, Delivered) for o in outcomes)
    assert peak == n
    assert worker.stats.completed == 40 and worker.stats.received == 40


async def test_sync_handlers_in_threads_limited_and_loop_free() -> None:
    """concurrency 6, threads 3: at most 3 handlers run at once, in threads other than the
    event loop's; while they block, the loop keeps running (it is the loop that lets them
    finish)."""
    lock = threading.Lock()
    running = 0
    peak = 0
    threads_seen: set[int] = set()
    go = threading.Event()
    released_by_loop: list[bool] = []
    loop_thread = threading.get_ident()

    def handler(parts: list[bytes]) -> None:
        nonlocal running, peak
        with lock:
            running += 1
            peak = max(peak, running)
            threads_seen.add(threading.get_ident())
        released_by_loop.append(go.wait(timeout=20))
        with lock:
            running -= 1

    with anyio.fail_after(30):
        async with zmtp_qos.Socket(zmtp.PUSH, qos=3) as push:
            ep = await push.bind("tcp://127.0.0.1:*")
            worker = Worker(handler, connect=[ep], concurrency=6, threads=3)
            assert not worker.is_async
            async with anyio.create_task_group() as tg:
                await tg.start(worker.run)
                receipts = await send_all(push, [b"%d" % i for i in range(12)])
                await until(lambda: worker.stats.in_flight == 6 and running == 3)
                ticks = 0
                for _ in range(20):  # the loop runs while three threads block
                    await anyio.sleep(0)
                    ticks += 1
                assert running == 3 and ticks == 20
                go.set()
                outcomes = [await r for r in receipts]
                worker.stop()
    assert all(isinstance(o, Delivered) for o in outcomes)
    assert peak == 3
    assert loop_thread not in threads_seen
    assert all(released_by_loop) and len(released_by_loop) == 12


async def test_prefetch_never_exceeded() -> None:
    release = anyio.Event()
    worst = 0
    worker: Worker

    def watch(handler: Any) -> Any:
        async def watched(parts: list[bytes]) -> None:
            nonlocal worst
            worst = max(worst, worker.stats.prefetched)
            await handler(parts)

        return watched

    async def handler(parts: list[bytes]) -> None:
        await release.wait()

    with anyio.fail_after(30):
        async with zmtp_qos.Socket(zmtp.PUSH, qos=3) as push:
            ep = await push.bind("tcp://127.0.0.1:*")
            worker = Worker(handler, connect=[ep], concurrency=2, prefetch=3, middleware=[watch])
            async with anyio.create_task_group() as tg:
                await tg.start(worker.run)
                receipts = await send_all(push, [b"%d" % i for i in range(10)])
                sock = worker.socket
                assert sock is not None
                # Three taken (two running, one waiting for a handler); the fourth has arrived
                # and is left in the socket. Waited for as a whole: the third job can be taken
                # (prefetched 3) before the second handler task has started its job (a loaded
                # machine can run this check in between and see in_flight 1).
                await until(
                    lambda: (
                        worker.stats.prefetched == 3
                        and sock.pending_handles >= 1
                        and worker.stats.in_flight == 2
                    )
                )
                assert worker.stats.received == 3
                release.set()
                outcomes = [await r for r in receipts]
                worker.stop()
    assert all(isinstance(o, Delivered) for o in outcomes)
    assert worst <= 3
    assert worker.stats.received == 10


async def test_exceptions_map_to_nack_codes_and_producer_sees_retries() -> None:
    attempts: collections.Counter[bytes] = collections.Counter()

    async def handler(parts: list[bytes]) -> None:
        job = parts[0]
        attempts[job] += 1
        if job == b"bad":
            raise zmtp_qos.BadInput("not a number")
        if job == b"rejected":
            raise zmtp_qos.Rejected("policy")
        if job == b"boom":
            raise ValueError("boom")
        if job == b"busy":
            raise zmtp_qos.Overloaded("later")
        if job == b"flaky" and attempts[job] == 1:
            raise RuntimeError("first time only")

    with anyio.fail_after(30):
        async with zmtp_qos.Socket(zmtp.PUSH, qos=3, config=RETRY_FAST) as push:
            ep = await push.bind("tcp://127.0.0.1:*")
            events = push.monitor()
            worker = Worker(handler, connect=[ep], concurrency=3)
            async with anyio.create_task_group() as tg:
                await tg.start(worker.run)
                names = [b"ok", b"bad", b"rejected", b"boom", b"busy", b"flaky"]
                receipts = dict(zip(names, await send_all(push, names), strict=True))
                outcomes = {name: await r for name, r in receipts.items()}
                retried = await events.wait_for(QoSRetried)
                worker.stop()
    assert isinstance(retried, QoSRetried)
    assert isinstance(outcomes[b"ok"], Delivered)
    assert isinstance(outcomes[b"flaky"], Delivered) and attempts[b"flaky"] == 2
    expected = {
        b"bad": ("terminal_nack", 0x02, "not a number", 1),
        b"rejected": ("terminal_nack", 0x05, "policy", 1),
        b"boom": ("retry_exhausted", 0x83, "boom", 3),
        b"busy": ("retry_exhausted", 0x84, "later", 3),
    }
    for name, (reason, code, text, tries) in expected.items():
        letter = outcomes[name]
        assert isinstance(letter, DeadLetter), name
        assert letter.reason == reason and letter.error is not None
        assert (letter.error.code, letter.error.text) == (code, text)
        assert attempts[name] == tries
    stats = worker.stats
    assert stats.failed == {
        "BAD_INPUT": 1,
        "REJECTED": 1,
        "INTERNAL": 4,  # boom three times, flaky once
        "OVERLOADED": 3,
    }
    assert stats.completed == 2
    assert stats.handler_p50 is not None and stats.handler_p99 is not None


@pytest.mark.parametrize("kind", ["async", "sync"])
async def test_processing_timeout_nacks_timeout(kind: str) -> None:
    stuck = threading.Event()

    async def slow_async(parts: list[bytes]) -> None:
        if parts[0] == b"slow":
            await anyio.sleep_forever()

    def slow_sync(parts: list[bytes]) -> None:
        if parts[0] == b"slow":
            stuck.wait(timeout=20)  # abandoned at the timeout; released at the end

    handler: Callable[[list[bytes]], Any] = slow_async if kind == "async" else slow_sync
    config = QoSConfig(max_retries=0)
    try:
        with anyio.fail_after(30):
            async with zmtp_qos.Socket(zmtp.PUSH, qos=3, config=config) as push:
                ep = await push.bind("tcp://127.0.0.1:*")
                worker = Worker(handler, connect=[ep], concurrency=2, processing_timeout=0.2)
                async with anyio.create_task_group() as tg:
                    await tg.start(worker.run)
                    slow, quick = await send_all(push, [b"slow", b"quick"])
                    letter = await slow
                    assert isinstance(await quick, Delivered)
                    worker.stop()
    finally:
        stuck.set()
    assert isinstance(letter, DeadLetter) and letter.reason == "retry_exhausted"
    assert letter.error is not None and letter.error.code == 0x81
    assert worker.stats.failed == {"TIMEOUT": 1}


async def test_middleware_wraps_in_order() -> None:
    calls: list[str] = []

    def tag(name: str) -> Callable[[Any], Any]:
        def middleware(inner: Callable[[list[bytes]], Awaitable[Any]]) -> Any:
            async def wrapped(parts: list[bytes]) -> Any:
                calls.append(f"{name}>")
                try:
                    return await inner(parts)
                finally:
                    calls.append(f"<{name}")

            return wrapped

        return middleware

    def handler(parts: list[bytes]) -> None:  # sync: middleware still sees an async callable
        calls.append("handler")

    with anyio.fail_after(30):
        async with zmtp_qos.Socket(zmtp.PUSH, qos=3) as push:
            ep = await push.bind("tcp://127.0.0.1:*")
            worker = Worker(handler, connect=[ep], middleware=[tag("a"), tag("b")])
            async with anyio.create_task_group() as tg:
                await tg.start(worker.run)
                (receipt,) = await send_all(push, [b"job"])
                assert isinstance(await receipt, Delivered)
                worker.stop()
    assert calls == ["a>", "b>", "handler", "<b", "<a"]


def _endpoint(transport: str) -> str:
    if transport == "tcp":
        return "tcp://127.0.0.1:*"
    if transport == "ipc":
        return f"ipc://{tempfile.gettempdir()}/zmtp-worker-{os.getpid()}-{next(_ids)}.sock"
    return f"inproc://worker-{os.getpid()}-{next(_ids)}"


_ids = itertools.count()


@pytest.mark.parametrize("transport", ["tcp", "ipc", "inproc"])
async def test_stop_with_jobs_in_flight_then_run_again(transport: str) -> None:
    """stop(): every taken job completes and its COMP has reached the producer when run()
    returns; the jobs not taken stay with the producer (pinned to the worker's identity) and
    run when the same worker runs again. None is lost, none runs twice."""
    runs: collections.Counter[bytes] = collections.Counter()
    release = anyio.Event()

    async def handler(parts: list[bytes]) -> None:
        runs[parts[0]] += 1
        await release.wait()

    with anyio.fail_after(30):
        async with zmtp_qos.Socket(zmtp.PUSH, qos=3) as push:
            ep = await push.bind(_endpoint(transport))
            worker = Worker(handler, connect=[ep], concurrency=3, prefetch=5)
            jobs = [b"job-%d" % i for i in range(12)]
            async with anyio.create_task_group() as tg:
                await tg.start(worker.run)
                receipts = await send_all(push, jobs)
                await until(lambda: worker.stats.in_flight == 3 and worker.stats.prefetched == 5)
                tg.start_soon(lambda: anyio.to_thread.run_sync(worker.stop))  # another thread
                sock = worker.socket
                assert sock is not None
                await until(lambda: worker.stopping)  # it takes no new job from now on
                release.set()
            # run() has returned: the socket is closed.
            assert sock.raw.closed
            taken = [r for r in receipts if r.done]
            assert len(taken) == 5  # exactly the taken jobs, all settled before the close
            assert all(isinstance(r.outcome, Delivered) for r in taken)
            assert sum(runs.values()) == 5
            async with anyio.create_task_group() as tg:
                await tg.start(worker.run)  # the same identity: the rest is replayed
                outcomes = [await r for r in receipts]
                worker.stop()
    assert all(isinstance(o, Delivered) for o in outcomes)
    assert runs == dict.fromkeys(jobs, 1)


async def test_stop_from_a_signal_handler() -> None:
    async def handler(parts: list[bytes]) -> None:
        return None

    with anyio.fail_after(30):
        async with zmtp_qos.Socket(zmtp.PUSH, qos=3) as push:
            ep = await push.bind("tcp://127.0.0.1:*")
            worker = Worker(handler, connect=[ep])
            previous = signal.signal(signal.SIGUSR1, lambda signum, frame: worker.stop())
            try:
                async with anyio.create_task_group() as tg:
                    await tg.start(worker.run)
                    (receipt,) = await send_all(push, [b"job"])
                    assert isinstance(await receipt, Delivered)
                    os.kill(os.getpid(), signal.SIGUSR1)
                # run() returned: the signal handler's stop() woke it
            finally:
                signal.signal(signal.SIGUSR1, previous)
    assert not worker.running and worker.stats.completed == 1


async def test_kill_in_flight_then_same_identity_redelivers(
    caplog: pytest.LogCaptureFixture,
) -> None:
    runs: collections.Counter[bytes] = collections.Counter()
    hang = True

    async def handler(parts: list[bytes]) -> None:
        runs[parts[0]] += 1
        if hang:
            await anyio.sleep_forever()

    with anyio.fail_after(30):
        async with zmtp_qos.Socket(zmtp.PUSH, qos=3) as push:
            ep = await push.bind("tcp://127.0.0.1:*")
            worker = Worker(handler, connect=[ep], concurrency=2, prefetch=2)
            jobs = [b"job-%d" % i for i in range(4)]
            async with anyio.create_task_group() as tg:
                await tg.start(worker.run)
                receipts = await send_all(push, jobs)
                await until(lambda: worker.stats.in_flight == 2)
                worker.kill()  # from another task
            assert worker.socket is None and not any(r.done for r in receipts)
            assert "killed: 2 job(s) in flight got no verdict" in caplog.text
            in_flight = [job for job in jobs if runs[job]]
            assert len(in_flight) == 2
            hang = False
            async with anyio.create_task_group() as tg:
                await tg.start(worker.run)
                outcomes = [await r for r in receipts]
                worker.stop()
    assert all(isinstance(o, Delivered) for o in outcomes)
    for job in jobs:  # the killed ones ran again (no verdict), the others once
        assert runs[job] == (2 if job in in_flight else 1)


async def test_bind_mode_and_logging(caplog: pytest.LogCaptureFixture) -> None:
    async def handler(parts: list[bytes]) -> None:
        if parts[0] == b"boom":
            raise KeyError("missing")

    caplog.set_level(logging.DEBUG, logger="zmtp_qos.worker")
    with anyio.fail_after(30):
        worker = Worker(
            handler, bind=["tcp://127.0.0.1:*"], concurrency=3, prefetch=5, config=RETRY_FAST
        )
        async with anyio.create_task_group() as tg:
            endpoints = await tg.start(worker.run)
            assert endpoints == worker.endpoints and endpoints[0].startswith("tcp://127.0.0.1:")
            async with zmtp_qos.Socket(zmtp.PUSH, qos=3, config=QoSConfig(max_retries=0)) as push:
                await push.connect(endpoints[0])
                ok, boom = await send_all(push, [b"ok", b"boom"])
                assert isinstance(await ok, Delivered)
                assert isinstance(await boom, DeadLetter)
            worker.stop()
    text = caplog.text
    assert "concurrency=3 threads=- prefetch=5" in text
    assert "fail after" in text and "KeyError: 'missing' -> NACK INTERNAL (retryable)" in text
    assert "Traceback" in text  # an unexpected exception is logged with its traceback
    assert ": done in " in text and ": start" in text  # debug, per job
    assert "stopped: received 2, completed 1, failed 1 (INTERNAL 1)" in text


async def test_stop_before_run_returns_at_once() -> None:
    worker = Worker(lambda parts: None, bind=["tcp://127.0.0.1:*"])
    worker.stop()
    with anyio.fail_after(10):
        await worker.run()
    assert not worker.running


def test_bad_arguments() -> None:
    def handler(parts: list[bytes]) -> None:
        return None

    with pytest.raises(ValueError, match="endpoint"):
        Worker(handler)
    with pytest.raises(TypeError):
        Worker(handler, connect="tcp://127.0.0.1:5555")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="concurrency"):
        Worker(handler, connect=["tcp://127.0.0.1:5555"], concurrency=0)
    with pytest.raises(ValueError, match="PULL or GATHER"):
        Worker(handler, connect=["tcp://127.0.0.1:5555"], socket_type="PUSH")
    worker = Worker(handler, connect=["tcp://127.0.0.1:5555"], concurrency=5)
    assert (worker.threads, worker.prefetch) == (5, 10)


async def test_gather_worker_for_a_scatter_producer() -> None:
    done: list[bytes] = []

    async def handler(parts: list[bytes]) -> None:
        done.append(parts[0])

    with anyio.fail_after(30):
        async with zmtp_qos.Socket(zmtp.SCATTER, qos=3) as scatter:
            ep = await scatter.bind("tcp://127.0.0.1:*")
            worker = Worker(handler, connect=[ep], socket_type="gather", concurrency=2)
            async with anyio.create_task_group() as tg:
                await tg.start(worker.run)
                receipts = await send_all(scatter, [b"a", b"b", b"c"])
                outcomes = [await r for r in receipts]
                worker.stop()
    assert all(isinstance(o, Delivered) for o in outcomes)
    assert sorted(done) == [b"a", b"b", b"c"]
