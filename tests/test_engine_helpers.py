"""Shared helpers for the engine tests (our sockets against our sockets). No tests here.

* endpoints for every transport (``endpoint_for``, the ``transport`` / ``stream_transport``
  fixtures);
* ``linked(...)``: a bound and a connected socket whose handshakes both completed;
* bounded waits on monitor events (``wait_event``, ``assert_no_event``).

The raw ZMTP peer of the bad-input and heartbeat tests is the public one,
:class:`zmtp.testing.RawPeer` (with ``raw_client``, ``serve_raw_peers`` and the hand-spelled
bytes of :mod:`zmtp.testing.wire`), so that an encoder bug cannot hide behind a decoder bug.

Nothing here sleeps to wait for something to happen: waits are on monitor events or on
received messages, always bounded by ``anyio.fail_after(TIMEOUT)``.
"""

from __future__ import annotations

import socket as pysocket
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import anyio
import pytest

import zmtp

#: Upper bound for anything that should happen "now". Generous: a loaded CI machine is slow,
#: and a passing test never waits for it.
TIMEOUT = 5.0

TRANSPORTS = ("tcp", "ipc", "ipc-abstract", "inproc")
STREAM_TRANSPORTS = ("tcp", "ipc", "ipc-abstract")

E = TypeVar("E", bound=zmtp.MonitorEvent)


def unique_name(prefix: str = "zmtp-test") -> str:
    return f"{prefix}-{uuid.uuid4().hex[:12]}"


def endpoint_for(transport: str, tmp_path: Path) -> str:
    """A bindable endpoint for ``transport`` (tcp uses an ephemeral port)."""
    if transport == "tcp":
        return "tcp://127.0.0.1:*"
    if transport == "ipc":
        return f"ipc://{tmp_path / 'x.sock'}"
    if transport == "ipc-abstract":
        return f"ipc://@{unique_name()}"
    if transport == "inproc":
        return f"inproc://{unique_name()}"
    raise AssertionError(transport)


@pytest.fixture(params=TRANSPORTS)
def transport(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture(params=STREAM_TRANSPORTS)
def stream_transport(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def endpoint(transport: str, tmp_path: Path) -> str:
    """A bind address on each transport (tcp, ipc path, abstract ipc, inproc)."""
    return endpoint_for(transport, tmp_path)


@pytest.fixture
def stream_endpoint(stream_transport: str, tmp_path: Path) -> str:
    """A bind address on each stream transport (tcp, ipc path, abstract ipc)."""
    return endpoint_for(stream_transport, tmp_path)


async def wait_event(monitor: zmtp.Monitor, kind: type[E], timeout: float = TIMEOUT) -> E:
    """The next event of ``kind`` (skipping others), or fail the test after ``timeout``."""
    with anyio.fail_after(timeout):
        event = await monitor.wait_for(kind)
    assert isinstance(event, kind)
    return event


async def drain_events(monitor: zmtp.Monitor, timeout: float = TIMEOUT) -> list[type[Any]]:
    """Every remaining event type of a monitor, until MonitorStopped ends the iteration."""
    with anyio.fail_after(timeout):
        return [type(event) async for event in monitor]


@dataclass
class Link:
    """Two connected sockets and the monitors opened before they were linked."""

    binder: zmtp.Socket
    connector: zmtp.Socket
    endpoint: str  #: the resolved endpoint (real port)
    binder_monitor: zmtp.Monitor
    connector_monitor: zmtp.Monitor


@asynccontextmanager
async def linked(
    binder_type: zmtp.SocketType,
    connector_type: zmtp.SocketType,
    endpoint: str,
    binder_options: dict[str, Any] | None = None,
    connector_options: dict[str, Any] | None = None,
    binder_extension: zmtp.SocketExtension | None = None,
    connector_extension: zmtp.SocketExtension | None = None,
    **common: Any,
) -> AsyncIterator[Link]:
    """Bind one socket, connect another, and yield once *both* handshakes completed.

    ``linger=0`` unless the options say otherwise (the tests that check linger set it).
    """
    b_opts = {"linger": 0, **common, **(binder_options or {})}
    c_opts = {"linger": 0, **common, **(connector_options or {})}
    async with (
        zmtp.Socket(binder_type, **b_opts) as binder,
        zmtp.Socket(connector_type, **c_opts) as connector,
    ):
        if binder_extension is not None:
            binder.install_extension(binder_extension)
        if connector_extension is not None:
            connector.install_extension(connector_extension)
        bmon, cmon = binder.monitor(), connector.monitor()
        resolved = await binder.bind(endpoint)
        await connector.connect(resolved)
        await wait_event(bmon, zmtp.HandshakeSucceeded)
        await wait_event(cmon, zmtp.HandshakeSucceeded)
        yield Link(binder, connector, resolved, bmon, cmon)


def tcp_host_port(endpoint: str) -> tuple[str, int]:
    host, _, port = endpoint.removeprefix("tcp://").rpartition(":")
    return host.strip("[]"), int(port)


def ipv6_loopback_available() -> bool:
    """Whether this machine can bind ``::1`` (sandboxes and containers often cannot)."""
    if not pysocket.has_ipv6:
        return False
    try:
        with pysocket.socket(pysocket.AF_INET6, pysocket.SOCK_STREAM) as s:
            s.bind(("::1", 0))
    except OSError:
        return False
    return True


async def assert_no_event(
    monitor: zmtp.Monitor, kind: type[zmtp.MonitorEvent], seconds: float
) -> None:
    """Fail if an event of ``kind`` arrives within ``seconds`` (absence needs a timer)."""
    with anyio.move_on_after(seconds):
        event = await monitor.wait_for(kind)
        pytest.fail(f"unexpected {event!r}")
