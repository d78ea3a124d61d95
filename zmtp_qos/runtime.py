"""The QoS runtime: a :class:`zmtp.SocketExtension` for PUSH/PULL and SCATTER/GATHER
(docs/qos-protocol.md §5.1).

Sender: every message is tracked *before* it is written (``before_send``), per connection at
level 1 and per anchor at levels 2-3, FIFO per digest. ACK (or COMP) settles the oldest entry
with that digest; at levels 2-3 a CLR follows on the same connection. A lost connection sends
its un-ACKed messages (and what was still queued for it) to the front of another peer's queue
at level 1, and keeps them pinned to the anchor at levels 2-3, replayed first when that anchor
reconnects. Every un-settled message counts against ``send_hwm`` wherever it is (queued for a
connection, written, held for its anchor, waiting for a retry): the wrapper's ``send`` takes a
slot (:meth:`QoSRuntime.acquire`) before the message exists for the socket, and settling it
gives the slot back. That bound is what the receiver's dedup capacity relies on
(docs/qos.md, "Dedup capacity").

Receiver: level 1 ACKs a message once it is queued; levels 2-3 keep a dedup set per anchor;
level 3 hands each message to the application wrapped in a handle whose verdict becomes COMP
or NACK (see :mod:`zmtp_qos.socket`).

Hot path (docs/performance.md, "QoS levels"): over tcp/ipc the work is done per batch through
zmtp's batch hooks: ``before_send_batch`` digests and tracks a writer's batch,
``on_receive_batch`` answers a read with one ``send_command_frames`` of precomputed ACK
prefixes plus digests, and ``on_command_batch`` settles a read's run of ACKs (COMP) with one
dict pop each and queues their CLRs together. The single-message hooks (inproc, udp) call the
batch forms with one message.
"""

from __future__ import annotations

import contextlib
import time
from collections import deque
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import repeat
from typing import cast

import anyio

from zmtp import SocketExtension
from zmtp.engine.pipe import Pipe, PipeClosed
from zmtp.engine.queue import Message, Received
from zmtp.monitor import MonitorEvent, PeerInfo
from zmtp.protocol.frames import Command, CommandRun, encode_command, expand_runs

from . import commands, handshake, runs
from .anchor import describe, peer_anchor
from .codes import is_retryable
from .config import QoSConfig, backoff_delay
from .dedup import DedupStore
from .digest import (
    BATCH_DIGESTERS,
    BATCH_KEYERS,
    DIGEST_SIZE,
    DIGESTERS,
    RECEIVED_DIGESTERS,
    key_of,
)
from .events import QoSDeadLettered, QoSFailedOver, QoSReplayed, QoSRetried
from .pending import PendingTracker
from .results import DeadLetter, Delivered, NackError, Receipt
from .stats import QoSStats
from .verdicts import WAKE_OR_FLUSH, VerdictQueue

RECEIVING_TYPES = frozenset({"PULL", "GATHER"})
SENDING_TYPES = frozenset({"PUSH", "SCATTER"})


class Entry(Receipt):
    """One message the sender is responsible for until it is settled; it is also the
    :class:`Receipt` that ``send`` returns (one object per message in flight, not two: fewer
    allocations and fewer objects for the cyclic GC to walk, docs/performance.md).

    It holds its message as :attr:`parts`, the bytes of a one-part message or a tuple of
    the parts, never the list zmtp queues: neither is tracked by the cyclic GC (bytes never
    are; a tuple of bytes is untracked by the first collection that sees it), so once the
    list has been written and dropped the entry is the one tracked object of its message.
    The runtime finds an entry from a queued list through :attr:`QoSRuntime.queued`;
    :meth:`message` gives a fresh list for a replay, a fail-over or a dead letter.
    """

    __slots__ = ("_retries", "_waiting_since", "key", "parts", "seq")

    #: The pipe (level 1) or anchor (levels 2-3) it is tracked under, set by the tracker at
    #: each write; unset while never written (read it with ``_key_of``).
    key: object
    #: The message: its only part as bytes, or a tuple of its parts (``()`` once delivered:
    #: a kept receipt does not keep the message alive).
    parts: bytes | tuple[bytes, ...]
    seq: int  #: write order, set by the tracker
    _retries: int
    _waiting_since: float | None

    # The two rarely used fields are left unset by ``new`` and read with a default here: two
    # attribute stores fewer per message.

    @property
    def retries(self) -> int:
        """How many times a retryable NACK has re-sent it (level 3)."""
        return getattr(self, "_retries", 0)

    @retries.setter
    def retries(self, value: int) -> None:
        self._retries = value

    @property
    def waiting_since(self) -> float | None:
        """When the sweep first found it with no peer to go to (queued on a connect() pipe
        with no connection, or failed over with nobody connected): it is dead-lettered
        ``peer_timeout`` once it has waited ``dead_letter_timeout`` so (see ``sweep``)."""
        return getattr(self, "_waiting_since", None)

    @waiting_since.setter
    def waiting_since(self, value: float | None) -> None:
        self._waiting_since = value

    def message(self) -> Message:
        """The message as a new list of its parts (what zmtp queues, or a dead letter holds)."""
        parts = self.parts
        return [parts] if isinstance(parts, bytes) else list(parts)

    @staticmethod
    def new(message: Message) -> Entry:
        """A fresh entry for ``message`` (not yet digested or tracked).

        A static method rather than ``__init__``: on this interpreter calling a class whose
        ``__init__`` is Python code costs a C-level call and a new interpreter frame, a
        function call from Python code does not (~100 ns per message less;
        docs/performance.md, optimisation log). Receipt's state is set here too, without
        ``Receipt.__init__``. Three stores: ``seq`` and ``key`` are set by the tracker when
        the entry is written (``key`` is read with a default before), and the rarely used fields
        (the await's event, ``observed``, ``retries``, ``waiting_since``) are read with a
        default (seven stores fewer per message than setting every slot).
        ``zmtp_qos.Socket.send`` spells this out inline: keep the two in step.
        """
        entry: Entry = _new_object(Entry)
        entry.outcome = None
        entry.watched = None
        entry.parts = _frozen(message)
        return entry


def _key_of(entry: Entry) -> object:
    """Where ``entry`` was last written (its tracker key), None if never."""
    return getattr(entry, "key", None)


def _frozen(message: Message) -> bytes | tuple[bytes, ...]:
    """What an :class:`Entry` keeps of ``message``: the bytes of a one-part message, else a
    tuple of the parts (the list itself stays zmtp's, and is dropped once written)."""
    if len(message) == 1 and type(message[0]) is bytes:
        return message[0]
    return tuple(message)


