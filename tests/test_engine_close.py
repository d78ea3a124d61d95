"""Closing never hangs (issue 16), on asyncio and trio, over tcp and ipc: close racing a
just-accepted connection, a cancelled close, asyncio's noise from cancelled UNIX-stream
receives, descriptors across close-during-connect cycles, and a bounded close-race stress
(``python -m tests.test_engine_close SECONDS`` runs it longer).
docs/architecture.md, "Closing"."""

from __future__ import annotations

import asyncio
import gc
import os
import random
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

import anyio
import pytest

import zmtp
from tests.test_engine_helpers import TIMEOUT, endpoint_for, unique_name
from zmtp.testing.wire import greeting, ready_command

pytestmark = pytest.mark.anyio

STREAMS = ["tcp", "ipc"]
#: How long a close that should be prompt may take before the test calls it hung.
HANG_BOUND = 3.0


def open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


@contextmanager
def loop_errors(backend: str) -> Iterator[list[str]]:
    """What asyncio's loop would log as "Exception in callback ..." (trio: nothing). Only
    the text is kept: holding the context would keep its exception's frames (and any socket
    in them) alive."""
    found: list[str] = []
    if backend != "asyncio":
        yield found
        return
    loop = asyncio.get_running_loop()
    previous = loop.get_exception_handler()
    loop.set_exception_handler(
        lambda _loop, context: found.append(f"{context.get('message')}: {context.get('handle')}")
    )
    try:
        yield found
    finally:
        loop.set_exception_handler(previous)


async def closes_within(bound: float, close: Callable[[], Any], unblock: Callable[[], Any]) -> bool:
    """Run ``close()`` in this task; if it takes longer than ``bound``, ``unblock()`` (closing
    the peer ends what holds it) and report False. The close itself is never interrupted."""
    hung = False

    async def watchdog() -> None:
        nonlocal hung
        await anyio.sleep(bound)
        hung = True
        await unblock()

    async with anyio.create_task_group() as tg:
        tg.start_soon(watchdog)
        await close()
        tg.cancel_scope.cancel()
    return not hung


# ------------------------------------------------------------------ 1. the accept race


@pytest.mark.parametrize("transport", STREAMS)
async def test_close_right_after_an_accept_does_not_hang(transport: str, tmp_path: Path) -> None:
    """close() with no checkpoint after the Accepted event: the connection's task has not
    started yet (asyncio: never; trio: about half the time), and must stop anyway."""
    for _ in range(10):
        async with zmtp.Socket(zmtp.PUSH, linger=0) as push:
            pull = zmtp.Socket(zmtp.PULL, linger=0)
            async with pull:
                monitor = pull.monitor()
                endpoint = await pull.bind(endpoint_for(transport, tmp_path))
                await push.connect(endpoint)
                with anyio.fail_after(TIMEOUT):
                    await monitor.wait_for(zmtp.Accepted)
                assert await closes_within(HANG_BOUND, pull.close, push.close)


# ------------------------------------------------------------------ 2. a cancelled close


@pytest.mark.parametrize("transport", STREAMS)
async def test_a_cancelled_close_still_closes(transport: str, tmp_path: Path) -> None:
    """Cancelled while lingering (a message queued for a peer that never comes): the blocked
    recv gets SocketClosed, a later recv raises it, and leaving ``async with`` is prompt."""
    # A stream endpoint nobody listens on: the DEALER reconnects forever.
    async with zmtp.Socket(zmtp.PULL, linger=0) as probe:
        nowhere = await probe.bind(endpoint_for(transport, tmp_path))
    outcome: list[BaseException] = []
    with anyio.fail_after(TIMEOUT):
        async with zmtp.Socket(zmtp.DEALER, linger=30, reconnect_ivl=0.01) as dealer:
            await dealer.connect(nowhere)
            await dealer.send(b"never delivered")

            async def blocked_recv() -> None:
                try:
                    await dealer.recv()
                except zmtp.SocketClosed as exc:
                    outcome.append(exc)

            async with anyio.create_task_group() as tg:
                tg.start_soon(blocked_recv)
                with anyio.CancelScope() as scope:
                    tg.start_soon(_cancel_once_lingering, dealer, scope)
                    await dealer.close()  # lingers until cancelled
                assert scope.cancelled_caught
            assert dealer.closed
            assert len(outcome) == 1
            with pytest.raises(zmtp.SocketClosed):
                await dealer.recv()
            with pytest.raises(zmtp.SocketClosed):
                await dealer.send(b"x")
            await dealer.close()  # returns at once


async def _cancel_once_lingering(sock: zmtp.Socket, scope: anyio.CancelScope) -> None:
    while not sock.engine.closing:
        await anyio.lowlevel.checkpoint()
    await anyio.lowlevel.checkpoint()  # it is awaiting the linger now
    scope.cancel()


