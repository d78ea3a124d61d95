"""udp:// for RADIO and DISH: one task per endpoint moving datagrams between a pipe and an
anyio UDP socket (framing and socket options: :mod:`zmtp.transport.udp`).

As in libzmq 4.3 (``socket_base.cpp``, ``session_base.cpp``): only a RADIO may ``connect``
a udp endpoint (send-only) and only a DISH may ``bind`` one (receive-only); any other
combination is refused before any I/O (libzmq: ``ENOCOMPATPROTO``). There is no handshake,
so a udp pipe never becomes "connected" (no ``HandshakeSucceeded``, not in ``Socket.peers``;
of the extension hooks it sees ``can_send``, ``before_send``, ``on_receive`` and
``pipe_removed``, never ``validate_peer``, ``pipe_connected`` or ``on_command``) and never
carries commands: the DISH's JOIN/LEAVE skip it, the RADIO sends it every group
(``zmtp.routing.radio_dish``) and the DISH filters locally.

* The **RADIO** side (``run_sender``) opens its socket in the background, like a tcp dial
  (a failure is reported as ``ConnectDelayed`` and retried after ``reconnect_ivl``), then
  writes every message queued in the pipe as one datagram. The pipe's ``send_hwm`` bounds the
  queue; a full queue drops that copy, as for every RADIO peer, so ``send`` never blocks
  (unless ``xpub_nodrop``). A message over the 8192-byte datagram limit, or one the OS
  refuses, is dropped and reported (``DatagramDropped``); libzmq would overrun its buffer or
  drop the engine. Datagrams go out with a plain non-blocking ``sendto`` on a duplicate of the
  socket (asyncio's transport would swallow the error into ``error_received``), falling back
  to anyio's ``sendto`` to wait while the kernel's buffer is full.
* The **DISH** side (``open_receiver``, then ``UdpReceiver.run``) binds at once (so ``bind``
  raises and reports ``BindFailed`` like tcp) and hands each well-formed datagram to the
  routing strategy as ``[group, body]``; malformed or oversized ones are dropped and reported.
  While ``recv_hwm`` messages wait unread it stops reading: further datagrams wait in the
  OS (and, on asyncio, anyio's 100-datagram) buffers, which drop what overflows, as UDP does.
"""

from __future__ import annotations

import contextlib
import logging
import socket as _socket
from typing import TYPE_CHECKING

import anyio

from ..monitor import ConnectDelayed, Connected, ConnectRetried, DatagramDropped
from ..transport.endpoint import EndpointError, UdpEndpoint
from ..transport.udp import (
    MAX_DATAGRAM,
    Sender,
    check_endpoint,
    datagram_size,
    decode_datagram,
    encode_datagram,
    format_address,
    open_sender,
)
from ..transport.udp import open_receiver as _open_receiver_socket
from .pipe import Pipe
from .queue import MessageQueue

if TYPE_CHECKING:
    from anyio.abc import UDPSocket

    from .contract import ConnectionHost

logger = logging.getLogger("zmtp")

#: Messages a sender takes from its pipe per batch before yielding to other tasks.
_BATCH = 256
_ROLE = {"connect": "RADIO", "bind": "DISH"}


def check_udp(socket_type: str, operation: str, endpoint: UdpEndpoint) -> None:
    """Refuse a udp ``bind``/``connect`` this socket type cannot do, before any I/O.

    libzmq 4.3: ``check_protocol`` admits udp for RADIO/DISH/DGRAM only, ``bind`` for DISH
    (and DGRAM) only, ``connect`` for RADIO only, all with ``ENOCOMPATPROTO``.
    """
    role = _ROLE[operation]
    if socket_type != role:
        raise EndpointError(
            f"unsupported transport 'udp' for {operation}() on a {socket_type} socket in "
            f"'{endpoint}': udp:// is for RADIO connect() and DISH bind() only "
            "(libzmq: ENOCOMPATPROTO)"
        )
    check_endpoint(endpoint, operation)


# ------------------------------------------------------------------ DISH


class UdpReceiver:
    """A DISH's bound udp endpoint; :meth:`run` reads it until its scope is cancelled."""

    def __init__(self, socket: ConnectionHost, udp: UDPSocket, endpoint: str) -> None:
        self.socket = socket
        self.udp = udp
        self.endpoint = endpoint  #: resolved (the real port), as ``bind`` returns it
        self._wakeup: anyio.Event | None = None

    async def run(self, scope: anyio.CancelScope, stopped: anyio.Event) -> None:
        """Deliver datagrams until ``scope`` is cancelled (unbind, close); then close the
        socket, drop the pipe (messages already queued stay readable) and set ``stopped``."""
        socket = self.socket
        pipe = socket.new_pipe(self.endpoint, persistent=False)
        socket.attach(pipe)
        inbox = pipe.inbox
        inbox.on_space = self._wake
        try:
            with scope:
                await self._read_loop(pipe, inbox)
        except Exception:  # a bug must cost this endpoint, never the socket's task group
            logger.exception("zmtp: internal error on udp endpoint %s", self.endpoint)
        finally:
            inbox.on_space = _noop
            with anyio.CancelScope(shield=True):
                await self.udp.aclose()
            socket.remove_pipe(pipe)
            stopped.set()

    async def _read_loop(self, pipe: Pipe, inbox: MessageQueue) -> None:
        socket = self.socket
        receive = self.udp.receive
        while True:
            if inbox.full:
                self._wakeup = anyio.Event()
                await self._wakeup.wait()
                continue
            try:
                data, address = await receive()
            except (anyio.ClosedResourceError, anyio.BrokenResourceError):
                return
            except OSError as exc:  # never seen on an unconnected socket; do not spin on it
                self._drop(f"receive failed: {exc}", "")
                await anyio.sleep(0.1)
                continue
            message = decode_datagram(data)
            if isinstance(message, str):
                self._drop(message, format_address(address))
                continue
            socket.incoming_one(pipe, message)

    def _drop(self, reason: str, address: str) -> None:
        self.socket.emit(DatagramDropped(self.endpoint, reason, address))

    def _wake(self) -> None:
        wakeup = self._wakeup
        if wakeup is not None:
            self._wakeup = None
            wakeup.set()


