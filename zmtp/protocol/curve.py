"""CURVE (RFC 25 CurveZMQ + RFC 26 ZMTP-CURVE), as libzmq 4.3 implements it.

Handshake (offsets are inside the command body; boxes are ``tag(16) || ciphertext``)::

    C: HELLO    01 00, 72 zero bytes, C', short nonce, Box[64 zeros](C'->S)           200 bytes
    S: WELCOME  16-byte nonce, Box[S' + cookie](S->C')                                168 bytes
    C: INITIATE cookie(96), short nonce, Box[C + vouch nonce + vouch + metadata](C'->S')  >= 257
                vouch = Box[C' + S](C->S')
    S: READY    short nonce, Box[metadata](S'->C')                                    >= 30
    either: MESSAGE short nonce, Box[flags + payload](sender'->receiver')             >= 33

What each step proves: HELLO shows the client knows S (only S's owner can open its box);
WELCOME hands over S' such that only C' can read it; the cookie lets the server check that
INITIATE belongs to this connection's WELCOME; the vouch proves the owner of the long-term key C
also owns the transient key C' and meant to talk to S. The short nonces are per-direction
counters that must strictly increase, which makes a replayed or reordered MESSAGE detectable.

libzmq specifics honoured here (spec/libzmq-interop.md §1.8):

* MESSAGE travels in a ZMTP *message* frame (outer flags 0x00, or 0x02 when long), never a
  command frame: libzmq drops a MESSAGE that arrives in a command frame. We accept outer flags
  0x00/0x02/0x04/0x06 on receive. The ZMTP MORE bit travels inside the box (0x01) and so does
  the command bit (0x02): every post-handshake frame and command is a MESSAGE.
* Short nonces: the client uses HELLO=1, INITIATE=2, MESSAGE=3...; the server READY=1,
  MESSAGE=2... A received nonce must exceed the previous one from that peer (gaps allowed).
* The cookie key is fresh for every WELCOME and forgotten at INITIATE (libzmq does the same), so
  the "rotating server key" of RFC 26 rotates per handshake and a cookie is worthless on any
  other connection. We also check the vouch names our S (libzmq checks only C').
"""

from __future__ import annotations

import hmac
import os
from collections.abc import Sequence
from struct import Struct

from ..crypto import BoxBackend, CryptoError, NoncePrefixBox, default_backend
from . import commands
from .errors import ProtocolError
from .frames import COMMAND, LONG, MORE, Command, FrameTransform, encode_command
from .mechanism import Mechanism, raise_peer_error, unexpected
from .properties import parse_properties

HELLO = b"HELLO"
WELCOME = b"WELCOME"
INITIATE = b"INITIATE"
MESSAGE = b"MESSAGE"

KEY_SIZE = 32
TAG_SIZE = 16
COOKIE_SIZE = 96

# Command data sizes (the body minus its name-length byte and name).
HELLO_DATA_SIZE = 200 - 6
WELCOME_DATA_SIZE = 168 - 8
INITIATE_MIN_DATA_SIZE = 257 - 9
READY_MIN_DATA_SIZE = 30 - 6
MESSAGE_MIN_BODY_SIZE = 8 + 8 + TAG_SIZE + 1
HELLO_PADDING = 72

NONCE_HELLO = b"CurveZMQHELLO---"
NONCE_INITIATE = b"CurveZMQINITIATE"
NONCE_READY = b"CurveZMQREADY---"
NONCE_MESSAGE_C = b"CurveZMQMESSAGEC"
NONCE_MESSAGE_S = b"CurveZMQMESSAGES"
NONCE_WELCOME = b"WELCOME-"
NONCE_COOKIE = b"COOKIE--"
NONCE_VOUCH = b"VOUCH---"

_U64 = Struct(">Q")
_pack_u64 = _U64.pack
_unpack_u64_from = _U64.unpack_from
_MAX_NONCE = (1 << 64) - 1

