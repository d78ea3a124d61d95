"""udp:// as libzmq 4.3 defines it for RADIO and DISH: datagram framing and sockets on anyio.

The wire format (libzmq ``src/udp_engine.cpp``) has no greeting, no handshake, no commands:
each RADIO message is one datagram, ``[group length: 1 byte][group][body]``. So a DISH cannot
tell a RADIO which groups it joined (JOIN/LEAVE never travel), a RADIO sends every group to
its udp destination, and the DISH filters locally.

This module is the sans-engine part: the datagram codec (pure functions) and opening the anyio
UDP sockets with libzmq's addressing rules (``src/udp_address.cpp``) and multicast options.
The engine that runs them for a socket is :mod:`zmtp.engine.udp`.
"""

from __future__ import annotations

import ipaddress
import socket
import struct
import sys
from dataclasses import dataclass
from typing import Literal

import anyio
from anyio.abc import SocketAttribute, UDPSocket

from .endpoint import EndpointError, UdpEndpoint

#: libzmq's ``MAX_UDP_MSG`` (``udp_engine.hpp``): its send and receive buffers are this big,
#: so a datagram of more bytes (length byte + group + body) cannot travel between libzmq peers.
MAX_DATAGRAM = 8192

_REUSE_PORT = hasattr(socket, "SO_REUSEPORT")

#: The address families a udp endpoint can have (what anyio's ``create_udp_socket`` takes).
_Family = Literal[socket.AddressFamily.AF_INET, socket.AddressFamily.AF_INET6]


# ------------------------------------------------------------------ datagram codec


def datagram_size(group: bytes, body: bytes) -> int:
    """Bytes of the datagram that would carry ``[group, body]`` (checked against the limit
    before building it)."""
    return 1 + len(group) + len(body)


def encode_datagram(group: bytes, body: bytes) -> bytes:
    """One RADIO message as one datagram: length byte, group, body (``udp_engine::out_event``).

    The group is at most 255 bytes (checked by the RADIO's ``check_send``).
    """
    return b"".join((bytes((len(group),)), group, body))


def decode_datagram(data: bytes) -> list[bytes] | str:
    """``[group, body]`` from one datagram, or the reason it is dropped.

    libzmq (``udp_engine::in_event``) ignores a datagram whose group length runs past its end;
    it does not check the others, which are dropped here rather than mis-delivered: an empty
    datagram (libzmq reads a stale length byte) and one over :data:`MAX_DATAGRAM` (libzmq
    receives into an 8192-byte buffer and delivers the truncated remainder as the body).
    """
    size = len(data)
    if not size:
        return "empty datagram"
    if size > MAX_DATAGRAM:
        return f"datagram of {size} bytes exceeds the udp limit of {MAX_DATAGRAM} bytes"
    length = data[0]
    if length >= size:
        return f"group length {length} runs past the end of a {size}-byte datagram"
    return [data[1 : 1 + length], data[1 + length :]]


# ------------------------------------------------------------------ addressing


@dataclass(frozen=True)
class _Interface:
    """The ``interface;`` of a multicast endpoint: an IPv4 address, an interface index, or
    neither (``*`` / none given: the kernel picks)."""

    address: str | None = None
    index: int = 0


def _family(host: str) -> _Family:
    if ipaddress.ip_address(host.partition("%")[0]).version == 6:
        return socket.AddressFamily.AF_INET6
    return socket.AddressFamily.AF_INET


