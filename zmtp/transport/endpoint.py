"""Endpoint strings: ``tcp://host:port``, ``ipc://path``, ``ipc://@abstract``, ``inproc://name``,
``udp://[interface;]host:port`` (RADIO/DISH only, see :mod:`zmtp.transport.udp`).

Parsing is syntax only: whether a host is resolvable, or a socket type may use a transport, is
decided by the transport when the endpoint is bound or connected.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass

from ..protocol.errors import InvalidArgument


class EndpointError(InvalidArgument):
    """A malformed or unsupported endpoint string."""


@dataclass(frozen=True)
class TcpEndpoint:
    host: str  #: "*" (all IPv4 interfaces, bind only), an IP address, or a hostname
    port: int  #: 0 = ephemeral (bind only; "*" parses to 0)

    def __str__(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"tcp://{host}:{self.port}"


@dataclass(frozen=True)
class IpcEndpoint:
    path: str  #: a filesystem path, "@name" for Linux's abstract namespace, or "*" (bind only)

    @property
    def address(self) -> str:
        """What the OS is given: abstract names start with a NUL byte."""
        return "\0" + self.path[1:] if self.path.startswith("@") else self.path

    @property
    def abstract(self) -> bool:
        return self.path.startswith("@")

    def __str__(self) -> str:
        return f"ipc://{self.path}"


@dataclass(frozen=True)
class InprocEndpoint:
    name: str

    def __str__(self) -> str:
        return f"inproc://{self.name}"


@dataclass(frozen=True)
class UdpEndpoint:
    """libzmq 4.3's ``udp://`` address (``udp_address.cpp``): ``[interface;]host:port``.

    ``host`` is the destination for a RADIO's ``connect`` (an IP address, a multicast group or a
    hostname) and the local address for a DISH's ``bind`` (an IP address, ``*``, or a multicast
    group to join). The ``interface;`` prefix is only valid with a multicast group: it names the
    interface multicast is sent from / received on (``*``, an IP address or, as in libzmq, an
    interface name).
    """

    host: str  #: "*" (bind only), an IP address, a multicast group, or a hostname (connect only)
    port: int  #: 0 = ephemeral (bind only; "*" parses to 0)
    interface: str | None = None  #: the part before ";", or None

    @property
    def multicast(self) -> bool:
        """Whether ``host`` is a literal multicast group (a hostname never counts: libzmq
        decides after resolving, and so do we, in :mod:`zmtp.transport.udp`)."""
        return _literal_multicast(self.host)

    def __str__(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        prefix = f"{self.interface};" if self.interface is not None else ""
        return f"udp://{prefix}{host}:{self.port}"


Endpoint = TcpEndpoint | IpcEndpoint | InprocEndpoint | UdpEndpoint


def parse_endpoint(text: str) -> Endpoint:
    """Parse an endpoint string, with errors that say what is wrong."""
    if not isinstance(text, str):
        raise EndpointError(f"endpoint must be a str, not {type(text).__name__}")
    scheme, sep, rest = text.partition("://")
    if not sep:
        raise EndpointError(f"endpoint {text!r} has no transport (expected e.g. tcp://host:port)")
    if scheme == "tcp":
        return _parse_tcp(text, rest)
    if scheme == "ipc":
        if not rest:
            raise EndpointError(f"endpoint {text!r} has an empty path")
        return IpcEndpoint(rest)
    if scheme == "inproc":
        if not rest:
            raise EndpointError(f"endpoint {text!r} has an empty name")
        return InprocEndpoint(rest)
    if scheme == "udp":
        return _parse_udp(text, rest)
    raise EndpointError(f"unsupported transport {scheme!r} in {text!r} (tcp, ipc, inproc, udp)")


def _parse_tcp(text: str, rest: str) -> TcpEndpoint:
    return TcpEndpoint(*_host_port(text, rest, "tcp"))


def _parse_udp(text: str, rest: str) -> UdpEndpoint:
    """libzmq's ``udp_address_t::resolve`` grammar: the last ``;`` separates an interface from
    the address, and an interface is only meaningful (and only accepted) with a multicast group.
    """
    interface: str | None = None
    if ";" in rest:
        interface, _, rest = rest.rpartition(";")
        if interface.startswith("[") and interface.endswith("]"):
            interface = interface[1:-1]
        if not interface:
            raise EndpointError(f"empty interface before ';' in {text!r}")
        if _literal_multicast(interface):
            # libzmq: EINVAL ("it doesn't make sense to have a multicast address as a source")
            raise EndpointError(f"the interface in {text!r} is a multicast address")
    host, port = _host_port(text, rest, "udp")
    if interface is not None and not _literal_multicast(host):
        # libzmq: EINVAL (with an interface specifier the target must be multicast)
        raise EndpointError(
            f"{text!r} names an interface, which needs a multicast group address "
            "(udp://interface;group:port)"
        )
    return UdpEndpoint(host, port, interface)


def _literal_multicast(host: str) -> bool:
    try:
        return ipaddress.ip_address(host).is_multicast
    except ValueError:
        return False


def _host_port(text: str, rest: str, scheme: str) -> tuple[str, int]:
    """``host:port`` or ``[ipv6]:port``; the port may be ``*`` (0: ephemeral)."""
    if rest.startswith("["):
        host, bracket, port_text = rest[1:].partition("]")
        if not bracket or not port_text.startswith(":"):
            raise EndpointError(
                f"malformed IPv6 endpoint {text!r} (expected {scheme}://[addr]:port)"
            )
        port_text = port_text[1:]
    else:
        host, colon, port_text = rest.rpartition(":")
        if not colon or not host:
            raise EndpointError(f"endpoint {text!r} needs host:port")
    if port_text == "*":
        port = 0
    else:
        try:
            port = int(port_text)
        except ValueError:
            raise EndpointError(f"invalid port {port_text!r} in {text!r}") from None
        if not 0 <= port <= 65535:
            raise EndpointError(f"port {port} out of range in {text!r}")
    return host, port
