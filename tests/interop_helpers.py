"""Helpers for the live interop tests against libzmq (pyzmq).

The pyzmq side is driven through :mod:`zmtp.interop` (every blocking call in a worker thread,
bounded by a timeout, polling the socket so that bound libzmq sockets attach their peers). This
module adds what only tests need: fixtures, endpoints, and small raw-TCP peers (a ZMTP peer that
goes silent after its handshake, a non-ZMTP client, a recording relay).

Fixtures are imported by name into the test modules (``from tests.interop_helpers import
libzmq_env  # noqa: F401``); the fixture itself is called ``lz``.
"""

from __future__ import annotations

import re
import struct
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path

import anyio
import pytest
from anyio.abc import Listener, SocketAttribute, SocketStream, TaskGroup

import zmtp
from zmtp.interop import Libzmq, LibzmqSocket

#: Seconds one pyzmq operation may take before it raises TimeoutError.
OP_TIMEOUT = 5.0
#: Upper bound for a whole interop test body.
TEST_TIMEOUT = 15.0


@pytest.fixture(name="lz")
def libzmq_env() -> Iterator[Libzmq]:
    """A pyzmq context for one test; every socket closed with linger 0 afterwards."""
    with Libzmq(timeout=OP_TIMEOUT) as env:
        yield env


def bind_endpoint(transport: str, tmp_path: Path, name: str = "s") -> str:
    """An endpoint to bind on ``transport``: an ephemeral tcp port, or an ipc path in tmp_path."""
    if transport == "tcp":
        return "tcp://127.0.0.1:*"
    path = tmp_path / f"{name}.ipc"
    assert len(str(path)) < 100, f"ipc path too long for AF_UNIX: {path}"
    return f"ipc://{path}"


async def bind_when_free(sock: LibzmqSocket, endpoint: str) -> None:
    """Bind, retrying while the previous owner's listener is still being torn down (libzmq
    closes sockets asynchronously in its I/O thread)."""
    zmq = sock.zmq
    with anyio.fail_after(OP_TIMEOUT):
        while True:
            try:
                sock.bind(endpoint)
                return
            except zmq.ZMQError as exc:
                if exc.errno != zmq.EADDRINUSE:
                    raise
            await anyio.sleep(0.02)


async def event_within(
    monitor: zmtp.Monitor,
    kinds: type[zmtp.MonitorEvent] | tuple[type[zmtp.MonitorEvent], ...],
    seconds: float,
) -> zmtp.MonitorEvent | None:
    """The first event of ``kinds`` within ``seconds``, or None (used to assert absence)."""
    with anyio.move_on_after(seconds):
        return await monitor.wait_for(kinds)
    return None


# ---------------------------------------------------------------------- raw ZMTP bytes

NULL_GREETING = (
    b"\xff" + b"\0" * 8 + b"\x7f" + b"\x03\x01" + b"NULL".ljust(20, b"\0") + b"\0" + b"\0" * 31
)
assert len(NULL_GREETING) == 64


def ready_command(socket_type: str) -> bytes:
    """A short READY command frame announcing ``socket_type`` and nothing else."""
    value = socket_type.encode()
    body = b"\x05READY" + b"\x0bSocket-Type" + struct.pack(">I", len(value)) + value
    return b"\x04" + bytes([len(body)]) + body


def count_commands(stream: bytes, name: bytes) -> int:
    """How many short command frames named ``name`` appear in a byte stream (flags 0x04, a
    1-byte size, then the length-prefixed name)."""
    pattern = b"\x04." + re.escape(bytes([len(name)]) + name)
    return len(re.findall(pattern, stream, flags=re.DOTALL))


# ---------------------------------------------------------------------- raw TCP peers


@dataclass
class SilentZmtpPeer:
    """A tcp listener that completes a NULL handshake as ``socket_type`` on every connection,
    then never writes again. It records what it receives (e.g. our PINGs)."""

    socket_type: str = "PULL"
    port: int = 0
    received: list[bytearray] = field(default_factory=list)
    _changed: anyio.Event = field(default_factory=anyio.Event)

    @property
    def endpoint(self) -> str:
        return f"tcp://127.0.0.1:{self.port}"

    async def _serve(self, stream: SocketStream) -> None:
        data = bytearray()
        self.received.append(data)
        async with stream:
            await stream.send(NULL_GREETING + ready_command(self.socket_type))
            try:
                while True:
                    data += await stream.receive()
                    self._notify()
            except (anyio.EndOfStream, anyio.BrokenResourceError, OSError):
                self._notify()

    def _notify(self) -> None:
        self._changed.set()
        self._changed = anyio.Event()

    async def wait_for_bytes(self, pattern: bytes, connection: int = 0) -> None:
        """Wait until connection number ``connection`` has received ``pattern``."""
        while len(self.received) <= connection or pattern not in self.received[connection]:
            await self._changed.wait()


@asynccontextmanager
async def silent_zmtp_peer(socket_type: str = "PULL") -> AsyncIterator[SilentZmtpPeer]:
    listener = (await anyio.create_tcp_listener(local_host="127.0.0.1")).listeners[0]
    peer = SilentZmtpPeer(socket_type, listener.extra(SocketAttribute.local_port))
    async with anyio.create_task_group() as tg:
        tg.start_soon(_serve_forever, listener, peer._serve, tg)
        try:
            yield peer
        finally:
            tg.cancel_scope.cancel()


async def _serve_forever(
    listener: Listener[SocketStream],
    handler: Callable[[SocketStream], Awaitable[None]],
    tg: TaskGroup,
) -> None:
    async with listener:
        while True:
            stream = await listener.accept()
            tg.start_soon(handler, stream)


def tcp_port(endpoint: str) -> int:
    return int(endpoint.rsplit(":", 1)[1])


async def raw_exchange(port: int, request: bytes, timeout: float = OP_TIMEOUT) -> bytes:
    """Connect, send ``request``, read until the peer closes; returns what it sent."""
    received = bytearray()
    with anyio.fail_after(timeout):
        async with await anyio.connect_tcp("127.0.0.1", port) as stream:
            await stream.send(request)
            try:
                while True:
                    received += await stream.receive()
            except (anyio.EndOfStream, anyio.BrokenResourceError, OSError):
                pass
    return bytes(received)
