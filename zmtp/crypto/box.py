"""NaCl ``crypto_box`` (X25519 + XSalsa20-Poly1305) behind one interface with two back-ends.

CurveZMQ needs exactly four primitives, so that is the whole interface (:class:`BoxBackend`):

* ``beforenm(public, secret)``: the 32-byte box key ``HSalsa20(X25519(secret, public), 0^16)``,
  computed once per key pair (libzmq does the same) so each box is only the symmetric part;
* ``seal`` / ``open``: ``crypto_box_afternm`` = ``crypto_secretbox`` with that key (the cookie
  uses ``crypto_secretbox`` directly with its own random key: same function). The box layout is
  ``tag(16) || ciphertext``, i.e. libsodium's "easy" layout and exactly what goes on the wire;
* ``scalarmult_base(secret)``: the public key of a secret key.

Back-ends, byte-identical (the test suite checks them against each other and against the NaCl
known-answer vectors):

* :class:`NaclBackend`: PyNaCl's bundled libsodium. Microseconds per box; the default whenever
  PyNaCl is importable.
* :class:`PureBackend`: X25519 and Poly1305 from ``cryptography`` (a hard dependency, constant
  time, compiled) plus the pure-Python XSalsa20 of :mod:`zmtp.crypto.salsa20`, because
  ``cryptography`` has no Salsa20 family cipher. Tens of microseconds per small box; fine for
  handshakes and modest traffic, and it keeps the package free of compilers and optional wheels.

The environment variable ``ZMTP_CRYPTO_BACKEND=pure|nacl`` overrides the automatic choice (for
example to test the fallback on a machine that has PyNaCl).

:class:`SessionBox` is the per-connection fast path for CurveZMQ MESSAGE traffic; see there.
"""

from __future__ import annotations

import os
from typing import Any, Protocol

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey, X25519PublicKey
from cryptography.hazmat.primitives.poly1305 import Poly1305

from ..base_errors import InvalidArgument, ZMTPError
from .salsa20 import hsalsa20, salsa20_keystream

__all__ = [
    "BACKEND_ENV_VAR",
    "BoxBackend",
    "CryptoError",
    "NaclBackend",
    "NoncePrefixBox",
    "PureBackend",
    "SessionBox",
    "SodiumBox",
    "default_backend",
    "get_backend",
    "nacl_available",
]

BACKEND_ENV_VAR = "ZMTP_CRYPTO_BACKEND"
KEY_SIZE = 32
NONCE_SIZE = 24
NONCE_PREFIX_SIZE = 16
TAG_SIZE = 16
_ZERO16 = bytes(16)


class CryptoError(ZMTPError):
    """A box failed authentication, or a key exchange produced an unusable shared secret.

    In CurveZMQ both mean the peer is broken or hostile: the connection must be closed. Size and
    type mistakes by the caller (a 23-byte nonce, say) are ``ValueError`` instead, since they are
    bugs in our code rather than something a peer can cause.
    """


class NoncePrefixBox(Protocol):
    """seal/open for one box key and one fixed 16-byte nonce prefix; only the 8-byte tail varies.

    Obtained from :meth:`BoxBackend.bind_nonce_prefix`; used by :class:`SessionBox`.
    """

    #: libsodium's entry points for this key and prefix (see :class:`SodiumBox`), or None when
    #: the back-end has none (pure) and callers must go through :meth:`seal` / :meth:`open`.
    @property
    def sodium(self) -> SodiumBox | None: ...

    def seal(self, message: bytes, tail: bytes) -> bytes:
        """Box ``message`` with nonce ``prefix + tail`` (``tail`` is 8 bytes)."""
        ...

    def open(self, box: bytes, tail: bytes) -> bytes:
        """Open a box made with nonce ``prefix + tail``; :class:`CryptoError` if forged."""
        ...


class BoxBackend(Protocol):
    """The crypto_box primitives CurveZMQ needs. All keys are 32 raw bytes, nonces 24 bytes."""

    name: str

    def beforenm(self, public: bytes, secret: bytes) -> bytes:
        """Shared box key for (peer public, own secret); :class:`CryptoError` on small order."""
        ...

    def seal(self, message: bytes, nonce: bytes, key: bytes) -> bytes:
        """``crypto_box_afternm`` / ``crypto_secretbox``: returns ``tag(16) || ciphertext``."""
        ...

    def open(self, box: bytes, nonce: bytes, key: bytes) -> bytes:
        """Inverse of :meth:`seal`; :class:`CryptoError` on a bad tag or a box under 16 bytes."""
        ...

    def scalarmult_base(self, secret: bytes) -> bytes:
        """X25519 public key of ``secret`` (clamped as usual)."""
        ...

    def bind_nonce_prefix(self, key: bytes, prefix: bytes) -> NoncePrefixBox:
        """seal/open with ``key`` for nonces that all start with the 16-byte ``prefix``."""
        ...


