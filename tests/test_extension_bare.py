"""``SocketExtension.bare_single_part`` / ``on_received_batch`` (docs/extensions.md): an
extension that opts in sees a tcp/ipc read's one-part messages as bare ``bytes`` (multipart
ones as lists), every other extension keeps getting lists, and every receive API returns
exactly what it returns without an extension; the QoS receiver is the user of it."""

from __future__ import annotations

import anyio
import pytest

import zmtp
import zmtp_qos
from tests import test_engine_helpers as helpers
from tests.test_engine_helpers import TIMEOUT, linked
from zmtp.engine.pipe import Pipe
from zmtp.engine.queue import Message, Received

pytestmark = pytest.mark.anyio

stream_endpoint = helpers.stream_endpoint  # fixture
stream_transport = helpers.stream_transport  # fixture


class Recording(zmtp.SocketExtension):
    """Records the type of every message each receive hook was shown; delivers them all."""

    def __init__(self) -> None:
        self.lists: list[Message] = []  #: seen by on_receive_batch / on_receive
        self.received: list[Received] = []  #: seen by on_received_batch

    def on_receive(self, pipe: Pipe, message: Message) -> bool:
        self.lists.append(message)
        return True

    def on_receive_batch(self, pipe: Pipe, messages: list[Message]) -> list[Message]:
        self.lists.extend(messages)
        return messages


class Bare(Recording):
    """Opted in, with its own bare hook."""

    bare_single_part = True

    def on_received_batch(self, pipe: Pipe, messages: list[Received]) -> list[Received]:
        self.received.extend(messages)
        return [m for m in messages if m != b"drop"]


class FlagOnly(Recording):
    """Opted in without overriding on_received_batch: the default hands it lists."""

    bare_single_part = True


async def _exchange(
    extension: Recording, endpoint: str, kind: zmtp.SocketType = zmtp.PULL
) -> list[bytes | list[bytes]]:
    """The sender sends one-part messages around a multipart one (not to GATHER: SCATTER
    sends one part only); the receiver (with ``extension``) takes every message delivered
    with ``recv`` for the one-part ones and ``recv_multipart`` for the rest, then checks
    that ``b"last"`` ended it."""
    sender = zmtp.SCATTER if kind == zmtp.GATHER else zmtp.PUSH
    taken: list[bytes | list[bytes]] = []
    async with linked(kind, sender, endpoint, binder_extension=extension) as link:
        pull, push = link.binder, link.connector
        await push.send(b"one")
        await push.send(b"drop")  # Bare drops it
        if kind != zmtp.GATHER:
            await push.send_multipart([b"multi", b"part"])
        await push.send(b"last")
        with anyio.fail_after(TIMEOUT):
            while not taken or taken[-1] != b"last":
                try:
                    taken.append(await pull.recv())
                except zmtp.InvalidArgument:  # multipart: kept for recv_multipart
                    taken.append(await pull.recv_multipart())
    return taken


async def test_opted_in_extension_sees_bare_one_part_messages(stream_endpoint: str) -> None:
    extension = Bare()
    taken = await _exchange(extension, stream_endpoint)
    assert extension.lists == []  # the list hooks are not called on tcp/ipc
    assert extension.received == [b"one", b"drop", [b"multi", b"part"], b"last"]
    assert [type(m) for m in extension.received] == [bytes, bytes, list, bytes]
    # The receive API returns what it returns on a socket without an extension.
    assert taken == [b"one", [b"multi", b"part"], b"last"]
    assert [type(m) for m in taken] == [bytes, list, bytes]


async def test_extension_not_opted_in_gets_lists(stream_endpoint: str) -> None:
    extension = Recording()
    taken = await _exchange(extension, stream_endpoint)
    assert extension.received == []
    assert extension.lists == [[b"one"], [b"drop"], [b"multi", b"part"], [b"last"]]
    assert all(type(m) is list for m in extension.lists)
    assert taken == [b"one", b"drop", [b"multi", b"part"], b"last"]


