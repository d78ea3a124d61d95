"""Z85 (RFC 32) and CURVE key helpers against the known-answer vectors in ``tests/vectors/``."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests._vectors import load
from zmtp.crypto import (
    Z85_ALPHABET,
    curve_keypair,
    curve_public,
    decode_key,
    z85_decode,
    z85_encode,
)

VECTORS = load("crypto.json")
Z85 = VECTORS["z85"]
MANPAGE = VECTORS["curve_keys_from_zmq_curve_manpage"]


@pytest.mark.parametrize("case", Z85["valid"], ids=lambda c: c["z85"])
def test_valid_vectors(case: dict[str, str]) -> None:
    raw = bytes.fromhex(case["bytes_hex"])
    assert z85_encode(raw) == case["z85"]
    assert z85_decode(case["z85"]) == raw
    assert z85_decode(case["z85"].encode("ascii")) == raw


@pytest.mark.parametrize("text", Z85["invalid_z85"], ids=repr)
def test_invalid_vectors(text: str) -> None:
    with pytest.raises(ValueError):
        z85_decode(text)


@pytest.mark.parametrize("text", Z85["invalid_z85"], ids=repr)
def test_invalid_vectors_as_bytes(text: str) -> None:
    # latin-1 keeps "\x80" a single byte >= 0x80, as a C caller would pass it
    with pytest.raises(ValueError):
        z85_decode(text.encode("latin-1"))


@pytest.mark.parametrize("name", sorted(MANPAGE))
def test_manpage_keys_round_trip(name: str) -> None:
    key = MANPAGE[name]
    raw = bytes.fromhex(key["hex"])
    assert z85_encode(raw) == key["z85"]
    assert z85_decode(key["z85"]) == raw


def test_empty() -> None:
    assert z85_encode(b"") == ""
    assert z85_decode("") == b""


def test_group_boundaries() -> None:
    assert z85_encode(bytes(4)) == "00000"
    assert z85_decode("%nSc0") == b"\xff\xff\xff\xff"
    with pytest.raises(ValueError, match="above 0xFFFFFFFF"):
        z85_decode("00000%nSc1")  # the overflowing group is not the first one


@pytest.mark.parametrize("size", [1, 2, 3, 5, 33])
def test_encode_rejects_unaligned_length(size: int) -> None:
    with pytest.raises(ValueError, match="multiple of 4"):
        z85_encode(bytes(size))


@pytest.mark.parametrize("bad", ['"', "'", ",", ";", "\\", "_", "`", "|", "~", " ", "\x00", "é"])
def test_decode_rejects_every_non_alphabet_character(bad: str) -> None:
    with pytest.raises(ValueError):
        z85_decode("0000" + bad)


def test_alphabet_is_85_distinct_printable_characters() -> None:
    assert len(Z85_ALPHABET) == 85
    assert len(set(Z85_ALPHABET)) == 85
    assert all(c.isprintable() and not c.isspace() for c in Z85_ALPHABET)


@given(st.binary(max_size=400).map(lambda b: b[: len(b) - len(b) % 4]))
def test_round_trip(data: bytes) -> None:
    text = z85_encode(data)
    assert len(text) == len(data) * 5 // 4
    assert set(text) <= set(Z85_ALPHABET)
    assert z85_decode(text) == data


@given(st.lists(st.integers(0, 84), min_size=5, max_size=5))
def test_decode_matches_definition(digits: list[int]) -> None:
    text = "".join(Z85_ALPHABET[d] for d in digits)
    value = 0
    for d in digits:
        value = value * 85 + d
    if value > 0xFFFFFFFF:
        with pytest.raises(ValueError):
            z85_decode(text)
    else:
        assert z85_decode(text) == value.to_bytes(4, "big")


# ---------------------------------------------------------------------------- CURVE key helpers


@pytest.mark.parametrize("who", ["client", "server"])
def test_curve_public_from_manpage_secret(who: str) -> None:
    secret = MANPAGE[f"{who}_secret"]
    public = MANPAGE[f"{who}_public"]["z85"]
    assert curve_public(secret["z85"]) == public
    assert curve_public(secret["z85"].encode()) == public
    assert curve_public(bytes.fromhex(secret["hex"])) == public


def test_curve_keypair() -> None:
    public, secret = curve_keypair()
    assert isinstance(public, str)
    assert isinstance(secret, str)
    assert len(public) == len(secret) == 40
    assert curve_public(secret) == public
    assert curve_keypair() != (public, secret)


def test_decode_key_forms() -> None:
    key = MANPAGE["server_public"]
    raw = bytes.fromhex(key["hex"])
    assert decode_key(key["z85"]) == raw
    assert decode_key(key["z85"].encode()) == raw
    assert decode_key(raw) == raw
    assert decode_key(bytearray(raw)) == raw


@pytest.mark.parametrize(
    "key",
    ["", "x" * 39, "0" * 41, "0" * 32, b"", b"\x00" * 31, b"\x00" * 33, b"0" * 39, b"0" * 45],
    ids=lambda k: f"{type(k).__name__}{len(k)}",
)
def test_decode_key_rejects_wrong_length(key: str | bytes) -> None:
    with pytest.raises(ValueError, match="CURVE key"):
        decode_key(key)


def test_decode_key_rejects_bad_z85() -> None:
    with pytest.raises(ValueError):
        decode_key("~" * 40)
    with pytest.raises(ValueError):
        decode_key("#" * 40)  # valid characters, overflowing groups


def test_decode_key_rejects_other_types() -> None:
    with pytest.raises(TypeError):
        decode_key(12345)  # type: ignore[arg-type]
