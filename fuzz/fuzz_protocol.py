"""Coverage-guided fuzz targets for the sans-IO protocol core (atheris; ``pip install .[fuzz]``).

Run one target: ``python fuzz/fuzz_protocol.py TARGET [atheris/libFuzzer options]``, TARGET one
of ``frames``, ``greeting``, ``properties``, ``null``, ``plain-server``, ``plain-client``,
``curve-server``, ``curve-client``; fuzz/run.sh runs them all for long. Invariant everywhere:
hostile input only ever raises the protocol's own errors (or fails the connection), and what is
buffered stays within the limits of docs/security.md.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import sys
from collections.abc import Callable, Iterator

from zmtp.crypto import decode_key
from zmtp.protocol import Connection, FrameDecoder, ProtocolError
from zmtp.protocol.connection import State
from zmtp.protocol.curve import CurveClient, CurveServer
from zmtp.protocol.events import AuthenticationRequested
from zmtp.protocol.frames import DEFAULT_MAX_HANDSHAKE_SIZE
from zmtp.protocol.greeting import GREETING_SIZE, encode_greeting, parse_greeting
from zmtp.protocol.mechanism import AuthResult, Mechanism
from zmtp.protocol.plain import PlainClient, PlainServer
from zmtp.protocol.properties import parse_properties

# Fixed keys (the zmq_curve man page's, as in tests/vectors/crypto.json), not fresh ones per
# process: a CURVE input in the tracked corpus (fuzz/corpus/) must mean the same thing on every
# run, or a recorded handshake would stop at HELLO's box the next time it is replayed.
SERVER_PUBLIC = decode_key("rq:rM>}U?@Lns47E1%kR.o@n%FcmmsL/@{H8]yf7")
SERVER_SECRET = decode_key("JTKVSB%%)wK0E.X)V>+}o?pNmC{O&4W4b!Ni{Lh6")
CLIENT_PUBLIC = decode_key("Yne@$w-vo<fVvi]a<NY6T1ed:M$fCG*[IaLV{hID")
CLIENT_SECRET = decode_key("D:)Q[IlAW!ahhC2ac:9*A}h:p?([4%wOTJ%JR%cs")
#: The chunk size the connection targets feed: an input crosses reads at arbitrary points.
CONNECTION_CHUNK = 211


class DeterministicRandom:
    """A replayable stand-in for ``os.urandom`` (SHA-256 of a label and a counter).

    CURVE draws its transient keys, cookie key and nonces from ``os.urandom``; with real
    randomness the WELCOME/INITIATE of a recorded handshake would never verify again, so the
    corpus could hold nothing past HELLO. Each target run starts a fresh instance, so the same
    input draws the same bytes. Not random at all: for fuzzing only.
    """

    def __init__(self, label: bytes = b"target") -> None:
        self._label = label
        self._counter = 0

    def __call__(self, size: int) -> bytes:
        out = b""
        while len(out) < size:
            self._counter += 1
            out += hashlib.sha256(self._label + self._counter.to_bytes(8, "big")).digest()
        return out[:size]


@contextlib.contextmanager
def deterministic_random(source: DeterministicRandom) -> Iterator[None]:
    """Make ``os.urandom`` draw from ``source`` inside the block (the fuzz process only)."""
    real = os.urandom
    os.urandom = source
    try:
        yield
    finally:
        os.urandom = real


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


class ConnectionTarget:
    """A PULL connection with one mechanism, fed the input as everything its PUSH peer sends
    after the greeting (which the target supplies: ``peer`` mechanism, ``peer_server`` role).

    An authentication request is accepted at once, so the input reaches the server's READY,
    and data, past the credentials. ``run`` returns the connection, for the corpus test to
    check that the corpus holds handshakes that really complete (``State.READY``).
    """

    def __init__(
        self, make: Callable[[], Mechanism | None], peer: bytes, peer_server: bool
    ) -> None:
        self.make = make
        self.peer = peer
        self.peer_server = peer_server

    def run(self, data: bytes) -> Connection:
        with deterministic_random(DeterministicRandom()):
            conn = Connection("PULL", mechanism=self.make())
            conn.receive_data(encode_greeting(self.peer, self.peer_server))
            for i in range(0, len(data), CONNECTION_CHUNK):
                events = conn.receive_data(data[i : i + CONNECTION_CHUNK])
                if any(isinstance(event, AuthenticationRequested) for event in events):
                    conn.complete_authentication(AuthResult())
                conn.data_to_send()  # what a driver does; keeps the output from piling up
                limit = DEFAULT_MAX_HANDSHAKE_SIZE + 9 + CONNECTION_CHUNK + (1 << 20)
                assert conn.buffered <= limit
                if conn.state is State.CLOSED:
                    break
        return conn

    def __call__(self, data: bytes) -> None:
        self.run(data)


CONNECTION_TARGETS: dict[str, ConnectionTarget] = {
    "null": ConnectionTarget(lambda: None, b"NULL", False),
    "plain-server": ConnectionTarget(lambda: PlainServer(b""), b"PLAIN", False),
    "plain-client": ConnectionTarget(lambda: PlainClient(b"", b"u", b"p"), b"PLAIN", True),
    "curve-server": ConnectionTarget(lambda: CurveServer(b"", SERVER_SECRET), b"CURVE", False),
    "curve-client": ConnectionTarget(
        lambda: CurveClient(b"", SERVER_PUBLIC, CLIENT_PUBLIC, CLIENT_SECRET), b"CURVE", True
    ),
}

TARGETS: dict[str, Callable[[bytes], None]] = {
    "frames": fuzz_frames,
    "greeting": fuzz_greeting,
    "properties": fuzz_properties,
    **CONNECTION_TARGETS,
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
