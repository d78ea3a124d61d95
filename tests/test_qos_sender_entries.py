"""The QoS sender's entries: one GC-tracked object per message in flight, and the tables that
find an entry (``queued`` for lists zmtp holds unwritten, the tracker once written) kept exact.

Structure and behaviour only, never speed (docs/performance.md, "QoS sender one tracked object
per message"). The replay, fail-over and dead-letter behaviour over real connections is in
tests/test_qos_push_pull.py, test_qos_reconnect.py, test_qos_faults.py and test_qos_no_peer.py.
"""

from __future__ import annotations

import gc

import anyio
import pytest

import zmtp
import zmtp_qos
from tests._qos_runtime import Letters, qos_runtime, stub_pipe
from zmtp.engine.pipe import Pipe
from zmtp_qos.digest import digest_x, key_x
from zmtp_qos.pending import PendingTracker
from zmtp_qos.results import Delivered
from zmtp_qos.runtime import Entry, QoSRuntime


def _runtime(level: int = 1) -> tuple[QoSRuntime, Pipe, Letters]:
    """A PUSH runtime at ``level`` and one pipe past its handshake check (no I/O)."""
    runtime, letters = qos_runtime(level)
    return runtime, stub_pipe(level), letters


def _ack(runtime: QoSRuntime, pipe: Pipe, messages: list[list[bytes]]) -> None:
    runtime.on_command_batch(
        pipe, [zmtp.protocol.frames.Command(runtime.settling, b"x" + digest_x(m)) for m in messages]
    )


def test_a_written_entry_holds_no_gc_tracked_object() -> None:
    """Once written, a message in flight is its entry alone for the collector: the entry
    keeps the bytes (one part) or a tuple of them (several), not zmtp's list."""
    runtime, pipe, _ = _runtime()
    one, two = [b"one"], [b"a", b"b"]
    entries = [runtime.register(one), runtime.register(two)]
    runtime.before_send_batch(pipe, [one, two])
    assert runtime.queued == {} and runtime.in_flight == 2
    e1, e2 = entries
    assert isinstance(e1, Entry) and isinstance(e2, Entry)
    assert e1.parts == b"one" and e2.parts == (b"a", b"b")
    assert not gc.is_tracked(e1.parts)  # bytes: never tracked
    gc.collect()  # a tuple of bytes is untracked by the first collection that sees it
    assert not gc.is_tracked(e2.parts)
    for entry in entries:
        assert gc.is_tracked(entry)
        tracked = [r for r in gc.get_referents(entry) if gc.is_tracked(r)]
        assert sorted(tracked, key=id) == sorted([type(entry), pipe], key=id)  # class, key
    assert e1.message() == [b"one"] and e2.message() == [b"a", b"b"]
    _ack(runtime, pipe, [one, two])
    assert [e.outcome for e in entries] == [Delivered("peer")] * 2
    assert runtime.in_flight == 0
    assert [e1.parts, e2.parts] == [(), ()]  # a kept receipt keeps no message


@pytest.mark.anyio
async def test_the_socket_send_keeps_the_bytes_and_queues_the_list() -> None:
    """``Socket.send`` (its inlined register) files the list zmtp queues under its id and
    counts the slot; nothing of the entry refers to the list."""
    async with zmtp_qos.Socket(zmtp.PUSH, qos=1, linger=0) as push:
        await push.connect("tcp://127.0.0.1:1")  # never up: the message stays queued
        receipt = await push.send(b"hello")
        runtime = push.runtime
        assert isinstance(runtime, QoSRuntime) and isinstance(receipt, Entry)
        assert runtime.in_flight == 1 and list(runtime.queued.values()) == [receipt]
        (message,) = [m for pipe in push.raw.engine.pipes for m in pipe.outbox.items]
        assert runtime.queued == {id(message): receipt} and message == [b"hello"]
        assert receipt.parts == b"hello" and message not in gc.get_referents(receipt)
        text = await push.send("héllo")  # converted as zmtp converts: the entry has the bytes
        assert isinstance(text, Entry) and text.parts == "héllo".encode()


