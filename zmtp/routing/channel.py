"""CHANNEL: the thread-safe PAIR (RFC 52). Exactly one peer, single-part messages only."""

from __future__ import annotations

from ..engine.pipe import Pipe
from .mixins import SinglePart
from .pair import Pair


class Channel(SinglePart, Pair):
    """PAIR's one-peer rule (a second peer is refused), without multipart."""

    socket_type = "CHANNEL"
    send_check = True

    def attach(self, pipe: Pipe) -> str | None:
        reason = super().attach(pipe)
        return None if reason is None else "CHANNEL socket already has a peer"
