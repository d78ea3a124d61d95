"""Z85 (ZeroMQ RFC 32): the printable encoding libzmq uses for CURVE keys.

Every 4 bytes become 5 characters (big-endian base 85). Decoding is strict, like libzmq's
``zmq_z85_decode``: a wrong length, a character outside the alphabet or a group above
``0xFFFFFFFF`` is a ``ValueError``. Silently accepting such text would turn a mistyped key into a
different key and a confusing handshake failure far from the cause.

Speed matters little (keys are 40 characters) but costs nothing: groups go through
``struct``/``int`` conversions, encoding uses a 7225-entry table of character pairs, and decoding
validates and maps every character with two C-level ``bytes.translate`` calls.
"""

from __future__ import annotations

import struct

from ..base_errors import InvalidArgument

__all__ = ["Z85_ALPHABET", "z85_decode", "z85_encode"]

Z85_ALPHABET = (
    "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"  # values 0..61
    ".-:+=^!/*?&<>()[]{}@%$#"  # values 62..84
)
_ALPHABET_BYTES = Z85_ALPHABET.encode("ascii")
_PAIRS = tuple(a + b for a in Z85_ALPHABET for b in Z85_ALPHABET)  # value v < 85**2 -> 2 chars
# bytes.translate table: alphabet character -> its value 0..84 (other entries are never used:
# the text is checked against the alphabet first).
_DECODE_TABLE = bytearray(256)
for _value, _char in enumerate(_ALPHABET_BYTES):
    _DECODE_TABLE[_char] = _value
_DECODE = bytes(_DECODE_TABLE)
del _value, _char, _DECODE_TABLE

_85_2 = 85 * 85
_85_3 = 85 * 85 * 85


def z85_encode(data: bytes) -> str:
    """Encode ``data`` (length a multiple of 4) as Z85 text (length a multiple of 5)."""
    n = len(data)
    if n % 4:
        raise InvalidArgument(f"Z85 can only encode a multiple of 4 bytes, got {n}")
    pairs = _PAIRS
    alphabet = Z85_ALPHABET
    parts: list[str] = []
    append = parts.append
    for value in struct.unpack(f">{n // 4}I", data):
        # value < 2**32 < 85**5: high two digits, middle two digits, last digit
        high, low = divmod(value, _85_3)
        middle, last = divmod(low, 85)
        append(pairs[high])
        append(pairs[middle])
        append(alphabet[last])
    return "".join(parts)


def z85_decode(text: str | bytes) -> bytes:
    """Decode strict Z85 ``text`` (``str`` or ASCII ``bytes``) back to bytes.

    Raises ``ValueError`` if the length is not a multiple of 5, a character is not in the Z85
    alphabet (this includes any non-ASCII or control character), or a 5-character group encodes a
    value above ``0xFFFFFFFF``.
    """
    if isinstance(text, str):
        try:
            raw = text.encode("ascii")
        except UnicodeEncodeError:
            raise InvalidArgument("Z85 text contains a non-ASCII character") from None
    else:
        raw = bytes(text)
    n = len(raw)
    if n % 5:
        raise InvalidArgument(f"Z85 text length must be a multiple of 5, got {n}")
    if raw.translate(None, _ALPHABET_BYTES):  # anything left is outside the alphabet
        bad = next(chr(c) for c in raw if c not in _ALPHABET_BYTES)
        raise InvalidArgument(f"Z85 text contains a character outside the alphabet: {bad!r}")
    digits = raw.translate(_DECODE)
    it = iter(digits)
    groups = zip(it, it, it, it, it, strict=True)  # the length is a multiple of 5
    values = [(a * 85 + b) * _85_3 + (c * 85 + d) * 85 + e for a, b, c, d, e in groups]
    if values and max(values) > 0xFFFFFFFF:
        raise InvalidArgument("Z85 group encodes a value above 0xFFFFFFFF")
    return struct.pack(f">{len(values)}I", *values)
