"""Bounded property tests of the QoS command parser (the CI side of fuzz/fuzz_qos.py).

The parser of ``zmtp_qos.commands`` is lenient (docs/qos-protocol.md §4): it takes any bytes a
peer sends as an ACK, CLR, COMP or NACK and never raises; it returns None only when even the
8-byte digest is missing. What it builds, it reads back; what it reads from a well-formed
command, it rebuilds byte for byte. The encoders refuse what the wire cannot carry with
``ValueError`` and nothing else.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from zmtp.protocol import FrameDecoder
from zmtp.protocol.frames import Command
from zmtp_qos import commands
from zmtp_qos.digest import DIGEST_SIZE

names = st.sampled_from(sorted(commands.NAMES))
algorithms = st.sampled_from(["x", "s"]) | st.characters(max_codepoint=0x7F)
digests = st.binary(min_size=DIGEST_SIZE, max_size=DIGEST_SIZE)


@settings(max_examples=500, deadline=None)
@given(name=names, data=st.binary(max_size=300))
def test_any_data_parses_without_raising(name: bytes, data: bytes) -> None:
    ref = commands.parse_digest(data)
    nack = commands.parse_nack(data)
    if len(data) < 1 + DIGEST_SIZE:
        assert ref is None and nack is None
        return
    assert ref == commands.DigestRef(data[0], data[1 : 1 + DIGEST_SIZE])
    assert nack is not None and nack.ref == ref and 0 <= nack.code <= 0xFF
    assert len(nack.text) <= max(0, len(data) - (1 + DIGEST_SIZE + 3))
    if len(data) < 1 + DIGEST_SIZE + 3:
        assert (nack.code, nack.text) == (0, "")  # too short for a code: code 0, no text


@settings(max_examples=300, deadline=None)
@given(algorithm=algorithms, digest=digests)
def test_digest_commands_round_trip(algorithm: str, digest: bytes) -> None:
    data = commands.digest_data(algorithm, digest)
    assert commands.parse_digest(data) == commands.DigestRef(ord(algorithm), digest)


@settings(max_examples=300, deadline=None)
@given(
    algorithm=algorithms,
    digest=digests,
    code=st.integers(0, 0xFF),
    text=st.text(max_size=80),
    trailing=st.binary(max_size=20),
)
def test_nacks_round_trip(
    algorithm: str, digest: bytes, code: int, text: str, trailing: bytes
) -> None:
    encoded = text.encode("utf-8")
    data = commands.nack_data(algorithm, digest, code, encoded)
    nack = commands.parse_nack(data + trailing)  # bytes after the text are ignored
    assert nack == commands.NackData(commands.DigestRef(ord(algorithm), digest), code, text)
    assert commands.nack_data(algorithm, digest, nack.code, nack.text.encode()) == data


@settings(max_examples=200, deadline=None)
@given(
    name=names,
    algorithm=algorithms,
    digest=digests,
    text=st.binary(max_size=300),
)
def test_commands_survive_the_frame_decoder(
    name: bytes, algorithm: str, digest: bytes, text: bytes
) -> None:
    """What a QoS peer sends, framed as on the wire, arrives as the same command."""
    if name == commands.NACK:
        data = commands.nack_data(algorithm, digest, 0x81, text)
    else:
        data = commands.digest_data(algorithm, digest)
    decoder = FrameDecoder()
    items = decoder.feed(commands.encode_frame(name, data))
    assert items == [Command(name, data)] and decoder.error is None
    assert commands.parse_digest(data) == commands.DigestRef(ord(algorithm), digest)


@settings(max_examples=200, deadline=None)
@given(
    digest=st.binary(max_size=20),
    code=st.integers(-5, 300),
    size=st.sampled_from([0, 1, 0xFFFF, 0x10000]),
)
def test_encoders_refuse_only_with_value_error(digest: bytes, code: int, size: int) -> None:
    text = bytes(size)
    valid = len(digest) == DIGEST_SIZE and 0 <= code <= 0xFF and size <= 0xFFFF
    if valid:
        commands.nack_data("x", digest, code, text)
    else:
        with pytest.raises(ValueError):
            commands.nack_data("x", digest, code, text)
