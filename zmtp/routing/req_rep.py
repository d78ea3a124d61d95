"""REQ and REP: synchronous request-reply with envelopes (RFC 28, libzmq ``req.cpp``/``rep.cpp``).

On the wire a request is ``[envelope..., b"", body...]``: REQ adds the empty *delimiter* (and,
with ``req_correlate``, a 4-byte request id before it); every ROUTER on the way pushes the
id of the peer it came from in front; REP strips everything up to the delimiter, hands the body
to the application, and sends the stored envelope back in front of the reply, so each ROUTER on
the way back can pop its hop.
"""

from __future__ import annotations

import contextlib
import random
import struct
from typing import TYPE_CHECKING

from ..engine.pipe import Pipe, PipeClosed
from ..engine.queue import Message
from ..errors import InvalidState
from .base import FairQueue, RoutingStrategy
from .mixins import ProbeRouter, RoundRobin

if TYPE_CHECKING:
    from .base import RoutingHost

#: libzmq copies the uint32 request id with memcpy: host byte order.
_REQUEST_ID = struct.Struct("=I")


class Req(FairQueue, RoundRobin, ProbeRouter, RoutingStrategy):
    """Send a request to the next peer (round-robin), then accept exactly one reply from it.

    Strict alternation: ``send`` while a reply is pending, or ``recv`` with no request out,
    raises :class:`~zmtp.InvalidState`. ``req_relaxed`` allows a new request at any time (the
    pending one is abandoned); ``req_correlate`` tags each request with an id so a late reply
    to an abandoned request cannot be taken for the current one.

    Replies are checked here, not by dropping the connection: a reply from another peer than
    the one asked, without the delimiter, or with the wrong request id is discarded and the
    REQ keeps waiting. (libzmq kills the connection on a malformed reply, which is then never
    re-established; see docs/socket-types.md.)

    Recovery when the peer died with our request: a ``recv`` that fails with ``recv_timeout``
    resets the REQ so it can send again (libzmq stays stuck until the socket is closed), or
    use ``req_relaxed``.

    ``probe_router`` sends a bare empty message (no envelope) first on each connection, as
    libzmq's REQ inherits it from DEALER.
    """

    socket_type = "REQ"
    send_check = True

    def __init__(self, socket: RoutingHost) -> None:
        RoutingStrategy.__init__(self, socket)
        FairQueue.__init__(self)
        RoundRobin.__init__(self)
        opts = socket.options
        self._relaxed = opts.req_relaxed
        self._correlate = opts.req_correlate
        self._request_id = random.getrandbits(32)  # libzmq starts at generate_random() too
        self._id_frame = b""
        self._receiving = False  # a request is out and its reply is awaited
        self._reply_pipe: Pipe | None = None
        self._request: Message | None = None  # the pending request's wire parts
        self._failure: BaseException | None = None  # raised by the next recv (fail_request)

    def attach(self, pipe: Pipe) -> str | None:
        self.lb_attach(pipe)
        return None

    def detach(self, pipe: Pipe) -> None:
        # If it was the pipe our request went to, the reply will never come: the application
        # learns that through recv_timeout (or re-sends in relaxed mode), as with libzmq.
        self.lb_detach(pipe)

    # ------------------------------------------------------------------ sending

    def check_send(self, parts: Message) -> None:
        if self._receiving and not self._relaxed:
            raise InvalidState(
                "REQ: a request is already pending; recv() its reply first "
                "(or set req_relaxed=True, or use recv_timeout to give up on it)"
            )

    def try_send(self, parts: Message) -> bool:
        self.check_send(parts)  # again: another task may have sent while this one waited
        if self._correlate:
            request_id = (self._request_id + 1) & 0xFFFFFFFF
            id_frame = _REQUEST_ID.pack(request_id)
            wire = [id_frame, b"", *parts]
        else:
            wire = [b"", *parts]
        pipe = self.rr_send(wire)
        if pipe is None:
            return False
        self._request = wire
        if self._correlate:
            self._request_id, self._id_frame = request_id, id_frame
        # Replies that arrived for an earlier (abandoned) request must not answer this one.
        stale = self._ready
        if stale:  # (rare: the usual request finds nothing waiting)
            for ready in stale:
                ready.inbox.clear()
            stale.clear()
        self._failure = None
        self._receiving = True
        self._reply_pipe = pipe
        return True

    # ------------------------------------------------------------------ receiving

    def try_recv(self) -> Message | None:
        if not self._receiving:
            failure = self._failure
            if failure is not None:
                self._failure = None
                raise failure
            raise InvalidState("REQ: no request pending; send() a request before recv()")
        while True:
            item = self.fq_recv_from()
            if item is None:
                return None
            pipe, message = item
            if pipe is not self._reply_pipe:
                continue  # a (late) reply from a peer we did not ask
            if self._correlate:
                if len(message) < 3 or message[0] != self._id_frame or message[1]:
                    continue  # malformed, or the reply to an older request
                body = message[2:]
            else:
                if len(message) < 2 or message[0]:
                    continue  # no delimiter: not a reply to a REQ
                body = message[1:]
            self._receiving = False
            self._reply_pipe = self._request = None
            return body

    def recv_timed_out(self) -> None:
        """Give up on the pending request so the application can send again."""
        self._receiving = False
        self._reply_pipe = self._request = None

    # ------------------------------------------------- extension points (a QoS layer's REQ/REP)

    @property
    def pending_request(self) -> tuple[Pipe, Message] | None:
        """The request whose reply is awaited: the pipe it went to and its wire parts
        (request id and delimiter included), or None. For an extension (QoS, §5.2 of
        docs/qos-protocol.md) that must re-send it or match a NACK to it."""
        if not self._receiving or self._reply_pipe is None or self._request is None:
            return None
        return self._reply_pipe, self._request

    def resend(self, pipe: Pipe) -> None:
        """Write the pending request again, to ``pipe`` (another peer, or the same peer
        reconnected), ahead of anything queued, and await the reply from it from now on."""
        if not self._receiving or self._request is None:
            raise InvalidState("REQ: no request pending to re-send")
        self._reply_pipe = pipe
        pipe.send_first([self._request])

    def fail_request(self, error: BaseException) -> None:
        """Abandon the pending request: the REQ is ready to send again, and the ``recv``
        waiting for the reply (or the next one) raises ``error`` once."""
        self._receiving = False
        self._reply_pipe = self._request = None
        self._failure = error
        self.socket.wake_receivers()


