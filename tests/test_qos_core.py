"""The sans-IO QoS core against the spec's vectors (tests/vectors/qos.json) and rules."""

from __future__ import annotations

import random
from dataclasses import dataclass

import pytest
import xxhash

from tests._vectors import load
from zmtp.monitor import PeerInfo
from zmtp.protocol.properties import Properties, encode_properties
from zmtp_qos import codes, commands, digest, handshake
from zmtp_qos.anchor import peer_anchor
from zmtp_qos.config import QoSConfig, backoff_delay
from zmtp_qos.dedup import DedupStore
from zmtp_qos.pending import PendingTracker

VECTORS = load("qos.json")


def _parts(hexes: list[str]) -> list[bytes]:
    return [bytes.fromhex(h) for h in hexes]


@pytest.mark.parametrize("vector", VECTORS["digests"], ids=lambda v: v["encoding_hex"][:16])
def test_digest_vectors(vector: dict[str, object]) -> None:
    parts = _parts(vector["parts_hex"])  # type: ignore[arg-type]
    assert digest.wire_encoding(parts).hex() == vector["encoding_hex"]
    assert digest.digest_x(parts).hex() == vector["digest_x"]
    assert digest.digest_s(parts).hex() == vector["digest_s"]
    assert digest.digest("x", parts) == digest.digest_x(parts)
    assert digest.digest("s", parts) == digest.digest_s(parts)


def test_x_digest_is_little_endian_not_xxhash_digest() -> None:
    parts = [b"hello"]
    wrong = xxhash.xxh64(digest.wire_encoding(parts)).digest()  # big-endian: the trap
    assert digest.digest_x(parts) == wrong[::-1]
    assert digest.digest_x(parts) != wrong


def test_unknown_algorithm_is_refused_for_sending() -> None:
    with pytest.raises(ValueError):
        digest.digest("z", [b"x"])


@pytest.mark.parametrize("vector", VECTORS["commands"], ids=lambda v: v["name"])
def test_command_vectors_encode(vector: dict[str, object]) -> None:
    d = digest.digest_x(_parts(vector["for_parts_hex"]))  # type: ignore[arg-type]
    name = str(vector["name"]).encode()
    if name == commands.NACK:
        data = commands.nack_data("x", d, int(vector["code"]), str(vector["message"]).encode())  # type: ignore[call-overload]
    else:
        data = commands.digest_data("x", d)
    assert commands.encode_frame(name, data).hex() == vector["frame_hex"]


@pytest.mark.parametrize("vector", VECTORS["commands"], ids=lambda v: v["name"])
def test_command_vectors_parse(vector: dict[str, object]) -> None:
    frame = bytes.fromhex(str(vector["frame_hex"]))
    body = frame[9:] if frame[0] & 0x02 else frame[2:]
    name, data = body[1 : 1 + body[0]], body[1 + body[0] :]
    assert name == str(vector["name"]).encode()
    expected = digest.digest_x(_parts(vector["for_parts_hex"]))  # type: ignore[arg-type]
    if name == commands.NACK:
        nack = commands.parse_nack(data)
        assert nack is not None
        assert nack.ref == commands.DigestRef(ord("x"), expected)
        assert (nack.code, nack.text) == (vector["code"], vector["message"])
    else:
        assert commands.parse_digest(data) == commands.DigestRef(ord("x"), expected)


def test_parsing_is_lenient_and_memory_strict() -> None:
    d = bytes(range(8))
    # any algorithm byte: digest is still 8 bytes, extra bytes ignored
    assert commands.parse_digest(b"z" + d + b"junk") == commands.DigestRef(ord("z"), d)
    assert commands.parse_digest(b"x" + d[:7]) is None  # too short: ignored by the caller
    assert commands.parse_digest(b"") is None
    # NACK with fewer than 3 bytes after the digest: code 0, empty text
    for tail in (b"", b"\x84", b"\x84\x00"):
        nack = commands.parse_nack(b"x" + d + tail)
        assert nack is not None and (nack.code, nack.text) == (0, "")
    # msg_len overrunning the data takes what remains
    nack = commands.parse_nack(b"x" + d + b"\x05\xff\xffshort")
    assert nack is not None and (nack.code, nack.text) == (5, "short")
    # invalid UTF-8 does not raise
    nack = commands.parse_nack(b"x" + d + b"\x05\x00\x02\xff\xfe")
    assert nack is not None and nack.code == 5


