"""ZAP (RFC 27): authentication requests to a handler at ``inproc://zeromq.zap.01``.

ZAP is how libzmq servers delegate authentication: the handler is an application socket (REP or
ROUTER) bound at the well-known inproc endpoint of the process, and every handshake sends it one
request and waits for one reply. Our sockets do the same with a handler bound in *our* process,
served by our own REP/ROUTER sockets (for example with :func:`serve_zap`). A pyzmq handler lives
in libzmq's process-internal world and cannot serve our sockets, nor ours theirs.

Request (after the empty delimiter a DEALER/ROUTER sees): ``1.0``, request id, domain, address,
identity, mechanism, credentials (PLAIN: user name, password; CURVE: the 32-byte client key).
Reply: delimiter, ``1.0``, request id, status code, status text, user id, metadata (ZMTP
property encoding). A reply is checked like libzmq checks it (exactly 7 parts, empty delimiter,
version 1.0, our request id, a status code of 200/300/400/500); a malformed one refuses the peer
without an ERROR, as libzmq does.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import TYPE_CHECKING

from ..protocol.errors import ProtocolError
from ..protocol.mechanism import AuthRequest, AuthResult
from ..protocol.properties import encode_properties, parse_properties

if TYPE_CHECKING:
    from ..engine.contract import ConnectionHost
    from ..socket import Socket
    from .authenticator import AuthHandler

ZAP_ENDPOINT = "inproc://zeromq.zap.01"
ZAP_VERSION = b"1.0"
_ZAP_NAME = ZAP_ENDPOINT.removeprefix("inproc://")
_request_ids = itertools.count(1)


class ZapError(ProtocolError):
    """A malformed ZAP request or reply."""


# ---------------------------------------------------------------------------- frame codec


def encode_request(request: AuthRequest, request_id: bytes) -> list[bytes]:
    """The request frames, without the delimiter (a DEALER adds ``b""`` in front)."""
    return [
        ZAP_VERSION,
        request_id,
        request.domain.encode("utf-8"),
        request.address.encode("utf-8"),
        request.identity,
        request.mechanism.encode("ascii"),
        *request.credentials,
    ]


def parse_request(frames: Sequence[bytes]) -> tuple[bytes, AuthRequest]:
    """``(request_id, request)`` from request frames without the delimiter (handler side)."""
    if len(frames) < 6:
        raise ZapError(f"ZAP request has {len(frames)} frames, at least 6 are needed")
    version, request_id, domain, address, identity, mechanism = frames[:6]
    if version != ZAP_VERSION:
        raise ZapError(f"unsupported ZAP version {version!r}")
    name = mechanism.decode("ascii", "replace")
    credentials = tuple(bytes(c) for c in frames[6:])
    expected = {"NULL": 0, "PLAIN": 2, "CURVE": 1}.get(name)
    if expected is None:
        raise ZapError(f"unknown mechanism {name!r} in ZAP request")
    if len(credentials) != expected:
        raise ZapError(f"{name} ZAP request carries {len(credentials)} credential frames")
    if name == "CURVE" and len(credentials[0]) != 32:
        raise ZapError("CURVE ZAP request key is not 32 bytes")
    request = AuthRequest(
        mechanism=name,
        domain=domain.decode("utf-8", "replace"),
        address=address.decode("utf-8", "replace"),
        identity=bytes(identity),
        credentials=credentials,
    )
    return bytes(request_id), request


def encode_reply(request_id: bytes, result: AuthResult) -> list[bytes]:
    """The reply frames, without the delimiter (REP adds its envelope itself)."""
    return [
        ZAP_VERSION,
        request_id,
        str(result.status_code).encode("ascii"),
        result.status_text.encode("utf-8"),
        result.user_id.encode("utf-8"),
        encode_properties(result.metadata),
    ]


def parse_reply(frames: Sequence[bytes], request_id: bytes) -> AuthResult:
    """Check a reply exactly as libzmq does (delimiter included) and turn it into a result."""
    if len(frames) != 7:
        raise ZapError(f"ZAP reply has {len(frames)} frames instead of 7")
    delimiter, version, rid, status, text, user_id, metadata = frames
    if delimiter:
        raise ZapError("ZAP reply does not start with an empty delimiter")
    if version != ZAP_VERSION:
        raise ZapError(f"ZAP reply has version {bytes(version)!r}")
    if rid != request_id:
        raise ZapError("ZAP reply answers another request id")
    if len(status) != 3 or status[:1] not in b"2345" or status[1:] != b"00":
        raise ZapError(f"ZAP reply has an invalid status code {bytes(status)!r}")
    try:
        properties = parse_properties(metadata)
    except ProtocolError as exc:
        raise ZapError(f"ZAP reply metadata: {exc.reason}") from None
    return AuthResult(
        status_code=int(status),
        status_text=bytes(text).decode("utf-8", "replace"),
        user_id=bytes(user_id).decode("utf-8", "replace"),
        metadata=dict(properties),
    )


# ---------------------------------------------------------------------------- client side


def zap_handler_socket() -> ConnectionHost | None:
    """The socket bound at ``inproc://zeromq.zap.01`` in this process, if any."""
    from ..engine import inproc

    return inproc.bound_socket(_ZAP_NAME)


