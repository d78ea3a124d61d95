"""Shared helpers for the PLAIN / CURVE / authentication protocol tests (plus their self-tests).

Everything is sans-IO: two :class:`Connection` objects exchange bytes through :func:`pump_auth`,
which also answers authentication requests the way a driver would.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from tests.test_protocol_helpers import shuttle, split_frames
from zmtp.crypto import BoxBackend, curve_keypair, decode_key, get_backend, nacl_available
from zmtp.protocol import Connection, Event, HandshakeComplete, State
from zmtp.protocol.curve import CurveClient, CurveServer
from zmtp.protocol.events import AuthenticationRequested
from zmtp.protocol.mechanism import AuthRequest, AuthResult
from zmtp.protocol.plain import PlainClient, PlainServer

Decide = Callable[[AuthRequest], AuthResult]

#: The back-ends every CURVE protocol test runs on (pure always; nacl when installed).
BACKENDS = ["pure", *(["nacl"] if nacl_available() else [])]


def allow_all(request: AuthRequest) -> AuthResult:
    return AuthResult.allow("user-" + request.mechanism.lower())


def keypair() -> tuple[bytes, bytes]:
    """A fresh (public, secret) CURVE pair as raw bytes."""
    public, secret = curve_keypair()
    return decode_key(public), decode_key(secret)


SERVER_PUBLIC, SERVER_SECRET = keypair()
CLIENT_PUBLIC, CLIENT_SECRET = keypair()


def pump_auth(
    a: Connection, b: Connection, decide: Decide | None = allow_all, now: float = 0.0
) -> tuple[list[Event], list[Event]]:
    """Shuttle bytes until both sides are quiet, answering authentication with ``decide``.

    With ``decide=None`` a request is left pending (the caller completes it).
    """
    events_a: list[Event] = []
    events_b: list[Event] = []
    answered: set[int] = set()
    while True:
        for conn, events in ((a, events_a), (b, events_b)):
            for event in list(events):
                if isinstance(event, AuthenticationRequested) and id(event) not in answered:
                    if decide is None or conn.state is not State.HANDSHAKE:
                        continue
                    answered.add(id(event))
                    events += conn.complete_authentication(decide(event.request), now)
        if not shuttle(a, b, events_a, events_b, now):
            return events_a, events_b


def curve_client(
    socket_type: str = "DEALER",
    *,
    backend: BoxBackend | None = None,
    server_public: bytes = SERVER_PUBLIC,
    client_public: bytes = CLIENT_PUBLIC,
    client_secret: bytes = CLIENT_SECRET,
    **kwargs: object,
) -> Connection:
    mech = CurveClient(b"", server_public, client_public, client_secret, backend=backend)
    return Connection(socket_type, mechanism=mech, **kwargs)  # type: ignore[arg-type]


def curve_server(
    socket_type: str = "ROUTER",
    *,
    backend: BoxBackend | None = None,
    zap_domain: str = "",
    **kwargs: object,
) -> Connection:
    mech = CurveServer(b"", SERVER_SECRET, zap_domain=zap_domain, backend=backend)
    return Connection(socket_type, mechanism=mech, **kwargs)  # type: ignore[arg-type]


def curve_pair(
    client_type: str = "DEALER",
    server_type: str = "ROUTER",
    *,
    backend: str = "pure",
    decide: Decide | None = allow_all,
    client_kwargs: dict[str, object] | None = None,
    server_kwargs: dict[str, object] | None = None,
) -> tuple[Connection, Connection, list[Event], list[Event]]:
    """A CURVE client and server pumped to quiescence (handshake done unless refused)."""
    box = get_backend(backend)
    client = curve_client(client_type, backend=box, **(client_kwargs or {}))
    server = curve_server(server_type, backend=box, **(server_kwargs or {}))
    events_c, events_s = pump_auth(client, server, decide)
    return client, server, events_c, events_s


def plain_pair(
    client_type: str = "DEALER",
    server_type: str = "ROUTER",
    *,
    username: bytes = b"admin",
    password: bytes = b"secret",
    decide: Decide | None = allow_all,
) -> tuple[Connection, Connection, list[Event], list[Event]]:
    client = Connection(client_type, mechanism=PlainClient(b"", username, password))
    server = Connection(server_type, mechanism=PlainServer(b""))
    events_c, events_s = pump_auth(client, server, decide)
    return client, server, events_c, events_s


def message_frames(wire: bytes) -> list[tuple[int, bytes]]:
    """Raw frames of post-handshake wire bytes."""
    return split_frames(wire)


# ---------------------------------------------------------------------------------- self-tests


@pytest.mark.parametrize("backend", BACKENDS)
def test_curve_pair_completes(backend: str) -> None:
    client, server, events_c, events_s = curve_pair(backend=backend)
    assert [type(e) for e in events_c] == [HandshakeComplete]
    assert [type(e) for e in events_s] == [AuthenticationRequested, HandshakeComplete]
    assert client.state is server.state is State.READY


def test_plain_pair_completes() -> None:
    _client, _server, events_c, events_s = plain_pair()
    assert [type(e) for e in events_c] == [HandshakeComplete]
    assert [type(e) for e in events_s] == [AuthenticationRequested, HandshakeComplete]
