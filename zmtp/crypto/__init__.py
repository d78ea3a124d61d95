"""Cryptography for CURVE: Z85, CURVE keys, and NaCl crypto_box with two back-ends.

This package knows nothing about ZMTP; :mod:`zmtp` builds CurveZMQ on top of it.

* :mod:`.z85`: Z85 text encoding of keys (RFC 32).
* :mod:`.keys`: libzmq-compatible key pairs and key parsing.
* :mod:`.box`: ``beforenm`` / ``seal`` / ``open`` via PyNaCl when installed, else via
  ``cryptography`` plus the pure-Python XSalsa20 in :mod:`.salsa20`; :class:`SessionBox` for
  per-connection MESSAGE traffic; :class:`SodiumBox` for loops that call libsodium inline.
"""

from __future__ import annotations

from .box import (
    BACKEND_ENV_VAR,
    BoxBackend,
    CryptoError,
    NaclBackend,
    NoncePrefixBox,
    PureBackend,
    SessionBox,
    SodiumBox,
    default_backend,
    get_backend,
    nacl_available,
)
from .keys import curve_keypair, curve_public, decode_key
from .salsa20 import hsalsa20, salsa20_keystream, xsalsa20_keystream
from .z85 import Z85_ALPHABET, z85_decode, z85_encode

__all__ = [
    "BACKEND_ENV_VAR",
    "Z85_ALPHABET",
    "BoxBackend",
    "CryptoError",
    "NaclBackend",
    "NoncePrefixBox",
    "PureBackend",
    "SessionBox",
    "SodiumBox",
    "curve_keypair",
    "curve_public",
    "decode_key",
    "default_backend",
    "get_backend",
    "hsalsa20",
    "nacl_available",
    "salsa20_keystream",
    "xsalsa20_keystream",
    "z85_decode",
    "z85_encode",
]
