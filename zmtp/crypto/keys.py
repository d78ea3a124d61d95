"""CURVE key helpers compatible with libzmq's ``zmq_curve_keypair`` / ``zmq_curve_public``.

libzmq and pyzmq exchange CURVE keys as 40-character Z85 text, so that is what these return;
:func:`decode_key` turns anything a user may pass as a key option (Z85 ``str``/``bytes`` or the
32 raw bytes) into raw bytes, and rejects everything else loudly instead of guessing.
"""

from __future__ import annotations

from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey

from ..base_errors import InvalidArgument, WrongType
from .z85 import z85_decode, z85_encode

__all__ = ["curve_keypair", "curve_public", "decode_key"]

KEY_SIZE = 32
Z85_KEY_SIZE = 40


def curve_keypair() -> tuple[str, str]:
    """A new random CURVE key pair as ``(public, secret)``, both 40-character Z85 strings.

    Like ``zmq.curve_keypair()`` (which returns ``bytes``; use ``.encode()`` if you need those).
    The secret comes from ``cryptography``'s X25519 generator, i.e. the OS CSPRNG.
    """
    private = X25519PrivateKey.generate()
    secret = private.private_bytes_raw()
    public = private.public_key().public_bytes_raw()
    return z85_encode(public), z85_encode(secret)


def curve_public(secret: str | bytes | bytearray | memoryview) -> str:
    """The Z85 public key of ``secret`` (Z85 or 32 raw bytes), like ``zmq.curve_public``."""
    raw = decode_key(secret)
    return z85_encode(X25519PrivateKey.from_private_bytes(raw).public_key().public_bytes_raw())


def decode_key(key: str | bytes | bytearray | memoryview) -> bytes:
    """32 raw key bytes from a 40-character Z85 key (``str`` or bytes-like) or 32 raw bytes.

    Raises ``ValueError`` for any other length, for invalid Z85, and ``TypeError`` for other types.
    """
    if isinstance(key, str):
        if len(key) != Z85_KEY_SIZE:
            raise InvalidArgument(
                f"a CURVE key given as text must be {Z85_KEY_SIZE} Z85 characters, got {len(key)}"
            )
        return z85_decode(key)
    if not isinstance(key, (bytes, bytearray, memoryview)):
        raise WrongType(f"a CURVE key must be str or bytes, not {type(key).__name__}")
    raw = bytes(key)
    if len(raw) == KEY_SIZE:
        return raw
    if len(raw) == Z85_KEY_SIZE:
        return z85_decode(raw)
    raise InvalidArgument(
        f"a CURVE key must be {Z85_KEY_SIZE} bytes of Z85 or {KEY_SIZE} raw bytes, got {len(raw)}"
    )
