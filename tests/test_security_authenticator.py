"""The in-process Authenticator, the ZAP frame codec and the default policy (no sockets)."""

from __future__ import annotations

import anyio
import pytest

from tests.test_mechanism_helpers import CLIENT_PUBLIC, SERVER_PUBLIC
from zmtp.auth import (
    Authenticator,
    AuthRequest,
    AuthResult,
    ZapError,
    authenticate,
    curve_user_id,
    default_policy,
    encode_reply,
    encode_request,
    parse_reply,
    parse_request,
    zap_address,
)
from zmtp.crypto import z85_encode
from zmtp.protocol import encode_properties

pytestmark = pytest.mark.anyio


def plain(user: str, password: str, address: str = "127.0.0.1", domain: str = "") -> AuthRequest:
    return AuthRequest("PLAIN", domain, address, credentials=(user.encode(), password.encode()))


def curve(key: bytes = CLIENT_PUBLIC, address: str = "127.0.0.1", domain: str = "") -> AuthRequest:
    return AuthRequest("CURVE", domain, address, credentials=(key,))


# ------------------------------------------------------------------ Authenticator


async def test_empty_authenticator_accepts_null_and_refuses_credentials() -> None:
    auth = Authenticator()
    assert (await auth.authenticate(AuthRequest("NULL", address="1.2.3.4"))).accepted
    result = await auth.authenticate(plain("a", "b"))
    assert result.status_code == 400 and "no PLAIN passwords" in result.status_text
    result = await auth.authenticate(curve())
    assert result.status_code == 400 and "no CURVE keys" in result.status_text


async def test_plain_passwords() -> None:
    auth = Authenticator()
    auth.configure_plain({"admin": "secret", "émile": "pässword"})
    ok = await auth.authenticate(plain("admin", "secret"))
    assert ok.accepted and ok.user_id == "admin"
    assert (await auth.authenticate(plain("émile", "pässword"))).user_id == "émile"
    for user, password in [("admin", "wrong"), ("admin", ""), ("nobody", "secret"), ("", "")]:
        result = await auth.authenticate(plain(user, password))
        assert result.status_code == 400
        assert result.status_text == "invalid user name or password"  # no user enumeration


async def test_plain_domains_fall_back_to_any() -> None:
    auth = Authenticator()
    auth.configure_plain({"a": "1"})
    auth.configure_plain({"b": "2"}, domain="special")
    assert (await auth.authenticate(plain("a", "1", domain="other"))).accepted
    assert (await auth.authenticate(plain("b", "2", domain="special"))).accepted
    assert not (await auth.authenticate(plain("a", "1", domain="special"))).accepted


async def test_curve_keys_and_user_id() -> None:
    auth = Authenticator()
    auth.configure_curve(keys=[z85_encode(CLIENT_PUBLIC)])
    ok = await auth.authenticate(curve())
    assert ok.accepted and ok.user_id == z85_encode(CLIENT_PUBLIC) == curve_user_id(CLIENT_PUBLIC)
    refused = await auth.authenticate(curve(SERVER_PUBLIC))
    assert refused.status_code == 400 and refused.status_text == "unknown CURVE client key"


async def test_curve_allow_any_per_domain() -> None:
    auth = Authenticator()
    auth.configure_curve(allow_any=True, domain="open")
    assert (await auth.authenticate(curve(SERVER_PUBLIC, domain="open"))).accepted
    assert not (await auth.authenticate(curve(SERVER_PUBLIC, domain="closed"))).accepted
    auth.configure_curve(keys=[CLIENT_PUBLIC], domain="open")  # reconfigured: no longer any
    assert not (await auth.authenticate(curve(SERVER_PUBLIC, domain="open"))).accepted


async def test_deny_list() -> None:
    auth = Authenticator(deny=["10.0.0.1"])
    auth.configure_curve(allow_any=True)
    refused = await auth.authenticate(curve(address="10.0.0.1"))
    assert refused.status_code == 400 and "denied" in refused.status_text
    assert (await auth.authenticate(curve(address="10.0.0.2"))).accepted


async def test_allow_list_beats_the_deny_list_and_still_checks_credentials() -> None:
    auth = Authenticator(allow=["127.0.0.1"], deny=["127.0.0.1"])
    assert (await auth.authenticate(AuthRequest("NULL", address="127.0.0.1"))).accepted
    assert (
        "not allowed" in (await auth.authenticate(AuthRequest("NULL", address="::1"))).status_text
    )
    assert not (await auth.authenticate(plain("x", "y"))).accepted  # allowed address, no password
    auth.allow("::1")
    auth.deny("1.1.1.1")
    assert (await auth.authenticate(AuthRequest("NULL", address="::1"))).accepted


