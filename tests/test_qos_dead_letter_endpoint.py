"""``QoSDeadLettered.endpoint`` (issue 10): the endpoint of the connection a dead-lettered
message was placed on (written to, or queued for on a ``connect()`` pipe), and "" only for a
message that was on no connection: its pipe removed before it was written, waiting for any
peer. Every reason that has a connection: a NACK, a peer gone past ``dead_letter_timeout``,
the linger deadline, a ``connect()`` nobody answers. Both backends (the suite's
``anyio_backend``)."""

from __future__ import annotations

import os

import anyio
import pytest

import zmtp
import zmtp_qos
from tests.test_qos_captures import _port, _read_until
from tests.test_qos_reconnect import _raw_peer
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


async def test_a_gone_peer_s_messages_name_its_last_connection() -> None:
    """Level 2, an accepted connection: its endpoint is the bound one, and it is still
    named when the sweep dead-letters the messages long after the connection ended."""
    with anyio.fail_after(20):
        async with zmtp_qos.Socket(zmtp.PUSH, qos=2, config=QUICK, linger=0) as push:
            events = push.monitor()
            endpoint = await push.bind("tcp://127.0.0.1:*")
            raw = await _raw_peer(_port(endpoint), b"PULL", b"receiver-A", 2)
            receipt = await push.send(b"doomed")
            await _read_until(raw, bytearray(), 2)  # READY, then the message: it was written
            await raw.aclose()
            letter = await receipt  # type: ignore[misc]
            assert isinstance(letter, DeadLetter) and letter.reason == "peer_timeout"
            event = await _dead_lettered(events)
            assert (event.endpoint, event.peer) == (endpoint, "receiver-A")


@pytest.mark.parametrize(("level", "reason"), [(1, "dropped_at_close"), (2, "socket_closed")])
async def test_what_the_linger_deadline_drops_names_its_connection(level: int, reason: str) -> None:
    with anyio.fail_after(20):
        push = zmtp_qos.Socket(zmtp.PUSH, qos=level, linger=0.2)
        async with push:
            events = push.monitor()
            endpoint = await push.bind("tcp://127.0.0.1:*")
            raw = await _raw_peer(_port(endpoint), b"PULL", b"receiver-A", level)  # never ACKs
            await events.wait_for(zmtp.HandshakeSucceeded)
            receipt = await push.send(b"unanswered")
            await _read_until(raw, bytearray(), 2)
        assert (await receipt).reason == reason  # type: ignore[misc, union-attr]
        dead = [e async for e in events if isinstance(e, QoSDeadLettered)]
        assert [(e.endpoint, e.reason) for e in dead] == [(endpoint, reason)]
        await raw.aclose()


@pytest.mark.parametrize("level", [1, 2, 3])
async def test_a_message_queued_for_a_connect_nobody_answers_names_that_endpoint(
    level: int,
) -> None:
    endpoint = _nowhere()
    with anyio.fail_after(20):
        async with zmtp_qos.Socket(zmtp.PUSH, qos=level, config=QUICK, linger=0) as push:
            events = push.monitor()
            await push.connect(endpoint)
            receipt = await push.send(b"nobody")
            letter = await receipt  # type: ignore[misc]
            assert isinstance(letter, DeadLetter) and (letter.reason, letter.peer) == (
                "peer_timeout",
                "",
            )
            event = await _dead_lettered(events)
            assert (event.endpoint, event.peer, event.reason) == (endpoint, "", "peer_timeout")


@pytest.mark.parametrize("level", [1, 2, 3])
async def test_an_unplaced_message_has_no_endpoint(level: int) -> None:
    """Its connect() pipe was removed before it was written, and no peer is connected: it
    waits for any peer, placed on none, so the event says ""."""
    endpoint = _nowhere()
    with anyio.fail_after(20):
        async with zmtp_qos.Socket(zmtp.PUSH, qos=level, config=QUICK, linger=0) as push:
            events = push.monitor()
            await push.connect(endpoint)
            receipt = await push.send(b"homeless")
            await push.disconnect(endpoint)
            letter = await receipt  # type: ignore[misc]
            assert isinstance(letter, DeadLetter) and letter.reason == "peer_timeout"
            event = await _dead_lettered(events)
            assert (event.endpoint, event.reason) == ("", "peer_timeout")
