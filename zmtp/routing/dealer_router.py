"""DEALER and ROUTER: asynchronous request-reply (RFC 28, libzmq ``dealer.cpp``/``router.cpp``).

DEALER sends frames exactly as given (round-robin) and receives fairly; it adds no envelope,
so talking to a REP means adding the ``b""`` delimiter yourself.

ROUTER addresses peers by *routing id*: on receive it puts the id of the peer a message came
from in front as frame 0; on send it pops frame 0 and queues the rest for that peer. The id is
the peer's ``Identity`` handshake property, byte for byte, or - when the peer sent none - a
generated 5-byte id ``b"\\x00" + uint32 big-endian`` from a counter that starts at a random value
(libzmq's form; ids starting with a zero byte are reserved for this).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..engine.pipe import Pipe
from ..engine.queue import Message
from ..errors import HostUnreachable
from .base import FairQueue, LoadBalancer, RoutingStrategy
from .mixins import GeneratedIds, IdentityRouter, conflate_put

if TYPE_CHECKING:
    from ..socket import Socket


class Dealer(FairQueue, LoadBalancer, RoutingStrategy):
    """Round-robin out, fair-queue in, no envelope. Blocks only when every peer is full."""

    socket_type = "DEALER"

    def __new__(cls, socket: Socket) -> Dealer:
        # ZMQ_CONFLATE picks a subclass rather than a flag tested per message: the plain
        # DEALER keeps the default ``incoming_one``, which lets inproc peers put straight
        # into its inboxes.
        if cls is Dealer and socket.options.conflate:
            cls = ConflatingDealer
        return super().__new__(cls)

    def __init__(self, socket: Socket) -> None:
        RoutingStrategy.__init__(self, socket)
        FairQueue.__init__(self)
        LoadBalancer.__init__(self)

    try_send = LoadBalancer.lb_send
    try_recv = FairQueue.fq_recv


class ConflatingDealer(Dealer):
    """DEALER with ``conflate``: only the newest incoming message of each peer is kept.

    libzmq applies ZMQ_CONFLATE to DEALER in both directions; here it applies to receiving
    only (see docs/socket-types.md).
    """

    def incoming(self, pipe: Pipe, messages: list[Message]) -> None:
        if messages:
            conflate_put(pipe.inbox, messages[-1])

    def incoming_one(self, pipe: Pipe, message: Message) -> None:
        conflate_put(pipe.inbox, message)


class Router(FairQueue, IdentityRouter, GeneratedIds, RoutingStrategy):
    """Identity routing; see the module docstring.

    * A peer joins the routing table when its handshake completes (it must announce its
      Identity first), and leaves it when its connection ends: a reconnecting peer is
      identified afresh.
    * A second peer announcing an Identity already in use is refused with a monitor
      ``HandshakeFailed`` naming the identity, unless ``router_handover``: then the newcomer
      takes the id and the old connection is renamed to a generated id and closed.
    * Sending to an unknown id drops the message silently, or raises
      :class:`~zmtp.HostUnreachable` with ``router_mandatory``. A peer at its HWM loses the
      message silently, or - with ``router_mandatory`` - ``send`` blocks until it has room.
    """

    socket_type = "ROUTER"
    attach_on_connect = False  # the routing id is only known after the handshake

    def __init__(self, socket: Socket) -> None:
        RoutingStrategy.__init__(self, socket)
        FairQueue.__init__(self)
        IdentityRouter.__init__(self)
        GeneratedIds.__init__(self)
        opts = socket.options
        self._mandatory = opts.router_mandatory
        self._handover = opts.router_handover

    def _generated_id(self) -> bytes:
        while True:
            routing_id = b"\x00" + self.next_uint32().to_bytes(4, "big")
            if self.route_lookup(routing_id) is None:
                return routing_id

    def attach(self, pipe: Pipe) -> str | None:
        identity = pipe.peer.identity if pipe.peer is not None else b""
        if not identity:
            self.route_add(self._generated_id(), pipe)
            return None
        holder = self.route_lookup(identity)
        if holder is not None and holder is not pipe:
            if not self._handover:
                return f"duplicate identity {identity!r}: another connected peer already uses it"
            # The newcomer takes over; the old connection is renamed, then closed.
            self.route_remove(holder)
            self.route_add(self._generated_id(), holder)
            self.socket._close_pipe_connection(holder, f"identity {identity!r} handed over")
        self.route_add(identity, pipe)
        return None

    def detach(self, pipe: Pipe) -> None:
        self.route_remove(pipe)

    def try_send(self, parts: Message) -> bool:
        if len(parts) < 2:
            raise ValueError("a ROUTER message is [routing_id, part, ...]: at least two parts")
        pipe = self.route_lookup(parts[0])
        if pipe is None:
            if self._mandatory:
                raise HostUnreachable(f"no peer with routing id {parts[0]!r}")
            return True  # unroutable: dropped, as libzmq does without ROUTER_MANDATORY
        ext = self.socket.extension
        if ext is not None and not ext.can_send(pipe):
            return False
        if pipe.outbox.full:
            return not self._mandatory  # mandatory: wait for room; otherwise drop it
        pipe.send(parts[1:])
        return True

    def try_recv(self) -> Message | None:
        item = self.fq_recv_from()
        if item is None:
            return None
        pipe, message = item
        return [pipe.routing_id, *message]