def _interface(endpoint: UdpEndpoint, family: _Family, lookup: bool) -> _Interface:
    """Resolve ``endpoint.interface`` for ``family`` as libzmq does: no DNS, ``*``, an address
    or an interface name. IPv6 multicast is addressed by interface *index* only, so an IPv6
    interface must be a name or ``*`` (libzmq: ENODEV). Without ``lookup``, only the checks
    that need no system call are made (an interface name resolves to an empty result)."""
    name = endpoint.interface
    if name is None or name == "*":
        return _Interface()
    try:
        literal = ipaddress.ip_address(name)
    except ValueError:
        literal = None
    if literal is not None:
        if family == socket.AF_INET6:
            raise EndpointError(
                f"IPv6 multicast needs an interface name (or *), not an address, in '{endpoint}'"
            )
        if literal.version != 4:
            raise EndpointError(f"interface and group are of different IP families in '{endpoint}'")
        return _Interface(address=name)
    if family == socket.AF_INET and sys.platform != "linux":
        raise EndpointError(
            f"IPv4 multicast by interface name needs Linux; give the interface's address in "
            f"'{endpoint}'"
        )
    if not lookup:
        return _Interface()
    try:
        return _Interface(index=socket.if_nametoindex(name))
    except OSError:
        raise OSError(f"no network interface named {name!r}") from None


def check_endpoint(endpoint: UdpEndpoint, operation: str) -> None:
    """Refuse what cannot work for ``operation`` ("bind" or "connect") before any I/O, with
    libzmq's rules: a bind address is literal (no DNS), a destination has a real port, an
    interface suits its group's IP family."""
    if operation == "connect":
        if endpoint.host == "*" or endpoint.port == 0:
            raise EndpointError(f"cannot send to a wildcard address or port 0 in '{endpoint}'")
    elif endpoint.host != "*":
        try:
            ipaddress.ip_address(endpoint.host)
        except ValueError:
            raise EndpointError(
                f"bind needs an IP address, a multicast group or * in '{endpoint}', not a "
                "hostname or an interface name"
            ) from None
    if endpoint.multicast:
        _interface(endpoint, _family(endpoint.host), lookup=False)


def format_address(address: object) -> str:
    """``host:port`` (``[host]:port`` for IPv6) for monitor events."""
    if isinstance(address, tuple) and len(address) >= 2:
        host, port = address[0], address[1]
        return f"[{host}]:{port}" if ":" in str(host) else f"{host}:{port}"
    return str(address)


# ------------------------------------------------------------------ sockets


@dataclass
class Sender:
    """A RADIO's open udp socket and where its datagrams go.

    ``raw`` is a non-blocking duplicate of the socket for a synchronous ``sendto`` that
    reports its errors: asyncio's datagram transport hands out no ``sendto`` and passes send
    errors to ``error_received``, which anyio keeps to itself. ``udp`` (anyio's) is for waiting
    when the kernel's buffer is full.
    """

    udp: UDPSocket
    raw: socket.socket
    host: str  #: the destination address (resolved)
    port: int
    sockaddr: tuple[object, ...]  #: as getaddrinfo gave it (IPv6: with scope), for ``sendto``
    multicast: bool

    @property
    def peer_address(self) -> str:
        return format_address(self.sockaddr)

    async def aclose(self) -> None:
        self.raw.close()
        with anyio.CancelScope(shield=True):
            await self.udp.aclose()


async def open_sender(endpoint: UdpEndpoint, hops: int, loop: bool) -> Sender:
    """A send-only socket for a RADIO's ``connect`` (``udp_engine::plug`` with send enabled).

    The destination is resolved once, here (hostnames allowed, as libzmq's connect allows DNS).
    For a multicast group: ``IP_MULTICAST_LOOP`` = ``loop`` (``ZMQ_MULTICAST_LOOP``),
    ``IP_MULTICAST_TTL`` = ``hops`` (``ZMQ_MULTICAST_HOPS``) and, when an interface is given,
    ``IP_MULTICAST_IF``. The socket is not connected: like libzmq's ``sendto``, an ICMP "port
    unreachable" from a host with no DISH yet cannot turn into an error on a later send.
    """
    infos = await anyio.getaddrinfo(endpoint.host, endpoint.port, type=socket.SOCK_DGRAM)
    if not infos:
        raise OSError(f"cannot resolve {endpoint.host!r}")
    _, _, _, _, sockaddr = infos[0]
    host = str(sockaddr[0])
    multicast = ipaddress.ip_address(host.partition("%")[0]).is_multicast
    family = _family(host)
    iface = _interface(endpoint, family, lookup=True) if multicast else _Interface()
    udp = await anyio.create_udp_socket(family=family)
    try:
        if multicast:
            _set_multicast_sending(udp, family, iface, hops, loop)
        raw = udp.extra(SocketAttribute.raw_socket).dup()
        raw.setblocking(False)
    except BaseException:
        with anyio.CancelScope(shield=True):
            await udp.aclose()
        raise
    return Sender(udp, raw, host, int(sockaddr[1]), tuple(sockaddr), multicast)


