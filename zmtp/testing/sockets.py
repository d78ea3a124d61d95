"""Helpers for tests of zmtp sockets: endpoints to bind, linking two sockets, waiting on
monitor events and messages within a bound, and opening a path by probing it.

Nothing here sleeps to wait for something: waits are on monitor events or messages, bounded by
``anyio.fail_after(TIMEOUT)`` (a passing test never waits that long).
"""

from __future__ import annotations

import os
import tempfile
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, TypeVar

import anyio

from ..monitor import HandshakeSucceeded, Monitor, MonitorEvent
from ..socket import Socket

#: Upper bound, in seconds, for anything that should happen "now".
TIMEOUT = 5.0

E = TypeVar("E", bound=MonitorEvent)


# ---------------------------------------------------------------------- endpoints


def unique(prefix: str = "zt") -> str:
    """A name no other test uses (inproc names, ipc files)."""
    return f"{prefix}-{uuid.uuid4().hex[:10]}"


def ipc_path() -> str:
    """A short socket path in the temporary directory (``sun_path`` holds ~107 bytes; pytest's
    ``tmp_path`` can be longer)."""
    return os.path.join(tempfile.gettempdir(), unique() + ".sock")


def bindable(transport: str) -> str:
    """An endpoint to bind on ``transport``: an ephemeral tcp port on 127.0.0.1, a fresh ipc
    path or inproc name."""
    if transport == "tcp":
        return "tcp://127.0.0.1:*"
    if transport == "ipc":
        return f"ipc://{ipc_path()}"
    if transport == "inproc":
        return f"inproc://{unique()}"
    raise ValueError(f"unknown transport {transport!r}: tcp, ipc or inproc")


def bind_endpoint(transport: str, directory: Path, name: str = "s") -> str:
    """Like :func:`bindable` for tcp and ipc, the ipc file named ``name`` in ``directory``
    (a test's ``tmp_path``: removed with it)."""
    if transport == "tcp":
        return "tcp://127.0.0.1:*"
    path = directory / f"{name}.ipc"
    assert len(str(path)) < 100, f"ipc path too long for AF_UNIX: {path}"
    return f"ipc://{path}"


def tcp_port(endpoint: str) -> int:
    """The port of a ``tcp://host:port`` endpoint."""
    return int(endpoint.rsplit(":", 1)[1])


# ---------------------------------------------------------------------- waiting


async def wait_event(monitor: Monitor, kind: type[E], timeout: float = TIMEOUT) -> E:
    """The next event of ``kind``, within ``timeout`` (else ``TimeoutError``)."""
    with anyio.fail_after(timeout):
        event = await monitor.wait_for(kind)
    assert isinstance(event, kind)
    return event


async def event_within(
    monitor: Monitor,
    kinds: type[MonitorEvent] | tuple[type[MonitorEvent], ...],
    seconds: float,
) -> MonitorEvent | None:
    """The first event of ``kinds`` within ``seconds``, or None (to assert an absence, after a
    positive sync point)."""
    with anyio.move_on_after(seconds):
        return await monitor.wait_for(kinds)
    return None


async def recv_within(sock: Socket, seconds: float = TIMEOUT) -> list[bytes]:
    """The next message, within ``seconds``."""
    with anyio.fail_after(seconds):
        return await sock.recv_multipart()


async def nothing_pending(sock: Socket) -> bool:
    """True if no message is waiting *now* (the routing strategy is asked directly, without
    waiting; one checkpoint first lets what already arrived be routed)."""
    await anyio.lowlevel.checkpoint()
    return sock.engine.strategy.try_recv() is None


