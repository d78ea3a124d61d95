"""Message digests (docs/qos-protocol.md §3): XXH64 (``x``) and truncated SHA-1 (``s``), byte-exact.

The input is the plaintext ZMTP data-frame encoding of every part as this socket writes it
(MORE on all parts but the last, LONG above 255 bytes, never the COMMAND bit). The ``x``
digest is the unsigned 64-bit XXH64 (seed 0) packed **little-endian**; ``xxhash.xxh64().digest()``
is the big-endian form and would not interoperate with the reference implementation.
"""

from __future__ import annotations

import hashlib
import struct
from collections.abc import Callable, Sequence

import xxhash

#: Our algorithm preference, as sent in ``X-QoS-Hash`` (and the reference's default).
PREFERENCE = "xs"
XXH64 = "x"
SHA1 = "s"
DIGEST_SIZE = 8

_u64_le = struct.Struct("<Q").pack
_u64_be = struct.Struct(">Q").pack
_xxh64 = xxhash.xxh64_intdigest
_xxh64_stream = xxhash.xxh64
#: The frame header of a last (or only) part of each short size: 0x00 then the size.
_SHORT_HEADS = [bytes((0, size)) for size in range(256)]
#: Above this a single part is hashed as header then part (no concatenated copy).
_STREAM_ABOVE = 4096


def wire_encoding(parts: Sequence[bytes]) -> bytes:
    """The ZMTP data-frame encoding of ``parts`` (what the digest covers)."""
    out = bytearray()
    last = len(parts) - 1
    for i, part in enumerate(parts):
        more = 0x01 if i < last else 0x00
        size = len(part)
        if size > 255:
            out.append(more | 0x02)
            out += _u64_be(size)
        else:
            out.append(more)
            out.append(size)
        out += part
    return bytes(out)


def digest_x(parts: Sequence[bytes]) -> bytes:
    """XXH64 (seed 0) of the wire encoding, 8 bytes little-endian (:func:`key_x` packed)."""
    return _u64_le(key_x(parts))


def digest_s(parts: Sequence[bytes]) -> bytes:
    """The first 8 bytes of SHA-1 of the wire encoding."""
    return hashlib.sha1(wire_encoding(parts), usedforsecurity=False).digest()[:DIGEST_SIZE]


DIGESTERS: dict[str, Callable[[Sequence[bytes]], bytes]] = {XXH64: digest_x, SHA1: digest_s}


def key_of(digest_bytes: bytes) -> int:
    """The sender's tracking key of an 8-byte digest as it travels (in an ACK, COMP or
    NACK): the digest read as an unsigned little-endian integer. An int key hashes in no
    time and compares in one step, where a fresh bytes object from a frame is hashed
    (siphash) at every dict lookup."""
    return int.from_bytes(digest_bytes, "little")


def key_x(parts: Sequence[bytes]) -> int:
    """:func:`digest_x` as the sender's key: the XXH64 itself, no packing (the bytes on
    the wire are its little-endian form, so ``key_of(digest_x(p)) == key_x(p)``)."""
    if len(parts) == 1:  # the common case without building a bytearray
        part = parts[0]
        size = len(part)
        if size < 256:
            return _xxh64(_SHORT_HEADS[size] + part)
        if size <= _STREAM_ABOVE:
            return _xxh64(b"\x02" + _u64_be(size) + part)
        state = _xxh64_stream(b"\x02" + _u64_be(size))
        state.update(part)
        return state.intdigest()
    return _xxh64(wire_encoding(parts))


def key_s(parts: Sequence[bytes]) -> int:
    """:func:`digest_s` as the sender's key."""
    return int.from_bytes(digest_s(parts), "little")


def keys_x(messages: Sequence[Sequence[bytes]]) -> list[int]:
    """:func:`key_x` of every message of a writer's batch in one call: a batch of short
    single-part messages (the usual one) is one comprehension with no call per message."""
    heads = _SHORT_HEADS
    try:
        return [_xxh64(heads[len(part)] + part) for (part,) in messages]
    except (ValueError, IndexError):  # a multipart or a long message somewhere: one by one
        return list(map(key_x, messages))


def keys_s(messages: Sequence[Sequence[bytes]]) -> list[int]:
    """:func:`key_s` of every message of a batch."""
    return list(map(key_s, messages))


def digests_x(messages: Sequence[Sequence[bytes]]) -> list[bytes]:
    """:func:`digest_x` of every message of a read's batch in one call (as :func:`keys_x`)."""
    heads = _SHORT_HEADS
    pack = _u64_le
    try:
        return [pack(_xxh64(heads[len(part)] + part)) for (part,) in messages]
    except (ValueError, IndexError):
        return list(map(digest_x, messages))


def digests_s(messages: Sequence[Sequence[bytes]]) -> list[bytes]:
    """:func:`digest_s` of every message of a batch."""
    return list(map(digest_s, messages))


def received_digests_x(messages: Sequence[bytes | Sequence[bytes]]) -> list[bytes]:
    """:func:`digests_x` of a read taken bare (``zmtp.engine.queue.Received``: a one-part
    message is its only part as ``bytes``, a multipart one its list): the digest of a bare
    message is XXH64 of its 2-byte header and the part, with no list to unpack; a batch with
    a multipart or long message somewhere goes one by one."""
    heads = _SHORT_HEADS
    pack = _u64_le
    try:
        return [pack(_xxh64(heads[len(m)] + m)) for m in messages]  # type: ignore[operator]
    except (TypeError, IndexError):  # a list (multipart) or a part over 255 bytes
        return [digest_x((m,) if isinstance(m, bytes) else m) for m in messages]


def received_digests_s(messages: Sequence[bytes | Sequence[bytes]]) -> list[bytes]:
    """:func:`digests_s` of a read taken bare (see :func:`received_digests_x`)."""
    return [digest_s((m,) if isinstance(m, bytes) else m) for m in messages]


#: Per algorithm, the sender's batch keys (:func:`keys_x`) and the receiver's batch digests.
BATCH_KEYERS: dict[str, Callable[[Sequence[Sequence[bytes]]], list[int]]] = {
    XXH64: keys_x,
    SHA1: keys_s,
}
BATCH_DIGESTERS: dict[str, Callable[[Sequence[Sequence[bytes]]], list[bytes]]] = {
    XXH64: digests_x,
    SHA1: digests_s,
}
#: Per algorithm, the receiver's batch digests of a read taken bare (:func:`received_digests_x`).
RECEIVED_DIGESTERS: dict[str, Callable[[Sequence[bytes | Sequence[bytes]]], list[bytes]]] = {
    XXH64: received_digests_x,
    SHA1: received_digests_s,
}


def digest(algorithm: str, parts: Sequence[bytes]) -> bytes:
    """The ``algorithm`` ("x" or "s") digest of ``parts``; ValueError for anything else."""
    try:
        return DIGESTERS[algorithm](parts)
    except KeyError:
        raise ValueError(f"unknown QoS digest algorithm {algorithm!r}") from None


def choose_algorithm(peer_hash: str) -> str:
    """The algorithm for a connection (docs/qos-protocol.md §2.2 step 4): ``x`` if the peer sent no
    ``X-QoS-Hash``, else the first letter of our preference that the peer offers.

    The caller checked the overlap first (:func:`zmtp_qos.handshake.validate_peer`); with no
    overlap this falls back to ``x`` rather than ever sending an algorithm we do not know.
    """
    for letter in PREFERENCE:
        if letter in peer_hash:
            return letter
    return XXH64