_new_object = object.__new__

#: ``before_send_batch`` takes a batch out of ``queued`` in one piece when the batch is the
#: table's first lists and at most this many were filed after them (re-filed then, so the
#: cost stays bounded by the batch; a larger rest, as with several peers, pops the batch).
_SPARE_FILED = 16


def _ack_frames(pipe: Pipe, prefix: bytes, digests: list[bytes]) -> list[bytes]:
    """The ACK (COMP) frames of ``digests`` for ``pipe``: every frame is ``prefix`` plus a
    digest. Over tcp/ipc they go as one buffer, ``prefix`` then the digests joined by
    ``prefix`` (one C call for the read); without a stream (inproc)
    ``Pipe.send_command_frames`` parses each item as one command, so one frame per digest.
    Empty: none."""
    if not digests:
        return []
    if pipe.stream is not None:
        return [prefix + prefix.join(digests)]
    return [prefix + digest for digest in digests]


def _frame_prefix(name: bytes, data_size: int) -> bytes:
    """The bytes of a ``name`` command frame before its last ``data_size`` data bytes."""
    return encode_command(name, bytes(data_size))[:-data_size]


_NOBODY = Delivered("")
#: What a delivered entry holds instead of its message (its receipt may be kept for long).
_SETTLED: tuple[bytes, ...] = ()
CLR = commands.CLR

#: CLR echoes the ACK's (or COMP's) first 9 data bytes (algorithm + digest) as they came.
CLR_PREFIX = _frame_prefix(commands.CLR, 9)


@dataclass
class PeerState:
    """Per-connection QoS state (``pipe.extension_state``).

    Besides what the handshake settled, it holds what the per-message paths would otherwise
    recompute: the tracker key, the receipts' :class:`Delivered` outcome (one immutable value
    per peer), and the frame prefixes of ACK and COMP with this algorithm (a frame is then the
    prefix plus the 8-byte digest, docs/qos-protocol.md §4).
    """

    anchor: bytes | None
    algorithm: str
    digester: Callable[[Message], bytes]
    #: A batch's digests as the sender tracks them (ints, :func:`zmtp_qos.digest.keys_x`)
    #: and as the receiver answers them (bytes, :func:`zmtp_qos.digest.digests_x`).
    keys: Callable[[Sequence[Message]], list[int]] = BATCH_KEYERS["x"]
    digests: Callable[[Sequence[Message]], list[bytes]] = BATCH_DIGESTERS["x"]
    #: The receiver's batch digests of a read taken bare (:meth:`QoSRuntime.on_received_batch`).
    received_digests: Callable[[Sequence[Received]], list[bytes]] = RECEIVED_DIGESTERS["x"]
    key: object = None  #: the tracker key: the pipe (level 1) or the anchor (levels 2-3)
    delivered: Delivered = field(default_factory=lambda: _NOBODY)  #: set by validate_peer
    ack_prefix: bytes = b""
    comp_prefix: bytes = b""
    #: Level-3 receiver: the COMPs of this connection not yet written (made at its first read).
    verdicts: VerdictQueue | None = None

    def __post_init__(self) -> None:
        self.received_digests = RECEIVED_DIGESTERS[self.algorithm]
        algo = self.algorithm.encode("ascii")
        self.ack_prefix = _frame_prefix(commands.ACK, 9) + algo
        self.comp_prefix = _frame_prefix(commands.COMP, 9) + algo


@dataclass
class AnchorState:
    """A level-2/3 peer across its connections."""

    pipe: Pipe | None = None
    #: The endpoint of its last connection (``pipe.endpoint``), kept after it ends: where its
    #: held and written messages were placed, for ``QoSDeadLettered``.
    endpoint: str = ""
    disconnected_at: float | None = None
    held: deque[Entry] = field(default_factory=deque)  #: waiting for the anchor to come back


