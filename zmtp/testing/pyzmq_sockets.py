"""Plain pyzmq sockets in async tests: made with ``linger=0`` and timeouts, their blocking
calls run in a worker thread, linked to one of our sockets with the handshake waited for.

For the libzmq side driven entirely through worker threads (every call bounded), use
:class:`zmtp.interop.Libzmq`; these are the lighter tools for a test that holds a pyzmq socket
itself. pyzmq is imported when first used (:func:`zmq_module`).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from typing import Any

import anyio

from ..interop import LibzmqSocket
from ..monitor import HandshakeSucceeded
from ..socket import Socket
from .sockets import TIMEOUT, bindable, ipc_path, wait_event


def zmq_module() -> Any:
    """pyzmq (imported here, so that zmtp.testing imports without it)."""
    import zmq

    return zmq


@contextmanager
def zsocket(kind: int, **options: Any) -> Iterator[Any]:
    """A pyzmq socket of the global context with linger 0 and :data:`TIMEOUT` send/receive
    timeouts; other options set by attribute name (``subscribe=b""``, ``routing_id=b"x"``)."""
    zmq = zmq_module()
    sock = zmq.Context.instance().socket(kind)
    sock.linger = 0
    sock.rcvtimeo = sock.sndtimeo = int(TIMEOUT * 1000)
    for name, value in options.items():
        setattr(sock, name, value)
    try:
        yield sock
    finally:
        sock.close(linger=0)


def zbind(sock: Any, transport: str) -> str:
    """Bind a pyzmq socket on an ephemeral tcp port or a fresh ipc path; the endpoint."""
    if transport == "tcp":
        port = sock.bind_to_random_port("tcp://127.0.0.1")
        return f"tcp://127.0.0.1:{port}"
    endpoint = f"ipc://{ipc_path()}"
    sock.bind(endpoint)
    return endpoint


async def zrecv(sock: Any) -> list[bytes]:
    """``recv_multipart`` in a worker thread (bounded by the socket's rcvtimeo)."""
    parts: list[bytes] = await anyio.to_thread.run_sync(sock.recv_multipart)
    return parts


async def zsend(sock: Any, parts: list[bytes]) -> None:
    """``send_multipart`` in a worker thread (bounded by the socket's sndtimeo)."""
    await anyio.to_thread.run_sync(sock.send_multipart, parts)


async def connect_ours(ours: Socket, theirs: Any, transport: str, ours_binds: bool) -> str:
    """Link our socket and a pyzmq socket in the given roles; wait for our handshake."""
    async with ours.monitor() as mon:
        if ours_binds:
            endpoint = await ours.bind(bindable(transport))
            theirs.connect(endpoint)
        else:
            endpoint = zbind(theirs, transport)
            await ours.connect(endpoint)
        await wait_event(mon, HandshakeSucceeded)
    return endpoint


def zmq_briefly(sock: Any) -> Callable[[], Awaitable[list[bytes] | None]]:
    """A ``recv`` for :func:`~zmtp.testing.probe_path`: a pyzmq socket's next message within
    10 ms, or None."""

    def poll_recv() -> list[bytes] | None:
        if sock.poll(10):
            parts: list[bytes] = sock.recv_multipart()
            return parts
        return None

    async def recv() -> list[bytes] | None:
        return await anyio.to_thread.run_sync(poll_recv)

    return recv


def zmq_sender(sock: Any) -> Callable[[bytes], Awaitable[None]]:
    """A ``send`` for :func:`~zmtp.testing.probe_path` (PUB/XPUB/XSUB: never blocks)."""

    async def send(data: bytes) -> None:
        sock.send(data)

    return send


async def bind_when_free(sock: LibzmqSocket, endpoint: str, timeout: float = TIMEOUT) -> None:
    """Bind a :class:`zmtp.interop.LibzmqSocket`, retrying while the previous owner's listener
    is still being torn down (libzmq closes sockets asynchronously in its I/O thread)."""
    zmq = sock.zmq
    with anyio.fail_after(timeout):
        while True:
            try:
                sock.bind(endpoint)
                return
            except zmq.ZMQError as exc:
                if exc.errno != zmq.EADDRINUSE:
                    raise
            await anyio.sleep(0.02)  # a retry interval, not a wait for something


__all__ = [
    "bind_when_free",
    "connect_ours",
    "zbind",
    "zmq_briefly",
    "zmq_module",
    "zmq_sender",
    "zrecv",
    "zsend",
    "zsocket",
]