def _set_multicast_sending(
    udp: UDPSocket, family: _Family, iface: _Interface, hops: int, loop: bool
) -> None:
    raw = udp.extra(SocketAttribute.raw_socket)
    if family == socket.AF_INET6:
        raw.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_MULTICAST_LOOP, int(loop))
        # (libzmq 4.3 sets IP_MULTICAST_TTL at the IPv6 level here, which is not the hop
        # limit; the IPv6 option is the one meant.)
        raw.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_MULTICAST_HOPS, hops)
        if iface.index:
            raw.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_MULTICAST_IF, iface.index)
        return
    raw.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_LOOP, int(loop))
    raw.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_TTL, hops)
    if iface.address is not None:
        raw.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_IF, socket.inet_aton(iface.address))
    elif iface.index:
        raw.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_IF, _ip_mreqn("0.0.0.0", iface))


@dataclass
class Receiver:
    """A DISH's bound udp socket and the endpoint it resolved to (the real port)."""

    udp: UDPSocket
    endpoint: str


async def open_receiver(endpoint: UdpEndpoint) -> Receiver:
    """A bound socket for a DISH's ``bind`` (``udp_engine::plug`` with receive enabled).

    Unicast: bind the address itself (``*`` = every IPv4 interface). Multicast: as libzmq, bind
    the wildcard address on the port with ``SO_REUSEPORT`` (several receivers may share a
    group's port) and join the group on the interface given (or any). Raises OSError (address
    in use, unknown interface...) for the caller to report as ``BindFailed``.

    Unlike libzmq, a unicast bind does not set ``SO_REUSEADDR``: with it, a second bind to a
    port in use silently succeeds and steals the datagrams; without it, it fails loudly.
    """
    host = "0.0.0.0" if endpoint.host == "*" else endpoint.host
    family = _family(host)
    if endpoint.multicast:
        iface = _interface(endpoint, family, lookup=True)
        local = "::" if family == socket.AF_INET6 else "0.0.0.0"
        udp = await anyio.create_udp_socket(
            family=family, local_host=local, local_port=endpoint.port, reuse_port=_REUSE_PORT
        )
        try:
            _join(udp, family, host, iface)
        except BaseException:
            with anyio.CancelScope(shield=True):
                await udp.aclose()
            raise
    else:
        udp = await anyio.create_udp_socket(
            family=family, local_host=host, local_port=endpoint.port
        )
    port = int(udp.extra(SocketAttribute.local_port))
    return Receiver(udp, str(UdpEndpoint(host, port, endpoint.interface)))


def _join(udp: UDPSocket, family: _Family, group: str, iface: _Interface) -> None:
    """``IP_ADD_MEMBERSHIP`` / ``IPV6_JOIN_GROUP`` (libzmq ``udp_engine::add_membership``)."""
    raw = udp.extra(SocketAttribute.raw_socket)
    if family == socket.AF_INET6:
        mreq6 = socket.inet_pton(socket.AF_INET6, group) + struct.pack("@I", iface.index)
        raw.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_JOIN_GROUP, mreq6)
        return
    if iface.index:
        mreq = _ip_mreqn(group, iface)
    else:
        mreq = socket.inet_aton(group) + socket.inet_aton(iface.address or "0.0.0.0")
    raw.setsockopt(socket.IPPROTO_IP, socket.IP_ADD_MEMBERSHIP, mreq)


def _ip_mreqn(group: str, iface: _Interface) -> bytes:
    """Linux ``struct ip_mreqn`` (group, local address, interface index): IPv4 multicast by
    interface name, which libzmq supports by looking up the interface's address."""
    return socket.inet_aton(group) + socket.inet_aton("0.0.0.0") + struct.pack("@i", iface.index)