def test_nack_text_is_cut_on_a_character_boundary() -> None:
    text = "é" * 40000  # 80000 bytes
    cut = codes.cut_text(text)
    assert len(cut) <= codes.MAX_NACK_TEXT
    assert cut.decode("utf-8") == "é" * (codes.MAX_NACK_TEXT // 2)
    assert codes.cut_text("short") == b"short"
    with pytest.raises(ValueError):
        commands.nack_data("x", bytes(8), 5, b"a" * 65536)


def test_nack_codes_and_error_classes() -> None:
    assert [codes.is_retryable(c) for c in (0x81, 0x02, 0x83, 0x84, 0x05)] == [
        True, False, True, True, False,
    ]  # fmt: skip
    assert codes.is_retryable(0x9F) and not codes.is_retryable(0x1F)  # unknown: go by bit 7
    assert codes.code_for_exception(codes.BadInput("x")) == 0x02
    assert codes.code_for_exception(codes.Rejected("x")) == 0x05
    assert codes.code_for_exception(codes.Overloaded("x")) == 0x84
    assert codes.code_for_exception(codes.ProcessingTimeout("x")) == 0x81
    assert codes.code_for_exception(TimeoutError()) == 0x81
    assert codes.code_for_exception(codes.InternalError("x")) == 0x83
    assert codes.code_for_exception(KeyError("x")) == 0x83
    assert codes.code_name(0x84) == "OVERLOADED"
    assert "retryable" in codes.code_name(0x9F)


def test_ready_body_vector_contains_our_properties() -> None:
    props = {"Socket-Type": b"PUSH", "Identity": b"client", **handshake.local_properties(2)}
    assert (
        encode_properties(props).hex() == VECTORS["ready_body_push_identity_client_qos2_hex"][12:]
    )
    assert handshake.local_properties(0) == {}
    assert handshake.local_properties(3) == {"X-QoS": b"3", "X-QoS-Hash": b"xs"}


def _props(**kw: bytes) -> Properties:
    return Properties({k.replace("_", "-"): v for k, v in kw.items()})


@pytest.mark.parametrize(
    ("level", "props", "anchor", "reason"),
    [
        (1, {}, None, "QoS mismatch: local=1 peer=0"),
        (0, {"X-QoS": b"2"}, None, "QoS mismatch: local=0 peer=2"),
        (2, {"X-QoS": b"1", "X-QoS-Hash": b"xs"}, b"id:a", "QoS mismatch: local=2 peer=1"),
        (1, {"X-QoS": b"one"}, None, "QoS mismatch: local=1 peer=b'one'"),
        (1, {"X-QoS": b"1", "X-QoS-Hash": b"q"}, None, "QoS hash mismatch: local=xs peer=q"),
        (
            2,
            {"X-QoS": b"2", "X-QoS-Hash": b"xs"},
            None,
            "QoS 2 requires a stable peer anchor (CURVE public key or non-empty Identity)",
        ),
        (
            3,
            {"X-QoS": b"3"},
            None,
            "QoS 3 requires a stable peer anchor (CURVE public key or non-empty Identity)",
        ),
    ],
)
def test_validation_rejects_with_the_spec_reason(
    level: int, props: dict[str, bytes], anchor: bytes | None, reason: str
) -> None:
    assert handshake.validate_peer(level, Properties(props), anchor) == reason


@pytest.mark.parametrize(
    ("peer_hash", "algorithm"),
    [(None, "x"), (b"", "x"), (b"xs", "x"), (b"sx", "x"), (b"s", "s"), (b"qs", "s")],
)
def test_algorithm_choice(peer_hash: bytes | None, algorithm: str) -> None:
    props = {"X-QoS": b"1"} if peer_hash is None else {"X-QoS": b"1", "X-QoS-Hash": peer_hash}
    result = handshake.validate_peer(1, Properties(props), None)
    assert result == handshake.Negotiated(1, algorithm)


def test_level_one_needs_no_anchor_and_level_zero_stops_early() -> None:
    assert handshake.validate_peer(1, Properties({"X-QoS": b"1"}), None) == handshake.Negotiated(
        1, "x"
    )
    assert handshake.validate_peer(0, Properties({}), None) == handshake.Negotiated(0, "")


def _peer(mechanism: str = "NULL", identity: bytes = b"", key: bytes = b"") -> PeerInfo:
    return PeerInfo("PULL", identity, Properties({}), (3, 1), mechanism, "e", "a", "", key)


def test_anchors() -> None:
    key = bytes(range(32))
    assert peer_anchor(_peer("CURVE", b"ident", key)) == b"curve:" + key  # key wins
    assert peer_anchor(_peer("NULL", b"ident")) == b"id:ident"
    assert peer_anchor(_peer("NULL", b"")) is None
    assert peer_anchor(_peer("CURVE", b"")) is None  # no key learned: no anchor
    # an Identity that looks like a key never collides with one
    assert peer_anchor(_peer("NULL", b"curve:" + key)) != peer_anchor(_peer("CURVE", b"", key))


def test_config_defaults_and_validation() -> None:
    c = QoSConfig()
    assert (c.dead_letter_timeout, c.dedup_ttl, c.max_retries) == (60.0, 60.0, 3)
    assert (c.backoff_base, c.backoff_max, c.processing_timeout) == (0.1, 10.0, None)
    for bad in (
        {"dead_letter_timeout": 0},
        {"dedup_ttl": -1},
        {"max_retries": -1},
        {"backoff_base": 2.0, "backoff_max": 1.0},
        {"processing_timeout": 0},
        {"dead_letter_timeout": float("inf")},
    ):
        with pytest.raises(ValueError):
            QoSConfig(**bad)  # type: ignore[arg-type]


def test_backoff() -> None:
    assert [backoff_delay(k, 0.1, 10.0) for k in range(9)] == pytest.approx(
        [0.1, 0.2, 0.4, 0.8, 1.6, 3.2, 6.4, 10.0, 10.0]
    )
    assert backoff_delay(10_000, 0.1, 10.0) == 10.0


def test_dedup_capacity_evicts_oldest_and_ttl_sweeps() -> None:
    store = DedupStore(capacity=3, ttl=10.0)
    for i in range(5):
        store.add(b"a", bytes([i]) * 8, now=float(i))
    assert [store.seen(b"a", bytes([i]) * 8) for i in range(5)] == [False, False, True, True, True]
    assert not store.seen(b"b", bytes([4]) * 8)  # per anchor
    store.add(b"b", b"B" * 8, now=20.0)
    assert store.sweep(now=13.5) == 2  # added at 2 and 3 are older than 10 s
    assert store.seen(b"a", bytes([4]) * 8) and len(store) == 2
    assert store.remove(b"a", bytes([4]) * 8) and not store.remove(b"a", bytes([4]) * 8)
    assert store.sweep(now=100.0) == 1 and len(store) == 0


@dataclass
class _Entry:
    digest: bytes
    name: str
    key: object = None
    seq: int = 0


def test_pending_identical_messages_are_fifo_per_digest() -> None:
    tracker: PendingTracker[_Entry] = PendingTracker()
    a1, a2, b = _Entry(b"A" * 8, "a1"), _Entry(b"A" * 8, "a2"), _Entry(b"B" * 8, "b")
    for entry in (a1, b, a2):
        tracker.track("peer", entry, entry.digest)
    assert len(tracker) == 3
    assert tracker.settle(b"A" * 8) is a1  # the oldest first, never overwritten
    assert tracker.entries("peer") == [b, a2]
    assert tracker.settle(b"A" * 8) is a2
    assert tracker.settle(b"A" * 8) is None
    assert tracker.settle(b"Z" * 8) is None  # unknown digest: ignored


def test_pending_take_keeps_write_order_and_per_key_settle() -> None:
    tracker: PendingTracker[_Entry] = PendingTracker()
    e = [_Entry(b"A" * 8, f"p{i}") for i in range(3)]
    tracker.track("p", e[0], e[0].digest)
    tracker.track("q", e[1], e[1].digest)
    tracker.track("p", e[2], e[2].digest)
    assert tracker.settle(b"A" * 8, key="q") is e[1]
    assert tracker.take("p") == [e[0], e[2]]
    assert len(tracker) == 0 and tracker.settle(b"A" * 8) is None
    assert tracker.take("p") == []


def test_pending_settle_all_is_settle_in_turn() -> None:
    """A read's run of ACKs settled in one call: FIFO per digest, None for an unknown one."""
    tracker: PendingTracker[_Entry] = PendingTracker()
    a1, a2, b, c = (
        _Entry(d * 8, n) for d, n in ((b"A", "a1"), (b"A", "a2"), (b"B", "b"), (b"C", "c"))
    )
    tracker.track_all("p", [a1, b, a2], [e.digest for e in (a1, b, a2)])
    tracker.track("q", c, c.digest)
    found = tracker.settle_all("p", [b"A" * 8, b"Z" * 8, b"A" * 8, b"C" * 8, b"A" * 8, b"B" * 8])
    assert found == [a1, None, a2, None, None, b]  # c is another key's
    assert len(tracker) == 1 and tracker.entries("p") == []
    assert tracker.settle_all("nobody", [b"C" * 8]) == [None]
    assert tracker.settle_all("q", [b"C" * 8]) == [c] and len(tracker) == 0


def test_single_part_fast_path_matches_general_encoding() -> None:
    for part in (b"", b"a" * 255, b"b" * 256, b"c" * 70000):
        expected = xxhash.xxh64_intdigest(digest.wire_encoding([part])).to_bytes(8, "little")
        assert digest.digest_x([part]) == expected


def test_pending_settle_all_fast_path_falls_back_exactly() -> None:
    """``settle_all`` pops a run in one C-level pass while no identical messages are in
    flight; a repeated or unknown digest, or a FIFO anywhere, gives the same answers as
    settling in turn (what was popped is put back first)."""
    tracker: PendingTracker[_Entry] = PendingTracker()
    a, b = _Entry(b"A" * 8, "a"), _Entry(b"B" * 8, "b")
    tracker.track_all("p", [a, b], [a.digest, b.digest])
    assert tracker.settle_all("p", [b"A" * 8, b"A" * 8, b"B" * 8]) == [a, None, b]
    assert len(tracker) == 0
    # A FIFO that leaves by take() no longer counts: the fast path is back afterwards.
    x1, x2, y = _Entry(b"X" * 8, "x1"), _Entry(b"X" * 8, "x2"), _Entry(b"Y" * 8, "y")
    tracker.track_all("p", [x1, x2], [x1.digest, x2.digest])
    assert tracker.take("p") == [x1, x2]
    tracker.track("q", y, y.digest)
    assert tracker.settle_all("q", [b"Y" * 8]) == [y]
    # A FIFO settled down to one entry, then the rest of the run.
    tracker.track_all("p", [x1, y, x2], [x1.digest, y.digest, x2.digest])
    assert tracker.settle_all("p", [b"X" * 8, b"Y" * 8]) == [x1, y]
    assert tracker.settle_all("p", [b"X" * 8, b"X" * 8]) == [x2, None]
    assert len(tracker) == 0 and tracker.entries("p") == []


def test_dedup_admit_all_is_admit_in_turn() -> None:
    """A level-2 read's batch in one call: the same duplicates (known ones, and a digest
    repeated within the batch from its second time on) and the same store afterwards
    (evictions included) as :meth:`DedupStore.admit` for each digest in turn."""
    rng = random.Random(7)
    for _ in range(500):
        capacity = rng.randint(1, 6)
        one_by_one, batched = DedupStore(capacity, 10.0), DedupStore(capacity, 10.0)
        for now in range(5):
            digests = [bytes([rng.randint(0, 7)]) * 8 for _ in range(rng.randint(0, 8))]
            expected = [
                i for i, d in enumerate(digests) if not one_by_one.admit(b"a", d, float(now))
            ]
            assert batched.admit_all(b"a", digests, float(now)) == expected
            assert len(batched) == len(one_by_one)
            for known in {bytes([n]) * 8 for n in range(8)}:
                assert batched.seen(b"a", known) == one_by_one.seen(b"a", known)