async def test_callback_decides_after_the_address_check() -> None:
    seen: list[AuthRequest] = []

    async def decide(request: AuthRequest) -> AuthResult | bool:
        seen.append(request)
        await anyio.sleep(0)
        if request.mechanism == "PLAIN":
            return request.password == "open sesame"
        return AuthResult.allow("vip", {"X-Tier": b"gold"})

    auth = Authenticator(deny=["6.6.6.6"], callback=decide)
    ok = await auth.authenticate(plain("ali", "open sesame"))
    assert ok.accepted and ok.user_id == "ali"
    assert not (await auth.authenticate(plain("ali", "nope"))).accepted
    result = await auth.authenticate(curve())
    assert result.user_id == "vip" and result.metadata == {"X-Tier": b"gold"}
    assert not (await auth.authenticate(curve(address="6.6.6.6"))).accepted
    assert len(seen) == 3  # the denied address never reached the callback
    auth.callback = lambda r: _true()
    assert (await auth.authenticate(curve())).user_id == curve_user_id(CLIENT_PUBLIC)


async def _true() -> bool:
    return True


# ------------------------------------------------------------------ policy


async def test_policy_without_a_handler_follows_libzmq() -> None:
    assert (await authenticate(curve(), None)).accepted  # CURVE: any key (Stonehouse)
    assert (await authenticate(AuthRequest("NULL"), None)).accepted
    refused = await authenticate(plain("a", "b"), None)
    assert refused.status_code == 500 and "needs an authenticator" in refused.status_text
    assert default_policy(plain("a", "b")) == refused


async def test_policy_turns_handler_failures_into_500() -> None:
    class Broken:
        async def authenticate(self, request: AuthRequest) -> AuthResult:
            raise KeyError("database down")

    class Confused:
        async def authenticate(self, request: AuthRequest) -> AuthResult:
            return True  # type: ignore[return-value]

    result = await authenticate(curve(), Broken())
    assert result.status_code == 500 and "database down" in result.status_text
    result = await authenticate(curve(), Confused())
    assert result.status_code == 500 and "bool" in result.status_text


@pytest.mark.parametrize(
    ("address", "expected"),
    [
        ("127.0.0.1:5555", "127.0.0.1"),
        ("[::1]:6000", "::1"),
        ("/tmp/sock.ipc", "/tmp/sock.ipc"),
        ("inproc", "inproc"),
        ("", ""),
    ],
)
def test_zap_address_drops_the_port(address: str, expected: str) -> None:
    assert zap_address(address) == expected


# ------------------------------------------------------------------ ZAP frames


def test_request_frames_are_libzmq_compatible() -> None:
    request = AuthRequest("CURVE", "dom", "10.1.2.3", b"me", (CLIENT_PUBLIC,))
    frames = encode_request(request, b"7")
    assert frames == [b"1.0", b"7", b"dom", b"10.1.2.3", b"me", b"CURVE", CLIENT_PUBLIC]
    assert parse_request(frames) == (b"7", request)
    plain_frames = encode_request(plain("u", "p"), b"1")
    assert plain_frames[5:] == [b"PLAIN", b"u", b"p"]
    assert encode_request(AuthRequest("NULL"), b"1")[5:] == [b"NULL"]


@pytest.mark.parametrize(
    ("frames", "message"),
    [
        ([b"1.0", b"1", b"", b"", b""], "at least 6"),
        ([b"2.0", b"1", b"", b"", b"", b"NULL"], "version"),
        ([b"1.0", b"1", b"", b"", b"", b"GSSAPI", b"x"], "unknown mechanism"),
        ([b"1.0", b"1", b"", b"", b"", b"PLAIN", b"u"], "credential"),
        ([b"1.0", b"1", b"", b"", b"", b"CURVE", b"short"], "32 bytes"),
        ([b"1.0", b"1", b"", b"", b"", b"NULL", b"extra"], "credential"),
    ],
)
def test_malformed_requests(frames: list[bytes], message: str) -> None:
    with pytest.raises(ZapError, match=message):
        parse_request(frames)


def test_reply_round_trip() -> None:
    result = AuthResult(200, "OK", "bob", {"X-Role": b"admin"})
    frames = [b"", *encode_reply(b"9", result)]
    assert frames[1:6] == [b"1.0", b"9", b"200", b"OK", b"bob"]
    assert frames[6] == encode_properties({"X-Role": b"admin"})
    assert parse_reply(frames, b"9") == result


GOOD_REPLY = [b"", b"1.0", b"1", b"200", b"OK", b"", b""]


@pytest.mark.parametrize(
    ("index", "value", "message"),
    [
        (0, b"x", "delimiter"),
        (1, b"1.1", "version"),
        (2, b"2", "request id"),
        (3, b"20", "status code"),
        (3, b"201", "status code"),
        (3, b"600", "status code"),
        (3, b"100", "status code"),
        (6, b"\x05X", "metadata"),
    ],
)
def test_malformed_replies_are_refused_like_libzmq(index: int, value: bytes, message: str) -> None:
    frames = list(GOOD_REPLY)
    frames[index] = value
    with pytest.raises(ZapError, match=message):
        parse_reply(frames, b"1")


@pytest.mark.parametrize("count", [6, 8])
def test_replies_must_have_exactly_seven_frames(count: int) -> None:
    frames = [*GOOD_REPLY, b""][:count]
    with pytest.raises(ZapError, match="instead of 7"):
        parse_reply(frames, b"1")


@pytest.mark.parametrize("code", [200, 300, 400, 500])
def test_every_status_code_parses(code: int) -> None:
    frames = list(GOOD_REPLY)
    frames[3] = str(code).encode()
    assert parse_reply(frames, b"1").status_code == code
