"""What a send at level >= 1 resolves to: delivered, or a dead letter
(docs/qos-protocol.md §5.4)."""

from __future__ import annotations

from collections.abc import Callable, Generator
from dataclasses import dataclass
from typing import Any

import anyio

PEER_TIMEOUT = "peer_timeout"
TERMINAL_NACK = "terminal_nack"
RETRY_EXHAUSTED = "retry_exhausted"
SOCKET_CLOSED = "socket_closed"
#: Level 1 only: still un-ACKed when the socket closed (level 1 has no dead letters).
DROPPED_AT_CLOSE = "dropped_at_close"


@dataclass(frozen=True)
class NackError(Exception):
    """The receiver's NACK: code and text. Carried by a dead letter, and raised by a QoS 3
    REQ's ``recv`` when the REP rejected the request (docs/qos-protocol.md §5.2)."""

    code: int
    text: str

    def __str__(self) -> str:
        return repr(self)  # NackError(code=2, text='...'), raised or printed


@dataclass(frozen=True)
class Delivered:
    """The peer acknowledged the message (ACK at levels 1-2, COMP at level 3)."""

    peer: str  #: the peer's anchor, or (no anchor) its transport address, printable


@dataclass(frozen=True)
class DeadLetter:
    """A message the QoS layer gave up on, and why."""

    parts: list[bytes]
    reason: (
        str  #: peer_timeout, terminal_nack, retry_exhausted, socket_closed (or dropped_at_close)
    )
    peer: str  #: printable anchor of the peer it was pinned to ("" if none: no peer took it)
    error: NackError | None = None


Outcome = Delivered | DeadLetter


class DeadLetterError(Exception):
    """Raised by a QoS 2 REQ's ``recv`` when its request was dead-lettered (its REP did not
    come back within ``dead_letter_timeout``); the REQ is ready to send again."""

    def __init__(self, letter: DeadLetter) -> None:
        super().__init__(f"request dead-lettered ({letter.reason}, peer {letter.peer or '?'})")
        self.letter = letter


class Receipt:
    """The fate of one sent message; ``await receipt`` gives its :data:`Outcome`."""

    #: ``_event`` (the await's wake-up) and ``_observed`` are left unset until first needed
    #: (read with a default): a receipt is made per message, and most are never awaited.
    __slots__ = ("_event", "_observed", "outcome", "watched")

    _event: anyio.Event
    _observed: bool

    def __init__(self) -> None:
        #: The outcome, or None while still pending (set once, by :meth:`resolve`).
        self.outcome: Outcome | None = None
        #: The callbacks to run when it settles; None while nobody awaits it or asked for a
        #: callback. The QoS runtime settles a receipt with ``watched is None`` by setting
        #: :attr:`outcome` alone (no call per message for a receipt nobody follows).
        self.watched: list[Callable[[Outcome], None]] | None = None

    @property
    def observed(self) -> bool:
        """Someone awaited it, or took over reporting it (dead letters then are not logged)."""
        return getattr(self, "_observed", False)

    @observed.setter
    def observed(self, value: bool) -> None:
        self._observed = value

    @property
    def done(self) -> bool:
        return self.outcome is not None

    def resolve(self, outcome: Outcome) -> bool:
        """Settle the receipt (first call wins); whether this call settled it."""
        if self.outcome is not None:
            return False
        self.outcome = outcome
        callbacks = self.watched
        if callbacks is not None:
            self.watched = None
            for callback in callbacks:
                callback(outcome)
        return True

    def add_done_callback(self, callback: Callable[[Outcome], None]) -> None:
        """Call ``callback(outcome)`` when the receipt settles (at once if it has).

        It runs synchronously inside the QoS layer (e.g. while a COMP is being handled), so it
        must not block or raise: hand real work to a task. This is how a wrapper such as
        :class:`zmtp_qos.Producer` follows thousands of receipts without a task per message.
        """
        if self.outcome is not None:
            callback(self.outcome)
            return
        if self.watched is None:
            self.watched = []
        self.watched.append(callback)

    async def wait(self) -> Outcome:
        self._observed = True
        while self.outcome is None:
            event: anyio.Event | None = getattr(self, "_event", None)
            if event is None:
                event = self._event = anyio.Event()
                self.add_done_callback(self._wake)
            await event.wait()
        return self.outcome

    def _wake(self, outcome: Outcome) -> None:
        event: anyio.Event | None = getattr(self, "_event", None)
        if event is not None:
            event.set()

    def __await__(self) -> Generator[Any, None, Outcome]:
        return self.wait().__await__()

    def __repr__(self) -> str:
        # What a user printing a receipt wants to see: pending, or what it resolved to (the
        # class a sender hands out is a subclass, the tracker's entry: name the concept).
        return f"<Receipt {'pending' if self.outcome is None else repr(self.outcome)}>"
