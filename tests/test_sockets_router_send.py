"""ROUTER's send path (``Router.try_send``): the routing-id frame is taken off the socket's
own copy of the message, so multipart bodies arrive whole and the application's list (or
iterable) is never changed. A send that waits at the HWM and the order of its errors are
checked in tests/test_sockets_reqrep.py."""

from __future__ import annotations

import pytest

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
