"""The batch extension points: ``before_send_batch``, ``on_receive_batch`` and
``Pipe.send_command_frames`` (docs/extensions.md), over tcp, ipc and inproc, NULL and CURVE."""

from __future__ import annotations

from typing import Any

import anyio
import pytest

import zmtp
from tests import test_engine_helpers as helpers
from tests.test_engine_helpers import TIMEOUT, linked
from zmtp.crypto import curve_keypair
from zmtp.engine.pipe import Pipe
from zmtp.engine.queue import Message
from zmtp.protocol.connection import Connection
from zmtp.protocol.frames import encode_command

pytestmark = pytest.mark.anyio

endpoint = helpers.endpoint  # fixture
transport = helpers.transport  # fixture
stream_endpoint = helpers.stream_endpoint  # fixture
stream_transport = helpers.stream_transport  # fixture

SERVER_PUBLIC, SERVER_SECRET = curve_keypair()
CLIENT_PUBLIC, CLIENT_SECRET = curve_keypair()


class Answering(zmtp.SocketExtension):
    """Receiver: drops messages starting with b"drop", answers each read with one X-SEEN
    frame per message kept, through send_command_frames."""

    def __init__(self) -> None:
        self.batches: list[int] = []

    def on_receive(self, pipe: Pipe, message: Message) -> bool:  # inproc: one at a time
        return bool(self.on_receive_batch(pipe, [message]))

    def on_receive_batch(self, pipe: Pipe, messages: list[Message]) -> list[Message]:
        self.batches.append(len(messages))
        kept = [m for m in messages if not m[0].startswith(b"drop")]
        pipe.send_command_frames([encode_command(b"X-SEEN", m[0]) for m in kept])
        return kept


class Sending(zmtp.SocketExtension):
    """Sender: records what the writer showed it, and the X-SEEN answers."""

    def __init__(self, expected: int) -> None:
        self.shown: list[bytes] = []
        self.seen: list[bytes] = []
        self.expected = expected
        self.done = anyio.Event()

    def before_send(self, pipe: Pipe, message: Message) -> None:
        self.shown.append(message[0])

    def on_command(self, pipe: Pipe, name: bytes, data: bytes) -> None:
        assert name == b"X-SEEN"
        self.seen.append(data)
        if len(self.seen) == self.expected:
            self.done.set()


@pytest.mark.parametrize("mechanism", ["null", "curve"])
async def test_receive_batch_answers_with_command_frames(endpoint: str, mechanism: str) -> None:
    binder: dict[str, Any] = {}
    connector: dict[str, Any] = {}
    if mechanism == "curve":
        binder = {"curve_server": True, "curve_secretkey": SERVER_SECRET}
        connector = {"curve_serverkey": SERVER_PUBLIC, "curve_secretkey": CLIENT_SECRET}
    messages = [b"drop-%d" % i if i % 3 == 0 else b"keep-%d" % i for i in range(30)]
    kept = [m for m in messages if m.startswith(b"keep")]
    receiver, sender = Answering(), Sending(len(kept))
    async with linked(
        zmtp.PULL,
        zmtp.PUSH,
        endpoint,
        binder_options=binder,
        connector_options=connector,
        binder_extension=receiver,
        connector_extension=sender,
    ) as link:
        for m in messages:
            await link.connector.send(m)
        with anyio.fail_after(TIMEOUT):
            got = [await link.binder.recv() for _ in kept]
            await sender.done.wait()
    assert got == kept  # dropped ones never reach the application
    assert sender.seen == kept  # every frame arrived, in order, as a command
    assert sender.shown == messages  # the default before_send_batch shows each message
    assert sum(receiver.batches) == len(messages)  # every message through the batch hook


def test_command_frames_are_the_bytes_send_command_writes() -> None:
    """NULL: one buffer, byte-identical to the same commands sent one by one."""
    frames = [encode_command(b"ACK", b"x" + bytes(8)), encode_command(b"LONG", b"y" * 300)]
    one, batch = _ready_pair()
    one.send_command(b"ACK", b"x" + bytes(8))
    one.send_command(b"LONG", b"y" * 300)
    batch.send_command_frames(frames)
    assert batch.data_to_send() == one.data_to_send() == b"".join(frames)


