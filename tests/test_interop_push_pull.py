"""PUSH/PULL against libzmq (pyzmq): zmtp PUSH -> libzmq PULL and libzmq PUSH -> zmtp PULL,
over tcp and ipc, with either side binding."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

import zmtp
from zmtp.interop import (
    Libzmq,
    ZmtpEnd,
    big_payload,
    compare_messages,
    expect_libzmq_saw,
    expect_peer,
    link,
    transfer,
)
from zmtp.testing import bind_endpoint
from zmtp.testing.fixtures import TEST_TIMEOUT, libzmq_env  # noqa: F401
from zmtp.testing.pyzmq_sockets import bind_when_free

pytestmark = [pytest.mark.anyio, pytest.mark.interop]

TRANSPORTS = ["tcp", "ipc"]
BINDERS = ["zmtp", "libzmq"]

PAYLOADS: dict[str, list[list[bytes]]] = {
    "single": [[b"hello"], [b"world"]],
    "multipart": [[b"a", b"bb", b"ccc"], [b"part"] * 32, [b"x" * 300, b"y"]],
    "empty-frames": [[b""], [b"", b""], [b"", b"middle", b""], [b"after empties"]],
    "all-byte-values": [[bytes(range(256))], [bytes(range(255, -1, -1)), b"\x04\x01"]],
    "1MiB": [[big_payload()], [b"small after big"], [b"head", big_payload()]],
    "ordering-10000": [[b"seq", i.to_bytes(4, "big")] for i in range(10_000)],
}


@pytest.mark.parametrize("payload", list(PAYLOADS))
@pytest.mark.parametrize("binds", BINDERS)
@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_zmtp_push_to_libzmq_pull(
    lz: Libzmq, tmp_path: Path, transport: str, binds: str, payload: str
) -> None:
    with anyio.fail_after(TEST_TIMEOUT):
        async with zmtp.Socket(zmtp.PUSH, linger=0) as ours:
            theirs = lz.socket("PULL")
            endpoint = bind_endpoint(transport, tmp_path)
            peer = await link(ours, theirs, binds=binds, endpoint=endpoint)
            expect_peer(peer, "PULL")
            await transfer(ZmtpEnd(ours), theirs, PAYLOADS[payload])
            expect_libzmq_saw(theirs, "PUSH")


@pytest.mark.parametrize("payload", list(PAYLOADS))
@pytest.mark.parametrize("binds", BINDERS)
@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_libzmq_push_to_zmtp_pull(
    lz: Libzmq, tmp_path: Path, transport: str, binds: str, payload: str
) -> None:
    with anyio.fail_after(TEST_TIMEOUT):
        async with zmtp.Socket(zmtp.PULL, linger=0) as ours:
            theirs = lz.socket("PUSH")
            endpoint = bind_endpoint(transport, tmp_path)
            peer = await link(ours, theirs, binds=binds, endpoint=endpoint)
            expect_peer(peer, "PUSH")
            await transfer(theirs, ZmtpEnd(ours), PAYLOADS[payload])


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_messages_queued_before_libzmq_binds(
    lz: Libzmq, tmp_path: Path, transport: str
) -> None:
    """Like libzmq, a connect()ing PUSH queues messages until the peer exists."""
    with anyio.fail_after(TEST_TIMEOUT):
        theirs = lz.socket("PULL")
        if transport == "tcp":
            # Reserve a port: bind, learn it, unbind, and connect to it while nobody listens.
            endpoint = theirs.bind("tcp://127.0.0.1:*")
            theirs.unbind(endpoint)  # asynchronous in libzmq: re-binding below may retry
        else:
            endpoint = f"ipc://{tmp_path}/later.ipc"
        async with zmtp.Socket(zmtp.PUSH, linger=0) as ours:
            monitor = ours.monitor()
            await ours.connect(endpoint)
            messages = [[b"early", i.to_bytes(2, "big")] for i in range(100)]
            await ZmtpEnd(ours).send_many(messages)  # below the HWM: queued, not blocked
            await bind_when_free(theirs, endpoint)
            await monitor.wait_for(zmtp.HandshakeSucceeded)
            compare_messages(messages, await theirs.recv_many(len(messages)))


async def test_zmtp_push_round_robins_over_two_libzmq_pulls(lz: Libzmq) -> None:
    with anyio.fail_after(TEST_TIMEOUT):
        async with zmtp.Socket(zmtp.PUSH, linger=0) as ours:
            monitor = ours.monitor()
            endpoint = await ours.bind("tcp://127.0.0.1:*")
            pulls = [lz.socket("PULL"), lz.socket("PULL")]
            for pull in pulls:
                pull.connect(endpoint)
            for _ in pulls:
                await monitor.wait_for(zmtp.HandshakeSucceeded)
            messages = [[i.to_bytes(2, "big")] for i in range(100)]
            await ZmtpEnd(ours).send_many(messages)
            first = await pulls[0].recv_many(50)
            second = await pulls[1].recv_many(50)
            # Strict alternation: each PULL got every other message, in order.
            assert sorted([first, second]) == sorted([messages[0::2], messages[1::2]])


async def test_zmtp_pull_fair_queues_two_libzmq_pushes(lz: Libzmq) -> None:
    with anyio.fail_after(TEST_TIMEOUT):
        async with zmtp.Socket(zmtp.PULL, linger=0) as ours:
            monitor = ours.monitor()
            endpoint = await ours.bind("tcp://127.0.0.1:*")
            pushes = [lz.socket("PUSH"), lz.socket("PUSH")]
            for push in pushes:
                push.connect(endpoint)
            for _ in pushes:
                await monitor.wait_for(zmtp.HandshakeSucceeded)
            batches = [[[name, i.to_bytes(2, "big")] for i in range(500)] for name in (b"a", b"b")]
            for push, batch in zip(pushes, batches, strict=True):
                await push.send_many(batch)
            received = await ZmtpEnd(ours).recv_many(1000)
            for name, batch in zip((b"a", b"b"), batches, strict=True):
                # Every message arrives, and each sender's order is kept.
                compare_messages(batch, [m for m in received if m[0] == name])
