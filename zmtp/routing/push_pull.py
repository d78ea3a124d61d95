"""PUSH (load-balance out) and PULL (fair-queue in), RFC 30."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .base import FairQueue, LoadBalancer, RoutingStrategy, SendOnly

if TYPE_CHECKING:
    from ..socket import Socket


class Push(SendOnly, LoadBalancer, RoutingStrategy):
    """Each message goes to the next peer with room; blocks when every peer is at its HWM."""

    socket_type = "PUSH"
    can_recv = False

    def __init__(self, socket: Socket) -> None:
        RoutingStrategy.__init__(self, socket)
        LoadBalancer.__init__(self)

    try_send = LoadBalancer.lb_send


class Pull(FairQueue, RoutingStrategy):
    """Receives fairly from every connected PUSH."""

    socket_type = "PULL"
    can_send = False

    def __init__(self, socket: Socket) -> None:
        RoutingStrategy.__init__(self, socket)
        FairQueue.__init__(self)

    try_recv = FairQueue.fq_recv
