"""PUB/XPUB shared encoding: a message for several tcp/ipc subscribers is encoded once and the
same object is queued on every pipe (zmtp/routing/xpubsub.py, ``EncodedMessage`` in
zmtp/protocol/frames.py). What must not change: the HWM per subscriber, the order on each
pipe, CURVE boxing per connection, and the single-subscriber path (plain messages, plain
encoder)."""

from __future__ import annotations

from contextlib import AsyncExitStack
from types import SimpleNamespace
from typing import Any

import anyio
import pytest

import zmtp
from zmtp.crypto import curve_keypair
from zmtp.engine.pipe import Pipe
from zmtp.engine.queue import MessageQueue
from zmtp.options import Options
from zmtp.protocol import curve, mechanism, plain
from zmtp.protocol.commands import SUBSCRIBE
from zmtp.protocol.frames import (
    EncodedMessage,
    FrameDecoder,
    encode_message,
    encode_messages,
    encode_shared_messages,
    encoded_message,
)
from zmtp.routing.pubsub import Pub
from zmtp.routing.xpubsub import SHARED_ENCODING_MAX, XPub

from ._sockets_util import (
    TIMEOUT,
    bindable,
    ours_briefly,
    ours_sender,
    probe_until_received,
    recv_within,
)

SERVER_PUBLIC, SERVER_SECRET = curve_keypair()
CLIENT_PUBLIC, CLIENT_SECRET = curve_keypair()


def curve_server_options() -> dict[str, Any]:
    return {"curve_server": True, "curve_secretkey": SERVER_SECRET}


def curve_client_options() -> dict[str, Any]:
    return {"curve_serverkey": SERVER_PUBLIC, "curve_secretkey": CLIENT_SECRET}


# ---------------------------------------------------------------------- the encoders


def test_encoded_message_is_its_parts_with_their_wire_bytes() -> None:
    parts = [b"topic", b"x" * 300]
    shared = encoded_message(parts)
    assert shared == parts and isinstance(shared, list)
    assert shared.wire == encode_message(parts)


def test_shared_encoder_reuses_wire_bytes_and_frames_the_rest() -> None:
    batch: list[list[bytes]] = [
        [b"a"],
        encoded_message([b"b" * 70]),
        [b"c", b"d" * 400],
        encoded_message([b"t", b"e"]),
        [b"f" * 300],
    ]
    wire = encode_shared_messages(batch)
    assert wire == encode_messages([list(m) for m in batch])
    assert FrameDecoder().feed(wire) == [list(m) for m in batch]
    # The wire bytes are taken as they are (proof that nothing is re-framed).
    assert encode_shared_messages([EncodedMessage([b"x"], b"WIRE")]) == b"WIRE"
    assert encode_messages([EncodedMessage([b"x"], b"WIRE")]) == b"\x00\x01x"


def _subclasses(cls: type) -> list[type]:
    out = []
    for sub in cls.__subclasses__():
        out.append(sub)
        out.extend(_subclasses(sub))
    return out


def test_every_mechanism_that_transforms_frames_ignores_shared_wire_bytes() -> None:
    """A mechanism that overrides encode_messages (CURVE boxes every frame) must override
    encode_shared_messages too, or a publisher's clear wire bytes would go out unboxed."""
    assert curve and plain  # every mechanism module is imported
    checked = []
    for cls in _subclasses(mechanism.Mechanism):
        if "encode_messages" in vars(cls):
            assert "encode_shared_messages" in vars(cls), cls
            checked.append(cls.__name__)
    assert checked  # CURVE's base class at least


# ---------------------------------------------------------------------- the strategy


def _host(**options: Any) -> Any:
    """A stand-in RoutingHost; ``deferred`` holds what the strategy asked to ``defer``."""
    deferred: list[Any] = []
    return SimpleNamespace(
        socket_type="PUB",
        options=Options(**options),
        extension=None,
        closing=False,
        wake_receivers=lambda: None,
        defer=deferred.append,
        deferred=deferred,
    )


def _pipe(strategy: XPub, endpoint: str = "tcp://127.0.0.1:5555", hwm: int = 3) -> Pipe:
    pipe = Pipe(endpoint, MessageQueue(hwm), MessageQueue(hwm), persistent=False)
    pipe.attached = True
    strategy.attach(pipe)
    strategy.command(pipe, SUBSCRIBE, b"")
    return pipe


def test_one_subscriber_keeps_the_plain_path() -> None:
    pub = Pub(_host())
    pipe = _pipe(pub)
    assert "try_send" not in vars(pub)  # the class's own try_send, unchanged
    assert pub.try_send([b"m"])
    assert pipe.shared_encoding is False
    assert type(pipe.outbox.items[0]) is list
    other = _pipe(pub)
    assert vars(pub)["try_send"] == pub.try_send_sharing
    pub.detach(other)
    assert "try_send" not in vars(pub) and not pipe.shared_encoding