def _check_len(what: str, value: bytes, size: int) -> None:
    if len(value) != size:
        raise InvalidArgument(f"{what} must be {size} bytes, got {len(value)}")


def _check_key(key: bytes) -> None:
    if len(key) != KEY_SIZE:
        raise InvalidArgument(f"box key must be {KEY_SIZE} bytes, got {len(key)}")


def _check_nonce(nonce: bytes) -> None:
    if len(nonce) != NONCE_SIZE:
        raise InvalidArgument(f"box nonce must be {NONCE_SIZE} bytes, got {len(nonce)}")


# --------------------------------------------------------------------------------------------
# Pure back-end


def _pure_seal(subkey: bytes, tail: bytes, message: bytes) -> bytes:
    """XSalsa20-Poly1305 seal once the HSalsa20 subkey of the nonce prefix is known.

    Keystream bytes [0:32] are the Poly1305 one-time key (NaCl's 32 ZEROBYTES), the message is
    XORed with the keystream from byte 32 on; the tag covers the ciphertext only.
    """
    n = len(message)
    stream = salsa20_keystream(subkey, tail, 32 + n)
    if n:
        # One big-int XOR instead of a per-byte loop: C speed for any length.
        mixed = int.from_bytes(message, "little") ^ int.from_bytes(stream[32:], "little")
        ciphertext = mixed.to_bytes(n, "little")
    else:
        ciphertext = b""
    return Poly1305.generate_tag(stream[:32], ciphertext) + ciphertext


def _pure_open(subkey: bytes, tail: bytes, box: bytes) -> bytes:
    """Inverse of :func:`_pure_seal`: authenticate first (constant time), then decrypt."""
    if len(box) < TAG_SIZE:
        raise CryptoError(f"box too short: {len(box)} bytes, the tag alone is {TAG_SIZE}")
    ciphertext = box[TAG_SIZE:]
    n = len(ciphertext)
    stream = salsa20_keystream(subkey, tail, 32 + n)
    try:
        Poly1305.verify_tag(stream[:32], ciphertext, box[:TAG_SIZE])
    except InvalidSignature:
        raise CryptoError("box authentication failed (bad tag)") from None
    if not n:
        return b""
    plain = int.from_bytes(ciphertext, "little") ^ int.from_bytes(stream[32:], "little")
    return plain.to_bytes(n, "little")


class _PureNoncePrefixBox:
    """Caches ``HSalsa20(key, prefix)``: each box then costs only the Salsa20 blocks it needs."""

    __slots__ = ("_subkey",)

    def __init__(self, key: bytes, prefix: bytes) -> None:
        _check_key(key)
        _check_len("nonce prefix", prefix, NONCE_PREFIX_SIZE)
        self._subkey = hsalsa20(key, prefix)

    @property
    def sodium(self) -> SodiumBox | None:
        return None

    def seal(self, message: bytes, tail: bytes) -> bytes:
        return _pure_seal(self._subkey, tail, message)

    def open(self, box: bytes, tail: bytes) -> bytes:
        return _pure_open(self._subkey, tail, box)


class PureBackend:
    """``cryptography`` (X25519, Poly1305) + pure-Python XSalsa20. Always available."""

    name = "pure"

    def beforenm(self, public: bytes, secret: bytes) -> bytes:
        _check_len("public key", public, KEY_SIZE)
        _check_len("secret key", secret, KEY_SIZE)
        try:
            shared = X25519PrivateKey.from_private_bytes(secret).exchange(
                X25519PublicKey.from_public_bytes(public)
            )
        except ValueError:  # lengths are checked, so this is the all-zero (small order) result
            raise CryptoError(
                "X25519 shared secret is all zero: the peer public key has small order"
            ) from None
        return hsalsa20(shared, _ZERO16)

    def seal(self, message: bytes, nonce: bytes, key: bytes) -> bytes:
        _check_nonce(nonce)
        _check_key(key)
        return _pure_seal(hsalsa20(key, nonce[:16]), nonce[16:], message)

    def open(self, box: bytes, nonce: bytes, key: bytes) -> bytes:
        _check_nonce(nonce)
        _check_key(key)
        return _pure_open(hsalsa20(key, nonce[:16]), nonce[16:], box)

    def scalarmult_base(self, secret: bytes) -> bytes:
        _check_len("secret key", secret, KEY_SIZE)
        return X25519PrivateKey.from_private_bytes(secret).public_key().public_bytes_raw()

    def bind_nonce_prefix(self, key: bytes, prefix: bytes) -> NoncePrefixBox:
        return _PureNoncePrefixBox(key, prefix)

    def __repr__(self) -> str:
        return "PureBackend()"


