"""Issue 14, finding 1: running out of file descriptors must not kill a listening socket.

The victim runs in a child process with ``RLIMIT_NOFILE`` lowered; we open far more silent
connections than it has descriptors. ``accept`` fails with EMFILE, which anyio reports as an
``OSError`` or as ``BrokenResourceError`` depending on backend and transport. Like libzmq
(ZMQ_EVENT_ACCEPT_FAILED), the socket reports ``AcceptFailed``, backs off briefly and keeps
accepting: a pyzmq peer connected before the storm is still served during it, and one that
connects after it is accepted and served.
"""

from __future__ import annotations

import contextlib
import socket
from collections.abc import Iterator

import pytest
import zmq

from tests._child_process import Child

#: More than the child has descriptors, and fewer than it has plus its listen backlog (100):
#: connects beyond the backlog would wait for SYN retries (tcp) or block (ipc).
STORM = 200
NOFILE = 128


def raw_connect(endpoint: str) -> socket.socket:
    if endpoint.startswith("tcp://"):
        host, port = endpoint.removeprefix("tcp://").rsplit(":", 1)
        sock = socket.create_connection((host, int(port)))
    else:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.connect(endpoint.removeprefix("ipc://"))
    return sock


@contextlib.contextmanager
def pusher(ctx: zmq.Context[zmq.Socket[bytes]], endpoint: str) -> Iterator[zmq.Socket[bytes]]:
    sock = ctx.socket(zmq.PUSH)
    sock.linger = 5000
    sock.connect(endpoint)
    try:
        yield sock
    finally:
        sock.close()


@pytest.mark.parametrize("transport", ["tcp", "ipc"])
@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_descriptor_exhaustion_is_reported_and_survived(backend: str, transport: str) -> None:
    child = Child("tests._fd_storm_child", backend, transport, str(NOFILE))
    ctx = zmq.Context()
    storm: list[socket.socket] = []
    try:
        endpoint = child.expect("endpoint ")
        with pusher(ctx, endpoint) as early:
            early.send(b"before")
            assert child.expect("msg ") == "before"
            for _ in range(STORM):  # the kernel completes them; the child runs out accepting
                storm.append(raw_connect(endpoint))
            reason = child.expect("accept-failed ")
            assert "Too many open files" in reason or "EMFILE" in reason, reason
            early.send(b"during")  # an established peer is still served
            assert child.expect("msg ") == "during"
            for sock in storm:
                sock.close()
            storm.clear()
            with pusher(ctx, endpoint) as late:  # and a new one is accepted again
                late.send(b"after")
                assert child.expect("msg ", timeout=30) == "after"
                late.send(b"quit")
                assert child.expect("exit ") == "ok"
        assert child.proc.wait(10) == 0, child.stderr()
    finally:
        for sock in storm:
            sock.close()
        ctx.term()
        child.close()
