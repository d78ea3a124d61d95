"""The in-process authenticator: a policy object a server socket consults during handshakes.

It plays the role of pyzmq's ``zmq.auth`` authenticators, with the same rules, but is called
directly (an ``await``), with no ZAP socket and no thread in between::

    auth = zmtp.Authenticator(deny=["10.0.0.66"])
    auth.configure_curve(keys=[client_public])          # or allow_any=True
    auth.configure_plain(passwords={"admin": "secret"})
    sock.authenticator = auth

Order of checks (as in pyzmq): the peer's IP address against the allow list (if any, only
those pass) or else the deny list; then a custom ``callback`` if one is set, which decides
alone; else the mechanism's own check: NULL passes, PLAIN needs a matching password, CURVE a
known key (or ``allow_any``). A socket that installs an authenticator therefore refuses PLAIN
and CURVE peers unless it was told whom to accept.

Credentials are looked up by ZAP domain (the server socket's ``zap_domain``): the exact
domain first, then ``"*"``, the default of every ``configure_*`` method.
"""

from __future__ import annotations

import hmac
import os
from collections.abc import Awaitable, Callable, Iterable, Mapping
from typing import Protocol

from ..crypto import decode_key, z85_encode
from ..protocol.mechanism import AuthRequest, AuthResult
from .certs import CURVE_ALLOW_ANY, load_certificates

#: An async decision function: an :class:`AuthResult`, or True/False for allow/deny.
AuthCallback = Callable[[AuthRequest], Awaitable["AuthResult | bool"]]

ANY_DOMAIN = "*"


class AuthHandler(Protocol):
    """What a socket's ``authenticator`` must provide (an :class:`Authenticator` does)."""

    async def authenticate(self, request: AuthRequest) -> AuthResult:
        """Decide on one handshake; never expected to raise (a raise counts as status 500)."""
        ...


def curve_user_id(key: bytes) -> str:
    """The user id given to an accepted CURVE client: its key in Z85, as pyzmq does."""
    return z85_encode(key)


class Authenticator:
    """Address filtering plus PLAIN passwords and CURVE keys per domain, or a custom callback.

    ``allow``/``deny`` are IP addresses as text (``"127.0.0.1"``, ``"::1"``); an ipc peer's
    address is its path or empty. ``callback(request)`` may be async code of any kind (a
    database, a remote service); the handshake timeout bounds it.
    """

    def __init__(
        self,
        *,
        allow: Iterable[str] = (),
        deny: Iterable[str] = (),
        callback: AuthCallback | None = None,
    ) -> None:
        self._allowed: set[str] = set(allow)
        self._denied: set[str] = set(deny)
        self.callback = callback
        self._passwords: dict[str, dict[str, str]] = {}
        self._curve_keys: dict[str, set[bytes]] = {}
        self._curve_any: set[str] = set()

    # ------------------------------------------------------------------ configuration

    def allow(self, *addresses: str) -> None:
        """Accept only peers from these addresses (an allow list beats the deny list)."""
        self._allowed.update(addresses)

    def deny(self, *addresses: str) -> None:
        """Refuse peers from these addresses (ignored while an allow list exists)."""
        self._denied.update(addresses)

    def configure_plain(self, passwords: Mapping[str, str], domain: str = ANY_DOMAIN) -> None:
        """PLAIN: accept these ``username: password`` pairs in ``domain`` (replaces them)."""
        self._passwords[domain] = dict(passwords)

    def configure_curve(
        self,
        keys: Iterable[str | bytes] = (),
        domain: str = ANY_DOMAIN,
        *,
        allow_any: bool = False,
        location: str | os.PathLike[str] | None = None,
    ) -> None:
        """CURVE: accept clients with these public keys (Z85 or raw), or any key.

        ``allow_any`` gives encryption without client authentication (libzmq's "Stonehouse"),
        still subject to the address lists. ``location`` is pyzmq's: a directory whose
        ``*.key`` certificates are added to ``keys`` (read now; call again after adding
        files), or ``"*"`` (``CURVE_ALLOW_ANY``) for any key.
        """
        keys = list(keys)
        if location is not None:
            if str(location) == CURVE_ALLOW_ANY:
                allow_any = True
            else:
                keys.extend(load_certificates(location))
        self._curve_keys[domain] = {decode_key(k) for k in keys}
        if allow_any:
            self._curve_any.add(domain)
        else:
            self._curve_any.discard(domain)

    # ------------------------------------------------------------------ decision

    async def authenticate(self, request: AuthRequest) -> AuthResult:
        refusal = self._check_address(request.address)
        if refusal is not None:
            return AuthResult.deny(refusal)
        if self.callback is not None:
            decision = await self.callback(request)
            if isinstance(decision, AuthResult):
                return decision
            return (
                AuthResult.allow(self._default_user_id(request))
                if decision
                else (AuthResult.deny("refused by the authentication callback"))
            )
        if request.mechanism == "PLAIN":
            return self._check_plain(request)
        if request.mechanism == "CURVE":
            return self._check_curve(request)
        return AuthResult.allow()

    def _check_address(self, address: str) -> str | None:
        if self._allowed:
            return None if address in self._allowed else f"address {address!r} is not allowed"
        if address in self._denied:
            return f"address {address!r} is denied"
        return None

    @staticmethod
    def _default_user_id(request: AuthRequest) -> str:
        if request.mechanism == "PLAIN":
            return request.username
        if request.mechanism == "CURVE":
            return curve_user_id(request.client_key)
        return ""

    @staticmethod
    def _lookup(table: Mapping[str, object], domain: str) -> str | None:
        if domain in table:
            return domain
        return ANY_DOMAIN if ANY_DOMAIN in table else None

    def _check_plain(self, request: AuthRequest) -> AuthResult:
        domain = self._lookup(self._passwords, request.domain)
        if domain is None:
            return AuthResult.deny("no PLAIN passwords configured for this domain")
        expected = self._passwords[domain].get(request.username)
        given = request.password.encode("utf-8")
        # Compare even for an unknown user so the answer takes the same time either way.
        ok = hmac.compare_digest((expected or "").encode("utf-8"), given) and expected is not None
        if not ok:
            return AuthResult.deny("invalid user name or password")
        return AuthResult.allow(request.username)

    def _check_curve(self, request: AuthRequest) -> AuthResult:
        key = request.client_key
        domains = set(self._curve_keys) | self._curve_any
        domain = self._lookup(dict.fromkeys(domains), request.domain)
        if domain is None:
            return AuthResult.deny("no CURVE keys configured for this domain")
        if domain in self._curve_any or key in self._curve_keys.get(domain, set()):
            return AuthResult.allow(curve_user_id(key))
        return AuthResult.deny("unknown CURVE client key")
