"""crypto_box back-ends, the pure Salsa20 family and SessionBox.

Known answers come from ``tests/vectors/crypto.json`` (NaCl/libsodium test suites); both
back-ends must also be byte-identical to each other on random inputs. PyNaCl is a test
dependency: without it the ``nacl`` cases fail (never skip), so a broken environment cannot pass
silently.
"""

from __future__ import annotations

import hashlib
import random
import struct
import sys

import pytest
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey, X25519PublicKey
from hypothesis import given, settings
from hypothesis import strategies as st

from tests._vectors import load
from zmtp.crypto import (
    BACKEND_ENV_VAR,
    BoxBackend,
    CryptoError,
    NaclBackend,
    PureBackend,
    SessionBox,
    SodiumBox,
    default_backend,
    get_backend,
    hsalsa20,
    salsa20_keystream,
    xsalsa20_keystream,
)
from zmtp.crypto import box as box_module
from zmtp.crypto import salsa20 as salsa20_module

VECTORS = load("crypto.json")
X25519 = VECTORS["x25519"]
BOX = VECTORS["crypto_box"]
BACKEND_NAMES = ["pure", "nacl"]

ALICE_SK = bytes.fromhex(X25519["alice_secret"])
ALICE_PK = bytes.fromhex(X25519["alice_public"])
BOB_SK = bytes.fromhex(X25519["bob_secret"])
BOB_PK = bytes.fromhex(X25519["bob_public"])
BOX_KEY = bytes.fromhex(VECTORS["hsalsa20"][0]["output"])  # beforenm(bob_pk, alice_sk)
BOX_NONCE = bytes.fromhex(BOX["nonce"])
BOX_PLAIN = bytes.fromhex(BOX["plaintext"])
BOX_OUT = bytes.fromhex(BOX["output"])

MESSAGE_C = b"CurveZMQMESSAGEC"
MESSAGE_S = b"CurveZMQMESSAGES"


def _backend(name: str) -> BoxBackend:
    try:
        return get_backend(name)
    except ImportError as exc:  # PyNaCl is a test dependency: fail, don't skip
        pytest.fail(f"crypto back-end {name!r} unavailable: {exc}")


@pytest.fixture(params=BACKEND_NAMES)
def backend(request: pytest.FixtureRequest) -> BoxBackend:
    return _backend(request.param)


# ------------------------------------------------------------------ straightforward reference
# Scalar Salsa20 written directly from the spec, to cross-check the lane-packed implementation
# on inputs the vectors do not cover (random keys, counters crossing 2**32, every batch size).


def _rotl(v: int, r: int) -> int:
    return ((v << r) | (v >> (32 - r))) & 0xFFFFFFFF


def _ref_rounds(x: list[int]) -> list[int]:
    x = list(x)
    quarters = [(0, 4, 8, 12), (5, 9, 13, 1), (10, 14, 2, 6), (15, 3, 7, 11)]
    quarters += [(0, 1, 2, 3), (5, 6, 7, 4), (10, 11, 8, 9), (15, 12, 13, 14)]
    for _ in range(10):
        for a, b, c, d in quarters:
            x[b] ^= _rotl((x[a] + x[d]) & 0xFFFFFFFF, 7)
            x[c] ^= _rotl((x[b] + x[a]) & 0xFFFFFFFF, 9)
            x[d] ^= _rotl((x[c] + x[b]) & 0xFFFFFFFF, 13)
            x[a] ^= _rotl((x[d] + x[c]) & 0xFFFFFFFF, 18)
    return x


def _ref_state(key: bytes, inp: bytes) -> list[int]:
    s = struct.unpack("<4I", b"expand 32-byte k")
    k = struct.unpack("<8I", key)
    i = struct.unpack("<4I", inp)
    return [s[0], *k[:4], s[1], *i, s[2], *k[4:], s[3]]


def _ref_hsalsa20(key: bytes, inp: bytes) -> bytes:
    x = _ref_rounds(_ref_state(key, inp))
    return struct.pack("<8I", *(x[j] for j in (0, 5, 10, 15, 6, 7, 8, 9)))


def _ref_block(key: bytes, nonce8: bytes, counter: int) -> bytes:
    start = _ref_state(key, nonce8 + counter.to_bytes(8, "little"))
    x = _ref_rounds(start)
    return struct.pack("<16I", *((a + b) & 0xFFFFFFFF for a, b in zip(x, start, strict=True)))


