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

libzmq specifics honoured here (docs/libzmq-notes.md#curve):

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
from typing import Any

from ..crypto import BoxBackend, CryptoError, NoncePrefixBox, SodiumBox, default_backend
from . import commands
from .errors import ProtocolError
from .frames import (
    COMMAND,
    LONG,
    MORE,
    RESERVED,
    Command,
    FrameTransform,
    Item,
    encode_command,
    frame_header_error,
    parse_command,
)
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
_pack_u64_into = _U64.pack_into
_unpack_u64_from = _U64.unpack_from
_MAX_NONCE = (1 << 64) - 1
#: Below this, a batch cannot run out of nonces: it would need 2**48 frames (petabytes of list
#: pointers alone), so the exact count of a batch's frames is only taken above it.
_NONCE_CHECK_ABOVE = _MAX_NONCE - (1 << 48)

_MESSAGE_NAME = b"\x07MESSAGE"
#: Inner plaintext flags byte -> ZMTP frame flags, for the four legal values.
_INNER_TO_FRAME = (0, MORE, COMMAND, COMMAND | MORE)
_INNER_LAST = b"\x00"
_INNER_MORE = b"\x01"
_INNER_COMMAND = b"\x02"
#: Outer headers of short MESSAGE frames (outer flags 0x00), indexed by body size.
_SHORT_HEADERS = tuple(bytes((0, n)) for n in range(256))
_LONG_FLAG = bytes((LONG,))
#: Everything before the box of a MESSAGE frame in one struct call, short and long form:
#: ``(header + name, nonce)`` and ``(LONG, size, name, nonce)``.
_SHORT_HEAD = Struct(">10sQ")
_LONG_HEAD = Struct(">BQ8sQ")
_SHORT_NAMED = tuple(header + _MESSAGE_NAME for header in _SHORT_HEADERS)
#: ``max_message_size`` -1 as a number: a frame size field cannot exceed it.
_NO_SIZE_LIMIT = 1 << 64
#: Outer flags that cannot carry a MESSAGE: reserved bits, and MORE (it travels in the box).
_NOT_MESSAGE_FLAGS = RESERVED | MORE
#: Plaintexts up to this size (flags byte included) go through one scratch buffer per direction
#: and connection; larger ones get a buffer of their own (a copy is needed either way).
_SCRATCH_SIZE = 4096


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
    commands_in_clear = False  # each command is a MESSAGE box of its own

    def __init__(self, local_metadata: bytes, as_server: bool, backend: BoxBackend | None) -> None:
        super().__init__(local_metadata, as_server)
        self._backend = backend if backend is not None else default_backend()
        self._next_nonce = 1  # our next short nonce
        self._peer_nonce = 0  # the last short nonce the peer used
        self._session_key = b""
        self._sealer: NoncePrefixBox | None = None
        self._opener: NoncePrefixBox | None = None
        # With libsodium: the sealer's C entry points and the scratch box buffer (see
        # _encode_sodium); cffi objects, hence Any.
        self._seal_sodium: SodiumBox | None = None
        self._scratch: Any = None
        self._scratch_view: Any = None

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
        sodium = self._sealer.sodium
        if sodium is not None:
            self._seal_sodium = sodium
            self._scratch = sodium.buffer(_SCRATCH_SIZE + TAG_SIZE)
            self._scratch_view = sodium.ffi.buffer(self._scratch)
        self.decode_transform = self._message_decoder()
        self.complete = True

    @staticmethod
    def _check_error(command: Command) -> None:
        """libzmq's ERROR checks: a reason-length byte that fits in what follows."""
        data = command.data
        if not data or data[0] > len(data) - 1:
            raise ProtocolError("malformed CURVE ERROR: bad reason length")

    # ------------------------------------------------------------------ MESSAGE framing

    def _check_nonce_space(self, messages: Sequence[Sequence[bytes]]) -> int:
        """Our next nonce, after checking the batch cannot run past 2**64 - 1 (cheap: see
        :data:`_NONCE_CHECK_ABOVE`)."""
        if self._sealer is None:
            raise ProtocolError("CURVE handshake is not complete")
        nonce = self._next_nonce
        if nonce > _NONCE_CHECK_ABOVE and (
            nonce + sum(len(parts) for parts in messages) - 1 > _MAX_NONCE
        ):
            raise ProtocolError("CURVE short nonce space exhausted (2**64 frames)")
        return nonce

    def encode_shared_messages(self, messages: Sequence[Sequence[bytes]]) -> bytes:
        """Shared messages are boxed like any other: each connection has its own keys and
        nonces, so a publisher's wire bytes in clear are never used here."""
        return self.encode_messages(messages)

    def encode_messages(self, messages: Sequence[Sequence[bytes]]) -> bytes:
        """Every frame of every message as one MESSAGE (one box and one nonce each)."""
        nonce = self._check_nonce_space(messages)
        if self._seal_sodium is not None:
            return self._encode_sodium(messages, nonce)
        assert self._sealer is not None
        seal = self._sealer.seal
        pack = _pack_u64
        headers = _SHORT_HEADERS
        name = _MESSAGE_NAME
        out: list[bytes] = []
        append = out.append
        for parts in messages:
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

    def _encode_sodium(self, messages: Sequence[Sequence[bytes]], nonce: int) -> bytes:
        """:meth:`encode_messages` with libsodium called inline: ~1 µs per 64 B frame, of which
        libsodium's own work is ~0.55 µs (the generic loop costs ~1.7 µs).

        Per frame: the nonce tail is written into the one nonce buffer, the box is sealed into
        the connection's scratch buffer (a fresh bytearray above :data:`_SCRATCH_SIZE`, which
        then goes into the output as it is), and one struct call builds everything before the
        box (header, name, nonce) as the piece preceding it.
        """
        sodium = self._seal_sodium
        assert sodium is not None
        seal = sodium.seal_easy
        key = sodium.key
        nonce_buf = sodium.nonce
        nonce_ptr = sodium.nonce_ptr
        from_buffer = sodium.ffi.from_buffer
        scratch = self._scratch
        view = self._scratch_view
        set_tail = _pack_u64_into
        short_head = _SHORT_HEAD.pack
        long_head = _LONG_HEAD.pack
        named = _SHORT_NAMED
        name = _MESSAGE_NAME
        out: list[bytes | bytearray] = []
        append = out.append
        for parts in messages:
            if len(parts) == 1:  # the common case, without the per-part bookkeeping
                part = parts[0]
                n = len(part) + 1  # the plaintext: inner flags byte + part
                set_tail(nonce_buf, 16, nonce)
                if n <= _SCRATCH_SIZE:
                    seal(scratch, _INNER_LAST + part, n, nonce_ptr, key)
                    append(
                        short_head(named[n + 32], nonce)
                        if n < 224
                        else long_head(LONG, n + 32, name, nonce)
                    )
                    append(view[0 : n + 16])
                else:
                    box = bytearray(n + 16)
                    seal(from_buffer(box), _INNER_LAST + part, n, nonce_ptr, key)
                    append(long_head(LONG, n + 32, name, nonce))
                    append(box)
                nonce += 1
                continue
            last = len(parts) - 1
            for i, part in enumerate(parts):
                n = len(part) + 1
                plain = (_INNER_MORE if i < last else _INNER_LAST) + part
                set_tail(nonce_buf, 16, nonce)
                if n <= _SCRATCH_SIZE:
                    seal(scratch, plain, n, nonce_ptr, key)
                    append(
                        short_head(named[n + 32], nonce)
                        if n < 224
                        else long_head(LONG, n + 32, name, nonce)
                    )
                    append(view[0 : n + 16])
                else:
                    box = bytearray(n + 16)
                    seal(from_buffer(box), plain, n, nonce_ptr, key)
                    append(long_head(LONG, n + 32, name, nonce))
                    append(box)
                nonce += 1
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
        """The decoder's transform after the handshake: MESSAGE frames in, their frames out.

        With libsodium it also decodes a whole read in one pass (:class:`_SodiumMessageDecoder`).
        The last peer nonce moves into the decoder (``_peer_nonce`` is the handshake's).
        """
        assert self._opener is not None
        sodium = self._opener.sodium
        if sodium is not None:
            return _SodiumMessageDecoder(sodium, self._peer_nonce)
        return _message_transform(self._opener, self._peer_nonce)


def _message_transform(opener: NoncePrefixBox, last: int) -> FrameTransform:
    """The per-frame MESSAGE transform for any back-end (the pure one uses it).

    A closure rather than a method: on the per-frame hot path, attribute lookups on an object
    cost as much as the rest of a small message's bookkeeping.
    """
    open_box = opener.open
    name = _MESSAGE_NAME
    to_frame = _INNER_TO_FRAME

    def decode(flags: int, body: bytes) -> tuple[int, bytes]:
        nonlocal last
        if flags & MORE or body[:8] != name or len(body) < MESSAGE_MIN_BODY_SIZE:
            raise _bad_message(flags, body)
        tail = body[8:16]
        nonce = int.from_bytes(tail, "big")
        if nonce <= last:
            raise _replayed(nonce, last)
        try:
            plain = open_box(body[16:], tail)
        except CryptoError:
            raise _crypto_failure("MESSAGE") from None
        last = nonce
        inner = plain[0]
        if inner > 3:
            raise _reserved_inner(inner)
        return to_frame[inner], plain[1:]

    return decode


class _SodiumMessageDecoder:
    """MESSAGE decoding with libsodium called inline; a :class:`~.frames.BatchTransform`.

    :meth:`decode_batch` is the hot path: the frame decoder hands it each read whole, and it
    parses, checks and opens every complete MESSAGE frame in one loop, with no Python call,
    slice or allocation per frame beyond the libsodium call and the plaintext ``bytes``: the
    box is read in place from the read buffer (a cffi pointer plus an offset), the nonce tail
    is written into one reusable buffer, small plaintexts land in one scratch buffer and the
    returned part is one slice of it. Measured ~1.4 µs per 64 B frame against 2.5 µs for the
    per-frame transform; libsodium's own share is ~0.65 µs.

    :meth:`__call__` is the per-frame transform for what the batch leaves to the frame decoder
    (a body over 64 KiB arriving over several reads). Both share the last accepted nonce, and
    both make the same checks in the same order with the same errors as
    :func:`_message_transform` (the tests run every hostile case on both back-ends).
    """

    __slots__ = ("_last", "_scratch", "_sodium", "_view")

    def __init__(self, sodium: SodiumBox, last: int) -> None:
        self._sodium = sodium
        self._last = last
        self._scratch = sodium.buffer(_SCRATCH_SIZE)
        self._view = sodium.ffi.buffer(self._scratch)

    def __call__(self, flags: int, body: bytes) -> tuple[int, bytes]:
        if flags & MORE or body[:8] != _MESSAGE_NAME or len(body) < MESSAGE_MIN_BODY_SIZE:
            raise _bad_message(flags, body)
        nonce = _unpack_u64_from(body, 8)[0]
        if nonce <= self._last:
            raise _replayed(nonce, self._last)
        sodium = self._sodium
        _pack_u64_into(sodium.nonce, 16, nonce)
        n = len(body) - 32  # plaintext size, inner flags byte included
        plain = self._scratch if n <= _SCRATCH_SIZE else sodium.buffer(n)
        source = sodium.ffi.from_buffer(body) + 16
        if sodium.open_easy(plain, source, n + 16, sodium.nonce_ptr, sodium.key):
            raise _crypto_failure("MESSAGE")
        self._last = nonce
        inner = plain[0]
        if inner > 3:
            raise _reserved_inner(inner)
        return _INNER_TO_FRAME[inner], sodium.ffi.buffer(plain, n)[1:n]

    def decode_batch(
        self, buf: bytes, pos: int, parts: list[bytes], out: list[Item], max_size: int
    ) -> tuple[int, list[bytes]]:
        """Every complete frame of ``buf[pos:]``; see :class:`~.frames.BatchTransform`."""
        end = len(buf)
        if end - pos < 2:
            return pos, parts
        sodium = self._sodium
        open_box = sodium.open_easy
        key = sodium.key
        nonce_buf = sodium.nonce
        nonce_ptr = sodium.nonce_ptr
        base = sodium.ffi.from_buffer(buf)  # the read buffer itself: boxes are opened in place
        scratch = self._scratch
        view = self._view
        startswith = buf.startswith
        set_tail = _pack_u64_into
        unpack = _unpack_u64_from
        name = _MESSAGE_NAME
        append = out.append
        limit = max_size if max_size >= 0 else _NO_SIZE_LIMIT
        last = self._last
        named = _SHORT_NAMED
        short_limit = min(limit, 255)
        min_size = MESSAGE_MIN_BODY_SIZE
        scratch_size = _SCRATCH_SIZE
        header_end = end - 2  # the last position where a frame header can start
        try:
            while pos <= header_end:
                size = buf[pos + 1]
                # Outer flags 0, this size and the MESSAGE name, all checked in one call.
                if startswith(named[size], pos) and min_size <= size <= short_limit:
                    start = pos + 2
                    stop = start + size
                    if stop > end:
                        break  # incomplete: the frame decoder checks and buffers it
                else:
                    flags = buf[pos]
                    if flags & LONG:
                        if end - pos < 9:
                            break
                        size = unpack(buf, pos + 1)[0]
                        start = pos + 9
                    else:
                        start = pos + 2
                    stop = start + size
                    if stop > end:
                        break
                    if (
                        flags & _NOT_MESSAGE_FLAGS
                        or size < min_size
                        or size > limit
                        or not startswith(name, start)
                    ):
                        raise frame_header_error(flags, size, max_size) or _bad_message(
                            flags, buf[start:stop]
                        )
                nonce = unpack(buf, start + 8)[0]
                if nonce <= last:
                    raise _replayed(nonce, last)
                set_tail(nonce_buf, 16, nonce)
                n = size - 32  # plaintext size, inner flags byte included
                if n <= scratch_size:
                    if open_box(scratch, base + (start + 16), size - 16, nonce_ptr, key):
                        raise _crypto_failure("MESSAGE")
                    last = nonce
                    pos = stop
                    inner = scratch[0]
                    if not inner and not parts:  # a single-part message: the common case
                        append([view[1:n]])
                        continue
                    body = view[1:n]
                else:
                    plain = sodium.buffer(n)
                    if open_box(plain, base + (start + 16), size - 16, nonce_ptr, key):
                        raise _crypto_failure("MESSAGE")
                    last = nonce
                    pos = stop
                    inner = plain[0]
                    body = sodium.ffi.buffer(plain, n)[1:n]
                # The frame decoder's general loop, for the frame the box carried.
                if inner == 0:
                    if parts:
                        parts.append(body)
                        append(parts)
                        parts = []
                    else:
                        append([body])
                elif inner == 1:
                    parts.append(body)
                elif inner == 2:
                    append(parse_command(body))  # may sit between two frames of a message
                elif inner == 3:
                    raise ProtocolError("command frame with the MORE flag set")
                else:
                    raise _reserved_inner(inner)
        finally:
            self._last = last
        return pos, parts


def _replayed(nonce: int, last: int) -> ProtocolError:
    return ProtocolError(
        f"CURVE MESSAGE nonce {nonce} is not above the previous one ({last}): replayed or reordered"
    )


def _reserved_inner(inner: int) -> ProtocolError:
    return ProtocolError(f"CURVE MESSAGE with reserved flag bits set (0x{inner:02x})")


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