def _ready_pair() -> tuple[Connection, Connection]:
    """Two PUSH connections that each completed a NULL handshake (outputs drained)."""
    return _handshaken()[0], _handshaken()[0]


def _handshaken() -> tuple[Connection, Connection]:
    """A PUSH and a PULL connection through their NULL handshake with each other."""
    push, pull = Connection("PUSH", now=0.0), Connection("PULL", now=0.0)
    for _ in range(4):
        pull.receive_data(push.data_to_send())
        push.receive_data(pull.data_to_send())
    push.data_to_send()
    return push, pull


def test_batch_commands_delivers_runs_in_order_around_messages() -> None:
    """Connection.batch_commands: consecutive commands are one CommandsReceived (a PING
    inside a run stays internal); messages between them keep the order exact."""
    from zmtp.protocol import CommandsReceived, MessagesReceived
    from zmtp.protocol.commands import ping
    from zmtp.protocol.frames import Command, encode_message

    _, receiver = _handshaken()
    receiver.batch_commands = True
    wire = (
        encode_command(b"X-A", b"1")
        + ping()
        + encode_command(b"X-B", b"2")
        + encode_message([b"m"])
        + encode_command(b"X-C", b"3")
    )
    assert receiver.receive_data(wire) == [
        CommandsReceived([Command(b"X-A", b"1"), Command(b"X-B", b"2")]),
        MessagesReceived([[b"m"]]),
        CommandsReceived([Command(b"X-C", b"3")]),
    ]


class Subscribed(zmtp.SocketExtension):
    """On an XPUB: sees only the commands the socket type does not consume."""

    def __init__(self) -> None:
        self.got: list[tuple[bytes, bytes]] = []
        self.done = anyio.Event()

    def on_command(self, pipe: Pipe, name: bytes, data: bytes) -> None:
        self.got.append((name, data))
        if name == b"X-END":
            self.done.set()


async def test_a_strategy_still_consumes_its_commands_from_a_batch() -> None:
    """XPUB consumes SUBSCRIBE; the extension gets the rest of the run (tcp: batches)."""
    ext = Subscribed()
    async with linked(zmtp.XPUB, zmtp.SUB, "tcp://127.0.0.1:*", binder_extension=ext) as link:
        link.connector.subscribe(b"topic")
        with anyio.fail_after(TIMEOUT):
            assert await link.binder.recv() == b"\x01topic"  # XPUB got the SUBSCRIBE
        (pipe,) = link.connector.engine.pipes
        pipe.send_command_frames(
            [
                encode_command(b"SUBSCRIBE", b"other"),  # consumed by XPUB, in the same run
                encode_command(b"X-ONE", b"1"),
                encode_command(b"X-END", b""),
            ]
        )
        with anyio.fail_after(TIMEOUT):
            await ext.done.wait()
            assert await link.binder.recv() == b"\x01other"
    assert ext.got == [(b"X-ONE", b"1"), (b"X-END", b"")]


class Shown(zmtp.SocketExtension):
    def __init__(self) -> None:
        self.shown: list[Message] = []

    def before_send(self, pipe: Pipe, message: Message) -> None:
        self.shown.append(list(message))


async def test_an_answer_written_eagerly_still_goes_through_before_send(
    stream_endpoint: str,
) -> None:
    """A REP's reply right after a read is written from the application's task (eager write,
    docs/performance.md): the extension still sees it, with its envelope, before it leaves."""
    ext = Shown()
    async with linked(zmtp.REP, zmtp.REQ, stream_endpoint, binder_extension=ext) as link:
        for i in range(3):
            await link.connector.send(b"ping %d" % i)
            with anyio.fail_after(TIMEOUT):
                assert await link.binder.recv() == b"ping %d" % i
                await link.binder.send(b"pong %d" % i)
                assert await link.connector.recv() == b"pong %d" % i
    assert [m[-1] for m in ext.shown] == [b"pong 0", b"pong 1", b"pong 2"]
    assert all(m[-2] == b"" for m in ext.shown)  # the delimiter: wire parts