async def test_flag_without_the_hook_still_gets_lists(stream_endpoint: str) -> None:
    extension = FlagOnly()
    taken = await _exchange(extension, stream_endpoint)
    assert extension.received == []
    assert extension.lists == [[b"one"], [b"drop"], [b"multi", b"part"], [b"last"]]
    assert taken == [b"one", b"drop", [b"multi", b"part"], b"last"]


async def test_gather_opted_in_sees_bare(stream_endpoint: str) -> None:
    extension = Bare()
    taken = await _exchange(extension, stream_endpoint, zmtp.GATHER)
    assert extension.received == [b"one", b"drop", b"last"]
    assert taken == [b"one", b"last"]
    assert all(type(m) is bytes for m in taken)


async def test_inproc_keeps_lists_for_an_opted_in_extension() -> None:
    extension = Bare()
    endpoint = helpers.endpoint_for("inproc", None)  # type: ignore[arg-type]
    async with linked(zmtp.PULL, zmtp.PUSH, endpoint, binder_extension=extension) as link:
        await link.connector.send(b"one")
        await link.connector.send_multipart([b"a", b"b"])
        with anyio.fail_after(TIMEOUT):
            assert await link.binder.recv() == b"one"
            assert await link.binder.recv_multipart() == [b"a", b"b"]
    assert extension.received == []
    assert extension.lists == [[b"one"], [b"a", b"b"]]


async def test_req_rep_with_opted_in_extension_gets_lists(stream_endpoint: str) -> None:
    """REP has no bare receive path of its own: an opted-in extension keeps lists there."""
    extension = Bare()
    async with linked(zmtp.REP, zmtp.REQ, stream_endpoint, binder_extension=extension) as link:
        rep, req = link.binder, link.connector
        await req.send(b"ping")
        with anyio.fail_after(TIMEOUT):
            assert await rep.recv() == b"ping"
            await rep.send(b"pong")
            assert await req.recv() == b"pong"
    assert extension.received == []
    assert [type(m) for m in extension.lists] == [list]
    assert extension.lists[0][-1] == b"ping"


@pytest.mark.parametrize("level", [1, 2])
async def test_qos_receiver_queues_bare_and_recv_types(stream_endpoint: str, level: int) -> None:
    """The QoS PULL digests bare messages and queues them bare; ``recv`` gives bytes and
    ``recv_multipart`` lists, and every message is acknowledged (its receipt delivered)."""
    async with (
        zmtp_qos.Socket(zmtp.PULL, qos=level, linger=0) as pull,
        zmtp_qos.Socket(zmtp.PUSH, qos=level, linger=0) as push,
    ):
        endpoint = await pull.bind(stream_endpoint)
        await push.connect(endpoint)
        receipts = [
            await push.send(b"one"),
            await push.send_multipart([b"multi", b"part"]),
            await push.send(b"x" * 300),  # a long part: the digest's one-by-one path
            await push.send(b"two"),
        ]
        with anyio.fail_after(TIMEOUT):
            for receipt in receipts:
                assert receipt is not None
                assert isinstance(await receipt, zmtp_qos.Delivered)
        queued = [m for p in pull.raw.engine.pipes for m in p.inbox.items]
        assert [type(m) for m in queued] == [bytes, list, bytes, bytes]
        with anyio.fail_after(TIMEOUT):
            first = await pull.recv()
            multi = await pull.recv_multipart()
            long = await pull.recv_multipart()
            last = await pull.recv()
        assert (first, multi, long, last) == (b"one", [b"multi", b"part"], [b"x" * 300], b"two")
        assert type(first) is bytes and type(long) is list


