"""zmtp.Poller (async) and zmtp.sync.Poller, live against pyzmq peers: readiness without
consuming, timeouts in seconds, several sockets."""

from __future__ import annotations

from collections.abc import Iterator

import anyio
import pytest
import zmq

import zmtp
import zmtp.sync
from zmtp.poller import POLLIN, POLLOUT, Poller


@pytest.fixture
def ctx() -> Iterator[zmq.Context[zmq.Socket[bytes]]]:
    context: zmq.Context[zmq.Socket[bytes]] = zmq.Context()
    yield context
    context.destroy(linger=0)


def _pyzmq(ctx: zmq.Context[zmq.Socket[bytes]], kind: int) -> zmq.Socket[bytes]:
    sock = ctx.socket(kind)
    sock.setsockopt(zmq.LINGER, 0)
    sock.setsockopt(zmq.SNDTIMEO, 10_000)
    sock.setsockopt(zmq.RCVTIMEO, 10_000)
    return sock


@pytest.mark.anyio
async def test_pollin_reports_without_consuming(ctx: zmq.Context[zmq.Socket[bytes]]) -> None:
    with anyio.fail_after(20):
        async with zmtp.Socket(zmtp.PULL) as quiet, zmtp.Socket(zmtp.PULL) as busy:
            poller = Poller()
            poller.register(quiet, POLLIN)
            poller.register(busy, zmq.POLLIN)  # libzmq's values work too
            pusher = _pyzmq(ctx, zmq.PUSH)
            pusher.connect(await busy.bind("tcp://127.0.0.1:*"))
            await quiet.bind("tcp://127.0.0.1:*")
            assert await poller.poll(0) == []
            assert await poller.poll(0.05) == []  # seconds
            pusher.send(b"first")
            assert await poller.poll(10) == [(busy, POLLIN)]
            assert await poller.poll(10) == [(busy, POLLIN)]  # still there: nothing consumed
            assert await busy.recv() == b"first"
            assert await poller.poll(0) == []


@pytest.mark.anyio
async def test_pollout_once_connected(ctx: zmq.Context[zmq.Socket[bytes]]) -> None:
    with anyio.fail_after(20):
        async with zmtp.Socket(zmtp.PUSH, linger=0) as push:
            poller = Poller()
            poller.register(push, POLLIN | POLLOUT)  # PUSH is never readable
            assert await poller.poll(0) == []
            puller = _pyzmq(ctx, zmq.PULL)
            port = puller.bind_to_random_port("tcp://127.0.0.1")
            await push.connect(f"tcp://127.0.0.1:{port}")
            assert await poller.poll(10) == [(push, POLLOUT)]
            await push.send(b"x")
            assert await anyio.to_thread.run_sync(puller.recv) == b"x"
            poller.unregister(push)
            assert await poller.poll(0) == []


def test_sync_poller(ctx: zmq.Context[zmq.Socket[bytes]]) -> None:
    with zmtp.sync.Socket(zmtp.PULL, recv_timeout=10) as pull:
        poller = zmtp.sync.Poller()
        poller.register(pull, zmtp.sync.POLLIN)
        pusher = _pyzmq(ctx, zmq.PUSH)
        pusher.connect(pull.bind("tcp://127.0.0.1:*"))
        assert poller.poll(0.05) == []
        pusher.send(b"one")
        pusher.send(b"two")
        assert poller.poll(10) == [(pull, zmtp.sync.POLLIN)]
        assert pull.recv() == b"one"
        assert poller.poll(10) == [(pull, zmtp.sync.POLLIN)]  # buffered in the face or not
        assert pull.recv() == b"two"
        assert poller.poll(0) == []


@pytest.mark.anyio
async def test_a_poll_timeout_in_pyzmq_milliseconds_warns(anyio_backend: str) -> None:
    """Regression: ``poller.poll(1000)`` ported from pyzmq (one second there) waited 1000 s
    here with no word; it now warns as a time option in milliseconds does."""
    millis = 3000 if anyio_backend == "asyncio" else 3001  # warned once per value
    with anyio.fail_after(20):
        async with zmtp.Socket(zmtp.PULL) as pull, zmtp.Socket(zmtp.PUSH) as push:
            await push.connect(await pull.bind("inproc://poll-millis"))
            await push.send(b"waiting")
            poller = Poller()
            poller.register(pull, POLLIN)
            with pytest.warns(UserWarning, match=rf"timeout={millis} is {millis} seconds"):
                assert await poller.poll(millis) == [(pull, POLLIN)]


def test_a_sync_poll_timeout_in_pyzmq_milliseconds_warns() -> None:
    with zmtp.sync.Socket(zmtp.PULL) as pull, zmtp.sync.Socket(zmtp.PUSH) as push:
        push.connect(pull.bind("tcp://127.0.0.1:*"))
        push.send(b"waiting")
        poller = zmtp.sync.Poller()
        poller.register(pull, POLLIN)
        with pytest.warns(UserWarning, match=r"did you mean timeout=4\?"):
            assert poller.poll(4000) == [(pull, POLLIN)]
