"""QoS for REQ→REP (docs/qos-protocol.md §5.2): the reply is the acknowledgement.

No ACK, CLR or COMP frames travel; REQ keeps its strict alternation. What QoS adds is what
happens to the pending request when its connection drops, and (level 3) the NACK answer:

* level 1: the request is re-sent at once to the next connected REP (or to the first REP that
  connects), transparently to the ``recv`` waiting for the reply;
* levels 2-3: no fail-over: the request stays pinned to the REP's anchor and is re-sent when
  that anchor reconnects; after ``dead_letter_timeout`` without it the waiting ``recv`` raises
  :class:`~zmtp_qos.results.DeadLetterError` and REQ is ready again;
* level 3: a REP answers a failure with ``NACK`` (no data frames): REQ's ``recv`` raises
  :class:`~zmtp_qos.NackError` with its code and text, REQ is ready again, nothing is retried.

The runtime reuses :class:`~zmtp_qos.runtime.QoSRuntime` for the handshake (``X-QoS``,
``X-QoS-Hash``, anchors at levels >= 2) and reaches REQ/REP only through their public
extension points (``Req.pending_request`` / ``resend`` / ``fail_request``,
``Rep.current_request`` / ``answer_command``; docs/extensions.md).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from zmtp.engine.pipe import Pipe
from zmtp.engine.queue import Message
from zmtp.routing.req_rep import Rep, Req

from . import commands
from .anchor import describe
from .events import QoSDeadLettered, QoSFailedOver, QoSReplayed
from .results import DeadLetter, DeadLetterError, NackError, Receipt
from .runtime import PeerState, QoSRuntime
from .stats import QoSStats

REQREP_TYPES = frozenset({"REQ", "REP"})


class ReqRepRuntime(QoSRuntime):
    """The QoS extension of a REQ or REP socket (levels 1-3)."""

    #: The strategy of the socket it is installed on (set by :class:`zmtp_qos.Socket`).
    strategy: Req | Rep | None = None

    #: Level 1: the pending request, its connection lost, waiting for any REP to connect.
    _orphan: Message | None = None
    #: Levels 2-3: the pending request pinned to the anchor of the REP it went to.
    _pinned: tuple[Message, bytes] | None = None

    def _req(self) -> Req | None:
        strategy = self.strategy
        return strategy if isinstance(strategy, Req) else None

    def handshake_properties(self) -> Mapping[str, bytes]:
        props = dict(super().handshake_properties())
        if self.socket_type == "REQ":
            props.pop("Identity", None)  # REQ sends its own Identity (the anchor) already
        return props

    # ------------------------------------------------------------------ connections

    def pipe_connected(self, pipe: Pipe) -> None:
        self.live.append(pipe)
        req = self._req()
        if req is None:
            return
        pending = req.pending_request
        if pending is None:
            self._orphan = self._pinned = None
            return
        state: PeerState = pipe.extension_state
        if self._orphan is pending[1]:
            self._orphan = None
            req.resend(pipe)
        elif (
            self._pinned is not None
            and self._pinned[0] is pending[1]
            and self._pinned[1] == state.anchor
        ):
            self._pinned = None
            req.resend(pipe)
            self._event(QoSReplayed(pipe.endpoint, describe(state.anchor), 1))

    def pipe_disconnected(self, pipe: Pipe, reason: str) -> None:
        if pipe in self.live:
            self.live.remove(pipe)
        req = self._req()
        state: PeerState | None = pipe.extension_state
        if req is None or state is None:
            return
        pending = req.pending_request
        if pending is None or pending[0] is not pipe:
            return
        request = pending[1]
        pipe.outbox.clear()  # a request still queued there is re-sent by us, not on reconnect
        if self.level == 1:
            self._event(QoSFailedOver(pipe.endpoint, 1))
            targets = [p for p in self.live if p.connected and p is not pipe]
            if targets:
                req.resend(targets[0])
            else:
                self._orphan = request
            return
        assert state.anchor is not None
        anchor = state.anchor
        self._pinned = (request, anchor)
        if self.schedule is None:
            return

        def expire() -> None:
            current = req.pending_request
            if self._pinned is None or self._pinned[0] is not request:
                return  # re-sent to the returning anchor meanwhile
            if current is None or current[1] is not request:
                return
            self._pinned = None
            letter = DeadLetter(list(request), "peer_timeout", describe(anchor))
            self._dead_letter_request(req, pipe, letter)

        self.schedule(self.config.dead_letter_timeout, expire)

    # ------------------------------------------------------------------ no ACK traffic

    def can_send(self, pipe: Pipe) -> bool:
        return True

    def before_send(self, pipe: Pipe, message: Message) -> None:
        return None

    def on_receive(self, pipe: Pipe, message: Message) -> bool:
        return True

    def on_command(self, pipe: Pipe, name: bytes, data: bytes) -> None:
        req = self._req()
        state: PeerState | None = pipe.extension_state
        if req is None or state is None or self.level != 3 or name != commands.NACK:
            return
        nack = commands.parse_nack(data)
        pending = req.pending_request
        if nack is None or pending is None or pending[0] is not pipe:
            return
        if nack.ref.digest != state.digester(pending[1]):
            return  # not for the pending request: ignored
        req.fail_request(NackError(nack.code, nack.text))

    #: The request found waiting with no REP to go to, and since when (see :meth:`sweep`).
    _unplaced: tuple[Message, float] | None = None

    def sweep(self) -> int:
        """REQ: a request that no REP has had for ``dead_letter_timeout`` (queued on a
        ``connect()`` pipe that never connected, or, level 1, its REP gone with no other
        connected) is dead-lettered ``peer_timeout``: the waiting ``recv`` raises
        :class:`~zmtp_qos.DeadLetterError` and REQ is ready again. (A level 2-3 request
        pinned to a REP that went away has its own timer, see :meth:`pipe_disconnected`.)
        Counted from the first sweep that finds it so, as for PUSH."""
        req = self._req()
        pending = req.pending_request if req is not None else None
        if req is None or pending is None:
            self._unplaced = None
            return 0
        pipe, request = pending
        pinned = self._pinned is not None and self._pinned[0] is request
        unplaced = self._orphan is request or (not pipe.connected and not pinned)
        if not unplaced:
            self._unplaced = None
            return 0
        now = self.clock()
        if self._unplaced is None or self._unplaced[0] is not request:
            self._unplaced = (request, now)
            return 0
        if now - self._unplaced[1] < self.config.dead_letter_timeout:
            return 0
        self._unplaced = None
        self._orphan = None
        if not pipe.connected:
            pipe.outbox.clear()  # never written: it must not go out when a REP comes
        self._dead_letter_request(req, pipe, DeadLetter(list(request), "peer_timeout", ""))
        return 1

    def _dead_letter_request(self, req: Req, pipe: Pipe, letter: DeadLetter) -> None:
        """Give up on the pending request: counted, a monitor event, the socket's dead-letter
        stream (never the unconsumed-dead-letter warning: the waiting ``recv`` raises it),
        and REQ's ``recv`` raises :class:`~zmtp_qos.DeadLetterError`, REQ ready again."""
        self.dead_lettered += 1
        self._event(QoSDeadLettered(pipe.endpoint, letter.peer, letter.reason))
        receipt = Receipt()
        receipt.observed = True  # recv raises it: no warning
        receipt.resolve(letter)
        self.on_dead_letter(letter, receipt)
        req.fail_request(DeadLetterError(letter))

    def stats(self) -> QoSStats:
        """REQ: the one request awaiting its reply is in flight, pending for the REP it went
        to (or, levels 2-3, the anchor it is pinned to while that REP is away)."""
        req = self._req()
        pending = req.pending_request if req is not None else None
        if pending is None:
            return QoSStats(self.level, dead_lettered=self.dead_lettered)
        per_peer: dict[str, int] = {}
        if self._pinned is not None and self._pinned[0] is pending[1]:
            per_peer[describe(self._pinned[1])] = 1
        elif self._orphan is not pending[1]:
            pipe = pending[0]
            state: PeerState | None = pipe.extension_state
            if state is not None:
                per_peer[self._peer_name(pipe, state)] = 1
        return QoSStats(self.level, 1, per_peer, dead_lettered=self.dead_lettered)

    async def linger(self) -> None:
        return None

    def close_out(self) -> None:
        return None

    # ------------------------------------------------------------------ REP, level 3

    def reply_decider(self, rep: Rep, body: Message) -> Callable[[int | None, bytes], None]:
        """The verdict function for the request ``rep`` has just received (body ``body``):
        a code answers NACK for it; None (the reply was sent) does nothing more."""
        current = rep.current_request
        assert current is not None
        pipe, envelope = current
        state: PeerState | None = pipe.extension_state

        def decide(code: int | None, text: bytes) -> None:
            if code is None or state is None:
                return  # the reply itself is the success
            digest = state.digester(envelope + body)
            rep.answer_command(
                commands.NACK, commands.nack_data(state.algorithm, digest, code, text)
            )

        return decide


__all__ = ["REQREP_TYPES", "ReqRepRuntime"]