# --------------------------------------------------------------------------------------------
# PyNaCl back-end


class SodiumBox:
    """libsodium's box functions for one box key and one 16-byte nonce prefix, for caller loops.

    Why it exists: at 64 B libsodium seals or opens a box in ~0.5 µs, and each Python-level step
    around it (a method call, a slice, a buffer allocation, a nonce concatenation) costs another
    0.05-0.2 µs. The CURVE MESSAGE loops in :mod:`zmtp.protocol.curve` therefore call the C
    functions inline, one call per frame, with the nonce written in place into one reusable
    buffer and ciphertext read straight out of the read buffer. This object is what they need,
    checked once; nothing is checked per call, so the contract is the caller's:

    * :attr:`seal_easy` ``(c, m, mlen, nonce_ptr, key)`` is ``crypto_box_easy_afternm``: writes
      ``mlen + 16`` bytes (``tag || ciphertext``, the CurveZMQ wire layout) to ``c``, returns 0;
    * :attr:`open_easy` ``(m, c, clen, nonce_ptr, key)`` is ``crypto_box_open_easy_afternm``:
      for ``clen >= 16``, writes ``clen - 16`` bytes to ``m`` and returns 0, or returns non-zero
      when the tag does not verify (libsodium compares it in constant time, before decrypting);
    * before each call, write the 8-byte big-endian nonce tail at offset 16 of :attr:`nonce`
      (``struct.pack_into(">Q", box.nonce, 16, n)``); :attr:`nonce_ptr` points at it;
    * ``c``/``m`` are cffi pointers: ``ffi.from_buffer(obj)`` plus an offset, or
      :meth:`buffer` for scratch space. libsodium accepts ``m == c + 16`` (in place).
    """

    __slots__ = ("_alloc", "ffi", "key", "nonce", "nonce_ptr", "open_easy", "seal_easy")

    def __init__(self, ffi: Any, lib: Any, key: bytes, prefix: bytes) -> None:
        _check_key(key)
        _check_len("nonce prefix", prefix, NONCE_PREFIX_SIZE)
        self.ffi: Any = ffi
        self.seal_easy: Any = lib.crypto_box_easy_afternm
        self.open_easy: Any = lib.crypto_box_open_easy_afternm
        self.key = bytes(key)
        # A bytearray with an exported buffer cannot be resized, so the pointer stays valid.
        self.nonce = bytearray(prefix) + bytes(8)
        self.nonce_ptr: Any = ffi.from_buffer(self.nonce)
        # Scratch and output buffers are written in full before they are read: skip the zeroing.
        self._alloc: Any = ffi.new_allocator(should_clear_after_alloc=False)

    def buffer(self, size: int) -> Any:
        """An uninitialised ``unsigned char[size]`` (freed when the last reference goes)."""
        return self._alloc("unsigned char[]", max(size, 1))


def _load_sodium() -> tuple[Any, Any] | None:
    """PyNaCl's cffi module (``ffi``, ``lib``), or None if this PyNaCl does not have one.

    ``nacl._sodium`` is PyNaCl's internal binding: importing :mod:`nacl.bindings` first runs
    ``sodium_init`` (which selects libsodium's fastest implementations for this CPU).
    """
    try:
        import nacl.bindings  # noqa: F401
        from nacl._sodium import ffi, lib  # type: ignore[import-not-found,unused-ignore]
    except ImportError:  # pragma: no cover - depends on PyNaCl's internals
        return None
    if not all(
        hasattr(lib, n) for n in ("crypto_box_easy_afternm", "crypto_box_open_easy_afternm")
    ):
        return None  # pragma: no cover - every PyNaCl since 1.4 has both
    return ffi, lib


