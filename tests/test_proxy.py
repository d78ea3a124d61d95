"""proxy / steerable_proxy: a ROUTER<->DEALER broker between pyzmq REQs and pyzmq REPs (libzmq
peers on both sides), capture, and the PAUSE/RESUME/STATISTICS/TERMINATE commands."""

from __future__ import annotations

import struct
import threading
from collections.abc import Iterator

import anyio
import pytest
import zmq

import zmtp
from zmtp.proxy import proxy, steerable_proxy

pytestmark = pytest.mark.anyio

OP_MS = 10_000


@pytest.fixture
def ctx() -> Iterator[zmq.Context[zmq.Socket[bytes]]]:
    context: zmq.Context[zmq.Socket[bytes]] = zmq.Context()
    yield context
    context.destroy(linger=0)


def _socket(ctx: zmq.Context[zmq.Socket[bytes]], kind: int, endpoint: str) -> zmq.Socket[bytes]:
    sock = ctx.socket(kind)
    sock.setsockopt(zmq.RCVTIMEO, OP_MS)
    sock.setsockopt(zmq.SNDTIMEO, OP_MS)
    sock.setsockopt(zmq.LINGER, 0)
    sock.connect(endpoint)
    return sock


def _serve(rep: zmq.Socket[bytes], name: bytes, stop: threading.Event) -> threading.Thread:
    """Answer requests until ``stop`` is set (however the broker spreads them)."""

    def run() -> None:
        while not stop.is_set():
            if rep.poll(50):  # a bounded wait, so that stop is seen
                rep.send(name + b":" + rep.recv())

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread


async def test_broker_between_pyzmq_reqs_and_reps(ctx: zmq.Context[zmq.Socket[bytes]]) -> None:
    with anyio.fail_after(30):
        async with (
            zmtp.Socket(zmtp.ROUTER, linger=0) as frontend,
            zmtp.Socket(zmtp.DEALER, linger=0) as backend,
            zmtp.Socket(zmtp.PULL) as captured,
            zmtp.Socket(zmtp.PUSH, linger=0) as capture,
            anyio.create_task_group() as tg,
        ):
            front = await frontend.bind("tcp://127.0.0.1:*")
            back = await backend.bind("tcp://127.0.0.1:*")
            await capture.connect(await captured.bind("inproc://proxy-capture"))
            reps = [_socket(ctx, zmq.REP, back) for _ in range(2)]
            stop = threading.Event()
            servers = [_serve(rep, b"rep%d" % i, stop) for i, rep in enumerate(reps)]
            tg.start_soon(proxy, frontend, backend, capture)
            reqs = [_socket(ctx, zmq.REQ, front) for _ in range(4)]

            def ask(req: zmq.Socket[bytes], n: int) -> list[bytes]:
                answers = []
                for i in range(2):
                    req.send(b"q%d.%d" % (n, i))
                    answers.append(req.recv())
                return answers

            results: list[list[bytes]] = [[] for _ in reqs]

            async def client(n: int) -> None:
                results[n] = await anyio.to_thread.run_sync(ask, reqs[n], n)

            async with anyio.create_task_group() as clients:
                for n in range(len(reqs)):
                    clients.start_soon(client, n)
            for n, answers in enumerate(results):
                bodies = [a.split(b":", 1)[1] for a in answers]
                assert bodies == [b"q%d.0" % n, b"q%d.1" % n]
            # every reply came from one of the REPs (how the DEALER spread the requests
            # depends on when each REP connected)
            assert {a.split(b":")[0] for r in results for a in r} <= {b"rep0", b"rep1"}
            # every request and reply went through the capture too (with their envelopes)
            copies = [await captured.recv_multipart() for _ in range(16)]
            assert sum(1 for c in copies if c[-1].startswith(b"q")) == 8
            assert sum(1 for c in copies if c[-1].startswith(b"rep")) == 8
            stop.set()
            for thread in servers:
                await anyio.to_thread.run_sync(thread.join, 10)
            tg.cancel_scope.cancel()


