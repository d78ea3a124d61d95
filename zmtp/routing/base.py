"""The routing-strategy interface and the shared mixins (fair-queue, load-balance).

A strategy is the socket type: it decides which pipe an outgoing message goes to and what an
incoming message means. It sees :class:`~zmtp.engine.pipe.Pipe` objects and lists of parts,
never bytes on the wire, and never awaits: ``try_send`` / ``try_recv`` either succeed now or
report "would block", and the socket does the waiting (timeouts, cancellation).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, ClassVar, Protocol

from ..engine.pipe import Pipe
from ..engine.queue import Message, Received
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


class FairQueue:
    """Receive round-robin from every pipe that has messages (libzmq ``fq_t``).

    Invariant: a pipe is in ``_ready`` exactly when its inbox is non-empty, maintained by the
    inbox's empty -> non-empty edge callback (``readable``) and by ``fq_recv`` dropping pipes it
    drains. A pipe whose connection ended stays until its last message is read.
    """

    def __init__(self) -> None:
        self._ready: deque[Pipe] = deque()

    def readable(self, pipe: Pipe) -> None:
        self._ready.append(pipe)

    def fq_recv_from(self) -> tuple[Pipe, Message] | None:
        ready = self._ready
        if not ready:
            return None
        # The pipe is read before fq_recv's pop may take it off ``ready``. fq_recv gives a
        # message (``ready`` is not empty), and a list: the types that ask which pipe it
        # came from never queue bare one-part messages (``bare_single_part`` is False).
        return ready[0], self.fq_recv()  # type: ignore[return-value]

    def fq_recv(self) -> Received | None:
        ready = self._ready
        if not ready:
            return None
        inbox = ready[0].inbox
        # MessageQueue.get() inlined: this is the hottest line of every receive. The HWM
        # edge (full -> not full) is tested before the pop, on the length as it is: after
        # it, ``len(items) + 1`` cost an int addition, and past 256 queued messages (a
        # 256 KiB read holds ~3,000) a new int object, on every receive.
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