class _NaclNoncePrefixBox:
    """libsodium derives the subkey in C in well under a microsecond: just prepend the prefix.

    Key and prefix are checked once here and the tail is always 8 bytes (see :class:`SessionBox`),
    so this calls libsodium directly, skipping :class:`NaclBackend`'s per-call checks.
    """

    __slots__ = ("_key", "_nacl_error", "_open", "_prefix", "_seal", "_sodium")

    def __init__(self, backend: NaclBackend, key: bytes, prefix: bytes) -> None:
        _check_key(key)
        _check_len("nonce prefix", prefix, NONCE_PREFIX_SIZE)
        self._key = bytes(key)
        self._prefix = bytes(prefix)
        self._seal = backend._seal
        self._open = backend._open
        self._nacl_error = backend._nacl_error
        # PyNaCl's Python wrapper costs ~5x libsodium's own work per small box (argument
        # checks, an error message built on every call). This is the per-message CURVE path,
        # so call libsodium through PyNaCl's cffi module directly when it is there
        # (measured 230k -> 340k msgs/s at 64 B); the public bindings remain the fallback.
        loaded = backend._sodium
        self._sodium = None if loaded is None else SodiumBox(*loaded, key, prefix)

    @property
    def sodium(self) -> SodiumBox | None:
        return self._sodium

    def seal(self, message: bytes, tail: bytes) -> bytes:
        sodium = self._sodium
        if sodium is None:
            return self._seal(message, self._prefix + tail, self._key)
        size = len(message) + TAG_SIZE
        out = sodium.buffer(size)
        sodium.seal_easy(out, message, len(message), self._prefix + tail, self._key)
        return sodium.ffi.buffer(out, size)[:]  # type: ignore[no-any-return]

    def open(self, box: bytes, tail: bytes) -> bytes:
        if len(box) < TAG_SIZE:
            raise CryptoError(f"box too short: {len(box)} bytes, the tag alone is {TAG_SIZE}")
        sodium = self._sodium
        if sodium is None:
            try:
                return self._open(box, self._prefix + tail, self._key)
            except self._nacl_error:
                raise CryptoError("box authentication failed (bad tag)") from None
        size = len(box) - TAG_SIZE
        out = sodium.buffer(size)
        if sodium.open_easy(out, box, len(box), self._prefix + tail, self._key):
            raise CryptoError("box authentication failed (bad tag)")
        return sodium.ffi.buffer(out, size)[:]  # type: ignore[no-any-return]


class NaclBackend:
    """PyNaCl (libsodium) back-end. Instantiating it raises ``ImportError`` without PyNaCl.

    Uses ``crypto_box_easy_afternm`` / ``crypto_box_open_easy_afternm``: same result as the
    classic ``crypto_box_afternm`` (which PyNaCl pads and unpads internally), one copy fewer.
    """

    name = "nacl"

    def __init__(self) -> None:
        try:
            from nacl import bindings
            from nacl.exceptions import CryptoError as NaclCryptoError
        except ImportError as exc:
            raise ImportError(
                "the 'nacl' crypto back-end needs PyNaCl: pip install 'zmtp[nacl]'"
            ) from exc
        self._nacl_error = NaclCryptoError
        self._beforenm = bindings.crypto_box_beforenm
        self._seal = bindings.crypto_box_easy_afternm
        self._open = bindings.crypto_box_open_easy_afternm
        self._scalarmult_base = bindings.crypto_scalarmult_base
        self._sodium = _load_sodium()

    def beforenm(self, public: bytes, secret: bytes) -> bytes:
        _check_len("public key", public, KEY_SIZE)
        _check_len("secret key", secret, KEY_SIZE)
        try:
            return self._beforenm(public, secret)
        except self._nacl_error:  # libsodium returns -1 only for an all-zero shared secret
            raise CryptoError(
                "X25519 shared secret is all zero: the peer public key has small order"
            ) from None

    def seal(self, message: bytes, nonce: bytes, key: bytes) -> bytes:
        # Sizes are checked here so that they raise a plain ValueError on both back-ends
        # (PyNaCl's ValueError also derives from its CryptoError, caught in open()).
        _check_nonce(nonce)
        _check_key(key)
        return self._seal(message, nonce, key)

    def open(self, box: bytes, nonce: bytes, key: bytes) -> bytes:
        _check_nonce(nonce)
        _check_key(key)
        if len(box) < TAG_SIZE:
            raise CryptoError(f"box too short: {len(box)} bytes, the tag alone is {TAG_SIZE}")
        try:
            return self._open(box, nonce, key)
        except self._nacl_error:
            raise CryptoError("box authentication failed (bad tag)") from None

    def scalarmult_base(self, secret: bytes) -> bytes:
        _check_len("secret key", secret, KEY_SIZE)
        return self._scalarmult_base(secret)

    def bind_nonce_prefix(self, key: bytes, prefix: bytes) -> NoncePrefixBox:
        return _NaclNoncePrefixBox(self, key, prefix)

    def __repr__(self) -> str:
        return "NaclBackend()"


