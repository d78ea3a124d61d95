"""Coverage-guided fuzz targets for the sans-IO protocol core (atheris; ``pip install .[fuzz]``).

Run one target: ``python fuzz/fuzz_protocol.py TARGET [atheris/libFuzzer options]``, TARGET one
of ``frames``, ``greeting``, ``properties``, ``null``, ``plain-server``, ``plain-client``,
``curve-server``, ``curve-client``; fuzz/run.sh runs them all for long. Invariant everywhere:
hostile input only ever raises the protocol's own errors (or fails the connection), and what is
buffered stays within the limits of docs/security.md.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable

from zmtp.crypto import curve_keypair, decode_key
from zmtp.protocol import Connection, FrameDecoder, ProtocolError
from zmtp.protocol.curve import CurveClient, CurveServer
from zmtp.protocol.frames import DEFAULT_MAX_HANDSHAKE_SIZE
from zmtp.protocol.greeting import GREETING_SIZE, encode_greeting, parse_greeting
from zmtp.protocol.mechanism import Mechanism
from zmtp.protocol.plain import PlainClient, PlainServer
from zmtp.protocol.properties import parse_properties

_SERVER_PUBLIC, _SERVER_SECRET = (decode_key(k) for k in curve_keypair())
_CLIENT_PUBLIC, _CLIENT_SECRET = (decode_key(k) for k in curve_keypair())


def fuzz_frames(data: bytes) -> None:
    decoder = FrameDecoder()
    for i in range(0, len(data), 97):
        decoder.feed(data[i : i + 97])
        if decoder.error is not None:
            assert decoder.buffered == 0
            return


def fuzz_greeting(data: bytes) -> None:
    with contextlib.suppress(ProtocolError):
        parse_greeting(data[:GREETING_SIZE].ljust(GREETING_SIZE, b"\0"), b"NULL")


def fuzz_properties(data: bytes) -> None:
    with contextlib.suppress(ProtocolError):
        parse_properties(data)


def _connection_target(
    make: Callable[[], Mechanism], peer: bytes, peer_server: bool
) -> Callable[[bytes], None]:
    def target(data: bytes) -> None:
        conn = Connection("PULL", mechanism=make())
        conn.receive_data(encode_greeting(peer, peer_server))
        for i in range(0, len(data), 211):
            conn.receive_data(data[i : i + 211])
            assert conn.buffered <= DEFAULT_MAX_HANDSHAKE_SIZE + 9 + 211 + (1 << 20)

    return target


TARGETS: dict[str, Callable[[bytes], None]] = {
    "frames": fuzz_frames,
    "greeting": fuzz_greeting,
    "properties": fuzz_properties,
    "null": _connection_target(lambda: None, b"NULL", False),  # type: ignore[arg-type,return-value]
    "plain-server": _connection_target(lambda: PlainServer(b""), b"PLAIN", False),
    "plain-client": _connection_target(lambda: PlainClient(b"", b"u", b"p"), b"PLAIN", True),
    "curve-server": _connection_target(lambda: CurveServer(b"", _SERVER_SECRET), b"CURVE", False),
    "curve-client": _connection_target(
        lambda: CurveClient(b"", _SERVER_PUBLIC, _CLIENT_PUBLIC, _CLIENT_SECRET), b"CURVE", True
    ),
}


def main() -> None:
    import atheris  # the optional "fuzz" extra

    name = sys.argv.pop(1)
    # Coverage guidance: instrument the already imported Python code (zmtp.protocol and
    # zmtp.crypto); without it libFuzzer only sees the C code and mutates blindly.
    atheris.instrument_all()
    atheris.Setup(sys.argv, TARGETS[name])
    atheris.Fuzz()


if __name__ == "__main__":
    main()