@pytest.mark.parametrize(
    "options", [{"conflate": True}, {"invert_matching": True}, {"xpub_manual_last_value": True}]
)
def test_options_that_pick_targets_differently_never_share(options: dict[str, Any]) -> None:
    xpub = XPub(_host(**options))
    pipes = [_pipe(xpub), _pipe(xpub)]
    assert not any(p.shared_encoding for p in pipes) and "try_send" not in vars(xpub)


def test_only_matching_subscribers_get_the_shared_message() -> None:
    pub = Pub(_host())
    a, b, c = (_pipe(pub) for _ in range(3))
    pub.command(a, b"CANCEL", b"")
    pub.command(a, SUBSCRIBE, b"x")
    assert pub.try_send([b"y1"])  # b and c only
    assert pub.try_send([b"x1"])  # everyone
    assert [list(m) for m in a.outbox.items] == [[b"x1"]]
    assert [list(m) for m in b.outbox.items] == [[b"y1"], [b"x1"]] == list(c.outbox.items)
    assert a.outbox.items[0] is b.outbox.items[1]
    pub.command(b, b"CANCEL", b"")
    pub.command(c, b"CANCEL", b"")
    assert pub.try_send([b"y2"])  # nobody
    assert pub.try_send([b"x2"])  # a only: the per-pipe path
    assert type(a.outbox.items[-1]) is list and len(b.outbox) == 2


def test_several_subscribers_share_one_encoding_and_keep_hwm_and_order() -> None:
    pub = Pub(_host())
    pipes = [_pipe(pub, hwm=3), _pipe(pub, hwm=5), _pipe(pub, hwm=5)]
    assert all(p.shared_encoding for p in pipes)
    woken: list[int] = []
    for i, p in enumerate(pipes):
        p.outbox.on_data = lambda i=i: woken.append(i)  # type: ignore[misc]
    for n in range(5):
        assert pub.try_send([b"%d" % n])
    assert sorted(woken) == [0, 1, 2]  # once each, on the empty -> non-empty edge
    first, second, third = (list(p.outbox.items) for p in pipes)
    assert first == [[b"0"], [b"1"], [b"2"]]  # full at 3: lost only its own copies
    assert second == third == [[b"0"], [b"1"], [b"2"], [b"3"], [b"4"]]
    for a, b in zip(second, third, strict=True):
        assert a is b and type(a) is EncodedMessage  # one object for every pipe
        assert a.wire == encode_message(a)
    assert first[0] is second[0]


def test_large_messages_are_not_encoded_ahead() -> None:
    pub = Pub(_host())
    pipes = [_pipe(pub), _pipe(pub)]
    assert pub.try_send([b"x" * (SHARED_ENCODING_MAX + 1)])
    assert pub.try_send([b"t", b"x" * SHARED_ENCODING_MAX])
    for p in pipes:
        assert [type(m) for m in p.outbox.items] == [list, list]
    assert pipes[0].outbox.items[0] is pipes[1].outbox.items[0]


def test_nodrop_sends_to_nobody_while_one_is_full() -> None:
    xpub = XPub(_host(xpub_nodrop=True))
    small, big = _pipe(xpub, hwm=1), _pipe(xpub, hwm=5)
    assert xpub.try_send([b"a"])
    assert not xpub.try_send([b"b"])
    assert len(small.outbox) == 1 and len(big.outbox) == 1


def test_inproc_curve_or_detach_turn_sharing_off() -> None:
    pub = Pub(_host())
    a, b = _pipe(pub), _pipe(pub)
    inproc = _pipe(pub, endpoint="inproc://x")
    assert not a.shared_encoding and not b.shared_encoding and not inproc.shared_encoding
    assert pub.try_send([b"m"])
    assert type(a.outbox.items[0]) is list and type(inproc.outbox.items[0]) is list
    pub.detach(inproc)
    assert a.shared_encoding and b.shared_encoding
    pub.detach(b)
    assert not a.shared_encoding and not b.shared_encoding

    curve_pub = Pub(_host(**curve_server_options()))
    c, d = _pipe(curve_pub), _pipe(curve_pub)
    assert curve_pub.try_send([b"m"])
    assert not c.shared_encoding and type(d.outbox.items[0]) is list


# ---------------------------------------------------------------------- end to end


async def _subscribed(pub: zmtp.Socket, subs: list[zmtp.Socket], endpoint: str) -> None:
    for sub in subs:
        sub.subscribe(b"")
        await sub.connect(endpoint)
        await probe_until_received(ours_sender(pub), ours_briefly(sub), b"probe")


async def _drain_probes(sub: zmtp.Socket) -> list[bytes]:
    """The next data message, skipping any probes still queued."""
    while True:
        got = await recv_within(sub)
        if not got[0].startswith(b"probe"):
            return got