_MESSAGE_NAME = b"\x07MESSAGE"
#: Inner plaintext flags byte -> ZMTP frame flags, for the four legal values.
_INNER_TO_FRAME = (0, MORE, COMMAND, COMMAND | MORE)
_INNER_LAST = b"\x00"
_INNER_MORE = b"\x01"
_INNER_COMMAND = b"\x02"
#: Outer headers of short MESSAGE frames (outer flags 0x00), indexed by body size.
_SHORT_HEADERS = tuple(bytes((0, n)) for n in range(256))
_LONG_FLAG = bytes((LONG,))


def _crypto_failure(what: str) -> ProtocolError:
    return ProtocolError(f"CURVE {what}: box failed to open (tampered, forged or wrong key)")


class _Curve(Mechanism):
    """What client and server share: nonce bookkeeping and MESSAGE framing.

    MESSAGE boxes use :meth:`BoxBackend.bind_nonce_prefix` (the primitive under
    :class:`~zmtp.crypto.SessionBox`: the per-direction HSalsa20 subkey is computed once)
    directly, because the framing needs the 8-byte nonce tail anyway: going through
    ``SessionBox``'s integer nonces would encode every tail twice on the hot path.
    """

    name = b"CURVE"

    def __init__(self, local_metadata: bytes, as_server: bool, backend: BoxBackend | None) -> None:
        super().__init__(local_metadata, as_server)
        self._backend = backend if backend is not None else default_backend()
        self._next_nonce = 1  # our next short nonce
        self._peer_nonce = 0  # the last short nonce the peer used
        self._session_key = b""
        self._sealer: NoncePrefixBox | None = None
        self._opener: NoncePrefixBox | None = None

    # ------------------------------------------------------------------ handshake helpers

    def _take_nonce(self) -> bytes:
        nonce = self._next_nonce
        if nonce > _MAX_NONCE:
            raise ProtocolError("CURVE short nonce space exhausted (2**64 frames)")
        self._next_nonce = nonce + 1
        return _pack_u64(nonce)

    def _accept_nonce(self, tail: bytes, what: str) -> None:
        nonce = _unpack_u64_from(tail)[0]
        if nonce <= self._peer_nonce:
            raise ProtocolError(
                f"CURVE {what} nonce {nonce} is not above the previous one ({self._peer_nonce}):"
                " replayed or reordered"
            )
        self._peer_nonce = nonce

    def _beforenm(self, public: bytes, secret: bytes, what: str) -> bytes:
        try:
            return self._backend.beforenm(public, secret)
        except CryptoError as exc:
            raise ProtocolError(f"CURVE {what}: {exc}") from None

    def _open(self, box: bytes, nonce: bytes, key: bytes, what: str) -> bytes:
        try:
            return self._backend.open(box, nonce, key)
        except CryptoError:
            raise _crypto_failure(what) from None

    def _start_session(self, send_prefix: bytes, recv_prefix: bytes) -> None:
        """Switch to MESSAGE framing (called as the last handshake command is handled)."""
        self._sealer = self._backend.bind_nonce_prefix(self._session_key, send_prefix)
        self._opener = self._backend.bind_nonce_prefix(self._session_key, recv_prefix)
        self.decode_transform = self._message_decoder()
        self.complete = True

    @staticmethod
    def _check_error(command: Command) -> None:
        """libzmq's ERROR checks: a reason-length byte that fits in what follows."""
        data = command.data
        if not data or data[0] > len(data) - 1:
            raise ProtocolError("malformed CURVE ERROR: bad reason length")

    # ------------------------------------------------------------------ MESSAGE framing

    def encode_messages(self, messages: Sequence[Sequence[bytes]]) -> bytes:
        """Every frame of every message as one MESSAGE (one box and one nonce each)."""
        sealer = self._sealer
        if sealer is None:
            raise ProtocolError("CURVE handshake is not complete")
        seal = sealer.seal
        pack = _pack_u64
        headers = _SHORT_HEADERS
        name = _MESSAGE_NAME
        nonce = self._next_nonce
        if nonce + sum(len(parts) for parts in messages) - 1 > _MAX_NONCE:
            raise ProtocolError("CURVE short nonce space exhausted (2**64 frames)")
        out: list[bytes] = []
        append = out.append
        for parts in messages:
            if len(parts) == 1:  # the common case, without the per-part bookkeeping
                tail = pack(nonce)
                nonce += 1
                box = seal(_INNER_LAST + parts[0], tail)
                size = 16 + len(box)
                append((headers[size] if size < 256 else _LONG_FLAG + pack(size)) + name + tail)
                append(box)
                continue
            last = len(parts) - 1
            for i, part in enumerate(parts):
                tail = pack(nonce)
                nonce += 1
                box = seal((_INNER_MORE if i < last else _INNER_LAST) + part, tail)
                size = 16 + len(box)
                append((headers[size] if size < 256 else _LONG_FLAG + pack(size)) + name + tail)
                append(box)
        self._next_nonce = nonce
        return b"".join(out)

    def encode_command(self, frame: bytes) -> bytes:
        """A post-handshake command (PING, SUBSCRIBE...) as a MESSAGE with inner flag 0x02."""
        sealer = self._sealer
        if sealer is None:
            raise ProtocolError("CURVE handshake is not complete")
        body = frame[9:] if frame[0] & LONG else frame[2:]
        tail = self._take_nonce()
        box = sealer.seal(_INNER_COMMAND + body, tail)
        size = 16 + len(box)
        header = _SHORT_HEADERS[size] if size < 256 else _LONG_FLAG + _pack_u64(size)
        return header + _MESSAGE_NAME + tail + box

    def _message_decoder(self) -> FrameTransform:
        """The decoder's transform: one MESSAGE frame in, the frame it carries out.

        A closure rather than a method: on the per-frame hot path, attribute lookups on
        ``self`` cost as much as the rest of a small message's bookkeeping. The last nonce
        lives in the closure (``_peer_nonce`` is the handshake's).
        """
        assert self._opener is not None
        open_box = self._opener.open
        last = self._peer_nonce
        name = _MESSAGE_NAME
        to_frame = _INNER_TO_FRAME

        def decode(flags: int, body: bytes) -> tuple[int, bytes]:
            nonlocal last
            if flags & MORE or body[:8] != name or len(body) < MESSAGE_MIN_BODY_SIZE:
                raise _bad_message(flags, body)
            tail = body[8:16]
            nonce = int.from_bytes(tail, "big")
            if nonce <= last:
                raise ProtocolError(
                    f"CURVE MESSAGE nonce {nonce} is not above the previous one ({last}):"
                    " replayed or reordered"
                )
            try:
                plain = open_box(body[16:], tail)
            except CryptoError:
                raise _crypto_failure("MESSAGE") from None
            last = nonce
            inner = plain[0]
            if inner > 3:
                raise ProtocolError(f"CURVE MESSAGE with reserved flag bits set (0x{inner:02x})")
            return to_frame[inner], plain[1:]

        return decode


