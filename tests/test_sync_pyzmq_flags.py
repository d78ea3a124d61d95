"""pyzmq's send/recv flags on zmtp.sync, and its direct send's checks (read from slots).

The blocking twin of tests/test_pyzmq_flags.py: ``NOBLOCK`` raises ``TimedOut`` where the
call would wait, ``SNDMORE`` holds parts for the next send (on the direct, queued and
answering send paths), and the direct send (``_send_now``, which reads the send check from
its core's slots, docs/performance.md) still refuses what it must. Plain synchronous code;
every wait is bounded by ``recv_timeout``.
"""

from __future__ import annotations

import os
import threading

import pytest

import zmtp
import zmtp.sync
from zmtp.routing.dealer_router import Router

OP = 10.0


def _endpoint() -> str:
    return f"inproc://sync-pyzmq-flags-{os.urandom(6).hex()}"


def _poll_recv(sock: zmtp.sync.Socket) -> list[bytes]:
    """A pyzmq-style NOBLOCK polling loop, bounded."""
    for _ in range(100_000):
        try:
            return sock.recv_multipart(zmtp.NOBLOCK)
        except zmtp.TimedOut:
            sock.readable()  # lets the loop run a little, as pyzmq code sleeps or polls
    raise AssertionError("nothing arrived")


def test_noblock_send_without_a_peer_raises_at_once() -> None:
    """A queued type (PUSH) with nothing buffered: refused at once, as pyzmq's Again (not
    buffered as a send_timeout=0 send is)."""
    with zmtp.sync.Socket(zmtp.PUSH) as push, zmtp.sync.Socket(zmtp.REQ) as req:
        push.bind(_endpoint())
        with pytest.raises(zmtp.TimedOut, match="NOBLOCK"):
            push.send(b"x", zmtp.NOBLOCK)
        with pytest.raises(TimeoutError):
            push.send_multipart([b"a", b"b"], flags=zmtp.DONTWAIT)
        req.bind(_endpoint())
        with pytest.raises(zmtp.TimedOut):
            req.send(b"x", zmtp.NOBLOCK)


def test_noblock_send_and_recv_with_a_peer() -> None:
    endpoint = _endpoint()
    with (
        zmtp.sync.Socket(zmtp.PULL, recv_timeout=OP) as pull,
        zmtp.sync.Socket(zmtp.PUSH) as push,
    ):
        push.connect(pull.bind(endpoint))
        with pytest.raises(zmtp.TimedOut, match="NOBLOCK"):
            pull.recv(zmtp.NOBLOCK)
        push.send(b"one", zmtp.NOBLOCK)
        push.send_json({"two": 2}, zmtp.NOBLOCK)
        push.send(b"three", 0)
        assert _poll_recv(pull) == [b"one"]
        assert pull.recv_json() == {"two": 2}
        assert pull.recv() == b"three"


def test_noblock_send_behind_buffered_sends_keeps_the_order() -> None:
    """PUSH sends buffered while no peer is up: a NOBLOCK send joins them (there is room)
    rather than overtaking them; all arrive in order once a peer connects."""
    endpoint = _endpoint()
    with zmtp.sync.Socket(zmtp.PUSH) as push:
        push.connect(endpoint)
        push.send(b"first")  # buffered for the peer to come
        push.send(b"second", zmtp.NOBLOCK)
        with zmtp.sync.Socket(zmtp.PULL, recv_timeout=OP) as pull:
            pull.bind(endpoint)
            assert pull.recv() == b"first"
            assert pull.recv() == b"second"


def test_sndmore_on_a_queued_type_keeps_the_order() -> None:
    endpoint = _endpoint()
    with zmtp.sync.Socket(zmtp.PUSH) as push:
        push.connect(endpoint)
        push.send(b"before")  # buffered: the joined message must not overtake it
        push.send(b"a", zmtp.SNDMORE)
        push.send_multipart([b"b", "c"], zmtp.SNDMORE)
        push.send_string("d")
        push.send(b"e", zmtp.SNDMORE)
        push.send_multipart([b"f"])
        with zmtp.sync.Socket(zmtp.PULL, recv_timeout=OP) as pull:
            pull.bind(endpoint)
            assert pull.recv_multipart() == [b"before"]
            assert pull.recv_multipart() == [b"a", b"b", b"c", b"d"]
            assert pull.recv_multipart() == [b"e", b"f"]


