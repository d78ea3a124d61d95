"""CURVE against libzmq 4.3.5 (pyzmq): our client with a libzmq server and a libzmq client with
our server, for every classic socket pattern, plus heartbeats, 1 MiB messages, wrong keys and
authentication on either side (libzmq's ZAP via ThreadAuthenticator, our Authenticator)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import anyio
import pytest

import zmtp
from zmtp.auth import Authenticator
from zmtp.crypto import decode_key
from zmtp.interop import Libzmq, LibzmqSocket, ZmtpEnd, big_payload, link, transfer
from zmtp.testing.fixtures import TEST_TIMEOUT, libzmq_env  # noqa: F401

pytestmark = [pytest.mark.anyio, pytest.mark.interop]

zmq = pytest.importorskip("zmq")
if not zmq.has("curve"):  # pragma: no cover - pyzmq wheels are built with libsodium
    pytest.skip("this libzmq has no CURVE", allow_module_level=True)

SERVER_PUBLIC, SERVER_SECRET = (k.decode() for k in zmq.curve_keypair())
CLIENT_PUBLIC, CLIENT_SECRET = (k.decode() for k in zmq.curve_keypair())
OTHER_PUBLIC, OTHER_SECRET = (k.decode() for k in zmq.curve_keypair())
ENDPOINT = "tcp://127.0.0.1:*"

#: Socket patterns (first type sends first) and whose side is ours.
PATTERNS = [("PUSH", "PULL"), ("REQ", "REP"), ("DEALER", "ROUTER"), ("PUB", "SUB")]
OURS = ["first", "second"]
ROLES = ["zmtp-server", "zmtp-client"]


def our_options(server: bool, client_secret: str = CLIENT_SECRET, **extra: Any) -> dict[str, Any]:
    if server:
        return {"curve_server": True, "curve_secretkey": SERVER_SECRET, **extra}
    return {"curve_serverkey": SERVER_PUBLIC, "curve_secretkey": client_secret, **extra}


def their_options(
    server: bool, client_public: str = CLIENT_PUBLIC, client_secret: str = CLIENT_SECRET
) -> dict[str, Any]:
    if server:
        return {"curve_server": 1, "curve_secretkey": SERVER_SECRET.encode()}
    return {
        "curve_serverkey": SERVER_PUBLIC.encode(),
        "curve_publickey": client_public.encode(),
        "curve_secretkey": client_secret.encode(),
    }


async def exchange(first: Any, second: Any, socket_types: tuple[str, str]) -> None:
    """One round of the pattern between ``first`` and ``second`` (each ZmtpEnd or libzmq)."""
    kind = socket_types[0]
    if kind == "PUSH":
        await transfer(first, second, [[b"hello"], [b"multi", b"part"], [big_payload()]])
    elif kind == "REQ":
        await transfer(first, second, [[b"request"]])
        await transfer(second, first, [[b"reply"]])
    elif kind == "DEALER":
        await first.send_many([[b"from dealer", big_payload()]])
        (routed,) = await second.recv_many(1)
        assert routed[1:] == [b"from dealer", big_payload()]
        await second.send_many([[routed[0], b"from router"]])
        assert await first.recv_many(1) == [[b"from router"]]
    else:  # PUB -> SUB: resend until the (encrypted) subscription has arrived
        with anyio.fail_after(TEST_TIMEOUT / 2):
            while True:
                await first.send_many([[b"topic", b"payload"], [b"other", b"dropped"]])
                try:
                    got = await second.recv_many(1, timeout=0.1)
                except TimeoutError:
                    continue
                assert got == [[b"topic", b"payload"]]
                break


@pytest.mark.parametrize("role", ROLES)
@pytest.mark.parametrize("ours", OURS)
@pytest.mark.parametrize("pattern", PATTERNS, ids=["->".join(p) for p in PATTERNS])
async def test_curve_patterns(lz: Libzmq, pattern: tuple[str, str], ours: str, role: str) -> None:
    """The CURVE server binds; our socket is the pattern's ``ours`` side."""
    our_type, their_type = pattern if ours == "first" else pattern[::-1]
    we_serve = role == "zmtp-server"
    with anyio.fail_after(TEST_TIMEOUT):
        async with zmtp.Socket(our_type, linger=0, **our_options(we_serve)) as sock:
            extra = {"subscribe": b"topic"} if their_type == "SUB" else {}
            theirs = lz.socket(their_type, **their_options(not we_serve), **extra)
            if our_type == "SUB":
                sock.subscribe(b"topic")
            peer = await link(
                sock, theirs, binds="zmtp" if we_serve else "libzmq", endpoint=ENDPOINT
            )
            assert peer.mechanism == "CURVE" and peer.socket_type == their_type
            expected_key = CLIENT_PUBLIC if we_serve else SERVER_PUBLIC
            assert peer.curve_public_key == decode_key(expected_key)
            mine = ZmtpEnd(sock)
            first, second = (mine, theirs) if ours == "first" else (theirs, mine)
            await exchange(first, second, pattern)


