"""Stream transports (tcp, ipc) on anyio: listen and dial, returning anyio byte streams.

Only this module and :mod:`zmtp.transport.inproc` know about transports; the engine sees an
anyio ``ByteStream`` plus two strings (our endpoint, the peer's address).
"""

from __future__ import annotations

import contextlib
import os
import socket
import struct
import sys
from dataclasses import dataclass

import anyio
from anyio.abc import ByteStream, SocketAttribute, SocketListener

from .endpoint import IpcEndpoint, TcpEndpoint


@dataclass
class BoundListener:
    """A listening transport and the endpoint string it resolved to (real port, real path)."""

    listener: SocketListener
    endpoint: str
    unlink_path: str | None = None  #: ipc socket file to remove on close

    def stop_accepting(self) -> None:
        """Call before cancelling a pending ``accept``. On asyncio, drop the listener's
        selector reader now: an accept the selector has already queued for this loop pass
        would otherwise run on the cancelled wait, take the connection from the kernel, fail
        to hand it over and log "InvalidStateError" (docs/differences.md). The connection
        then stays in the kernel's backlog and is refused when the listener closes."""
        raw = self.listener.extra(SocketAttribute.raw_socket, None)
        if raw is None:
            return
        asyncio = sys.modules.get("asyncio")  # not imported here: trio needs none of it
        if asyncio is None:  # nobody imported it, so no asyncio loop is running
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # trio: its wait_readable is cancelled cleanly
            return
        with contextlib.suppress(Exception):  # (NotImplementedError: no selector loop)
            loop.remove_reader(raw)

    async def aclose(self) -> None:
        await self.listener.aclose()
        if self.unlink_path:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(self.unlink_path)


async def listen(endpoint: TcpEndpoint | IpcEndpoint, backlog: int) -> BoundListener:
    """Bind and listen. Raises OSError (e.g. address in use) for the caller to report."""
    if isinstance(endpoint, TcpEndpoint):
        host = "0.0.0.0" if endpoint.host == "*" else endpoint.host
        infos = await anyio.getaddrinfo(host, endpoint.port, type=socket.SOCK_STREAM)
        if not infos:
            raise OSError(f"cannot resolve {host!r}")
        family, _, _, _, sockaddr = infos[0]
        multi = await anyio.create_tcp_listener(
            local_host=str(sockaddr[0]),
            local_port=endpoint.port,
            family=socket.AF_INET6 if family == socket.AF_INET6 else socket.AF_INET,
            backlog=backlog,
        )
        listener = multi.listeners[0]
        assert isinstance(listener, SocketListener)
        local = listener.extra(SocketAttribute.local_address)
        assert isinstance(local, tuple)
        return BoundListener(listener, str(TcpEndpoint(str(local[0]), int(local[1]))))
    path = endpoint.path
    if path == "*":
        import tempfile  # only for a wildcard ipc path (import cost, docs/performance.md)
        import uuid

        path = os.path.join(tempfile.gettempdir(), f"zmtp-{uuid.uuid4().hex[:12]}.ipc")
    ipc = IpcEndpoint(path)
    unix_listener = await anyio.create_unix_listener(ipc.address, backlog=backlog)
    return BoundListener(unix_listener, str(ipc), None if ipc.abstract else ipc.address)


async def dial(endpoint: TcpEndpoint | IpcEndpoint) -> ByteStream:
    """Open a stream to a listening peer."""
    if isinstance(endpoint, TcpEndpoint):
        if endpoint.host == "*" or endpoint.port == 0:
            raise OSError(f"cannot connect to a wildcard endpoint {endpoint}")
        return await anyio.connect_tcp(endpoint.host, endpoint.port)
    return await anyio.connect_unix(endpoint.address)


def peer_address(stream: ByteStream) -> str:
    """A printable peer address for monitor events: "host:port" for tcp; for ipc the path we
    connected to, or on an accepted connection (the client's socket has no name)
    :func:`ipc_peer_credentials`."""
    try:
        # typed "tuple | str", but an abstract unix socket's address comes back as bytes
        remote: object = stream.extra(SocketAttribute.remote_address)
    except Exception:
        return ""
    if not remote:
        return ipc_peer_credentials(stream)
    if isinstance(remote, tuple):
        host, port = remote[0], remote[1]
        return f"[{host}]:{port}" if ":" in str(host) else f"{host}:{port}"
    if isinstance(remote, bytes):  # a Linux abstract ipc name: b"\0name", shown as "@name"
        remote = remote.decode("utf-8", "replace")
    if isinstance(remote, str) and remote.startswith("\0"):
        return "@" + remote[1:]
    return str(remote)


_UCRED = struct.Struct("3i")  # Linux ``struct ucred``: pid, uid, gid


def ipc_peer_credentials(stream: ByteStream) -> str:
    """The ipc peer as libzmq names it in ZAP requests and ``Peer-Address``:
    ``localhost:uid:gid:pid`` of the process at the other end (Linux ``SO_PEERCRED``; checked
    live against libzmq 4.3.5). "" when not an ipc stream or the platform cannot tell: a ZAP
    handler can then authorise local peers by user, as with libzmq."""
    raw = stream.extra(SocketAttribute.raw_socket, None)
    peercred = getattr(socket, "SO_PEERCRED", None)
    if raw is None or peercred is None or getattr(raw, "family", None) != socket.AF_UNIX:
        return ""
    try:
        pid, uid, gid = _UCRED.unpack(raw.getsockopt(socket.SOL_SOCKET, peercred, _UCRED.size))
    except (OSError, struct.error):
        return ""
    return f"localhost:{uid}:{gid}:{pid}"