def test_unregister_gives_the_slot_back_once() -> None:
    runtime, _, letters = _runtime()
    message = [b"m"]
    receipt = runtime.register(message)
    runtime.unregister(message)
    runtime.unregister(message)  # a second call finds nothing
    assert runtime.in_flight == 0 and runtime.queued == {} and not receipt.done
    assert letters == []


def test_a_lost_connection_requeues_new_lists_for_written_and_queued_messages() -> None:
    """Level 1 fail-over: the written messages (their lists long gone) and those still queued
    go to the next peer as new lists, each filed in ``queued``, so their next write finds the
    same entries; nothing is counted twice."""
    runtime, lost, _ = _runtime()
    runtime.live.append(lost)
    written = [[b"w%d" % i] for i in range(3)]
    receipts = [runtime.register(m) for m in written]
    runtime.before_send_batch(lost, written)
    queued = [[b"q%d" % i] for i in range(2)]
    receipts += [runtime.register(m) for m in queued]
    lost.outbox.items.extend(queued)
    other = stub_pipe(1, port=2, name="other")
    other.connected = True
    runtime.live.append(other)
    runtime.pipe_disconnected(lost, "test")
    moved = list(other.outbox.items)
    assert moved == written + queued and runtime.in_flight == 5
    assert all(m is not w for m, w in zip(moved, written + queued, strict=True))
    assert [runtime.queued[id(m)] for m in moved] == receipts
    other.outbox.items.clear()
    runtime.before_send_batch(other, moved)
    assert runtime.queued == {}
    _ack(runtime, other, moved)
    assert [r.outcome for r in receipts] == [Delivered("other")] * 5
    assert runtime.in_flight == 0


def test_a_batch_of_the_whole_queued_table_takes_it_in_one_piece() -> None:
    """``before_send_batch`` empties ``queued`` at once when the batch is every list filed,
    in filing order (the writer of the only peer took its whole outbox); otherwise it pops
    the batch's lists alone. Either way each message is tracked with its own entry."""
    runtime, pipe, _ = _runtime()
    messages = [[b"m%d" % i] for i in range(5)]
    receipts = [runtime.register(m) for m in messages]
    runtime.before_send_batch(pipe, messages)
    assert runtime.queued == {} and runtime.in_flight == 5
    assert runtime.tracker.entries(pipe) == receipts
    _ack(runtime, pipe, messages)
    assert [r.outcome for r in receipts] == [Delivered("peer")] * 5
    assert runtime.in_flight == 0


@pytest.mark.parametrize("after", [1, 16, 17, 40])
def test_a_batch_of_the_first_filed_lists_leaves_the_later_ones_filed(after: int) -> None:
    """The batch is the table's first lists and ``after`` more were filed behind them (a
    send whose cancel check let the writer run first): in one piece up to 16 of them, by
    pops beyond; the later lists stay filed, in order, with their own entries."""
    runtime, pipe, _ = _runtime()
    messages = [[b"m%d" % i] for i in range(4 + after)]
    receipts = [runtime.register(m) for m in messages]
    runtime.before_send_batch(pipe, messages[:4])
    assert runtime.tracker.entries(pipe) == receipts[:4]
    later = zip(messages[4:], receipts[4:], strict=True)
    assert list(runtime.queued.items()) == [(id(m), r) for m, r in later]
    runtime.before_send_batch(pipe, messages[4:])
    assert runtime.queued == {} and runtime.tracker.entries(pipe) == receipts
    _ack(runtime, pipe, messages)
    assert runtime.in_flight == 0 and all(r.outcome == Delivered("peer") for r in receipts)


