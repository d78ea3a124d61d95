"""udp:// for RADIO and DISH, as libzmq 4.3 defines it (src/udp_engine.cpp, udp_address.cpp,
radio.cpp, dish.cpp): one message per datagram, ``[group length][group][body]``, no greeting,
no commands; RADIO connects, DISH binds and filters its groups locally.

pyzmq's wheels are built without libzmq's DRAFT API, so RADIO/DISH cannot be tested live
against libzmq: ours against ours, and byte by byte against raw UDP sockets whose datagrams are
spelled out here (not produced by our encoder).

UDP has no connection: a datagram sent before its receiver exists is simply lost. Where a test
cannot know the path is open it sends numbered probes until one arrives (bounded by
``probe_until_received``'s timeout), which is the nature of UDP, not a guess about timing.
Every other wait is on a message or a monitor event, under ``anyio.fail_after``.
"""

from __future__ import annotations

import random
import socket
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import anyio
import pytest
from anyio.abc import SocketAttribute, UDPSocket

import zmtp
from zmtp.engine.pipe import Pipe
from zmtp.testing import TIMEOUT, nothing_pending, recv_within, send_until_received, wait_event
from zmtp.transport import EndpointError, UdpEndpoint, parse_endpoint
from zmtp.transport.udp import MAX_DATAGRAM, check_endpoint, decode_datagram, encode_datagram

pytestmark = pytest.mark.anyio


def host_port(endpoint: str) -> tuple[str, int]:
    """The destination of a resolved ``udp://`` endpoint."""
    ep = parse_endpoint(endpoint)
    assert isinstance(ep, UdpEndpoint)
    return ep.host, ep.port


@asynccontextmanager
async def raw_udp() -> AsyncIterator[tuple[UDPSocket, str]]:
    """A plain UDP socket on 127.0.0.1 and the ``udp://`` endpoint that reaches it."""
    async with await anyio.create_udp_socket(local_host="127.0.0.1") as sock:
        port = sock.extra(SocketAttribute.local_port)
        yield sock, f"udp://127.0.0.1:{port}"


