"""XPUB and XSUB: publish-subscribe with the subscriptions visible to the application
(RFC 29; libzmq ``xpub.cpp``/``xsub.cpp``). PUB and SUB (pubsub.py) are restrictions of these.

Subscriptions travel upstream in two forms, and a publisher accepts both at all times:

* ZMTP 3.1 ``SUBSCRIBE``/``CANCEL`` commands, which a SUB uses towards a 3.1 peer;
* ZMTP 3.0 messages whose first frame is ``b"\\x01" + topic`` / ``b"\\x00" + topic``, which a SUB
  uses towards a 3.0 peer and which an XSUB application sends itself (libzmq forwards those as
  data frames even to a 3.1 peer).

Only a first frame starting with 0x00/0x01 is a subscription; anything else an XSUB sends is
an ordinary upstream message, delivered to the XPUB application.

What an XPUB holds for its application is bounded per peer by ``recv_hwm`` (issue 14, finding
6): once a peer has ``recv_hwm`` deliveries (upstream messages, subscription notifications)
waiting, what else arrives from it stays unprocessed in its pipe's inbox, in order, whose
``recv_hwm`` makes the connection stop reading that peer; as the application receives, the
backlog is processed and reading resumes. Subscriptions are then applied late, as in libzmq,
which reads a pipe only as its application calls into the socket.

Arriving subscriptions are applied at most ``APPLY_SLICE`` per event-loop pass (a read can
hold 14 000 of them, a second of work on a loaded machine): past that, they wait in order in
their pipe's inbox, as above, and a deferred task (``RoutingHost.defer``) applies the next slice
on the next pass; the inbox's ``recv_hwm`` stops the reader meanwhile.

A peer holds at most ``max_subscriptions`` topics (a peer asking for more is disconnected), and
when it goes, its topics leave the trie in slices of ``FORGET_SLICE`` per event-loop pass
(``RoutingHost.defer``), so that a peer with 200 000 topics does not freeze every other
connection for seconds; meanwhile no message is queued for it (its outbox reads as full). With
``xpub_manual`` the same slices remove the topics the application applied for it and deliver
the unsubscriptions of the topics it had asked for.
"""

from __future__ import annotations

import math
from collections import deque
from typing import TYPE_CHECKING

from ..engine.pipe import Pipe
from ..engine.queue import Message
from ..errors import UnsupportedOperation
from ..protocol.commands import CANCEL, SUBSCRIBE
from ..protocol.frames import encoded_message
from .base import FairQueue, RoutingStrategy
from .fanout_cache import FanOutCache
from .mixins import (
    FanOut,
    Subscriptions,
    conflate_put,
    conflate_send,
    is_inproc,
    send_first,
)
from .trie import PipeTrie, RemoveResult, TopicTrie

if TYPE_CHECKING:
    from .base import RoutingHost

#: Topics of a departed peer removed per event-loop pass (a few ms of work).
FORGET_SLICE = 1000
#: Subscriptions applied per event-loop pass as they arrive (upstream messages are bounded by
#: ``recv_hwm`` instead, and cost no trie work).
APPLY_SLICE = 1000


class _Subscriber:
    """``pipe.state`` of a PUB/XPUB pipe: what that peer subscribed to."""

    __slots__ = ("early", "held", "requested", "topics")

    def __init__(self) -> None:
        #: Deliveries from this peer waiting for the application (XPUB's bound: recv_hwm).
        self.held = 0
        self.topics: set[bytes] = set()  #: applied to the trie for this pipe
        self.requested: set[bytes] = set()  #: xpub_manual: what the peer asked for
        #: Subscriptions that arrived before the pipe was attached (an inproc SUB that
        #: connects sends them from its own handshake, before ours has run); applied on attach.
        self.early: list[tuple[bool, bytes]] = []


#: Largest message (payload bytes) encoded once for all subscribers; above it each writer
#: frames its own copy as before (the saving is a few Python operations per subscriber, while
#: a shared encoding costs one more copy of the body and holds it while queued).
SHARED_ENCODING_MAX = 8192