def test_a_batch_in_another_order_or_of_part_of_the_table_pops_its_own() -> None:
    """A replay put in front of the outbox (a batch in another order than the table's), a
    batch of one peer of two (part of the table), and a batch of the table's size holding a
    list the wrapper never filed: each message still finds its own entry, and what the batch
    did not hold stays filed."""
    runtime, pipe, _ = _runtime()
    a, b, c = [b"a"], [b"b"], [b"c"]
    ra, rb, rc = (runtime.register(m) for m in (a, b, c))
    runtime.before_send_batch(pipe, [b, a])  # another order, and c not in it
    assert runtime.queued == {id(c): rc}
    assert runtime.tracker.entries(pipe) == [rb, ra]  # write order
    foreign = [b"never filed"]
    runtime.before_send_batch(pipe, [foreign])  # the table's size (1), another list
    assert runtime.queued == {id(c): rc} and runtime.in_flight == 4  # an entry made for it
    runtime.before_send_batch(pipe, [c])
    assert runtime.queued == {}
    _ack(runtime, pipe, [a, b, c, foreign])
    assert [r.outcome for r in (ra, rb, rc)] == [Delivered("peer")] * 3
    assert runtime.in_flight == 0


def test_close_out_dead_letters_queued_written_and_retrying_entries_once() -> None:
    runtime, pipe, letters = _runtime(level=3)
    written, queued, retrying = [b"w"], [b"q"], [b"r", b"2"]
    w, q, r = runtime.register(written), runtime.register(queued), runtime.register(retrying)
    runtime.before_send_batch(pipe, [written, retrying])
    assert isinstance(r, Entry)
    assert runtime.tracker.settle(key_x(retrying), b"peer") is r  # as a retryable NACK does
    runtime.retry_entries.add(r)
    runtime.close_out()
    assert {id(receipt) for _, receipt in letters} == {id(w), id(q), id(r)}
    assert sorted(letter.parts for letter, _ in letters) == [[b"q"], [b"r", b"2"], [b"w"]]
    assert runtime.in_flight == 0 and runtime.queued == {} and not runtime.retry_entries


class _E:
    key: object = None
    seq: int = 0


def test_track_all_with_a_digest_twice_in_one_batch_keeps_a_fifo() -> None:
    """The tracker stores a usual batch in C (``isdisjoint`` + ``update``); a digest twice in
    the batch, or one already in flight, takes the per-entry loop: FIFO, write order."""
    tracker: PendingTracker[_E] = PendingTracker()
    a1, b, a2, c = _E(), _E(), _E(), _E()
    tracker.track_all("p", [a1, b, a2], ["A", "B", "A"])
    assert len(tracker) == 3 and tracker.entries("p") == [a1, b, a2]
    assert [e.seq for e in (a1, b, a2)] == [1, 2, 3] and a1.key == "p"
    tracker.track_all("p", [c], ["B"])  # already in flight: joins B's FIFO
    assert tracker.settle_all("p", ["A", "B", "A", "B"]) == [a1, b, a2, c]
    assert len(tracker) == 0
    with pytest.raises(ValueError):
        tracker.track_all("p", [a1], ["A", "B"])


@pytest.mark.anyio
async def test_in_flight_entries_are_the_only_gc_objects_of_their_messages() -> None:
    """End to end over tcp: with messages written and not yet settled (a level-3 PULL that
    gives no verdict), the objects the collector tracks per message are the entries, not
    their lists too."""
    async with zmtp_qos.Socket(zmtp.PULL, qos=3) as pull:
        endpoint = await pull.bind("tcp://127.0.0.1:*")
        async with zmtp_qos.Socket(zmtp.PUSH, qos=3, linger=0, send_hwm=1000) as push:
            events = push.monitor()
            await push.connect(endpoint)
            with anyio.fail_after(10):
                await events.wait_for(zmtp.HandshakeSucceeded)
                receipts = [await push.send(b"gc-%04d" % i) for i in range(200)]
                runtime = push.runtime
                assert isinstance(runtime, QoSRuntime)
                while runtime.queued or pull.pending_handles < 200:  # written, received
                    await anyio.sleep(0.01)
            gc.collect()
            # The bytes each send was given (the receiver's are other objects, decoded from
            # the wire): held by its entry alone, no list of zmtp's refers to them any more.
            for receipt in receipts:
                assert isinstance(receipt, Entry) and gc.is_tracked(receipt) and not receipt.done
                assert not gc.is_tracked(receipt.parts)
            for receipt in receipts[::20]:  # (each get_referrers walks the whole heap)
                assert isinstance(receipt, Entry)
                holders = [o for o in gc.get_referrers(receipt.parts) if gc.is_tracked(o)]
                assert holders == [receipt]
