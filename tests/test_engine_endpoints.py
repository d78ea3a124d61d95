"""Endpoints: bind/connect/unbind on tcp, ipc (path and abstract) and inproc.

Resolved endpoints, IPv6, hostnames, address-in-use, malformed endpoints, the ipc socket file's
lifetime, inproc connect-before-bind and name reuse, and rebinding right after unbind.
"""

from __future__ import annotations

import os
from pathlib import Path

import anyio
import pytest

import zmtp
from tests import test_engine_helpers as helpers
from tests.test_engine_helpers import (
    TIMEOUT,
    ipv6_loopback_available,
    linked,
    tcp_host_port,
    unique_name,
    wait_event,
)
from zmtp.transport import EndpointError

pytestmark = pytest.mark.anyio

endpoint = helpers.endpoint  # fixture
transport = helpers.transport  # fixture


async def roundtrip(binder_endpoint: str, connect_to: str | None = None) -> str:
    """Bind a PULL, connect a PUSH (to ``connect_to`` or the resolved endpoint), move one
    message; returns the resolved endpoint."""
    async with zmtp.Socket(zmtp.PULL, linger=0) as pull, zmtp.Socket(zmtp.PUSH, linger=0) as push:
        resolved = await pull.bind(binder_endpoint)
        await push.connect(
            connect_to.format(port=tcp_host_port(resolved)[1]) if connect_to else resolved
        )
        await push.send(b"ping")
        with anyio.fail_after(TIMEOUT):
            assert await pull.recv() == b"ping"
        return resolved


# --------------------------------------------------------------------------- resolved endpoints


@pytest.mark.parametrize("port_spec", ["*", "0"])
async def test_tcp_bind_returns_the_real_port(port_spec: str) -> None:
    async with zmtp.Socket(zmtp.PULL, linger=0) as pull:
        resolved = await pull.bind(f"tcp://127.0.0.1:{port_spec}")
        host, port = tcp_host_port(resolved)
        assert host == "127.0.0.1"
        assert 0 < port < 65536
        assert pull.last_endpoint == resolved


async def test_last_endpoint_follows_the_latest_bind() -> None:
    async with zmtp.Socket(zmtp.PULL, linger=0) as pull:
        first = await pull.bind("tcp://127.0.0.1:*")
        second = await pull.bind(f"inproc://{unique_name()}")
        assert pull.last_endpoint == second != first


async def test_bind_resolves_and_carries_messages_on_every_transport(endpoint: str) -> None:
    resolved = await roundtrip(endpoint)
    if endpoint.startswith("tcp://"):
        assert tcp_host_port(resolved)[1] != 0
    else:
        assert resolved == endpoint  # ipc paths and inproc names are already concrete


async def test_ipc_wildcard_binds_a_fresh_path() -> None:
    resolved = await roundtrip("ipc://*")
    assert resolved.startswith("ipc://") and resolved != "ipc://*"
    assert not os.path.exists(resolved.removeprefix("ipc://"))  # removed on close


async def test_ipv6_loopback() -> None:
    if not ipv6_loopback_available():
        pytest.skip("IPv6 loopback (::1) cannot be bound on this machine")
    resolved = await roundtrip("tcp://[::1]:*")
    assert resolved.startswith("tcp://[::1]:")


async def test_connect_by_hostname() -> None:
    await roundtrip("tcp://127.0.0.1:*", connect_to="tcp://localhost:{port}")


# --------------------------------------------------------------------------- errors


async def test_bind_to_an_address_in_use_raises_and_reports_bind_failed() -> None:
    async with (
        zmtp.Socket(zmtp.PULL, linger=0) as first,
        zmtp.Socket(zmtp.PULL, linger=0) as second,
    ):
        taken = await first.bind("tcp://127.0.0.1:*")
        monitor = second.monitor()
        with pytest.raises(OSError):
            await second.bind(taken)
        event = await wait_event(monitor, zmtp.BindFailed)
        assert event.endpoint == taken
        assert event.reason


async def test_inproc_bind_to_a_name_in_use_raises_and_reports_bind_failed() -> None:
    name = f"inproc://{unique_name()}"
    async with (
        zmtp.Socket(zmtp.PULL, linger=0) as first,
        zmtp.Socket(zmtp.PULL, linger=0) as second,
    ):
        await first.bind(name)
        monitor = second.monitor()
        with pytest.raises(OSError):
            await second.bind(name)
        assert "already bound" in (await wait_event(monitor, zmtp.BindFailed)).reason


@pytest.mark.parametrize(
    ("bad", "fragment"),
    [
        ("127.0.0.1:5555", "no transport"),
        ("udp://127.0.0.1:5555", "unsupported transport"),
        ("tcp://127.0.0.1", "host:port"),
        ("tcp://127.0.0.1:http", "invalid port"),
        ("tcp://127.0.0.1:70000", "out of range"),
        ("tcp://[::1:5555", "IPv6"),
        ("ipc://", "empty path"),
        ("inproc://", "empty name"),
    ],
)
@pytest.mark.parametrize("method", ["bind", "connect"])
async def test_malformed_endpoints_raise_endpoint_error(
    bad: str, fragment: str, method: str
) -> None:
    async with zmtp.Socket(zmtp.PAIR, linger=0) as sock:
        with pytest.raises(EndpointError, match=fragment) as info:
            await getattr(sock, method)(bad)
        assert isinstance(info.value, ValueError)  # EndpointError is a ValueError
        assert repr(bad) in str(info.value)  # the message quotes the offending endpoint