async def test_steering_commands(ctx: zmq.Context[zmq.Socket[bytes]]) -> None:
    with anyio.fail_after(30):
        async with (
            zmtp.Socket(zmtp.ROUTER, linger=0) as frontend,
            zmtp.Socket(zmtp.DEALER, linger=0) as backend,
            zmtp.Socket(zmtp.PAIR, linger=0) as control,
            zmtp.Socket(zmtp.PAIR, linger=0) as commander,
        ):
            front = await frontend.bind("tcp://127.0.0.1:*")
            back = await backend.bind("tcp://127.0.0.1:*")
            await commander.connect(await control.bind("inproc://proxy-control"))
            rep = _socket(ctx, zmq.REP, back)
            stop = threading.Event()
            server = _serve(rep, b"rep", stop)
            req = _socket(ctx, zmq.REQ, front)
            outcome: list[zmtp.proxy.ProxyStatistics] = []

            async def run() -> None:
                outcome.append(await steerable_proxy(frontend, backend, None, control))

            async def statistics() -> list[int]:
                await commander.send(b"STATISTICS")
                frames = await commander.recv_multipart()
                assert len(frames) == 8 and all(len(f) == 8 for f in frames)
                return [struct.unpack("=Q", f)[0] for f in frames]

            async with anyio.create_task_group() as tg:
                tg.start_soon(run)
                await commander.send(b"PAUSE")
                assert await statistics() == [0] * 8  # processed in order: paused now
                req.send(b"held")
                # Until the request is with us: waiting in the frontend (paused before the
                # proxy took it) or taken and held (paused while it waited in recv).
                while not ((await statistics())[0] == 1 or frontend.readable()):
                    await anyio.sleep(0.01)  # bounded by fail_after; a condition, not a guess
                stats = await statistics()
                assert stats[6] == 0  # not sent on to the backend while paused
                await commander.send(b"RESUME")
                assert await anyio.to_thread.run_sync(req.recv) == b"rep:held"
                stats = await statistics()
                # frontend: 1 in, 1 out; backend: 1 in, 1 out (the reply), 1 out (request)
                assert stats[0] == 1 and stats[2] == 1 and stats[4] == 1 and stats[6] == 1
                assert stats[1] == stats[7] and stats[5] == stats[3]  # bytes of all frames
                await commander.send(b"TERMINATE")
            assert outcome and outcome[0].frontend.messages_in == 1
            stop.set()
            await anyio.to_thread.run_sync(server.join, 10)


async def test_a_socket_closed_under_the_proxy_raises_socket_closed() -> None:
    """Regression: the documented ``SocketClosed`` came out wrapped in the proxy's
    ExceptionGroup, so ``except zmtp.SocketClosed`` around the proxy caught nothing."""
    with anyio.fail_after(10):
        async with zmtp.Socket(zmtp.ROUTER) as frontend, zmtp.Socket(zmtp.DEALER) as backend:
            await frontend.bind("inproc://proxy-closed-front")
            await backend.bind("inproc://proxy-closed-back")
            outcome: list[BaseException] = []

            async def run() -> None:
                try:
                    await proxy(frontend, backend)
                except BaseException as exc:
                    outcome.append(exc)

            async with anyio.create_task_group() as tg:
                tg.start_soon(run)
                await anyio.wait_all_tasks_blocked()
                await frontend.close()
        assert len(outcome) == 1 and isinstance(outcome[0], zmtp.SocketClosed), outcome


def test_sync_proxy_raises_socket_closed_when_closed_from_another_thread() -> None:
    import zmtp.sync

    front = zmtp.sync.Socket(zmtp.ROUTER)
    back = zmtp.sync.Socket(zmtp.DEALER)
    client = zmtp.sync.Socket(zmtp.DEALER, linger=0)
    worker = zmtp.sync.Socket(zmtp.DEALER, linger=0, recv_timeout=10.0)
    client.connect(front.bind("tcp://127.0.0.1:*"))
    worker.connect(back.bind("tcp://127.0.0.1:*"))
    outcome: list[BaseException] = []

    def run() -> None:
        try:
            zmtp.sync.proxy(front, back)
        except BaseException as exc:
            outcome.append(exc)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    try:
        client.send(b"through")
        assert worker.recv_multipart()[-1] == b"through"  # the proxy is running
        front.close()
        thread.join(10)
        assert not thread.is_alive()
        assert len(outcome) == 1 and isinstance(outcome[0], zmtp.SocketClosed), outcome
    finally:
        for sock in (back, client, worker):
            sock.close()
