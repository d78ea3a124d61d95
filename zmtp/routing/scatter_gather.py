"""SCATTER and GATHER: the thread-safe pipeline (RFC 49). Single-part messages only.

SCATTER is PUSH without multipart (round-robin to peers with room, blocking when none has);
GATHER is PULL without multipart (fair-queue; a multipart message arriving is discarded).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..engine.pipe import Pipe
from ..engine.queue import Message
from .base import FairQueue, LoadBalancer, RoutingStrategy
from .mixins import SinglePart

if TYPE_CHECKING:
    from ..socket import Socket


class Scatter(SinglePart, LoadBalancer, RoutingStrategy):
    """Round-robin out; anything a GATHER sends back is dropped."""

    socket_type = "SCATTER"
    can_recv = False
    send_check = True

    def __init__(self, socket: Socket) -> None:
        RoutingStrategy.__init__(self, socket)
        LoadBalancer.__init__(self)

    def attach(self, pipe: Pipe) -> str | None:
        self.lb_attach(pipe)
        return None

    def detach(self, pipe: Pipe) -> None:
        self.lb_detach(pipe)

    def check_send(self, parts: Message) -> None:
        self.check_single_part(parts)

    def incoming(self, pipe: Pipe, messages: list[Message]) -> None:
        """GATHER peers have nothing to send."""

    def incoming_one(self, pipe: Pipe, message: Message) -> None:
        """See :meth:`incoming`."""

    try_send = LoadBalancer.lb_send


class Gather(SinglePart, FairQueue, RoutingStrategy):
    """Fair-queue in from every SCATTER."""

    socket_type = "GATHER"
    can_send = False

    def __init__(self, socket: Socket) -> None:
        RoutingStrategy.__init__(self, socket)
        FairQueue.__init__(self)

    def incoming(self, pipe: Pipe, messages: list[Message]) -> None:
        pipe.inbox.put_many(self.single_parts(messages))

    def incoming_one(self, pipe: Pipe, message: Message) -> None:
        if len(message) == 1:
            pipe.inbox.put(message)

    try_recv = FairQueue.fq_recv
