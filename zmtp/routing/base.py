"""The routing-strategy interface and the shared mixins (fair-queue, load-balance).

A strategy is the socket type: it decides which pipe an outgoing message goes to and what an
incoming message means. It sees :class:`~zmtp.engine.pipe.Pipe` objects and lists of parts,
never bytes on the wire, and never awaits: ``try_send`` / ``try_recv`` either succeed now or
report "would block", and the socket does the waiting (timeouts, cancellation).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterator, Sequence
from itertools import islice, repeat
from operator import length_hint
from typing import TYPE_CHECKING, ClassVar, Protocol

from ..engine.pipe import Pipe
from ..engine.queue import Message, MessageQueue, Received
from ..errors import UnsupportedOperation

if TYPE_CHECKING:
    from ..extension import SocketExtension
    from ..options import Options


class RoutingHost(Protocol):
    """What a strategy may use of the socket it routes for (the socket's engine core,
    :class:`zmtp.engine.core.SocketCore`, implements it; docs/architecture.md).

    Attributes are read-only for strategies.
    """

    socket_type: str
    options: Options
    extension: SocketExtension | None
    #: The socket is closing (its own close ends every connection from now on).
    closing: bool

    def is_bound(self, endpoint: str) -> bool:
        """Whether ``endpoint`` is still one of the socket's listeners (not unbound)."""
        ...

    def is_connected_to(self, endpoint: str) -> bool:
        """Whether ``endpoint`` is still one of the socket's connect() endpoints."""
        ...

    def close_pipe_connection(self, pipe: Pipe, reason: str) -> None:
        """End the live connection behind ``pipe`` (ROUTER handover); a connect() pipe then
        reconnects as usual."""
        ...

    def wake_receivers(self) -> None:
        """A message is ready outside any pipe's inbox (XPUB's own subscription messages):
        wake the tasks blocked in ``recv``."""
        ...

    def defer(self, work: Callable[[], bool]) -> None:
        """Run ``work`` once per event-loop pass, in a task of the socket, until it returns
        True: work too long for one call (XPUB dropping a departed peer's many
        subscriptions), done in slices so that it never stalls the other connections. Once
        the socket is closing it runs to completion at once."""
        ...


#: A receive run that holds nothing (an exhausted iterator: ``next`` on it gives the default
#: at once); see :attr:`RoutingStrategy.run`.
NO_RUN: Iterator[Received] = iter(())
#: What a run calls per message: ``deque.popleft`` unbound, mapped over ``repeat(items, n)``
#: (cheaper than ``islice(iter(items.popleft, None), n)``: no sentinel compare, one iterator
#: less).
_popleft = deque.popleft