class _Departure:
    """What is left to undo of a departed peer (see :meth:`XPub._forget`)."""

    __slots__ = ("notices", "topics")

    def __init__(self, topics: list[bytes], notices: list[bytes]) -> None:
        self.topics = topics  #: still in the trie for its pipe
        self.notices = notices  #: xpub_manual: unsubscriptions the application is yet to get

    def __len__(self) -> int:
        return len(self.topics) + len(self.notices)


def _subscribes(message: Message) -> bool:
    """Whether ``message`` is a subscription (or cancel) in its ZMTP 3.0 form."""
    first = message[0]
    return bool(first) and first[0] <= 1


def _subscriber(pipe: Pipe) -> _Subscriber:
    state = pipe.state
    if not isinstance(state, _Subscriber):
        state = pipe.state = _Subscriber()
    return state


class XPub(FanOut, Subscriptions, RoutingStrategy):
    """Publish to the peers whose subscriptions match; receive their (un)subscriptions.

    * Sending never blocks: a subscriber at its HWM loses its own copy (``xpub_nodrop``
      makes ``send`` wait instead). ``conflate`` keeps only the newest message per subscriber.
    * The application receives ``b"\\x01" + topic`` when a topic gains its first subscriber and
      ``b"\\x00" + topic`` when it loses its last (including when that peer disconnects);
      ``xpub_verbose`` passes every subscribe, ``xpub_verboser`` every unsubscribe too.
      Upstream messages from XSUB peers are delivered as they are.
    * ``xpub_manual``: nothing is applied automatically; every (un)subscription is delivered,
      and ``subscribe()``/``unsubscribe()`` apply a topic to the peer whose message was
      received last (libzmq's ``ZMQ_XPUB_MANUAL`` with ``ZMQ_SUBSCRIBE``).
    * ``xpub_manual_last_value``: ``xpub_manual``, and the first message sent after a
      subscription was received goes only to the peer that sent it (if it matches).
    * ``invert_matching``: a message goes to the peers *not* subscribed to a prefix of it,
      including peers without any subscription (libzmq's ``dist_t::reverse_match``).
    * ``xpub_welcome_msg`` is sent to every new connection, unfiltered, before anything else.
    * A peer's subscriptions end with its connection; a reconnecting SUB re-sends them.

    Shared encoding: while two or more pipes are attached and all are tcp/ipc pipes of a
    socket that sends in clear (NULL, PLAIN), a message for several subscribers is encoded
    once (:class:`~zmtp.protocol.frames.EncodedMessage`) and the same object is queued on
    every pipe with room, whose writers copy its wire bytes (``pipe.shared_encoding``). The
    HWM is still checked per pipe (a full one loses only its copy), each outbox keeps its
    order, and CURVE boxes every copy per connection (its encoder ignores the wire bytes). A
    socket with one subscriber, an inproc pipe or an extension keeps the per-pipe path.
    """

    socket_type = "XPUB"
    #: Whether (un)subscriptions and upstream messages reach the application (not for PUB).
    delivers_upstream = True

    def __init__(self, socket: RoutingHost) -> None:
        RoutingStrategy.__init__(self, socket)
        opts = socket.options
        self._trie: PipeTrie[Pipe] = PipeTrie()
        self._pending: deque[tuple[Message, Pipe | None]] = deque()
        self._verbose_subs = opts.xpub_verbose or opts.xpub_verboser
        self._verbose_unsubs = opts.xpub_verboser
        # As libzmq, ZMQ_XPUB_MANUAL_LAST_VALUE switches manual mode on too.
        self._manual = opts.xpub_manual or opts.xpub_manual_last_value
        self._send_last_pipe = opts.xpub_manual_last_value
        self._welcome = opts.xpub_welcome_msg
        self._nodrop = opts.xpub_nodrop
        self._conflate = opts.conflate
        self._invert = opts.invert_matching
        self._max_topics = opts.max_subscriptions or math.inf
        #: Departed peers whose topics are still being removed (see _forget), with the rest.
        self._dying: dict[Pipe, _Departure] = {}
        self._capacity: dict[Pipe, float] = {}  #: their outboxes' own capacity
        #: Subscriptions still to apply in this event-loop pass (see the module docstring), and
        #: the pipes whose backlog waits for the next pass.
        self._budget = APPLY_SLICE
        self._starved: dict[Pipe, None] = {}
        self._passes = False  #: _next_pass is deferred
        self._last_pipe: Pipe | None = None
        #: Every attached pipe, in attach order (only needed by invert_matching).
        self._all: dict[Pipe, None] = {}
        #: Shared encoding (see the class docstring): the attached pipes that could take a
        #: shared message, how many attached pipes could not, and whether it is on now.
        self._shareable: dict[Pipe, None] = {}
        self._unshareable = 0
        self._sharing = False
        #: The outboxes of the usual target set, for the shared path's fast loop.
        self._cache = FanOutCache()

    # ------------------------------------------------------------------ pipe lifecycle

    def attach(self, pipe: Pipe) -> str | None:
        self._all[pipe] = None
        self._cache.invalidate()
        if self._can_share(pipe):
            self._shareable[pipe] = None
        else:
            self._unshareable += 1
        self._update_sharing()
        pipe.shared_encoding = self._sharing and pipe in self._shareable
        state = _subscriber(pipe)
        early, state.early = state.early, []
        for subscribe, topic in early:
            self._apply(pipe, state, subscribe, topic)
        return None

    def connected(self, pipe: Pipe) -> None:
        if self._welcome:
            # Past the HWM, ahead of anything queued while connecting; over inproc this also
            # keeps a connecting XPUB from handing it to the SUB twice (see send_first).
            send_first(pipe, [self._welcome])

    def disconnected(self, pipe: Pipe) -> None:
        self._forget(pipe)

    def detach(self, pipe: Pipe) -> None:
        self._cache.invalidate()
        if self._all.pop(pipe, False) is None:
            if self._shareable.pop(pipe, False) is None:
                pipe.shared_encoding = False
            else:
                self._unshareable -= 1
            self._update_sharing()
        self._forget(pipe)

    def _can_share(self, pipe: Pipe) -> bool:
        """Whether ``pipe``'s writer frames our messages in clear: a tcp/ipc pipe (its
        ``send`` queues on the outbox for a connection's writer; inproc hands part lists to
        the peer socket) of a socket without CURVE (which boxes each copy anyway)."""
        if is_inproc(pipe) or pipe.send != pipe.outbox.put:
            return False
        try:
            return self.socket.options.security_mechanism() != "CURVE"
        except ValueError:  # a bad security setup: its connections fail, and nothing shares
            return False

    def _update_sharing(self) -> None:
        """Share encodings only while it saves work: two shareable pipes or more, none other,
        and none of the options that pick the targets differently (conflate, last value,
        inverted matching). While sharing, :meth:`try_send_sharing` stands in for
        :meth:`try_send` on this instance, so that the path of one subscriber is exactly the
        per-pipe one, with no test added per message (and its writer keeps the plain
        encoder)."""
        sharing = (
            not self._unshareable
            and len(self._shareable) >= 2
            and not (self._conflate or self._send_last_pipe or self._invert)
        )
        if sharing is self._sharing:
            return
        self._sharing = sharing
        for pipe in self._shareable:
            pipe.shared_encoding = sharing
        if sharing:
            vars(self)["try_send"] = self.try_send_sharing
        else:
            vars(self).pop("try_send", None)

    def _forget(self, pipe: Pipe) -> None:
        """Drop every subscription of ``pipe``, telling the application like libzmq does."""
        state = pipe.state
        if not isinstance(state, _Subscriber):
            return
        pipe.state = None
        self._starved.pop(pipe, None)
        # Input not processed yet: its upstream messages are still delivered (as an ended
        # connection's inbox is on other types); its subscriptions die with the peer.
        backlog = pipe.inbox.items
        if backlog and self.delivers_upstream:
            for message in backlog:
                first = message[0]
                if not (first and first[0] <= 1):
                    self._deliver(message, None)
        backlog.clear()
        if self._last_pipe is pipe:
            self._last_pipe = None
        departure = _Departure(list(state.topics), list(state.requested) if self._manual else [])
        if len(departure) <= FORGET_SLICE:
            self._forget_slice(pipe, departure)
            return
        # Meanwhile it takes no message: a full outbox (the send path's own HWM check, so
        # sending costs nothing more); its capacity comes back when it is forgotten.
        outbox = pipe.outbox
        self._capacity[pipe] = outbox.capacity
        outbox.capacity = 0
        self._cache.invalidate()
        outbox.clear()
        reap = not self._dying
        self._dying[pipe] = departure
        if reap:
            self.socket.defer(self._reap)

    def _forget_slice(self, pipe: Pipe, departure: _Departure) -> bool:
        """Undo up to FORGET_SLICE of a departed peer's subscriptions (from the end of its
        lists); True when none are left. xpub_manual: what the application applied leaves
        the trie silently, and each topic the peer had asked for is an unsubscription."""
        trie = self._trie
        topics, notices = departure.topics, departure.notices
        pop = topics.pop
        count = min(FORGET_SLICE, len(topics))
        if self._manual:
            for _ in range(count):
                trie.remove(pop(), pipe)
        else:
            verbose = self._verbose_unsubs
            for _ in range(count):
                topic = pop()
                result = trie.remove(topic, pipe)
                if result is RemoveResult.LAST_VALUE_REMOVED or verbose:
                    self._notify(None, False, topic)
        for _ in range(min(FORGET_SLICE - count, len(notices))):
            self._notify(None, False, notices.pop())
        if departure:
            return False
        self._dying.pop(pipe, None)
        capacity = self._capacity.pop(pipe, None)
        if capacity is not None:
            outbox = pipe.outbox
            outbox.clear()  # (wakes a sender waiting on it: xpub_nodrop)
            outbox.capacity = capacity
            self._cache.invalidate()
        return True

    def _reap(self) -> bool:
        """One slice of the deferred removals (``RoutingHost.defer``); True when all done."""
        for pipe, departure in list(self._dying.items()):
            self._forget_slice(pipe, departure)
            break
        return not self._dying

    def _finish_forgetting(self, pipe: Pipe) -> None:
        """A peer still being forgotten subscribes again (a connect() pipe reconnected):
        finish first, so that the removal cannot take its new topics."""
        while not self._forget_slice(pipe, self._dying[pipe]):
            pass

    @property
    def _hold(self) -> float:
        """Deliveries held per peer before its further input waits unprocessed (see the
        module docstring): ``recv_hwm``, read as it is now (``set`` may change it)."""
        return self.socket.options.recv_hwm or math.inf

    @property
    def topic_count(self) -> int:
        """Distinct topics with at least one subscriber (diagnostics)."""
        return len(self._trie)

    @property
    def forgetting(self) -> int:
        """Subscriptions of departed peers still to be undone (diagnostics): topics to leave
        the trie, and with ``xpub_manual`` unsubscriptions to deliver."""
        return sum(map(len, self._dying.values()))

    # ------------------------------------------------------------------ upstream

    def incoming(self, pipe: Pipe, messages: list[Message]) -> None:
        if pipe.inbox.items:
            pipe.inbox.put_many(messages)  # behind the backlog, in order
            return
        hold = self._hold if self.delivers_upstream else math.inf  # (PUB holds nothing)
        state = _subscriber(pipe)
        for i, message in enumerate(messages):
            if state.held >= hold or (_subscribes(message) and not self._take_budget(pipe)):
                pipe.inbox.put_many(messages[i:])
                return
            self._upstream(pipe, message)

    def incoming_one(self, pipe: Pipe, message: Message) -> None:
        if (
            pipe.inbox.items
            or (self.delivers_upstream and _subscriber(pipe).held >= self._hold)
            or (_subscribes(message) and not self._take_budget(pipe))
        ):
            pipe.inbox.put(message)
            return
        self._upstream(pipe, message)

    def _take_budget(self, pipe: Pipe) -> bool:
        """Whether one more subscription may be applied in this loop pass; if not, ``pipe``'s
        backlog is applied from the next pass on (:meth:`_next_pass`)."""
        if self._budget > 0:
            self._budget -= 1
            return True
        self._starved[pipe] = None
        if not self._passes:
            self._passes = True
            self.socket.defer(self._next_pass)  # (at once if the socket is closing)
        return False

    def _next_pass(self) -> bool:
        """One slice of the waiting arrivals (``RoutingHost.defer``); True when none wait."""
        self._budget = APPLY_SLICE
        starved, self._starved = self._starved, {}
        for pipe in starved:
            self._drain(pipe)  # (puts itself back while its backlog outlasts the budget)
        self._passes = bool(self._starved)
        return not self._passes

    def readable(self, pipe: Pipe) -> None:
        # Input that waits unprocessed (see the module docstring), and messages an inproc peer
        # queued before the link existed: processed while the peer's deliveries have room.
        self._drain(pipe)

    def _drain(self, pipe: Pipe) -> None:
        inbox = pipe.inbox
        if not inbox.items:
            return
        state = _subscriber(pipe)
        hold = self._hold if self.delivers_upstream else math.inf
        items = inbox.items
        while items and state.held < hold:
            if _subscribes(items[0]) and not self._take_budget(pipe):
                return
            self._upstream(pipe, inbox.get())  # get: wakes the reader as the inbox frees

    def command(self, pipe: Pipe, name: bytes, data: bytes) -> bool:
        if name in (SUBSCRIBE, CANCEL):
            if (
                pipe.inbox.items
                or (self.delivers_upstream and _subscriber(pipe).held >= self._hold)
                or not self._take_budget(pipe)
            ):
                # Waits in order with the rest, in its ZMTP 3.0 message form (same meaning).
                pipe.inbox.put([(b"\x01" if name == SUBSCRIBE else b"\x00") + data])
            else:
                self._subscription(pipe, name == SUBSCRIBE, data)
            return True
        return False

    def _upstream(self, pipe: Pipe, message: Message) -> None:
        first = message[0]
        if first and first[0] <= 1:
            # libzmq >= 4.3.3 applies every 0x00/0x01-prefixed frame of such a message.
            for frame in message:
                if frame and frame[0] <= 1:
                    self._subscription(pipe, frame[0] == 1, frame[1:])
        elif self.delivers_upstream:
            self._deliver(message, pipe)

    def _subscription(self, pipe: Pipe, subscribe: bool, topic: bytes) -> None:
        if self._dying and pipe in self._dying:
            self._finish_forgetting(pipe)
        state = _subscriber(pipe)
        if not pipe.attached:
            state.early.append((subscribe, topic))
        else:
            self._apply(pipe, state, subscribe, topic)

    def _apply(self, pipe: Pipe, state: _Subscriber, subscribe: bool, topic: bytes) -> None:
        if subscribe and self._too_many(pipe, state, topic):
            return
        if self._manual:
            if subscribe:
                state.requested.add(topic)
            else:
                state.requested.discard(topic)
            self._notify(pipe, subscribe, topic)
            return
        if subscribe:
            state.topics.add(topic)
            notify = self._trie.add(topic, pipe) or self._verbose_subs
        else:
            state.topics.discard(topic)
            result = self._trie.remove(topic, pipe)
            # As libzmq: NOT_FOUND is passed on too (an upstream XSUB ignores it anyway).
            notify = result is not RemoveResult.VALUES_REMAIN or self._verbose_unsubs
        if notify:
            self._notify(pipe, subscribe, topic)

    def _too_many(self, pipe: Pipe, state: _Subscriber, topic: bytes) -> bool:
        """``max_subscriptions``: a peer asking for one topic too many is disconnected (it
        would otherwise grow the trie without limit); its subscriptions are then dropped."""
        held = state.requested if self._manual else state.topics
        if len(held) < self._max_topics or topic in held:
            return False
        self.socket.close_pipe_connection(
            pipe, f"too many subscriptions (max_subscriptions={self._max_topics})"
        )
        return True

    def _notify(self, pipe: Pipe | None, subscribe: bool, topic: bytes) -> None:
        if self.delivers_upstream:
            self._deliver([(b"\x01" if subscribe else b"\x00") + topic], pipe)

    def _deliver(self, message: Message, pipe: Pipe | None) -> None:
        if pipe is not None:
            _subscriber(pipe).held += 1
        pending = self._pending
        pending.append((message, pipe))
        if len(pending) == 1:
            self.socket.wake_receivers()

    # ------------------------------------------------------------------ application side

    def try_send(self, parts: Message) -> bool:
        pipes = self._trie.match(parts[0])
        last = self._last_pipe if self._send_last_pipe else None
        if last is not None:
            # xpub_manual_last_value: only the peer whose subscription was received last.
            pipes = (last,) if last in pipes else ()
        if self._invert:
            pipes = [pipe for pipe in self._all if pipe not in pipes]
        if not pipes:
            sent = True
        elif self._conflate:
            for pipe in pipes:
                conflate_send(pipe, parts)  # a full inproc subscriber loses its copy
            sent = True
        else:
            sent = self.fan_out(pipes, parts, self._nodrop)
        if sent and last is not None:
            self._last_pipe = None  # as libzmq: the next message goes to every match again
        return sent

    def try_send_sharing(self, parts: Message) -> bool:
        """:meth:`try_send` while encodings are shared (see :meth:`_update_sharing`, which
        installs it): a message for two subscribers or more is encoded once.

        That is :meth:`FanOut.fan_out` for tcp/ipc pipes with one encoding for all (see the
        class docstring), in this one function (a Python call per published message less).
        Every pipe here queues on its outbox (``_can_share``), so the queue's ``put`` is
        inlined: the append, and the consumer's wake-up on the empty -> non-empty edge. For
        the usual target set (:class:`FanOutCache`), when every target has room and none is
        empty, the per-pipe loop is replaced by the cache's checks and one bound ``append``
        per pipe; otherwise the loop below applies every rule per pipe."""
        trie = self._trie
        pipes = trie.match(parts[0])
        if len(pipes) < 2 or self.socket.extension is not None:
            if not pipes:
                return True
            self._cache.spent()  # these pipes' queues grow outside the cache's budget
            return self.fan_out(pipes, parts, self._nodrop)
        if len(parts) == 1:
            small = len(parts[0]) <= SHARED_ENCODING_MAX
        else:
            small = sum(map(len, parts)) <= SHARED_ENCODING_MAX
        shared = encoded_message(parts) if small else parts
        if self._cache.offer(pipes, trie.version, shared):
            return True  # every target had room and a writer already woken
        if self._nodrop:
            for pipe in pipes:  # (inlined: a generator and the ``full`` property cost more)
                outbox = pipe.outbox
                if len(outbox.items) >= outbox.capacity:
                    return False  # nothing sent to anyone: a retry cannot duplicate
        for pipe in pipes:
            outbox = pipe.outbox
            items = outbox.items
            if len(items) < outbox.capacity:  # a full pipe loses only its own copy
                items.append(shared)
                if len(items) == 1:
                    outbox.on_data()
        return True

    def try_recv(self) -> Message | None:
        pending = self._pending
        if not pending:
            return None
        message, pipe = pending.popleft()
        if pipe is not None:
            state = pipe.state
            if isinstance(state, _Subscriber):  # (None once the peer is gone)
                if state.held:
                    state.held -= 1
                if pipe.inbox.items:
                    self._drain(pipe)
        if self._manual:
            self._last_pipe = pipe
        return message

    def subscribe(self, topic: bytes) -> None:
        self._manual_apply(topic, True)

    def unsubscribe(self, topic: bytes) -> None:
        self._manual_apply(topic, False)

    def _manual_apply(self, topic: bytes, subscribe: bool) -> None:
        if not self._manual:
            raise UnsupportedOperation(
                f"{self.socket_type}.subscribe()/unsubscribe() need xpub_manual=True"
            )
        pipe = self._last_pipe
        if pipe is None or not pipe.attached:
            return  # as libzmq: no subscription received yet (or its peer is gone)
        state = _subscriber(pipe)
        if subscribe:
            state.topics.add(topic)
            self._trie.add(topic, pipe)
        elif topic in state.topics:
            state.topics.discard(topic)
            self._trie.remove(topic, pipe)


