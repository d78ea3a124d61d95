"""A QoS receiver that closes right after taking a message still answers it.

Regression: a receiver's ACK (levels 1-2) or COMP (level 3) is a command, queued on the
connection rather than in an outbox, and close()'s linger only waited for outboxes. A PULL
that closed at once after its last recv (a process that exits after N messages) dropped
the answer, so its sender never saw the message Delivered (``zmtp cat PUSH --qos 1`` into
such a peer timed out with one message unacknowledged). Linger now also waits for queued
command output (docs/qos-protocol.md §5.3).
"""

from __future__ import annotations

import os
import tempfile

import anyio
import pytest

import zmtp
import zmtp_qos
from zmtp_qos import Delivered
from zmtp_qos.socket import Handle

pytestmark = pytest.mark.anyio

_counter = 0


def _endpoint(transport: str) -> str:
    global _counter
    _counter += 1
    if transport == "tcp":
        return "tcp://127.0.0.1:*"
    return f"ipc://{tempfile.gettempdir()}/zmtp-qos-flush-{os.getpid()}-{_counter}.sock"


@pytest.mark.parametrize("transport", ["tcp", "ipc"])
@pytest.mark.parametrize("level", [1, 2, 3])
async def test_receiver_closing_at_once_after_recv_still_answers(
    transport: str, level: int
) -> None:
    with anyio.fail_after(30):
        for round_ in range(5):
            async with zmtp_qos.Socket(zmtp.PUSH, qos=level) as push:
                async with zmtp_qos.Socket(zmtp.PULL, qos=level, linger=5.0) as pull:
                    await push.connect(await pull.bind(_endpoint(transport)))
                    receipt = await push.send(str(round_).encode())
                    assert receipt is not None
                    if level == 3:
                        handle: Handle = await pull.recv_handle()
                        handle.complete()
                    else:
                        assert await pull.recv() == str(round_).encode()
                # The receiver is closed: its answer must have left before it went.
                with anyio.fail_after(5):
                    outcome = await receipt
                assert isinstance(outcome, Delivered), outcome