class RoutingStrategy:
    """Base class: one subclass per socket type."""

    socket_type: ClassVar[str]
    #: A connect() pipe takes messages before its connection is up (libzmq without
    #: ZMQ_IMMEDIATE). Types that must know the peer first (ROUTER...) set this False.
    attach_on_connect: ClassVar[bool] = True
    can_send: ClassVar[bool] = True
    can_recv: ClassVar[bool] = True
    #: Whether :meth:`check_send` must run before each send (skipped on the fast path when
    #: False). Types with send rules (REQ alternation, draft single-part) set it True.
    send_check: ClassVar[bool] = False
    #: A tcp/ipc connection may queue a one-part message as its bare ``bytes`` (see
    #: ``zmtp.engine.queue.Received``) and hand its batches to :meth:`incoming_received`
    #: (under an extension only if it set ``SocketExtension.bare_single_part``). For types
    #: whose receive side only queues what arrives and whose messages are usually one frame
    #: (PULL, SUB, PAIR, DEALER, CHANNEL, CLIENT, GATHER); ``try_recv`` then returns
    #: ``Received`` and the socket's receive API turns it back.
    bare_single_part: ClassVar[bool] = False
    #: Receive runs (``zmtp.Socket``'s receive fast path): the socket's ``recv`` takes the
    #: next message with ``next(strategy.run, None)``, and only when that gives None calls
    #: :meth:`take_run`, which returns the next message (as :meth:`try_recv`) and may set
    #: ``run`` to the ones after it, ``run_length`` of them (:class:`FairQueue` explains
    #: when). For the types whose receive is only the fair queue (PULL, SUB, XSUB), without
    #: ``conflate``; the others keep ``run`` empty and the socket calls ``try_recv``.
    recv_runs: bool = False
    run: Iterator[Received] = NO_RUN
    run_length: int = 0

    def __init__(self, socket: RoutingHost) -> None:
        self.socket = socket

    # --------------------------------------------------------------- pipe lifecycle

    def prepare_connect(self, endpoint: str, routing_id: bytes | None) -> None:
        """``connect(endpoint, routing_id=...)`` is about to create the endpoint's pipe.

        Only ROUTER names the peer of a connect() itself (``ZMQ_CONNECT_ROUTING_ID``); it
        validates the id here, before anything is created, so a bad one leaves no trace.
        """
        if routing_id is not None:
            raise UnsupportedOperation(
                f"{self.socket_type} sockets do not take a routing id in connect() "
                "(only ROUTER does)"
            )

    def attach_early(self, pipe: Pipe) -> bool:
        """Whether the connect() pipe ``pipe`` is routable before its connection is up (and
        stays so across reconnects): :attr:`attach_on_connect`, unless a type decides per
        pipe (a ROUTER pipe with a connect routing id)."""
        return self.attach_on_connect

    def attach(self, pipe: Pipe) -> str | None:
        """Make ``pipe`` routable. Return a reason to refuse it (e.g. PAIR's second peer)."""
        return None

    def detach(self, pipe: Pipe) -> None:
        """``pipe`` is no longer routable (messages already in its inbox stay readable)."""

    def connected(self, pipe: Pipe) -> None:
        """A connection behind ``pipe`` completed its handshake (resend subscriptions...)."""

    def disconnected(self, pipe: Pipe) -> None:
        """The connection behind ``pipe`` ended."""

    # --------------------------------------------------------------- incoming

    def readable(self, pipe: Pipe) -> None:
        """``pipe.inbox`` became non-empty."""

    def incoming(self, pipe: Pipe, messages: list[Message]) -> None:
        """A batch of messages from a stream connection."""
        pipe.inbox.put_many(messages)

    def incoming_received(self, pipe: Pipe, messages: Sequence[Received]) -> None:
        """A batch from a stream connection that may hold bare one-part messages (only for a
        type with :attr:`bare_single_part`; override it with :meth:`incoming`)."""
        pipe.inbox.put_received(messages)

    def incoming_one(self, pipe: Pipe, message: Message) -> None:
        """One message from an inproc peer."""
        pipe.inbox.put(message)

    def command(self, pipe: Pipe, name: bytes, data: bytes) -> bool:
        """A post-handshake command; return True if the socket type consumed it."""
        return False

    # --------------------------------------------------------------- application side

    def check_send(self, parts: Message) -> None:
        """Raise if sending ``parts`` now is not allowed (REQ state, draft multipart...)."""
        if not self.can_send:
            raise UnsupportedOperation(f"{self.socket_type} sockets cannot send")

    def try_send(self, parts: Message) -> bool:
        """Route ``parts``; False if it would block (no peer or every peer at its HWM)."""
        raise UnsupportedOperation(f"{self.socket_type} sockets cannot send")

    def check_recv(self) -> None:
        if not self.can_recv:
            raise UnsupportedOperation(f"{self.socket_type} sockets cannot receive")

    def try_recv(self) -> Received | None:
        """The next message for the application, or None if none is waiting (a bare
        ``bytes`` only from a :attr:`bare_single_part` type)."""
        raise UnsupportedOperation(f"{self.socket_type} sockets cannot receive")

    def recv_timed_out(self) -> None:
        """A ``recv`` gave up after ``recv_timeout`` (REQ uses it to abandon its request)."""

    def take_run(self, limit: int) -> Received | None:
        """:meth:`try_recv`, and a receive run of at most ``limit - 1`` messages after it
        where the type has them (:attr:`recv_runs`); this default has none."""
        return self.try_recv()

    def end_run(self) -> None:
        """End the receive run, if any: its messages stay queued, for ``try_recv``."""