@pytest.mark.anyio
@pytest.mark.parametrize("transport", ["tcp", "ipc"])
async def test_every_subscriber_gets_every_message_in_order(transport: str) -> None:
    async with zmtp.Socket(zmtp.PUB, linger=0, send_hwm=0) as pub:
        endpoint = await pub.bind(bindable(transport))
        async with AsyncExitStack() as stack:
            subs = [
                await stack.enter_async_context(zmtp.Socket(zmtp.SUB, linger=0, recv_hwm=0))
                for _ in range(3)
            ]
            await _subscribed(pub, subs, endpoint)
            pipes = pub.engine.pipes
            assert len(pipes) == 3 and all(p.shared_encoding for p in pipes)
            # Through the public send: the message queued on every pipe is one shared
            # encoding. (send yields to the writers only once per 256 calls, so at least one
            # of two sends is still queued right after it returns.)
            seen = []
            for n in range(2):
                await pub.send_multipart([b"m-first-%d" % n])
                queued = [p.outbox.items[-1] for p in pipes if p.outbox.items]
                seen.append(len(queued) == 3 and all(type(m) is EncodedMessage for m in queued))
            assert any(seen)
            sent = [[b"m-first-0"], [b"m-first-1"]]
            sent += [[b"m%d" % n, b"y" * (n % 300)] for n in range(500)]
            sent += [[b"single-%d" % n] for n in range(500)]
            for parts in sent[2:]:  # the first two went out above
                await pub.send_multipart(parts)
            with anyio.fail_after(TIMEOUT):
                for sub in subs:
                    got = [await _drain_probes(sub)]
                    got += [await recv_within(sub) for _ in range(len(sent) - 1)]
                    assert got == sent, got[:5]


@pytest.mark.anyio
async def test_a_slow_subscriber_loses_only_its_own_small_messages() -> None:
    async with zmtp.Socket(zmtp.PUB, linger=0, send_hwm=100) as pub:
        endpoint = await pub.bind("tcp://127.0.0.1:*")
        async with (
            zmtp.Socket(zmtp.SUB, linger=0, recv_hwm=5, read_size=4096) as slow,
            zmtp.Socket(zmtp.SUB, linger=0) as fast,
        ):
            await _subscribed(pub, [slow, fast], endpoint)
            assert all(p.shared_encoding for p in pub.engine.pipes)
            body = b"x" * 4000  # shared (below SHARED_ENCODING_MAX)
            total = 8000  # 32 MB: far beyond the slow peer's socket buffers
            received: list[int] = []
            done = anyio.Event()

            async def reader() -> None:
                while True:
                    parts = await fast.recv_multipart()
                    if parts[0] == b"last":
                        done.set()
                        return
                    if parts[0].startswith(b"probe"):
                        continue
                    received.append(int(parts[0]))

            async with anyio.create_task_group() as tg:
                tg.start_soon(reader)
                with anyio.fail_after(4 * TIMEOUT):
                    for n in range(total):
                        await pub.send_multipart([b"%d" % n, body])
                    while not done.is_set():
                        await pub.send(b"last")
                        with anyio.move_on_after(0.01):
                            await done.wait()
            assert received == sorted(received)  # in order, whatever was dropped
            slow_seen: list[int] = []
            with anyio.move_on_after(0.3):
                while True:
                    parts = await slow.recv_multipart()
                    if parts[0].isdigit():
                        slow_seen.append(int(parts[0]))
            assert slow_seen == sorted(slow_seen)
            assert len(slow_seen) < total  # it dropped at its HWM...
            assert len(received) > len(slow_seen)  # ...while the fast one kept going


@pytest.mark.anyio
async def test_curve_subscribers_each_get_their_own_boxes() -> None:
    async with zmtp.Socket(zmtp.PUB, linger=0, **curve_server_options()) as pub:
        endpoint = await pub.bind("tcp://127.0.0.1:*")
        async with AsyncExitStack() as stack:
            subs = [
                await stack.enter_async_context(
                    zmtp.Socket(zmtp.SUB, linger=0, **curve_client_options())
                )
                for _ in range(2)
            ]
            await _subscribed(pub, subs, endpoint)
            assert not any(p.shared_encoding for p in pub.engine.pipes)
            for n in range(50):
                await pub.send_multipart([b"c%d" % n, b"z" * n])
            for sub in subs:
                got = [await _drain_probes(sub)]
                got += [await recv_within(sub) for _ in range(49)]
                assert got == [[b"c%d" % n, b"z" * n] for n in range(50)]


@pytest.mark.anyio
async def test_inproc_and_tcp_subscribers_together() -> None:
    name = f"inproc://shared-{id(object())}"
    async with zmtp.Socket(zmtp.PUB, linger=0) as pub:
        tcp = await pub.bind("tcp://127.0.0.1:*")
        await pub.bind(name)
        async with (
            zmtp.Socket(zmtp.SUB, linger=0) as a,
            zmtp.Socket(zmtp.SUB, linger=0) as b,
            zmtp.Socket(zmtp.SUB, linger=0) as c,
        ):
            await _subscribed(pub, [a, b], tcp)
            await _subscribed(pub, [c], name)
            for n in range(20):
                await pub.send(b"i%d" % n)
            for sub in (a, b, c):
                got = [await _drain_probes(sub)]
                got += [await recv_within(sub) for _ in range(19)]
                assert got == [[b"i%d" % n] for n in range(20)]
                assert all(type(m) is list for m in got)