async def zap_authenticate(request: AuthRequest) -> AuthResult:
    """Ask the in-process ZAP handler; malformed replies become a silent refusal (status 300).

    One short-lived DEALER per request: inproc links are cheap, a late reply to a request whose
    handshake timed out has nowhere to go, and concurrent handshakes need no demultiplexing.
    Waiting is bounded by the caller (the connection's handshake timeout cancels it).
    """
    from ..socket import Socket

    handler = zap_handler_socket()
    if handler is None:
        return AuthResult(500, "no ZAP handler is bound")
    if handler.socket_type not in ("REP", "ROUTER"):
        return AuthResult(500, f"the ZAP handler is a {handler.socket_type}, not REP or ROUTER")
    request_id = str(next(_request_ids)).encode("ascii")
    try:
        async with Socket("DEALER", linger=0) as dealer:
            await dealer.connect(ZAP_ENDPOINT)
            await dealer.send_multipart([b"", *encode_request(request, request_id)])
            reply = await dealer.recv_multipart()
    except NotImplementedError as exc:  # DEALER not available in this build
        return AuthResult(500, f"cannot reach the ZAP handler: {exc}")
    try:
        return parse_reply(reply, request_id)
    except ZapError as exc:
        return AuthResult(300, f"malformed ZAP reply: {exc.reason}")


# ---------------------------------------------------------------------------- handler side


async def serve_zap(socket: Socket, handler: AuthHandler) -> None:
    """Answer ZAP requests arriving on ``socket`` (a REP or ROUTER bound at the ZAP endpoint)
    with ``handler`` (e.g. an :class:`~zmtp.auth.Authenticator`), until the socket closes.

    Requests that do not parse get status 400 (pyzmq's authenticator does the same); a handler
    that raises answers 500. Run it as a task: ``tg.start_soon(serve_zap, rep, auth)``.
    """
    from ..errors import SocketClosed

    router = socket.socket_type == "ROUTER"
    while True:
        try:
            message = await socket.recv_multipart()
        except SocketClosed:
            return
        envelope: list[bytes] = []
        if router:
            try:
                split = message.index(b"") + 1
            except ValueError:
                continue  # no delimiter: not a ZAP client
            envelope, message = message[:split], message[split:]
        if len(message) < 2:
            continue  # not even a request id to answer
        try:
            request_id, request = parse_request(message)
        except ZapError as exc:
            result = AuthResult(400, exc.reason)
            request_id = message[1]
        else:
            try:
                result = await handler.authenticate(request)
            except Exception as exc:
                result = AuthResult(500, f"authentication handler failed: {exc!r}")
        try:
            await socket.send_multipart([*envelope, *encode_reply(request_id, result)])
        except SocketClosed:
            return