class FairQueue:
    """Receive round-robin from every pipe that has messages (libzmq ``fq_t``).

    Invariant: a pipe is in ``_ready`` exactly when its inbox is non-empty, maintained by the
    inbox's empty -> non-empty edge callback (``readable``) and by ``fq_recv`` dropping pipes it
    drains. A pipe whose connection ended stays until its last message is read.

    Receive runs (:meth:`fq_take_run`, for ``zmtp.Socket``'s receive fast path): ``run`` is
    an iterator whose every ``next`` pops the next message in C, with none of ``fq_recv``'s
    bookkeeping, because the run is cut so that none is needed. It takes whole rounds over
    the ready pipes, in their round-robin order (one pipe alone: that pipe's messages), or,
    where not one whole round fits (more ready pipes than the run's limit: many busy peers),
    one message from each of the first ready pipes, so the order is ``fq_recv``'s; it never
    takes a pipe's last message (``fq_recv`` takes that
    one and drops the pipe from ``_ready``) nor, as the inbox is when the run starts, the
    message that takes it from full to not full (``fq_recv`` takes that one too and wakes the
    producer). The messages stay in their inboxes until handed out, so the HWM bound, the
    order and a cancelled receive are as without runs, and ending a run early loses nothing:
    :meth:`fq_end_run` turns ``_ready`` by the part of a round already handed out, as
    ``fq_recv`` would have. Anything that would change what ``next(run)`` pops ends it first:
    another pipe turning readable (:meth:`readable`), every ``fq_recv`` (a receive outside the
    fast path takes the head itself, and the next run starts with one), a SUB's purge after
    an unsubscribe, a message the socket sets aside.

    One thing a run cannot see is a producer filling an inbox while the run is under way
    (the application awaited something else between two receives, and the reader, or an
    inproc sender, ran): the run may then take that inbox below its capacity without the
    wake-up. So :meth:`fq_end_run` wakes the producer of every inbox the run took from that
    may have been full meanwhile and is not any more: a producer waiting for room is woken
    at the latest when the run ends, within 64 receives (the socket's cadence), and always
    before the application waits for a message itself.
    """

    def __init__(self) -> None:
        self._ready: deque[Pipe] = deque()
        #: The messages the receive fast path may pop without a check (see the class
        #: docstring); ``run_length``: how many the last :meth:`fq_take_run` put in it.
        self.run: Iterator[Received] = NO_RUN
        self.run_length = 0
        #: What the run maps ``deque.popleft`` over (its length hint says how far the run
        #: got), and the inboxes of one round, in order (none: no run since the last end).
        self._run_source: Iterator[deque[Message]] = iter(())
        self._run_inboxes: list[MessageQueue] = []

    def readable(self, pipe: Pipe) -> None:
        if self.run is not NO_RUN:
            self.fq_end_run()  # another pipe has messages: it joins the round-robin
        self._ready.append(pipe)

    def fq_end_run(self) -> None:
        """End the current receive run; its messages stay queued (see the class docstring)."""
        self.run = NO_RUN
        inboxes = self._run_inboxes
        if not inboxes:
            return
        self._run_inboxes = []
        taken = self.run_length - length_hint(self._run_source)
        ready = self._ready
        # ``_ready`` is as the run found it (anything that changes it ends the run first); a
        # run of whole rounds holds every ready pipe, a part of a round a prefix of them.
        if len(ready) > 1:
            turn = taken % len(ready)
            if turn:
                ready.rotate(-turn)  # where fq_recv's rotations would have left it
        pipes = len(inboxes)
        if taken < pipes:
            inboxes = inboxes[:taken]  # the ones after got nothing: their edges are as they were
        most = -(-taken // pipes)  # the most the run took from any one inbox
        for inbox in inboxes:
            left = len(inbox.items)
            if left < inbox.capacity <= left + most:
                inbox.on_space()  # it may have been full during the run: see the docstring

    def fq_take_run(self, limit: int) -> Received | None:
        """The next message (as :meth:`fq_recv`), and ``run`` set to up to ``limit - 1`` more
        (``run_length`` says how many; 0: none)."""
        message = self.fq_recv()
        ready = self._ready
        pipes = len(ready)
        if pipes == 1:
            inbox = ready[0].inbox
            items = inbox.items
            left = len(items)
            count = left - 1  # the last one: fq_recv drops the pipe from ``_ready``
            over = left - inbox.capacity
            if 0 <= over < count:
                count = int(over)  # stop before the HWM edge: fq_recv wakes the reader there
            if count >= limit:
                count = limit - 1
            if count > 0:
                self._run_source = source = repeat(items, count)
                self._run_inboxes = [inbox]
                self.run = map(_popleft, source)  # C all the way
                self.run_length = count
                return message
        elif pipes and limit > pipes:
            # Whole rounds over every ready pipe, as many as each can give (the same cuts).
            rounds = (limit - 1) // pipes
            for pipe in ready:
                inbox = pipe.inbox
                left = len(inbox.items)
                count = left - 1
                over = left - inbox.capacity
                if 0 <= over < count:
                    count = int(over)
                if count < rounds:
                    rounds = count
                    if rounds <= 0:
                        break
            if rounds > 0:
                inboxes = [pipe.inbox for pipe in ready]
                queues = iter([inbox.items for inbox in inboxes] * rounds)
                self._run_source = queues
                self._run_inboxes = inboxes
                self.run = map(_popleft, queues)
                self.run_length = rounds * pipes
                return message
        if pipes > 1:
            # Not one whole round (more ready pipes than the limit, the many-peers case, or a
            # pipe that cannot give one more): a part of one, the ready pipes in their order
            # up to the first that cannot give one message more under the same cuts (its
            # last, or its HWM edge: ``left == capacity``), one message each.
            inboxes = []
            add = inboxes.append
            for pipe in islice(ready, limit - 1):
                inbox = pipe.inbox
                left = len(inbox.items)
                if left < 2 or left == inbox.capacity:
                    break
                add(inbox)
            count = len(inboxes)
            if count > 1:  # (one alone saves nothing over the next fq_recv)
                queues = iter([inbox.items for inbox in inboxes])
                self._run_source = queues
                self._run_inboxes = inboxes
                self.run = map(_popleft, queues)
                self.run_length = count
                return message
        self.run_length = 0
        return message

    def fq_recv_from(self) -> tuple[Pipe, Message] | None:
        ready = self._ready
        if not ready:
            return None
        # The pipe is read before fq_recv's pop may take it off ``ready``. fq_recv gives a
        # message (``ready`` is not empty), and a list: the types that ask which pipe it
        # came from never queue bare one-part messages (``bare_single_part`` is False).
        return ready[0], self.fq_recv()  # type: ignore[return-value]

    def fq_recv(self) -> Received | None:
        if self.run is not NO_RUN:  # (never for the types without runs)
            self.fq_end_run()  # it pops the head itself
        ready = self._ready
        if not ready:
            return None
        # MessageQueue.get() inlined: this is the hottest line of every receive. The HWM
        # edge (full -> not full) is tested before the pop, on the length as it is: after
        # it, ``len(items) + 1`` cost an int addition, and past 256 queued messages (a
        # 256 KiB read holds ~3,000) a new int object, on every receive.
        inbox = ready[0].inbox
        items = inbox.items
        if len(items) == inbox.capacity:
            message = items.popleft()
            inbox.on_space()  # the reader waits for this room
        else:
            message = items.popleft()
        if not items:
            ready.popleft()
        elif len(ready) > 1:
            ready.rotate(-1)
        return message


class SendOnly:
    """For types whose peers never send data (PUSH, SCATTER): anything that arrives is dropped."""

    def incoming(self, pipe: Pipe, messages: list[Message]) -> None:
        """Dropped: the peer type has nothing to send."""

    def incoming_one(self, pipe: Pipe, message: Message) -> None:
        """Dropped, see :meth:`incoming`."""


class LoadBalancer:
    """Send round-robin to pipes that have room (libzmq ``lb_t``)."""

    socket: RoutingHost

    def __init__(self) -> None:
        self._out: list[Pipe] = []
        self._next = 0
        #: The only pipe, when there is exactly one and no extension gates sends (the usual
        #: PUSH or DEALER with one peer), else None: :meth:`lb_send`'s fast path, one read
        #: where it took the pipe list, its length, the extension and its ``gates_sends``
        #: per message. Kept by :meth:`lb_attach` and :meth:`lb_detach`, the only changes to
        #: ``_out``; the extension cannot change under it (``install_extension`` refuses once
        #: an endpoint exists, every pipe belongs to one, unbind and disconnect end theirs at
        #: once, and an extension's ``gates_sends`` is fixed when installed).
        #: Only the pipe is kept: its outbox, HWM and ``send_is_put`` are read per message,
        #: as before (an inproc link replaces the outbox, ``set`` changes the HWM).
        self._lone: Pipe | None = None

    def attach(self, pipe: Pipe) -> str | None:
        """Strategy hook: a plain load-balancing type routes to every attached pipe."""
        self.lb_attach(pipe)
        return None

    def detach(self, pipe: Pipe) -> None:
        self.lb_detach(pipe)

    def lb_attach(self, pipe: Pipe) -> None:
        self._out.append(pipe)
        self._lone = self._lone_pipe()

    def lb_detach(self, pipe: Pipe) -> None:
        try:
            index = self._out.index(pipe)
        except ValueError:
            return
        del self._out[index]
        if self._next > index:
            self._next -= 1
        if self._next >= len(self._out):
            self._next = 0
        self._lone = self._lone_pipe()

    def _lone_pipe(self) -> Pipe | None:
        """What ``_lone`` is for the pipes attached now (see ``__init__``)."""
        ext = self.socket.extension
        if len(self._out) == 1 and (ext is None or not ext.gates_sends):
            return self._out[0]
        return None

    def lb_send(self, parts: Message) -> bool:
        pipe = self._lone
        if pipe is not None:  # one pipe, no gating extension (``_lone``): no rotation
            outbox = pipe.outbox
            items = outbox.items
            if len(items) >= outbox.capacity:
                return False
            if pipe.send_is_put:  # MessageQueue.put inlined (see Pipe.send_is_put)
                # The empty -> non-empty edge read before the append, as the deque's truth
                # (no len call and compare after it); ``on_data`` still runs after the append.
                if items:
                    items.append(parts)
                else:
                    items.append(parts)
                    outbox.on_data()
            else:
                pipe.send(parts)
            return True
        pipes = self._out
        n = len(pipes)
        ext = self.socket.extension
        start = self._next
        for i in range(n):
            index = (start + i) % n
            pipe = pipes[index]
            outbox = pipe.outbox
            if len(outbox.items) >= outbox.capacity or (ext is not None and not ext.can_send(pipe)):
                continue
            self._next = (index + 1) % n
            pipe.send(parts)
            return True
        return False
