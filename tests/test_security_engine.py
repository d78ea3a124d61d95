"""CURVE / PLAIN / authentication between our own sockets over tcp, on asyncio and trio."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import pytest

import zmtp
from zmtp.auth import ZAP_ENDPOINT, Authenticator, AuthRequest, AuthResult, serve_zap
from zmtp.crypto import curve_keypair, decode_key, z85_encode

pytestmark = pytest.mark.anyio

TIMEOUT = 10.0
SERVER_PUBLIC, SERVER_SECRET = curve_keypair()
CLIENT_PUBLIC, CLIENT_SECRET = curve_keypair()
OTHER_PUBLIC, OTHER_SECRET = curve_keypair()

Outcome = zmtp.HandshakeSucceeded | zmtp.HandshakeFailed


def curve_server_options(**extra: Any) -> dict[str, Any]:
    return {"curve_server": True, "curve_secretkey": SERVER_SECRET, **extra}


def curve_client_options(secret: str = CLIENT_SECRET, **extra: Any) -> dict[str, Any]:
    return {"curve_serverkey": SERVER_PUBLIC, "curve_secretkey": secret, **extra}


async def outcome(monitor: zmtp.Monitor) -> Outcome:
    event = await monitor.wait_for((zmtp.HandshakeSucceeded, zmtp.HandshakeFailed))
    assert isinstance(event, (zmtp.HandshakeSucceeded, zmtp.HandshakeFailed))
    return event


@asynccontextmanager
async def pair(
    server_type: str,
    client_type: str,
    server_options: dict[str, Any],
    client_options: dict[str, Any],
    authenticator: Any = None,
) -> AsyncIterator[tuple[zmtp.Socket, zmtp.Socket, Outcome, Outcome]]:
    """A bound server and a connected client; yields both and each side's first outcome."""
    with anyio.fail_after(TIMEOUT):
        async with (
            zmtp.Socket(server_type, linger=0, **server_options) as server,
            zmtp.Socket(client_type, linger=0, reconnect_ivl=None, **client_options) as client,
        ):
            if authenticator is not None:
                server.authenticator = authenticator
            server_monitor, client_monitor = server.monitor(), client.monitor()
            endpoint = await server.bind("tcp://127.0.0.1:*")
            await client.connect(endpoint)
            yield server, client, await outcome(server_monitor), await outcome(client_monitor)


def succeeded(event: Outcome) -> zmtp.PeerInfo:
    assert isinstance(event, zmtp.HandshakeSucceeded), event
    return event.peer


def failed(event: Outcome, kind: str) -> str:
    assert isinstance(event, zmtp.HandshakeFailed), event
    assert event.kind == kind, event
    return event.reason


# ------------------------------------------------------------------ CURVE


async def test_curve_push_pull_with_large_messages() -> None:
    async with pair("PULL", "PUSH", curve_server_options(), curve_client_options()) as (
        pull,
        push,
        at_server,
        at_client,
    ):
        peer = succeeded(at_server)
        assert peer.mechanism == "CURVE" and peer.socket_type == "PUSH"
        assert peer.curve_public_key == decode_key(CLIENT_PUBLIC)
        assert peer.user_id == ""  # no authenticator: libzmq's allow-any, no user id
        assert succeeded(at_client).curve_public_key == decode_key(SERVER_PUBLIC)
        big = bytes(range(256)) * 4096  # 1 MiB
        messages = [[b"small"], [b"multi", b"part", b""], [big], [b"tail", big]]
        for message in messages:
            await push.send_multipart(message)
        for message in messages:
            assert await pull.recv_multipart() == message


async def test_curve_dealer_router_both_ways() -> None:
    async with pair(
        "ROUTER",
        "DEALER",
        curve_server_options(),
        curve_client_options(identity=b"dealer-1"),
    ) as (router, dealer, at_server, _):
        assert succeeded(at_server).identity == b"dealer-1"
        await dealer.send_multipart([b"hello", b"router"])
        assert await router.recv_multipart() == [b"dealer-1", b"hello", b"router"]
        await router.send_multipart([b"dealer-1", b"hi"])
        assert await dealer.recv_multipart() == [b"hi"]


