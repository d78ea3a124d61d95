"""SCATTER and GATHER: the thread-safe pipeline (RFC 49). Single-part messages only.

SCATTER is PUSH without multipart (round-robin to peers with room, blocking when none has);
GATHER is PULL without multipart (fair-queue; a multipart message arriving is discarded).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .base import FairQueue, LoadBalancer, RoutingStrategy, SendOnly
from .mixins import SinglePart

if TYPE_CHECKING:
    from .base import RoutingHost


class Scatter(SendOnly, SinglePart, LoadBalancer, RoutingStrategy):
    """Round-robin out; anything a GATHER sends back is dropped."""

    socket_type = "SCATTER"
    can_recv = False
    send_check = True

    def __init__(self, socket: RoutingHost) -> None:
        RoutingStrategy.__init__(self, socket)
        LoadBalancer.__init__(self)

    try_send = LoadBalancer.lb_send


class Gather(SinglePart, FairQueue, RoutingStrategy):
    """Fair-queue in from every SCATTER."""

    socket_type = "GATHER"
    bare_single_part = True  # SinglePart.incoming_received keeps the bare messages
    can_send = False

    def __init__(self, socket: RoutingHost) -> None:
        RoutingStrategy.__init__(self, socket)
        FairQueue.__init__(self)

    try_recv = FairQueue.fq_recv
