"""``zmtp.sync.Socket.recv`` spells out ``recv_multipart``'s fast path inline (a message
already fetched into the blocking socket's buffer is taken without a call), and falls back to
``recv_multipart`` otherwise. Whichever it takes, the results must be those of
``recv_multipart``: a one-part message's part; a multipart message refused with
``InvalidArgument`` and kept, whole and first, for the next receive.

A burst sent at once is fetched in batches, so after the first receive of a burst most of its
messages are already in the buffer (the inline path), while the first one (and any receive
that finds the buffer empty) waits through ``recv_multipart``: each script below meets both.
"""

from __future__ import annotations

import pytest

import zmtp
import zmtp.sync

OP = 10.0  # a bound on each receive: a passing test never waits that long

#: One-part and multipart messages, mixed, with the multipart ones also first and last.
BURST = [[b"m", b"first"], [b"a"], [b"b"], [b"c", b"d"], [b""], [b"e"], [b"x", b"y", b"z"]]


def _recv_all(pull: zmtp.sync.Socket, count: int) -> list[list[bytes]]:
    """Receive ``count`` messages through ``recv``, taking each refused multipart message with
    ``recv_multipart`` as the refusal says to."""
    got = []
    for _ in range(count):
        try:
            got.append([pull.recv()])
        except zmtp.InvalidArgument as refused:
            message = pull.recv_multipart()
            assert str(refused) == (
                f"received a {len(message)}-part message; use recv_multipart() for multipart"
            )
            got.append(message)
    return got


@pytest.mark.parametrize("transport", ["tcp", "inproc"])
@pytest.mark.parametrize("rounds", [1, 20])
def test_recv_agrees_with_recv_multipart_fetched_or_not(transport: str, rounds: int) -> None:
    where = "tcp://127.0.0.1:*" if transport == "tcp" else f"inproc://sync-recv-paths-{rounds}"
    with (
        zmtp.sync.Socket(zmtp.PULL, recv_timeout=OP) as pull,
        zmtp.sync.Socket(zmtp.PUSH) as push,
    ):
        push.connect(pull.bind(where))
        for _ in range(rounds):
            for message in BURST:
                push.send_multipart(message)
        assert _recv_all(pull, len(BURST) * rounds) == BURST * rounds
        push.send(b"after")  # nothing is left over: the next message is the next one sent
        assert pull.recv() == b"after"


def test_a_refused_multipart_message_waits_for_recv_multipart_however_long() -> None:
    """Refused twice by ``recv`` (the second time from where it was kept), still returned
    whole by ``recv_multipart``, and the messages behind it keep their order."""
    with (
        zmtp.sync.Socket(zmtp.PULL, recv_timeout=OP) as pull,
        zmtp.sync.Socket(zmtp.PUSH) as push,
    ):
        push.connect(pull.bind("inproc://sync-recv-paths-kept"))
        push.send_multipart([b"two", b"parts"])
        push.send(b"next")
        for _ in range(2):
            with pytest.raises(zmtp.InvalidArgument):
                pull.recv()
        assert pull.recv_multipart() == [b"two", b"parts"]
        assert pull.recv() == b"next"
