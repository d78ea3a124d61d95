"""Authentication for server sockets: an in-process authenticator, ZAP, and the decision types.

* :class:`Authenticator` - allow/deny by address, PLAIN passwords, CURVE keys (or any key), or a
  custom async callback; set it as ``socket.authenticator``.
* ZAP (RFC 27): without an authenticator, a handler bound at ``inproc://zeromq.zap.01`` in this
  process decides (serve one with :func:`serve_zap`).
* :class:`AuthRequest` / :class:`AuthResult`: what is asked and what is answered, whichever of
  the two decides.

See docs/security.md.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..lazyload import lazy_attributes
from ..protocol.mechanism import AuthRequest, AuthResult

if TYPE_CHECKING:
    from .authenticator import ANY_DOMAIN, AuthCallback, Authenticator, AuthHandler, curve_user_id
    from .certs import (
        CURVE_ALLOW_ANY,
        CertificateError,
        create_certificates,
        load_certificate,
        load_certificates,
    )
    from .policy import authenticate, default_policy, zap_address
    from .zap import (
        ZAP_ENDPOINT,
        ZapError,
        encode_reply,
        encode_request,
        parse_reply,
        parse_request,
        serve_zap,
        zap_authenticate,
    )

# Imported on first use (zmtp/lazyload.py): the engine needs only the policy, and the
# authenticator and certificate files import the CURVE crypto (``cryptography``).
_LAZY = {
    **dict.fromkeys(
        ("ANY_DOMAIN", "AuthCallback", "Authenticator", "AuthHandler", "curve_user_id"),
        ".authenticator",
    ),
    **dict.fromkeys(
        (
            "CURVE_ALLOW_ANY",
            "CertificateError",
            "create_certificates",
            "load_certificate",
            "load_certificates",
        ),
        ".certs",
    ),
    **dict.fromkeys(("authenticate", "default_policy", "zap_address"), ".policy"),
    **dict.fromkeys(
        (
            "ZAP_ENDPOINT",
            "ZapError",
            "encode_reply",
            "encode_request",
            "parse_reply",
            "parse_request",
            "serve_zap",
            "zap_authenticate",
        ),
        ".zap",
    ),
}
_lazy_getattr, __dir__ = lazy_attributes(
    __name__, globals(), _LAZY, ("authenticator", "certs", "policy", "zap")
)
if not TYPE_CHECKING:  # hidden from mypy: a module __getattr__ would make every typo "Any"
    __getattr__ = _lazy_getattr

__all__ = [
    "ANY_DOMAIN",
    "CURVE_ALLOW_ANY",
    "ZAP_ENDPOINT",
    "AuthCallback",
    "AuthHandler",
    "AuthRequest",
    "AuthResult",
    "Authenticator",
    "CertificateError",
    "ZapError",
    "authenticate",
    "create_certificates",
    "curve_user_id",
    "default_policy",
    "encode_reply",
    "encode_request",
    "load_certificate",
    "load_certificates",
    "parse_reply",
    "parse_request",
    "serve_zap",
    "zap_address",
    "zap_authenticate",
]
