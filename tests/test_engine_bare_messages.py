"""Bare one-part messages on the receive path, and the decoder's split of equal-frame runs.

PULL and SUB (``RoutingStrategy.bare_single_part``) queue a one-part message read from a
tcp/ipc connection as its bare ``bytes`` (``zmtp.engine.queue.Received``) instead of a
one-element list; the decoder splits runs of equal one-part frames in C
(``frames._split_run``). Neither may change anything an application or an extension sees:
every receive call returns what it returned before, order is kept across bare and multipart
messages of one connection, the inbox counts one item per message (HWM), and extension hooks
still get lists.
"""

from __future__ import annotations

from typing import Any

import anyio
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import zmtp
from tests import test_engine_helpers as helpers
from tests.test_engine_helpers import TIMEOUT, linked
from zmtp.engine.pipe import Pipe
from zmtp.engine.queue import Message, MessageQueue, Received, as_parts
from zmtp.protocol.errors import MessageTooLarge, ProtocolError
from zmtp.protocol.frames import (
    _RUN_MAX,
    Command,
    FrameDecoder,
    Item,
    encode_command,
    encode_message,
)

# --------------------------------------------------------------------------- decoder


def bare(batch: list[Item]) -> list[Item]:
    """What a ``bare_single_part`` decoder gives for ``batch`` (lists of parts, commands)."""
    return [m[0] if isinstance(m, list) and len(m) == 1 else m for m in batch]


def general(wire: bytes, max_size: int = -1) -> list[Item]:
    """The decoder's general path alone (an identity transform turns the fast paths and
    the run split off): the reference every fast path must agree with."""
    decoder = FrameDecoder(max_size)
    decoder.transform = lambda flags, body: (flags, body)
    return decoder.feed(wire)


def feed_at_cuts(decoder: FrameDecoder, wire: bytes, cuts: list[int]) -> list[Item]:
    out: list[Item] = []
    last = 0
    for cut in [*sorted(cuts), len(wire)]:
        out.extend(decoder.feed(wire[last:cut]))
        last = cut
    assert decoder.error is None
    return out


def decoder(bare_single_part: bool, fast_commands: bool = False) -> FrameDecoder:
    d = FrameDecoder()
    d.bare_single_part = bare_single_part
    d.fast_commands = fast_commands
    return d


def encode(batch: list[Item]) -> bytes:
    return b"".join(
        encode_command(i.name, i.data) if isinstance(i, Command) else encode_message(i)  # type: ignore[arg-type]
        for i in batch
    )


#: Few sizes, so that runs of equal frames are common; short and long (1 KiB) frames.
run_parts = st.sampled_from([b"", b"x" * 3, b"y" * 64, b"z" * 255, b"w" * 256, b"v" * 1024])
run_messages = st.one_of(
    st.lists(run_parts, min_size=1, max_size=1),
    st.lists(run_parts, min_size=1, max_size=1),
    st.lists(run_parts, min_size=2, max_size=3),
)
runs = st.lists(
    st.tuples(
        st.one_of(run_messages, st.builds(Command, st.just(b"X-A"), st.binary(max_size=4))),
        st.integers(1, 40),
    ),
    max_size=6,
)
HYPOTHESIS = settings(deadline=None, max_examples=120, suppress_health_check=[HealthCheck.too_slow])


def expand(spec: list[tuple[Item, int]]) -> list[Item]:
    return [item for item, count in spec for _ in range(count)]


@HYPOTHESIS
@given(runs, st.booleans(), st.booleans(), st.data())
def test_run_split_agrees_with_the_general_decoder(
    spec: list[tuple[Item, int]], is_bare: bool, fast_commands: bool, data: st.DataObject
) -> None:
    batch = expand(spec)
    wire = encode(batch)
    assert general(wire) == batch  # the reference itself
    expected = bare(batch) if is_bare else batch
    assert decoder(is_bare, fast_commands).feed(wire) == expected
    cuts = data.draw(st.lists(st.integers(0, len(wire)), max_size=8))
    assert feed_at_cuts(decoder(is_bare, fast_commands), wire, cuts) == expected


