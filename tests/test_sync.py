"""zmtp.sync: blocking sockets, against each other and live against pyzmq (libzmq).

No event loop in these tests: they are plain synchronous code, as a pyzmq user writes it. Every
wait is bounded (recv_timeout on our side, RCVTIMEO on pyzmq's, join timeouts on threads).
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
import threading
from collections.abc import Iterator

import pytest
import zmq

import zmtp
import zmtp.proxy
import zmtp.sync

#: Bound for any single blocking operation in these tests (seconds).
OP = 10.0


@pytest.fixture
def ctx() -> Iterator[zmq.Context[zmq.Socket[bytes]]]:
    context: zmq.Context[zmq.Socket[bytes]] = zmq.Context()
    yield context
    context.destroy(linger=0)


def pyzmq_socket(ctx: zmq.Context[zmq.Socket[bytes]], kind: int) -> zmq.Socket[bytes]:
    sock = ctx.socket(kind)
    sock.setsockopt(zmq.RCVTIMEO, int(OP * 1000))
    sock.setsockopt(zmq.SNDTIMEO, int(OP * 1000))
    sock.setsockopt(zmq.LINGER, 0)
    return sock


def test_push_pull_bind_returns_real_endpoint() -> None:
    with (
        zmtp.sync.Socket(zmtp.PULL, recv_timeout=OP) as pull,
        zmtp.sync.Socket(zmtp.PUSH) as push,
    ):
        endpoint = pull.bind("tcp://127.0.0.1:*")
        assert not endpoint.endswith(":*")
        assert pull.last_endpoint == endpoint
        assert push.connect(endpoint) == endpoint
        push.send(b"hello")
        push.send_multipart([b"a", "b", bytearray(b"c")])
        assert pull.recv() == b"hello"
        assert pull.recv_multipart() == [b"a", b"b", b"c"]
    assert pull.closed and push.closed
    with pytest.raises(zmtp.SocketClosed):
        pull.recv()


def test_many_messages_keep_order_across_the_buffers() -> None:
    count = 5 * zmtp.sync.SEND_BUFFER + 7
    with (
        zmtp.sync.Socket(zmtp.PULL, recv_timeout=OP) as pull,
        zmtp.sync.Socket(zmtp.PUSH) as push,
    ):
        push.connect(pull.bind("tcp://127.0.0.1:*"))
        sender = threading.Thread(target=lambda: [push.send(b"%d" % i) for i in range(count)])
        sender.start()
        got = [pull.recv() for _ in range(count)]
        sender.join(OP)
    assert got == [b"%d" % i for i in range(count)]


def test_recv_refuses_multipart_without_losing_it() -> None:
    with (
        zmtp.sync.Socket(zmtp.PAIR, recv_timeout=OP) as a,
        zmtp.sync.Socket(zmtp.PAIR, recv_timeout=OP) as b,
    ):
        b.connect(a.bind("inproc://sync-multipart"))
        b.send_multipart([b"one", b"two"])
        with pytest.raises(ValueError, match="recv_multipart"):
            a.recv()
        assert a.recv_multipart() == [b"one", b"two"]


def test_recv_timeout_raises_timeout_error() -> None:
    with zmtp.sync.Socket(zmtp.PULL, recv_timeout=0.2) as pull:
        pull.bind("tcp://127.0.0.1:*")
        with pytest.raises(TimeoutError):
            pull.recv()


def test_queued_send_times_out_when_the_buffer_stays_full() -> None:
    # No peer: the async socket takes nothing, so the send buffer fills and then waits.
    with zmtp.sync.Socket(zmtp.PUSH, send_timeout=0.2, linger=0) as push:
        for i in range(zmtp.sync.SEND_BUFFER):
            push.send(b"%d" % i)
        with pytest.raises(TimeoutError, match="send_timeout"):
            push.send(b"one too many")


def test_direct_send_reports_state_errors_at_once() -> None:
    with zmtp.sync.Socket(zmtp.REQ, linger=0) as req:
        req.connect("tcp://127.0.0.1:1")
        req.send(b"request")
        with pytest.raises(zmtp.InvalidState):
            req.send(b"second request")


def test_readable_consumes_nothing() -> None:
    with (
        zmtp.sync.Socket(zmtp.PULL, recv_timeout=OP) as pull,
        zmtp.sync.Socket(zmtp.PUSH) as push,
    ):
        push.connect(pull.bind("inproc://sync-readable"))
        assert not pull.readable()
        push.send(b"x")
        monitor_free_wait = threading.Event()
        for _ in range(1000):  # bounded wait for the pump to deliver (inproc, no timing)
            if pull.readable():
                break
            monitor_free_wait.wait(0.01)
        assert pull.readable()
        assert pull.readable()  # asking twice consumes nothing either
        assert pull.recv() == b"x"
        assert not pull.readable()


def test_monitor_reports_listening_and_handshake() -> None:
    with (
        zmtp.sync.Socket(zmtp.PULL) as pull,
        zmtp.sync.Socket(zmtp.PUSH) as push,
    ):
        monitor = pull.monitor()
        endpoint = pull.bind("tcp://127.0.0.1:*")
        event = monitor.wait_for(zmtp.Listening, timeout=OP)
        assert event.endpoint == endpoint
        push.connect(endpoint)
        monitor.wait_for(zmtp.HandshakeSucceeded, timeout=OP)
        assert [p.socket_type for p in pull.peers] == ["PUSH"]
    assert monitor.wait_for(zmtp.MonitorStopped, timeout=OP)


def test_several_threads_send_on_one_socket() -> None:
    threads, each = 4, 500
    with (
        zmtp.sync.Socket(zmtp.PULL, recv_timeout=OP) as pull,
        zmtp.sync.Socket(zmtp.PUSH) as push,
    ):
        push.connect(pull.bind("tcp://127.0.0.1:*"))

        def sender(n: int) -> None:
            for i in range(each):
                push.send_multipart([b"%d" % n, b"%d" % i])

        workers = [threading.Thread(target=sender, args=(n,)) for n in range(threads)]
        for w in workers:
            w.start()
        got = [pull.recv_multipart() for _ in range(threads * each)]
        for w in workers:
            w.join(OP)
    for n in range(threads):  # each thread's messages whole and in its own order
        assert [i for t, i in got if t == b"%d" % n] == [b"%d" % i for i in range(each)]


def test_one_thread_receives_while_another_sends() -> None:
    rounds = 200
    with (
        zmtp.sync.Socket(zmtp.DEALER, recv_timeout=OP) as dealer,
        zmtp.sync.Socket(zmtp.ROUTER, recv_timeout=OP) as router,
    ):
        dealer.connect(router.bind("tcp://127.0.0.1:*"))
        received: list[bytes] = []

        def receive() -> None:
            for _ in range(rounds):
                received.append(dealer.recv())

        receiver = threading.Thread(target=receive)
        receiver.start()  # blocked in recv while this thread sends on the same socket
        for i in range(rounds):
            dealer.send(b"%d" % i)
            ident, body = router.recv_multipart()
            router.send_multipart([ident, b"re:" + body])
        receiver.join(OP)
    assert received == [b"re:%d" % i for i in range(rounds)]


def test_close_from_another_thread_wakes_a_blocked_recv() -> None:
    pull = zmtp.sync.Socket(zmtp.PULL)
    pull.bind("tcp://127.0.0.1:*")
    outcome: list[BaseException] = []
    started = threading.Event()

    def receive() -> None:
        started.set()
        try:
            pull.recv()
        except BaseException as exc:
            outcome.append(exc)

    receiver = threading.Thread(target=receive)
    receiver.start()
    started.wait(OP)
    pull.close()
    receiver.join(OP)
    assert not receiver.is_alive()
    assert len(outcome) == 1 and isinstance(outcome[0], zmtp.SocketClosed)


def test_interpreter_exit_with_open_sockets_does_not_hang() -> None:
    script = textwrap.dedent(
        """
        import threading
        import zmtp, zmtp.sync

        pull = zmtp.sync.Socket(zmtp.PULL)
        pull.bind("tcp://127.0.0.1:*")
        push = zmtp.sync.Socket(zmtp.PUSH)  # default linger: wait for ever
        push.connect("tcp://127.0.0.1:1")  # nobody there: the message can never go
        push.send(b"undeliverable")
        threading.Thread(target=pull.recv, daemon=True).start()  # blocked at exit
        req = zmtp.sync.Socket(zmtp.REQ)
        req.connect(pull.last_endpoint)
        print("ok", flush=True)
        """
    )
    result = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=30
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout == "ok\n"


# ------------------------------------------------------------------- live against pyzmq


def test_sync_req_against_pyzmq_rep(ctx: zmq.Context[zmq.Socket[bytes]]) -> None:
    rep = pyzmq_socket(ctx, zmq.REP)
    port = rep.bind_to_random_port("tcp://127.0.0.1")

    def serve() -> None:
        for _ in range(3):
            rep.send(b"re:" + rep.recv())

    server = threading.Thread(target=serve)
    server.start()
    with zmtp.sync.Socket(zmtp.REQ, recv_timeout=OP) as req:
        req.connect(f"tcp://127.0.0.1:{port}")
        for i in range(3):
            req.send(b"%d" % i)
            assert req.recv() == b"re:%d" % i
    server.join(OP)
    assert not server.is_alive()


def test_pyzmq_push_to_sync_pull_and_back(ctx: zmq.Context[zmq.Socket[bytes]]) -> None:
    with (
        zmtp.sync.Socket(zmtp.PULL, recv_timeout=OP) as pull,
        zmtp.sync.Socket(zmtp.PUSH) as push,
    ):
        theirs_push = pyzmq_socket(ctx, zmq.PUSH)
        theirs_push.connect(pull.bind("tcp://127.0.0.1:*"))
        theirs_pull = pyzmq_socket(ctx, zmq.PULL)
        port = theirs_pull.bind_to_random_port("tcp://127.0.0.1")
        push.connect(f"tcp://127.0.0.1:{port}")
        for i in range(100):
            theirs_push.send_multipart([b"m", b"%d" % i])
        assert [pull.recv_multipart() for _ in range(100)] == [
            [b"m", b"%d" % i] for i in range(100)
        ]
        for i in range(100):
            push.send(b"%d" % i)
        assert [theirs_pull.recv() for _ in range(100)] == [b"%d" % i for i in range(100)]


def test_serialisation_helpers_against_pyzmq(ctx: zmq.Context[zmq.Socket[bytes]]) -> None:
    obj = {"text": "héllo", "n": [1, 2.5, None], "nested": {"ok": True}}
    with zmtp.sync.Socket(zmtp.PAIR, recv_timeout=OP) as ours:
        theirs = pyzmq_socket(ctx, zmq.PAIR)
        theirs.connect(ours.bind("tcp://127.0.0.1:*"))
        ours.send_string("héllo", encoding="latin-1")
        assert theirs.recv_string(encoding="latin-1") == "héllo"
        ours.send_json(obj)
        assert theirs.recv_json() == obj
        ours.send_pyobj({1, 2, 3})
        assert theirs.recv_pyobj() == {1, 2, 3}
        ours.send_serialized(obj, lambda o: [b"json", zmtp.serialize.encode_json(o)])
        assert theirs.recv_multipart() == [b"json", zmtp.serialize.encode_json(obj)]
        theirs.send_string("zurück")
        assert ours.recv_string() == "zurück"
        theirs.send_json(obj)
        assert ours.recv_json() == obj
        theirs.send_pyobj((1, "two"))
        assert ours.recv_pyobj() == (1, "two")
        theirs.send_multipart([b"a", b"b"])
        assert ours.recv_serialized(lambda parts: b"+".join(parts)) == b"a+b"
        with pytest.raises(TypeError, match="str"):
            ours.send_string(b"bytes")  # type: ignore[arg-type]


def test_req_send_that_cannot_go_times_out_at_once() -> None:
    # immediate: no connection, so the REQ cannot send: the send itself reports it, and the
    # REQ may try again (the request never left).
    with zmtp.sync.Socket(zmtp.REQ, immediate=True, send_timeout=0.2, linger=0) as req:
        req.connect("tcp://127.0.0.1:1")
        with pytest.raises(TimeoutError, match="send"):
            req.send(b"request")
        with pytest.raises(TimeoutError, match="send"):
            req.send(b"again")  # not InvalidState: nothing is pending


def test_rep_must_receive_before_sending() -> None:
    with zmtp.sync.Socket(zmtp.REP) as rep, pytest.raises(zmtp.InvalidState, match="REP"):
        rep.send(b"unasked")


def test_sync_steerable_proxy_between_pyzmq_req_and_rep(
    ctx: zmq.Context[zmq.Socket[bytes]],
) -> None:
    with (
        zmtp.sync.Socket(zmtp.ROUTER, linger=0) as frontend,
        zmtp.sync.Socket(zmtp.DEALER, linger=0) as backend,
        zmtp.sync.Socket(zmtp.PAIR, linger=0) as control,
        zmtp.sync.Socket(zmtp.PAIR, linger=0) as commander,
    ):
        front, back = frontend.bind("tcp://127.0.0.1:*"), backend.bind("tcp://127.0.0.1:*")
        commander.connect(control.bind("inproc://sync-proxy-control"))
        result: list[zmtp.proxy.ProxyStatistics] = []
        broker = threading.Thread(
            target=lambda: result.append(
                zmtp.sync.steerable_proxy(frontend, backend, None, control)
            )
        )
        broker.start()
        rep = pyzmq_socket(ctx, zmq.REP)
        rep.connect(back)
        req = pyzmq_socket(ctx, zmq.REQ)
        req.connect(front)
        server = threading.Thread(target=lambda: rep.send(b"re:" + rep.recv()))
        server.start()
        req.send(b"via the broker")
        assert req.recv() == b"re:via the broker"
        commander.send(b"TERMINATE")
        broker.join(OP)
        server.join(OP)
        assert not broker.is_alive()
        assert result[0].frontend.messages_in == 1 and result[0].backend.messages_in == 1


def test_req_refused_multipart_reply_does_not_answer_the_next_request() -> None:
    with (
        zmtp.sync.Socket(zmtp.ROUTER, recv_timeout=OP) as router,
        zmtp.sync.Socket(zmtp.REQ, recv_timeout=OP) as req,
    ):
        req.connect(router.bind("tcp://127.0.0.1:*"))
        req.send(b"first")
        ident, empty, _ = router.recv_multipart()
        router.send_multipart([ident, empty, b"two", b"parts"])
        with pytest.raises(ValueError, match="recv_multipart"):
            req.recv()  # kept for recv_multipart()...
        req.send(b"second")  # ...until a new request makes it stale
        ident, empty, body = router.recv_multipart()
        router.send_multipart([ident, empty, b"re:" + body])
        assert req.recv() == b"re:second"
