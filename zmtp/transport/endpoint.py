"""Endpoint strings: ``tcp://host:port``, ``ipc://path``, ``ipc://@abstract``, ``inproc://name``."""

from __future__ import annotations

from dataclasses import dataclass


class EndpointError(ValueError):
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


Endpoint = TcpEndpoint | IpcEndpoint | InprocEndpoint


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
    raise EndpointError(f"unsupported transport {scheme!r} in {text!r} (tcp, ipc, inproc)")


def _parse_tcp(text: str, rest: str) -> TcpEndpoint:
    if rest.startswith("["):
        host, bracket, port_text = rest[1:].partition("]")
        if not bracket or not port_text.startswith(":"):
            raise EndpointError(f"malformed IPv6 endpoint {text!r} (expected tcp://[addr]:port)")
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
    return TcpEndpoint(host, port)
