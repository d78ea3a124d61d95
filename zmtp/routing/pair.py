"""PAIR: exactly one peer, both directions (RFC 31)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..engine.pipe import Pipe
from ..engine.queue import Message
from .base import FairQueue, RoutingStrategy

if TYPE_CHECKING:
    from .base import RoutingHost


class Pair(FairQueue, RoutingStrategy):
    """Like libzmq, a second peer is refused while the first pipe exists."""

    socket_type = "PAIR"
    bare_single_part = True  # nothing but queueing on receive: see RoutingStrategy

    def __init__(self, socket: RoutingHost) -> None:
        RoutingStrategy.__init__(self, socket)
        FairQueue.__init__(self)
        self._pipe: Pipe | None = None

    def attach(self, pipe: Pipe) -> str | None:
        if self._pipe is not None and self._pipe is not pipe:
            return "PAIR socket already has a peer"
        self._pipe = pipe
        return None

    def detach(self, pipe: Pipe) -> None:
        if self._pipe is pipe:
            self._pipe = None

    def try_send(self, parts: Message) -> bool:
        pipe = self._pipe
        if pipe is None or pipe.outbox.full:
            return False
        ext = self.socket.extension
        if ext is not None and not ext.can_send(pipe):
            return False
        pipe.send(parts)
        return True

    try_recv = FairQueue.fq_recv