@pytest.mark.parametrize("size", [0, 1, 64, 255, 256, 1024])
@pytest.mark.parametrize("count", [3, 4, 5, _RUN_MAX - 1, _RUN_MAX, _RUN_MAX + 5, 3 * _RUN_MAX])
def test_long_runs_and_run_edges(size: int, count: int) -> None:
    batch: list[Item] = [[bytes([i % 251]) * size] for i in range(count)]
    wire = encode(batch)
    assert decoder(False).feed(wire) == batch
    got = decoder(True).feed(wire)
    assert got == bare(batch)
    assert all(type(m) is bytes for m in got)
    # A run cut by an incomplete last frame: the complete ones out, the rest next feed.
    d = decoder(True)
    first = d.feed(wire[:-1])
    assert first == bare(batch)[:-1]
    assert d.feed(wire[-1:]) == bare(batch)[-1:]


@pytest.mark.parametrize("is_bare", [False, True])
def test_a_run_ends_where_a_header_differs(is_bare: bool) -> None:
    """Every header byte ends a run: the flags (MORE, COMMAND, LONG) and each size byte."""
    ones: list[Item] = [[b"a" * 64]] * 10
    for other in (
        [[b"a" * 63]],
        [[b"a" * 65]],
        [[b"a" * 64, b"b"]],
        [Command(b"X-A", b"")],
        [[b"a" * 1024]],
        [[b"a" * 1025]],
        [[b"a" * (1024 + 256)]],
    ):
        batch = ones + other + ones + [[b"a" * 1024]] * 9 + other + [[b"a" * 1024]] * 5
        expected = bare(batch) if is_bare else batch
        assert decoder(is_bare).feed(encode(batch)) == expected
        assert decoder(is_bare, fast_commands=True).feed(encode(batch)) == expected


def test_bad_frame_after_a_run_keeps_the_run() -> None:
    batch: list[Item] = [[b"q" * 10]] * 20
    d = decoder(True)
    assert d.feed(encode(batch) + bytes((0x08, 0))) == bare(batch)
    assert isinstance(d.error, ProtocolError)


def test_max_message_size_is_checked_on_a_long_run() -> None:
    batch: list[Item] = [[b"q" * 10]] * 5 + [[b"L" * 300]] * 8
    d = FrameDecoder(max_message_size=299)
    d.bare_single_part = True
    assert d.feed(encode(batch)) == [b"q" * 10] * 5
    assert isinstance(d.error, MessageTooLarge)
    d = FrameDecoder(max_message_size=300)
    d.bare_single_part = True
    assert d.feed(encode(batch)) == bare(batch)


def test_a_large_body_over_several_reads_is_bare_too() -> None:
    body = b"B" * (64 * 1024)
    wire = encode([[body], [b"a", b"b"], [body]])
    d = decoder(True)
    assert feed_at_cuts(d, wire, [1000, 30000, 70000, 100000]) == [body, [b"a", b"b"], body]


def test_as_parts() -> None:
    assert as_parts(b"x") == [b"x"]
    parts = [b"a", b"b"]
    assert as_parts(parts) is parts


def test_put_only_keeps_the_wake_up_edge() -> None:
    queue = MessageQueue(10)
    woken: list[int] = []
    queue.on_data = lambda: woken.append(1)
    queue.put_only(b"a")
    queue.put_only([b"b", b"c"])
    queue.put_only(b"d")
    assert list(queue.items) == [b"d"]
    assert woken == [1]


# --------------------------------------------------------------------------- sockets

STREAMS = ("tcp", "ipc")

#: One connection's traffic: bare-able one-part messages mixed with multipart ones.
TRAFFIC: list[list[bytes]] = [
    [b"one"],
    [b"two", b"parts"],
    *([[b"x" * 64]] * 40),
    [b""],
    [b"a", b"", b"c"],
    *([[b"y" * 1024]] * 20),
    [b"last"],
]


