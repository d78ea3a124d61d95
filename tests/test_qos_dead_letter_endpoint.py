"""``QoSDeadLettered.endpoint`` (issue 10): the endpoint of the connection a dead-lettered
message was placed on (written to, or queued for on a ``connect()`` pipe), and "" only for a
message that was on no connection: its pipe removed before it was written, waiting for any
peer. A peer gone past ``dead_letter_timeout`` and the linger deadline are checked in
tests/test_qos_reconnect.py and tests/test_qos_push_pull.py; here a NACK, a ``connect()``
nobody answers and the unplaced case. Both backends (the suite's ``anyio_backend``)."""

from __future__ import annotations

import os

import anyio
import pytest

import zmtp
import zmtp_qos
from zmtp_qos import DeadLetter
from zmtp_qos.events import QoSDeadLettered

pytestmark = pytest.mark.anyio

QUICK = zmtp_qos.QoSConfig(dead_letter_timeout=0.2)


def _nowhere() -> str:
    return f"inproc://qos-dl-endpoint-{os.urandom(6).hex()}"


async def _dead_lettered(events: zmtp.Monitor) -> QoSDeadLettered:
    event = await events.wait_for(QoSDeadLettered)
    assert isinstance(event, QoSDeadLettered)
    return event


@pytest.mark.parametrize("transport", ["tcp", "inproc"])
async def test_a_nacked_message_names_the_connection_it_was_written_to(transport: str) -> None:
    where = "tcp://127.0.0.1:*" if transport == "tcp" else _nowhere()
    with anyio.fail_after(20):
        async with (
            zmtp_qos.Socket(zmtp.PULL, qos=3) as pull,
            zmtp_qos.Socket(zmtp.PUSH, qos=3) as push,
        ):
            events = push.monitor()
            endpoint = await pull.bind(where)
            await push.connect(endpoint)
            receipt = await push.send(b"bad")
            (await pull.recv_handle()).reject(0x02, "no")
            letter = await receipt  # type: ignore[misc]
            assert isinstance(letter, DeadLetter) and letter.reason == "terminal_nack"
            event = await _dead_lettered(events)
            assert (event.endpoint, event.reason) == (endpoint, "terminal_nack")


@pytest.mark.parametrize("removed", [False, True], ids=["queued", "unplaced"])
@pytest.mark.parametrize("level", [1, 2, 3])
async def test_a_message_no_peer_took(level: int, removed: bool) -> None:
    """Queued for a connect() nobody answers: that endpoint is named. Its pipe removed
    (``disconnect()``) before it was written, with no peer connected: it waits for any peer,
    placed on none, and the event says ""."""
    endpoint = _nowhere()
    with anyio.fail_after(20):
        async with zmtp_qos.Socket(zmtp.PUSH, qos=level, config=QUICK, linger=0) as push:
            events = push.monitor()
            await push.connect(endpoint)
            receipt = await push.send(b"nobody")
            if removed:
                await push.disconnect(endpoint)
            letter = await receipt  # type: ignore[misc]
            assert isinstance(letter, DeadLetter)
            assert (letter.reason, letter.peer) == ("peer_timeout", "")
            event = await _dead_lettered(events)
            expected = "" if removed else endpoint
            assert (event.endpoint, event.peer, event.reason) == (expected, "", "peer_timeout")
