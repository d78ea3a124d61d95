"""Write the seed inputs of every fuzz target (issue 14): ``python fuzz/seeds.py OUTDIR``.

The seeds are what the tracked corpus (fuzz/corpus/TARGET) was grown from, and what to start a
new corpus from: the repository's wire vectors and captures (tests/vectors/), complete
handshakes of every mechanism step recorded from a real peer ``Connection`` (so a seed reaches
``State.READY`` and the data after it), and the edge cases around them: every prefix at a frame
boundary, every command in long form, the short/long frame boundary (255/256 bytes), the
handshake size limit, ERROR and wrong commands at each step. fuzz/run.sh documents how the
seeds, the atheris finds and the tracked corpus are merged (libFuzzer ``-merge=1``).
"""

from __future__ import annotations

import hashlib
import json
import sys
from collections.abc import Callable, Iterable
from pathlib import Path

from fuzz_protocol import (
    CLIENT_PUBLIC,
    CLIENT_SECRET,
    CONNECTION_TARGETS,
    SERVER_PUBLIC,
    SERVER_SECRET,
    DeterministicRandom,
    deterministic_random,
)

from zmtp.protocol import Connection, State
from zmtp.protocol.commands import error, ping, pong, subscribe
from zmtp.protocol.curve import CurveClient, CurveServer
from zmtp.protocol.events import AuthenticationRequested
from zmtp.protocol.frames import (
    COMMAND,
    DEFAULT_MAX_HANDSHAKE_SIZE,
    LONG,
    MORE,
    encode_command,
    encode_frame,
    encode_message,
)
from zmtp.protocol.greeting import GREETING_SIZE, encode_greeting
from zmtp.protocol.mechanism import AuthResult, Mechanism
from zmtp.protocol.plain import PlainClient, PlainServer
from zmtp.protocol.properties import encode_properties

VECTORS = Path(__file__).resolve().parent.parent / "tests" / "vectors"
#: Messages the peer sends once the handshake is done: short, multipart, empty, 255/256 bytes.
MESSAGES = [[b"hello"], [b"a", b"b"], [b""], [b"x" * 255], [b"y" * 256]]


def wire_vectors() -> dict[str, bytes]:
    items = json.loads((VECTORS / "libzmq_wire.json").read_text())["items"]
    return {item["what"]: bytes.fromhex(item["hex"]) for item in items}


def qos_vectors() -> list[bytes]:
    data = json.loads((VECTORS / "qos.json").read_text())
    return [bytes.fromhex(command["frame_hex"]) for command in data["commands"]]


def captures() -> dict[str, bytes]:
    return {
        path.name: path.read_bytes()
        for path in sorted((VECTORS / "omq-qos-captures").glob("*.bin"))
    }


def frame_spans(data: bytes) -> list[int]:
    """The offsets where each frame of ``data`` ends (for the prefix seeds)."""
    ends, i = [], 0
    while i + 2 <= len(data):
        flags = data[i]
        if flags & LONG:
            size, head = int.from_bytes(data[i + 1 : i + 9], "big"), 9
        else:
            size, head = data[i + 1], 2
        i += head + size
        if i > len(data):
            break
        ends.append(i)
    return ends


def long_form(data: bytes) -> bytes:
    """``data`` with every short frame rewritten in the (legal, unusual) long form."""
    out, i = [], 0
    for end in frame_spans(data):
        flags = data[i]
        body = data[i + (9 if flags & LONG else 2) : end]
        out.append(bytes((flags | LONG,)) + len(body).to_bytes(8, "big") + body)
        i = end
    return b"".join(out) + data[i:]


def handshake(
    target_mechanism: Callable[[], Mechanism | None],
    peer_mechanism: Callable[[], Mechanism | None],
    peer_greeting: bytes,
) -> list[bytes]:
    """Run a real handshake and return the frames the peer (PUSH) sent after its greeting.

    The target side draws from the same fresh ``DeterministicRandom`` the fuzz target uses, so
    the peer's WELCOME/INITIATE/MESSAGE boxes verify when the seed is replayed.
    """
    target_random, peer_random = DeterministicRandom(), DeterministicRandom(b"peer")
    with deterministic_random(target_random):
        target = Connection("PULL", mechanism=target_mechanism())
    with deterministic_random(peer_random):
        peer = Connection("PUSH", mechanism=peer_mechanism())
        sent = peer.data_to_send()
    assert sent[:GREETING_SIZE] == peer_greeting, "the target expects another greeting"
    frames: list[bytes] = []
    pending = sent
    for _ in range(10):
        with deterministic_random(target_random):
            events = target.receive_data(pending)
            if any(isinstance(event, AuthenticationRequested) for event in events):
                target.complete_authentication(AuthResult())
            answer = target.data_to_send()
        with deterministic_random(peer_random):
            for event in peer.receive_data(answer):
                if isinstance(event, AuthenticationRequested):
                    peer.complete_authentication(AuthResult())
            if peer.state is State.READY and target.state is State.READY:
                frames.append(pending[GREETING_SIZE:] if not frames else pending)
                frames.append(peer.encode_messages(MESSAGES))
                break
            nxt = peer.data_to_send()
        frames.append(pending[GREETING_SIZE:] if not frames else pending)
        pending = nxt
    assert target.state is State.READY and peer.state is State.READY, "no handshake"
    return [frame for frame in frames if frame]