class Rep(FairQueue, RoutingStrategy):
    """Receive a request (fair-queued), then send exactly one reply to whoever sent it.

    Everything up to and including the first empty frame that is followed by a body is the
    envelope; it is stored and echoed, so multi-hop ROUTER/DEALER chains route the reply back.
    A request without a delimiter is discarded silently, like libzmq. A reply to a peer that
    has gone, or whose queue is full, is dropped (REP never blocks on a reply).
    """

    socket_type = "REP"
    send_check = True

    def __init__(self, socket: RoutingHost) -> None:
        RoutingStrategy.__init__(self, socket)
        FairQueue.__init__(self)
        self._envelope: Message | None = None  # set while a reply is owed
        self._reply_pipe: Pipe | None = None

    def check_send(self, parts: Message) -> None:
        if self._envelope is None:
            raise InvalidState("REP: no request to answer; recv() a request before send()")

    def try_send(self, parts: Message) -> bool:
        envelope, pipe = self._envelope, self._reply_pipe
        if envelope is None or pipe is None:
            raise InvalidState("REP: no request to answer; recv() a request before send()")
        ext = self.socket.extension
        if pipe.attached and ext is not None and not ext.can_send(pipe):
            return False  # an extension holds the slot: wait for it
        self._envelope = self._reply_pipe = None
        if pipe.attached and not pipe.outbox.full:
            pipe.send(envelope + parts)
        return True

    # ------------------------------------------------- extension points (a QoS layer's REQ/REP)

    @property
    def current_request(self) -> tuple[Pipe, Message] | None:
        """The request being answered: the pipe it came from and its envelope (up to and
        including the delimiter), or None when no reply is owed."""
        if self._envelope is None or self._reply_pipe is None:
            return None
        return self._reply_pipe, self._envelope

    def answer_command(self, name: bytes, data: bytes) -> None:
        """Answer the current request with a command instead of a reply (QoS 3: NACK) and
        become ready for the next request. A peer that has gone is not an error."""
        pipe = self._reply_pipe
        if self._envelope is None or pipe is None:
            raise InvalidState("REP: no request to answer; recv() a request before send()")
        self._envelope = self._reply_pipe = None
        if pipe.attached:
            with contextlib.suppress(PipeClosed):
                pipe.send_command(name, data)

    def try_recv(self) -> Message | None:
        if self._envelope is not None:
            raise InvalidState("REP: send() the reply to the current request before recv()")
        while True:
            item = self.fq_recv_from()
            if item is None:
                return None
            pipe, message = item
            if len(message) == 2:
                # A direct REQ's request, ``[b"", body]`` (the usual one, on a round trip's
                # critical path): the delimiter test without the scan below.
                delimiter, body = message
                if delimiter:
                    continue  # no delimiter: discarded, as libzmq does
                self._envelope = [delimiter]
                self._reply_pipe = pipe
                return [body]
            # The delimiter is the first empty frame that has a body after it.
            for index in range(len(message) - 1):
                if not message[index]:
                    break
            else:
                continue  # no delimiter: discarded, as libzmq does
            self._envelope = message[: index + 1]
            self._reply_pipe = pipe
            return message[index + 1 :]
