"""Connection lifecycle: reconnect, disconnect/unbind, linger on close, monitor events."""

from __future__ import annotations

import anyio
import pytest

import zmtp
from tests import test_engine_helpers as helpers
from tests.test_engine_helpers import (
    TIMEOUT,
    drain_events,
    linked,
    tcp_host_port,
    wait_event,
)

pytestmark = pytest.mark.anyio

endpoint = helpers.endpoint  # fixture
transport = helpers.transport  # fixture
stream_endpoint = helpers.stream_endpoint  # fixture
stream_transport = helpers.stream_transport  # fixture

RECONNECT_IVL = 0.02


async def free_endpoint(endpoint: str) -> str:
    """A concrete endpoint nobody listens on (tcp: a port that was just free)."""
    if not endpoint.startswith("tcp://"):
        return endpoint
    async with zmtp.Socket(zmtp.PULL, linger=0) as probe:
        resolved = await probe.bind(endpoint)
        await probe.unbind(resolved)  # returns once the port is released
    return resolved


async def recv_n(sock: zmtp.Socket, n: int) -> list[bytes]:
    with anyio.fail_after(TIMEOUT):
        return [await sock.recv() for _ in range(n)]


# --------------------------------------------------------------------------- reconnect


async def test_connect_before_bind_retries_then_connects(stream_endpoint: str) -> None:
    target = await free_endpoint(stream_endpoint)
    async with zmtp.Socket(zmtp.PUSH, linger=0, reconnect_ivl=RECONNECT_IVL) as push:
        monitor = push.monitor()
        await push.connect(target)
        delayed = await wait_event(monitor, zmtp.ConnectDelayed)
        assert delayed.endpoint == target and delayed.reason
        retried = await wait_event(monitor, zmtp.ConnectRetried)
        assert RECONNECT_IVL <= retried.interval <= 2 * RECONNECT_IVL  # ivl + jitter < ivl
        await push.send(b"queued before the bind")
        async with zmtp.Socket(zmtp.PULL, linger=0) as pull:
            await pull.bind(target)
            await wait_event(monitor, zmtp.HandshakeSucceeded)
            assert await recv_n(pull, 1) == [b"queued before the bind"]


async def test_reconnects_to_a_new_socket_bound_on_the_same_endpoint(stream_endpoint: str) -> None:
    async with zmtp.Socket(zmtp.PUSH, linger=0, reconnect_ivl=RECONNECT_IVL) as push:
        monitor = push.monitor()
        async with zmtp.Socket(zmtp.PULL, linger=0) as first:
            target = await first.bind(stream_endpoint)
            await push.connect(target)
            await wait_event(monitor, zmtp.HandshakeSucceeded)
            await push.send(b"to the first")
            assert await recv_n(first, 1) == [b"to the first"]
        await wait_event(monitor, zmtp.Disconnected)
        for i in range(3):  # queued in the connect() pipe while nobody is there
            await push.send(b"meanwhile %d" % i)
        async with zmtp.Socket(zmtp.PULL, linger=0) as second:
            await second.bind(target)
            await wait_event(monitor, zmtp.HandshakeSucceeded)
            assert await recv_n(second, 3) == [b"meanwhile 0", b"meanwhile 1", b"meanwhile 2"]


async def test_disconnect_stops_reconnecting() -> None:
    target = await free_endpoint("tcp://127.0.0.1:*")
    async with zmtp.Socket(zmtp.PUSH, linger=0, reconnect_ivl=RECONNECT_IVL) as push:
        monitor = push.monitor()
        await push.connect(target)
        await wait_event(monitor, zmtp.ConnectRetried)
        await push.disconnect(target)
        assert (await wait_event(monitor, zmtp.Closed)).endpoint == target
        async with zmtp.Socket(zmtp.PULL, linger=0) as pull:
            pull_monitor = pull.monitor()
            await pull.bind(target)
            # Absence can only be shown by waiting: 0.3 s is 15 reconnect intervals.
            with anyio.move_on_after(0.3):
                await pull_monitor.wait_for(zmtp.Accepted)
                pytest.fail("the disconnected endpoint was dialled again")
        await push.close()
        assert await drain_events(monitor) == [zmtp.MonitorStopped]