def _bad_message(flags: int, body: bytes) -> ProtocolError:
    """Why a post-handshake frame is not an acceptable MESSAGE (off the hot path)."""
    if flags & MORE:
        return ProtocolError("CURVE MESSAGE in a frame with the MORE flag set")
    if body[:8] == _MESSAGE_NAME:
        return ProtocolError(f"CURVE MESSAGE too short ({len(body)} bytes)")
    if flags & COMMAND:
        name = body[1 : 1 + body[0]] if body else b""
        return ProtocolError(f"expected a CURVE MESSAGE after the handshake, got {name[:16]!r}")
    return ProtocolError("unencrypted data frame on a CURVE connection")


class CurveClient(_Curve):
    """The CURVE client: knows the server's long-term public key ``server_key`` (S) in advance.

    ``public_key``/``secret_key`` are the client's long-term pair (C, c); the server learns C
    (and may authorise it). Keys are 32 raw bytes.
    """

    def __init__(
        self,
        local_metadata: bytes,
        server_key: bytes,
        public_key: bytes,
        secret_key: bytes,
        *,
        backend: BoxBackend | None = None,
    ) -> None:
        super().__init__(local_metadata, False, backend)
        for what, key in (("server", server_key), ("public", public_key), ("secret", secret_key)):
            if len(key) != KEY_SIZE:
                raise ValueError(f"CURVE {what} key must be {KEY_SIZE} raw bytes")
        self._server_key = bytes(server_key)
        self._public = bytes(public_key)
        self._secret = bytes(secret_key)
        self._transient_secret = os.urandom(KEY_SIZE)
        self._transient_public = self._backend.scalarmult_base(self._transient_secret)
        self._hello_key = b""
        self._state = "welcome"

    def start(self) -> list[bytes]:
        self._hello_key = self._beforenm(self._server_key, self._transient_secret, "HELLO")
        tail = self._take_nonce()
        signature = self._backend.seal(bytes(64), NONCE_HELLO + tail, self._hello_key)
        data = b"\x01\x00" + bytes(HELLO_PADDING) + self._transient_public + tail + signature
        assert len(data) == HELLO_DATA_SIZE
        return [encode_command(HELLO, data)]

    def handle_command(self, command: Command) -> list[bytes]:
        name = command.name
        if name == commands.ERROR:
            self._check_error(command)
            raise_peer_error(command)
        if self._state == "welcome":
            if name != WELCOME:
                raise unexpected(command, "CURVE", "WELCOME")
            return self._welcome(command.data)
        if self._state == "ready" and name == commands.READY:
            self._ready(command.data)
            return []
        raise unexpected(command, "CURVE", "READY")

    def _welcome(self, data: bytes) -> list[bytes]:
        if len(data) != WELCOME_DATA_SIZE:
            raise ProtocolError(f"CURVE WELCOME must be 168 bytes, got {len(data) + 8}")
        plain = self._open(data[16:], NONCE_WELCOME + data[:16], self._hello_key, "WELCOME")
        server_transient, cookie = plain[:KEY_SIZE], plain[KEY_SIZE:]
        self._session_key = self._beforenm(server_transient, self._transient_secret, "WELCOME")
        vouch_key = self._beforenm(server_transient, self._secret, "vouch")
        vouch_nonce = os.urandom(16)
        vouch = self._backend.seal(
            self._transient_public + self._server_key, NONCE_VOUCH + vouch_nonce, vouch_key
        )
        tail = self._take_nonce()
        box = self._backend.seal(
            self._public + vouch_nonce + vouch + self.local_metadata,
            NONCE_INITIATE + tail,
            self._session_key,
        )
        # The transient secret and the HELLO key have served: keep them no longer than needed.
        self._transient_secret = self._hello_key = b""
        self._state = "ready"
        return [encode_command(INITIATE, cookie + tail + box)]

    def _ready(self, data: bytes) -> None:
        if len(data) < READY_MIN_DATA_SIZE:
            raise ProtocolError(f"CURVE READY too short ({len(data) + 6} bytes, minimum 30)")
        tail = data[:8]
        self._accept_nonce(tail, "READY")
        metadata = self._open(data[8:], NONCE_READY + tail, self._session_key, "READY")
        self.peer_properties = parse_properties(metadata)
        self.peer_curve_key = self._server_key
        self._state = "done"
        self._start_session(NONCE_MESSAGE_C, NONCE_MESSAGE_S)


