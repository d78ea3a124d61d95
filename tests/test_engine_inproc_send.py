"""``Pipe.send_is_put``: the load balancer (PUSH, DEALER...) and ROUTER append to the outbox
themselves when a pipe's ``send`` is its outbox's ``put``. These check that the flag follows
``send`` through an inproc link's life (queued before the bind, linked, linked to a receiver
with its own receive hook, unlinked) and that the inlined append wakes a blocked receiver as
``put`` does."""

from __future__ import annotations

import anyio
import pytest

import zmtp
from zmtp.engine.pipe import Pipe
from zmtp.testing import TIMEOUT, linked, recv_within

pytestmark = pytest.mark.anyio


def only_pipe(sock: zmtp.Socket) -> Pipe:
    (pipe,) = sock.engine.pipes
    return pipe


async def test_the_flag_follows_send_through_a_links_life() -> None:
    async with zmtp.Socket(zmtp.PUSH, linger=0) as push:
        await push.connect("inproc://send-is-put")
        pipe = only_pipe(push)
        assert pipe.send_is_put  # no peer yet: queued in its own outbox
        await push.send(b"early")
        async with zmtp.Socket(zmtp.PULL, linger=0) as pull:
            await pull.bind("inproc://send-is-put")
            assert pipe.send_is_put  # a plain PULL: the peer's inbox is our outbox
            await push.send(b"linked")
            assert [await recv_within(pull), await recv_within(pull)] == [[b"early"], [b"linked"]]
            await pull.unbind("inproc://send-is-put")
            assert pipe.send_is_put  # queued here again
            await push.send(b"later")
        async with zmtp.Socket(zmtp.PULL, linger=0, conflate=True) as conflating:
            await conflating.bind("inproc://send-is-put")
            assert not pipe.send_is_put  # the receiver's own incoming_one must run
            await push.send(b"newest")
            assert await recv_within(conflating) == [b"newest"]


@pytest.mark.parametrize(
    ("bind_type", "connect_type", "message", "expected"),
    [
        ("PULL", "PUSH", [b"m"], [b"m"]),
        ("DEALER", "ROUTER", [b"d", b"m"], [b"m"]),
    ],
)
async def test_an_inlined_append_wakes_a_blocked_receiver(
    bind_type: str, connect_type: str, message: list[bytes], expected: list[bytes]
) -> None:
    async with linked(bind_type, connect_type, "inproc", bind_options={"identity": b"d"}) as (
        receiver,
        sender,
    ):
        assert only_pipe(sender).send_is_put
        got: list[list[bytes]] = []

        async def receive() -> None:
            got.append(await receiver.recv_multipart())

        with anyio.fail_after(TIMEOUT):
            async with anyio.create_task_group() as tg:
                tg.start_soon(receive)
                await anyio.wait_all_tasks_blocked()
                await sender.send_multipart(message)
        assert got == [expected]


async def test_router_to_a_conflating_dealer_over_inproc_keeps_the_newest() -> None:
    async with linked(
        "DEALER", "ROUTER", "inproc", bind_options={"identity": b"d", "conflate": True}
    ) as (dealer, router):
        assert not only_pipe(router).send_is_put
        for body in (b"1", b"2", b"3"):
            await router.send_multipart([b"d", body])
        assert await recv_within(dealer) == [b"3"]
