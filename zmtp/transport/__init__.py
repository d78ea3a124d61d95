"""Transports: endpoint parsing, tcp/ipc streams and udp datagram sockets on anyio (inproc lives
in the engine)."""

from .endpoint import (
    Endpoint,
    EndpointError,
    InprocEndpoint,
    IpcEndpoint,
    TcpEndpoint,
    UdpEndpoint,
    parse_endpoint,
)

__all__ = [
    "Endpoint",
    "EndpointError",
    "InprocEndpoint",
    "IpcEndpoint",
    "TcpEndpoint",
    "UdpEndpoint",
    "parse_endpoint",
]
