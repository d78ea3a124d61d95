"""Mixins shared by the socket types, beyond base.py's FairQueue and LoadBalancer.

* :class:`RoundRobin` - LoadBalancer that also tells which pipe took the message (REQ must
  take its reply from that pipe only).
* :class:`FanOut` - copy a message to several pipes, dropping (never blocking) per full pipe
  (PUB, XPUB, RADIO, XSUB upstream).
* :class:`IdentityRouter` - a routing-id -> pipe table (ROUTER: 5-byte generated ids or the
  peer's Identity; SERVER/PEER: non-zero uint32 ids).
* :class:`SinglePart` - the draft thread-safe types: send single-part only, drop multipart input.
* :class:`ConflateSend` - ``ZMQ_CONFLATE`` on a load-balancing sender (PUSH, DEALER), and
  :func:`conflate_put` / :func:`conflate_send` underneath every conflating type.
* :class:`ProbeRouter` - ``ZMQ_PROBE_ROUTER`` for DEALER and REQ (ROUTER does it itself).
* :class:`Subscriptions`, :class:`Groups`, :class:`RoutingIds` - the optional application APIs
  (``subscribe``, ``join``, ``send_to``...) that :class:`zmtp.Socket` forwards to a strategy
  after an ``isinstance`` check, so other types report "not supported" clearly.

Like base.py, nothing here awaits: every operation succeeds now or reports "would block".
"""

from __future__ import annotations

import random
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, ClassVar

from ..engine.pipe import Pipe
from ..engine.queue import Message, MessageQueue, Received
from ..errors import UnsupportedOperation
from ..protocol.errors import InvalidArgument
from .base import LoadBalancer

if TYPE_CHECKING:
    from .base import RoutingHost


class RoundRobin(LoadBalancer):
    """:class:`LoadBalancer` whose send returns the pipe that took the message."""

    def rr_send(self, parts: Message) -> Pipe | None:
        """Queue ``parts`` on the next pipe with room; that pipe, or None if all are full."""
        lone = self._lone
        if lone is not None:
            # One peer, a REQ's usual case: lb_send's single-peer path (no rotation: ``_next``
            # is 0 already, lb_detach keeps it below ``n``).
            return lone if self.lb_send(parts) else None
        pipes = self._out
        n = len(pipes)
        ext = self.socket.extension
        start = self._next
        for i in range(n):
            index = (start + i) % n
            pipe = pipes[index]
            if pipe.outbox.full or (ext is not None and not ext.can_send(pipe)):
                continue
            self._next = (index + 1) % n
            pipe.send(parts)
            return pipe
        return None


class FanOut:
    """Copy one message to many pipes; a full pipe loses only its own copy.

    libzmq's ``dist_t``: a publisher must never be held up by its slowest subscriber. With
    ``nodrop`` (``ZMQ_XPUB_NODROP``) the send reports "would block" instead when any target is
    full, and nothing is sent to anyone, so a retry cannot duplicate.
    """

    socket: RoutingHost

    def fan_out(self, pipes: Iterable[Pipe], parts: Message, nodrop: bool = False) -> bool:
        ext = self.socket.extension
        if nodrop:
            pipes = list(pipes)
            for pipe in pipes:  # (inlined: a generator and the ``full`` property cost more)
                outbox = pipe.outbox
                if len(outbox.items) >= outbox.capacity:
                    return False
        if ext is None:  # the publisher's hot loop, once per subscriber: HWM check inlined
            for pipe in pipes:
                outbox = pipe.outbox
                if len(outbox.items) < outbox.capacity:
                    pipe.send(parts)
            return True
        for pipe in pipes:
            if pipe.outbox.full or (ext is not None and not ext.can_send(pipe)):
                continue  # this subscriber's copy is dropped, the others still get theirs
            pipe.send(parts)
        return True


def conflate_put(queue: MessageQueue, message: Received) -> None:
    """``ZMQ_CONFLATE``: keep only the newest message in ``queue``.

    Replacing in place when the queue already holds one keeps the edge-triggered wake-ups
    right: the consumer was told about "non-empty" once, and it still is.
    """
    queue.put_only(message)


