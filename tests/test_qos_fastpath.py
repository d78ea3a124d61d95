"""The QoS hot paths keep their shape: what must cost nothing extra per message does not.

These check structure and behaviour, never speed (the figures are in docs/performance.md).
"""

from __future__ import annotations

from typing import Any

import pytest

import zmtp
import zmtp_qos
from zmtp.engine.pipe import Pipe
from zmtp.engine.queue import MessageQueue
from zmtp.protocol.frames import Command
from zmtp_qos.config import QoSConfig
from zmtp_qos.digest import digest_x
from zmtp_qos.results import Delivered
from zmtp_qos.runtime import QoSRuntime


@pytest.mark.parametrize("kind", ["PUSH", "PULL", "REQ", "REP", "PAIR", "PUB"])
def test_level_0_hands_out_the_raw_sockets_own_methods(kind: str) -> None:
    sock = zmtp_qos.Socket(kind)
    for name in ("send", "send_multipart", "recv", "recv_multipart"):
        assert getattr(sock, name) == getattr(sock.raw, name), name


@pytest.mark.parametrize("level", [1, 2, 3])
def test_req_sends_and_receives_through_the_raw_socket(level: int) -> None:
    req = zmtp_qos.Socket(zmtp.REQ, qos=level)
    for name in ("send", "send_multipart", "recv", "recv_multipart"):
        assert getattr(req, name) == getattr(req.raw, name), name


def test_levels_with_qos_work_keep_their_own_send() -> None:
    assert zmtp_qos.Socket(zmtp.PUSH, qos=1).send != zmtp_qos.Socket(zmtp.PUSH, qos=1).raw.send
    rep = zmtp_qos.Socket(zmtp.REP, qos=3)
    assert rep.send != rep.raw.send and rep.recv != rep.raw.recv  # reply handles
    pull = zmtp_qos.Socket(zmtp.PULL, qos=3)
    assert pull.recv != pull.raw.recv  # verdict handles


def _runtime_and_pipes(n: int) -> tuple[Any, list[Pipe]]:
    """A level-1 PUSH runtime and ``n`` pipes that passed its handshake check (no I/O)."""
    runtime = QoSRuntime(
        1,
        QoSConfig(),
        "PUSH",
        send_hwm=100,
        recv_hwm=100,
        identity=b"",
        on_dead_letter=lambda letter, receipt: None,
        wake_senders=lambda: None,
    )
    pipes = []
    for i in range(n):
        pipe = Pipe(f"tcp://127.0.0.1:{i + 1}", MessageQueue(10), MessageQueue(10), False)
        pipe.peer = zmtp.PeerInfo(
            socket_type="PULL",
            identity=b"",
            properties={"X-QoS": b"1", "X-QoS-Hash": b"xs"},
            zmtp_version=(3, 1),
            mechanism="NULL",
            endpoint=pipe.endpoint,
            address=f"peer-{i}",
        )
        assert runtime.validate_peer(pipe, pipe.peer) is None
        pipes.append(pipe)
    return runtime, pipes


def test_level_1_ack_settles_the_copy_sent_on_its_own_connection() -> None:
    """Two byte-identical messages in flight on two connections: the ACK from the second
    settles the copy written there, never the older one still un-ACKed on the first (which a
    lost first connection must fail over)."""
    runtime, (a, b) = _runtime_and_pipes(2)
    first, second = [b"same"], [b"same"]
    r1, r2 = runtime.register(first), runtime.register(second)
    runtime.before_send_batch(a, [first])
    runtime.before_send_batch(b, [second])
    ack = Command(b"ACK", b"x" + digest_x([b"same"]))
    runtime.on_command_batch(b, [ack])
    assert r2.outcome == Delivered("peer-1") and not r1.done
    assert runtime.tracker.entries(a) and not runtime.tracker.entries(b)
    runtime.on_command_batch(a, [ack])
    assert r1.outcome == Delivered("peer-0") and runtime.in_flight == 0