async def test_curve_req_rep() -> None:
    async with pair("REP", "REQ", curve_server_options(), curve_client_options()) as (
        rep,
        req,
        _,
        _,
    ):
        for i in range(3):
            await req.send(b"ping %d" % i)
            assert await rep.recv() == b"ping %d" % i
            await rep.send(b"pong %d" % i)
            assert await req.recv() == b"pong %d" % i


async def test_curve_pub_sub_subscriptions_are_encrypted_commands() -> None:
    async with pair("PUB", "SUB", curve_server_options(), curve_client_options()) as (
        pub,
        sub,
        _,
        _,
    ):
        sub.subscribe(b"news")
        with anyio.fail_after(TIMEOUT):
            while True:  # the SUBSCRIBE reaches the PUB asynchronously
                await pub.send_multipart([b"news", b"flash"])
                await pub.send_multipart([b"sports", b"score"])
                with anyio.move_on_after(0.05):
                    assert await sub.recv_multipart() == [b"news", b"flash"]
                    break


async def test_curve_heartbeats_keep_an_idle_connection_alive() -> None:
    beats = {"heartbeat_ivl": 0.05, "heartbeat_timeout": 0.3}
    async with pair(
        "PULL", "PUSH", curve_server_options(**beats), curve_client_options(**beats)
    ) as (pull, push, _, _):
        monitor = pull.monitor()
        with anyio.move_on_after(0.6):
            event = await monitor.wait_for(zmtp.Disconnected)
            pytest.fail(f"heartbeats inside CURVE failed: {event}")
        await push.send(b"still here")
        assert await pull.recv() == b"still here"


async def test_curve_wrong_server_key_is_refused() -> None:
    wrong = {"curve_serverkey": OTHER_PUBLIC, "curve_secretkey": CLIENT_SECRET}
    async with pair("PULL", "PUSH", curve_server_options(), wrong) as (_, _, at_server, at_client):
        assert "HELLO: box failed to open" in failed(at_server, "protocol")
        # libzmq too just closes; regression: the reason said only "connection closed by
        # peer", naming no cause
        assert "check curve_serverkey" in failed(at_client, "closed")


async def test_curve_authenticator_allows_listed_keys() -> None:
    auth = Authenticator()
    auth.configure_curve(keys=[CLIENT_PUBLIC])
    async with pair("PULL", "PUSH", curve_server_options(), curve_client_options(), auth) as (
        pull,
        push,
        at_server,
        _,
    ):
        peer = succeeded(at_server)
        assert peer.user_id == CLIENT_PUBLIC  # pyzmq's convention: the Z85 key
        assert peer.curve_public_key == decode_key(CLIENT_PUBLIC)
        await push.send(b"ok")
        assert await pull.recv() == b"ok"


async def test_curve_authenticator_refuses_unknown_keys() -> None:
    auth = Authenticator()
    auth.configure_curve(keys=[CLIENT_PUBLIC])
    async with pair(
        "PULL", "PUSH", curve_server_options(), curve_client_options(OTHER_SECRET), auth
    ) as (pull, _, at_server, at_client):
        assert "unknown CURVE client key" in failed(at_server, "rejected")
        assert failed(at_client, "peer-error") == "peer refused us: 400 (authentication failure)"
        assert pull.peers == []


async def test_address_deny_list_refuses_the_peer() -> None:
    auth = Authenticator(deny=["127.0.0.1"])
    auth.configure_curve(allow_any=True)
    async with pair("PULL", "PUSH", curve_server_options(), curve_client_options(), auth) as (
        _,
        _,
        at_server,
        _,
    ):
        assert "address '127.0.0.1' is denied" in failed(at_server, "rejected")


async def test_callback_metadata_reaches_peer_info() -> None:
    async def decide(request: AuthRequest) -> AuthResult:
        await anyio.sleep(0.01)
        assert request.address == "127.0.0.1" and request.domain == "prod"
        return AuthResult.allow("tenant-7", {"X-Tenant": b"7"})

    async with pair(
        "PULL",
        "PUSH",
        curve_server_options(zap_domain="prod"),
        curve_client_options(),
        Authenticator(callback=decide),
    ) as (_, _, at_server, _):
        peer = succeeded(at_server)
        assert peer.user_id == "tenant-7" and peer.properties["X-Tenant"] == b"7"


