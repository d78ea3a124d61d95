"""Issue 14, finding 6: what an XPUB holds for an application that does not read.

An XSUB peer sends 1 000 000 upstream messages while the XPUB application reads none: the XPUB
holds at most about ``recv_hwm`` deliveries plus ``recv_hwm`` unprocessed messages for that peer
(then stops reading it: the peer's sends block), so memory stays flat; once the application
reads, every message arrives, in order, and subscriptions sent meanwhile are applied.
"""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest
from anyio.abc import ByteStream

import zmtp
from tests.test_engine_helpers import TIMEOUT
from zmtp.testing import wire

pytestmark = pytest.mark.anyio

TOTAL = 1_000_000
CHUNK = 10_000  #: messages per write


def rss_mib() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * 4096 / 2**20


def chunk(start: int) -> bytes:
    """Messages start..start+CHUNK-1, each one short frame ``b"m<number>"``."""
    out = []
    for i in range(start, start + CHUNK):
        body = b"m%d" % i
        out.append(bytes((0, len(body))) + body)
    return b"".join(out)


async def raw_xsub(endpoint: str) -> ByteStream:
    if endpoint.startswith("tcp://"):
        host, port = endpoint.removeprefix("tcp://").rsplit(":", 1)
        stream: ByteStream = await anyio.connect_tcp(host, int(port))
    else:
        stream = await anyio.connect_unix(endpoint.removeprefix("ipc://"))
    await stream.send(wire.NULL_GREETING + wire.ready_command("XSUB"))
    return stream


@pytest.mark.parametrize("transport", ["tcp", "ipc"])
async def test_xpub_holds_a_bounded_amount_for_an_application_that_does_not_read(
    transport: str, tmp_path: Path
) -> None:
    bind = "tcp://127.0.0.1:*" if transport == "tcp" else f"ipc://{tmp_path / 'x.sock'}"
    async with zmtp.Socket(zmtp.XPUB, recv_hwm=1000) as xpub:
        monitor = xpub.monitor()
        stream = await raw_xsub(await xpub.bind(bind))
        with anyio.fail_after(TIMEOUT):
            await monitor.wait_for(zmtp.HandshakeSucceeded)
        rss_before = rss_mib()
        sent = 0
        blocked = False
        async with anyio.create_task_group() as tg:

            async def send_all() -> None:
                nonlocal sent
                for start in range(0, TOTAL, CHUNK):
                    await stream.send(chunk(start))
                    sent = start + CHUNK
                # A subscription after the flood: applied once the application has read.
                await stream.send(wire.command(b"SUBSCRIBE", b"topic"))

            tg.start_soon(send_all)
            # Phase 1: the application reads nothing. The XPUB must stop reading the peer
            # (its sends block) long before a million messages are in.
            with anyio.move_on_after(60):
                last, still = -1, 0
                while sent < TOTAL:
                    await anyio.sleep(0.2)
                    still = still + 1 if sent == last else 0
                    last = sent
                    if still >= 5:  # no progress for 1 s
                        blocked = True
                        break
            grown = rss_mib() - rss_before
            assert blocked, f"the XPUB read all {sent} messages for an application not reading"
            assert grown < 64, f"{grown:.0f} MiB held for {sent} unread messages"
            # Phase 2: the application reads; nothing was lost, in order.
            with anyio.fail_after(300):
                for i in range(TOTAL):
                    message = await xpub.recv()
                    assert message == b"m%d" % i, (i, message)
                assert await xpub.recv() == b"\x01topic"
        await xpub.send(b"topic: applied")  # the late subscription is live
        with anyio.fail_after(TIMEOUT):
            received = b""
            while b"topic: applied" not in received:
                received += await stream.receive()
        await stream.aclose()
