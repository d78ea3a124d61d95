"""PUB and SUB: topic-filtered fan-out (RFC 29). Restrictions of XPUB/XSUB (xpubsub.py),
as in libzmq, where ``pub_t``/``sub_t`` derive from ``xpub_t``/``xsub_t``.

* PUB sends only; a message goes to every peer subscribed to a prefix of its first frame, and
  a slow peer loses its own copies at its HWM without holding anyone up. Subscriptions arrive
  as commands or legacy messages; nothing reaches the application, and any other upstream
  message is dropped.
* SUB receives only, and filters again on its side (so a message already queued when a topic
  is unsubscribed is not delivered either). ``subscribe()``/``unsubscribe()`` are counted, and
  sent to every publisher - now, and again after every reconnect.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..engine.pipe import Pipe
from ..engine.queue import Message
from ..errors import UnsupportedOperation
from .base import RoutingStrategy
from .mixins import conflate_put, purge_queued
from .xpubsub import XPub, XSub

if TYPE_CHECKING:
    from ..socket import Socket


class Pub(XPub):
    """XPUB that never delivers anything to the application."""

    socket_type = "PUB"
    can_recv = False
    delivers_upstream = False

    def __init__(self, socket: Socket) -> None:
        super().__init__(socket)
        self._verbose_subs = self._verbose_unsubs = self._manual = False

    try_recv = RoutingStrategy.try_recv  # raises UnsupportedOperation

    def subscribe(self, topic: bytes) -> None:
        raise UnsupportedOperation("PUB sockets take their subscriptions from SUB peers")

    unsubscribe = subscribe


class Sub(XSub):
    """XSUB that filters what it receives and takes subscriptions only through the API."""

    socket_type = "SUB"
    can_send = False

    def incoming(self, pipe: Pipe, messages: list[Message]) -> None:
        topics = self._topics
        if not topics.matches_everything:
            matches = topics.matches
            messages = [m for m in messages if matches(m[0])]
            if not messages:
                return
        if self._conflate:
            conflate_put(pipe.inbox, messages[-1])
        else:
            pipe.inbox.put_many(messages)

    def incoming_one(self, pipe: Pipe, message: Message) -> None:
        if not self._topics.matches(message[0]):
            return
        if self._conflate:
            conflate_put(pipe.inbox, message)
        else:
            pipe.inbox.put(message)

    def unsubscribe(self, topic: bytes) -> None:
        super().unsubscribe(topic)
        matches = self._topics.matches
        purge_queued(self._ready, lambda m: matches(m[0]))

    try_send = RoutingStrategy.try_send  # raises UnsupportedOperation
