"""ZMTP 3.x framing: encoding frames and an incremental, batch-oriented decoder.

Wire layout (RFC 23/37): ``flags(1) size(1 | 8, big-endian) body``. Flags: MORE 0x01, LONG 0x02,
COMMAND 0x04; bits 3-7 are reserved. libzmq always picks the short form for bodies up to 255
bytes but accepts a long size for a small body, so the decoder does too. It is strict where
safety needs it: reserved flag bits and MORE on a command are protocol errors, and
``max_message_size`` is checked from the header, before any of the body is buffered.

Performance shape (docs/architecture.md, "The protocol core"): one parser loop over a buffer +
offset that handles every complete frame of a chunk, hands out ``bytes`` slices, and joins large
bodies once instead of growing a buffer chunk by chunk. A read is never copied whole: the frame
that an earlier read left incomplete is completed from the head of the new read, and parsing
carries on in the read itself (large reads of large frames used to cost a copy of every read,
and allocations above malloc's mmap threshold: page faults on every read, docs/performance.md).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Sequence
from struct import Struct
from typing import Protocol

from .errors import MessageTooLarge, ProtocolError

MORE = 0x01
LONG = 0x02
COMMAND = 0x04
RESERVED = 0xF8

_U64 = Struct(">Q")
_pack_u64 = _U64.pack
_unpack_u64_from = _U64.unpack_from

# Pre-built short headers: (flags, size) -> 2 bytes, for every short size. Indexing a tuple is
# much cheaper than bytes((flags, size)) on the encode hot path.
_SHORT_LAST = tuple(bytes((0, n)) for n in range(256))
_SHORT_MORE = tuple(bytes((MORE, n)) for n in range(256))
_LONG_LAST = bytes((LONG,))
_LONG_MORE = bytes((MORE | LONG,))
_EMPTY = b""

#: Bodies up to this size are sliced out of the read buffer; larger ones that arrive in pieces
#: are collected as a list of chunks and joined once (no quadratic buffer growth, and each byte
#: of the body copied once, by the join, but for a small first piece: see _keep_partial_body).
_LARGE_BODY = 1 << 13

#: A read longer than this that follows an incomplete frame completes that frame from its head
#: and is parsed in place; a shorter one is appended to the held bytes (one small copy, cheaper
#: than the second parser call that completing the frame separately costs).
_JOIN_LIMIT = 1 << 13


#: Default ``max_handshake_size``: the largest command frame accepted before the handshake is
#: complete. The largest legal handshake command is a CURVE INITIATE: 257 bytes of fixed
#: fields (name, cookie, nonce, vouch box) plus the client's metadata, which for libzmq and
#: zmtp is a Socket-Type, an Identity of at most 255 bytes and a few application properties.
#: 64 KiB leaves two orders of magnitude of room for those and bounds what an unauthenticated
#: peer can make us hold per connection.
DEFAULT_MAX_HANDSHAKE_SIZE = 1 << 16


def host_frame_limit() -> int:
    """The largest frame this host could ever hold: its physical memory (capped at the
    largest ``bytes`` object), or ``sys.maxsize`` where the platform does not say.

    Why: with ``max_message_size`` unlimited, libzmq refuses a frame at its header when the
    allocation fails, which under Linux's default overcommit heuristic is a size beyond the
    machine's memory. A frame larger than the memory cannot be received anyway; buffering it
    would only exhaust the process. So "unlimited" means this bound (docs/differences.md).
    """
    try:
        memory = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (AttributeError, ValueError, OSError):
        return sys.maxsize
    return min(memory, sys.maxsize) if memory > 0 else sys.maxsize


def frame_header(flags: int, size: int) -> bytes:
    """The header for one frame (short form up to 255 bytes, long form above)."""
    if size < 256:
        return bytes((flags, size))
    return bytes((flags | LONG,)) + _pack_u64(size)


def encode_frame(body: bytes, flags: int = 0) -> bytes:
    """One complete frame."""
    return frame_header(flags, len(body)) + body


def encode_command(name: bytes, data: bytes = b"") -> bytes:
    """A command frame: ``COMMAND`` flag, body ``len(name) name data``."""
    body = bytes((len(name),)) + name + data
    return frame_header(COMMAND, len(body)) + body


def append_message(out: list[bytes], parts: Sequence[bytes]) -> None:
    """Append the wire encoding of one message to ``out`` (pieces to ``b"".join`` later)."""
    last = len(parts) - 1
    for i, part in enumerate(parts):
        n = len(part)
        if n < 256:
            out.append(_SHORT_MORE[n] if i < last else _SHORT_LAST[n])
        else:
            out.append((_LONG_MORE if i < last else _LONG_LAST) + _pack_u64(n))
        out.append(part)


def encode_message(parts: Sequence[bytes]) -> bytes:
    """The wire encoding of one message (all parts, MORE on every part but the last)."""
    if len(parts) == 1:
        part = parts[0]
        n = len(part)
        if n < 256:
            return _SHORT_LAST[n] + part
        return _LONG_LAST + _pack_u64(n) + part
    out: list[bytes] = []
    append_message(out, parts)
    return b"".join(out)


def encode_messages(messages: Sequence[Sequence[bytes]]) -> bytes:
    """Encode a batch of messages into one buffer, ready for a single write."""
    batch = len(messages)
    if batch > 1:
        first = messages[0]
        if len(first) == 1 and len(first[0]) == len(messages[-1][0]) < 256:
            # A writer's usual batch at a high rate: one-part messages of one short size
            # (a PUSH's, a DEALER's). Every frame then has the same 2-byte header, so the
            # batch is that header joined over the bodies (with an empty first item, for the
            # header before the first body): the per-message work is one unpacking in a
            # comprehension, one len in C and the join, ~0.45x the loop below's
            # (docs/performance.md, "A cheaper PUSH sender"). The first and last sizes are
            # compared first so that a batch of mixed sizes seldom pays for the bodies' list.
            try:
                bodies = [body for (body,) in messages]
            except ValueError:  # a message of several parts: the loop below
                pass
            else:
                if len(set(map(len, bodies))) == 1:
                    bodies.insert(0, _EMPTY)
                    return _SHORT_LAST[len(first[0])].join(bodies)
    elif batch == 1:
        # One message of one or two short parts: a ping-pong's answer (REQ/REP's delimiter
        # and body), framed without the batch's list and join (docs/performance.md, trio
        # REQ/REP round trip). A batch of one pays the batch > 1 test only.
        parts = messages[0]
        count = len(parts)
        if count == 2:
            head, body = parts
            if len(head) < 256 and len(body) < 256:
                return _SHORT_MORE[len(head)] + head + _SHORT_LAST[len(body)] + body
        elif count == 1:
            body = parts[0]
            if len(body) < 256:
                return _SHORT_LAST[len(body)] + body
    out: list[bytes] = []
    append = out.append
    for parts in messages:
        count = len(parts)
        if count == 1:
            part = parts[0]
            n = len(part)
            append(_SHORT_LAST[n] if n < 256 else _LONG_LAST + _pack_u64(n))
            append(part)
        elif count == 2 and len(parts[0]) < 256 and len(parts[1]) < 256:
            # Two short parts (REQ/REP's delimiter and body, a ROUTER's id and body), without
            # append_message's loop.
            head, body = parts
            append(_SHORT_MORE[len(head)])
            append(head)
            append(_SHORT_LAST[len(body)])
            append(body)
        else:
            append_message(out, parts)
    return b"".join(out)


class EncodedMessage(list[bytes]):
    """A message (its parts, as a plain ``list``) together with its wire encoding in clear.

    Why: a publisher queues the same message for every subscriber, and each subscriber's
    writer used to encode its own copy. A fan-out strategy makes one of these per message
    (:func:`encoded_message`) and queues the *same object* on every pipe; a writer whose
    mechanism sends in clear (NULL, PLAIN) then copies ``wire`` instead of framing the parts
    again (:func:`encode_shared_messages`). Everything else sees an ordinary message: the
    parts are the list itself, so a mechanism that encrypts (CURVE) or any plain encoder
    simply frames the parts, and ``wire`` is never wrong, only unused.
    """

    __slots__ = ("wire",)

    def __init__(self, parts: Sequence[bytes], wire: bytes) -> None:
        super().__init__(parts)
        self.wire = wire  #: ``encode_message(parts)``: flags, size and body of every frame


_new_encoded = list.__new__


def encoded_message(parts: Sequence[bytes]) -> EncodedMessage:
    """``parts`` with their wire encoding made once (see :class:`EncodedMessage`).

    Built without the Python ``__init__`` (an empty instance, extended and given its
    ``wire``), and a short single part framed inline: this runs once per published message.
    """
    message = _new_encoded(EncodedMessage)
    message.extend(parts)
    if len(parts) == 1:
        part = parts[0]
        n = len(part)
        message.wire = _SHORT_LAST[n] + part if n < 256 else _LONG_LAST + _pack_u64(n) + part
    else:
        message.wire = encode_message(parts)
    return message


class _LastSharedBatch:
    """The batch :func:`encode_shared_messages` encoded last, with its bytes.

    Why: a publisher queues the same message objects on every subscriber, and their writers,
    woken together, usually take the very same run of messages. The first writer encodes it;
    the others find an equal batch here and write the same bytes object. Equality is checked
    in full (a list comparison, C-level, whose per-item identity shortcut makes it a pointer
    scan for the shared objects), so a batch that differs anywhere (a copy dropped at one
    subscriber's HWM, a welcome message, a newer run) is encoded on its own: equal parts
    always have equal wire bytes. Holds one batch (at most a writer's byte budget) until the
    next shared batch replaces it; batch and bytes live in one tuple, replaced in one
    assignment, so that event loops in other threads never see one without the other.
    """

    __slots__ = ("entry",)

    def __init__(self) -> None:
        self.entry: tuple[list[Sequence[bytes]], bytes] = ([], b"")


_last_shared = _LastSharedBatch()


def encode_shared_messages(messages: Sequence[Sequence[bytes]]) -> bytes:
    """:func:`encode_messages` for a batch that may hold :class:`EncodedMessage` items: their
    wire bytes are reused (one append, no framing), every other message is framed as usual;
    a batch equal to the previous one reuses its bytes (see :class:`_LastSharedBatch`).

    Only for mechanisms that send frames in clear. A separate function so that writers of
    queues that never hold shared messages keep the plain loop, without a type check per
    message.
    """
    previous, previous_wire = _last_shared.entry
    if (
        len(messages) == len(previous)
        and messages
        and messages[0] is previous[0]
        and messages[-1] is previous[-1]
        and messages == previous
    ):
        return previous_wire
    out: list[bytes] = []
    append = out.append
    for parts in messages:
        if type(parts) is EncodedMessage:
            append(parts.wire)
        elif len(parts) == 1:
            part = parts[0]
            n = len(part)
            append(_SHORT_LAST[n] if n < 256 else _LONG_LAST + _pack_u64(n))
            append(part)
        else:
            append_message(out, parts)
    wire = b"".join(out)
    if len(messages) > 1:
        _last_shared.entry = (list(messages), wire)
    return wire


class Command:
    """A decoded command frame: ``name`` (bytes, e.g. ``b"PING"``) and its ``data``."""

    __slots__ = ("data", "name")

    def __init__(self, name: bytes, data: bytes) -> None:
        self.name = name
        self.data = data

    def __repr__(self) -> str:
        return f"Command({self.name!r}, {self.data[:40]!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Command) and (self.name, self.data) == (other.name, other.data)

    __hash__ = None  # type: ignore[assignment]


class CommandRun(Command):
    """Consecutive command frames of one name and one fixed size, from one read, handed on
    as their wire bytes instead of a :class:`Command` each (``Connection.command_runs``).

    ``data`` is ``count`` whole frames, ``frame_size`` bytes each (header included): the
    ``i``-th frame's command data is ``data[i * frame_size + offset : (i + 1) * frame_size]``
    with ``offset = frame_size - data_size``. A receiver of every message's acknowledgement
    can then read a run with C-level slicing (``struct.iter_unpack``) instead of a Python
    object per frame. :meth:`commands` gives the ordinary form.
    """

    __slots__ = ("count", "frame_size")

    def __init__(self, name: bytes, data: bytes, frame_size: int) -> None:
        self.name = name
        self.data = data
        self.frame_size = frame_size
        self.count = len(data) // frame_size

    def commands(self) -> list[Command]:
        """The run as one :class:`Command` per frame."""
        data, size = self.data, self.frame_size
        offset = 3 + len(self.name)  # flags, size, name length, name
        name = self.name
        return [Command(name, data[i + offset : i + size]) for i in range(0, len(data), size)]

    def __repr__(self) -> str:
        return f"CommandRun({self.name!r}, {self.count} x {self.frame_size} B)"


def expand_runs(commands: list[Command]) -> list[Command]:
    """``commands`` with every :class:`CommandRun` replaced by its frames' commands."""
    if not any(type(c) is CommandRun for c in commands):
        return commands
    out: list[Command] = []
    for command in commands:
        if isinstance(command, CommandRun):
            out.extend(command.commands())
        else:
            out.append(command)
    return out


def parse_command(body: bytes) -> Command:
    """Split a command body into name and data (RFC 37: ``name-len name data``)."""
    if not body:
        raise ProtocolError("empty command frame")
    n = body[0]
    if n == 0 or len(body) < 1 + n:
        raise ProtocolError("malformed command: bad name length")
    return Command(bytes(body[1 : 1 + n]), bytes(body[1 + n :]))


#: A frame transform applied to every frame after the handshake (CURVE's MESSAGE unwrapping):
#: ``(flags, body) -> (flags, body)``. Raises ProtocolError on bad input.
#:
#: A transform object may also have a ``decode_batch`` method (:class:`BatchTransform`): the
#: decoder then hands it each read's buffer whole and uses the per-frame call only for the
#: frames it leaves over (a large body that arrives over several reads).
FrameTransform = Callable[[int, bytes], "tuple[int, bytes]"]

#: What :meth:`FrameDecoder.feed` returns: complete messages and commands, in wire order. A
#: message is its list of parts, or, from a decoder with ``bare_single_part`` set, a one-part
#: message may be its only part as a bare ``bytes`` (``zmtp.engine.queue.Received``).
Item = bytes | list[bytes] | Command

#: The fewest frames worth splitting as a run (:func:`_split_run`): below this the strided
#: header checks cost more than the per-frame loop they replace.
_RUN_MIN = 4
#: The most frames one :func:`_split_run` looks at (bounds a failed check's cost) and the
#: largest chunk one ``Struct`` unpacks (bounds each cached ``Struct``'s size).
_RUN_MAX = 1024
_RUN_CHUNK = 256
_run_structs: dict[tuple[int, int, int], Struct] = {}


def _run_struct(head: int, size: int, count: int) -> Struct:
    """``count`` frames of a ``head``-byte header and a ``size``-byte body, bodies out."""
    key = (head, size, count)
    unpacker = _run_structs.get(key)
    if unpacker is None:
        if len(_run_structs) >= 256:
            _run_structs.clear()  # many sizes: a small cache beats an unbounded one
        unpacker = _run_structs[key] = Struct(f"{head}x{size}s" * count)
    return unpacker


def _split_run(buf: bytes, pos: int, head: int, size: int, bare: bool, out: list[Item]) -> int:
    """Split the run of complete one-part data frames at ``pos`` that share the header of the
    one there (``head`` bytes: flags 0 or LONG, and ``size``); returns the position after it,
    or ``pos`` itself when fewer than :data:`_RUN_MIN` frames share it (nothing appended).

    Why: a PUSH peer's read is usually hundreds of equal frames, and the decoder's per-frame
    loop costs a dozen bytecodes each. Here the headers are checked with one strided slice per
    header byte (``count``; ``lstrip`` finds where the run ends if it ends early) and the
    bodies come out of ``Struct.unpack_from`` in chunks, all in C. Each body is appended bare
    (``bare``) or as a one-element list, exactly as the per-frame loop would
    (tests/test_engine_bare_messages.py checks the two against each other). Only frames
    already checked by the caller reach here:
    flags 0 or LONG (no MORE, no COMMAND, no reserved bit) and a size within the limit.
    """
    stride = head + size
    count = min((len(buf) - pos) // stride, _RUN_MAX)
    if count < _RUN_MIN:
        return pos
    stop = pos + count * stride
    for i in range(head):
        column = buf[pos + i : stop : stride]
        byte = buf[pos + i]
        if column.count(byte) == count:
            continue  # the common case, checked by count (lstrip costs a memchr per byte)
        rest = len(column.lstrip(buf[pos + i : pos + i + 1]))
        if rest:
            count -= rest
            if count < _RUN_MIN:
                return pos
            stop = pos + count * stride
    extend = out.extend
    while count:
        chunk = min(_RUN_CHUNK, 1 << (count.bit_length() - 1))
        bodies = _run_struct(head, size, chunk).unpack_from(buf, pos)
        if bare:
            extend(bodies)
        else:
            extend([body] for body in bodies)
        pos += chunk * stride
        count -= chunk
    return pos


class BatchTransform(Protocol):
    """A :data:`FrameTransform` that can also decode every frame of a read in one pass.

    Why: when the per-frame work is a single C call (CURVE with libsodium, ~0.5 µs), a Python
    call, a body slice and a result tuple per frame add half as much again. ``decode_batch``
    runs the frame parser and the transform in one loop instead.

    Contract of ``decode_batch(buf, pos, parts, out, max_size) -> (pos, parts)``: decode every
    *complete* frame of ``buf`` from ``pos`` on exactly as the decoder's general loop followed
    by ``__call__`` would (the same checks and errors, see :func:`frame_header_error`; the same
    items appended to ``out``; multipart assembly into ``parts``, the list of the message being
    assembled, which is appended to ``out`` itself once complete), and return at the first
    incomplete frame: its position and the parts list still being assembled. The decoder's
    general loop then takes that frame over (size checks, buffering, large-body mode). Errors
    are raised as :class:`ProtocolError`; items appended before stay in ``out``.
    """

    def __call__(self, flags: int, body: bytes) -> tuple[int, bytes]: ...

    def decode_batch(
        self, buf: bytes, pos: int, parts: list[bytes], out: list[Item], max_size: int
    ) -> tuple[int, list[bytes]]: ...


#: The bound ``decode_batch`` of a :class:`BatchTransform`.
BatchDecode = Callable[[bytes, int, list[bytes], list[Item], int], "tuple[int, list[bytes]]"]


def frame_header_error(flags: int, size: int, max_size: int) -> ProtocolError | None:
    """The decoder's verdict on a frame header (None if fine), for loops outside this module.

    The same checks, in the same order and with the same messages, as the general loop of
    :meth:`FrameDecoder.feed`: reserved flag bits first, then ``max_size`` (-1 = unlimited).
    """
    if flags & RESERVED:
        return ProtocolError(f"reserved frame flag bits set (flags=0x{flags:02x})")
    if 0 <= max_size < size:
        return MessageTooLarge(f"frame of {size} bytes exceeds max_message_size {max_size}")
    return None


#: Reads shorter than this may be one whole message of two short frames (FrameDecoder.feed).
_WHOLE_READ = 2 * (2 + 255) + 1


class FrameDecoder:
    """Incremental decoder: bytes in, complete messages and commands out.

    ``feed(data)`` parses every complete frame available and returns, in wire order, each
    complete message as a ``list[bytes]`` and each command as a :class:`Command`. Partial frames
    and partial multipart messages are kept until the next ``feed``.

    ``max_message_size`` (-1 = unlimited) is checked per frame like libzmq's ``ZMQ_MAXMSGSIZE``,
    command frames included, from the header alone. "Unlimited" is bounded by
    :func:`host_frame_limit`: a frame announcing more than this host's memory is refused at
    its header. ``max_handshake_size`` bounds each frame read with :meth:`next_frame` (the
    handshake), also from the header.
    """

    __slots__ = (
        "_batch",
        "_buf",
        "_chunks",
        "_chunks_flags",
        "_chunks_need",
        "_handshake_max",
        "_limit",
        "_max",
        "_parts",
        "_runs",
        "_tail",
        "_tail_size",
        "_transform",
        "_want",
        "_whole",
        "bare_single_part",
        "error",
        "fast_commands",
        "messages_only",
    )

    def __init__(
        self, max_message_size: int = -1, max_handshake_size: int = DEFAULT_MAX_HANDSHAKE_SIZE
    ) -> None:
        self._buf = b""  # unparsed tail (bytes; replaced, never grown chunk by chunk)
        self._max = max_message_size
        # The bound actually applied: max_message_size, or the host's memory when unlimited.
        self._limit = max_message_size if max_message_size >= 0 else host_frame_limit()
        self._handshake_max = max_handshake_size
        # next_frame: reads after _buf while a frame whose header is known is incomplete,
        # joined once when it is complete (_want: the bytes needed before parsing again).
        self._tail: list[bytes] = []
        self._tail_size = 0
        self._want = 0
        self._parts: list[bytes] = []  # parts of the message being assembled
        # Large-body mode: a frame body bigger than _LARGE_BODY arriving over several reads.
        self._chunks: list[bytes | memoryview] | None = None
        self._chunks_need = 0
        self._chunks_flags = 0
        self._transform: FrameTransform | None = None
        self._batch: BatchDecode | None = None
        #: Whether a read that is one whole short message may skip the general parser (see
        #: feed): no transform, and no size limit a short frame could break.
        self._whole = self._limit >= 255
        #: Hand a one-part message out as its bare ``bytes`` instead of a one-element list
        #: (set by Connection.bare_single_part for socket types that opted in, see
        #: ``zmtp.engine.queue.Received``); multipart messages stay lists.
        self.bare_single_part = False
        #: Split short command frames on a fast path too (set by Connection.batch_commands).
        self.fast_commands = False
        #: On that fast path, the frame headers (flags, size, name length, name) of the
        #: commands delivered as :class:`CommandRun` (set by Connection.command_runs).
        self._runs: dict[bytes, bytes] | None = None
        #: True when the last :meth:`feed` returned messages only, no :class:`Command`: the
        #: connection can then hand its list on whole instead of sorting it item by item (the
        #: receive path's second per-message loop). False whenever a command may be in it
        #: (CURVE's ``decode_batch`` does not say, so a transform with one counts as "may").
        self.messages_only = True
        #: Set when ``feed`` met malformed input (see :meth:`feed`).
        self.error: ProtocolError | None = None

    @property
    def transform(self) -> FrameTransform | None:
        """The transform applied to every frame (see :data:`FrameTransform`); None = none."""
        return self._transform

    @transform.setter
    def transform(self, value: FrameTransform | None) -> None:
        self._transform = value
        self._whole = value is None and self._limit >= 255
        # Duck-typed so that installing a transform stays one assignment for the connection.
        self._batch = getattr(value, "decode_batch", None)

    def set_command_runs(self, runs: dict[bytes, int]) -> None:
        """Deliver consecutive short command frames named in ``runs`` (name -> exact data
        size) as one :class:`CommandRun` each, on the fast command path (no transform);
        frames of another size stay ordinary commands. Empty: none."""
        headers: dict[bytes, bytes] = {}
        for name, data_size in runs.items():
            body = 1 + len(name) + data_size
            if not name or len(name) > 255 or data_size < 0 or body > 255:
                raise ValueError(f"a command run needs a short frame: {name!r}, {data_size}")
            headers[bytes((COMMAND, body, len(name))) + name] = name
        self._runs = headers or None

    @property
    def max_message_size(self) -> int:
        """The per-frame limit (-1 = unlimited, which means :func:`host_frame_limit`)."""
        return self._max

    @max_message_size.setter
    def max_message_size(self, value: int) -> None:
        self._max = value
        self._limit = value if value >= 0 else host_frame_limit()
        self._whole = self._transform is None and self._limit >= 255

    @property
    def buffered(self) -> int:
        """Bytes held for an incomplete frame (for diagnostics and tests)."""
        held = len(self._buf) + self._tail_size
        if self._chunks is not None:
            held += sum(len(c) for c in self._chunks)
        return held

    def feed(self, data: bytes) -> list[Item]:
        """Parse ``data`` (appended to anything buffered) into complete items.

        On malformed input the items decoded *before* the bad frame are still returned and
        :attr:`error` is set: a peer that breaks the protocol must not cost us the valid
        messages it sent first. The decoder must not be fed again after an error.
        """
        out: list[Item] = []
        self.messages_only = True
        if self._tail:
            data = self._join_tail(data)
        try:
            if self._chunks is not None:
                pos = self._feed_large(data, out)
            elif not self._buf:
                pos = 0
                n = len(data)
                if n < _WHOLE_READ and self._whole and not self._parts and n > 1:
                    # The read is one whole message of short data frames, the usual read of
                    # a ping-pong: one frame (PAIR, DEALER) or two (REQ/REP's delimiter and
                    # body), split here without the general parser's set-up, a third of a
                    # REQ/REP side's receive work (docs/performance.md, round-trip latency).
                    # Anything else, or a read that is not exactly that, goes on to _parse.
                    flags = data[0]
                    stop = data[1] + 2
                    if not flags:
                        if stop == n:
                            out.append(data[2:] if self.bare_single_part else [data[2:]])
                            return out
                    elif (
                        flags == MORE
                        and stop + 1 < n
                        and not data[stop]
                        and stop + 2 + data[stop + 1] == n
                    ):
                        out.append([data[2:stop], data[stop + 2 :]])
                        return out
            elif len(data) > _JOIN_LIMIT:
                pos = self._complete_held(data, out)
            else:
                data = self._buf + data
                pos = 0
            if pos < len(data):
                self._parse(data, pos, out)
        except ProtocolError as exc:
            self.error = exc
            self._discard()
        return out

    def _discard(self) -> None:
        """Drop everything buffered: after an error nothing more is decoded, and a dead
        connection must not pin a partial frame's memory."""
        self._buf = b""
        self._chunks = None
        self._parts = []
        self._tail = []
        self._tail_size = 0
        self._want = 0

    def _join_tail(self, data: bytes) -> bytes:
        """Move the reads :meth:`next_frame` kept aside back in front of ``data``."""
        self._tail.append(data)
        joined = b"".join(self._tail)
        self._tail = []
        self._tail_size = 0
        self._want = 0
        return joined

    def _feed_large(self, data: bytes, out: list[Item]) -> int:
        """Collect a large body; returns where in ``data`` the frames after it begin."""
        chunks = self._chunks
        assert chunks is not None
        need = self._chunks_need
        if len(data) < need:
            chunks.append(data)
            self._chunks_need = need - len(data)
            return len(data)
        # The last piece as a view: the join below is the only copy of it.
        chunks.append(data if len(data) == need else memoryview(data)[:need])
        body = b"".join(chunks)
        self._chunks = None
        self._emit(self._chunks_flags, body, out)
        return need

    def _complete_held(self, data: bytes, out: list[Item]) -> int:
        """Complete the incomplete frame held in ``_buf`` from the head of ``data``, without
        copying the rest of ``data``; returns where in ``data`` the frames after it begin.

        The held frame is parsed alone (a buffer of that one frame); a frame that this read
        does not complete either goes to the general parser with the read appended, exactly as
        if the two had been joined (its header is checked there, before anything is kept)."""
        held = self._buf
        have = len(held)
        flags = held[0]
        head = 9 if flags & LONG else 2
        header = held + data[: head - have] if have < head else held  # data is long enough
        size = _unpack_u64_from(header, 1)[0] if flags & LONG else header[1]
        take = head + size - have
        self._buf = b""
        if take >= len(data):
            self._parse(held + data, 0, out)  # the frame still incomplete, or ending the read
            return len(data)
        self._parse(held + data[:take], 0, out)
        return take

    def _keep_partial_body(self, buf: bytes, start: int, end: int) -> bytes | memoryview:
        """The first piece of a large body that ``buf`` leaves incomplete: a view when it is
        most of ``buf`` (no copy; holding all of ``buf`` costs at most as much again), else a
        copy (a short tail must not pin a whole large read)."""
        if 2 * (end - start) >= len(buf):
            return memoryview(buf)[start:end]
        return buf[start:end]

    def _parse(self, buf: bytes, pos: int, out: list[Item]) -> None:
        end = len(buf)
        maxsize = self._limit
        parts = self._parts
        transform = self._transform
        append = out.append
        if self._batch is not None:
            # Every complete frame in one pass; the loop below takes the incomplete one, if any.
            self.messages_only = False  # it may have appended commands
            pos, parts = self._batch(buf, pos, parts, out, maxsize)
        # Fast path for the commonest frame: short, single-part, no transform, and no size
        # limit below 255 bytes. It skips every check the general path makes for it.
        fast = transform is None and (maxsize < 0 or maxsize >= 255)
        # Short command frames split in place too, for connections that asked for it (a
        # socket with an extension: QoS receives a command per message it sent).
        fast_commands = fast and self.fast_commands
        runs = self._runs if fast_commands else None
        bare = self.bare_single_part
        # Runs of equal frames are split in C (_split_run) until one attempt finds none: then
        # this read is of mixed sizes, and the per-frame loops take it without more attempts.
        try_runs = transform is None
        while True:
            if fast and not parts:
                # The run of short single-part data frames (flags 0) that makes up most reads,
                # in a loop of its own: nothing else is checked per frame.
                limit = end - 1
                while try_runs and pos < limit and not buf[pos]:
                    after = _split_run(buf, pos, 2, buf[pos + 1], bare, out)
                    if after == pos:
                        try_runs = False
                    pos = after
                if bare:
                    while pos < limit and not buf[pos]:
                        stop = pos + 2 + buf[pos + 1]
                        if stop > end:
                            break
                        append(buf[pos + 2 : stop])
                        pos = stop
                else:
                    while pos < limit and not buf[pos]:
                        stop = pos + 2 + buf[pos + 1]
                        if stop > end:
                            break
                        append([buf[pos + 2 : stop]])
                        pos = stop
                if pos < limit and buf[pos] == MORE:
                    # A message of short data frames (REQ/REP's envelope and body): taken
                    # whole here if it is complete in ``buf``; anything else (a long or
                    # command frame, or the message's end not read yet) is left to the
                    # general path below, from its first frame.
                    message = []
                    at = pos
                    complete = False
                    while at < limit:
                        flags = buf[at]
                        stop = at + 2 + buf[at + 1]
                        if flags > MORE or stop > end:
                            break
                        message.append(buf[at + 2 : stop])
                        at = stop
                        if not flags:
                            complete = True
                            break
                    if complete:
                        append(message)
                        pos = at
                        continue
            if end - pos < 2:
                break
            flags = buf[pos]
            if not flags and fast and not parts:
                break  # a short data frame the inner loop left: it is incomplete
            if flags & LONG:
                if end - pos < 9:
                    break
                size = _unpack_u64_from(buf, pos + 1)[0]
                start = pos + 9
                if try_runs and flags == LONG and not parts and size <= maxsize:
                    # A run of equal long one-part frames (1 KiB messages): split in C.
                    after = _split_run(buf, pos, 9, size, bare, out)
                    if after != pos:
                        pos = after
                        continue
                    try_runs = False
            else:
                size = buf[pos + 1]
                start = pos + 2
                if fast_commands and flags == COMMAND:
                    # A short command frame (an extension's ACK per message): split in place.
                    stop = start + size
                    if stop > end:
                        break
                    if size and 0 < buf[start] < size:
                        n = start + 1 + buf[start]
                        self.messages_only = False
                        if runs is not None:
                            name = runs.get(buf[pos:n])
                            if name is not None:
                                pos = self._take_run(buf, pos, n - pos, 2 + size, name, out)
                                continue
                        append(Command(buf[start + 1 : n], buf[n:stop]))
                        pos = stop
                        continue
            if flags & RESERVED:
                raise ProtocolError(f"reserved frame flag bits set (flags=0x{flags:02x})")
            if size > maxsize:
                raise self._too_large(size)
            stop = start + size
            if stop > end:
                if size > _LARGE_BODY:
                    # Keep the partial body as the first chunk; join once when complete.
                    self._chunks = [self._keep_partial_body(buf, start, end)]
                    self._chunks_need = stop - end
                    self._chunks_flags = flags
                    self._parts = parts
                    self._buf = b""
                    return
                break
            body = buf[start:stop]
            pos = stop
            if transform is not None:
                flags, body = transform(flags, body)
            if flags & COMMAND:
                if flags & MORE:
                    raise ProtocolError("command frame with the MORE flag set")
                self.messages_only = False
                # No "in the middle of a multipart" check: libzmq's heartbeat timer writes a
                # PING between two frames of a message, and its own decoder carries on
                # assembling the message. So do we.
                if transform is None and body and 0 < body[0] < size:
                    # parse_command inline (a slice of bytes is bytes already): an extension
                    # may receive a command per message it sent (QoS ACKs).
                    n = body[0] + 1
                    append(Command(body[1:n], body[n:]))
                else:
                    append(parse_command(body))
            elif flags & MORE:
                parts.append(body)
            elif parts:
                parts.append(body)
                append(parts)
                parts = []
            elif bare:
                append(body)
            else:
                append([body])
        self._parts = parts
        self._buf = buf[pos:] if pos < end else b""

    @staticmethod
    def _take_run(
        buf: bytes, pos: int, header_size: int, frame_size: int, name: bytes, out: list[Item]
    ) -> int:
        """The run of complete frames at ``pos`` that share its header (the first is one),
        appended as one :class:`CommandRun`; returns the position after it.

        Checked with one strided slice per header byte, in C: the common case (every
        complete frame left in the read is one of them) by ``count``; otherwise ``lstrip``
        says how many frames from ``pos`` on share that byte, and the run is the shortest of
        those (a QoS receiver's CLRs end where the messages that follow them begin: a
        ``startswith`` per frame cost a Python loop step and an argument parse each)."""
        count = (len(buf) - pos) // frame_size
        stop = pos + count * frame_size
        if count > 1:
            for i in range(header_size):
                column = buf[pos + i : stop : frame_size]
                byte = buf[pos + i]
                if column.count(byte) != count:
                    count -= len(column.lstrip(buf[pos + i : pos + i + 1]))
                    stop = pos + count * frame_size
                    if count == 1:
                        break
        out.append(CommandRun(name, buf[pos:stop], frame_size))
        return stop

    def _too_large(self, size: int) -> MessageTooLarge:
        if self._max >= 0:
            return MessageTooLarge(f"frame of {size} bytes exceeds max_message_size {self._max}")
        return MessageTooLarge(
            f"frame of {size} bytes is larger than this host's memory ({self._limit} bytes);"
            " refused at its header"
        )

    def _emit(self, flags: int, body: bytes, out: list[Item]) -> None:
        """Handle one complete frame outside the fast loop (large-body mode)."""
        if self._transform is not None:
            flags, body = self._transform(flags, body)
        if flags & COMMAND:
            if flags & MORE:
                raise ProtocolError("command frame with the MORE flag set")
            self.messages_only = False
            out.append(parse_command(body))  # may sit between two frames of a message
        elif flags & MORE:
            self._parts.append(body)
        elif self.bare_single_part and not self._parts:
            out.append(body)
        else:
            self._parts.append(body)
            out.append(self._parts)
            self._parts = []

    def next_frame(self, data: bytes = b"") -> tuple[int, bytes] | None:
        """Buffer ``data`` and return one complete raw frame, or None if none is complete yet.

        Used during the handshake, where each command may change how later frames are read
        (CURVE installs its transform after READY), so frames must be taken one at a time.
        A frame is refused at its header if it announces more than ``max_handshake_size``
        (or ``max_message_size``), and the reads of an incomplete frame are kept as a list
        and joined once, when it is complete: no copy of the partial frame per read.
        """
        if self._want:
            if data:
                self._tail.append(data)
                self._tail_size += len(data)
            if len(self._buf) + self._tail_size < self._want:
                return None
            buf = self._join_tail(b"")
            buf = self._buf + buf
        else:
            buf = self._buf + data if self._buf else data
        end = len(buf)
        if end < 2:
            self._buf = buf
            return None
        flags = buf[0]
        if flags & LONG:
            if end < 9:
                self._buf = buf
                return None
            size = _unpack_u64_from(buf, 1)[0]
            start = 9
        else:
            size = buf[1]
            start = 2
        try:
            if flags & RESERVED:
                raise ProtocolError(f"reserved frame flag bits set (flags=0x{flags:02x})")
            if 0 <= self._max < size:
                raise self._too_large(size)
            if size > self._handshake_max:  # also far below the host's memory
                raise ProtocolError(
                    f"handshake frame of {size} bytes exceeds max_handshake_size"
                    f" {self._handshake_max}; refused at its header"
                )
        except ProtocolError:
            self._discard()
            raise
        stop = start + size
        if stop > end:
            self._buf = buf
            self._want = stop
            return None
        self._buf = buf[stop:]
        return flags, buf[start:stop]