@asynccontextmanager
async def raw_sender() -> AsyncIterator[socket.socket]:
    """A plain blocking UDP socket on 127.0.0.1 to send hand-written datagrams with (not
    anyio's: asyncio's datagram transport, on 3.11 at least, silently skips empty ones)."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        sock.bind(("127.0.0.1", 0))
        yield sock


async def receive_within(sock: UDPSocket) -> bytes:
    with anyio.fail_after(TIMEOUT):
        data, _ = await sock.receive()
    return data


@asynccontextmanager
async def udp_pair(**radio_options: object) -> AsyncIterator[tuple[zmtp.Socket, zmtp.Socket, str]]:
    """Our DISH bound on an ephemeral udp port of 127.0.0.1, our RADIO connected to it."""
    async with (
        zmtp.Socket(zmtp.DISH, linger=0) as dish,
        zmtp.Socket(zmtp.RADIO, linger=0, **radio_options) as radio,
    ):
        endpoint = await dish.bind("udp://127.0.0.1:*")
        await radio.connect(endpoint)
        yield radio, dish, endpoint


# ---------------------------------------------------------------------- ours to ours


async def test_radio_to_dish_joined_groups_only() -> None:
    async with udp_pair() as (radio, dish, _):
        dish.join(b"news")
        dish.join("weather")
        await send_until_received(radio, dish, b"weather")
        # Over udp the RADIO sends every group (no JOIN travels); the DISH filters exactly.
        await radio.send_group(b"sport", b"not joined")
        await radio.send_group(b"new", b"prefix is not enough")
        await radio.send_group(b"newsy", b"nor is a longer name")
        await radio.send_group(b"news", b"yes")
        await radio.send_multipart([b"weather", b"also yes"])
        assert await dish.recv_group() == (b"news", b"yes")
        assert await recv_within(dish) == [b"weather", b"also yes"]
        dish.leave(b"news")
        await radio.send_group(b"news", b"left")
        await radio.send_group(b"weather", b"end")
        assert await dish.recv_group() == (b"weather", b"end")
        dish.join(b"news")  # joining again takes effect at once: nothing to tell the RADIO
        await radio.send_group(b"news", b"back")
        assert await dish.recv_group() == (b"news", b"back")
        assert await nothing_pending(dish)


async def test_bind_connect_unbind_disconnect_and_monitor_events() -> None:
    async with zmtp.Socket(zmtp.DISH, linger=0) as dish, zmtp.Socket(zmtp.RADIO) as radio:
        dmon, rmon = dish.monitor(), radio.monitor()
        endpoint = await dish.bind("udp://*:0")
        host, port = host_port(endpoint)
        assert (host, endpoint) == ("0.0.0.0", f"udp://0.0.0.0:{port}") and port > 0
        assert dish.last_endpoint == endpoint
        assert (await wait_event(dmon, zmtp.Listening)).endpoint == endpoint
        target = f"udp://127.0.0.1:{port}"
        await radio.connect(target)
        connected = await wait_event(rmon, zmtp.Connected)
        assert (connected.endpoint, connected.peer_address) == (target, f"127.0.0.1:{port}")
        with pytest.raises(ValueError, match="already connected"):
            await radio.connect(target)
        dish.join(b"g")
        await send_until_received(radio, dish, b"g")
        assert dish.peers == [] and radio.peers == []  # no handshake: no peer to describe

        await dish.unbind(endpoint)  # returns once the port is free again
        assert (await wait_event(dmon, zmtp.Closed)).endpoint == endpoint
        assert await dish.bind(endpoint) == endpoint
        await send_until_received(radio, dish, b"g")

        await radio.disconnect(target)
        assert (await wait_event(rmon, zmtp.Closed)).endpoint == target
        await radio.send_group(b"g", b"no destination: dropped, never blocks")
        await radio.connect(target)
        await send_until_received(radio, dish, b"g")
    assert (await wait_event(dmon, zmtp.Closed)).endpoint == endpoint  # closing the socket
    assert isinstance(await dmon.receive(), zmtp.MonitorStopped)


async def test_udp_alongside_other_transports_on_the_same_sockets() -> None:
    async with (
        zmtp.Socket(zmtp.RADIO, linger=0) as radio,
        zmtp.Socket(zmtp.RADIO, linger=0) as inproc_radio,
        zmtp.Socket(zmtp.DISH, linger=0) as over_tcp,
        zmtp.Socket(zmtp.DISH, linger=0) as over_udp,
    ):
        tcp_endpoint = await radio.bind("tcp://127.0.0.1:*")  # the RADIO: tcp bind + udp connect
        udp_endpoint = await over_udp.bind("udp://127.0.0.1:*")  # the DISH: udp + inproc binds
        inproc_endpoint = await over_udp.bind(f"inproc://udp-{random.getrandbits(48):x}")
        await radio.connect(udp_endpoint)
        await over_tcp.connect(tcp_endpoint)
        await inproc_radio.connect(inproc_endpoint)
        # A probe group per path, so that no probe is left in flight to the other DISH.
        over_tcp.join(b"g")
        over_tcp.join(b"probe-tcp")
        over_udp.join(b"g")
        over_udp.join(b"probe-udp")
        over_udp.join(b"probe-inproc")
        await send_until_received(radio, over_tcp, b"probe-tcp")  # its JOIN reached the RADIO
        await send_until_received(radio, over_udp, b"probe-udp")  # its socket is open
        await send_until_received(inproc_radio, over_udp, b"probe-inproc")
        await radio.send_group(b"other", b"for nobody")
        await radio.send_group(b"g", b"for both")
        assert await over_tcp.recv_group() == (b"g", b"for both")  # the RADIO filtered
        assert await over_udp.recv_group() == (b"g", b"for both")  # the DISH filtered
        await inproc_radio.send_group(b"g", b"over inproc")
        assert await over_udp.recv_group() == (b"g", b"over inproc")
        assert await nothing_pending(over_tcp) and await nothing_pending(over_udp)


async def test_radio_linger_flushes_queued_datagrams_on_close() -> None:
    async with raw_udp() as (receiver, endpoint):
        async with zmtp.Socket(zmtp.RADIO) as radio:  # linger None: flush everything
            await radio.connect(endpoint)
            for i in range(50):
                await radio.send_group(b"g", b"%d" % i)
        got = [await receive_within(receiver) for _ in range(50)]
    assert got == [b"\x01g%d" % i for i in range(50)]


async def test_radio_never_blocks_and_dish_back_pressure_loses_nothing_it_read() -> None:
    async with udp_pair(send_hwm=1) as (radio, dish, _):
        dish.join(b"g")
        await send_until_received(radio, dish, b"g")
        with anyio.fail_after(TIMEOUT):  # a full udp queue drops that copy; send never waits
            for i in range(2000):
                await radio.send_group(b"g", b"%d" % i)
    async with (
        zmtp.Socket(zmtp.DISH, linger=0, recv_hwm=1) as dish,
        raw_sender() as sender,
    ):
        dish.join(b"g")
        host, port = host_port(await dish.bind("udp://127.0.0.1:*"))
        for i in range(5):  # the DISH stops reading at its HWM; the rest wait in the OS buffer
            sender.sendto(b"\x01g%d" % i, (host, port))
        assert [await recv_within(dish) for _ in range(5)] == [[b"g", b"%d" % i] for i in range(5)]


class Recorder(zmtp.SocketExtension):
    """Records the hooks a udp pipe goes through."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, list[bytes] | None]] = []

    def pipe_connected(self, pipe: Pipe) -> None:
        self.calls.append(("pipe_connected", None))

    def before_send(self, pipe: Pipe, message: list[bytes]) -> None:
        self.calls.append(("before_send", list(message)))

    def on_receive(self, pipe: Pipe, message: list[bytes]) -> bool:
        self.calls.append(("on_receive", list(message)))
        return message[1] != b"consumed"

    def pipe_removed(self, pipe: Pipe) -> None:
        self.calls.append(("pipe_removed", None))