async def open_receiver(socket: ConnectionHost, endpoint: UdpEndpoint) -> UdpReceiver:
    """Bind ``endpoint`` for a DISH. Raises OSError (address in use...) for ``bind`` to report
    as ``BindFailed``; the caller runs :meth:`UdpReceiver.run` in the endpoint's task."""
    check_udp(socket.socket_type, "bind", endpoint)
    receiver = await _open_receiver_socket(endpoint)
    if socket.is_bound(receiver.endpoint):
        # Two binds of one multicast group and port (SO_REUSEPORT lets the second succeed).
        with anyio.CancelScope(shield=True):
            await receiver.udp.aclose()
        raise OSError(f"{receiver.endpoint} is already bound by this socket")
    return UdpReceiver(socket, receiver.udp, receiver.endpoint)


# ------------------------------------------------------------------ RADIO


async def run_sender(
    socket: ConnectionHost,
    pipe: Pipe,
    endpoint: UdpEndpoint,
    scope: anyio.CancelScope,
    stopped: anyio.Event,
) -> None:
    """A RADIO's udp endpoint: open the socket (retrying like a dial), then send what is
    queued in ``pipe`` until ``scope`` is cancelled (disconnect, close). Sets ``stopped`` last.
    """
    name = str(endpoint)
    try:
        with scope:
            sender = await _open(socket, name, endpoint)
            if sender is None:
                return
            try:
                socket.attach(pipe)  # (already attached unless ``immediate``)
                socket.emit(Connected(name, sender.peer_address))
                await _UdpWriter(socket, pipe, name, sender).run()
            finally:
                await sender.aclose()
    except Exception:  # a bug must cost this endpoint, never the socket's task group
        logger.exception("zmtp: internal error on udp endpoint %s", name)
    finally:
        pipe.flushing = False
        stopped.set()
        socket.written()  # a lingering close stops waiting for this endpoint


async def _open(socket: ConnectionHost, name: str, endpoint: UdpEndpoint) -> Sender | None:
    """Open the sending socket; on failure report, wait ``reconnect_ivl`` and try again
    (None once reconnecting is disabled)."""
    opts = socket.options
    while True:
        try:
            return await open_sender(endpoint, opts.multicast_hops, opts.multicast_loop)
        except OSError as exc:
            socket.emit(ConnectDelayed(name, exc.strerror or str(exc)))
        if opts.reconnect_ivl is None:
            return None
        socket.emit(ConnectRetried(name, opts.reconnect_ivl))
        await anyio.sleep(opts.reconnect_ivl)


class _UdpWriter:
    """Writes a pipe's queued messages as datagrams (see the module docstring)."""

    def __init__(self, socket: ConnectionHost, pipe: Pipe, name: str, sender: Sender) -> None:
        self.socket = socket
        self.pipe = pipe
        self.name = name
        self.sender = sender
        self._wakeup: anyio.Event | None = None

    async def run(self) -> None:
        outbox = self.pipe.outbox
        raw = self.sender.raw
        outbox.on_data = self._wake
        try:
            while True:
                if not outbox.items:
                    self._wakeup = anyio.Event()
                    await self._wakeup.wait()
                    continue
                batch = outbox.take(_BATCH, MAX_DATAGRAM * _BATCH)
                self.pipe.flushing = True
                for parts in batch:
                    await self._send(raw, parts)
                self.pipe.flushing = False
                self.socket.written()
                await anyio.lowlevel.checkpoint()  # a steady stream must not starve the others
        finally:
            outbox.on_data = _noop

    async def _send(self, raw: _socket.socket, parts: list[bytes]) -> None:
        group, body = parts  # a RADIO queues exactly [group, body] (its check_send)
        size = datagram_size(group, body)
        sender = self.sender
        if size > MAX_DATAGRAM:
            self._drop(f"message of {size} bytes exceeds the udp limit of {MAX_DATAGRAM} bytes")
            return
        ext = self.socket.extension
        if ext is not None:
            ext.before_send(self.pipe, parts)
        datagram = encode_datagram(group, body)
        try:
            raw.sendto(datagram, sender.sockaddr)
        except BlockingIOError:  # the kernel's buffer is full: wait for room, in order
            with contextlib.suppress(OSError, anyio.BrokenResourceError):  # (asyncio: silent)
                await sender.udp.sendto(datagram, sender.host, sender.port)
        except OSError as exc:
            self._drop(f"send failed: {exc.strerror or exc}")

    def _drop(self, reason: str) -> None:
        self.socket.emit(DatagramDropped(self.name, reason, self.sender.peer_address))

    def _wake(self) -> None:
        wakeup = self._wakeup
        if wakeup is not None:
            self._wakeup = None
            wakeup.set()


def _noop() -> None:
    return None