def test_sndmore_router_dealer_broker_idiom() -> None:
    """ROUTER replies part by part (identity, delimiter, body): the direct send path; the
    DEALER answers right after a receive: the answering path."""
    endpoint = _endpoint()
    with (
        zmtp.sync.Socket(zmtp.ROUTER, recv_timeout=OP) as router,
        zmtp.sync.Socket(zmtp.DEALER, identity=b"w1", recv_timeout=OP) as dealer,
    ):
        dealer.connect(router.bind(endpoint))
        dealer.send(b"", zmtp.SNDMORE)
        dealer.send(b"ready")
        identity, empty, body = router.recv_multipart()
        assert (identity, empty, body) == (b"w1", b"", b"ready")
        for i in range(3):
            router.send(identity, zmtp.SNDMORE)
            router.send(b"", zmtp.SNDMORE)
            router.send(b"job %d" % i)
            assert dealer.recv_multipart() == [b"", b"job %d" % i]
            dealer.send(b"", zmtp.SNDMORE)  # the answering path joins them
            dealer.send(b"done %d" % i)
            assert router.recv_multipart() == [b"w1", b"", b"done %d" % i]


def test_sndmore_held_parts_drop_with_a_failed_noblock_send() -> None:
    endpoint = _endpoint()
    with zmtp.sync.Socket(zmtp.PUSH) as push:
        push.bind(endpoint)
        push.send(b"head", zmtp.SNDMORE)
        with pytest.raises(zmtp.TimedOut):
            push.send(b"tail", zmtp.NOBLOCK)
        with zmtp.sync.Socket(zmtp.PULL, recv_timeout=OP) as pull:
            pull.connect(endpoint)
            push.send(b"head", zmtp.SNDMORE)
            push.send(b"tail")
            assert pull.recv_multipart() == [b"head", b"tail"]


def test_sndmore_on_req_rep() -> None:
    endpoint = _endpoint()
    with (
        zmtp.sync.Socket(zmtp.REP, recv_timeout=OP) as rep,
        zmtp.sync.Socket(zmtp.REQ, recv_timeout=OP) as req,
    ):
        req.connect(rep.bind(endpoint))
        req.send(b"q1", zmtp.SNDMORE)
        req.send(b"q2")
        with pytest.raises(zmtp.InvalidState):
            req.send(b"again", zmtp.SNDMORE)  # out of turn: refused at the first part
        assert rep.recv_multipart() == [b"q1", b"q2"]
        rep.send(b"r1", zmtp.SNDMORE)
        rep.send(b"r2")
        assert req.recv_multipart() == [b"r1", b"r2"]


def test_noblock_recv_refusals() -> None:
    with zmtp.sync.Socket(zmtp.PUSH) as push:
        with pytest.raises(zmtp.UnsupportedOperation):
            push.recv(zmtp.NOBLOCK)
        with pytest.raises(zmtp.InvalidArgument, match="only pyzmq's NOBLOCK"):
            push.recv(zmtp.SNDMORE)
        with pytest.raises(zmtp.InvalidArgument, match="NOBLOCK"):
            push.send(b"x", 4)
        with pytest.raises(zmtp.WrongType, match="encoding="):
            push.send_string("x", "latin-1")  # type: ignore[arg-type]
    with pytest.raises(zmtp.SocketClosed):
        push.send(b"x", zmtp.NOBLOCK)
    with pytest.raises(zmtp.SocketClosed):
        push.send(b"x", zmtp.SNDMORE)


def test_noblock_recv_does_not_wait_for_a_blocked_receiver() -> None:
    """Another thread blocked in recv holds the receive: a NOBLOCK recv says TimedOut at once
    instead of queueing behind it."""
    endpoint = _endpoint()
    with (
        zmtp.sync.Socket(zmtp.PULL, recv_timeout=OP) as pull,
        zmtp.sync.Socket(zmtp.PUSH) as push,
    ):
        push.connect(pull.bind(endpoint))
        got: list[bytes] = []
        waiter = threading.Thread(target=lambda: got.append(pull.recv()))
        waiter.start()
        try:
            for _ in range(1000):
                try:
                    pull.recv(zmtp.NOBLOCK)
                except zmtp.TimedOut:
                    break
            else:
                pytest.fail("NOBLOCK never refused")
        finally:
            push.send(b"for the waiter")
            waiter.join(OP)
        assert got == [b"for the waiter"]