async def test_extension_hooks_see_udp_messages() -> None:
    async with raw_udp() as (receiver, endpoint):
        async with zmtp.Socket(zmtp.RADIO, linger=0) as radio:
            radio_ext = Recorder()
            radio.install_extension(radio_ext)
            await radio.connect(endpoint)
            await radio.send_group(b"g", b"hook")
            assert await receive_within(receiver) == b"\x01ghook"
            await radio.disconnect(endpoint)
        assert radio_ext.calls == [("before_send", [b"g", b"hook"]), ("pipe_removed", None)]
    async with zmtp.Socket(zmtp.DISH, linger=0) as dish, raw_sender() as sender:
        dish_ext = Recorder()
        dish.install_extension(dish_ext)
        endpoint = await dish.bind("udp://127.0.0.1:*")
        dish.join(b"g")
        for body in (b"consumed", b"delivered"):
            sender.sendto(b"\x01g" + body, host_port(endpoint))
        assert await dish.recv_group() == (b"g", b"delivered")
        await dish.unbind(endpoint)
        assert dish_ext.calls == [
            ("on_receive", [b"g", b"consumed"]),
            ("on_receive", [b"g", b"delivered"]),
            ("pipe_removed", None),
        ]


# ---------------------------------------------------------------------- byte level: DISH


async def test_dish_decodes_raw_datagrams() -> None:
    async with zmtp.Socket(zmtp.DISH, linger=0) as dish, raw_sender() as sender:
        host, port = host_port(await dish.bind("udp://127.0.0.1:*"))
        long_group = bytes(range(1, 256))  # 255 bytes: the length byte is 0xff (unsigned)
        for group in (b"g", b"", long_group):
            dish.join(group)
        for datagram in (
            b"\x01gbody",
            b"\x01g",  # empty body
            b"\x00no group",  # the empty group
            b"\xff" + long_group + b"long",
            b"\x01hnot joined",
            b"\x02gx" + b"\x00\x01",  # group "gx": not joined, body bytes are opaque
            b"\x01g" + b"m" * (MAX_DATAGRAM - 2),  # exactly the 8192-byte limit
        ):
            sender.sendto(datagram, (host, port))
        assert await recv_within(dish) == [b"g", b"body"]
        assert await recv_within(dish) == [b"g", b""]
        assert await recv_within(dish) == [b"", b"no group"]
        assert await recv_within(dish) == [long_group, b"long"]
        assert await recv_within(dish) == [b"g", b"m" * (MAX_DATAGRAM - 2)]
        assert await nothing_pending(dish)