def is_inproc(pipe: Pipe) -> bool:
    """An inproc pipe's outbox is the peer's inbox and ``send`` the peer's receive path."""
    return pipe.endpoint.startswith("inproc://")


def conflate_send(pipe: Pipe, parts: Message) -> bool:
    """Queue ``parts`` for ``pipe`` as a conflating sender; False if it must wait.

    The outbox keeps only the newest message, so this never waits - except on a linked
    inproc pipe, whose outbox *is* the receiver's inbox, which only the receiver's own
    ``conflate`` may rewrite: the message is handed over with the usual HWM rule, like a
    plain send. (An inproc pipe still waiting for its peer to bind conflates as tcp does.)
    """
    if pipe.connected and is_inproc(pipe):
        if pipe.outbox.full:
            return False
        pipe.send(parts)
    else:
        conflate_put(pipe.outbox, parts)
    return True


def put_first(queue: MessageQueue, message: Message) -> None:
    """Put ``message`` at the head of ``queue``, past the HWM (control messages: a probe, a
    ROUTER notification), keeping the empty -> non-empty wake-up edge."""
    if queue.items:
        queue.items.appendleft(message)
    else:
        queue.put(message)


def send_first(pipe: Pipe, message: Message) -> None:
    """Send ``message`` to ``pipe``'s peer ahead of anything still queued for it (the first
    message of a new connection; called from a strategy's ``connected``)."""
    if is_inproc(pipe):
        # A link hands over what we send during its handshakes before anything queued for the
        # bind (zmtp/engine/inproc.py), and a bound side's peer is attached already.
        pipe.send(message)
    else:
        put_first(pipe.outbox, message)


def purge_queued(ready: deque[Pipe], keep: Callable[[Received], bool]) -> None:
    """Drop messages ``keep`` rejects from the inboxes of a :class:`FairQueue`'s ready pipes.

    For SUB/DISH after an unsubscribe/leave: libzmq filters when the application reads, so a
    message queued before the unsubscribe is not delivered; filtering on arrival plus this
    purge gives the same result. Keeps the FairQueue invariant (a pipe is ready exactly when
    its inbox is non-empty) and wakes a reader paused at the HWM.
    """
    for pipe in list(ready):
        inbox = pipe.inbox
        if all(keep(m) for m in inbox.items):
            continue
        was_full = inbox.full
        kept = [m for m in inbox.items if keep(m)]
        inbox.items.clear()
        inbox.items.extend(kept)
        if not kept:
            ready.remove(pipe)
        if was_full and not inbox.full:
            inbox.on_space()


class ConflateSend:
    """``ZMQ_CONFLATE`` for a load-balancing sender (PUSH, DEALER; libzmq's conflating pipes).

    Round-robin as :class:`LoadBalancer`, but each peer's queue keeps only the newest message,
    so ``send`` never waits for a tcp/ipc peer (only for full inproc peers, see
    :func:`conflate_send`) and never waits at all once a peer has room. With no peer at all it
    waits, like libzmq (no pipe to write to).
    """

    socket: RoutingHost
    _out: list[Pipe]
    _next: int

    def lb_send_conflate(self, parts: Message) -> bool:
        pipes = self._out
        n = len(pipes)
        ext = self.socket.extension
        start = self._next
        for i in range(n):
            index = (start + i) % n
            pipe = pipes[index]
            if ext is not None and not ext.can_send(pipe):
                continue
            if conflate_send(pipe, parts):
                self._next = (index + 1) % n
                return True
        return False


class ProbeRouter:
    """``ZMQ_PROBE_ROUTER`` for DEALER and REQ: an empty message first on each connection.

    It lets a ROUTER peer learn our routing id (it receives ``[our_id, b""]``) before we have
    anything to say. libzmq writes it when a pipe is attached, which for a connect() endpoint
    is once, before its first connection; here it goes out on every connection, so a ROUTER
    that restarted learns about us too (see docs/socket-types.md).
    """

    socket: RoutingHost

    def connected(self, pipe: Pipe) -> None:
        if self.socket.options.probe_router:
            send_first(pipe, [b""])


