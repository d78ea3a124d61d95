"""PUB and SUB: topic-filtered fan-out (RFC 29). Restrictions of XPUB/XSUB (xpubsub.py),
as in libzmq, where ``pub_t``/``sub_t`` derive from ``xpub_t``/``xsub_t``.

* PUB sends only; a message goes to every peer subscribed to a prefix of its first frame, and
  a slow peer loses its own copies at its HWM without holding anyone up. Subscriptions arrive
  as commands or legacy messages; nothing reaches the application, and any other upstream
  message is dropped.
* SUB receives only, and filters again on its side (so a message already queued when a topic
  is unsubscribed is not delivered either). ``subscribe()``/``unsubscribe()`` are counted, and
  sent to every publisher - now, and again after every reconnect.
* ``invert_matching`` turns both filters around: PUB sends to the peers *not* subscribed to a
  prefix of the message, SUB keeps only messages matching none of its subscriptions.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from itertools import compress, repeat
from operator import not_
from typing import TYPE_CHECKING

from ..engine.pipe import Pipe
from ..engine.queue import Message, Received
from ..errors import UnsupportedOperation
from .base import RoutingStrategy
from .mixins import conflate_put, purge_queued
from .xpubsub import XPub, XSub

if TYPE_CHECKING:
    from .base import RoutingHost

#: SUB's prefix filter over a batch of bare messages, in C: ``bytes.startswith`` mapped over
#: the batch (with the tuple of topics repeated), and ``compress`` keeping the matches. A list
#: in the batch (a multipart message) makes it raise TypeError: the batch is then filtered
#: message by message.
#: (Typed for what it is given: a list raises, as said.)
_startswith: Callable[[Received, bytes | tuple[bytes, ...]], bool] = bytes.startswith  # type: ignore[assignment]


def _one(prefixes: tuple[bytes, ...]) -> bytes | tuple[bytes, ...]:
    """A single topic bare: ``startswith`` of one prefix is ~25 % cheaper than of a tuple."""
    return prefixes[0] if len(prefixes) == 1 else prefixes


class Pub(XPub):
    """XPUB that never delivers anything to the application."""

    socket_type = "PUB"
    can_recv = False
    delivers_upstream = False

    def __init__(self, socket: RoutingHost) -> None:
        super().__init__(socket)
        self._verbose_subs = self._verbose_unsubs = self._manual = False
        self._send_last_pipe = False  # (libzmq accepts the option on PUB; it has no effect)

    # Raises UnsupportedOperation (typed wider than XPub's: it never returns at all).
    try_recv = RoutingStrategy.try_recv  # type: ignore[assignment]

    def subscribe(self, topic: bytes) -> None:
        raise UnsupportedOperation("PUB sockets take their subscriptions from SUB peers")

    unsubscribe = subscribe


class Sub(XSub):
    """XSUB that filters what it receives and takes subscriptions only through the API.

    With ``invert_matching`` a message is kept when it matches *no* subscription (libzmq's
    ``xsub_t::match``: ``matching ^ invert``), so a SUB without subscriptions receives
    everything its (inverted) publishers send.
    """

    socket_type = "SUB"
    can_send = False
    #: One-part messages queued bare (see RoutingStrategy): the filter below takes a
    #: message's topic from the bytes itself, or from the first part of a list.
    bare_single_part = True

    def __init__(self, socket: RoutingHost) -> None:
        super().__init__(socket)
        self._invert = socket.options.invert_matching

    def _keep(self, message: Received) -> bool:
        topic = message if isinstance(message, bytes) else message[0]
        return self._topics.matches(topic) is not self._invert

    def incoming(self, pipe: Pipe, messages: list[Message]) -> None:
        self.incoming_received(pipe, messages)

    def incoming_received(self, pipe: Pipe, messages: Sequence[Received]) -> None:
        # With up to PREFIXES_MAX topics the filter is ``startswith`` on the tuple of them
        # (TopicTrie.prefixes: the same answer as the trie's walk, in one C call). A message
        # is bare (its topic is itself) or a list (the topic is its first part).
        topics = self._topics
        if self._invert:
            if topics.matches_everything:
                return  # b"" matches every message: an inverted SUB keeps none
            if len(topics):
                prefixes = topics.prefixes
                if prefixes is not None:
                    try:
                        matched = map(_startswith, messages, repeat(_one(prefixes)))
                        messages = list(compress(messages, map(not_, matched)))
                    except TypeError:  # a list in the batch: see _startswith
                        messages = [
                            m
                            for m in messages
                            if not (m if isinstance(m, bytes) else m[0]).startswith(prefixes)
                        ]
                else:
                    keep = self._keep
                    messages = [m for m in messages if keep(m)]
                if not messages:
                    return
        elif not topics.matches_everything:
            prefixes = topics.prefixes
            if prefixes is not None:
                try:
                    matched = map(_startswith, messages, repeat(_one(prefixes)))
                    messages = list(compress(messages, matched))
                except TypeError:  # a list in the batch: see _startswith
                    messages = [
                        m
                        for m in messages
                        if (m if isinstance(m, bytes) else m[0]).startswith(prefixes)
                    ]
            else:
                matches = topics.matches
                messages = [m for m in messages if matches(m if isinstance(m, bytes) else m[0])]
            if not messages:
                return
        if self._conflate:
            conflate_put(pipe.inbox, messages[-1])
        else:
            pipe.inbox.put_received(messages)

    def incoming_one(self, pipe: Pipe, message: Message) -> None:
        if self._topics.matches(message[0]) is self._invert:
            return
        if self._conflate:
            conflate_put(pipe.inbox, message)
        else:
            pipe.inbox.put(message)

    def subscribe(self, topic: bytes) -> None:
        super().subscribe(topic)
        if self._invert:
            # A new subscription excludes more: what is queued must not be delivered either
            # (nor by the receive run, which pops the inbox as it was: ended first).
            self.fq_end_run()
            purge_queued(self._ready, self._keep)

    def unsubscribe(self, topic: bytes) -> None:
        super().unsubscribe(topic)
        if not self._invert:
            self.fq_end_run()
            purge_queued(self._ready, self._keep)

    try_send = RoutingStrategy.try_send  # raises UnsupportedOperation