@asynccontextmanager
async def linked(
    bind_type: str,
    connect_type: str,
    transport: str = "tcp",
    bind_options: dict[str, Any] | None = None,
    connect_options: dict[str, Any] | None = None,
    before_connect: Callable[[Socket, Socket], None] | None = None,
) -> AsyncIterator[tuple[Socket, Socket]]:
    """A bound and a connected socket of ours (linger 0), both handshakes complete."""
    async with (
        Socket(bind_type, linger=0, **(bind_options or {})) as bound,
        Socket(connect_type, linger=0, **(connect_options or {})) as connecting,
    ):
        async with bound.monitor() as bmon, connecting.monitor() as cmon:
            endpoint = await bound.bind(bindable(transport))
            if before_connect is not None:
                before_connect(bound, connecting)
            await connecting.connect(endpoint)
            await wait_event(bmon, HandshakeSucceeded)
            await wait_event(cmon, HandshakeSucceeded)
        yield bound, connecting


# ---------------------------------------------------------------------- probing a path


async def probe_path(
    send: Callable[[bytes], Awaitable[None]],
    recv: Callable[[], Awaitable[list[bytes] | None]],
    prefix: bytes = b"probe",
) -> None:
    """Send numbered probes until the last one sent comes out the other end.

    For paths that open at some unknown moment (a subscription reaching a publisher, a bound
    libzmq socket attaching our pipe). ``recv`` returns the next message or None after a short
    wait. Every path probed here keeps order, so once the last probe sent comes out nothing of
    ours is left in flight: reading up to it is exact, and nothing is guessed.

    A path may also lose a probe after it opened: a RADIO drops a message its full queue has
    no room for (``send_hwm=1`` holds one probe not yet written, so the next is dropped) and
    UDP drops by design. Waiting only for that probe would never end, so while the last probe
    has not come out after ``patience`` empty waits, another is sent. Once some probe has come
    out, ``patience`` doubles at each new probe, so a slow path (probes arriving later than
    one wait) is outwaited rather than chased. (The interop check's
    :func:`zmtp.interop.probe_until_received` probes the same way between two message ends,
    and leaves reading past the later probes to its caller.)
    """
    sent = 0
    opened = False  # some probe came out: the path is open, later silence is loss or delay
    patience = 1  # empty waits in a row before the next probe
    with anyio.fail_after(TIMEOUT):
        while True:
            sent += 1
            last = [prefix + b"-%d" % sent]
            await send(last[0])
            quiet = 0
            while quiet < patience:
                got = await recv()
                if got is None:
                    quiet += 1
                elif got == last:
                    return
                else:
                    assert got[0].startswith(prefix), got
                    opened = True
                    quiet = 0
            if opened:
                patience *= 2


def ours_briefly(sock: Socket) -> Callable[[], Awaitable[list[bytes] | None]]:
    """A ``recv`` for :func:`probe_path`: the next message of ``sock`` within 10 ms, or None."""

    async def recv() -> list[bytes] | None:
        with anyio.move_on_after(0.01):
            return await sock.recv_multipart()
        return None

    return recv


def ours_sender(sock: Socket) -> Callable[[bytes], Awaitable[None]]:
    """A ``send`` for :func:`probe_path`: ``sock.send``."""
    return sock.send


async def send_until_received(radio: Socket, dish: Socket, group: bytes) -> None:
    """Probe ``group`` from a RADIO until the DISH gets one: over tcp/ipc/inproc until its JOIN
    has reached the RADIO; over udp until the RADIO's socket is open (or past a lost
    datagram, or a probe a RADIO at a small ``send_hwm`` dropped), as UDP gives no other
    signal. Returns once the last probe sent is read: none is left for the test to meet."""
    briefly = ours_briefly(dish)

    async def recv() -> list[bytes] | None:
        message = await briefly()
        if message is None:
            return None
        assert message[0] == group
        return message[1:]

    await probe_path(lambda data: radio.send_group(group, data), recv)


__all__ = [
    "TIMEOUT",
    "bind_endpoint",
    "bindable",
    "event_within",
    "ipc_path",
    "linked",
    "nothing_pending",
    "ours_briefly",
    "ours_sender",
    "probe_path",
    "recv_within",
    "send_until_received",
    "tcp_port",
    "unique",
    "wait_event",
]