class CurveServer(_Curve):
    """The CURVE server: long-term pair (S, s); learns and authorises each client's key C.

    After a valid INITIATE the client's key is put to an authentication decision
    (:attr:`auth_request`, credentials ``(C,)``); READY follows an accepted decision.
    """

    def __init__(
        self,
        local_metadata: bytes,
        secret_key: bytes,
        public_key: bytes | None = None,
        *,
        zap_domain: str = "",
        backend: BoxBackend | None = None,
    ) -> None:
        super().__init__(local_metadata, True, backend)
        if len(secret_key) != KEY_SIZE:
            raise ValueError(f"CURVE secret key must be {KEY_SIZE} raw bytes")
        self._secret = bytes(secret_key)
        derived = self._backend.scalarmult_base(self._secret)
        if public_key is not None and bytes(public_key) != derived:
            raise ValueError("CURVE public key does not belong to the secret key")
        self._public = derived
        self._zap_domain = zap_domain
        self._client_transient = b""
        self._transient_secret = b""
        self._cookie_key: bytes | None = None
        self._state = "hello"

    def start(self) -> list[bytes]:
        return []

    def handle_command(self, command: Command) -> list[bytes]:
        name = command.name
        if name == commands.ERROR:
            raise ProtocolError("CURVE client sent ERROR, which only a server may send")
        if self._state == "hello":
            if name != HELLO:
                raise unexpected(command, "CURVE", "HELLO")
            return self._hello(command.data)
        if self._state == "initiate" and name == INITIATE:
            self._initiate(command.data)
            return []
        raise unexpected(command, "CURVE", "INITIATE" if self._state == "initiate" else "nothing")

    def _hello(self, data: bytes) -> list[bytes]:
        if len(data) != HELLO_DATA_SIZE:
            raise ProtocolError(f"CURVE HELLO must be 200 bytes, got {len(data) + 6}")
        if data[:2] != b"\x01\x00":
            raise ProtocolError(f"CURVE HELLO version {data[0]}.{data[1]} is not 1.0")
        client_transient = data[74:106]
        tail = data[106:114]
        hello_key = self._beforenm(client_transient, self._secret, "HELLO")
        signature = self._open(data[114:], NONCE_HELLO + tail, hello_key, "HELLO")
        if signature != bytes(64):
            raise ProtocolError("CURVE HELLO signature box does not hold 64 zero bytes")
        self._accept_nonce(tail, "HELLO")
        self._client_transient = client_transient
        # Our transient pair and a fresh cookie key, both for this handshake only.
        self._transient_secret = os.urandom(KEY_SIZE)
        transient_public = self._backend.scalarmult_base(self._transient_secret)
        self._cookie_key = os.urandom(KEY_SIZE)
        cookie_nonce = os.urandom(16)
        cookie = cookie_nonce + self._backend.seal(
            client_transient + self._transient_secret,
            NONCE_COOKIE + cookie_nonce,
            self._cookie_key,
        )
        welcome_nonce = os.urandom(16)
        box = self._backend.seal(
            transient_public + cookie, NONCE_WELCOME + welcome_nonce, hello_key
        )
        self._state = "initiate"
        return [encode_command(WELCOME, welcome_nonce + box)]

    def _initiate(self, data: bytes) -> None:
        if len(data) < INITIATE_MIN_DATA_SIZE:
            raise ProtocolError(f"CURVE INITIATE too short ({len(data) + 9} bytes, minimum 257)")
        cookie_key, self._cookie_key = self._cookie_key, None  # one use only
        assert cookie_key is not None
        cookie = data[:COOKIE_SIZE]
        expected = self._client_transient + self._transient_secret
        content = self._open(cookie[16:], NONCE_COOKIE + cookie[:16], cookie_key, "cookie")
        if not hmac.compare_digest(content, expected):
            raise ProtocolError("CURVE INITIATE cookie was not issued for this connection")
        tail = data[96:104]
        self._session_key = self._beforenm(
            self._client_transient, self._transient_secret, "INITIATE"
        )
        plain = self._open(data[104:], NONCE_INITIATE + tail, self._session_key, "INITIATE")
        if len(plain) < KEY_SIZE + 16 + 80:
            raise ProtocolError("CURVE INITIATE box too short for a vouch")
        client_key = plain[:KEY_SIZE]
        vouch_nonce = plain[KEY_SIZE : KEY_SIZE + 16]
        vouch_key = self._beforenm(client_key, self._transient_secret, "vouch")
        vouch = self._open(
            plain[KEY_SIZE + 16 : KEY_SIZE + 96], NONCE_VOUCH + vouch_nonce, vouch_key, "vouch"
        )
        if not hmac.compare_digest(vouch, self._client_transient + self._public):
            raise ProtocolError(
                "CURVE vouch does not match: the client's long-term key did not vouch for "
                "this connection's transient key and our server key"
            )
        self._accept_nonce(tail, "INITIATE")
        self.peer_properties = parse_properties(plain[KEY_SIZE + 96 :])
        self.peer_curve_key = client_key
        self._transient_secret = b""  # the session key is all we need from here on
        self._state = "auth"
        self._request_authentication(self._zap_domain, (client_key,))

    def _authenticated(self) -> list[bytes]:
        tail = self._take_nonce()
        box = self._backend.seal(self.local_metadata, NONCE_READY + tail, self._session_key)
        self._state = "done"
        self._start_session(NONCE_MESSAGE_S, NONCE_MESSAGE_C)
        return [encode_command(commands.READY, tail + box)]