def test_copy_and_track_change_nothing() -> None:
    endpoint = _endpoint()
    with (
        zmtp.sync.Socket(zmtp.PULL, recv_timeout=OP) as pull,
        zmtp.sync.Socket(zmtp.PUSH) as push,
    ):
        push.connect(pull.bind(endpoint))
        push.send(bytearray(b"buf"), copy=False, track=True)
        push.send_multipart([memoryview(b"mv")], copy=False)
        assert pull.recv(copy=False) == b"buf"
        assert pull.recv_multipart(copy=False, track=True) == [b"mv"]


# ---------------------------------------------------------------- the direct send's checks


def test_direct_send_refuses_a_rep_without_a_request() -> None:
    with zmtp.sync.Socket(zmtp.REP) as rep:
        rep.bind(_endpoint())
        with pytest.raises(zmtp.InvalidState, match="no request to answer"):
            rep.send(b"unasked")


def test_direct_send_refuses_req_out_of_turn_and_queues_nothing() -> None:
    endpoint = _endpoint()
    with (
        zmtp.sync.Socket(zmtp.REP, recv_timeout=OP) as rep,
        zmtp.sync.Socket(zmtp.REQ, recv_timeout=OP) as req,
    ):
        req.connect(rep.bind(endpoint))
        for round_ in range(20):  # past any cadence: every direct send is checked
            req.send(b"request %d" % round_)
            with pytest.raises(zmtp.InvalidState, match="already pending"):
                req.send(b"out of turn")
            with pytest.raises(zmtp.InvalidState):
                req.send_multipart([b"out", b"of turn"])
            assert rep.recv() == b"request %d" % round_
            rep.send(b"reply %d" % round_)
            assert req.recv() == b"reply %d" % round_


def test_direct_send_refuses_a_closed_socket() -> None:
    endpoint = _endpoint()
    with zmtp.sync.Socket(zmtp.REP) as rep:
        rep.bind(endpoint)
        req = zmtp.sync.Socket(zmtp.REQ)
        req.connect(endpoint)
        req.close()
        with pytest.raises(zmtp.SocketClosed):
            req.send(b"after close")
        router = zmtp.sync.Socket(zmtp.ROUTER)
        router.close()
        with pytest.raises(zmtp.SocketClosed):
            router.send_multipart([b"id", b"after close"])


def test_direct_send_of_an_unchecked_type_never_runs_check_send(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """ROUTER (no send check) sends directly: ``check_send`` is never called (patched on
    the class before the socket reads it), and every message arrives."""

    def refuse(self: object, parts: list[bytes]) -> None:
        raise AssertionError("check_send ran for a type without a send check")

    monkeypatch.setattr(Router, "check_send", refuse)
    endpoint = _endpoint()
    with (
        zmtp.sync.Socket(zmtp.ROUTER, router_mandatory=True) as router,
        zmtp.sync.Socket(zmtp.DEALER, identity=b"d", recv_timeout=OP) as dealer,
    ):
        dealer.connect(router.bind(endpoint))
        dealer.send(b"hello")
        assert router.recv_multipart() == [b"d", b"hello"]
        for i in range(50):
            router.send_multipart([b"d", b"%d" % i])
        assert [dealer.recv() for _ in range(50)] == [b"%d" % i for i in range(50)]


def test_pyzmq_socket_type_constants_are_accepted() -> None:
    zmq = pytest.importorskip("zmq")
    endpoint = _endpoint()
    with zmtp.sync.Context(recv_timeout=OP) as ctx:
        pull = ctx.socket(zmq.PULL)
        push = ctx.socket(zmq.PUSH)
        push.connect(pull.bind(endpoint))
        push.send(b"typed by pyzmq")
        assert (pull.socket_type, pull.recv()) == ("PULL", b"typed by pyzmq")