async def test_a_second_close_waits_and_may_shorten_the_linger() -> None:
    async with zmtp.Socket(zmtp.PULL, linger=0) as probe:
        nowhere = await probe.bind("tcp://127.0.0.1:*")
    with anyio.fail_after(TIMEOUT):
        async with zmtp.Socket(zmtp.PUSH, linger=None, reconnect_ivl=0.01) as push:
            await push.connect(nowhere)
            await push.send(b"queued")
            async with anyio.create_task_group() as tg:
                tg.start_soon(push.close)  # would wait forever (linger None)
                while not push.engine.closing:
                    await anyio.lowlevel.checkpoint()
                await push.close(linger=0)  # cuts it short and returns once closed
                assert push.closed


# ------------------------------------------------------------------ 3. asyncio + ipc noise


@pytest.mark.parametrize("transport", STREAMS)
async def test_cancelled_receives_leave_the_event_loop_quiet(
    transport: str, tmp_path: Path, anyio_backend: str
) -> None:
    """A recv cancelled in the loop pass in which its socket turns readable (the peer's
    eager write lands, then the canceller runs first): nothing is lost, nothing is logged."""
    async with (
        zmtp.Socket(zmtp.PAIR, linger=0) as a,
        zmtp.Socket(zmtp.PAIR, linger=0) as b,
    ):
        endpoint = await a.bind(endpoint_for(transport, tmp_path))
        await b.connect(endpoint)
        with loop_errors(anyio_backend) as errors, anyio.fail_after(TIMEOUT):
            for i in range(30):
                await b.send(b"ping %d" % i)
                assert await a.recv() == b"ping %d" % i
                await a.send(b"pong")
                assert await b.recv() == b"pong"  # b's next send is an eager write
                got: list[bytes] = []
                async with anyio.create_task_group() as tg:
                    scope = anyio.CancelScope()

                    async def cancelled_recv(
                        scope: anyio.CancelScope = scope, got: list[bytes] = got
                    ) -> None:
                        with scope:  # cancelled, or it won the race: either way, not lost
                            got.append(await a.recv())

                    tg.start_soon(cancelled_recv)
                    while not (a.engine.receivers_waiting or a.engine.lent_connection):
                        await anyio.lowlevel.checkpoint()
                    await b.send(b"late %d" % i)  # written now, in this task
                    await anyio.lowlevel.checkpoint()  # the socket is readable next pass
                    scope.cancel()
                if not got:
                    got.append(await a.recv())
                assert got == [b"late %d" % i]
            await anyio.sleep(0)
        assert errors == []


async def test_a_writer_cancelled_as_its_socket_drains_leaves_the_event_loop_quiet(
    tmp_path: Path, anyio_backend: str
) -> None:
    """The write side of the noise above (seen a few times per 10-minute soak, when a slowly
    reading peer process was SIGKILLed): the connection's writer waits for a full ipc socket
    buffer to drain, the peer reads it all, and in the same loop pass the connection is torn
    down: nothing is logged (before the fix: one traceback per teardown)."""
    path = str(tmp_path / "w.ipc")
    payload = b"x" * 65536
    async with await anyio.create_unix_listener(path) as listener:
        with loop_errors(anyio_backend) as errors, anyio.fail_after(TIMEOUT):
            for _ in range(3):
                async with zmtp.Socket(zmtp.PUSH, linger=0, send_hwm=64) as push:
                    await push.connect(f"ipc://{path}")
                    peer = await listener.accept()
                    await peer.send(greeting() + ready_command("PULL"))
                    received = bytearray()
                    while len(received) < 64 + 28:  # its greeting and READY
                        received += await peer.receive()
                    for _ in range(64):  # far more than the socket buffers hold
                        await push.send(payload)
                    await anyio.wait_all_tasks_blocked()  # the writer waits for the buffer to drain
                    raw = peer.extra(anyio.abc.SocketAttribute.raw_socket)
                    raw.setblocking(False)
                    with suppress(BlockingIOError):  # drain it: writable at the next poll,
                        while chunk := raw.recv(1 << 20):
                            received += chunk
                    await anyio.lowlevel.checkpoint()  # which runs before this task goes on
                    await push.disconnect(f"ipc://{path}")  # tears the connection down now
                    await anyio.wait_all_tasks_blocked()
                    await peer.aclose()
            await anyio.sleep(0)
        assert errors == []


# ------------------------------------------------------------------ 4. descriptors


@pytest.mark.parametrize("transport", STREAMS)
async def test_no_descriptor_leaks_across_close_during_connect(
    transport: str, tmp_path: Path, anyio_backend: str
) -> None:
    cycles = 200
    with loop_errors(anyio_backend) as errors:
        await close_during_connect_cycles(transport, tmp_path, 10)
        gc.collect()
        before = open_fds()
        await close_during_connect_cycles(transport, tmp_path, cycles)
        gc.collect()
        assert open_fds() <= before
    assert errors == []