def _ref_stream(key: bytes, nonce8: bytes, length: int, counter: int = 0) -> bytes:
    blocks = (length + 63) // 64
    return b"".join(_ref_block(key, nonce8, counter + i) for i in range(blocks))[:length]


def test_reference_matches_vectors() -> None:
    for case in VECTORS["hsalsa20"]:
        key, inp = bytes.fromhex(case["key"]), bytes.fromhex(case["input"])
        assert _ref_hsalsa20(key, inp).hex() == case["output"]


# ------------------------------------------------------------------------- known answers


@pytest.mark.parametrize("case", VECTORS["hsalsa20"], ids=lambda c: c["note"][:40])
def test_hsalsa20_vectors(case: dict[str, str]) -> None:
    out = hsalsa20(bytes.fromhex(case["key"]), bytes.fromhex(case["input"]))
    assert out.hex() == case["output"]


def test_x25519_vector_recipe() -> None:
    # The pure recipe's first step: cryptography's exchange is NaCl's crypto_scalarmult.
    alice = X25519PrivateKey.from_private_bytes(ALICE_SK)
    bob = X25519PrivateKey.from_private_bytes(BOB_SK)
    shared = X25519["shared_secret"]
    assert alice.exchange(X25519PublicKey.from_public_bytes(BOB_PK)).hex() == shared
    assert bob.exchange(X25519PublicKey.from_public_bytes(ALICE_PK)).hex() == shared


def test_scalarmult_base_vectors(backend: BoxBackend) -> None:
    assert backend.scalarmult_base(ALICE_SK) == ALICE_PK
    assert backend.scalarmult_base(BOB_SK) == BOB_PK


@pytest.mark.parametrize("who", ["client", "server"])
def test_scalarmult_base_manpage_keys(backend: BoxBackend, who: str) -> None:
    keys = VECTORS["curve_keys_from_zmq_curve_manpage"]
    secret = bytes.fromhex(keys[f"{who}_secret"]["hex"])
    assert backend.scalarmult_base(secret).hex() == keys[f"{who}_public"]["hex"]


def test_beforenm_vector(backend: BoxBackend) -> None:
    assert backend.beforenm(BOB_PK, ALICE_SK) == BOX_KEY
    assert backend.beforenm(ALICE_PK, BOB_SK) == BOX_KEY  # both ends derive the same key


def test_crypto_box_vector(backend: BoxBackend) -> None:
    key = backend.beforenm(BOB_PK, ALICE_SK)
    assert backend.seal(BOX_PLAIN, BOX_NONCE, key) == BOX_OUT
    assert backend.open(BOX_OUT, BOX_NONCE, key) == BOX_PLAIN
    # Bob opens with his own view of the key
    assert backend.open(BOX_OUT, BOX_NONCE, backend.beforenm(ALICE_PK, BOB_SK)) == BOX_PLAIN


def test_crypto_box_vector_keystream() -> None:
    # The XSalsa20 part alone: ciphertext = plaintext XOR keystream[32:], tag key = keystream[:32]
    stream = xsalsa20_keystream(BOX_KEY, BOX_NONCE, 32 + len(BOX_PLAIN))
    assert bytes(a ^ b for a, b in zip(BOX_PLAIN, stream[32:], strict=True)) == BOX_OUT[16:]


def test_xsalsa20_4mib_stream_hash() -> None:
    case = VECTORS["xsalsa20_stream"]
    stream = xsalsa20_keystream(
        bytes.fromhex(case["key"]), bytes.fromhex(case["nonce"]), case["length"]
    )
    assert len(stream) == case["length"]
    assert hashlib.sha256(stream).hexdigest() == case["sha256_of_stream"]


@pytest.mark.parametrize(
    "public",
    [BOX["small_order_public_key_must_fail"], "00" * 32, "01" + "00" * 31],
    ids=["vector", "zero", "one"],
)
def test_small_order_public_key_rejected(backend: BoxBackend, public: str) -> None:
    with pytest.raises(CryptoError, match="small order"):
        backend.beforenm(bytes.fromhex(public), ALICE_SK)


# ------------------------------------------------------------------------- forgery