@pytest.mark.parametrize("role", ROLES)
async def test_heartbeats_inside_curve(lz: Libzmq, role: str) -> None:
    """Both sides PING every 50 ms and give up after 300 ms of silence: if a PING or PONG did
    not survive the MESSAGE wrapping, one side would drop the connection."""
    we_serve = role == "zmtp-server"
    beats = {"heartbeat_ivl": 0.05, "heartbeat_timeout": 0.3, "heartbeat_ttl": 0.5}
    with anyio.fail_after(TEST_TIMEOUT):
        async with zmtp.Socket("PULL", linger=0, **our_options(we_serve, **beats)) as sock:
            theirs = lz.socket(
                "PUSH",
                heartbeat_ivl=50,
                heartbeat_timeout=300,
                heartbeat_ttl=500,
                **their_options(not we_serve),
            )
            await link(sock, theirs, binds="zmtp" if we_serve else "libzmq", endpoint=ENDPOINT)
            monitor = sock.monitor()
            events = await theirs.monitor().events_within(1.0)
            assert not [e for e in events if e.name == "DISCONNECTED"], events
            with anyio.move_on_after(0.01):
                event = await monitor.wait_for(zmtp.Disconnected)
                pytest.fail(f"our side dropped the connection: {event}")
            await transfer(theirs, ZmtpEnd(sock), [[b"alive after idling"]])


async def test_our_client_with_the_wrong_server_key(lz: Libzmq) -> None:
    theirs = lz.socket("PULL", **their_options(True))
    their_monitor = theirs.monitor()
    endpoint = theirs.bind(ENDPOINT)
    wrong = {"curve_serverkey": OTHER_PUBLIC, "curve_secretkey": CLIENT_SECRET}
    with anyio.fail_after(TEST_TIMEOUT):
        async with zmtp.Socket("PUSH", linger=0, reconnect_ivl=None, **wrong) as sock:
            monitor = sock.monitor()
            await sock.connect(endpoint)
            event = await monitor.wait_for(zmtp.HandshakeFailed)
            assert isinstance(event, zmtp.HandshakeFailed)
            assert event.kind == "closed"  # libzmq closes without ERROR
            assert "during the CURVE handshake: check curve_serverkey" in event.reason
            failed = await their_monitor.wait_for("HANDSHAKE_FAILED_PROTOCOL")
            assert failed.name == "HANDSHAKE_FAILED_PROTOCOL"


async def test_libzmq_client_with_the_wrong_server_key(lz: Libzmq) -> None:
    with anyio.fail_after(TEST_TIMEOUT):
        async with zmtp.Socket("PULL", linger=0, **our_options(True)) as sock:
            monitor = sock.monitor()
            endpoint = await sock.bind(ENDPOINT)
            theirs = lz.socket(
                "PUSH",
                curve_serverkey=OTHER_PUBLIC.encode(),
                curve_publickey=CLIENT_PUBLIC.encode(),
                curve_secretkey=CLIENT_SECRET.encode(),
            )
            theirs.connect(endpoint)
            event = await monitor.wait_for(zmtp.HandshakeFailed)
            assert isinstance(event, zmtp.HandshakeFailed)
            assert "HELLO: box failed to open" in event.reason


# ------------------------------------------------------------------ libzmq's ZAP decides


@contextmanager
def zap_authenticator(lz: Libzmq, allowed: str) -> Iterator[None]:
    """pyzmq's ThreadAuthenticator on the libzmq context, accepting one CURVE key."""
    from zmq.auth.thread import ThreadAuthenticator

    class Keys:
        def callback(self, domain: str, key: bytes) -> bool:
            return key == allowed.encode()

    auth = ThreadAuthenticator(lz.context)
    auth.start()
    try:
        auth.configure_curve_callback(domain="*", credentials_provider=Keys())
        yield
    finally:
        auth.stop()


