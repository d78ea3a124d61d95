"""``readable()`` while a ``recv`` waits in another task: the message it sets aside goes to that
waiting ``recv`` (regression: the waiting recv looked at the set-aside message only when it
started, so it waited on for a next message; ``steerable_proxy``'s pause test saw it as a
request that never reached the backend when the test polled ``readable()`` while the proxy's
forwarder was blocked in ``recv_multipart``)."""

from __future__ import annotations

from collections.abc import Iterator

import anyio
import pytest
import zmq

import zmtp

pytestmark = pytest.mark.anyio


@pytest.fixture
def ctx() -> Iterator[zmq.Context[zmq.Socket[bytes]]]:
    context: zmq.Context[zmq.Socket[bytes]] = zmq.Context()
    yield context
    context.destroy(linger=0)


@pytest.mark.parametrize("multipart", [False, True])
async def test_a_waiting_recv_gets_what_readable_set_aside(multipart: bool) -> None:
    message = [b"first", b"second"] if multipart else [b"only"]
    with anyio.fail_after(10):
        async with zmtp.Socket(zmtp.PAIR) as sender, zmtp.Socket(zmtp.PAIR) as receiver:
            await receiver.bind("inproc://readable-while-waiting")
            await sender.connect("inproc://readable-while-waiting")
            got: list[list[bytes]] = []

            async def waiting_recv() -> None:
                if multipart:
                    got.append(await receiver.recv_multipart())
                else:
                    got.append([await receiver.recv()])

            with anyio.fail_after(5):  # before the fix: the recv waited on for a next one
                async with anyio.create_task_group() as tg:
                    tg.start_soon(waiting_recv)
                    await anyio.wait_all_tasks_blocked()  # the recv is waiting now
                    # An inproc send puts the message in the receiver's inbox and wakes the
                    # recv, which has not run yet when readable() takes the message aside.
                    await sender.send_multipart(message)
                    assert receiver.readable()
            assert got == [message]
            assert not receiver.readable()  # handed out once, not twice


async def test_polling_beside_a_receiving_task_loses_nothing(
    ctx: zmq.Context[zmq.Socket[bytes]],
) -> None:
    """A poller task calling readable() while another task receives over tcp from libzmq:
    every message reaches the receiving task, once and in order."""
    count = 2_000
    with anyio.fail_after(30):
        async with zmtp.Socket(zmtp.PULL) as pull:
            push = ctx.socket(zmq.PUSH)
            push.setsockopt(zmq.LINGER, 0)
            push.connect(await pull.bind("tcp://127.0.0.1:*"))
            received: list[bytes] = []
            done = anyio.Event()

            async def receive() -> None:
                while len(received) < count:
                    received.append(await pull.recv())
                done.set()

            async def poll() -> None:
                while not done.is_set():
                    pull.readable()
                    await anyio.lowlevel.checkpoint()

            async with anyio.create_task_group() as tg:
                tg.start_soon(receive)
                tg.start_soon(poll)

                def flood() -> None:
                    for i in range(count):
                        push.send(b"%d" % i)

                await anyio.to_thread.run_sync(flood)
                await done.wait()
            push.close()
    assert received == [b"%d" % i for i in range(count)]