async def close_during_connect_cycles(transport: str, tmp_path: Path, cycles: int) -> None:
    for i in range(cycles):
        with anyio.fail_after(TIMEOUT):
            async with (
                zmtp.Socket(zmtp.PUSH, linger=0) as push,
                zmtp.Socket(zmtp.PULL, linger=0) as pull,
            ):
                endpoint = await pull.bind(endpoint_for(transport, tmp_path))
                await push.connect(endpoint)
                for _ in range(i % 4):  # close at different points of the connect
                    await anyio.lowlevel.checkpoint()


# ------------------------------------------------------------------ the stress test

STRESS_TYPES = [
    (zmtp.PUSH, zmtp.PULL),
    (zmtp.DEALER, zmtp.ROUTER),
    (zmtp.REQ, zmtp.REP),
    (zmtp.PUB, zmtp.SUB),
]


async def close_race_round(transport: str, tmp_path: Path, rng: random.Random) -> None:
    """One round: two linked sockets of a random pair, tasks blocked in send and recv on
    both, then a random close or ``async with`` exit; every blocked task must end with
    SocketClosed (or its own successful call) promptly, and the exit within the linger."""
    kind_a, kind_b = rng.choice(STRESS_TYPES)
    linger = rng.choice([0, 0.05])
    endpoint = (
        endpoint_for(transport, tmp_path)
        if transport != "inproc"
        else (f"inproc://{unique_name()}")
    )
    ended: list[str] = []

    async def blocked(call: Callable[[], Any]) -> None:
        try:
            while True:
                await call()
        except zmtp.SocketClosed:
            ended.append("closed")
        except (zmtp.ZMTPError, ValueError):  # e.g. REQ state: the call is refused at once
            ended.append("refused")

    with anyio.fail_after(linger + HANG_BOUND):
        async with (
            zmtp.Socket(kind_b, linger=linger, send_hwm=2, recv_hwm=2) as b,
            anyio.create_task_group() as tg,
        ):
            async with zmtp.Socket(kind_a, linger=linger, send_hwm=2, recv_hwm=2) as a:
                if kind_b == zmtp.SUB:
                    b.subscribe(b"")
                resolved = await b.bind(endpoint)
                await a.connect(resolved)
                tasks = 0
                for sock in (a, b):
                    if sock.socket_type in ("PUSH", "DEALER", "REQ", "PUB"):
                        tg.start_soon(blocked, lambda s=sock: s.send(b"x"))
                        tasks += 1
                    if sock.socket_type in ("PULL", "DEALER", "ROUTER", "REP", "SUB", "REQ"):
                        tg.start_soon(blocked, lambda s=sock: s.recv_multipart())
                        tasks += 1
                for _ in range(rng.randrange(20)):
                    await anyio.lowlevel.checkpoint()
                if rng.random() < 0.5:
                    await a.close()
            await b.close()
        assert len(ended) == tasks


async def test_close_race_stress(tmp_path: Path) -> None:
    """A few seconds of random close-while-blocked rounds on every stream transport and
    inproc (``python -m tests.test_engine_close SECONDS`` runs it for longer)."""
    await close_race_stress(2.0, tmp_path, random.Random(16))


async def close_race_stress(seconds: float, tmp_path: Path, rng: random.Random) -> int:
    gc.collect()
    fds = open_fds()
    rounds = 0
    deadline = anyio.current_time() + seconds
    while anyio.current_time() < deadline:
        for transport in ("tcp", "ipc", "inproc"):
            await close_race_round(transport, tmp_path, rng)
            rounds += 1
    gc.collect()
    assert open_fds() <= fds + 2  # the loop's own may grow by one or two (selector, wakeup)
    return rounds


if __name__ == "__main__":  # the longer run: python -m tests.test_engine_close [SECONDS]
    import tempfile

    seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 60.0
    for backend in ("asyncio", "trio"):
        with tempfile.TemporaryDirectory() as tmp:
            done = anyio.run(
                close_race_stress, seconds, Path(tmp), random.Random(), backend=backend
            )
        print(f"{backend}: {done} close-race rounds, no hang, no leak")


async def test_unsent_at_close_counts_what_the_linger_dropped() -> None:
    """What ``zmtp cat`` reads to exit 1 instead of 0 when its messages never left."""
    with anyio.fail_after(TIMEOUT):
        async with zmtp.Socket(zmtp.PUSH, linger=0.05) as push:
            await push.connect("tcp://127.0.0.1:1")  # nobody there: the messages stay queued
            for n in range(3):
                await push.send(b"%d" % n)
            assert push.unsent_at_close == 0  # not closed yet
        assert push.unsent_at_close == 3
        async with zmtp.Socket(zmtp.PULL) as pull, zmtp.Socket(zmtp.PUSH) as delivered:
            await delivered.connect(await pull.bind("inproc://unsent-at-close"))
            await delivered.send(b"taken")
            await delivered.close()
            assert delivered.unsent_at_close == 0
            assert await pull.recv() == b"taken"
