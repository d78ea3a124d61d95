"""The QoS hot paths keep their shape: what must cost nothing extra per message does not.

These check structure and behaviour, never speed (the figures are in docs/performance.md).
"""

from __future__ import annotations

import pytest

import zmtp
import zmtp_qos


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
