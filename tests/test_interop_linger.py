"""close() and linger against libzmq: queued messages are flushed to a libzmq peer before the
connection goes away, and a peer that does not read cannot hold close() beyond linger."""

from __future__ import annotations

import contextlib

import anyio
import pytest

import zmtp
from zmtp.interop import Libzmq, big_payload, compare_messages, link
from zmtp.testing.fixtures import TEST_TIMEOUT, libzmq_env  # noqa: F401

pytestmark = [pytest.mark.anyio, pytest.mark.interop]

BIG = big_payload(16 << 20)


@pytest.mark.parametrize("binds", ["zmtp", "libzmq"])
async def test_close_flushes_queued_messages(lz: Libzmq, binds: str) -> None:
    with anyio.fail_after(TEST_TIMEOUT):
        theirs = lz.socket("PULL")
        messages = [[i.to_bytes(2, "big"), bytes(1024)] for i in range(200)]
        async with zmtp.Socket(zmtp.PUSH, linger=None) as ours:
            await link(ours, theirs, binds=binds, endpoint="tcp://127.0.0.1:*")
            for message in messages:
                await ours.send_multipart(message)
        compare_messages(messages, await theirs.recv_many(len(messages)))


@pytest.mark.parametrize("binds", ["zmtp", "libzmq"])
async def test_close_waits_for_the_batch_being_written(lz: Libzmq, binds: str) -> None:
    """linger=None: close() returns only once every queued message is on the wire, including
    the batch the connection's writer has already taken from the queue and is still sending.

    With send_hwm=1, the second send returns as soon as the writer took the first message, so
    close() starts while a 16 MiB write is in progress and one message is still queued. The
    queue empties when the writer takes the last message; close() must keep waiting until
    that write has finished too. (Regression test: close() used to look only at the queue and
    cut the in-flight 16 MiB write, losing "last" in most iterations; hence the repetition.)"""
    with anyio.fail_after(TEST_TIMEOUT):
        for iteration in range(6):
            theirs = lz.socket("PULL")
            async with zmtp.Socket(zmtp.PUSH, send_hwm=1, linger=None) as ours:
                await link(ours, theirs, binds=binds, endpoint="tcp://127.0.0.1:*")
                await ours.send_multipart([b"first", BIG])
                await ours.send_multipart([b"last", BIG])  # returns once "first" is taken
            # close() has returned: with linger=None both must have been written.
            received: list[list[bytes]] = []
            with contextlib.suppress(TimeoutError):
                for _ in range(2):
                    received += await theirs.recv_many(1, timeout=1.0)
            theirs.close()
            names = [m[0] for m in received if m[1:] == [BIG]]
            assert names == [b"first", b"last"], f"iteration {iteration}: received {names}"


async def test_linger_bounds_close_when_libzmq_does_not_read(lz: Libzmq) -> None:
    with anyio.fail_after(TEST_TIMEOUT):
        theirs = lz.socket("PULL", rcvhwm=1)
        async with zmtp.Socket(zmtp.PUSH, send_hwm=1000, linger=0.3) as ours:
            await link(ours, theirs, binds="libzmq", endpoint="tcp://127.0.0.1:*")
            for _ in range(8):  # far more than libzmq and the socket buffers take
                await ours.send(BIG[: 4 << 20])
            started = anyio.current_time()
            await ours.close()
            elapsed = anyio.current_time() - started
        assert 0.25 <= elapsed < 1.5, f"close() took {elapsed:.2f}s with linger=0.3"


async def test_linger_zero_closes_at_once(lz: Libzmq) -> None:
    with anyio.fail_after(TEST_TIMEOUT):
        theirs = lz.socket("PULL", rcvhwm=1)
        theirs_monitor = theirs.monitor()
        async with zmtp.Socket(zmtp.PUSH, linger=0) as ours:
            await link(ours, theirs, binds="zmtp", endpoint="tcp://127.0.0.1:*")
            for _ in range(8):
                await ours.send(BIG[: 4 << 20])
            started = anyio.current_time()
            await ours.close()
            assert anyio.current_time() - started < 0.5
        await theirs_monitor.wait_for("DISCONNECTED", touch=False)
