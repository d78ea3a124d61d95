"""zmtp.sync's event loop moving between threads (zmtp/sync_loop.py): the caller that waits
runs the loop itself, the background thread takes it when nobody does, and the hand-overs
between them keep every message, every timeout and Ctrl-C.

Plain synchronous code, as in tests/test_sync.py; every wait is bounded.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Callable

import pytest

import zmtp
import zmtp.sync
from zmtp.sync_loop import GRACE, shared_loop

#: Bound for any single blocking operation in these tests (seconds).
OP = 10.0


def run_script(source: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(source)],
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_a_caller_back_after_the_background_thread_took_the_loop() -> None:
    # Idle for longer than GRACE: the background thread runs the loop (delivering the queued
    # send meanwhile); the next blocking call asks for the loop back and gets its message.
    with (
        zmtp.sync.Socket(zmtp.PULL, recv_timeout=OP) as pull,
        zmtp.sync.Socket(zmtp.PUSH) as push,
    ):
        push.connect(pull.bind("tcp://127.0.0.1:*"))
        for i in range(5):
            push.send(b"%d" % i)
            threading.Event().wait(GRACE * 4)  # nobody drives: the background thread must
            assert pull.recv() == b"%d" % i


def test_queued_send_is_delivered_while_the_sender_does_something_else() -> None:
    got: list[bytes] = []
    with (
        zmtp.sync.Socket(zmtp.PULL, recv_timeout=OP) as pull,
        zmtp.sync.Socket(zmtp.PUSH) as push,
    ):
        push.connect(pull.bind("tcp://127.0.0.1:*"))
        receiver = threading.Thread(target=lambda: got.append(pull.recv()))
        receiver.start()
        push.send(b"while I sleep")  # this thread makes no other call until the join
        receiver.join(OP)
    assert got == [b"while I sleep"]


def test_answers_on_a_queued_type_keep_their_order_after_a_stream() -> None:
    # DEALER: a burst is queued; after a receive the next send goes out directly, but only
    # once nothing is queued ahead of it.
    with (
        zmtp.sync.Socket(zmtp.DEALER, recv_timeout=OP) as dealer,
        zmtp.sync.Socket(zmtp.ROUTER, recv_timeout=OP) as router,
    ):
        dealer.connect(router.bind("tcp://127.0.0.1:*"))
        dealer.send(b"hello")
        ident, _ = router.recv_multipart()
        for i in range(3 * zmtp.sync.SEND_BUFFER):
            dealer.send(b"%d" % i)
        router.send_multipart([ident, b"ping"])
        assert dealer.recv() == b"ping"
        dealer.send(b"answer")
        dealer.send(b"after")
        bodies = [router.recv_multipart()[1] for _ in range(3 * zmtp.sync.SEND_BUFFER + 2)]
    expected = [b"%d" % i for i in range(3 * zmtp.sync.SEND_BUFFER)] + [b"answer", b"after"]
    assert bodies == expected


def test_two_threads_ping_pong_on_their_own_sockets_at_once() -> None:
    rounds = 300
    errors: list[BaseException] = []

    def ping_pong(n: int) -> None:
        try:
            with (
                zmtp.sync.Socket(zmtp.REP, recv_timeout=OP) as rep,
                zmtp.sync.Socket(zmtp.REQ, recv_timeout=OP) as req,
            ):
                req.connect(rep.bind("tcp://127.0.0.1:*"))
                for i in range(rounds):
                    req.send(b"%d:%d" % (n, i))
                    rep.send(b"re:" + rep.recv())
                    assert req.recv() == b"re:%d:%d" % (n, i)
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=ping_pong, args=(n,)) for n in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(OP * 3)
    assert not any(t.is_alive() for t in threads)
    assert errors == []


def test_a_timeout_while_another_thread_runs_the_loop() -> None:
    # The loop is busy in another thread's long recv: this thread's recv is posted to it and
    # still times out on time.
    with (
        zmtp.sync.Socket(zmtp.PULL, recv_timeout=OP) as busy,
        zmtp.sync.Socket(zmtp.PULL, recv_timeout=0.2) as idle,
        zmtp.sync.Socket(zmtp.PUSH) as push,
    ):
        push.connect(busy.bind("tcp://127.0.0.1:*"))
        idle.bind("tcp://127.0.0.1:*")
        got: list[bytes] = []
        receiver = threading.Thread(target=lambda: got.append(busy.recv()))
        receiver.start()
        time.sleep(0.05)  # let it take the loop (not required for the outcome)
        start = time.monotonic()
        with pytest.raises(TimeoutError, match="recv_timeout"):
            idle.recv()
        assert time.monotonic() - start < OP / 2
        push.send(b"done")
        receiver.join(OP)
    assert got == [b"done"]


def test_blocking_call_from_inside_the_loop_is_refused() -> None:
    with zmtp.sync.Socket(zmtp.PULL) as pull:
        pull.bind("tcp://127.0.0.1:*")
        with pytest.raises(RuntimeError, match="own event loop"):
            shared_loop().run(pull.readable)  # readable() would wait for the loop it is in


def test_blocking_api_from_inside_an_asyncio_program() -> None:
    # This thread runs another loop, so it cannot run ours: its calls are posted.
    async def main() -> bytes:
        with (
            zmtp.sync.Socket(zmtp.PULL, recv_timeout=OP) as pull,
            zmtp.sync.Socket(zmtp.PUSH) as push,
        ):
            push.connect(pull.bind("tcp://127.0.0.1:*"))
            push.send(b"from asyncio")
            return pull.recv()

    assert asyncio.run(main()) == b"from asyncio"


def test_ctrl_c_in_a_blocked_recv_leaves_the_sockets_working() -> None:
    # SIGINT while the main thread runs the loop: KeyboardInterrupt comes out of recv, and
    # no task of the loop was hit by it (the same sockets still work afterwards).
    result = run_script(
        """
        import os, signal, threading
        import zmtp, zmtp.sync

        with zmtp.sync.Socket(zmtp.REP, recv_timeout=10) as rep, \\
                zmtp.sync.Socket(zmtp.REQ, recv_timeout=10) as req:
            req.connect(rep.bind("tcp://127.0.0.1:*"))
            req.send(b"warm-up")
            rep.send(rep.recv())
            req.recv()
            threading.Timer(0.3, os.kill, (os.getpid(), signal.SIGINT)).start()
            try:
                rep.recv()  # nothing comes: blocked until the SIGINT
            except KeyboardInterrupt:
                print("interrupted", flush=True)
            assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
            req.send(b"after")
            rep.send(b"re:" + rep.recv())
            print(req.recv().decode(), flush=True)
        """
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout == "interrupted\nre:after\n"


def test_ctrl_c_outside_blocking_calls_is_python_s_own() -> None:
    result = run_script(
        """
        import os, signal
        import zmtp, zmtp.sync

        with zmtp.sync.Socket(zmtp.PAIR) as a:
            a.bind("tcp://127.0.0.1:*")
            try:
                os.kill(os.getpid(), signal.SIGINT)
                for _ in range(10_000):  # the default handler raises at a bytecode here
                    pass
            except KeyboardInterrupt:
                print("interrupted", flush=True)
        """
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout == "interrupted\n"


def test_exit_while_a_daemon_thread_runs_the_loop() -> None:
    result = run_script(
        """
        import threading
        import zmtp, zmtp.sync

        pull = zmtp.sync.Socket(zmtp.PULL)
        pull.bind("tcp://127.0.0.1:*")
        started = threading.Event()

        def receive():
            started.set()
            pull.recv()  # holds the loop when the interpreter exits

        threading.Thread(target=receive, daemon=True).start()
        started.wait(10)
        push = zmtp.sync.Socket(zmtp.PUSH)
        push.connect("tcp://127.0.0.1:1")  # nobody there
        push.send(b"undeliverable")
        print("ok", flush=True)
        """
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout == "ok\n"


def try_now(func: Callable[[], object]) -> object:
    """``SharedLoop.try_now`` until the loop is free (the background thread may hold it)."""
    shared = shared_loop()
    for _ in range(1000):
        shared.run(lambda: None)  # take the loop back from the background thread, if it has it
        done, result = shared.try_now(func)
        if done:
            return result
    raise AssertionError("the loop never came free")


def test_fast_path_work_may_use_anyio() -> None:
    # Engine code reached from a direct send may ask anyio for the time or make an event
    # (a lent read kicked by an inproc message): the fast path runs it inside the loop.
    import anyio

    def engine_like() -> bool:
        anyio.Event().set()
        return anyio.current_time() > 0

    assert try_now(engine_like) is True
    assert shared_loop().run(engine_like) is True  # and a plain call in a drive


def test_fast_path_raises_what_the_work_raised() -> None:
    def fails() -> bool:
        raise zmtp.InvalidState("no")

    with pytest.raises(zmtp.InvalidState, match="no"):
        try_now(fails)
    assert try_now(lambda: 0) == 0  # and the loop is free again


def test_several_threads_send_directly_on_one_router() -> None:
    # ROUTER sends are direct (routed in the calling thread, holding the loop): threads that
    # share the socket take turns, and every message arrives whole and in its thread's order.
    threads, each = 4, 200
    with zmtp.sync.Socket(zmtp.ROUTER, recv_timeout=OP, router_mandatory=True) as router:
        endpoint = router.bind("tcp://127.0.0.1:*")
        dealers = [
            zmtp.sync.Socket(zmtp.DEALER, recv_timeout=OP, identity=b"d%d" % n)
            for n in range(threads)
        ]
        try:
            for dealer in dealers:
                dealer.connect(endpoint)
                dealer.send(b"hello")
            for _ in range(threads):
                router.recv_multipart()  # every dealer is known to the router now

            def sender(n: int) -> None:
                for i in range(each):
                    router.send_multipart([b"d%d" % n, b"%d" % i])

            workers = [threading.Thread(target=sender, args=(n,)) for n in range(threads)]
            for w in workers:
                w.start()
            for w in workers:
                w.join(OP)
            for dealer in dealers:
                assert [dealer.recv() for _ in range(each)] == [b"%d" % i for i in range(each)]
        finally:
            for dealer in dealers:
                dealer.close(linger=0)
