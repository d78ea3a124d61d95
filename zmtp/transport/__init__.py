"""Transports: endpoint parsing, tcp/ipc streams on anyio (inproc lives in the engine)."""

from .endpoint import (
    Endpoint,
    EndpointError,
    InprocEndpoint,
    IpcEndpoint,
    TcpEndpoint,
    parse_endpoint,
)

__all__ = [
    "Endpoint",
    "EndpointError",
    "InprocEndpoint",
    "IpcEndpoint",
    "TcpEndpoint",
    "parse_endpoint",
]