async def test_slow_authentication_hits_the_handshake_timeout() -> None:
    async def never(request: AuthRequest) -> AuthResult:
        await anyio.sleep_forever()
        raise AssertionError

    async with pair(
        "PULL",
        "PUSH",
        curve_server_options(handshake_ivl=0.3),
        curve_client_options(),
        Authenticator(callback=never),
    ) as (_, _, at_server, _):
        reason = failed(at_server, "timeout")
        assert reason == "handshake timed out (waiting for the authentication decision)"


async def test_failing_authenticator_sends_error_500() -> None:
    async def broken(request: AuthRequest) -> AuthResult:
        raise RuntimeError("backend down")

    async with pair(
        "PULL",
        "PUSH",
        curve_server_options(),
        curve_client_options(),
        Authenticator(callback=broken),
    ) as (_, _, at_server, at_client):
        assert "backend down" in failed(at_server, "rejected")
        assert failed(at_client, "peer-error") == "peer refused us: 500 (internal error)"


# ------------------------------------------------------------------ PLAIN


def plain_auth() -> Authenticator:
    auth = Authenticator()
    auth.configure_plain({"admin": "secret"})
    return auth


async def test_plain_right_password() -> None:
    async with pair(
        "PULL",
        "PUSH",
        {"plain_server": True},
        {"plain_username": "admin", "plain_password": "secret"},
        plain_auth(),
    ) as (pull, push, at_server, at_client):
        assert succeeded(at_server).user_id == "admin"
        assert succeeded(at_client).mechanism == "PLAIN"
        await push.send(b"in clear")
        assert await pull.recv() == b"in clear"


async def test_plain_wrong_password() -> None:
    async with pair(
        "PULL",
        "PUSH",
        {"plain_server": True},
        {"plain_username": "admin", "plain_password": "guess"},
        plain_auth(),
    ) as (_, _, at_server, at_client):
        assert "invalid user name or password" in failed(at_server, "rejected")
        assert "400" in failed(at_client, "peer-error")


async def test_plain_without_authenticator_is_refused_like_libzmq() -> None:
    async with pair(
        "PULL", "PUSH", {"plain_server": True}, {"plain_username": "a", "plain_password": "b"}
    ) as (_, _, at_server, at_client):
        assert "needs an authenticator or a ZAP handler" in failed(at_server, "rejected")
        assert "500" in failed(at_client, "peer-error")


# ------------------------------------------------------------------ NULL


async def test_null_with_authenticator_filters_by_address() -> None:
    async with pair("PULL", "PUSH", {}, {}, Authenticator(allow=["10.9.9.9"])) as (
        _,
        _,
        at_server,
        at_client,
    ):
        assert "not allowed" in failed(at_server, "rejected")
        assert "400" in failed(at_client, "peer-error")


async def test_null_with_zap_domain_and_no_handler_is_allowed() -> None:
    async with pair("PULL", "PUSH", {"zap_domain": "global"}, {}) as (pull, push, at_server, _):
        assert succeeded(at_server).user_id == ""
        await push.send(b"x")
        assert await pull.recv() == b"x"


# ------------------------------------------------------------------ ZAP


@asynccontextmanager
async def zap_handler(kind: str, handler: Any) -> AsyncIterator[None]:
    async with zmtp.Socket(kind, linger=0) as sock, anyio.create_task_group() as tg:
        await sock.bind(ZAP_ENDPOINT)
        tg.start_soon(serve_zap, sock, handler)
        yield
        tg.cancel_scope.cancel()


@pytest.mark.parametrize("kind", ["REP", "ROUTER"])
async def test_zap_handler_accepts_and_refuses(kind: str) -> None:
    auth = Authenticator()
    auth.configure_curve(keys=[CLIENT_PUBLIC])
    async with zap_handler(kind, auth):
        async with pair("PULL", "PUSH", curve_server_options(), curve_client_options()) as (
            _,
            _,
            at_server,
            _,
        ):
            assert succeeded(at_server).user_id == CLIENT_PUBLIC
        async with pair(
            "PULL", "PUSH", curve_server_options(), curve_client_options(OTHER_SECRET)
        ) as (_, _, at_server, at_client):
            assert "unknown CURVE client key" in failed(at_server, "rejected")
            assert "400" in failed(at_client, "peer-error")


