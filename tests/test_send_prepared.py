"""``Socket.send_prepared`` (the extension point QoS sends through): it batches like
``send_multipart`` and keeps its cancel guarantee.

A regression test: ``send_prepared`` used to yield to the scheduler after every message, so the
connection's writer woke up and wrote each message with a syscall of its own (QoS 1 ran at
~17 k msgs/s against ~1 M for a plain socket). It must queue a burst without yielding, and the
writer then takes the burst in a few writes.
"""

from __future__ import annotations

import anyio
import pytest

import zmtp
from tests import test_engine_helpers as helpers
from tests.test_engine_helpers import TIMEOUT, linked

pytestmark = pytest.mark.anyio

stream_endpoint = helpers.stream_endpoint  # fixture
stream_transport = helpers.stream_transport  # fixture

BURST = 200  # below the socket's yield interval (256 calls), above its cancel check (16)


async def test_a_burst_of_send_prepared_is_written_in_few_writes(stream_endpoint: str) -> None:
    async with linked(zmtp.PULL, zmtp.PUSH, stream_endpoint) as link:
        core = link.connector.engine
        written = core.written
        writes = 0

        def counting_written() -> None:  # every connection write ends in written()
            nonlocal writes
            writes += 1
            written()

        core.written = counting_written  # type: ignore[method-assign]
        for i in range(BURST):
            await link.connector.send_prepared([b"m%d" % i])
        with anyio.fail_after(TIMEOUT):
            got = [await link.binder.recv() for _ in range(BURST)]
        assert got == [b"m%d" % i for i in range(BURST)]
        # One write per message before the fix; the writer now takes the burst at once (a
        # write that the kernel takes only in part may add one or two).
        assert writes <= 3, writes


async def test_send_prepared_cancelled_queues_all_or_nothing(stream_endpoint: str) -> None:
    """A cancel is seen before a message is queued, never after: every call that returned
    queued its message, every call that raised queued nothing."""
    async with linked(zmtp.PULL, zmtp.PUSH, stream_endpoint) as link:
        returned: list[bytes] = []
        with anyio.CancelScope() as scope:
            scope.cancel()
            for i in range(BURST):
                message = b"c%d" % i
                await link.connector.send_prepared([message])
                returned.append(message)
        assert scope.cancelled_caught
        assert 0 < len(returned) < BURST  # the cancel was seen mid-burst, at a check
        await link.connector.send_prepared([b"marker"])
        with anyio.fail_after(TIMEOUT):
            got = [await link.binder.recv() for _ in range(len(returned) + 1)]
        assert got == [*returned, b"marker"]


async def test_send_prepared_refuses_what_it_cannot_send_as_is() -> None:
    async with zmtp.Socket(zmtp.PUSH, linger=0) as push:
        for bad in ([], [b"a", bytearray(b"b")], ["text"]):
            with pytest.raises(zmtp.WrongType):
                await push.send_prepared(bad)  # type: ignore[arg-type]


async def test_try_send_prepared_keeps_send_prepareds_cancel_cadence(stream_endpoint: str) -> None:
    """``try_send_prepared`` (QoS's synchronous first try) declines at the calls where
    ``send_prepared`` checks for a cancel, so a caller that falls back to ``send_prepared``
    sees a cancel as soon as before: within 16 messages, nothing lost, nothing twice."""
    async with linked(zmtp.PULL, zmtp.PUSH, stream_endpoint) as link:
        sock = link.connector
        returned: list[bytes] = []
        declined = 0
        with anyio.CancelScope() as scope:
            scope.cancel()
            for i in range(BURST):
                message = b"t%d" % i
                if not sock.try_send_prepared([message]):
                    declined += 1
                    await sock.send_prepared([message])
                returned.append(message)
        assert scope.cancelled_caught
        assert 0 < len(returned) < 16  # the first cancel check, as send_prepared alone
        assert declined == 1
        await sock.send_prepared([b"marker"])
        with anyio.fail_after(TIMEOUT):
            got = [await link.binder.recv() for _ in range(len(returned) + 1)]
        assert got == [*returned, b"marker"]


async def test_try_send_prepared_declines_what_send_prepared_must_handle() -> None:
    async with zmtp.Socket(zmtp.PUSH, linger=0) as push:
        assert not push.try_send_prepared([b"no peer yet"])  # send_prepared would wait
        for bad in ([], [b"a", bytearray(b"b")], ["text"]):
            assert not push.try_send_prepared(bad)  # type: ignore[arg-type]
    assert not push.try_send_prepared([b"closed"])
