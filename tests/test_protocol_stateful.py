"""A hypothesis state machine against the sans-IO connection (issue 14, "fuzzing").

The peer is a model that writes random interleavings of valid input (greeting, READY, messages
of any shape in short and long frames, PING, PONG, other commands) and invalid input (garbage,
a frame over ``max_message_size``, a malformed PING or command, data before the handshake),
delivered to ``Connection.receive_data`` in random chunks, with the driver draining our output
at random moments. Invariants, checked after every step:

* nothing raises: hostile input only ever produces a ``ConnectionFailed``, at most one, last;
* every message and command the peer sent before its first invalid input is delivered, in
  order, once its bytes are in;
* an input that must be refused is refused once its bytes are in;
* what the connection buffers and what it queues for the peer stay within the documented
  bounds (docs/security.md).

Bounded for CI (``max_examples``); the coverage-guided fuzzers in fuzz/ run for longer.
"""

from __future__ import annotations

from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
)

from tests.test_protocol_helpers import flatten, peer_greeting, peer_ready
from zmtp.protocol import (
    CommandReceived,
    Connection,
    ConnectionFailed,
    HandshakeComplete,
    MessagesReceived,
    commands,
)
from zmtp.protocol.events import AuthenticationRequested
from zmtp.protocol.frames import COMMAND, LONG, MORE, encode_command

MAX_MESSAGE = 4096
MAX_HANDSHAKE = 1024
#: Our own output at most: greeting, READY, one PONG, an ERROR (docs/security.md).
MAX_OUTPUT = 64 + 256 + 32 + 64
BUFFER_BOUND = 64 + max(MAX_MESSAGE, MAX_HANDSHAKE) + 9

parts_strategy = st.lists(st.binary(max_size=300), min_size=1, max_size=4)


def data_frame(body: bytes, more: bool, long_form: bool) -> bytes:
    flags = MORE if more else 0
    if long_form or len(body) > 255:
        return bytes((flags | LONG,)) + len(body).to_bytes(8, "big") + body
    return bytes((flags, len(body))) + body


