"""``zmtp cat --qos LEVEL`` end to end, in subprocesses, on both backends: the option comes from
the QoS layer's ``zmtp cat`` plugin (entry-point group ``zmtp.cli.cat``), never from zmtp.

Peers: other ``zmtp cat --qos`` processes, ``zmtp_qos`` sockets in their own processes
(``tests/_qos_peer.py``) and plain pyzmq sockets (which announce no QoS: refused). Pipes
included (``seq 5 | zmtp cat PUSH --qos 1 -c ...``)."""

from __future__ import annotations

import sys

import pytest

from tests import _cli
from tests._cli import Tool, cat, piped_into_zmtp

pytestmark = pytest.mark.interop
zmq = pytest.importorskip("zmq")
#: The pyzmq context fixture of tests/_cli.py, under the name these tests take it by.
context = _cli.context

BACKENDS = ["asyncio", "trio"]


def qos_peer(*args: str) -> Tool:
    return Tool([], command=[sys.executable, "-m", "tests._qos_peer", *args])


def bound_endpoint(tool: Tool) -> str:
    return tool.wait_for(lambda text: text.startswith("zmtp cat: bound "), stream="err").split()[-1]


def test_the_plugin_is_registered_as_an_entry_point() -> None:
    """The QoS layer reaches ``zmtp cat`` only through the entry point (a fresh
    ``pip install -e .`` registers it): ``--help`` lists its options in their own group."""
    from importlib.metadata import entry_points

    points = {point.name: point.value for point in entry_points(group="zmtp.cli.cat")}
    assert points.get("qos") == "zmtp_qos.cat_plugin:QoSCatPlugin", points
    proc = cat("--help")
    assert proc.returncode == 0
    assert "delivery guarantees" in proc.stdout and "--dead-letter-timeout" in proc.stdout


@pytest.mark.parametrize("backend", BACKENDS)
def test_seq_piped_into_qos_push_reaches_a_zmtp_qos_pull(backend: str) -> None:
    """``seq 5 | zmtp cat PUSH --qos 1 -c ...`` into a zmtp_qos PULL in another process: all
    five arrive in order and the sender exits 0 once every receipt is Delivered."""
    pull = qos_peer("pull", "1", "5", backend)
    try:
        endpoint = pull.wait_for(lambda text: text.startswith("bound ")).split()[-1]
        proc = piped_into_zmtp(
            "seq 5", "cat", "PUSH", "--qos", "1", "-c", endpoint, "-t", "30", "--backend", backend
        )
        assert proc.returncode == 0, proc.stderr
        assert "dead letter" not in proc.stderr
        assert pull.finish() == 0, pull.err
    finally:
        pull.kill()
    assert pull.out[1:] == ["1", "2", "3", "4", "5"]


@pytest.mark.parametrize("backend", BACKENDS)
def test_level_3_pull_completes_each_message_for_a_zmtp_qos_push(backend: str) -> None:
    """A zmtp_qos PUSH at level 3 gets Delivered (a COMP) for each message only because the
    ``zmtp cat PULL --qos 3`` completes each one once it is printed."""
    pull = Tool(["cat", "PULL", "--qos", "3", "-b", "tcp://127.0.0.1:*", "-n", "3",
                 "--backend", backend])  # fmt: skip
    try:
        endpoint = bound_endpoint(pull)
        push = qos_peer("push", "3", endpoint, backend, "a", "b", "c")
        assert push.finish() == 0, push.err
        assert pull.finish() == 0, pull.err
    finally:
        pull.kill()
    assert push.out == ["Delivered", "Delivered", "Delivered"]
    assert pull.out == ["a", "b", "c"]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("level", [1, 3])
def test_qos_push_to_pull_delivers_every_line(backend: str, level: int) -> None:
    """Two ``zmtp cat`` processes at the same level: every line arrives, the sender exits 0
    once every receipt is Delivered (level 3: after the receiver completed each message)."""
    pull = Tool(["cat", "PULL", "--qos", str(level), "-b", "tcp://127.0.0.1:*", "-n", "3",
                 "--backend", backend])  # fmt: skip
    try:
        endpoint = bound_endpoint(pull)
        push = cat("PUSH", "--qos", str(level), "-c", endpoint, "-t", "30",
                   "--backend", backend, stdin="one\ntwo\nthree\n")  # fmt: skip
        assert push.returncode == 0, push.stderr
        assert "dead letter" not in push.stderr
        assert pull.finish() == 0, pull.err
    finally:
        pull.kill()
    assert pull.out == ["one", "two", "three"]


@pytest.mark.parametrize("level", ["1", "2"])
@pytest.mark.parametrize("backend", BACKENDS)
def test_qos_sender_nobody_connects_reports_dead_letters(backend: str, level: str) -> None:
    """Levels 1 and 2, no peer ever: after dead_letter_timeout both messages are dead letters
    (peer_timeout, no peer: docs/qos.md "When no peer takes a message"), printed on stderr
    in the output format, and the status is 1. Level 1 takes --dead-letter-timeout too (it
    was refused there, though the timeout applies at every level)."""
    proc = cat("PUSH", "--qos", level, "-c", "tcp://127.0.0.1:1", "--dead-letter-timeout", "0.2",
               "--linger", "0.5", "-f", "quoted", "--backend", backend,
               stdin='"x" "y"\n"z"\n')  # fmt: skip
    assert proc.returncode == 1, proc.stderr
    letters = [line for line in proc.stderr.splitlines() if "dead letter" in line]
    assert letters == [
        'zmtp cat: dead letter (peer_timeout, peer -): "x" "y"',
        'zmtp cat: dead letter (peer_timeout, peer -): "z"',
    ], proc.stderr
    assert "Traceback" not in proc.stderr and "WARNING" not in proc.stderr.upper()


