"""Who decides a handshake: the socket's authenticator, else a ZAP handler, else libzmq's rules.

This is the one function the engine calls when a server mechanism asks for a decision. The
fallback without any handler mirrors libzmq 4.3: CURVE accepts every client key (encryption
without authentication, "Stonehouse"), NULL accepts (it only asks when a ZAP domain is set),
and PLAIN refuses, since a libzmq PLAIN server cannot work without a ZAP handler. Unlike libzmq,
that refusal sends ERROR 500 so the client learns why instead of seeing the connection drop.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..protocol.mechanism import AuthRequest, AuthResult
from .zap import zap_authenticate, zap_handler_socket

if TYPE_CHECKING:  # the authenticator module imports the CURVE crypto; only its type is used
    from .authenticator import AuthHandler


def default_policy(request: AuthRequest) -> AuthResult:
    """libzmq's decision when nothing is configured to authenticate."""
    if request.mechanism == "PLAIN":
        return AuthResult(
            500, "PLAIN needs an authenticator or a ZAP handler to check passwords (none is set)"
        )
    return AuthResult.allow()


async def authenticate(request: AuthRequest, authenticator: AuthHandler | None) -> AuthResult:
    """The decision on ``request``; never raises (a failing handler counts as status 500)."""
    try:
        if authenticator is not None:
            result: object = await authenticator.authenticate(request)  # user code: check
            if not isinstance(result, AuthResult):
                return AuthResult(500, f"authenticator returned {type(result).__name__}")
            return result
        if zap_handler_socket() is not None:
            return await zap_authenticate(request)
    except Exception as exc:
        return AuthResult(500, f"authentication failed with {exc!r}")
    return default_policy(request)


def zap_address(address: str) -> str:
    """The peer address as ZAP carries it: the IP without the port (``[::1]:5`` -> ``::1``)."""
    host, sep, port = address.rpartition(":")
    if not sep or not port.isdigit():
        return address  # ipc path, inproc, or empty
    return host[1:-1] if host.startswith("[") and host.endswith("]") else host