class XSub(FairQueue, FanOut, Subscriptions, RoutingStrategy):
    """Receive everything its publishers send; the application may send upstream.

    * ``send(b"\\x01" + topic)`` / ``send(b"\\x00" + topic)`` subscribe / unsubscribe. They are
      counted: the cancel is only passed upstream when the last subscription to the topic
      goes. They are forwarded as data frames, exactly as the application wrote them (libzmq
      does the same); any other message goes upstream as it is, to every publisher.
    * ``subscribe()``/``unsubscribe()`` do the same, as SUBSCRIBE/CANCEL commands.
    * On every (re)connection the current subscriptions are sent again: as commands to a ZMTP
      3.1 peer, as ``\\x01``-messages to a 3.0 peer.
    * XSUB does not filter what it receives (SUB does).
    """

    socket_type = "XSUB"

    def __new__(cls, socket: RoutingHost) -> XSub:
        # ZMQ_CONFLATE picks a subclass, keeping the default incoming path (and the inproc
        # shortcut that relies on it) for the plain XSUB.
        if cls is XSub and socket.options.conflate:
            cls = ConflatingXSub
        return super().__new__(cls)

    def __init__(self, socket: RoutingHost) -> None:
        RoutingStrategy.__init__(self, socket)
        FairQueue.__init__(self)
        self._topics = TopicTrie()
        self._pipes: list[Pipe] = []
        self._conflate = socket.options.conflate
        #: Receive runs (RoutingStrategy.recv_runs), but with ``conflate``, whose put_only
        #: replaces the queued message under a run.
        self.recv_runs = not self._conflate

    # ------------------------------------------------------------------ pipe lifecycle

    def attach(self, pipe: Pipe) -> str | None:
        self._pipes.append(pipe)
        return None

    def detach(self, pipe: Pipe) -> None:
        if pipe in self._pipes:
            self._pipes.remove(pipe)

    def connected(self, pipe: Pipe) -> None:
        if not pipe.endpoint.startswith("inproc://"):
            # Legacy subscription messages still queued from the previous connection would
            # double what we re-send now.
            items = pipe.outbox.items
            if any(m[0] and m[0][0] <= 1 for m in items):
                kept = [m for m in items if not (m[0] and m[0][0] <= 1)]
                items.clear()
                items.extend(kept)
        for topic in self._topics.topics():
            self._tell(pipe, True, topic)

    # ------------------------------------------------------------------ subscriptions

    def _tell(self, pipe: Pipe, subscribe: bool, topic: bytes) -> None:
        """Send one (un)subscription on ``pipe``'s live connection, in the peer's dialect."""
        peer = pipe.peer
        if peer is not None and peer.zmtp_version >= (3, 1):
            pipe.send_command(SUBSCRIBE if subscribe else CANCEL, topic)
        else:
            # ZMTP 3.0 has no SUBSCRIBE/CANCEL: the message form, in order with everything
            # else, and past the HWM (a lost subscription would be a silent outage).
            pipe.send([(b"\x01" if subscribe else b"\x00") + topic])

    def _tell_all(self, subscribe: bool, topic: bytes) -> None:
        # Pipes without a live connection get everything in connected(), from the trie.
        for pipe in self._pipes:
            if pipe.connected:
                self._tell(pipe, subscribe, topic)

    def subscribe(self, topic: bytes) -> None:
        # Every subscribe goes out, like libzmq: the publisher de-duplicates per peer, and
        # forwarding devices with XPUB_VERBOSE rely on seeing each one.
        self._topics.add(topic)
        self._tell_all(True, topic)

    def unsubscribe(self, topic: bytes) -> None:
        if self._topics.remove(topic):
            self._tell_all(False, topic)

    # ------------------------------------------------------------------ application side

    def try_send(self, parts: Message) -> bool:
        first = parts[0]
        if first and first[0] <= 1:
            topic = first[1:]
            if first[0] == 1:
                self._topics.add(topic)
            elif not self._topics.remove(topic):
                return True  # still subscribed (or never was): nothing to tell upstream
            for pipe in self._pipes:
                if pipe.connected:
                    pipe.send(parts)
            return True
        return self.fan_out(self._pipes, parts)

    try_recv = FairQueue.fq_recv
    take_run = FairQueue.fq_take_run
    end_run = FairQueue.fq_end_run


class ConflatingXSub(XSub):
    """XSUB with ``conflate``: only the newest message of each publisher is kept (libzmq
    ignores ZMQ_CONFLATE on XSUB; see docs/socket-types.md)."""

    def incoming(self, pipe: Pipe, messages: list[Message]) -> None:
        if messages:
            conflate_put(pipe.inbox, messages[-1])

    def incoming_one(self, pipe: Pipe, message: Message) -> None:
        conflate_put(pipe.inbox, message)