async def test_zap_request_frames_seen_by_a_raw_router_handler() -> None:
    """What a hand-written ZAP handler receives, and a 300 answer closing silently."""
    seen: list[list[bytes]] = []
    async with zmtp.Socket("ROUTER", linger=0) as handler, anyio.create_task_group() as tg:
        await handler.bind(ZAP_ENDPOINT)

        async def answer() -> None:
            request = await handler.recv_multipart()
            seen.append(request)
            await handler.send_multipart(
                [request[0], b"", b"1.0", request[3], b"300", b"try later", b"", b""]
            )

        tg.start_soon(answer)
        async with pair(
            "PULL",
            "PUSH",
            curve_server_options(zap_domain="dom", identity=b"srv"),
            curve_client_options(),
        ) as (_, _, at_server, at_client):
            assert "300 temporary failure" in failed(at_server, "rejected")
            assert failed(at_client, "closed")  # no ERROR for 300
    (request,) = seen
    assert request[1:] == [
        b"",
        b"1.0",
        request[3],
        b"dom",
        b"127.0.0.1",
        b"srv",  # libzmq sends the server socket's own routing id here
        b"CURVE",
        decode_key(CLIENT_PUBLIC),
    ]


async def test_malformed_zap_reply_refuses_without_error() -> None:
    async with zmtp.Socket("REP", linger=0) as handler, anyio.create_task_group() as tg:
        await handler.bind(ZAP_ENDPOINT)

        async def answer() -> None:
            request = await handler.recv_multipart()
            await handler.send_multipart([b"1.0", request[1], b"200", b"OK", b""])  # 5 frames

        tg.start_soon(answer)
        async with pair("PULL", "PUSH", curve_server_options(), curve_client_options()) as (
            _,
            _,
            at_server,
            at_client,
        ):
            assert "malformed ZAP reply" in failed(at_server, "rejected")
            assert failed(at_client, "closed")


async def test_authenticator_takes_precedence_over_zap() -> None:
    refuse_all = Authenticator()
    refuse_all.configure_curve(keys=[])
    async with zap_handler("REP", refuse_all):
        allow_any = Authenticator()
        allow_any.configure_curve(allow_any=True)
        async with pair(
            "PULL", "PUSH", curve_server_options(), curve_client_options(), allow_any
        ) as (_, _, at_server, _):
            assert succeeded(at_server).user_id == CLIENT_PUBLIC


# ------------------------------------------------------------------ configuration


def test_invalid_security_options_are_refused_early() -> None:
    with pytest.raises(ValueError, match="choose one"):
        zmtp.Socket("PUSH", curve_server=True, curve_secretkey=SERVER_SECRET, plain_server=True)
    with pytest.raises(ValueError, match="needs curve_secretkey"):
        zmtp.Socket("PUSH", curve_serverkey=SERVER_PUBLIC)
    with pytest.raises(ValueError, match="does not belong"):
        zmtp.Socket(
            "PUSH",
            curve_serverkey=SERVER_PUBLIC,
            curve_secretkey=CLIENT_SECRET,
            curve_publickey=OTHER_PUBLIC,
        )
    with pytest.raises(ValueError, match="curve_serverkey"):
        zmtp.Socket("PUSH", curve_serverkey="too short", curve_secretkey=CLIENT_SECRET)
    with pytest.raises(ValueError, match="255"):
        zmtp.Socket("PUSH", plain_username="x" * 256)


def test_keys_accept_z85_text_and_raw_bytes() -> None:
    raw = zmtp.Socket(
        "PUSH", curve_serverkey=decode_key(SERVER_PUBLIC), curve_secretkey=CLIENT_SECRET
    )
    text = zmtp.Socket(
        "PUSH", curve_serverkey=SERVER_PUBLIC.encode(), curve_secretkey=CLIENT_SECRET
    )
    assert raw.options.curve_serverkey == text.options.curve_serverkey == decode_key(SERVER_PUBLIC)
    assert raw.options.curve_publickey == decode_key(CLIENT_PUBLIC)  # derived
    assert z85_encode(raw.options.curve_publickey) == CLIENT_PUBLIC


def test_authenticator_setter_checks_the_type() -> None:
    sock = zmtp.Socket("PULL")
    with pytest.raises(TypeError):
        sock.authenticator = object()  # type: ignore[assignment]
    auth = Authenticator()
    sock.authenticator = auth
    assert sock.authenticator is auth
