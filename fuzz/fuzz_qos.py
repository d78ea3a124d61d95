"""Coverage-guided fuzz target for the QoS command parser (atheris; ``pip install .[fuzz]``).

Run: ``python fuzz/fuzz_qos.py [atheris/libFuzzer options]`` (fuzz/run.sh runs it with the
protocol targets). The input is a stream of ZMTP frames, decoded by zmtp's own frame decoder
as a QoS peer's would be; every ACK, CLR, COMP or NACK command in it (and, to reach the parser
without the framing, the raw input itself as each command's data) goes through the parser of
``zmtp_qos.commands``. Invariants, from its lenient rules (docs/qos-protocol.md §4): parsing
never raises; a digest is exactly 8 bytes and is present iff the data holds at least 9; a NACK
too short for a code is code 0 with no text; a text never holds more than the data did; and what
the parser reads back from a well-formed command, the encoder rebuilds byte for byte.
"""

from __future__ import annotations

import sys

from zmtp.protocol import FrameDecoder
from zmtp.protocol.frames import Command
from zmtp_qos import commands
from zmtp_qos.digest import DIGEST_SIZE


def check(name: bytes, data: bytes) -> None:
    """Parse ``data`` as the data of command ``name`` and check the parser's promises."""
    ref = commands.parse_digest(data)
    if len(data) < 1 + DIGEST_SIZE:
        assert ref is None
        assert commands.parse_nack(data) is None
        return
    assert ref is not None and len(ref.digest) == DIGEST_SIZE and ref.algorithm == data[0]
    if ref.algorithm < 0x80 and name != commands.NACK:
        rebuilt = commands.digest_data(chr(ref.algorithm), ref.digest)
        assert rebuilt == data[: 1 + DIGEST_SIZE]
    if name != commands.NACK:
        return
    nack = commands.parse_nack(data)
    assert nack is not None and nack.ref == ref and 0 <= nack.code <= 0xFF
    rest = data[1 + DIGEST_SIZE :]
    if len(rest) < 3:
        assert (nack.code, nack.text) == (0, "")
        return
    size = int.from_bytes(rest[1:3], "big")
    text = rest[3 : 3 + size]
    assert len(nack.text) <= len(text)  # never more characters than the bytes it had
    try:
        exact = text.decode("utf-8")
    except UnicodeDecodeError:
        return  # replaced characters: lenient, nothing to round-trip
    assert nack.text == exact
    if ref.algorithm < 0x80 and len(text) == size:  # a well-formed NACK: it round-trips
        rebuilt = commands.nack_data(chr(ref.algorithm), ref.digest, nack.code, text)
        assert rebuilt == data[: 1 + DIGEST_SIZE + 3 + size]


def fuzz_qos_commands(data: bytes) -> None:
    for name in sorted(commands.NAMES):
        check(name, data)
    decoder = FrameDecoder(max_message_size=1 << 16)
    for i in range(0, len(data), 61):
        for item in decoder.feed(data[i : i + 61]):
            if isinstance(item, Command) and item.name in commands.NAMES:
                check(item.name, item.data)
        if decoder.error is not None:
            return


def main() -> None:
    import atheris  # the optional "fuzz" extra

    atheris.instrument_all()  # zmtp.protocol and zmtp_qos, imported above
    atheris.Setup(sys.argv, fuzz_qos_commands)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
