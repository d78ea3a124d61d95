"""Shared helpers for the sans-IO protocol tests (plus a few tests of the helpers themselves).

Everything here is synchronous and clock-free: "time" is whatever float we pass as ``now``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from zmtp.protocol import (
    Command,
    CommandReceived,
    Connection,
    ConnectionFailed,
    Event,
    FrameDecoder,
    HandshakeComplete,
    MessagesReceived,
    State,
    commands,
    encode_properties,
)
from zmtp.protocol.frames import parse_command
from zmtp.protocol.greeting import GREETING_SIZE, encode_greeting

#: libzmq sends the 64-byte greeting in three stages: 10 bytes, then the major version, then 53.
LIBZMQ_STAGE1 = bytes.fromhex("ff00000000000000017f")
LIBZMQ_STAGE2 = b"\x03"


def peer_greeting(
    major: int = 3, minor: int = 1, mechanism: bytes = b"NULL", as_server: bool = False
) -> bytes:
    """A peer's 64-byte greeting, libzmq style (padding ``...01``, as-server as given)."""
    return (
        LIBZMQ_STAGE1
        + bytes((major, minor))
        + mechanism.ljust(20, b"\0")
        + (b"\x01" if as_server else b"\x00")
        + bytes(31)
    )


def ready_frame(props: Mapping[str, bytes]) -> bytes:
    """A READY command frame carrying ``props`` (in the given order and spelling)."""
    return commands.ready(encode_properties(props))


def peer_ready(socket_type: str, identity: bytes | None = None) -> bytes:
    """The READY a libzmq peer of ``socket_type`` would send."""
    props = {"Socket-Type": socket_type.encode()}
    if identity is not None:
        props["Identity"] = identity
    return ready_frame(props)


def shuttle(
    a: Connection, b: Connection, events_a: list[Event], events_b: list[Event], now: float
) -> bool:
    """One pass of :func:`pump`: what each side has to send goes to the other, the events it
    causes appended to that side's list; False when both sides were quiet."""
    to_b = a.data_to_send()
    to_a = b.data_to_send()
    if not to_a and not to_b:
        return False
    if to_b:
        events_b += b.receive_data(to_b, now)
    if to_a:
        events_a += a.receive_data(to_a, now)
    return True


def pump(a: Connection, b: Connection, now: float = 0.0) -> tuple[list[Event], list[Event]]:
    """Shuttle bytes between two connections until both are quiet; events seen by each."""
    events_a: list[Event] = []
    events_b: list[Event] = []
    while shuttle(a, b, events_a, events_b, now):
        pass
    return events_a, events_b


def handshake_pair(
    type_a: str, type_b: str, now: float = 0.0, **kwargs: object
) -> tuple[Connection, Connection, list[Event], list[Event]]:
    """Two fresh connections of the given types (same keyword options), pumped to quiescence."""
    a = Connection(type_a, now=now, **kwargs)  # type: ignore[arg-type]
    b = Connection(type_b, now=now, **kwargs)  # type: ignore[arg-type]
    events_a, events_b = pump(a, b, now)
    return a, b, events_a, events_b


def ready_connection(
    socket_type: str = "DEALER",
    peer_type: str = "ROUTER",
    *,
    now: float = 0.0,
    peer_minor: int = 1,
    **kwargs: object,
) -> Connection:
    """A connection whose handshake with a scripted peer is complete; its output is drained."""
    conn = Connection(socket_type, now=now, **kwargs)  # type: ignore[arg-type]
    conn.data_to_send()
    events = conn.receive_data(peer_greeting(minor=peer_minor) + peer_ready(peer_type), now)
    assert len(events) == 1 and isinstance(events[0], HandshakeComplete), events
    assert conn.state is State.READY
    conn.data_to_send()  # our READY
    return conn


def split_frames(data: bytes) -> list[tuple[int, bytes]]:
    """Split wire bytes into raw ``(flags, body)`` frames (asserts nothing is left over).

    Any frame size: this splits test output, not a peer's handshake."""
    decoder = FrameDecoder(max_handshake_size=1 << 62)
    frames = []
    frame = decoder.next_frame(data)
    while frame is not None:
        frames.append(frame)
        frame = decoder.next_frame()
    assert decoder.buffered == 0, "trailing partial frame"
    return frames


def split_commands(data: bytes) -> list[Command]:
    """Split wire bytes that hold only command frames into commands."""
    return [parse_command(body) for _, body in split_frames(data)]


def flatten(events: Sequence[Event]) -> list[object]:
    """Events with message batches flattened, so chunking-dependent batching compares equal."""
    out: list[object] = []
    for event in events:
        if isinstance(event, MessagesReceived):
            out += [("message", message) for message in event.messages]
        elif isinstance(event, CommandReceived):
            out.append(("command", event.name, event.data))
        else:
            out.append(event)
    return out


def failure(events: Sequence[Event]) -> ConnectionFailed:
    """The ConnectionFailed that must end ``events``."""
    assert events, "expected a ConnectionFailed, got no events"
    last = events[-1]
    assert isinstance(last, ConnectionFailed), events
    return last


def only_failure(events: Sequence[Event]) -> ConnectionFailed:
    """The single event of ``events``, which must be a ConnectionFailed."""
    assert len(events) == 1, events
    return failure(events)


# ---------------------------------------------------------------------------------- self-tests


def test_peer_greeting_is_a_valid_64_byte_greeting() -> None:
    greeting = peer_greeting()
    assert len(greeting) == GREETING_SIZE
    # Only the padding differs from ours (libzmq puts identity length + 1 there).
    assert greeting[9:] == encode_greeting(b"NULL", as_server=False)[9:]


def test_pump_completes_a_simple_handshake() -> None:
    a, b, events_a, events_b = handshake_pair("PUSH", "PULL")
    assert [type(e) for e in events_a] == [HandshakeComplete]
    assert [type(e) for e in events_b] == [HandshakeComplete]
    assert a.state is b.state is State.READY


def test_split_commands_reads_back_command_frames() -> None:
    wire = commands.subscribe(b"a") + commands.cancel(b"b")
    assert split_commands(wire) == [Command(b"SUBSCRIBE", b"a"), Command(b"CANCEL", b"b")]
