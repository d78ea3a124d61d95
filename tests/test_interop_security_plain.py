"""PLAIN against libzmq 4.3.5 (pyzmq), both roles, right and wrong passwords.

libzmq's PLAIN server needs a ZAP handler (pyzmq's ThreadAuthenticator here) and answers a
wrong password with its malformed ``^RROR`` command, which our client must still read as a
refusal. A libzmq PLAIN client reads our (well-formed) ERROR as an unexpected command: a
protocol failure on its side, which ends the handshake just the same.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import anyio
import pytest

import zmtp
from zmtp.auth import Authenticator
from zmtp.interop import Libzmq, ZmtpEnd, link, transfer
from zmtp.testing.fixtures import TEST_TIMEOUT, libzmq_env  # noqa: F401

pytestmark = [pytest.mark.anyio, pytest.mark.interop]

ENDPOINT = "tcp://127.0.0.1:*"
PASSWORDS = {"admin": "s3cret", "émile": "pässwörd"}


@contextmanager
def libzmq_plain_zap(lz: Libzmq) -> Iterator[None]:
    from zmq.auth.thread import ThreadAuthenticator

    auth = ThreadAuthenticator(lz.context)
    auth.start()
    try:
        auth.configure_plain(domain="*", passwords=PASSWORDS)
        yield
    finally:
        auth.stop()


@pytest.mark.parametrize("user", list(PASSWORDS))
async def test_our_client_right_password(lz: Libzmq, user: str) -> None:
    with libzmq_plain_zap(lz), anyio.fail_after(TEST_TIMEOUT):
        options = {"plain_username": user, "plain_password": PASSWORDS[user]}
        async with zmtp.Socket("PUSH", linger=0, **options) as sock:
            theirs = lz.socket("PULL", plain_server=1)
            peer = await link(sock, theirs, binds="libzmq", endpoint=ENDPOINT)
            assert peer.mechanism == "PLAIN" and peer.socket_type == "PULL"
            await transfer(ZmtpEnd(sock), theirs, [[b"hello"], [b"multi", b"part"]])


async def test_our_client_wrong_password_reads_libzmqs_broken_error(lz: Libzmq) -> None:
    with libzmq_plain_zap(lz), anyio.fail_after(TEST_TIMEOUT):
        options = {"plain_username": "admin", "plain_password": "guess"}
        async with zmtp.Socket("PUSH", linger=0, reconnect_ivl=None, **options) as sock:
            theirs = lz.socket("PULL", plain_server=1)
            their_monitor = theirs.monitor()
            endpoint = theirs.bind(ENDPOINT)
            monitor = sock.monitor()
            await sock.connect(endpoint)
            event = await monitor.wait_for(zmtp.HandshakeFailed)
            assert isinstance(event, zmtp.HandshakeFailed)
            assert event.kind == "peer-error"
            assert event.reason == "peer refused us: 400 (authentication failure)"
            failed = await their_monitor.wait_for("HANDSHAKE_FAILED_AUTH")
            assert failed.value == 400


async def test_our_client_without_a_libzmq_zap_handler_is_dropped(lz: Libzmq) -> None:
    with anyio.fail_after(TEST_TIMEOUT):
        options = {"plain_username": "admin", "plain_password": "s3cret"}
        async with zmtp.Socket("PUSH", linger=0, reconnect_ivl=None, **options) as sock:
            theirs = lz.socket("PULL", plain_server=1)
            endpoint = theirs.bind(ENDPOINT)
            monitor = sock.monitor()
            await sock.connect(endpoint)
            event = await monitor.wait_for(zmtp.HandshakeFailed)
            assert isinstance(event, zmtp.HandshakeFailed) and event.kind == "closed"


def our_server_auth() -> Authenticator:
    auth = Authenticator()
    auth.configure_plain(PASSWORDS)
    return auth


@pytest.mark.parametrize("user", list(PASSWORDS))
async def test_libzmq_client_right_password(lz: Libzmq, user: str) -> None:
    with anyio.fail_after(TEST_TIMEOUT):
        async with zmtp.Socket("PULL", linger=0, plain_server=True) as sock:
            sock.authenticator = our_server_auth()
            theirs = lz.socket(
                "PUSH",
                plain_username=user.encode(),
                plain_password=PASSWORDS[user].encode(),
            )
            peer = await link(sock, theirs, binds="zmtp", endpoint=ENDPOINT)
            assert peer.mechanism == "PLAIN" and peer.user_id == user
            await transfer(theirs, ZmtpEnd(sock), [[b"in clear, but authenticated"]])


async def test_libzmq_client_wrong_password(lz: Libzmq) -> None:
    with anyio.fail_after(TEST_TIMEOUT):
        async with zmtp.Socket("PULL", linger=0, plain_server=True) as sock:
            sock.authenticator = our_server_auth()
            monitor = sock.monitor()
            endpoint = await sock.bind(ENDPOINT)
            theirs = lz.socket("PUSH", plain_username=b"admin", plain_password=b"guess")
            their_monitor = theirs.monitor()
            theirs.connect(endpoint)
            event = await monitor.wait_for(zmtp.HandshakeFailed)
            assert isinstance(event, zmtp.HandshakeFailed)
            assert event.kind == "rejected" and "invalid user name or password" in event.reason
            failed = await their_monitor.wait_for(
                ("HANDSHAKE_FAILED_PROTOCOL", "HANDSHAKE_FAILED_AUTH")
            )
            assert failed.name.startswith("HANDSHAKE_FAILED")
            assert sock.peers == []
