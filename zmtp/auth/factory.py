"""The mechanism for one connection, from a socket's security options.

Kept out of the socket so that the option-to-mechanism mapping (and its libzmq equivalents,
listed in docs/security.md) lives with the rest of the security code.
"""

from __future__ import annotations

from ..options import Options
from ..protocol.mechanism import Mechanism, NullMechanism


def _raw(value: str | bytes | None) -> bytes:
    if value is None:
        return b""
    return value.encode("utf-8") if isinstance(value, str) else value


def make_mechanism(options: Options, *, has_authenticator: bool = False) -> Mechanism:
    """A fresh mechanism for a new connection (metadata is filled in by the Connection).

    NULL asks for an authentication decision when a ZAP domain is set (libzmq) or when the
    socket has an in-process authenticator (ours: installing one is an explicit request).
    """
    kind = options.security_mechanism()
    if kind == "CURVE":
        # Imported here: CURVE needs the ``cryptography`` package, which a NULL or PLAIN
        # socket never loads (``import zmtp`` stays cheap, docs/performance.md).
        from ..crypto.keys import decode_key
        from ..protocol.curve import CurveClient, CurveServer

        assert options.curve_secretkey is not None
        secret = decode_key(options.curve_secretkey)
        if options.curve_server:
            return CurveServer(b"", secret, zap_domain=options.zap_domain)
        assert options.curve_serverkey is not None and options.curve_publickey is not None
        return CurveClient(
            b"", decode_key(options.curve_serverkey), decode_key(options.curve_publickey), secret
        )
    if kind == "PLAIN":
        from ..protocol.plain import PlainClient, PlainServer  # only PLAIN sockets load it

        if options.plain_server:
            return PlainServer(b"", options.zap_domain)
        return PlainClient(b"", _raw(options.plain_username), _raw(options.plain_password))
    return NullMechanism(
        b"",
        as_server=False,
        authenticate=has_authenticator or bool(options.zap_domain),
        zap_domain=options.zap_domain,
    )
