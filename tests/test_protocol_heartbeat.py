"""Timers with a fake clock: handshake timeout, PING/PONG, heartbeat timeout and TTL.

docs/libzmq-notes.md#heartbeats. "Now" is just the float passed to the connection.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.test_protocol_helpers import (
    failure,
    handshake_pair,
    only_failure,
    peer_greeting,
    peer_ready,
    ready_connection,
    split_commands,
)
from zmtp.errors import ProtocolError
from zmtp.protocol import (
    Command,
    CommandReceived,
    Connection,
    ConnectionFailed,
    HandshakeComplete,
    MessagesReceived,
    State,
    commands,
    encode_command,
    encode_message,
)

#: libzmq's PING with ZMQ_HEARTBEAT_TTL = 1500 ms: TTL 15 deciseconds, no context.
PING_TTL_15 = b"\x04\x07\x04PING\x00\x0f"
PING_NO_TTL = b"\x04\x07\x04PING\x00\x00"
EMPTY_PONG = b"\x04\x05\x04PONG"
#: libzmq tests/test_heartbeats.cpp: a 58-byte context, of which the PONG echoes 16 bytes.
LONG_CONTEXT = b"LOL" + b"z" * 55
PONG_FOR_LONG_CONTEXT = b"\x04\x15\x04PONG" + b"LOL" + b"z" * 13

T0 = 100.0  # when the handshake completes in these tests


def raw_ping(ttl_deciseconds: int, context: bytes = b"") -> bytes:
    """A PING frame built by hand (commands.ping refuses contexts over 16 bytes)."""
    return encode_command(b"PING", ttl_deciseconds.to_bytes(2, "big") + context)


def heartbeating(**kwargs: Any) -> Connection:
    """A DEALER whose handshake completed at T0, with the given heartbeat options."""
    return ready_connection("DEALER", "ROUTER", now=T0, handshake_timeout=None, **kwargs)


# -------------------------------------------------------------------------- handshake timeout


def test_handshake_deadline_is_set_at_construction() -> None:
    assert Connection("DEALER", handshake_timeout=5.0, now=T0).next_deadline() == T0 + 5.0


def test_handshake_timeout_does_not_fire_before_the_deadline() -> None:
    conn = Connection("DEALER", handshake_timeout=5.0, now=T0)
    assert conn.handle_timers(T0 + 4.999) == []
    assert conn.state is State.GREETING


def test_handshake_timeout_fires_at_the_deadline() -> None:
    conn = Connection("DEALER", handshake_timeout=5.0, now=T0)
    fail = only_failure(conn.handle_timers(T0 + 5.0))
    assert fail == ConnectionFailed("handshake timed out", "timeout", True)
    assert conn.state is State.CLOSED
    assert conn.next_deadline() is None


def test_handshake_timeout_covers_the_mechanism_handshake_too() -> None:
    conn = Connection("DEALER", handshake_timeout=5.0, now=T0)
    conn.receive_data(peer_greeting(), T0 + 1)
    assert conn.state is State.HANDSHAKE
    assert conn.next_deadline() == T0 + 5.0
    assert failure(conn.handle_timers(T0 + 5.0)).kind == "timeout"


@pytest.mark.parametrize("timeout", [None, 0, 0.0])
def test_no_handshake_timeout(timeout: float | None) -> None:
    conn = Connection("DEALER", handshake_timeout=timeout, now=T0)
    assert conn.next_deadline() is None
    assert conn.handle_timers(T0 + 1e9) == []


def test_default_handshake_timeout_is_30_seconds() -> None:
    assert Connection("DEALER", now=T0).next_deadline() == T0 + 30.0


def test_completed_handshake_cancels_the_handshake_timeout() -> None:
    conn = Connection("DEALER", handshake_timeout=5.0, now=T0)
    conn.receive_data(peer_greeting() + peer_ready("ROUTER"), T0 + 1)
    assert conn.next_deadline() is None
    assert conn.handle_timers(T0 + 10) == []
    assert conn.state is State.READY


# ------------------------------------------------------------------------------ sending PING


def test_no_ping_before_the_handshake() -> None:
    conn = Connection("DEALER", heartbeat_ivl=1.0, handshake_timeout=None, now=T0)
    conn.data_to_send()
    assert conn.next_deadline() is None
    assert conn.handle_timers(T0 + 10) == []
    assert conn.data_to_send() == b""


def test_first_ping_is_due_one_interval_after_the_handshake() -> None:
    assert heartbeating(heartbeat_ivl=2.0).next_deadline() == T0 + 2.0


def test_no_ping_before_the_interval() -> None:
    conn = heartbeating(heartbeat_ivl=2.0)
    assert conn.handle_timers(T0 + 1.999) == []
    assert conn.data_to_send() == b""


def test_ping_sent_every_interval() -> None:
    conn = heartbeating(heartbeat_ivl=1.0, heartbeat_timeout=10.0)
    for k in range(1, 5):
        assert conn.handle_timers(T0 + k) == []
        assert conn.data_to_send() == PING_NO_TTL
        assert conn.handle_timers(T0 + k + 0.5) == []
        assert conn.data_to_send() == b""


def test_ping_carries_our_ttl_in_deciseconds() -> None:
    conn = heartbeating(heartbeat_ivl=1.0, heartbeat_ttl=1.5)
    conn.handle_timers(T0 + 1.0)
    assert conn.data_to_send() == PING_TTL_15


@pytest.mark.parametrize(
    ("ttl", "deciseconds"),
    [(0.0, 0), (0.05, 0), (0.1, 1), (0.29, 2), (1.5, 15), (6553.5, 0xFFFF), (10_000.0, 0xFFFF)],
)
def test_ttl_conversion_truncates_and_saturates(ttl: float, deciseconds: int) -> None:
    conn = heartbeating(heartbeat_ivl=1.0, heartbeat_ttl=ttl)
    conn.handle_timers(T0 + 1.0)
    assert conn.data_to_send() == commands.ping(deciseconds)


def test_no_heartbeat_when_interval_is_zero() -> None:
    conn = heartbeating(heartbeat_ivl=0.0, heartbeat_ttl=5.0, heartbeat_timeout=1.0)
    assert conn.next_deadline() is None
    assert conn.handle_timers(T0 + 100) == []
    assert conn.data_to_send() == b""


# ------------------------------------------------------------------------ heartbeat timeout


def test_heartbeat_timeout_after_a_ping_with_no_traffic() -> None:
    conn = heartbeating(heartbeat_ivl=5.0, heartbeat_timeout=2.0)
    conn.handle_timers(T0 + 5)  # PING
    assert conn.next_deadline() == T0 + 7
    assert conn.handle_timers(T0 + 6.999) == []
    fail = only_failure(conn.handle_timers(T0 + 7))
    assert fail.kind == "timeout"
    assert not fail.during_handshake
    assert conn.state is State.CLOSED


def test_heartbeat_timeout_defaults_to_the_interval() -> None:
    conn = heartbeating(heartbeat_ivl=1.0)
    conn.handle_timers(T0 + 1)  # PING, timeout due at T0 + 2 (with the next PING)
    assert conn.next_deadline() == T0 + 2
    assert failure(conn.handle_timers(T0 + 2)).kind == "timeout"


def test_timeout_is_armed_only_once_while_pending() -> None:
    # libzmq: sending a PING arms the timeout only if none is pending.
    conn = heartbeating(heartbeat_ivl=1.0, heartbeat_timeout=3.0)
    conn.handle_timers(T0 + 1)  # timeout due at T0 + 4
    conn.handle_timers(T0 + 2)
    conn.handle_timers(T0 + 3)
    assert conn.handle_timers(T0 + 3.999) == []
    assert failure(conn.handle_timers(T0 + 4)).kind == "timeout"


def test_any_incoming_bytes_cancel_the_heartbeat_timeout() -> None:
    conn = heartbeating(heartbeat_ivl=5.0, heartbeat_timeout=2.0)
    conn.handle_timers(T0 + 5)
    assert conn.receive_data(b"\x00", T0 + 6) == []  # a partial frame is a sign of life too
    assert conn.next_deadline() == T0 + 10  # only the next PING is left
    assert conn.handle_timers(T0 + 7) == []
    assert conn.state is State.READY


@pytest.mark.parametrize(
    "traffic",
    [encode_message([b"data"]), commands.pong(), commands.ping(0), encode_command(b"X-ACK")],
    ids=["message", "pong", "ping", "unknown-command"],
)
def test_any_frame_cancels_the_heartbeat_timeout(traffic: bytes) -> None:
    conn = heartbeating(heartbeat_ivl=5.0, heartbeat_timeout=2.0)
    conn.handle_timers(T0 + 5)
    conn.receive_data(traffic, T0 + 6)
    assert conn.handle_timers(T0 + 7) == []
    assert conn.state is State.READY


def test_timeout_is_rearmed_by_the_next_ping_after_traffic() -> None:
    conn = heartbeating(heartbeat_ivl=5.0, heartbeat_timeout=2.0)
    conn.handle_timers(T0 + 5)
    conn.receive_data(commands.pong(), T0 + 6)
    conn.handle_timers(T0 + 10)  # next PING re-arms the timeout
    assert conn.next_deadline() == T0 + 12
    assert failure(conn.handle_timers(T0 + 12)).kind == "timeout"


def test_the_heartbeat_timeout_runs_from_when_the_ping_is_written() -> None:
    # libzmq arms it when it encodes the PING for writing: a driver whose event loop writes
    # the PING a pass late must not count the lateness against the peer.
    conn = heartbeating(heartbeat_ivl=5.0, heartbeat_timeout=2.0)
    conn.handle_timers(T0 + 5)  # PING queued, timeout armed at T0 + 7 for a driver without now
    assert conn.ping_unwritten
    assert b"PING" in conn.data_to_send(T0 + 6.5)  # taken to be written 1.5 s late
    assert not conn.ping_unwritten
    assert conn.next_deadline() == T0 + 8.5
    assert conn.handle_timers(T0 + 8) == []
    assert failure(conn.handle_timers(T0 + 8.5)).kind == "timeout"


def test_a_ping_written_on_time_keeps_its_deadline() -> None:
    conn = heartbeating(heartbeat_ivl=5.0, heartbeat_timeout=2.0)
    conn.handle_timers(T0 + 5)
    conn.data_to_send(T0 + 5)
    assert conn.next_deadline() == T0 + 7
    conn.data_to_send()  # a driver without a clock: nothing changes
    assert failure(conn.handle_timers(T0 + 7)).kind == "timeout"


def test_input_waiting_unread_is_a_sign_of_life() -> None:
    # The driver found the peer's bytes waiting in the kernel when a silence deadline was due.
    conn = heartbeating(heartbeat_ivl=5.0, heartbeat_timeout=2.0)
    conn.handle_timers(T0 + 5)
    assert not conn.silence_due(T0 + 6.9)
    assert conn.silence_due(T0 + 7)
    conn.input_waiting()
    assert not conn.silence_due(T0 + 7)
    assert conn.handle_timers(T0 + 7) == []
    assert conn.state is State.READY
    assert conn.next_deadline() == T0 + 10  # the next PING; its own timeout comes with it


def test_silence_due_covers_the_ttl_and_not_the_handshake() -> None:
    conn = heartbeating()
    conn.receive_data(PING_TTL_15, T0)  # the peer says: drop me after 1.5 s of silence
    assert conn.silence_due(T0 + 1.5)
    waiting = Connection("DEALER", handshake_timeout=5.0, now=T0)
    assert not waiting.silence_due(T0 + 10)  # the handshake deadline is not silence


def test_heartbeat_timeout_zero_never_fires() -> None:
    conn = heartbeating(heartbeat_ivl=1.0, heartbeat_timeout=0.0)
    for k in range(1, 6):
        assert conn.handle_timers(T0 + k) == []
    assert conn.state is State.READY


# ------------------------------------------------------------------------ answering PING


def test_ping_is_answered_with_pong_even_when_our_heartbeats_are_off() -> None:
    conn = heartbeating()
    assert conn.receive_data(commands.ping(0), T0 + 1) == []
    assert conn.data_to_send() == EMPTY_PONG


def test_pong_echoes_the_context() -> None:
    conn = heartbeating()
    conn.receive_data(commands.ping(0, b"ctx-1234"), T0 + 1)
    assert conn.data_to_send() == commands.pong(b"ctx-1234")


def test_pong_echoes_at_most_16_bytes_of_a_58_byte_context() -> None:
    conn = heartbeating()
    conn.receive_data(raw_ping(0, LONG_CONTEXT), T0 + 1)
    assert conn.data_to_send() == PONG_FOR_LONG_CONTEXT


def test_one_pending_pong_answers_the_latest_ping() -> None:
    # libzmq keeps one pending PONG, re-filled by each PING (issue 14, finding 2): PINGs that
    # arrive before the writer took the PONG replace it instead of queueing one each.
    conn = heartbeating()
    conn.receive_data(commands.ping(0, b"a") + commands.ping(0, b"b"), T0 + 1)
    assert split_commands(conn.data_to_send()) == [Command(b"PONG", b"b")]
    conn.receive_data(commands.ping(0, b"c"), T0 + 2)
    assert split_commands(conn.data_to_send()) == [Command(b"PONG", b"c")]


def test_a_ping_flood_from_a_peer_that_never_reads_queues_one_pong() -> None:
    # The writer is stuck (the peer does not read), so data_to_send() is not called: what is
    # queued must stay at one PONG however many PINGs arrive.
    conn = heartbeating()
    flood = commands.ping(0, b"0123456789abcdef") * 10_000
    for _ in range(10):
        assert conn.receive_data(flood, T0 + 1) == []
    assert conn.pending_output == len(commands.pong(b"0123456789abcdef"))
    assert conn.has_output


def test_ping_and_pong_never_surface_as_events() -> None:
    conn = heartbeating()
    wire = (
        encode_message([b"1"])
        + commands.ping(10, b"x")
        + encode_message([b"2"])
        + commands.pong(b"y")
        + encode_message([b"3"])
    )
    assert conn.receive_data(wire, T0 + 1) == [MessagesReceived([[b"1"], [b"2"], [b"3"]])]


def test_ping_alone_produces_no_event() -> None:
    assert heartbeating().receive_data(commands.ping(0), T0 + 1) == []


def test_ping_accepted_from_a_zmtp_3_0_peer() -> None:
    conn = ready_connection("SUB", "PUB", now=T0, peer_minor=0)
    assert conn.zmtp_minor == 0
    assert conn.receive_data(commands.ping(0, b"LOL"), T0 + 1) == []
    assert conn.data_to_send() == commands.pong(b"LOL")


def test_ping_pipelined_with_ready_is_answered() -> None:
    conn = Connection("DEALER", now=T0)
    conn.data_to_send()
    events = conn.receive_data(peer_greeting() + peer_ready("ROUTER") + commands.ping(0, b"p"))
    assert [type(e) for e in events] == [HandshakeComplete]
    assert split_commands(conn.data_to_send()) == [
        Command(b"READY", b"\x0bSocket-Type\x00\x00\x00\x06DEALER\x08Identity\x00\x00\x00\x00"),
        Command(b"PONG", b"p"),
    ]


def test_malformed_ping_is_a_protocol_error() -> None:
    conn = heartbeating()
    events = conn.receive_data(encode_message([b"ok"]) + encode_command(b"PING", b"\x00"), T0 + 1)
    assert events[0] == MessagesReceived([[b"ok"]])
    assert failure(events).kind == "protocol"


def test_peers_heartbeat_each_other() -> None:
    a, b, _, _ = handshake_pair("PAIR", "PAIR", now=T0, heartbeat_ivl=1.0, heartbeat_ttl=3.0)
    assert a.handle_timers(T0 + 1) == []
    assert b.receive_data(a.data_to_send(), T0 + 1.1) == []
    assert b.data_to_send() == EMPTY_PONG
    assert b.next_deadline() == T0 + 1  # b's own PING is due too


# --------------------------------------------------------------------------- peer TTL


def test_peer_ping_with_ttl_arms_a_deadline() -> None:
    conn = heartbeating()
    conn.receive_data(PING_TTL_15, T0 + 10)
    assert conn.next_deadline() == T0 + 11.5


def test_ttl_deadline_closes_if_nothing_else_arrives() -> None:
    conn = heartbeating()
    conn.receive_data(PING_TTL_15, T0 + 10)
    assert conn.handle_timers(T0 + 11.49) == []
    fail = only_failure(conn.handle_timers(T0 + 11.5))
    assert fail.kind == "timeout"
    assert not fail.during_handshake
    assert conn.state is State.CLOSED


def test_ttl_deadline_is_cancelled_by_any_traffic() -> None:
    conn = heartbeating()
    conn.receive_data(PING_TTL_15, T0 + 10)
    conn.receive_data(encode_message([b"alive"]), T0 + 11)
    assert conn.next_deadline() is None
    assert conn.handle_timers(T0 + 20) == []


def test_ttl_deadline_is_rearmed_by_a_later_ping() -> None:
    conn = heartbeating()
    conn.receive_data(PING_TTL_15, T0 + 10)
    conn.receive_data(commands.ping(5), T0 + 11)
    assert conn.next_deadline() == T0 + 11.5
    assert failure(conn.handle_timers(T0 + 11.5)).kind == "timeout"


def test_ping_without_ttl_arms_nothing() -> None:
    conn = heartbeating()
    conn.receive_data(PING_NO_TTL, T0 + 10)
    assert conn.next_deadline() is None


# --------------------------------------------------------------------------- next_deadline


def test_next_deadline_is_the_earliest_timer() -> None:
    conn = heartbeating(heartbeat_ivl=5.0, heartbeat_timeout=4.0)
    assert conn.next_deadline() == T0 + 5  # next PING
    conn.handle_timers(T0 + 5)
    assert conn.next_deadline() == T0 + 9  # timeout (T0 + 9) before next PING (T0 + 10)
    conn.receive_data(commands.ping(10), T0 + 6)  # cancels the timeout, arms a TTL at T0 + 7
    assert conn.next_deadline() == T0 + 7


def test_next_deadline_is_none_after_a_failure() -> None:
    conn = heartbeating(heartbeat_ivl=1.0)
    conn.receive_data(PING_TTL_15, T0)
    conn.fail("bye")
    assert conn.next_deadline() is None
    assert conn.handle_timers(T0 + 100) == []


def test_timers_do_nothing_after_close() -> None:
    conn = Connection("DEALER", handshake_timeout=1.0, now=T0)
    conn.handle_timers(T0 + 1)
    assert conn.handle_timers(T0 + 2) == []
    assert conn.receive_data(peer_greeting(), T0 + 2) == []


def test_commands_between_heartbeats_still_surface() -> None:
    conn = heartbeating(heartbeat_ivl=1.0)
    wire = commands.ping(0) + encode_command(b"X-ACK", b"7")
    assert conn.receive_data(wire, T0 + 0.5) == [CommandReceived(b"X-ACK", b"7")]


# -------------------------------------------------------------------------- PING on demand


def test_send_ping_queues_a_ping_without_a_deadline_by_default() -> None:
    conn = heartbeating()
    conn.send_ping(T0)
    assert conn.data_to_send() == PING_NO_TTL
    assert conn.next_deadline() is None
    assert conn.handle_timers(T0 + 1e6) == []


def test_send_ping_with_answer_within_fails_a_silent_peer() -> None:
    conn = heartbeating()
    conn.send_ping(T0, answer_within=2.0)
    assert conn.data_to_send() == PING_NO_TTL
    assert conn.next_deadline() == T0 + 2.0
    assert conn.handle_timers(T0 + 1.9) == []
    reason = only_failure(conn.handle_timers(T0 + 2.0)).reason
    assert "no answer to PING" in reason
    assert conn.state is State.CLOSED


def test_any_traffic_answers_a_ping_sent_on_demand() -> None:
    conn = heartbeating()
    conn.send_ping(T0, answer_within=2.0)
    conn.data_to_send()
    assert conn.receive_data(EMPTY_PONG, T0 + 1.0) == []
    assert conn.next_deadline() is None
    assert conn.handle_timers(T0 + 10.0) == []


def test_send_ping_keeps_the_first_deadline() -> None:
    conn = heartbeating()
    conn.send_ping(T0, answer_within=2.0)
    conn.send_ping(T0 + 1.0, answer_within=2.0)
    assert conn.next_deadline() == T0 + 2.0


def test_send_ping_before_the_handshake_is_refused() -> None:
    with pytest.raises(ProtocolError, match="handshake"):
        Connection("DEALER").send_ping(0.0)