@pytest.mark.parametrize("seed", range(5))
def test_fast_command_decoding_matches_the_general_path(seed: int) -> None:
    """FrameDecoder.fast_commands (set with batch_commands) splits short command frames on a
    fast path: the same items, chunk boundaries anywhere, and the same errors."""
    import random

    from zmtp.protocol.frames import FrameDecoder, encode_message

    rng = random.Random(seed)
    pieces = []
    for _ in range(300):
        kind = rng.random()
        if kind < 0.5:
            pieces.append(encode_command(b"ACK", b"x" + rng.randbytes(8)))
        elif kind < 0.6:
            pieces.append(
                encode_command(b"N" * rng.randint(1, 20), rng.randbytes(rng.randint(0, 300)))
            )
        elif kind < 0.8:
            pieces.append(encode_message([rng.randbytes(rng.randint(0, 300))]))
        else:
            pieces.append(encode_message([b"a", rng.randbytes(rng.randint(0, 20))]))
    wire = b"".join(pieces)
    for bad in (b"\x04\x01\x00", b"\x04\x03\x05ab", b"\x04\x00"):  # name-len 0, overrun, empty
        results = []
        for fast in (False, True):
            decoder = FrameDecoder(-1, 65536)
            decoder.fast_commands = fast
            items = []
            cuts = sorted(rng.sample(range(1, len(wire)), 20))
            for a, b in zip([0, *cuts], [*cuts, len(wire)], strict=True):
                items += decoder.feed(wire[a:b])
            items += decoder.feed(bad)
            results.append((items, str(decoder.error)))
        assert results[0] == results[1]
        assert results[0][1] != "None" and len(results[0][0]) == len(pieces)


@pytest.mark.parametrize("seed", range(5))
def test_command_runs_decode_to_the_same_commands(seed: int) -> None:
    """FrameDecoder.set_command_runs: consecutive ACK frames of the registered size come as
    CommandRun items; expanded, the items equal the general path's, with chunk boundaries
    anywhere, other commands (an ACK of another size, a COMP, a PING) and messages between
    them, and the same error at the end."""
    import random

    from zmtp.protocol.frames import CommandRun, FrameDecoder, encode_message, expand_runs

    rng = random.Random(seed)
    pieces = []
    for _ in range(600):
        kind = rng.random()
        if kind < 0.7:
            pieces.append(encode_command(b"ACK", b"x" + rng.randbytes(8)))
        elif kind < 0.75:
            pieces.append(encode_command(b"ACK", rng.randbytes(rng.randint(0, 20))))
        elif kind < 0.8:
            pieces.append(encode_command(b"COMP", b"x" + rng.randbytes(8)))
        elif kind < 0.85:
            pieces.append(encode_command(b"PING", b"\x00\x00"))
        else:
            pieces.append(encode_message([rng.randbytes(rng.randint(0, 40))]))
    wire = b"".join(pieces)
    results = []
    runs_seen = 0
    for runs in (False, True):
        decoder = FrameDecoder(-1, 65536)
        decoder.fast_commands = True
        if runs:
            decoder.set_command_runs({b"ACK": 9})
        items: list = []
        cuts = sorted(rng.sample(range(1, len(wire)), 30))
        for a, b in zip([0, *cuts], [*cuts, len(wire)], strict=True):
            got = decoder.feed(wire[a:b])
            runs_seen += sum(isinstance(i, CommandRun) for i in got)
            items += [
                i
                for chunk in ([i] if isinstance(i, list) else expand_runs([i]) for i in got)
                for i in chunk
            ]
        items += decoder.feed(b"\x04\x01\x00")
        results.append((items, str(decoder.error)))
    assert results[0] == results[1]
    assert runs_seen > 0
    assert results[0][1] != "None" and len(results[0][0]) == len(pieces)


def test_command_runs_refuse_a_frame_that_is_not_short() -> None:
    from zmtp.protocol.frames import FrameDecoder

    with pytest.raises(ValueError):
        FrameDecoder().set_command_runs({b"ACK": 300})