def stream_endpoint(transport: str, tmp_path: Any) -> str:
    return helpers.endpoint_for(transport, tmp_path)


def queued(sock: zmtp.Socket) -> list[Received]:
    """Everything in the socket's inboxes (white box: checks what the engine queued)."""
    items: list[Received] = []
    for pipe in sock.engine.pipes:
        items.extend(pipe.inbox.items)
    return items


async def wait_queued(sock: zmtp.Socket, n: int) -> list[Received]:
    with anyio.fail_after(TIMEOUT):
        while len(queued(sock)) < n:
            await anyio.sleep(0.001)  # polling with a deadline: the reader has no event
    return queued(sock)


#: Receiver, sender: the types that opt in and take multipart messages.
MULTIPART_PAIRS = {
    "pull": (zmtp.PULL, zmtp.PUSH),
    "pair": (zmtp.PAIR, zmtp.PAIR),
    "dealer": (zmtp.DEALER, zmtp.DEALER),
}


@pytest.mark.anyio
@pytest.mark.parametrize("transport", STREAMS)
@pytest.mark.parametrize("types", sorted(MULTIPART_PAIRS))
async def test_one_part_messages_are_queued_bare_and_returned_the_same(
    transport: str, types: str, tmp_path: Any
) -> None:
    receiver, sender = MULTIPART_PAIRS[types]
    async with linked(receiver, sender, stream_endpoint(transport, tmp_path)) as link:
        for message in TRAFFIC:
            await link.connector.send_multipart(message)
        items = await wait_queued(link.binder, len(TRAFFIC))
        assert len(items) == len(TRAFFIC)  # one item per message: HWM counts unchanged
        assert [as_parts(m) for m in items] == TRAFFIC
        assert [type(m) for m in items] == [bytes if len(m) == 1 else list for m in TRAFFIC]
        with anyio.fail_after(TIMEOUT):
            assert await link.binder.recv() == b"one"
            with pytest.raises(zmtp.ZMTPError):
                await link.binder.recv()  # two parts: refused, kept for recv_multipart
            assert await link.binder.recv_multipart() == [b"two", b"parts"]
            assert await link.binder.recv_multipart() == [b"x" * 64]
            assert link.binder.readable()
            assert await link.binder.recv_string(encoding="latin-1") == "x" * 64
            got = [await link.binder.recv_multipart() for _ in range(len(TRAFFIC) - 4)]
        assert got == TRAFFIC[4:]
        assert all(type(m) is list for m in got)


@pytest.mark.anyio
@pytest.mark.parametrize("transport", STREAMS)
async def test_sub_filters_bare_and_multipart_in_order(transport: str, tmp_path: Any) -> None:
    async with linked(zmtp.SUB, zmtp.PUB, stream_endpoint(transport, tmp_path)) as link:
        sub, pub = link.binder, link.connector
        sub.subscribe(b"a")
        sub.subscribe(b"keep")
        with anyio.fail_after(TIMEOUT):
            while True:  # until the subscription reached the publisher
                await pub.send(b"a-probe")
                if sub.readable():
                    break
                await anyio.sleep(0.001)
            await pub.send(b"a-marker")  # every probe comes before it (one connection)
            while await sub.recv() != b"a-marker":
                pass
        traffic = [[b"a1"], [b"b1"], [b"a", b"2"], [b"keep-3"], [b"b", b"4"], *([[b"a" * 64]] * 10)]
        for message in traffic:
            await pub.send_multipart(message)
        wanted = [m for m in traffic if m[0].startswith((b"a", b"keep"))]
        items = await wait_queued(sub, len(wanted))
        assert [as_parts(m) for m in items] == wanted
        sub.unsubscribe(b"keep")  # purges what is queued, bare or not
        wanted = [m for m in wanted if not m[0].startswith(b"keep")]
        assert [as_parts(m) for m in queued(sub)] == wanted
        with anyio.fail_after(TIMEOUT):
            assert [await sub.recv_multipart() for _ in wanted] == wanted