async def test_dish_drops_malformed_datagrams_reports_them_and_keeps_working() -> None:
    async with zmtp.Socket(zmtp.DISH, linger=0) as dish, raw_sender() as sender:
        monitor = dish.monitor()
        endpoint = await dish.bind("udp://127.0.0.1:*")
        host, port = host_port(endpoint)
        dish.join(b"g")
        sender_address = "{}:{}".format(*sender.getsockname())
        bad = [
            (b"", "empty datagram"),
            (b"\x05ab", "group length 5 runs past the end of a 3-byte datagram"),
            (b"\x01", "group length 1 runs past the end of a 1-byte datagram"),
            (b"\x01g" + b"x" * (MAX_DATAGRAM - 1), "exceeds the udp limit of 8192 bytes"),
        ]
        for datagram, _ in bad:
            sender.sendto(datagram, (host, port))
            sender.sendto(b"\x01gstill working", (host, port))
        for datagram, reason in bad:
            assert await dish.recv_group() == (b"g", b"still working")
            event = await wait_event(monitor, zmtp.DatagramDropped)
            assert reason in event.reason, (datagram[:8], event)
            assert (event.endpoint, event.peer_address) == (endpoint, sender_address)
        assert await nothing_pending(dish)


# ---------------------------------------------------------------------- byte level: RADIO


async def test_radio_datagram_bytes() -> None:
    async with raw_udp() as (receiver, endpoint), zmtp.Socket(zmtp.RADIO, linger=0) as radio:
        await radio.connect(endpoint)  # queued until the socket is open, then sent in order
        await radio.send_group(b"g", b"hello")  # no JOIN over udp: every group goes out
        await radio.send_group("other", "text")
        await radio.send_group(b"", b"empty group")
        await radio.send_group(b"g", b"")
        await radio.send_multipart([b"x" * 255, b"long group"])
        assert await receive_within(receiver) == b"\x01ghello"
        assert await receive_within(receiver) == b"\x05othertext"
        assert await receive_within(receiver) == b"\x00empty group"
        assert await receive_within(receiver) == b"\x01g"
        assert await receive_within(receiver) == b"\xff" + b"x" * 255 + b"long group"
        # The codec the engine uses agrees with the bytes spelled out above.
        assert encode_datagram(b"g", b"hello") == b"\x01ghello"
        assert decode_datagram(b"\x01ghello") == [b"g", b"hello"]


async def test_radio_drops_and_reports_oversize_messages() -> None:
    async with raw_udp() as (receiver, endpoint), zmtp.Socket(zmtp.RADIO, linger=0) as radio:
        monitor = radio.monitor()
        await radio.connect(endpoint)
        fits = b"f" * (MAX_DATAGRAM - 2)  # 1 + len("g") + body = 8192
        await radio.send_group(b"g", fits)
        await radio.send_group(b"g", fits + b"!")  # one byte too many: dropped
        await radio.send_group(b"g", b"next")
        assert await receive_within(receiver) == b"\x01g" + fits
        assert await receive_within(receiver) == b"\x01gnext"  # the oversize one never left
        event = await wait_event(monitor, zmtp.DatagramDropped)
        assert "8193 bytes exceeds the udp limit of 8192" in event.reason
        assert (event.endpoint, event.peer_address) == (endpoint, endpoint[len("udp://") :])


async def test_radio_reports_a_send_the_os_refuses_and_carries_on() -> None:
    # Broadcast without SO_BROADCAST: every sendto fails with EACCES, on every OS.
    async with zmtp.Socket(zmtp.RADIO, linger=0) as radio:
        monitor = radio.monitor()
        await radio.connect("udp://255.255.255.255:9")
        await radio.send_group(b"g", b"first")
        await radio.send_group(b"g", b"second")
        for _ in range(2):
            event = await wait_event(monitor, zmtp.DatagramDropped)
            assert event.reason.startswith("send failed"), event
            assert event.peer_address == "255.255.255.255:9"


# ---------------------------------------------------------------------- multicast


def multicast_loopback_problem(group: str) -> str | None:
    """Why IPv4 multicast on the loopback interface does not work here (None if it does)."""
    receiver = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sender = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        receiver.bind(("0.0.0.0", 0))
        port = receiver.getsockname()[1]
        mreq = socket.inet_aton(group) + socket.inet_aton("127.0.0.1")
        receiver.setsockopt(socket.IPPROTO_IP, socket.IP_ADD_MEMBERSHIP, mreq)
        sender.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_IF, socket.inet_aton("127.0.0.1"))
        sender.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_LOOP, 1)
        sender.sendto(b"probe", (group, port))
        receiver.settimeout(2.0)
        receiver.recvfrom(16)
        return None
    except OSError as exc:
        return f"{type(exc).__name__}: {exc}"
    finally:
        receiver.close()
        sender.close()