def test_tampered_box_rejected(backend: BoxBackend) -> None:
    for position in (0, 15, 16, 17, len(BOX_OUT) // 2, len(BOX_OUT) - 1):
        for bit in (0x01, 0x80):
            forged = bytearray(BOX_OUT)
            forged[position] ^= bit
            with pytest.raises(CryptoError, match="authentication"):
                backend.open(bytes(forged), BOX_NONCE, BOX_KEY)


def test_truncated_or_extended_box_rejected(backend: BoxBackend) -> None:
    for forged in (BOX_OUT[:-1], BOX_OUT + b"\x00", BOX_OUT[:16], BOX_OUT[1:]):
        with pytest.raises(CryptoError):
            backend.open(forged, BOX_NONCE, BOX_KEY)


@pytest.mark.parametrize("size", [0, 1, 15])
def test_box_shorter_than_tag_rejected(backend: BoxBackend, size: int) -> None:
    with pytest.raises(CryptoError, match="too short"):
        backend.open(bytes(size), BOX_NONCE, BOX_KEY)


def test_wrong_nonce_or_key_rejected(backend: BoxBackend) -> None:
    other_nonce = BOX_NONCE[:-1] + bytes([BOX_NONCE[-1] ^ 1])
    with pytest.raises(CryptoError):
        backend.open(BOX_OUT, other_nonce, BOX_KEY)
    with pytest.raises(CryptoError):
        backend.open(BOX_OUT, BOX_NONCE, bytes(32))


def test_empty_message(backend: BoxBackend) -> None:
    sealed = backend.seal(b"", BOX_NONCE, BOX_KEY)
    assert len(sealed) == 16
    assert backend.open(sealed, BOX_NONCE, BOX_KEY) == b""
    with pytest.raises(CryptoError):
        backend.open(bytes(16), BOX_NONCE, BOX_KEY)


# ------------------------------------------------------------------------- argument checks


def test_bad_sizes_are_value_errors(backend: BoxBackend) -> None:
    for call in (
        lambda: backend.seal(b"x", BOX_NONCE[:23], BOX_KEY),
        lambda: backend.seal(b"x", BOX_NONCE + b"\x00", BOX_KEY),
        lambda: backend.seal(b"x", BOX_NONCE, BOX_KEY[:31]),
        lambda: backend.open(BOX_OUT, BOX_NONCE[:23], BOX_KEY),
        lambda: backend.open(BOX_OUT, BOX_NONCE, BOX_KEY + b"\x00"),
        lambda: backend.beforenm(BOB_PK[:31], ALICE_SK),
        lambda: backend.beforenm(BOB_PK, ALICE_SK[:31]),
        lambda: backend.scalarmult_base(ALICE_SK[:31]),
        lambda: backend.bind_nonce_prefix(BOX_KEY, MESSAGE_C[:15]),
        lambda: backend.bind_nonce_prefix(BOX_KEY[:31], MESSAGE_C),
    ):
        with pytest.raises(ValueError):
            call()


def test_salsa20_argument_checks() -> None:
    key, nonce = bytes(32), bytes(8)
    with pytest.raises(ValueError):
        salsa20_keystream(key[:31], nonce, 64)
    with pytest.raises(ValueError):
        salsa20_keystream(key, nonce[:7], 64)
    with pytest.raises(ValueError):
        salsa20_keystream(key, nonce, -1)
    with pytest.raises(ValueError, match="counter"):
        salsa20_keystream(key, nonce, 65, counter=2**64 - 1)  # second block would wrap
    with pytest.raises(ValueError, match="counter"):
        salsa20_keystream(key, nonce, 1, counter=-1)
    with pytest.raises(ValueError):
        xsalsa20_keystream(key, bytes(23), 64)
    with pytest.raises(ValueError):
        hsalsa20(key, bytes(15))
    with pytest.raises(ValueError):
        hsalsa20(key[:31], bytes(16))
    assert salsa20_keystream(key, nonce, 0) == b""
    assert salsa20_keystream(key, nonce, 64, counter=2**64 - 1) == _ref_block(key, nonce, 2**64 - 1)


# ------------------------------------------------------------------------- Salsa20 layouts

# Sizes around each switch between code paths: single block, diagonal batch, word-packed batch,
# several equal word-packed batches.
_DIAG = salsa20_module._DIAG_MAX_BLOCKS
_PACKED = salsa20_module._PACKED_MAX_BLOCKS
BLOCK_COUNTS = sorted({1, 2, 3, _DIAG, _DIAG + 1, _PACKED, _PACKED + 1, 2 * _PACKED + 3})


@pytest.mark.parametrize("blocks", BLOCK_COUNTS)
@pytest.mark.parametrize("counter", [0, 2**32 - 2, 2**64 - 4 * _PACKED])
def test_salsa20_every_layout_matches_reference(blocks: int, counter: int) -> None:
    rng = random.Random(blocks * 7919 + counter)
    key, nonce = rng.randbytes(32), rng.randbytes(8)
    length = blocks * 64 - (blocks % 3) * 5  # also a partial last block
    stream = salsa20_keystream(key, nonce, length, counter)
    assert len(stream) == length
    # the reference is slow: check the first and last few blocks, and any 2**32 crossing
    head = min(length, 192)
    assert stream[:head] == _ref_stream(key, nonce, head, counter)
    tail_start = max(0, (blocks - 3) * 64)
    assert stream[tail_start:] == _ref_stream(
        key, nonce, length - tail_start, counter + tail_start // 64
    )


@given(
    key=st.binary(min_size=32, max_size=32),
    nonce=st.binary(min_size=8, max_size=8),
    start=st.integers(0, 40),
    length=st.integers(1, 40 * 64),
)
@settings(max_examples=50, deadline=None)
def test_salsa20_counter_offset_is_a_slice(
    key: bytes, nonce: bytes, start: int, length: int
) -> None:
    whole = salsa20_keystream(key, nonce, start * 64 + length)
    assert salsa20_keystream(key, nonce, length, counter=start) == whole[start * 64 :]


@given(key=st.binary(min_size=32, max_size=32), inp=st.binary(min_size=16, max_size=16))
@settings(max_examples=50, deadline=None)
def test_hsalsa20_matches_reference(key: bytes, inp: bytes) -> None:
    assert hsalsa20(key, inp) == _ref_hsalsa20(key, inp)


@given(
    key=st.binary(min_size=32, max_size=32),
    nonce=st.binary(min_size=8, max_size=8),
    counter=st.one_of(st.integers(0, 2**64 - 1), st.integers(2**32 - 3, 2**32 + 3)),
)
@settings(max_examples=50, deadline=None)
def test_single_block_matches_reference(key: bytes, nonce: bytes, counter: int) -> None:
    assert salsa20_keystream(key, nonce, 64, counter) == _ref_block(key, nonce, counter)


# ------------------------------------------------------------------------- back-end equivalence

keys32 = st.binary(min_size=32, max_size=32)
nonces24 = st.binary(min_size=24, max_size=24)


def _message(size: int, seed: int) -> bytes:
    return random.Random(seed).randbytes(size)


@given(key=keys32, nonce=nonces24, size=st.integers(0, 5000), seed=st.integers(0, 2**32))
@settings(deadline=None)
def test_pure_and_nacl_seal_identical(key: bytes, nonce: bytes, size: int, seed: int) -> None:
    pure, nacl = _backend("pure"), _backend("nacl")
    message = _message(size, seed)
    sealed = nacl.seal(message, nonce, key)
    assert pure.seal(message, nonce, key) == sealed
    assert pure.open(sealed, nonce, key) == message
    assert nacl.open(sealed, nonce, key) == message


@pytest.mark.parametrize(
    "size",
    sorted(
        {0, 1, 31, 32, 33, 95, 96, 97}
        | {64 * b - 32 + d for b in (_DIAG, _DIAG + 1, _PACKED, _PACKED + 1) for d in (-1, 0, 1)}
        | {65536}
    ),
)
def test_pure_and_nacl_identical_at_layout_boundaries(size: int) -> None:
    pure, nacl = _backend("pure"), _backend("nacl")
    message = _message(size, size)
    key, nonce = _message(32, size + 1), _message(24, size + 2)
    sealed = nacl.seal(message, nonce, key)
    assert pure.seal(message, nonce, key) == sealed
    assert pure.open(sealed, nonce, key) == message


@given(alice=keys32, bob=keys32)
@settings(max_examples=30, deadline=None)
def test_pure_and_nacl_keys_identical(alice: bytes, bob: bytes) -> None:
    pure, nacl = _backend("pure"), _backend("nacl")
    alice_pk = nacl.scalarmult_base(alice)
    bob_pk = nacl.scalarmult_base(bob)
    assert pure.scalarmult_base(alice) == alice_pk
    assert pure.scalarmult_base(bob) == bob_pk
    shared = nacl.beforenm(bob_pk, alice)
    assert pure.beforenm(bob_pk, alice) == shared
    assert pure.beforenm(alice_pk, bob) == shared


@pytest.mark.parametrize("name", BACKEND_NAMES)
@given(key=keys32, nonce=nonces24, size=st.integers(0, 5000), seed=st.integers(0, 2**32))
@settings(max_examples=50, deadline=None)
def test_seal_open_round_trip(name: str, key: bytes, nonce: bytes, size: int, seed: int) -> None:
    backend = _backend(name)
    message = _message(size, seed)
    sealed = backend.seal(message, nonce, key)
    assert len(sealed) == size + 16
    assert backend.open(sealed, nonce, key) == message


# ------------------------------------------------------------------------- SessionBox


@pytest.mark.parametrize("name", BACKEND_NAMES)
@given(
    key=keys32,
    nonce=st.one_of(st.integers(0, 2**64 - 1), st.integers(0, 10)),
    size=st.integers(0, 5000),
    seed=st.integers(0, 2**32),
)
@settings(max_examples=50, deadline=None)
def test_session_box_equals_full_nonce_seal(
    name: str, key: bytes, nonce: int, size: int, seed: int
) -> None:
    backend = _backend(name)
    message = _message(size, seed)
    full_nonce = MESSAGE_C + nonce.to_bytes(8, "big")
    client = SessionBox(backend, key, MESSAGE_C, MESSAGE_S)
    server = SessionBox(backend, key, MESSAGE_S, MESSAGE_C)
    sealed = client.seal(message, nonce)
    assert sealed == backend.seal(message, full_nonce, key)
    assert sealed == _backend("pure" if name == "nacl" else "nacl").seal(message, full_nonce, key)
    assert server.open(sealed, nonce) == message
    assert backend.open(sealed, full_nonce, key) == message


def test_session_box_directions_and_nonces(backend: BoxBackend) -> None:
    client = SessionBox(backend, BOX_KEY, MESSAGE_C, MESSAGE_S)
    server = SessionBox(backend, BOX_KEY, MESSAGE_S, MESSAGE_C)
    sealed = client.seal(b"hello", 3)
    assert server.open(sealed, 3) == b"hello"
    with pytest.raises(CryptoError):
        client.open(sealed, 3)  # wrong direction prefix
    with pytest.raises(CryptoError):
        server.open(sealed, 4)  # wrong short nonce
    with pytest.raises(CryptoError):
        server.open(sealed[:-1], 3)
    with pytest.raises(CryptoError):
        server.open(b"", 3)
    for bad in (-1, 2**64):
        with pytest.raises(ValueError, match="short nonce"):
            client.seal(b"x", bad)
        with pytest.raises(ValueError, match="short nonce"):
            server.open(sealed, bad)
    with pytest.raises(ValueError):
        SessionBox(backend, BOX_KEY, MESSAGE_C[:15], MESSAGE_S)


def test_session_box_vector(backend: BoxBackend) -> None:
    # The crypto_box vector's nonce split as prefix + short nonce
    session = SessionBox(backend, BOX_KEY, BOX_NONCE[:16], BOX_NONCE[:16])
    short = int.from_bytes(BOX_NONCE[16:], "big")
    assert session.seal(BOX_PLAIN, short) == BOX_OUT
    assert session.open(BOX_OUT, short) == BOX_PLAIN


# ------------------------------------------------------------------------- SodiumBox
# The raw libsodium handle the CURVE MESSAGE loops call inline (zmtp.protocol.curve).


def test_sodium_box_only_on_nacl() -> None:
    assert _backend("pure").bind_nonce_prefix(BOX_KEY, MESSAGE_C).sodium is None
    sodium = _backend("nacl").bind_nonce_prefix(BOX_KEY, MESSAGE_C).sodium
    assert isinstance(sodium, SodiumBox)
    assert sodium.key == BOX_KEY
    assert bytes(sodium.nonce) == MESSAGE_C + bytes(8)


@given(
    key=st.binary(min_size=32, max_size=32),
    nonce=st.integers(0, 2**64 - 1),
    size=st.sampled_from([0, 1, 31, 32, 33, 64, 65, 4096, 70_000]),
    seed=st.integers(0, 2**32),
)
@settings(max_examples=40, deadline=None)
def test_sodium_box_equals_seal_and_open(key: bytes, nonce: int, size: int, seed: int) -> None:
    """The inline calls with the in-place nonce give the boxes of both back-ends' seal."""
    message = _message(size, seed)
    full_nonce = MESSAGE_C + nonce.to_bytes(8, "big")
    sodium = _backend("nacl").bind_nonce_prefix(key, MESSAGE_C).sodium
    assert sodium is not None
    ffi = sodium.ffi
    struct.pack_into(">Q", sodium.nonce, 16, nonce)
    out = sodium.buffer(size + 16)
    assert sodium.seal_easy(out, message, size, sodium.nonce_ptr, sodium.key) == 0
    sealed = ffi.buffer(out, size + 16)[:]
    assert sealed == _backend("pure").seal(message, full_nonce, key)
    # Open straight out of a larger buffer at an offset (how the read buffer is used).
    wire = b"junk" + sealed + b"more"
    plain = sodium.buffer(size)
    source = ffi.from_buffer(wire) + 4
    assert sodium.open_easy(plain, source, size + 16, sodium.nonce_ptr, sodium.key) == 0
    assert ffi.buffer(plain, size)[:] == message
    # In place, as libsodium allows (m == c + 16).
    inplace = bytearray(sealed)
    pointer = ffi.from_buffer(inplace)
    assert sodium.open_easy(pointer + 16, pointer, size + 16, sodium.nonce_ptr, sodium.key) == 0
    assert bytes(inplace[16:]) == message
    # A bad tag, a bad byte or the wrong nonce: non-zero, in constant time inside libsodium.
    for bad in (bytes((sealed[0] ^ 1,)) + sealed[1:], sealed[:-1] + bytes((sealed[-1] ^ 1,))):
        assert sodium.open_easy(plain, bad, size + 16, sodium.nonce_ptr, sodium.key) != 0
    struct.pack_into(">Q", sodium.nonce, 16, (nonce + 1) % 2**64)
    assert sodium.open_easy(plain, sealed, size + 16, sodium.nonce_ptr, sodium.key) != 0


def test_sodium_box_nonce_buffer_cannot_move() -> None:
    """The nonce pointer stays valid: the exported bytearray refuses to be resized."""
    sodium = _backend("nacl").bind_nonce_prefix(BOX_KEY, MESSAGE_S).sodium
    assert sodium is not None
    with pytest.raises(BufferError):
        sodium.nonce.append(0)


def test_nacl_without_its_cffi_module(monkeypatch: pytest.MonkeyPatch) -> None:
    """A PyNaCl without ``nacl._sodium``: the public bindings serve, byte-identical."""
    monkeypatch.setattr(box_module, "_load_sodium", lambda: None)
    backend = NaclBackend()
    prefixed = backend.bind_nonce_prefix(BOX_KEY, BOX_NONCE[:16])
    assert prefixed.sodium is None
    assert prefixed.seal(BOX_PLAIN, BOX_NONCE[16:]) == BOX_OUT
    assert prefixed.open(BOX_OUT, BOX_NONCE[16:]) == BOX_PLAIN
    with pytest.raises(CryptoError):
        prefixed.open(BOX_OUT[:-1], BOX_NONCE[16:])


# ------------------------------------------------------------------------- selection


def test_get_backend() -> None:
    assert isinstance(get_backend("pure"), PureBackend)
    assert isinstance(_backend("nacl"), NaclBackend)
    assert get_backend("pure") is get_backend("PURE")
    assert get_backend("pure").name == "pure"
    assert _backend("nacl").name == "nacl"
    with pytest.raises(ValueError, match="unknown crypto back-end"):
        get_backend("openssl")


def test_default_backend_prefers_nacl(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(BACKEND_ENV_VAR, raising=False)
    assert default_backend().name == "nacl"


@pytest.mark.parametrize("name", BACKEND_NAMES)
def test_default_backend_env_override(monkeypatch: pytest.MonkeyPatch, name: str) -> None:
    monkeypatch.setenv(BACKEND_ENV_VAR, name)
    assert default_backend().name == name


def test_default_backend_env_invalid(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(BACKEND_ENV_VAR, "fast")
    with pytest.raises(ValueError, match=BACKEND_ENV_VAR):
        default_backend()


def test_without_pynacl(monkeypatch: pytest.MonkeyPatch) -> None:
    # Simulate an install without PyNaCl: None in sys.modules makes the import fail.
    for module in ("nacl", "nacl.bindings", "nacl.exceptions"):
        monkeypatch.setitem(sys.modules, module, None)
    monkeypatch.setattr(box_module, "_BACKENDS", {})
    monkeypatch.setattr(box_module, "_nacl_available", None)
    monkeypatch.delenv(BACKEND_ENV_VAR, raising=False)
    assert default_backend().name == "pure"
    with pytest.raises(ImportError, match="PyNaCl"):
        NaclBackend()
    monkeypatch.setenv(BACKEND_ENV_VAR, "nacl")
    with pytest.raises(ImportError, match=f"{BACKEND_ENV_VAR}=nacl.*PyNaCl"):
        default_backend()