class PeerModel(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.conn = Connection(
            "PULL", max_message_size=MAX_MESSAGE, max_handshake_size=MAX_HANDSHAKE
        )
        self.wire = b""  # written by the peer, not yet fed
        self.expected: list[object] = []  # what must arrive (before the first invalid input)
        self.valid_until: int | None = None  # wire offset where invalid input began
        self.must_fail_at: int | None = None  # wire offset by which a refusal is certain
        self.fed = 0  # bytes fed so far
        self.events: list[object] = []
        self.greeted = self.ready = self.failed = False

    # ------------------------------------------------------------------ the peer writes

    def write(self, data: bytes, valid: bool, must_fail: bool = False) -> None:
        if not valid and self.valid_until is None:
            self.valid_until = self.fed + len(self.wire)
        self.wire += data
        if (
            must_fail
            and self.must_fail_at is None
            and self.valid_until == self.fed + len(self.wire) - len(data)
        ):
            self.must_fail_at = self.fed + len(self.wire)

    @property
    def poisoned(self) -> bool:
        return self.valid_until is not None

    @initialize(variant=st.integers(0, 9), garbage=st.binary(min_size=1, max_size=80))
    def handshake(self, variant: int, garbage: bytes) -> None:
        """Greeting and READY (mostly); sometimes garbage instead of a greeting, or a data
        frame before READY."""
        self.greeted = self.ready = True
        if variant == 0:
            self.write(garbage, valid=False)
        elif variant == 1:
            self.write(peer_greeting(), valid=True)
            self.write(data_frame(garbage, False, False), valid=False, must_fail=True)
        else:
            self.write(peer_greeting() + peer_ready("PUSH"), valid=True)
            self.expected.append("handshake")

    @precondition(lambda self: self.ready)
    @rule(parts=parts_strategy, long_form=st.booleans())
    def message(self, parts: list[bytes], long_form: bool) -> None:
        wire = b"".join(data_frame(p, i < len(parts) - 1, long_form) for i, p in enumerate(parts))
        if not self.poisoned:
            self.expected.append(("message", parts))
        self.write(wire, valid=True)

    # (twice: messages are what the invariants are about)
    message_again = message

    @precondition(lambda self: self.ready)
    @rule(ttl=st.integers(0, 0xFFFF), context=st.binary(max_size=16))
    def ping(self, ttl: int, context: bytes) -> None:
        self.write(commands.ping(ttl, context), valid=True)

    @precondition(lambda self: self.ready)
    @rule(context=st.binary(max_size=16))
    def pong(self, context: bytes) -> None:
        self.write(commands.pong(context), valid=True)

    @precondition(lambda self: self.ready)
    @rule(
        name=st.sampled_from([b"SUBSCRIBE", b"CANCEL", b"JOIN", b"X-QOS"]),
        data=st.binary(max_size=40),
    )
    def other_command(self, name: bytes, data: bytes) -> None:
        if not self.poisoned:
            self.expected.append(("command", name, data))
        self.write(encode_command(name, data), valid=True)

    # ------------------------------------------------------------------ invalid input

    @precondition(lambda self: self.ready and not self.poisoned)
    @rule(
        kind=st.sampled_from(["garbage", "oversized", "ping", "command"]),
        garbage=st.binary(min_size=1, max_size=64),
        size=st.integers(MAX_MESSAGE + 1, 2**64 - 1),
        command=st.booleans(),
    )
    def invalid(self, kind: str, garbage: bytes, size: int, command: bool) -> None:
        """One invalid input after the handshake (after the first, anything goes)."""
        if kind == "garbage":  # (random bytes may also parse as valid frames)
            self.write(garbage, valid=False)
        elif kind == "oversized":  # a frame over max_message_size: refused at its header
            flags = LONG | (COMMAND if command else 0)
            self.write(bytes((flags,)) + size.to_bytes(8, "big"), valid=False, must_fail=True)
        elif kind == "ping":  # a PING too short for its TTL
            self.write(bytes((COMMAND, 6)) + b"\x04PING\x00", valid=False, must_fail=True)
        else:  # a command name longer than its frame
            self.write(bytes((COMMAND, 3)) + b"\x09AB", valid=False, must_fail=True)

    # ------------------------------------------------------------------ the driver

    @precondition(lambda self: self.wire and not self.failed)
    @rule(cut=st.integers(1, 400))
    def feed(self, cut: int) -> None:
        chunk, self.wire = self.wire[:cut], self.wire[cut:]
        events = self.conn.receive_data(chunk)  # must not raise
        self.fed += len(chunk)
        for event in events:
            assert not self.failed, "an event after ConnectionFailed"
            assert isinstance(
                event,
                MessagesReceived
                | CommandReceived
                | HandshakeComplete
                | ConnectionFailed
                | AuthenticationRequested,
            ), event
            if isinstance(event, ConnectionFailed):
                self.failed = True
        self.events += events
        if self.failed:
            self.wire = b""  # the driver closes the connection

    feed_again = feed

    @rule()
    def drain_output(self) -> None:
        self.conn.data_to_send()

    # ------------------------------------------------------------------ invariants

    @invariant()
    def bounded(self) -> None:
        assert self.conn.buffered <= BUFFER_BOUND, self.conn.buffered
        assert self.conn.pending_output <= MAX_OUTPUT, self.conn.pending_output

    @invariant()
    def valid_input_is_delivered_in_order(self) -> None:
        seen = [
            "handshake" if isinstance(e, HandshakeComplete) else e
            for e in flatten(self.events)  # type: ignore[arg-type]
            if not isinstance(e, ConnectionFailed)
        ]
        complete = self.valid_until is not None and self.fed >= self.valid_until
        if not self.poisoned or not complete:
            # Everything delivered so far is what the peer sent, in order.
            assert seen == self.expected[: len(seen)], (seen, self.expected)
        else:
            # All of the valid prefix is in: it was delivered whole, first.
            assert seen[: len(self.expected)] == self.expected, (seen, self.expected)
        if not self.poisoned and not self.wire:
            assert seen == self.expected
            assert not self.failed

    @invariant()
    def refused_when_it_must_be(self) -> None:
        if self.must_fail_at is not None and self.fed >= self.must_fail_at:
            assert self.failed


PeerModel.TestCase.settings = settings(
    max_examples=150, stateful_step_count=40, deadline=None, derandomize=False
)
test_connection_state_machine = PeerModel.TestCase