async def test_disconnect_drops_the_live_connection(endpoint: str) -> None:
    async with linked(zmtp.PULL, zmtp.PUSH, endpoint) as link:
        await link.connector.disconnect(link.endpoint)
        assert (await wait_event(link.binder_monitor, zmtp.Disconnected)).endpoint == link.endpoint
        assert await drain_events_until(link.connector_monitor, zmtp.Closed) == [
            zmtp.Disconnected,
            zmtp.Closed,
        ]
        with pytest.raises(ValueError, match="not connected"):
            await link.connector.disconnect(link.endpoint)


async def drain_events_until(monitor: zmtp.Monitor, last: type[zmtp.MonitorEvent]) -> list[type]:
    """Event types up to and including the first ``last``."""
    types: list[type] = []
    with anyio.fail_after(TIMEOUT):
        async for event in monitor:
            types.append(type(event))
            if isinstance(event, last):
                return types
    raise AssertionError(f"monitor ended before {last.__name__}: {types}")


async def test_unbind_closes_accepted_connections(endpoint: str) -> None:
    async with linked(zmtp.PULL, zmtp.PUSH, endpoint) as link:
        await link.binder.unbind(link.endpoint)
        assert (
            await wait_event(link.connector_monitor, zmtp.Disconnected)
        ).endpoint == link.endpoint
        assert await drain_events_until(link.binder_monitor, zmtp.Closed) == [
            zmtp.Disconnected,
            zmtp.Closed,
        ]


# --------------------------------------------------------------------------- linger

BACKLOG = 500


@pytest.mark.parametrize("linger", [None, 5.0], ids=["default-infinite", "positive"])
async def test_close_flushes_queued_messages_to_a_connected_peer(
    endpoint: str, linger: float | None
) -> None:
    async with linked(zmtp.PULL, zmtp.PUSH, endpoint, connector_options={"linger": linger}) as link:
        for i in range(BACKLOG):
            await link.connector.send(b"%d" % i + b"." * 1024)
        with anyio.fail_after(TIMEOUT):
            await link.connector.close()  # returns once everything is written
        got = await recv_n(link.binder, BACKLOG)
        assert [m.split(b".")[0] for m in got] == [b"%d" % i for i in range(BACKLOG)]


async def test_close_lingers_while_the_connection_is_still_being_made(
    stream_endpoint: str,
) -> None:
    """connect(), send(), close() at once: the message waits (up to linger) for the connection
    that is being made, as with libzmq, instead of being dropped."""
    async with zmtp.Socket(zmtp.PULL, linger=0) as pull:
        target = await pull.bind(stream_endpoint)
        async with zmtp.Socket(zmtp.PUSH, linger=TIMEOUT) as push:
            await push.connect(target)
            await push.send(b"sent before the handshake")
        assert await recv_n(pull, 1) == [b"sent before the handshake"]


async def test_close_does_not_wait_for_a_dialer_that_gave_up(stream_endpoint: str) -> None:
    """With reconnecting disabled, messages queued after the connection was lost can never
    leave: even an infinite linger must not wait for them."""
    async with zmtp.Socket(zmtp.PUSH, linger=None, reconnect_ivl=None) as push:
        monitor = push.monitor()
        async with zmtp.Socket(zmtp.PULL, linger=0) as pull:
            await push.connect(await pull.bind(stream_endpoint))
            await wait_event(monitor, zmtp.HandshakeSucceeded)
        await wait_event(monitor, zmtp.Disconnected)
        await push.send(b"undeliverable")
        with anyio.fail_after(TIMEOUT):
            await push.close()


def big_backlog_options() -> dict[str, dict[str, object]]:
    """A receiver that stops reading almost at once and a sender with a deep queue of large
    messages: far more than the kernel buffers hold stays queued in the sender."""
    return {
        "binder_options": {"recv_hwm": 1},
        "connector_options": {"send_hwm": 200},
    }


async def fill_backlog(push: zmtp.Socket, n: int = 200) -> None:
    for i in range(n):
        await push.send(b"%d:" % i + b"." * (256 * 1024))


async def test_close_with_linger_zero_drops_queued_messages_promptly() -> None:
    async with linked(zmtp.PULL, zmtp.PUSH, "tcp://127.0.0.1:*", **big_backlog_options()) as link:
        await fill_backlog(link.connector)
        start = anyio.current_time()
        await link.connector.close(linger=0)
        assert anyio.current_time() - start < 1.0
        await wait_event(link.binder_monitor, zmtp.Disconnected)
        received: list[bytes] = []
        link.binder.options.recv_timeout = 0.2
        with pytest.raises(TimeoutError):
            while True:  # what made it out before the close, then nothing
                received.append(await link.binder.recv())
        assert len(received) < 200
        assert [m.split(b":")[0] for m in received] == [b"%d" % i for i in range(len(received))]