class QoSRuntime(SocketExtension):
    """The protocol engine behind :class:`zmtp_qos.Socket`."""

    def __init__(
        self,
        level: int,
        config: QoSConfig,
        socket_type: str,
        send_hwm: int,
        recv_hwm: int,
        identity: bytes,
        on_dead_letter: Callable[[DeadLetter, Receipt], None],
        wake_senders: Callable[[], None],
        deliver_handles: Callable[[VerdictQueue, list[Received], list[bytes]], int] | None = None,
        clock: Callable[[], float] = time.monotonic,
        schedule: Callable[[float, Callable[[], None]], None] | None = None,
    ) -> None:
        self.schedule = schedule
        self.retrying = 0
        self.level = level
        self.config = config
        self.socket_type = socket_type
        self.send_hwm = send_hwm if send_hwm > 0 else 1 << 62
        self.identity = identity
        self.clock = clock
        self.on_dead_letter = on_dead_letter
        self.wake_senders = wake_senders
        #: Level 3 receiver: hands a read's new messages (with their digests, and the
        #: connection's verdict queue) to the application as handles, in order, and says how
        #: many it took (the rest are answered NACK 0x84: its queue is full). One call per
        #: read, not per message.
        self.deliver_handles = deliver_handles
        self.tracker: PendingTracker[Entry] = PendingTracker()
        #: id(message list) -> entry, for the lists zmtp holds and has not written yet: queued
        #: on a pipe (``send``, a replay, a fail-over) or about to be. A write
        #: (:meth:`before_send_batch`) and taking a pipe's queue back remove them, so every
        #: key is the id of a live list: zmtp keeps it until then, the entry does not.
        self.queued: dict[int, Entry] = {}
        #: Messages sent and not yet settled, wherever they are (queued, written, held for
        #: their anchor, waiting for a retry): each takes one of the ``send_hwm`` slots.
        self.unsettled = 0
        #: Level 3: entries whose retryable NACK scheduled a re-send (in no other table
        #: meanwhile; a close dead-letters them from here).
        self.retry_entries: set[Entry] = set()
        self.anchors: dict[bytes, AnchorState] = {}
        #: Waiting for any peer: level 1's failed over, and (every level) messages queued on
        #: a pipe removed before it ever connected.
        self.orphans: deque[Entry] = deque()
        self.dedup = DedupStore(max(recv_hwm, 1) if recv_hwm > 0 else 1 << 30, config.dedup_ttl)
        #: Level 3 receiver: per anchor, the digests handed to the application and awaiting
        #: their verdict (or whose COMP is queued, below) -> the connection it came from.
        #: Keyed per anchor: a read looks its table up once and tests its digests in bulk.
        self.processing: dict[bytes, dict[bytes, Pipe]] = {}
        #: Level 3 receiver: (anchor, digest) of a message awaiting its verdict -> the
        #: connection of every other copy received since (a replay or a byte-identical
        #: message): each copy is answered by that one verdict, on its own connection,
        #: instead of being delivered again. Rare, hence apart (empty: nothing to look up).
        self.copies: dict[tuple[bytes, bytes], list[Pipe]] = {}
        #: Level 3 receiver: the connections' verdict queues holding COMPs decided and not
        #: yet written (:class:`~zmtp_qos.verdicts.VerdictQueue`), in the order of their
        #: first verdict since the last flush: written in one batch per connection by
        #: :meth:`flush_verdicts`, which the socket's flusher task runs once woken by
        #: ``wake_flusher`` (called by a queue's first verdict after a flush); None: no
        #: flusher (written at once).
        self.comps: list[VerdictQueue] = []
        self.wake_flusher: Callable[[], None] | None = None
        self.delivered = 0
        self.dead_lettered = 0
        #: Set by :meth:`close_out`: nothing is pending any more, and a message still queued
        #: on a pipe was dead-lettered (its pipe's teardown must not track it again).
        self.closed_out = False
        self._drained: anyio.Event | None = None
        #: Called when a close starts waiting for pending acknowledgements (diagnostics, tests).
        self.on_linger: Callable[[], None] | None = None
        #: Where QoS monitor events go (the socket's ``engine.emit``); None: nowhere.
        self.emit: Callable[[MonitorEvent], None] | None = None
        self.live: list[Pipe] = []  #: connected pipes, in connection order
        #: Receiver: whether the connections may read more input (the socket's handle-queue
        #: limit, :meth:`zmtp_qos.Socket.set_receive_limit`); None: always.
        self.receive_gate: Callable[[], bool] | None = None
        #: Level 2/3 receiver: called after a CLR removed a digest (a graceful stop waits for
        #: its COMPs to be confirmed, :meth:`zmtp_qos.Socket.wait_confirmed`).
        self.on_clear: Callable[[], None] | None = None
        #: Every pipe of the socket (set by :class:`zmtp_qos.Socket` to the engine's
        #: ``pipes``): the sweep looks for messages queued on pipes with no connection.
        self.pipes: Callable[[], Iterable[Pipe]] | None = None
        #: What the per-message paths test once: which side this socket is, and the command
        #: that settles a message at this level (ACK at 1-2, COMP at 3).
        self.receiving = socket_type in RECEIVING_TYPES
        self.sending = socket_type in SENDING_TYPES
        self.settling = commands.COMP if level == 3 else commands.ACK

    # ------------------------------------------------------------------ counters

    @property
    def comps_queued(self) -> int:
        """Level 3 receiver: COMPs decided and not yet written (every connection)."""
        return sum(map(len, self.comps))

    @property
    def in_flight(self) -> int:
        """Messages sent and not yet settled: queued, written, held or waiting to be retried."""
        return self.unsettled

    def pending_per_peer(self) -> dict[str, int]:
        """Written-and-unsettled messages per peer, plus (levels 2-3) those held for a
        disconnected anchor; peers by printable name, sorted."""
        counts: dict[str, int] = {}
        for key in self.tracker.peer_keys():
            if isinstance(key, Pipe):
                state: PeerState | None = key.extension_state
                name = self._peer_name(key, state) if state is not None else key.endpoint
            else:
                name = describe(key if isinstance(key, bytes) else None)
            counts[name] = counts.get(name, 0) + self.tracker.count(key)
        for anchor, anchor_state in self.anchors.items():
            if anchor_state.held:
                name = describe(anchor)
                counts[name] = counts.get(name, 0) + len(anchor_state.held)
        return dict(sorted(counts.items()))

    def stats(self) -> QoSStats:
        """A snapshot of the counters (:class:`~zmtp_qos.stats.QoSStats`); queued COMPs are
        written first, so ``awaiting_verdict`` and ``dedup`` count a verdict as soon as it
        is given."""
        self.flush_verdicts()
        return QoSStats(
            level=self.level,
            in_flight=self.in_flight,
            pending=self.pending_per_peer(),
            retrying=self.retrying,
            dedup=len(self.dedup),
            awaiting_verdict=sum(len(table) for table in self.processing.values()),
            delivered=self.delivered,
            dead_lettered=self.dead_lettered,
        )

    @property
    def full(self) -> bool:
        """Whether ``send_hwm`` messages are un-settled (a new send must wait)."""
        return self.unsettled >= self.send_hwm

    # ------------------------------------------------------------------ handshake

    def handshake_properties(self) -> Mapping[str, bytes]:
        props = handshake.local_properties(self.level)
        if self.level >= 2 and self.identity:
            props["Identity"] = self.identity  # our anchor (the reference needs one each way)
        return props

    def validate_peer(self, pipe: Pipe, peer: PeerInfo) -> str | None:
        anchor = peer_anchor(peer)
        result = handshake.validate_peer(self.level, peer.properties, anchor)
        if isinstance(result, str):
            return result
        algorithm = result.algorithm
        state = PeerState(
            anchor,
            algorithm,
            DIGESTERS[algorithm],
            BATCH_KEYERS[algorithm],
            BATCH_DIGESTERS[algorithm],
        )
        state.key = pipe if self.level == 1 else anchor
        state.delivered = Delivered(self._peer_name(pipe, state))
        pipe.extension_state = state
        return None

    # ------------------------------------------------------------------ connections

    def pipe_connected(self, pipe: Pipe) -> None:
        state: PeerState = pipe.extension_state
        self.live.append(pipe)
        if self.socket_type not in SENDING_TYPES:
            return
        if self.level == 1:
            if self.orphans:
                replay = list(self.orphans)
                self.orphans.clear()
                pipe.send_first(self._queue(replay))
            return
        assert state.anchor is not None
        anchor = self.anchors.setdefault(state.anchor, AnchorState())
        anchor.pipe = pipe
        anchor.endpoint = pipe.endpoint
        anchor.disconnected_at = None
        # Replay first: written-but-unsettled (in write order), then what was held back,
        # then what waited for any peer.
        replay = self.tracker.take(state.anchor) + list(anchor.held) + list(self.orphans)
        anchor.held.clear()
        self.orphans.clear()
        if replay:
            pipe.send_first(self._queue(replay))
            self._event(QoSReplayed(pipe.endpoint, describe(state.anchor), len(replay)))

    def pipe_disconnected(self, pipe: Pipe, reason: str) -> None:
        state: PeerState | None = pipe.extension_state
        if pipe in self.live:
            self.live.remove(pipe)
        if state is None or self.socket_type not in SENDING_TYPES or self.closed_out:
            return
        unsent = [self._entry_for(m) for m in pipe.outbox.clear()]
        if self.level == 1:
            moved = self.tracker.take(pipe) + unsent
            self._fail_over(pipe, moved)
        else:
            assert state.anchor is not None
            anchor = self.anchors.setdefault(state.anchor, AnchorState())
            if anchor.pipe is pipe:
                anchor.pipe = None
                anchor.disconnected_at = self.clock()
            anchor.held.extend(unsent)  # written ones stay in the tracker under the anchor

    def pipe_removed(self, pipe: Pipe) -> None:
        """``pipe`` is gone for good (``disconnect()``, or an accepted connection closed):
        zmtp would drop what is still queued on it, so take it first. A pipe that had a
        connection is handled as its loss (idempotent if that was already seen); messages
        queued on one that never connected were written to no peer, so they are pinned to
        none: they go to a connected peer, or wait for one until ``dead_letter_timeout``."""
        if self.socket_type not in SENDING_TYPES or self.closed_out:
            return
        if pipe.extension_state is not None:
            self.pipe_disconnected(pipe, "removed")
            return
        unplaced = [self._entry_for(m) for m in pipe.outbox.clear()]
        if self.level == 1:
            self._fail_over(pipe, unplaced)
        else:
            self._requeue(pipe, unplaced)

    def _requeue(self, lost: Pipe, entries: list[Entry]) -> None:
        """``entries`` to the front of the connected peers' queues, in order, round robin (at
        levels 2-3 only messages written to no peer come here: pinned when written, as any
        new message), or, with no peer connected, unplaced until one connects or
        ``dead_letter_timeout`` passes."""
        if not entries:
            return
        targets = [p for p in self._sending_pipes() if p.connected and p is not lost]
        if not targets:
            now = self.clock()
            for entry in entries:
                entry.waiting_since = now
            self.orphans.extend(entries)
            return
        per_pipe: dict[Pipe, list[Entry]] = {}
        for i, entry in enumerate(entries):
            per_pipe.setdefault(targets[i % len(targets)], []).append(entry)
        for target, moved in per_pipe.items():
            target.send_first(self._queue(moved))

    def _fail_over(self, lost: Pipe, moved: list[Entry]) -> None:
        """Level 1: to the front of the next connected peers' queues, in order."""
        if not moved:
            return
        self._event(QoSFailedOver(lost.endpoint, len(moved)))
        self._requeue(lost, moved)

    def _sending_pipes(self) -> list[Pipe]:
        return list(self.live)

    def _entry_for(self, message: Message) -> Entry:
        """The entry of a list zmtp gave back unwritten (a pipe's queue taken back): no
        longer queued (it goes back to zmtp, if at all, as a new list: :meth:`_queue`)."""
        entry = self.queued.pop(id(message), None)
        if entry is None:  # a message the wrapper did not send (never, in practice)
            entry = Entry.new(message)
            self.unsettled += 1
        return entry

    def _queue(self, entries: Iterable[Entry]) -> list[Message]:
        """New lists of ``entries``' messages for zmtp to queue (``send_first``), each
        registered in :attr:`queued` so that its write finds its entry."""
        queued = self.queued
        messages: list[Message] = []
        for entry in entries:
            message = entry.message()
            queued[id(message)] = entry
            messages.append(message)
        return messages

    # ------------------------------------------------------------------ sending

    def register(self, message: Message) -> Receipt:
        """The wrapper's send, once :attr:`full` is false: remember ``message`` (the list
        object), which takes one of the ``send_hwm`` slots, and return its receipt."""
        entry = Entry.new(message)
        self.queued[id(message)] = entry
        self.unsettled += 1
        return entry

    def unregister(self, message: Message) -> None:
        """The wrapper's send failed before the socket took ``message`` (timeout, cancel,
        close): forget it and give its slot back."""
        entry = self.queued.pop(id(message), None)
        if entry is not None and not entry.done:
            self._settled(entry)

    def command_runs(self) -> Mapping[bytes, int]:
        """The commands that come one per message, as runs of wire bytes (zmtp's
        :meth:`~zmtp.SocketExtension.command_runs`): the sender's ACK (COMP at level 3),
        the level-2/3 receiver's CLR; all carry [algorithm][digest 8]."""
        if self.sending:
            return {self.settling: runs.REF_SIZE}
        if self.receiving and self.level >= 2:
            return {CLR: runs.REF_SIZE}
        return {}

    def can_receive(self, pipe: Pipe) -> bool:
        gate = self.receive_gate
        return gate is None or gate()

    def before_send(self, pipe: Pipe, message: Message) -> None:
        self.before_send_batch(pipe, [message])  # inproc and udp: one at a time

    def before_send_batch(self, pipe: Pipe, messages: list[Message]) -> None:
        """Digest and track a writer's batch before it is written: an immediate ACK finds
        every entry. The entries are looked up and the digests computed in C-level loops
        (``map``, :func:`zmtp_qos.digest.keys_x`), and one tracker call records them: the
        only Python loop per message is the tracker's. A message is digested at each write
        (a replay may go to a peer using the other algorithm; hashing 64 B is cheaper than
        the test that would skip it)."""
        state: PeerState | None = pipe.extension_state
        if state is None or not self.sending:
            return
        # Taken out: once written the list is zmtp's to drop, and the entry keeps its parts.
        queued = self.queued
        ids = list(map(id, messages))
        count = len(ids)
        spare = len(queued) - count
        keys = list(queued) if 0 <= spare <= _SPARE_FILED else None
        if keys is not None and (keys[:count] if spare else keys) == ids:
            # The usual batch with one peer: the lists filed first, in filing order (its
            # writer took the whole outbox), with at most a few filed after them (a send
            # whose cancel check let the writer run before its list was queued). The table
            # is emptied in one call and the few put back, instead of a pop per message:
            # the same entries, without the hashing, and no unregistered one to look for.
            entries = list(queued.values())
            queued.clear()
            if spare:
                queued.update(zip(keys[count:], entries[count:], strict=True))
                del entries[count:]
        else:
            found = list(map(queued.pop, ids, repeat(None)))
            if None in found:  # a message the wrapper did not register (never, in practice)
                found = [
                    entry if entry is not None else self._entry_for(message)
                    for entry, message in zip(found, messages, strict=True)
                ]
            entries = cast("list[Entry]", found)
        self.tracker.track_all(state.key, entries, state.keys(messages))

    def on_command_batch(self, pipe: Pipe, commands: list[Command]) -> None:
        """A read's run of commands: the settling ones (ACK at levels 1-2, COMP at 3) in one
        loop, with their CLRs (levels 2-3) queued in one call; anything else one by one."""
        state: PeerState | None = pipe.extension_state
        if state is None or not self.sending:
            if state is not None and self.receiving and state.anchor is not None:
                self._clear_batch(pipe, state.anchor, commands)
                return
            for command in expand_runs(commands):
                self.on_command(pipe, command.name, command.data)
            return
        settling = self.settling
        run: list[bytes] = []  # the data of consecutive settling commands
        for command in commands:
            if type(command) is CommandRun:  # ACKs (COMPs) as wire bytes: command_runs
                if run:
                    self._settle_run(pipe, state, run)
                    run = []
                self._settle_frames(pipe, state, command)
                continue
            data = command.data
            if command.name == settling and len(data) >= 1 + DIGEST_SIZE:
                run.append(data)
                continue
            if run:
                self._settle_run(pipe, state, run)
                run = []
            self.on_command(pipe, command.name, data)  # short ones are ignored there
        if run:
            self._settle_run(pipe, state, run)

    def _settle_run(self, pipe: Pipe, state: PeerState, run: list[bytes]) -> None:
        """Settle a run of ACKs (COMPs) in one tracker call, and queue their CLRs in one."""
        found = self._settle(state, [key_of(data[1 : 1 + DIGEST_SIZE]) for data in run])
        if self.level >= 2:
            self._send_frames(
                pipe,
                [
                    CLR_PREFIX + data[: 1 + DIGEST_SIZE]
                    for data, entry in zip(run, found, strict=True)
                    if entry is not None
                ],
            )

    def _settle_frames(self, pipe: Pipe, state: PeerState, frames: CommandRun) -> None:
        """:meth:`_settle_run` for a run handed over as wire bytes (:mod:`zmtp_qos.runs`):
        the digests cut out in C, and when every one was known (the usual case) the CLRs
        built from the frames in one piece."""
        if frames.name != self.settling:  # the other level's command: ignored
            return
        found = self._settle(state, runs.digest_keys(frames))
        if self.level >= 2:
            if None not in found:
                self._send_frames(pipe, [runs.clear_frames(frames)])
            else:
                refs = runs.references(frames)
                self._send_frames(
                    pipe,
                    [
                        CLR_PREFIX + ref
                        for ref, entry in zip(refs, found, strict=True)
                        if entry is not None
                    ],
                )

    def _settle(self, state: PeerState, digests: list[int]) -> list[Entry | None]:
        """Settle the oldest entry of each digest under the peer's key (one tracker call):
        the receipts resolve ``Delivered``; returns what each digest found (None: unknown,
        ignored)."""
        found = self.tracker.settle_all(state.key, digests)
        delivered = state.delivered
        # The usual run: every digest known (all entries, which are truthy); an unknown
        # digest (None) is ignored. Written entries are in no other table (the write took
        # them out of ``queued``): their slots are given back by one subtraction.
        settled_entries = cast(
            "list[Entry]", found if all(found) else [e for e in found if e is not None]
        )
        settled = len(settled_entries)
        for entry in settled_entries:
            entry.parts = _SETTLED  # a kept receipt does not keep the message alive
            if entry.watched is None:
                entry.outcome = delivered  # nobody follows it: resolve() without the call
            else:
                entry.resolve(delivered)
        if settled:
            before = self.unsettled
            self.unsettled = before - settled
            self.delivered += settled
            self._slots_freed(before)
        return found

    def _clear_batch(self, pipe: Pipe, anchor: bytes, commands: list[Command]) -> None:
        """Receiver, levels 2-3: a run of CLRs forgets their digests in one call."""
        clr = CLR
        digests: list[bytes] = []
        for command in commands:
            if type(command) is CommandRun:  # CLRs as wire bytes (command_runs)
                digests.extend(runs.digests(command))
                continue
            data = command.data
            if command.name == clr and len(data) >= 1 + DIGEST_SIZE:
                digests.append(data[1 : 1 + DIGEST_SIZE])
            else:
                if digests:
                    self.dedup.remove_all(anchor, digests)
                    digests = []
                self.on_command(pipe, command.name, data)
        if digests:
            self.dedup.remove_all(anchor, digests)
            if self.on_clear is not None:
                self.on_clear()  # a graceful stop waiting for its COMPs to be confirmed

    def on_command(self, pipe: Pipe, name: bytes, data: bytes) -> None:
        state: PeerState | None = pipe.extension_state
        if state is None:
            return
        if name == commands.CLR:
            ref = commands.parse_digest(data)
            if ref is not None and state.anchor is not None:
                self.dedup.remove(state.anchor, ref.digest)
                if self.on_clear is not None:
                    self.on_clear()
            return
        if name == self.settling:  # the hot path: ACK at levels 1-2, COMP at 3
            if len(data) < 1 + DIGEST_SIZE:
                return  # too short for a digest: ignored (lenient, docs/qos-protocol.md §4)
            entry = self.tracker.settle(key_of(data[1 : 1 + DIGEST_SIZE]), state.key)
            if entry is None:
                return  # unknown digest (or the other level's command): ignored
            if self.level >= 2:
                self._send_frames(pipe, [CLR_PREFIX + data[: 1 + DIGEST_SIZE]])
            self._settled(entry)
            entry.parts = _SETTLED
            entry.resolve(state.delivered)
            self.delivered += 1
        elif name == commands.NACK and self.level == 3:
            nack = commands.parse_nack(data)
            if nack is None:
                return
            entry = self.tracker.settle(key_of(nack.ref.digest), state.anchor)
            if entry is None:
                return
            error = NackError(nack.code, nack.text)
            if not is_retryable(nack.code):
                self._settled(entry)
                self.dead_letter(
                    entry, "terminal_nack", describe(state.anchor), error, pipe.endpoint
                )
            elif entry.retries >= self.config.max_retries or self.schedule is None:
                self._settled(entry)
                self.dead_letter(
                    entry, "retry_exhausted", describe(state.anchor), error, pipe.endpoint
                )
            else:
                delay = backoff_delay(
                    entry.retries, self.config.backoff_base, self.config.backoff_max
                )
                entry.retries += 1
                self.retrying += 1
                self.retry_entries.add(entry)
                self._event(
                    QoSRetried(
                        pipe.endpoint, describe(state.anchor), nack.code, entry.retries, delay
                    )
                )
                self.schedule(delay, lambda: self._retry(entry))

    def _retry(self, entry: Entry) -> None:
        """Re-send the same bytes to the same anchor, or hold them until it reconnects."""
        self.retrying -= 1
        self.retry_entries.discard(entry)
        if entry.done:
            return
        assert isinstance(entry.key, bytes)
        anchor = self.anchors.setdefault(entry.key, AnchorState())
        if anchor.pipe is not None and anchor.pipe.connected:
            anchor.pipe.send_first(self._queue([entry]))
        else:
            anchor.held.append(entry)

    def sweep(self) -> int:
        """Dead-letter (``peer_timeout``) the messages of peers disconnected for
        ``dead_letter_timeout`` (levels 2-3), and, at every level, those that no peer has
        taken for that long (:meth:`_expire_unplaced`); the socket calls this every
        ``dead_letter_timeout / 4`` (or ``dedup_ttl / 2`` if shorter)."""
        now = self.clock()
        horizon = self.config.dead_letter_timeout
        count = self._expire_unplaced(now, horizon)
        for key, anchor in list(self.anchors.items()):
            if anchor.disconnected_at is None or now - anchor.disconnected_at < horizon:
                continue
            expired = self.tracker.take(key) + list(anchor.held)
            anchor.held.clear()
            for entry in expired:
                self._settled(entry)
                self.dead_letter(entry, "peer_timeout", describe(key), endpoint=anchor.endpoint)
            count += len(expired)
        if self.level >= 2:
            self.dedup.sweep(now)
        return count

    def _expire_unplaced(self, now: float, horizon: float) -> int:
        """Dead-letter what has had no peer to go to for ``horizon`` seconds.

        Two places hold such messages: the outbox of a ``connect()`` pipe whose connection is
        not up (never was, or dropped and the message was sent since), and, at level 1, the
        messages failed over while nobody was connected. Without this their receipts would
        never resolve. A queued message's wait is counted from the first sweep that finds it
        (so it expires between ``dead_letter_timeout`` and that plus one sweep period after
        its send, as the disconnected-anchor sweep does); the dead letter names no peer.
        """
        expired: list[tuple[Entry, str | None]] = []  # and the pipe's endpoint, if queued on one
        if self.orphans:
            kept: deque[Entry] = deque()
            for entry in self.orphans:
                since = entry.waiting_since
                if since is not None and now - since >= horizon:
                    expired.append((entry, None))
                else:
                    kept.append(entry)
            self.orphans = kept
        if self.pipes is not None and self.socket_type in SENDING_TYPES:
            for pipe in list(self.pipes()):
                if pipe.connected:
                    continue
                outbox = pipe.outbox
                for message in list(outbox.items):
                    queued = self.queued.get(id(message))
                    if queued is None:
                        continue
                    if queued.waiting_since is None:
                        queued.waiting_since = now
                    elif now - queued.waiting_since >= horizon and outbox.items[0] is message:
                        outbox.get()  # oldest first: the expired ones are at the front
                        del self.queued[id(message)]
                        expired.append((queued, pipe.endpoint))
        for entry, endpoint in expired:
            if entry.done:
                continue
            self._settled(entry)
            self.dead_letter(entry, "peer_timeout", "", endpoint=endpoint)
        return len(expired)

    async def linger(self) -> None:
        """``close()`` waits here, within the socket's linger, for pending ACK/COMP (§5.3).

        At the linger deadline (this wait cancelled) what is left is dead-lettered here, so
        its monitor events still go out before the socket's ``MonitorStopped``.
        """
        self.flush_verdicts()  # a level-3 receiver's queued COMPs, then zmtp writes them
        if self.on_linger is not None:
            self.on_linger()
        try:
            while self.in_flight:
                self._drained = anyio.Event()
                await self._drained.wait()
        finally:
            if self.in_flight:
                self.close_out()

    @staticmethod
    def _peer_name(pipe: Pipe, state: PeerState) -> str:
        """The anchor if there is one, else the peer's transport address."""
        if state.anchor is not None:
            return describe(state.anchor)
        return pipe.peer.address if pipe.peer is not None else pipe.endpoint

    def _placed_on(self, entry: Entry) -> str:
        """The endpoint of the connection ``entry`` was last written to (its tracker key: the
        pipe at level 1, the anchor's last connection at levels 2-3); "" if never written."""
        key = _key_of(entry)
        if isinstance(key, Pipe):
            return key.endpoint
        if isinstance(key, bytes):
            anchor = self.anchors.get(key)
            return anchor.endpoint if anchor is not None else ""
        return ""

    def _event(self, event: MonitorEvent) -> None:
        if self.emit is not None:
            self.emit(event)

    def close_out(self) -> None:
        """After close: what is still pending is dead-lettered ``socket_closed`` (levels
        2-3) or reported ``dropped_at_close`` (level 1).

        The letter names the peer the message was last written to (its anchor, or at
        level 1 with no anchor its address), as a ``peer_timeout`` does, and ``""`` for a
        message on no connection: never written, or (level 1) failed over with nobody to
        take it. Afterwards the pipes' teardown finds nothing to move: what is still in
        their queues was just dead-lettered (it made new entries, and a second dead letter
        for each message, before)."""
        self.closed_out = True
        reason = "socket_closed" if self.level >= 2 else "dropped_at_close"
        # With the endpoint each was placed on where the entry does not tell (held ones),
        # and the peer where its key does not tell (on no connection: none).
        leftovers: list[tuple[Entry, str | None, str | None]] = [
            (e, None, None) for e in self.tracker
        ]
        leftovers.extend((e, None, "") for e in self.orphans)
        for anchor in self.anchors.values():
            leftovers.extend((e, anchor.endpoint, None) for e in anchor.held)
            anchor.held.clear()
        for key in self.tracker.peer_keys():
            self.tracker.take(key)
        self.orphans.clear()
        leftovers.extend((e, None, None) for e in self.retry_entries)
        self.retry_entries.clear()
        leftovers.extend((e, None, None) for e in self.queued.values())
        self.queued.clear()
        self.unsettled = 0  # every one is dead-lettered below (or already was)
        seen: set[int] = set()
        for entry, endpoint, peer in leftovers:
            if id(entry) in seen or entry.done:
                continue
            seen.add(id(entry))
            if peer is None:
                peer = self._last_peer(entry)
            self.dead_letter(entry, reason, peer, endpoint=endpoint)

    def _last_peer(self, entry: Entry) -> str:
        """The printable name of the peer ``entry`` was last written to (its tracker key:
        the pipe at level 1, the anchor at levels 2-3); "" if it was never written."""
        key = _key_of(entry)
        if isinstance(key, bytes):
            return describe(key)
        if isinstance(key, Pipe):
            state: PeerState | None = key.extension_state
            return state.delivered.peer if state is not None else ""
        return ""

    def _settled(self, entry: Entry) -> None:
        """``entry`` (taken out of whichever table held it, not ``queued``) is settled: its
        slot is given back. Called once per entry (each path takes it out of its table
        first, or checks :attr:`~zmtp_qos.Receipt.done`)."""
        before = self.unsettled
        self.unsettled = before - 1
        self._slots_freed(before)

    def _slots_freed(self, before: int) -> None:
        """Entries were settled (``before`` were un-settled): wake the senders if the window
        was full (one may be waiting for a slot), and a lingering close once none is left."""
        left = self.unsettled
        if before >= self.send_hwm > left:
            self.wake_senders()
        if not left and self._drained is not None:
            drained, self._drained = self._drained, None
            drained.set()

    def dead_letter(
        self,
        entry: Entry,
        reason: str,
        peer: str,
        error: NackError | None = None,
        endpoint: str | None = None,
    ) -> None:
        """Resolve ``entry``'s receipt to a dead letter and report it (``QoSDeadLettered``
        with ``endpoint``, or when None the endpoint of the connection the entry was last
        written to, :meth:`_placed_on`)."""
        letter = DeadLetter(entry.message(), reason, peer, error)
        self.dead_lettered += 1
        if endpoint is None:
            endpoint = self._placed_on(entry)
        self._event(QoSDeadLettered(endpoint, peer, reason))
        if entry.resolve(letter):
            self.on_dead_letter(letter, entry)

    # ------------------------------------------------------------------ receiving

    def on_receive(self, pipe: Pipe, message: Message) -> bool:
        return bool(self.on_receive_batch(pipe, [message]))  # inproc and udp: one at a time

    #: A receiver takes its tcp/ipc reads bare (:meth:`on_received_batch`): a one-part
    #: message is digested as its ``bytes`` and queued so, as on a plain PULL.
    bare_single_part = True

    def on_receive_batch(self, pipe: Pipe, messages: list[Message]) -> list[Message]:
        """A read's messages as lists (inproc and udp through :meth:`on_receive`): see
        :meth:`on_received_batch`, which tcp/ipc reads go to."""
        state: PeerState | None = pipe.extension_state
        if state is None or not self.receiving:
            return messages
        if self.socket_type == "GATHER" and any(len(m) != 1 for m in messages):
            # GATHER discards multipart: never acknowledge what it drops.
            messages = [m for m in messages if len(m) == 1]
        received = cast(list[Received], messages)  # a list of lists is a list of Received
        return cast(list[Message], self._receive(pipe, state, received, state.digests(messages)))

    def on_received_batch(self, pipe: Pipe, messages: list[Received]) -> list[Received]:
        """A tcp/ipc read's messages, one-part ones as bare ``bytes``: digest each and answer
        them in one batch of frames (ACK at levels 1-2, after the dedup check at 2); level 3
        hands each to the application. What is delivered stays bare in the inbox, as on a
        plain PULL (the receive API turns it back), so no list is made per message."""
        state: PeerState | None = pipe.extension_state
        if state is None or not self.receiving:
            return messages
        if self.socket_type == "GATHER" and not all(type(m) is bytes for m in messages):
            # GATHER discards multipart: never acknowledge what it drops.
            messages = [m for m in messages if type(m) is bytes or len(m) == 1]
        return self._receive(pipe, state, messages, state.received_digests(messages))

    def _receive(
        self, pipe: Pipe, state: PeerState, messages: list[Received], digests: list[bytes]
    ) -> list[Received]:
        """The receive of one batch with its ``digests``, whichever form its messages take."""
        level = self.level
        if level == 1:
            self._send_frames(pipe, _ack_frames(pipe, state.ack_prefix, digests))
            return messages
        if level == 2:
            # One batch digest call, one join for the ACKs (a duplicate is answered too, not
            # delivered) and one dedup call for the read (DedupStore.admit_all).
            anchor = state.anchor
            assert anchor is not None
            self._send_frames(pipe, _ack_frames(pipe, state.ack_prefix, digests))
            duplicates = self.dedup.admit_all(anchor, digests, self.clock())
            if not duplicates:
                return messages
            dropped = set(duplicates)
            return [m for i, m in enumerate(messages) if i not in dropped]
        return self._receive_level3(pipe, state, messages, digests)

    def _receive_level3(
        self, pipe: Pipe, state: PeerState, messages: list[Received], digests: list[bytes]
    ) -> list[Received]:
        """A read's level-3 messages in one loop: a digest already confirmed is answered COMP
        at once, a copy of one awaiting its verdict joins it (answered by that verdict), and
        the new ones go to the application in one :attr:`deliver_handles` call; those it
        has no room for are answered NACK 0x84 (retryable). Nothing goes to the inbox."""
        anchor = state.anchor
        assert anchor is not None
        known = self.dedup.known(anchor)
        table = self.processing.get(anchor)
        if table is None:
            table = self.processing[anchor] = {}
        new = dict.fromkeys(digests, pipe)
        if len(new) == len(digests) and known.isdisjoint(new) and table.keys().isdisjoint(new):
            # The usual read: all new, none a copy of another (tested and recorded in C).
            table.update(new)
            fresh = messages
            confirmed: list[bytes] | None = None
        else:
            fresh, digests, confirmed = self._sort_copies(pipe, anchor, messages, digests)
        if confirmed is not None:
            self.flush_verdicts()  # verdicts in the order given, per connection
            prefix = state.comp_prefix
            self._send_frames(pipe, [prefix + digest for digest in confirmed])
        if digests:
            assert self.deliver_handles is not None
            queue = state.verdicts
            if queue is None:
                queue = state.verdicts = VerdictQueue(pipe, self)
            taken = self.deliver_handles(queue, fresh, digests)
            if taken < len(digests):
                self.flush_verdicts()  # after the COMPs given before (the table keeps these)
                text = b"receiver queue full"
                for digest in digests[taken:]:
                    self._answer_nack(anchor, pipe, digest, 0x84, text)
        return []

    def _sort_copies(
        self, pipe: Pipe, anchor: bytes, messages: list[Received], digests: list[bytes]
    ) -> tuple[list[Received], list[bytes], list[bytes] | None]:
        """A read with known digests in it, one by one: those already confirmed (to answer
        COMP), copies of a message awaiting its verdict (recorded in :attr:`copies`), and
        the new messages with their digests (recorded as awaiting their verdict)."""
        known = self.dedup.known(anchor)
        table = self.processing[anchor]
        fresh: list[Received] = []
        fresh_digests: list[bytes] = []
        confirmed: list[bytes] | None = None  # duplicates of what was completed
        for message, digest in zip(messages, digests, strict=True):
            if digest in known:
                if confirmed is None:
                    confirmed = []
                confirmed.append(digest)
            elif digest in table:
                self.copies.setdefault((anchor, digest), []).append(pipe)
            else:
                table[digest] = pipe  # a byte-identical message later in this read is a copy
                fresh.append(message)
                fresh_digests.append(digest)
        return fresh, fresh_digests, confirmed

    def complete(self, pipe: Pipe, digest: bytes) -> None:
        """Level 3: the application completed the message ``digest`` from ``pipe``: its COMP
        (and those of its copies) is queued on the connection's verdict queue, written with
        the others of its connection by :meth:`flush_verdicts` (one frame batch per
        connection instead of one per message). A handle's ``complete()`` appends to the
        queue itself (``zmtp_qos.socket._PipeHandle.complete``, kept in step with this)."""
        state: PeerState | None = pipe.extension_state
        if state is None:
            return  # its connection is gone: a flush would write nothing for it either
        queue = state.verdicts
        if queue is None:
            queue = state.verdicts = VerdictQueue(pipe, self)
        queue.append(digest)
        if len(queue) in WAKE_OR_FLUSH:
            self.comps_waiting(queue)

    def comps_waiting(self, queue: VerdictQueue) -> None:
        """A verdict made ``queue`` one long (its first since it was last written: the queue
        joins :attr:`comps`, the socket's flusher is woken) or
        ``FLUSH_AT`` (:mod:`zmtp_qos.verdicts`) long (written at once: a bound on what a
        verdict loop that never yields holds back). Without a flusher: written at once."""
        if len(queue) == 1:
            self.comps.append(queue)
            wake = self.wake_flusher
            if wake is not None:
                wake()  # a no-op when another queue woke it since its last flush
                return
        self.flush_verdicts()

    def flush_verdicts(self) -> None:
        """Write every queued COMP (:meth:`complete`): per connection one frame batch, and the
        digests remembered for de-duplication in one call per anchor. Synchronous, so a
        cancellation never leaves half a batch; called by the socket's flusher, and before
        anything that must see every verdict given so far (a NACK, a duplicate's answer,
        ``stats``, ``unconfirmed``, ``wait_written``, linger and close). Each queue is
        emptied before its COMPs go, so a verdict given meanwhile (over inproc the peer's
        answer comes back inside the send) queues it again for the next flush."""
        queues = self.comps
        if not queues:
            return
        self.comps = []
        now = self.clock()
        for queue in queues:
            digests = queue[:]
            queue.clear()
            pipe = queue.pipe
            state: PeerState | None = pipe.extension_state
            if state is None or not digests:
                continue
            anchor = state.anchor
            if anchor is not None:
                # Remembered before the COMPs go: over inproc the sender's CLR for one comes
                # back inside the send, and must find the digest to forget.
                table = self.processing.get(anchor)
                if table is not None:
                    if len(table) == len(digests) and table.keys() == set(digests):
                        del self.processing[anchor]  # the usual flush: nothing else awaits
                    else:
                        deque(map(table.pop, digests, repeat(None)), 0)  # the loop in C
                        if not table:
                            del self.processing[anchor]
                self.dedup.add_all(anchor, digests, now)
            self._send_frames(pipe, _ack_frames(pipe, state.comp_prefix, digests))
            if anchor is not None and self.copies:
                self._answer_copies(anchor, digests)

    def _answer_copies(self, anchor: bytes, digests: list[bytes]) -> None:
        """COMP on the connection of every other copy of the ``digests`` just completed."""
        copies = self.copies
        for digest in digests:
            for target in copies.pop((anchor, digest), ()):
                target_state: PeerState | None = target.extension_state
                if target_state is not None:
                    self._send_frames(target, [target_state.comp_prefix + digest])

    def verdict(self, pipe: Pipe, digest: bytes, code: int | None, text: bytes) -> None:
        """Level 3: the application's verdict on a delivered message (None = success,
        :meth:`complete`). A NACK goes out at once, after every COMP queued before it: the
        verdicts leave each connection in the order they were given."""
        if code is None:
            self.complete(pipe, digest)
            return
        state: PeerState | None = pipe.extension_state
        if state is None:
            return
        self.flush_verdicts()
        if state.anchor is None:
            self._send_nack(pipe, digest, code, text)
            return
        self._answer_nack(state.anchor, pipe, digest, code, text)

    def _answer_nack(
        self, anchor: bytes, pipe: Pipe, digest: bytes, code: int, text: bytes
    ) -> None:
        """NACK the message ``digest`` awaiting its verdict, on every copy's connection."""
        table = self.processing.get(anchor)
        if table is not None:
            table.pop(digest, None)
            if not table:
                del self.processing[anchor]
        self._send_nack(pipe, digest, code, text)
        for target in self.copies.pop((anchor, digest), ()):
            self._send_nack(target, digest, code, text)

    def _send_nack(self, pipe: Pipe, digest: bytes, code: int, text: bytes) -> None:
        state: PeerState | None = pipe.extension_state
        if state is not None:
            data = commands.nack_data(state.algorithm, digest, code, text)
            self._send_command(pipe, commands.NACK, data)

    @staticmethod
    def _send_command(pipe: Pipe, name: bytes, data: bytes) -> None:
        # A gone peer is fine: it re-sends what it did not hear about.
        with contextlib.suppress(PipeClosed):
            pipe.send_command(name, data)

    @staticmethod
    def _send_frames(pipe: Pipe, frames: list[bytes]) -> None:
        """Encoded command frames (a prefix plus a digest each), in one call per batch."""
        if frames:
            try:  # noqa: SIM105 (contextlib.suppress costs a context manager per read)
                pipe.send_command_frames(frames)
            except PipeClosed:
                pass  # a gone peer is fine: it re-sends what it did not hear about