@pytest.mark.parametrize("backend", BACKENDS)
def test_qos_1_against_a_plain_pyzmq_pull_is_refused(context: object, backend: str) -> None:
    """A plain PULL announces no QoS: the handshake is refused (level mismatch), which is
    reported without -v, once; nothing is delivered and --timeout ends it with 2."""
    pull = context.socket(zmq.PULL)  # type: ignore[attr-defined]
    pull.linger = 0
    pull.bind("tcp://127.0.0.1:*")
    endpoint = pull.last_endpoint.decode()
    proc = cat("PUSH", "--qos", "1", "-c", endpoint, "-t", "1.5", "--linger", "0.2", "-d", "hi",
               "--backend", backend)  # fmt: skip
    assert proc.returncode == 2, proc.stderr
    refusals = [line for line in proc.stderr.splitlines() if "QoS mismatch" in line]
    assert len(refusals) == 1 and "local=1 peer=0" in refusals[0], proc.stderr
    assert "timed out after 1.5s: 1 of 1 messages not acknowledged" in proc.stderr
    assert pull.poll(0) == 0


@pytest.mark.parametrize("backend", BACKENDS)
def test_qos_0_is_plain_zmtp_with_a_pyzmq_pull(context: object, backend: str) -> None:
    """``--qos 0`` (the default) is plain ZMTP: a pyzmq PULL gets the lines."""
    pull = context.socket(zmq.PULL)  # type: ignore[attr-defined]
    pull.linger = 0
    pull.bind("tcp://127.0.0.1:*")
    endpoint = pull.last_endpoint.decode()
    proc = cat("PUSH", "--qos", "0", "-c", endpoint, "--backend", backend, stdin="a\nb\n")
    assert proc.returncode == 0, proc.stderr
    got = []
    for _ in range(2):
        assert pull.poll(30000)
        got.append(pull.recv_multipart())
    assert got == [[b"a"], [b"b"]]


def test_qos_errors() -> None:
    for kind in ("PUB", "DEALER"):
        proc = cat(kind, "--qos", "1", "-c", "tcp://127.0.0.1:1", "-d", "x")
        assert proc.returncode == 1, proc.stderr
        assert f"not {kind}" in proc.stderr or f"{kind} cannot have QoS 1" in proc.stderr
        assert "Traceback" not in proc.stderr
    proc = cat("PUSH", "--qos", "4", "-c", "tcp://127.0.0.1:1", "-d", "x")
    assert proc.returncode == 2 and "invalid choice" in proc.stderr
    proc = cat("PUSH", "--qos", "0", "--dead-letter-timeout", "1", "-c", "tcp://127.0.0.1:1",
               "-d", "x")  # fmt: skip
    assert proc.returncode == 1 and "needs --qos 1, 2 or 3" in proc.stderr, proc.stderr


@pytest.mark.parametrize("backend", BACKENDS)
def test_qos_3_req_rep_round_trip(backend: str) -> None:
    rep = Tool(["cat", "REP", "--qos", "3", "-b", "tcp://127.0.0.1:*", "--echo", "-n", "2",
                "--backend", backend])  # fmt: skip
    try:
        endpoint = bound_endpoint(rep)
        req = cat("REQ", "--qos", "3", "-c", endpoint, "-t", "30", "--backend", backend,
                  stdin="a\nb\n")  # fmt: skip
        assert req.returncode == 0, req.stderr
        assert req.stdout.splitlines() == ["a", "b"]
        assert rep.finish() == 0, rep.err
    finally:
        rep.kill()
    assert rep.out == ["a", "b"]


@pytest.mark.parametrize("backend", BACKENDS)
def test_qos_2_req_whose_rep_goes_away_reports_the_dead_letter(backend: str) -> None:
    """The REP prints the request and exits without answering (its input is empty): the
    request stays pinned to that REP's anchor, is dead-lettered after --dead-letter-timeout,
    and the REQ reports it (the request as given, not REQ's envelope) and exits 1."""
    rep = Tool(["cat", "REP", "--qos", "2", "-b", "tcp://127.0.0.1:*", "--backend", backend])
    try:
        endpoint = bound_endpoint(rep)
        req = cat("REQ", "--qos", "2", "-c", endpoint, "--dead-letter-timeout", "0.5",
                  "-t", "30", "--backend", backend, stdin="ping\n")  # fmt: skip
        assert rep.finish() == 0, rep.err
    finally:
        rep.kill()
    assert rep.out == ["ping"]
    assert req.returncode == 1, req.stderr
    assert "zmtp cat: dead letter (peer_timeout, peer " in req.stderr, req.stderr
    assert req.stderr.rstrip().endswith("): ping"), req.stderr


def test_qos_long_stream_keeps_only_pending_receipts() -> None:
    """More lines than the sender keeps receipts for (2 x KEEP_RECEIPTS): settled ones are
    dropped along the way and every line still arrives, once, in order."""
    from zmtp_qos.cat_plugin import KEEP_RECEIPTS

    count = 2 * KEEP_RECEIPTS + 452
    pull = Tool(["cat", "PULL", "--qos", "2", "-b", "tcp://127.0.0.1:*", "-n", str(count)])
    try:
        endpoint = bound_endpoint(pull)
        lines = "".join(f"{n}\n" for n in range(count))
        push = cat("PUSH", "--qos", "2", "-c", endpoint, "-t", "60", stdin=lines)
        assert push.returncode == 0, push.stderr
        assert pull.finish() == 0, pull.err
    finally:
        pull.kill()
    assert pull.out == [str(n) for n in range(count)]