async def test_multicast_loopback_reaches_every_dish_on_the_group() -> None:
    group = f"239.255.{random.randrange(1, 255)}.{random.randrange(1, 255)}"
    problem = await anyio.to_thread.run_sync(multicast_loopback_problem, group)
    if problem is not None:
        pytest.xfail(f"IPv4 multicast over the loopback interface is unavailable here: {problem}")
    async with (
        zmtp.Socket(zmtp.DISH, linger=0) as d1,
        zmtp.Socket(zmtp.DISH, linger=0) as d2,
        zmtp.Socket(zmtp.RADIO, linger=0, multicast_hops=1, multicast_loop=True) as radio,
    ):
        first = await d1.bind(f"udp://127.0.0.1;{group}:*")
        port = host_port(first)[1]
        assert first == f"udp://127.0.0.1;{group}:{port}"
        # SO_REUSEPORT, as libzmq: a second DISH can join the same group on the same port.
        assert await d2.bind(first) == first
        with pytest.raises(OSError, match="already bound"):
            await d2.bind(first)
        for dish, probe in ((d1, b"probe-1"), (d2, b"probe-2")):
            dish.join(b"g")
            dish.join(probe)  # a probe group each: no probe is left in flight to the other
        await radio.connect(first)
        await send_until_received(radio, d1, b"probe-1")
        await send_until_received(radio, d2, b"probe-2")
        await radio.send_group(b"h", b"not joined")
        await radio.send_group(b"g", b"to the group")
        assert await d1.recv_group() == (b"g", b"to the group")
        assert await d2.recv_group() == (b"g", b"to the group")


# ---------------------------------------------------------------------- errors


@pytest.mark.parametrize(
    ("socket_type", "method", "endpoint"),
    [
        ("RADIO", "bind", "udp://127.0.0.1:*"),
        ("DISH", "connect", "udp://127.0.0.1:5555"),
        ("PUB", "bind", "udp://127.0.0.1:*"),
        ("SUB", "connect", "udp://127.0.0.1:5555"),
        ("PAIR", "connect", "udp://127.0.0.1:5555"),
        ("SERVER", "bind", "udp://127.0.0.1:*"),
    ],
)
async def test_only_radio_connect_and_dish_bind_may_use_udp(
    socket_type: str, method: str, endpoint: str
) -> None:
    async with zmtp.Socket(socket_type, linger=0) as sock:
        monitor = sock.monitor()
        with pytest.raises(EndpointError, match="ENOCOMPATPROTO") as info:
            await getattr(sock, method)(endpoint)
        assert f"{method}() on a {socket_type} socket" in str(info.value)
        assert "RADIO connect() and DISH bind() only" in str(info.value)
        assert not sock.engine.endpoints.any() and not sock.engine.pipes
    assert isinstance(await monitor.receive(), zmtp.MonitorStopped)  # not even BindFailed


async def test_groups_longer_than_255_bytes_are_refused() -> None:
    async with raw_udp() as (receiver, endpoint), zmtp.Socket(zmtp.RADIO, linger=0) as radio:
        await radio.connect(endpoint)
        with pytest.raises(ValueError, match="255"):
            await radio.send_group(b"x" * 256, b"data")
        with pytest.raises(ValueError, match="255"):
            await radio.send_multipart([b"x" * 256, b"data"])
        await radio.send_group(b"x" * 255, b"")  # the longest a length byte can say
        assert await receive_within(receiver) == b"\xff" + b"x" * 255
    async with zmtp.Socket(zmtp.DISH, linger=0) as dish:
        await dish.bind("udp://127.0.0.1:*")
        with pytest.raises(ValueError, match="255"):
            dish.join(b"x" * 256)


async def test_bind_failures_raise_and_report() -> None:
    async with (
        zmtp.Socket(zmtp.DISH, linger=0) as first,
        zmtp.Socket(zmtp.DISH, linger=0) as second,
    ):
        taken = await first.bind("udp://127.0.0.1:*")
        monitor = second.monitor()
        with pytest.raises(OSError):
            await second.bind(taken)  # unicast: no SO_REUSEADDR, so no silent port sharing
        event = await wait_event(monitor, zmtp.BindFailed)
        assert event.endpoint == taken and event.reason
        with pytest.raises(OSError, match="no network interface"):
            await second.bind("udp://nosuchif0;[ff02::1]:*")
        with pytest.raises(EndpointError, match="not a hostname"):
            await second.bind("udp://localhost:5555")  # a bind address is literal (no DNS)