def mechanism_pairs() -> dict[str, tuple[Callable[[], Mechanism | None], bytes]]:
    """Per connection target, the peer mechanism that completes its handshake."""
    return {
        "null": (lambda: None, encode_greeting(b"NULL", False)),
        "plain-server": (lambda: PlainClient(b"", b"u", b"p"), encode_greeting(b"PLAIN", False)),
        "plain-client": (lambda: PlainServer(b""), encode_greeting(b"PLAIN", True)),
        "curve-server": (
            lambda: CurveClient(b"", SERVER_PUBLIC, CLIENT_PUBLIC, CLIENT_SECRET),
            encode_greeting(b"CURVE", False),
        ),
        "curve-client": (lambda: CurveServer(b"", SERVER_SECRET), encode_greeting(b"CURVE", True)),
    }


def connection_seeds(name: str) -> dict[str, bytes]:
    peer_mechanism, greeting = mechanism_pairs()[name]
    steps = handshake(CONNECTION_TARGETS[name].make, peer_mechanism, greeting)
    valid = b"".join(steps)
    seeds = {"handshake": valid, "handshake-long-form": long_form(valid)}
    done = b""
    for i, step in enumerate(steps):  # every step, then each wrong answer in its place
        seeds[f"step{i}-prefix"] = done
        seeds[f"step{i}-error"] = done + encode_command(b"ERROR", error("fuzz"))
        seeds[f"step{i}-ready"] = done + encode_command(b"READY", encode_properties({}))
        seeds[f"step{i}-message"] = done + encode_message([b"early"])
        seeds[f"step{i}-more-command"] = done + encode_frame(b"\x05HELLO", COMMAND | MORE)
        seeds[f"step{i}-truncated"] = done + step[: len(step) // 2]
        done += step
    for j, end in enumerate(frame_spans(valid)):
        seeds[f"frame{j}-prefix"] = valid[:end]
    limit = DEFAULT_MAX_HANDSHAKE_SIZE
    seeds["handshake-limit"] = bytes((COMMAND | LONG,)) + limit.to_bytes(8, "big")
    seeds["handshake-over-limit"] = bytes((COMMAND | LONG,)) + (limit + 1).to_bytes(8, "big")
    if name == "null":
        for capture, data in captures().items():
            if ".c2s." in capture:  # a Ruby PUSH talking to a PULL: exactly this target's peer
                seeds[f"omq-{capture}"] = data[GREETING_SIZE:]
        wire = wire_vectors()
        seeds["libzmq-dealer-ready"] = wire[
            "READY from libzmq DEALER with routing id 'abc' (frame)"
        ]
    return seeds


def frame_seeds() -> dict[str, bytes]:
    seeds = {f"libzmq-{i}": data for i, data in enumerate(wire_vectors().values())}
    seeds.update({f"qos-{i}": data for i, data in enumerate(qos_vectors())})
    seeds.update({f"omq-{k}": v[GREETING_SIZE:] for k, v in captures().items()})
    for size in (0, 1, 255):
        seeds[f"short-{size}"] = encode_frame(b"s" * size)
        seeds[f"short-{size}-more"] = encode_frame(b"s" * size, MORE) + encode_frame(b"t")
    for size in (256, 257):
        seeds[f"long-{size}"] = encode_frame(b"l" * size)
    seeds["long-form-small"] = bytes((LONG,)) + (3).to_bytes(8, "big") + b"abc"
    seeds["long-2^63"] = bytes((LONG,)) + (1 << 63).to_bytes(8, "big")
    seeds["long-2^64-1"] = bytes((LONG,)) + b"\xff" * 8
    seeds["reserved-flags"] = bytes((0xF8, 1)) + b"r"
    seeds["command-more"] = encode_frame(b"\x04PING\x00\x00", COMMAND | MORE)
    seeds["command-empty-name"] = encode_frame(b"\x00", COMMAND)
    seeds["command-name-overrun"] = encode_frame(b"\x09PING", COMMAND)
    seeds["header-only"] = b"\x00"
    seeds["ping-pong"] = encode_command(b"PING", ping(10, b"ctx")) + encode_command(
        b"PONG", pong(b"ctx")
    )
    seeds["subscribe"] = encode_command(b"SUBSCRIBE", subscribe(b"topic")[len(b"\x09SUBSCRIBE") :])
    return seeds


def greeting_seeds() -> dict[str, bytes]:
    wire = wire_vectors()
    base = encode_greeting(b"NULL", False)
    seeds = {
        "libzmq-first-stage": wire["libzmq greeting, first stage (routing id empty)"],
        "libzmq-null": wire["ZMTP 3.1 NULL greeting, as-server 0 (64 bytes)"],
        "null-server": encode_greeting(b"NULL", True),
        "zmtp-3.0": encode_greeting(b"NULL", False, minor=0),
        "plain": encode_greeting(b"PLAIN", False),
        "curve": encode_greeting(b"CURVE", True),
        "bad-signature": b"\xfe" + base[1:],
        "bad-padding": base[:1] + b"\x01" + base[2:],
        "zmtp-2": base[:10] + b"\x02" + base[11:],
        "as-server-2": base[:32] + b"\x02" + base[33:],
        "mechanism-unterminated": base[:12] + b"N" * 20 + base[32:],
    }
    return seeds


def property_seeds() -> dict[str, bytes]:
    seeds = {
        "empty": b"",
        "push": encode_properties({"Socket-Type": b"PUSH"}),
        "dealer-identity": encode_properties({"Socket-Type": b"DEALER", "Identity": b"abc"}),
        "qos": encode_properties({"Socket-Type": b"PUSH", "X-QoS": b"2", "X-QoS-Hash": b"xs"}),
        "value-255": encode_properties({"N": b"v" * 255}),
        "value-256": encode_properties({"N": b"v" * 256}),
        "name-empty": b"\x00\x00\x00\x00\x00",
        "name-overrun": b"\x05ab",
        "value-overrun": b"\x01N\x00\x00\x00\x09v",
        "value-huge": b"\x01N\xff\xff\xff\xff",
        "name-not-ascii": b"\x01\xff\x00\x00\x00\x00",
        "duplicate": encode_properties({"A": b"1"}) * 2,
    }
    for what, frame in wire_vectors().items():
        if "READY" in what:
            seeds["libzmq-ready"] = frame[2 + 6 :]  # header, then \x05READY
    return seeds


def qos_seeds() -> dict[str, bytes]:
    seeds = {f"vector-{i}": frame for i, frame in enumerate(qos_vectors())}
    for i, frame in enumerate(qos_vectors()):
        body = frame[9:] if frame[0] & LONG else frame[2:]
        seeds[f"vector-{i}-data"] = body[1 + body[0] :]
    for name, data in captures().items():
        seeds[f"omq-{name}"] = data[GREETING_SIZE:]
    digest = b"x" + b"\x11" * 8
    for size in range(0, 13):  # every length around the digest (9) and NACK code/length (12)
        seeds[f"nack-{size}"] = encode_command(b"NACK", (digest + b"\x05\x00\x03abc")[:size])
    seeds["nack-text-short"] = encode_command(b"NACK", digest + b"\x05\x00\x09abc")
    seeds["nack-text-bad-utf8"] = encode_command(b"NACK", digest + b"\x05\x00\x02\xff\xfe")
    seeds["ack-private-algorithm"] = encode_command(b"ACK", b"\x80" + b"\x22" * 8)
    seeds["ack-then-decoder-error"] = encode_command(b"ACK", digest) + b"\x04\x00"
    return seeds


def all_seeds() -> dict[str, dict[str, bytes]]:
    found = {
        "frames": frame_seeds(),
        "greeting": greeting_seeds(),
        "properties": property_seeds(),
        "qos-commands": qos_seeds(),
    }
    for name in CONNECTION_TARGETS:
        found[name] = connection_seeds(name)
    return found


def write(outdir: Path, seeds: dict[str, dict[str, bytes]]) -> Iterable[Path]:
    for target, inputs in seeds.items():
        folder = outdir / target
        folder.mkdir(parents=True, exist_ok=True)
        for data in inputs.values():  # libFuzzer's own naming: the SHA-1 of the input
            path = folder / hashlib.sha1(data).hexdigest()
            path.write_bytes(data)
            yield path


def main() -> None:
    outdir = Path(sys.argv[1])
    written = list(write(outdir, all_seeds()))
    print(f"{len(written)} seeds in {outdir}")


if __name__ == "__main__":
    main()