async def test_unbind_of_an_unknown_endpoint_raises() -> None:
    async with zmtp.Socket(zmtp.PULL, linger=0) as pull:
        with pytest.raises(ValueError, match="not bound"):
            await pull.unbind("tcp://127.0.0.1:1")


async def test_bind_outside_async_with_raises_socket_closed() -> None:
    sock = zmtp.Socket(zmtp.PULL)
    with pytest.raises(zmtp.SocketClosed):
        await sock.bind("tcp://127.0.0.1:*")


# --------------------------------------------------------------------------- ipc socket file


async def test_ipc_file_exists_while_bound_and_is_removed_on_unbind(tmp_path: Path) -> None:
    path = tmp_path / "x.sock"
    async with zmtp.Socket(zmtp.PULL, linger=0) as pull:
        resolved = await pull.bind(f"ipc://{path}")
        assert path.exists()
        await pull.unbind(resolved)
        assert not path.exists()


async def test_ipc_file_is_removed_on_close(tmp_path: Path) -> None:
    path = tmp_path / "x.sock"
    async with zmtp.Socket(zmtp.PULL, linger=0) as pull:
        await pull.bind(f"ipc://{path}")
        assert path.exists()
    assert not path.exists()


async def test_ipc_file_is_removed_on_close_with_a_live_connection(tmp_path: Path) -> None:
    path = tmp_path / "x.sock"
    async with linked(zmtp.PULL, zmtp.PUSH, f"ipc://{path}"):
        assert path.exists()
    assert not path.exists()


# --------------------------------------------------------------------------- rebinding


async def test_unbind_releases_the_tcp_port_at_once() -> None:
    """When unbind() returns the port is free: another socket can bind it immediately."""
    async with (
        zmtp.Socket(zmtp.PULL, linger=0) as first,
        zmtp.Socket(zmtp.PULL, linger=0) as second,
    ):
        resolved = await first.bind("tcp://127.0.0.1:*")
        await first.unbind(resolved)
        assert await second.bind(resolved) == resolved


async def test_close_right_after_bind_returns(endpoint: str) -> None:
    """A close() that races the accept loop's start must not wait for it forever."""
    with anyio.fail_after(TIMEOUT):
        async with zmtp.Socket(zmtp.PULL, linger=0) as pull:
            await pull.bind(endpoint)


async def test_unbind_right_after_bind_stops_listening(endpoint: str) -> None:
    with anyio.fail_after(TIMEOUT):
        async with zmtp.Socket(zmtp.PULL, linger=0) as pull:
            resolved = await pull.bind(endpoint)
            await pull.unbind(resolved)
            assert await pull.bind(resolved) == resolved  # free again


# --------------------------------------------------------------------------- inproc specifics


async def test_inproc_connect_before_bind_delivers_messages_queued_before_the_bind() -> None:
    name = f"inproc://{unique_name()}"
    async with zmtp.Socket(zmtp.PUSH, linger=0) as push, zmtp.Socket(zmtp.PULL, linger=0) as pull:
        await push.connect(name)
        for i in range(3):
            await push.send(b"early-%d" % i)
        await pull.bind(name)
        await push.send(b"late")
        with anyio.fail_after(TIMEOUT):
            got = [await pull.recv() for _ in range(4)]
        assert got == [b"early-0", b"early-1", b"early-2", b"late"]


async def test_inproc_name_can_be_bound_again_after_unbind() -> None:
    name = f"inproc://{unique_name()}"
    async with (
        zmtp.Socket(zmtp.PULL, linger=0) as first,
        zmtp.Socket(zmtp.PULL, linger=0) as second,
    ):
        await first.bind(name)
        await first.unbind(name)
        await second.bind(name)
        async with zmtp.Socket(zmtp.PUSH, linger=0) as push:
            await push.connect(name)
            await push.send(b"to the second binder")
            with anyio.fail_after(TIMEOUT):
                assert await second.recv() == b"to the second binder"


async def test_inproc_connector_relinks_to_the_next_binder_of_the_name() -> None:
    name = f"inproc://{unique_name()}"
    async with zmtp.Socket(zmtp.PUSH, linger=0) as push:
        monitor = push.monitor()
        async with zmtp.Socket(zmtp.PULL, linger=0) as first:
            await first.bind(name)
            await push.connect(name)
            await wait_event(monitor, zmtp.HandshakeSucceeded)
        await wait_event(monitor, zmtp.Disconnected)
        async with zmtp.Socket(zmtp.PULL, linger=0) as second:
            await second.bind(name)
            await wait_event(monitor, zmtp.HandshakeSucceeded)
            await push.send(b"again")
            with anyio.fail_after(TIMEOUT):
                assert await second.recv() == b"again"