async def test_connect_failures_are_retried_like_a_dial() -> None:
    async with zmtp.Socket(zmtp.RADIO, linger=0, reconnect_ivl=0.01) as radio:
        monitor = radio.monitor()
        endpoint = "udp://nosuchif0;[ff02::1]:5555"
        await radio.connect(endpoint)  # returns at once, like a tcp connect
        delayed = await wait_event(monitor, zmtp.ConnectDelayed)
        assert delayed.endpoint == endpoint and "no network interface" in delayed.reason
        assert (await wait_event(monitor, zmtp.ConnectRetried)).endpoint == endpoint
        await wait_event(monitor, zmtp.ConnectDelayed)  # and again
        await radio.send_group(b"g", b"queued, never blocks")
        with pytest.raises(EndpointError, match="wildcard"):
            await radio.connect("udp://*:5555")
        with pytest.raises(EndpointError, match="port 0"):
            await radio.connect("udp://127.0.0.1:0")


def test_udp_endpoint_syntax() -> None:
    def parsed(text: str) -> UdpEndpoint:
        ep = parse_endpoint(text)
        assert isinstance(ep, UdpEndpoint) and str(ep) == text
        return ep

    assert parsed("udp://*:5555") == UdpEndpoint("*", 5555)
    assert parsed("udp://127.0.0.1:5555") == UdpEndpoint("127.0.0.1", 5555)
    assert parsed("udp://[::1]:5555") == UdpEndpoint("::1", 5555)
    assert parsed("udp://radio.example:5555") == UdpEndpoint("radio.example", 5555)
    group = parsed("udp://239.1.2.3:5555")
    assert group.multicast and group.interface is None
    assert parsed("udp://eth0;239.1.2.3:5555") == UdpEndpoint("239.1.2.3", 5555, "eth0")
    assert parsed("udp://192.168.1.2;239.1.2.3:0").interface == "192.168.1.2"
    assert parsed("udp://*;[ff02::1]:5555") == UdpEndpoint("ff02::1", 5555, "*")
    assert parse_endpoint("udp://127.0.0.1:*") == UdpEndpoint("127.0.0.1", 0)
    for bad, fragment in [
        ("udp://127.0.0.1", "host:port"),
        ("udp://127.0.0.1:x", "invalid port"),
        ("udp://eth0;127.0.0.1:5555", "needs a multicast group"),  # libzmq: EINVAL
        ("udp://239.1.1.1;239.1.2.3:5555", "interface .* is a multicast address"),
        ("udp://;239.1.2.3:5555", "empty interface"),
    ]:
        with pytest.raises(EndpointError, match=fragment):
            parse_endpoint(bad)


def test_multicast_options() -> None:
    options = zmtp.Options()
    assert (options.multicast_hops, options.multicast_loop) == (1, True)  # libzmq's defaults
    for hops in (0, 256):
        with pytest.raises(ValueError, match="multicast_hops"):
            zmtp.Options(multicast_hops=hops)


def test_interface_rules_checked_before_any_io(monkeypatch: pytest.MonkeyPatch) -> None:
    def check(text: str, operation: str) -> None:
        ep = parse_endpoint(text)
        assert isinstance(ep, UdpEndpoint)
        check_endpoint(ep, operation)

    check("udp://eth0;239.1.2.3:5555", "bind")  # a name: looked up when binding
    check("udp://127.0.0.1;239.1.2.3:*", "bind")
    with pytest.raises(EndpointError, match="IPv6 multicast needs an interface name"):
        check("udp://::1;[ff02::1]:5555", "connect")  # libzmq: ENODEV
    with pytest.raises(EndpointError, match="different IP families"):
        check("udp://::1;239.1.2.3:5555", "bind")
    # IPv4 membership by interface *name* uses Linux's ip_mreqn; elsewhere, say so up front.
    monkeypatch.setattr(sys, "platform", "darwin")
    with pytest.raises(EndpointError, match="needs Linux"):
        check("udp://eth0;239.1.2.3:5555", "bind")