class IdentityRouter:
    """A table from routing id to pipe, kept in ``pipe.routing_id`` and ``_routes``."""

    def __init__(self) -> None:
        self._routes: dict[bytes, Pipe] = {}

    def route_add(self, routing_id: bytes, pipe: Pipe) -> None:
        pipe.routing_id = routing_id
        self._routes[routing_id] = pipe

    def route_remove(self, pipe: Pipe) -> None:
        """Forget ``pipe`` (only if its id still points at it: after a handover it may not)."""
        if self._routes.get(pipe.routing_id) is pipe:
            del self._routes[pipe.routing_id]

    def route_lookup(self, routing_id: bytes) -> Pipe | None:
        return self._routes.get(routing_id)


class GeneratedIds:
    """A 32-bit counter starting at a random value, as libzmq's ``generate_random()``."""

    def __init__(self) -> None:
        self._next_id = random.getrandbits(32)

    def next_uint32(self) -> int:
        value = self._next_id
        self._next_id = (value + 1) & 0xFFFFFFFF
        return value


class SinglePart:
    """The draft thread-safe types (RFC 41/48/49/51/52) never carry multipart messages.

    Sending one is an application error, reported at once. A multipart message *arriving* is
    discarded whole, as the RFCs require ("MUST discard any part of a multipart message").
    """

    socket_type: ClassVar[str]

    def check_single_part(self, parts: Message) -> None:
        if len(parts) != 1:
            raise UnsupportedOperation(
                f"{self.socket_type} sockets send single-part messages only "
                f"(got {len(parts)} parts)"
            )

    @staticmethod
    def single_parts(messages: list[Message]) -> list[Message]:
        return [m for m in messages if len(m) == 1]

    def check_send(self, parts: Message) -> None:
        self.check_single_part(parts)

    def incoming(self, pipe: Pipe, messages: list[Message]) -> None:
        pipe.inbox.put_many(self.single_parts(messages))

    def incoming_received(self, pipe: Pipe, messages: Sequence[Received]) -> None:
        """As :meth:`incoming`, for a batch that may hold bare one-part messages."""
        pipe.inbox.put_received([m for m in messages if isinstance(m, bytes) or len(m) == 1])

    def incoming_one(self, pipe: Pipe, message: Message) -> None:
        if len(message) == 1:
            pipe.inbox.put(message)


# ------------------------------------------------------------------ application APIs


class Subscriptions:
    """Socket types with ``subscribe`` / ``unsubscribe`` (SUB, XSUB, manual XPUB)."""

    def subscribe(self, topic: bytes) -> None:
        raise NotImplementedError

    def unsubscribe(self, topic: bytes) -> None:
        raise NotImplementedError


class Groups:
    """Socket types with ``join`` / ``leave`` (DISH)."""

    def join(self, group: bytes) -> None:
        raise NotImplementedError

    def leave(self, group: bytes) -> None:
        raise NotImplementedError


class RoutingIds:
    """Socket types that address peers by a uint32 routing id (SERVER, PEER).

    At the multipart API the id travels as frame 0, four bytes big-endian, exactly like a
    ROUTER's id frame: ``[routing_id, body]``. On the wire messages stay single-part.
    """

    @staticmethod
    def encode_routing_id(routing_id: int) -> bytes:
        if not 0 < routing_id <= 0xFFFFFFFF:
            raise InvalidArgument("a routing id is a non-zero 32-bit unsigned integer")
        return routing_id.to_bytes(4, "big")

    @staticmethod
    def decode_routing_id(frame: bytes) -> int:
        return int.from_bytes(frame, "big")


def check_group(group: bytes) -> None:
    """RFC 48: a group is 0-255 bytes, none of them zero (libzmq stores it as a C string)."""
    if len(group) > 255:
        raise InvalidArgument(f"a group is at most 255 bytes (got {len(group)})")
    if b"\0" in group:
        raise InvalidArgument("a group must not contain zero bytes")
