"""CLIENT and SERVER: the thread-safe request-reply pair (RFC 41). Single-part messages only.

CLIENT is a DEALER without multipart: round-robin out, fair-queue in. SERVER addresses each
peer by a non-zero uint32 *routing id* it assigns when the peer attaches (a counter starting at
a random value, skipping 0, as libzmq): ``recv_from()`` returns ``(routing_id, data)``, and
``send_to(routing_id, data)`` answers. At the multipart API the id is frame 0, four bytes
big-endian (``[routing_id, data]``), like a ROUTER's id frame; on the wire messages are
single-part.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..engine.pipe import Pipe
from ..engine.queue import Message
from ..errors import HostUnreachable, UnsupportedOperation
from .base import FairQueue, LoadBalancer, RoutingStrategy
from .mixins import GeneratedIds, IdentityRouter, RoutingIds, SinglePart

if TYPE_CHECKING:
    from .base import RoutingHost


class Client(SinglePart, FairQueue, LoadBalancer, RoutingStrategy):
    """Round-robin to SERVERs, fair-queue from them; blocks when every peer is full."""

    socket_type = "CLIENT"
    bare_single_part = True  # SinglePart.incoming_received keeps the bare messages
    send_check = True

    def __init__(self, socket: RoutingHost) -> None:
        RoutingStrategy.__init__(self, socket)
        FairQueue.__init__(self)
        LoadBalancer.__init__(self)

    try_send = LoadBalancer.lb_send
    try_recv = FairQueue.fq_recv


class Server(SinglePart, FairQueue, IdentityRouter, GeneratedIds, RoutingIds, RoutingStrategy):
    """Fair-queue in, tagging each message with its peer's routing id; route replies by id.

    Sending to an id that is not (or no longer) attached raises :class:`~zmtp.HostUnreachable`
    (RFC 41: "SHALL return an error if the queue does not exist"); a full peer makes ``send``
    block (RFC 41: "SHALL NOT discard messages that it cannot queue").
    """

    socket_type = "SERVER"
    send_check = True

    def __init__(self, socket: RoutingHost) -> None:
        RoutingStrategy.__init__(self, socket)
        FairQueue.__init__(self)
        IdentityRouter.__init__(self)
        GeneratedIds.__init__(self)

    def attach(self, pipe: Pipe) -> str | None:
        while True:
            value = self.next_uint32()
            routing_id = value.to_bytes(4, "big")
            if value and self.route_lookup(routing_id) is None:
                break
        self.route_add(routing_id, pipe)
        return None

    def detach(self, pipe: Pipe) -> None:
        self.route_remove(pipe)

    def check_send(self, parts: Message) -> None:
        if len(parts) == 1:
            raise UnsupportedOperation(
                f"{self.socket_type} messages need a routing id: use send_to(routing_id, data) "
                "or send_multipart([routing_id, data])"
            )
        if len(parts) != 2:
            raise UnsupportedOperation(
                f"{self.socket_type} sockets send single-part messages only: "
                f"[routing_id, data], got {len(parts)} parts"
            )

    def try_send(self, parts: Message) -> bool:
        pipe = self.route_lookup(parts[0])
        if pipe is None:
            raise HostUnreachable(f"no peer with routing id {parts[0].hex() or '(empty)'}")
        ext = self.socket.extension
        if pipe.outbox.full or (ext is not None and not ext.can_send(pipe)):
            return False
        pipe.send([parts[1]])
        return True

    def try_recv(self) -> Message | None:
        item = self.fq_recv_from()
        if item is None:
            return None
        pipe, message = item
        return [pipe.routing_id, message[0]]
