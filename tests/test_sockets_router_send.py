"""ROUTER's send path (``Router.try_send``): what its fast path must keep. The routing-id
frame is dropped from the socket's own copy of the message only once the message is queued,
so a send that waits (``router_mandatory`` at the HWM) and one that fails leave the message
whole; the application's list is never changed; errors come in libzmq's order."""

from __future__ import annotations

import pytest

import zmtp
from zmtp.testing import linked, recv_within

pytestmark = pytest.mark.anyio

TRANSPORTS = ["tcp", "inproc"]


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_multipart_bodies_and_the_callers_list(transport: str) -> None:
    async with linked("ROUTER", "DEALER", transport, connect_options={"identity": b"d"}) as (
        router,
        dealer,
    ):
        message = [b"d", b"a", b"", b"c"]
        await router.send_multipart(message)
        await router.send_multipart(message)  # the same list again: unchanged by the first
        await router.send_prepared([b"d", b"prepared"])
        await router.send_multipart(part for part in [b"d", bytearray(b"gen")])
        assert message == [b"d", b"a", b"", b"c"]
        assert await recv_within(dealer) == [b"a", b"", b"c"]
        assert await recv_within(dealer) == [b"a", b"", b"c"]
        assert await recv_within(dealer) == [b"prepared"]
        assert await recv_within(dealer) == [b"gen"]


async def test_errors_leave_the_message_and_the_order_of_checks() -> None:
    async with linked(
        "ROUTER",
        "DEALER",
        "tcp",
        bind_options={"router_mandatory": True},
        connect_options={"identity": b"d"},
    ) as (router, dealer):
        # A lone frame is a usage error even when it names a known peer, and before the
        # unknown-peer check (libzmq: EINVAL ahead of EHOSTUNREACH).
        for lone in ([b"d"], [b"nobody"]):
            with pytest.raises(ValueError, match="at least two parts"):
                await router.send_multipart(lone)
        prepared = [b"nobody", b"x"]
        with pytest.raises(zmtp.HostUnreachable, match="nobody"):
            await router.send_prepared(prepared)
        assert prepared == [b"nobody", b"x"]
        with pytest.raises(TypeError):
            await router.send_multipart([b"d", 5])
        await router.send_multipart([b"d", "str", memoryview(b"mv")])
        assert await recv_within(dealer) == [b"str", b"mv"]