@pytest.mark.parametrize("allowed", [True, False], ids=["accepted", "denied"])
async def test_libzmq_zap_decides_on_our_client(lz: Libzmq, allowed: bool) -> None:
    with zap_authenticator(lz, CLIENT_PUBLIC if allowed else OTHER_PUBLIC):
        theirs = lz.socket("PULL", **their_options(True))
        their_monitor = theirs.monitor()
        endpoint = theirs.bind(ENDPOINT)
        with anyio.fail_after(TEST_TIMEOUT):
            async with zmtp.Socket(
                "PUSH", linger=0, reconnect_ivl=None, **our_options(False)
            ) as sock:
                monitor = sock.monitor()
                await sock.connect(endpoint)
                event = await monitor.wait_for((zmtp.HandshakeSucceeded, zmtp.HandshakeFailed))
                if allowed:
                    assert isinstance(event, zmtp.HandshakeSucceeded), event
                    await transfer(ZmtpEnd(sock), theirs, [[b"authorised"]])
                else:
                    assert isinstance(event, zmtp.HandshakeFailed)
                    assert event.kind == "peer-error"
                    assert event.reason == "peer refused us: 400 (authentication failure)"
                    auth_failed = await their_monitor.wait_for("HANDSHAKE_FAILED_AUTH")
                    assert auth_failed.value == 400


# ------------------------------------------------------------------ our Authenticator decides


@pytest.mark.parametrize("allowed", [True, False], ids=["accepted", "denied"])
async def test_our_authenticator_decides_on_a_libzmq_client(lz: Libzmq, allowed: bool) -> None:
    auth = Authenticator()
    auth.configure_curve(keys=[CLIENT_PUBLIC])
    client_public, client_secret = (
        (CLIENT_PUBLIC, CLIENT_SECRET) if allowed else (OTHER_PUBLIC, OTHER_SECRET)
    )
    with anyio.fail_after(TEST_TIMEOUT):
        async with zmtp.Socket("PULL", linger=0, **our_options(True)) as sock:
            sock.authenticator = auth
            monitor = sock.monitor()
            endpoint = await sock.bind(ENDPOINT)
            theirs: LibzmqSocket = lz.socket(
                "PUSH", **their_options(False, client_public, client_secret)
            )
            their_monitor = theirs.monitor()
            theirs.connect(endpoint)
            event = await monitor.wait_for((zmtp.HandshakeSucceeded, zmtp.HandshakeFailed))
            if allowed:
                assert isinstance(event, zmtp.HandshakeSucceeded), event
                assert event.peer.user_id == CLIENT_PUBLIC
                assert event.peer.curve_public_key == decode_key(CLIENT_PUBLIC)
                await transfer(theirs, ZmtpEnd(sock), [[b"welcome"]])
            else:
                assert isinstance(event, zmtp.HandshakeFailed)
                assert event.kind == "rejected"
                assert "unknown CURVE client key" in event.reason
                auth_failed = await their_monitor.wait_for("HANDSHAKE_FAILED_AUTH")
                assert auth_failed.value == 400  # libzmq parsed our ERROR "400"


@pytest.mark.parametrize("role", ROLES)
async def test_pure_crypto_backend_interoperates(
    lz: Libzmq, role: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The pure-Python XSalsa20 back-end against libsodium, both directions, 1 MiB included."""
    monkeypatch.setenv("ZMTP_CRYPTO_BACKEND", "pure")
    we_serve = role == "zmtp-server"
    with anyio.fail_after(TEST_TIMEOUT):
        async with zmtp.Socket("PAIR", linger=0, **our_options(we_serve)) as sock:
            theirs = lz.socket("PAIR", **their_options(not we_serve))
            binds = "zmtp" if we_serve else "libzmq"
            await link(sock, theirs, binds=binds, endpoint=ENDPOINT)
            messages = [[b"small"], [b"multi", b"part"], [big_payload()]]
            await transfer(ZmtpEnd(sock), theirs, messages)
            await transfer(theirs, ZmtpEnd(sock), messages)
