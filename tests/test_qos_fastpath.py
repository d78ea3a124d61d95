"""The QoS hot paths keep their shape: what must cost nothing extra per message does not.

These check structure and behaviour, never speed (the figures are in docs/performance.md).
"""

from __future__ import annotations

import pytest

import zmtp
import zmtp_qos
from tests._qos_runtime import handshaken_pipes, qos_runtime, stub_pipe
from zmtp.protocol.frames import Command
from zmtp_qos.digest import digest_x
from zmtp_qos.results import Delivered


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


def test_level_1_ack_settles_the_copy_sent_on_its_own_connection() -> None:
    """Two byte-identical messages in flight on two connections: the ACK from the second
    settles the copy written there, never the older one still un-ACKed on the first (which a
    lost first connection must fail over)."""
    runtime, _ = qos_runtime(1, identity=b"")
    a, b = handshaken_pipes(runtime, 2)
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


class _Frames:
    """Where a stub pipe's ``send_command_frames`` goes."""

    def __init__(self) -> None:
        self.out: list[bytes] = []

    def send_command_frames(self, frames: list[bytes]) -> None:
        self.out.append(b"".join(frames))


@pytest.mark.parametrize("level", [1, 2, 3])
@pytest.mark.parametrize("unknown", [False, True])
def test_a_run_of_acknowledgements_as_wire_bytes_settles_as_commands_do(
    level: int, unknown: bool
) -> None:
    """zmtp hands a read's ACKs (COMPs) over as one CommandRun (command_runs): each known
    digest settles its receipt, an unknown one is ignored, and at levels 2-3 exactly the
    settled ones get a CLR echoing their data, in order (built in one piece when all are
    known, frame by frame otherwise)."""
    from zmtp.protocol.frames import FrameDecoder, encode_command

    runtime, _ = qos_runtime(level)
    pipe = stub_pipe(level, capacity=10)
    frames = _Frames()
    pipe.stream = frames  # type: ignore[assignment]
    messages = [[b"m%d" % i] for i in range(6)]
    receipts = [runtime.register(m) for m in messages]
    runtime.before_send_batch(pipe, messages)
    refs = [b"x" + digest_x(m) for m in messages]
    if unknown:
        refs.insert(3, b"x" + bytes(8))
    name = runtime.settling
    decoder = FrameDecoder(-1, 65536)
    decoder.fast_commands = True
    decoder.set_command_runs(dict(runtime.command_runs()))
    (run,) = decoder.feed(b"".join(encode_command(name, ref) for ref in refs))
    runtime.on_command_batch(pipe, [run])
    assert [r.outcome for r in receipts] == [Delivered("peer")] * 6
    assert runtime.in_flight == 0
    expected = [] if level == 1 else [b"".join(encode_command(b"CLR", r) for r in refs)]
    if unknown and level >= 2:
        expected = [b"".join(encode_command(b"CLR", r) for r in refs if r[1:] != bytes(8))]
    assert frames.out == expected