@pytest.mark.anyio
async def test_conflating_pull_keeps_the_newest_bare_or_not(tmp_path: Any) -> None:
    async with linked(
        zmtp.PULL, zmtp.PUSH, stream_endpoint("tcp", tmp_path), binder_options={"conflate": True}
    ) as link:
        for message in TRAFFIC:
            await link.connector.send_multipart(message)
        await link.connector.send_multipart([b"the", b"end"])
        with anyio.fail_after(TIMEOUT):
            while queued(link.binder) != [[b"the", b"end"]]:
                await anyio.sleep(0.001)
        await link.connector.send(b"newest")
        with anyio.fail_after(TIMEOUT):
            while queued(link.binder) != [b"newest"]:
                await anyio.sleep(0.001)
            assert await link.binder.recv_multipart() == [b"newest"]


class Recorder(zmtp.SocketExtension):
    def __init__(self) -> None:
        self.seen: list[Message] = []

    def on_receive_batch(self, pipe: Pipe, messages: list[Message]) -> list[Message]:
        self.seen.extend(messages)
        return messages


@pytest.mark.anyio
async def test_extension_hooks_still_see_lists(tmp_path: Any) -> None:
    recorder = Recorder()
    async with linked(
        zmtp.PULL, zmtp.PUSH, stream_endpoint("tcp", tmp_path), binder_extension=recorder
    ) as link:
        for message in TRAFFIC:
            await link.connector.send_multipart(message)
        items = await wait_queued(link.binder, len(TRAFFIC))
        assert all(type(m) is list for m in items)
        assert recorder.seen == TRAFFIC
        assert all(type(m) is list for m in recorder.seen)
        with anyio.fail_after(TIMEOUT):
            assert [await link.binder.recv_multipart() for _ in TRAFFIC] == TRAFFIC


@pytest.mark.anyio
async def test_the_hwm_still_pauses_the_reader(tmp_path: Any) -> None:
    """recv_hwm counts messages, bare or not: a full inbox stops the reader, and what the
    sender sent beyond it waits on the sender's side until the application reads."""
    hwm = 50
    async with linked(
        zmtp.PULL,
        zmtp.PUSH,
        stream_endpoint("tcp", tmp_path),
        binder_options={"recv_hwm": hwm, "read_size": 4096},
        connector_options={"send_hwm": 100_000},
    ) as link:
        total = 5000
        for i in range(total):
            await link.connector.send(b"%06d" % i)
        items = await wait_queued(link.binder, hwm)
        assert all(type(m) is bytes for m in items)
        # The reader stops at the HWM (plus at most the one read that crossed it).
        for _ in range(20):
            await anyio.sleep(0)
        assert hwm <= len(queued(link.binder)) <= hwm + 4096 // 8
        with anyio.fail_after(TIMEOUT):
            got = [await link.binder.recv() for _ in range(total)]
        assert got == [b"%06d" % i for i in range(total)]


@pytest.mark.anyio
@pytest.mark.parametrize("options", [{}, {"conflate": True}])
async def test_conflating_dealer_and_gather_take_bare_messages(
    options: dict[str, Any], tmp_path: Any
) -> None:
    """DEALER's conflating variant and the single-part GATHER keep what they kept before."""
    if options:
        receiver, sender = zmtp.DEALER, zmtp.DEALER
    else:
        receiver, sender = zmtp.GATHER, zmtp.SCATTER
    async with linked(
        receiver, sender, stream_endpoint("tcp", tmp_path), binder_options=options
    ) as link:
        for i in range(30):
            await link.connector.send(b"%02d" % i)
        if options:
            with anyio.fail_after(TIMEOUT):
                while queued(link.binder) != [b"29"]:
                    await anyio.sleep(0.001)
            expected = [b"29"]
        else:
            assert all(type(m) is bytes for m in await wait_queued(link.binder, 30))
            expected = [b"%02d" % i for i in range(30)]
        with anyio.fail_after(TIMEOUT):
            assert [await link.binder.recv() for _ in expected] == expected