# --------------------------------------------------------------------------------------------
# Selection

_BACKENDS: dict[str, BoxBackend] = {}
_nacl_available: bool | None = None


def nacl_available() -> bool:
    """Whether PyNaCl can be imported (checked once)."""
    global _nacl_available
    if _nacl_available is None:
        try:
            import nacl.bindings  # noqa: F401
        except ImportError:
            _nacl_available = False
        else:
            _nacl_available = True
    return _nacl_available


def get_backend(name: str) -> BoxBackend:
    """The shared instance of back-end ``name`` (``"pure"`` or ``"nacl"``).

    Raises ``ValueError`` for an unknown name and ``ImportError`` for ``"nacl"`` without PyNaCl.
    Back-ends hold no per-use state, so one instance each is enough.
    """
    key = name.strip().lower()
    backend = _BACKENDS.get(key)
    if backend is None:
        if key == "pure":
            backend = PureBackend()
        elif key == "nacl":
            backend = NaclBackend()
        else:
            raise InvalidArgument(f"unknown crypto back-end {name!r}: expected 'pure' or 'nacl'")
        _BACKENDS[key] = backend
    return backend


def default_backend() -> BoxBackend:
    """PyNaCl when importable, else the pure back-end; ``$ZMTP_CRYPTO_BACKEND`` overrides.

    The variable is read on every call so tests and tools can switch it at run time. Asking for
    ``nacl`` explicitly without PyNaCl is an error rather than a silent, ~10x slower fallback.
    """
    choice = os.environ.get(BACKEND_ENV_VAR, "").strip()
    if choice:
        try:
            return get_backend(choice)
        except ImportError as exc:
            raise ImportError(f"{BACKEND_ENV_VAR}={choice}: {exc}") from exc
        except ValueError as exc:
            raise InvalidArgument(f"{BACKEND_ENV_VAR}={choice!r}: {exc}") from None
    return get_backend("nacl" if nacl_available() else "pure")


# --------------------------------------------------------------------------------------------
# Per-connection MESSAGE boxes


def _nonce_tail(nonce: int) -> bytes:
    try:
        return nonce.to_bytes(8, "big")
    except OverflowError:
        raise InvalidArgument(f"short nonce must be in 0 .. 2**64-1, got {nonce}") from None


class SessionBox:
    """Seal/open CurveZMQ MESSAGE boxes for one connection with the precomputed session key.

    A CurveZMQ MESSAGE nonce is a constant 16-byte prefix per direction (``CurveZMQMESSAGEC`` from
    the client, ``CurveZMQMESSAGES`` from the server) followed by the 8-byte big-endian short
    nonce. XSalsa20 spends one HSalsa20 on those first 16 bytes for every box, which for the pure
    back-end is as expensive as a whole Salsa20 block (~20 µs) and so about half the cost of a
    small message. Since the prefix never changes, the pure back-end computes that subkey once
    per direction here; each message then costs only the Salsa20 blocks it needs, with the
    8-byte counter as the Salsa20 nonce. libsodium does the HSalsa20 in C in a fraction of the
    Python call overhead, so the nacl back-end simply gets the full 24-byte nonce.

    Nonce ordering (strictly increasing, replay rejection) is the caller's job: this class only
    does the cryptography.
    """

    __slots__ = ("_opener", "_sealer", "backend")

    def __init__(
        self, backend: BoxBackend, key: bytes, send_prefix: bytes, recv_prefix: bytes
    ) -> None:
        self.backend = backend
        self._sealer = backend.bind_nonce_prefix(key, send_prefix)
        self._opener = backend.bind_nonce_prefix(key, recv_prefix)

    def seal(self, message: bytes, nonce: int) -> bytes:
        """Box ``message`` with nonce ``send_prefix + be64(nonce)``: ``tag(16) || ciphertext``."""
        return self._sealer.seal(message, _nonce_tail(nonce))

    def open(self, box: bytes, nonce: int) -> bytes:
        """Open a box the peer made with ``recv_prefix + be64(nonce)``; CryptoError if forged."""
        return self._opener.open(box, _nonce_tail(nonce))
