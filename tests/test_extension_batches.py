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
    """Two connections that completed a NULL handshake with a peer (outputs drained)."""
    out: list[Connection] = []
    for _ in range(2):
        a, b = Connection("PUSH", now=0.0), Connection("PULL", now=0.0)
        for _ in range(4):
            b.receive_data(a.data_to_send())
            a.receive_data(b.data_to_send())
        a.data_to_send()
        out.append(a)
    return out[0], out[1]