async def test_qos_level3_handle_parts_is_one_list(stream_endpoint: str) -> None:
    """Level 3 handles hold what was received (bare for one part); ``parts`` is its list,
    the same object on every access, and multipart messages keep their list."""
    async with (
        zmtp_qos.Socket(zmtp.PULL, qos=3, linger=0) as pull,
        zmtp_qos.Socket(zmtp.PUSH, qos=3, linger=0) as push,
    ):
        endpoint = await pull.bind(stream_endpoint)
        await push.connect(endpoint)
        receipts = [await push.send(b"one"), await push.send_multipart([b"a", b"b"])]
        with anyio.fail_after(TIMEOUT):
            one = await pull.recv_handle()
            multi = await pull.recv_handle()
        assert one.parts == [b"one"] and one.parts is one.parts
        assert multi.parts == [b"a", b"b"]
        async with one:
            pass  # -> COMP
        multi.reject(0x02, "no")
        with anyio.fail_after(TIMEOUT):
            assert isinstance(await receipts[0], zmtp_qos.Delivered)  # type: ignore[misc]
            letter = await receipts[1]  # type: ignore[misc]
        assert isinstance(letter, zmtp_qos.DeadLetter)
        assert letter.parts == [b"a", b"b"]


def test_a_command_run_ends_where_other_frames_begin() -> None:
    """FrameDecoder's run of registered commands stops at the first frame that differs in
    any header byte (another command of the same size, a message), exactly where the
    frame-by-frame check stopped; what follows is decoded as before."""
    from zmtp.protocol.frames import (
        Command,
        CommandRun,
        FrameDecoder,
        encode_command,
        encode_message,
        expand_runs,
    )

    clr = [encode_command(b"CLR", b"x" + bytes([i]) * 8) for i in range(5)]
    clrs = [Command(b"CLR", b"x" + bytes([i]) * 8) for i in range(5)]
    last = Command(b"CLR", b"x" + bytes(8))
    other = encode_command(b"CLX", b"x" + bytes(8))  # same size, one name byte differs
    message = encode_message([b"m" * 13])  # 15 bytes, as a CLR frame
    cases = [
        (b"", 6, []),  # one run to the read's end
        (message, 5, [b"m" * 13, last]),
        (other, 5, [Command(b"CLX", b"x" + bytes(8)), last]),
    ]
    for tail, count, rest in cases:
        decoder = FrameDecoder(-1, 65536)
        decoder.fast_commands = True
        decoder.bare_single_part = True
        decoder.set_command_runs({b"CLR": 9})
        items = decoder.feed(b"".join(clr) + tail + clr[0])
        run = items[0]
        assert isinstance(run, CommandRun) and run.count == count
        assert list(expand_runs([run])) == [*clrs, last][:count]
        after = [
            x for i in items[1:] for x in (expand_runs([i]) if isinstance(i, Command) else [i])
        ]
        assert after == rest


def test_dispatch_keeps_messages_around_pings_in_one_batch() -> None:
    """Connection._dispatch slices the messages between commands: a PING between messages
    leaves them one batch, another command splits them, bare and list messages as decoded."""
    from zmtp.protocol import CommandsReceived, MessagesReceived
    from zmtp.protocol.commands import ping
    from zmtp.protocol.connection import Connection
    from zmtp.protocol.frames import Command, encode_command, encode_message

    push, pull = Connection("PUSH", now=0.0), Connection("PULL", now=0.0)
    for _ in range(4):
        pull.receive_data(push.data_to_send())
        push.receive_data(pull.data_to_send())
    pull.batch_commands = True
    pull.bare_single_part = True
    wire = (
        encode_message([b"a"])
        + ping()
        + encode_message([b"b", b"c"])
        + encode_message([b"d"])
        + encode_command(b"X-A", b"1")
        + ping()
        + encode_command(b"X-B", b"2")
        + encode_message([b"e"])
    )
    assert pull.receive_data(wire) == [
        MessagesReceived([b"a", [b"b", b"c"], b"d"]),
        CommandsReceived([Command(b"X-A", b"1"), Command(b"X-B", b"2")]),
        MessagesReceived([b"e"]),
    ]