async def test_close_returns_in_bounded_time_when_the_peer_never_reads() -> None:
    async with linked(zmtp.PULL, zmtp.PUSH, "tcp://127.0.0.1:*", **big_backlog_options()) as link:
        await fill_backlog(link.connector)
        start = anyio.current_time()
        with anyio.fail_after(TIMEOUT):
            await link.connector.close(linger=0.2)
        elapsed = anyio.current_time() - start
        assert 0.2 <= elapsed < 2.0  # it did linger, then gave up


# --------------------------------------------------------------------------- monitor


async def test_monitor_event_sequence_for_bind_connect_close(endpoint: str) -> None:
    """Connect, let both handshakes finish, close the connector, then the binder."""
    async with zmtp.Socket(zmtp.PULL, linger=0) as binder:
        binder_events = binder.monitor()
        async with zmtp.Socket(zmtp.PUSH, linger=0) as connector:
            connector_events = connector.monitor()
            resolved = await binder.bind(endpoint)
            await connector.connect(resolved)
            assert await drain_events_until(connector_events, zmtp.HandshakeSucceeded) == [
                zmtp.Connected,
                zmtp.HandshakeSucceeded,
            ]
            assert await drain_events_until(binder_events, zmtp.HandshakeSucceeded) == [
                zmtp.Listening,
                zmtp.Accepted,
                zmtp.HandshakeSucceeded,
            ]
        # the connector's connection goes first, then its endpoint, then the monitor
        assert await drain_events(connector_events) == [
            zmtp.Disconnected,
            zmtp.Closed,
            zmtp.MonitorStopped,
        ]
        assert await drain_events_until(binder_events, zmtp.Disconnected) == [zmtp.Disconnected]
    assert await drain_events(binder_events) == [zmtp.Closed, zmtp.MonitorStopped]


async def test_monitor_iteration_ends_after_monitor_stopped() -> None:
    async with zmtp.Socket(zmtp.PULL, linger=0) as pull:
        monitor = pull.monitor()
        await pull.bind("tcp://127.0.0.1:*")
    events = []
    with anyio.fail_after(TIMEOUT):
        async for event in monitor:  # must end by itself
            events.append(event)
    assert isinstance(events[-1], zmtp.MonitorStopped)
    assert [type(e) for e in events] == [zmtp.Listening, zmtp.Closed, zmtp.MonitorStopped]
    with anyio.fail_after(TIMEOUT), pytest.raises(EOFError):
        await monitor.wait_for(zmtp.Listening)


async def test_monitor_of_a_closed_socket_only_stops() -> None:
    async with zmtp.Socket(zmtp.PULL, linger=0) as pull:
        pass
    assert await drain_events(pull.monitor()) == [zmtp.MonitorStopped]


async def test_handshake_succeeded_carries_peer_info(endpoint: str, transport: str) -> None:
    async with (
        zmtp.Socket(zmtp.PULL, linger=0) as binder,
        zmtp.Socket(zmtp.PUSH, linger=0) as connector,
    ):
        binder_monitor, connector_monitor = binder.monitor(), connector.monitor()
        resolved = await binder.bind(endpoint)
        await connector.connect(resolved)
        seen_by_binder = (await wait_event(binder_monitor, zmtp.HandshakeSucceeded)).peer
        seen_by_connector = (await wait_event(connector_monitor, zmtp.HandshakeSucceeded)).peer
        assert (seen_by_binder.socket_type, seen_by_connector.socket_type) == ("PUSH", "PULL")
        for peer in (seen_by_binder, seen_by_connector):
            assert peer.zmtp_version == (3, 1)
            assert peer.mechanism == "NULL"
            assert peer.endpoint == resolved
            assert peer.properties["Socket-Type"] == peer.socket_type.encode()
        assert binder.peers == [seen_by_binder]
        assert connector.peers == [seen_by_connector]
        if transport == "tcp":
            host, port = tcp_host_port(resolved)
            assert seen_by_connector.address == f"{host}:{port}"
            assert seen_by_binder.address.startswith("127.0.0.1:")
            assert seen_by_binder.address != seen_by_connector.address
        elif transport == "inproc":
            assert seen_by_binder.address == seen_by_connector.address == "inproc"
        else:
            # the path, or "@name" for an abstract socket (as in the endpoint)
            assert seen_by_connector.address == resolved.removeprefix("ipc://")
