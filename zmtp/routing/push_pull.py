"""PUSH (load-balance out) and PULL (fair-queue in), RFC 30.

``conflate`` (libzmq ``ZMQ_CONFLATE``) keeps only the newest message per peer: what a PUSH has
queued for each PULL (tcp/ipc), and what a PULL has received from each PUSH.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from ..engine.pipe import Pipe
from ..engine.queue import Message, Received
from .base import FairQueue, LoadBalancer, RoutingStrategy, SendOnly
from .mixins import ConflateSend, conflate_put

if TYPE_CHECKING:
    from .base import RoutingHost


class Push(SendOnly, LoadBalancer, RoutingStrategy):
    """Each message goes to the next peer with room; blocks when every peer is at its HWM."""

    socket_type = "PUSH"
    can_recv = False

    def __new__(cls, socket: RoutingHost) -> Push:
        # ZMQ_CONFLATE picks a subclass: the plain PUSH keeps the lean lb_send fast path.
        if cls is Push and socket.options.conflate:
            cls = ConflatingPush
        return super().__new__(cls)

    def __init__(self, socket: RoutingHost) -> None:
        RoutingStrategy.__init__(self, socket)
        LoadBalancer.__init__(self)

    try_send = LoadBalancer.lb_send


class ConflatingPush(ConflateSend, Push):
    """PUSH with ``conflate``: each peer's queue keeps only the newest message, so ``send``
    never waits once there is a peer (see :class:`~zmtp.routing.mixins.ConflateSend`)."""

    try_send = ConflateSend.lb_send_conflate


class Pull(FairQueue, RoutingStrategy):
    """Receives fairly from every connected PUSH."""

    socket_type = "PULL"
    can_send = False
    bare_single_part = True  # nothing but queueing on receive: see RoutingStrategy

    def __new__(cls, socket: RoutingHost) -> Pull:
        # As Push: the plain PULL keeps the default ``incoming_one``, which lets inproc peers
        # put straight into its inboxes.
        if cls is Pull and socket.options.conflate:
            cls = ConflatingPull
        return super().__new__(cls)

    def __init__(self, socket: RoutingHost) -> None:
        RoutingStrategy.__init__(self, socket)
        FairQueue.__init__(self)

    try_recv = FairQueue.fq_recv
    recv_runs = True  # (see RoutingStrategy.recv_runs)
    take_run = FairQueue.fq_take_run
    end_run = FairQueue.fq_end_run


class ConflatingPull(Pull):
    """PULL with ``conflate``: only the newest message received from each peer is kept."""

    recv_runs = False  # put_only replaces the queued message: a run must not pop it

    def incoming(self, pipe: Pipe, messages: list[Message]) -> None:
        if messages:
            conflate_put(pipe.inbox, messages[-1])

    def incoming_received(self, pipe: Pipe, messages: Sequence[Received]) -> None:
        if messages:
            conflate_put(pipe.inbox, messages[-1])

    def incoming_one(self, pipe: Pipe, message: Message) -> None:
        conflate_put(pipe.inbox, message)
