"""One factory for the QoS tests that drive a :class:`~zmtp_qos.runtime.QoSRuntime` on stub
pipes, with no socket and no I/O (``from tests._qos_runtime import qos_runtime, stub_pipe``).

Why shared: several test files need "a PUSH runtime and pipes past the handshake", and
near-identical set-ups drift apart when the runtime's constructor or ``PeerState`` changes.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import zmtp
from zmtp.engine.pipe import Pipe
from zmtp.engine.queue import MessageQueue
from zmtp.protocol.properties import Properties
from zmtp_qos.config import QoSConfig
from zmtp_qos.digest import digest_x
from zmtp_qos.results import DeadLetter, Delivered
from zmtp_qos.runtime import PeerState, QoSRuntime

#: What ``on_dead_letter`` receives, collected by :func:`qos_runtime`.
Letters = list[tuple[DeadLetter, Any]]


def qos_runtime(
    level: int = 1,
    *,
    socket_type: str = "PUSH",
    identity: bytes = b"me",
    hwm: int = 100,
    on_dead_letter: Callable[[DeadLetter, Any], None] | None = None,
) -> tuple[QoSRuntime, Letters]:
    """A runtime at ``level`` with ``send_hwm`` and ``recv_hwm`` of ``hwm``, and the list its
    dead letters go to (as ``(letter, receipt)``, unless ``on_dead_letter`` is given)."""
    letters: Letters = []

    def collect(letter: DeadLetter, receipt: Any) -> None:
        letters.append((letter, receipt))

    runtime = QoSRuntime(
        level,
        QoSConfig(),
        socket_type,
        send_hwm=hwm,
        recv_hwm=hwm,
        identity=identity,
        on_dead_letter=on_dead_letter
        or (lambda letter, receipt: letters.append((letter, receipt))),
        wake_senders=lambda: None,
    )
    return runtime, letters


def stub_pipe(
    level: int,
    *,
    port: int = 1,
    name: str = "peer",
    anchor: bytes = b"peer",
    capacity: int = 100,
) -> Pipe:
    """A tcp pipe whose peer state is what a passed level-``level`` handshake leaves (hash
    ``x``; anchor ``anchor`` at levels 2-3, the pipe itself at level 1), delivering as
    ``Delivered(name)``. Nothing is connected behind it."""
    pipe = Pipe(f"tcp://127.0.0.1:{port}", MessageQueue(capacity), MessageQueue(capacity), False)
    state = PeerState(anchor if level >= 2 else None, "x", digest_x)
    state.key = pipe if level == 1 else state.anchor
    state.delivered = Delivered(name)
    pipe.extension_state = state
    return pipe


def handshaken_pipes(runtime: QoSRuntime, n: int, *, capacity: int = 10) -> list[Pipe]:
    """``n`` tcp pipes to level-1 PULL peers ``peer-0``, ``peer-1``, ... that passed the
    runtime's own handshake check (``validate_peer``, asserted)."""
    pipes = []
    for i in range(n):
        pipe = Pipe(
            f"tcp://127.0.0.1:{i + 1}", MessageQueue(capacity), MessageQueue(capacity), False
        )
        pipe.peer = zmtp.PeerInfo(
            socket_type="PULL",
            identity=b"",
            properties=Properties({"X-QoS": b"1", "X-QoS-Hash": b"xs"}),
            zmtp_version=(3, 1),
            mechanism="NULL",
            endpoint=pipe.endpoint,
            address=f"peer-{i}",
        )
        assert runtime.validate_peer(pipe, pipe.peer) is None
        pipes.append(pipe)
    return pipes
