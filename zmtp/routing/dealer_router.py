"""DEALER and ROUTER: asynchronous request-reply (RFC 28, libzmq ``dealer.cpp``/``router.cpp``).

DEALER sends frames exactly as given (round-robin) and receives fairly; it adds no envelope,
so talking to a REP means adding the ``b""`` delimiter yourself.

ROUTER addresses peers by *routing id*: on receive it puts the id of the peer a message came
from in front as frame 0; on send it pops frame 0 and queues the rest for that peer. The id is
the peer's ``Identity`` handshake property, byte for byte, or - when the peer sent none - a
generated 5-byte id ``b"\\x00" + uint32 big-endian`` from a counter that starts at a random value
(libzmq's form; ids starting with a zero byte are reserved for this). A ROUTER may also name the
peer of a ``connect()`` itself (``ZMQ_CONNECT_ROUTING_ID``).

``probe_router`` (DEALER, REQ, ROUTER) sends an empty message first on each connection;
``router_notify`` delivers ``[routing_id, b""]`` when a ROUTER's peer connects or goes.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from ..engine.pipe import Pipe
from ..engine.queue import Message, Received
from ..errors import HostUnreachable
from ..options import NOTIFY_CONNECT, NOTIFY_DISCONNECT
from ..protocol.errors import InvalidArgument, WrongType
from .base import FairQueue, LoadBalancer, RoutingStrategy
from .mixins import (
    ConflateSend,
    GeneratedIds,
    IdentityRouter,
    ProbeRouter,
    conflate_put,
    put_first,
    send_first,
)

if TYPE_CHECKING:
    from .base import RoutingHost


class Dealer(FairQueue, LoadBalancer, ProbeRouter, RoutingStrategy):
    """Round-robin out, fair-queue in, no envelope. Blocks only when every peer is full."""

    socket_type = "DEALER"
    bare_single_part = True  # nothing but queueing on receive: see RoutingStrategy

    def __new__(cls, socket: RoutingHost) -> Dealer:
        # ZMQ_CONFLATE picks a subclass rather than a flag tested per message: the plain
        # DEALER keeps the default ``incoming_one``, which lets inproc peers put straight
        # into its inboxes.
        if cls is Dealer and socket.options.conflate:
            cls = ConflatingDealer
        return super().__new__(cls)

    def __init__(self, socket: RoutingHost) -> None:
        RoutingStrategy.__init__(self, socket)
        FairQueue.__init__(self)
        LoadBalancer.__init__(self)

    try_send = LoadBalancer.lb_send
    try_recv = FairQueue.fq_recv


class ConflatingDealer(ConflateSend, Dealer):
    """DEALER with ``conflate``: only the newest message of each peer is kept, in both
    directions as in libzmq - received, and queued for sending (tcp/ipc; see
    :class:`~zmtp.routing.mixins.ConflateSend`)."""

    try_send = ConflateSend.lb_send_conflate

    def incoming(self, pipe: Pipe, messages: list[Message]) -> None:
        if messages:
            conflate_put(pipe.inbox, messages[-1])

    def incoming_received(self, pipe: Pipe, messages: Sequence[Received]) -> None:
        if messages:
            conflate_put(pipe.inbox, messages[-1])

    def incoming_one(self, pipe: Pipe, message: Message) -> None:
        conflate_put(pipe.inbox, message)


class Router(FairQueue, IdentityRouter, GeneratedIds, RoutingStrategy):
    """Identity routing; see the module docstring.

    * A peer joins the routing table when its handshake completes (it must announce its
      Identity first), and leaves it when its connection ends: a reconnecting peer is
      identified afresh.
    * A ``connect()`` given a routing id (``routing_id=`` or the ``connect_routing_id``
      option, libzmq's ``ZMQ_CONNECT_ROUTING_ID``) is routable under that id at once, before
      its connection is up, and keeps it across reconnects: messages for it are queued, as
      libzmq does for every connect-side pipe.
    * A second peer announcing an Identity already in use is refused with a monitor
      ``HandshakeFailed`` naming the identity, unless ``router_handover``: then the newcomer
      takes the id and the old connection is renamed to a generated id and closed.
    * Sending to an unknown id drops the message silently, or raises
      :class:`~zmtp.HostUnreachable` with ``router_mandatory``. A peer at its HWM loses the
      message silently, or - with ``router_mandatory`` - ``send`` blocks until it has room.
    * ``probe_router``: an empty message goes to the peer first on every connection.
    * ``router_notify``: ``[routing_id, b""]`` is delivered before anything else from a new
      connection (``NOTIFY_CONNECT``) and after everything from an ended one
      (``NOTIFY_DISCONNECT``; not when this socket itself closed it, as in libzmq).
    """

    socket_type = "ROUTER"
    attach_on_connect = False  # the routing id is only known after the handshake

    def __init__(self, socket: RoutingHost) -> None:
        RoutingStrategy.__init__(self, socket)
        FairQueue.__init__(self)
        IdentityRouter.__init__(self)
        GeneratedIds.__init__(self)
        opts = socket.options
        self._mandatory = opts.router_mandatory
        self._handover = opts.router_handover
        self._probe = opts.probe_router
        self._notify_connect = bool(opts.router_notify & NOTIFY_CONNECT)
        self._notify_disconnect = bool(opts.router_notify & NOTIFY_DISCONNECT)
        #: connect() endpoint -> the routing id the application gave its peer.
        self._pins: dict[str, bytes] = {}
        #: Pipes whose end this socket caused (handover): no disconnect notification.
        self._closing_here: set[Pipe] = set()

    def _generated_id(self) -> bytes:
        while True:
            routing_id = b"\x00" + self.next_uint32().to_bytes(4, "big")
            if self.route_lookup(routing_id) is None and routing_id not in self._pins.values():
                return routing_id

    # ------------------------------------------------------------------ connect routing ids

    def prepare_connect(self, endpoint: str, routing_id: bytes | None) -> None:
        options = self.socket.options
        if routing_id is None:
            routing_id = options.connect_routing_id or None
            consumed = routing_id is not None
        else:
            consumed = False
            if not isinstance(routing_id, bytes):
                raise WrongType(f"routing_id must be bytes, not {type(routing_id).__name__}")
            if not routing_id:
                raise InvalidArgument("a connect routing id must not be empty (libzmq: EINVAL)")
        # Forget the ids of endpoints that were disconnected since.
        connected_to = self.socket.is_connected_to
        for name in [name for name in self._pins if not connected_to(name)]:
            del self._pins[name]
        if routing_id is None:
            return
        holder = self.route_lookup(routing_id)
        if holder is not None or routing_id in self._pins.values():
            # libzmq asserts (the process aborts); refusing the connect() is kinder.
            raise InvalidArgument(f"routing id {routing_id!r} is already in use by another peer")
        self._pins[endpoint] = routing_id
        if consumed:
            options.connect_routing_id = b""  # it names the next connect() only, as in libzmq

    def _pinned(self, pipe: Pipe) -> bytes | None:
        return self._pins.get(pipe.endpoint) if pipe.persistent else None

    def attach_early(self, pipe: Pipe) -> bool:
        return self._pinned(pipe) is not None

    # ------------------------------------------------------------------ pipe lifecycle

    def attach(self, pipe: Pipe) -> str | None:
        pinned = self._pinned(pipe)
        if pinned is not None:
            identity = pinned
        else:
            identity = pipe.peer.identity if pipe.peer is not None else b""
        if not identity:
            self.route_add(self._generated_id(), pipe)
        else:
            holder = self.route_lookup(identity)
            if holder is not None and holder is not pipe:
                if not self._handover:
                    return (
                        f"duplicate identity {identity!r}: another connected peer already uses it"
                    )
                # The newcomer takes over; the old connection is renamed, then closed.
                self.route_remove(holder)
                self.route_add(self._generated_id(), holder)
                if holder.connected:
                    self._closing_here.add(holder)
                self.socket.close_pipe_connection(holder, f"identity {identity!r} handed over")
            self.route_add(identity, pipe)
        return None

    def readable(self, pipe: Pipe) -> None:
        # Only routable pipes are read: a message from a peer without a routing id (refused,
        # or not attached yet) could not be delivered with one. (An inproc link hands over
        # what its connecting side sent only once both sides are attached.)
        if pipe.attached:
            self._ready.append(pipe)

    def detach(self, pipe: Pipe) -> None:
        self.route_remove(pipe)

    def connected(self, pipe: Pipe) -> None:
        if self._probe:
            send_first(pipe, [b""])
        if self._notify_connect:
            if pipe.persistent:
                # A connect() pipe may still hold messages from its previous connection
                # (and its disconnect notification): they came first.
                pipe.inbox.put([b""])
            else:
                put_first(pipe.inbox, [b""])

    def disconnected(self, pipe: Pipe) -> None:
        if pipe in self._closing_here:
            self._closing_here.discard(pipe)
            return
        if self._notify_disconnect and not self._ended_here(pipe):
            pipe.inbox.put([b""])  # last: after everything still queued from this peer

    def _ended_here(self, pipe: Pipe) -> bool:
        """Whether this socket ended the connection (close, disconnect, unbind): libzmq only
        notifies when the peer or the network ends it (its engine's error path)."""
        socket = self.socket
        if socket.closing:
            return True
        if pipe.persistent:
            return not socket.is_connected_to(pipe.endpoint)
        return not socket.is_bound(pipe.endpoint)

    def try_send(self, parts: Message) -> bool:
        # The hot path of every ROUTER send: the table's dict read directly, the HWM test
        # inlined, and the routing-id frame dropped from the socket's own list (``parts``
        # is a fresh list the caller gives away; it is changed only once the message is
        # queued, so a send that must wait retries with it whole).
        pipe = self._routes.get(parts[0]) if len(parts) > 1 else None
        if pipe is None:
            return self._unroutable(parts)
        ext = self.socket.extension
        if ext is not None and not ext.can_send(pipe):
            return False
        outbox = pipe.outbox
        items = outbox.items
        if len(items) >= outbox.capacity:
            return not self._mandatory  # mandatory: wait for room; otherwise drop it
        del parts[0]
        if pipe.send_is_put:  # MessageQueue.put inlined (see Pipe.send_is_put)
            items.append(parts)
            if len(items) == 1:
                outbox.on_data()
        else:
            pipe.send(parts)
        return True

    def _unroutable(self, parts: Message) -> bool:
        """``try_send`` of a message with no routing id and a part, or for no known peer."""
        if len(parts) < 2:
            raise InvalidArgument("a ROUTER message is [routing_id, part, ...]: at least two parts")
        if self._mandatory:
            raise HostUnreachable(f"no peer with routing id {parts[0]!r}")
        return True  # unroutable: dropped, as libzmq does without ROUTER_MANDATORY

    def try_recv(self) -> Message | None:
        item = self.fq_recv_from()
        if item is None:
            return None
        pipe, message = item
        return [pipe.routing_id, *message]
