"""The socket-wide stream of dead letters (``sock.dead_letters()``).

A stream receives every dead letter from the moment it is *created*, not from its first
``__anext__`` (an async generator would start listening only then, and a letter in between
would be missed, or logged as unconsumed). Every open stream sees every letter; tasks
reading one stream share its letters (each letter goes to one of them). A stream is
closed by ``aclose()``, by leaving ``async with``, when the socket has closed (after the
letters of the close), or by being dropped (the socket holds its streams weakly); with no
stream open, a dead letter whose receipt nobody awaited is logged.
"""

from __future__ import annotations

import weakref
from collections import deque
from types import TracebackType

import anyio

from .results import DeadLetter


class DeadLetterStream:
    """``async for letter in sock.dead_letters(): ...`` (or ``async with`` it)."""

    def __init__(self, streams: weakref.WeakSet[DeadLetterStream]) -> None:
        self._letters: deque[DeadLetter] = deque()
        self._wakeup: anyio.Event | None = None
        self._streams = streams
        streams.add(self)

    def put(self, letter: DeadLetter) -> None:
        """The socket: a new dead letter."""
        self._letters.append(letter)
        if self._wakeup is not None:
            self._wakeup.set()

    def __aiter__(self) -> DeadLetterStream:
        return self

    async def __anext__(self) -> DeadLetter:
        while not self._letters:
            if self not in self._streams:
                raise StopAsyncIteration
            if self._wakeup is None or self._wakeup.is_set():
                self._wakeup = anyio.Event()  # shared by every task reading this stream
            await self._wakeup.wait()
        return self._letters.popleft()

    def end(self) -> None:
        """Stop receiving letters: those already received can still be read, then the
        iteration ends (the socket calls this when it has closed)."""
        self._streams.discard(self)
        if self._wakeup is not None:
            self._wakeup.set()

    async def aclose(self) -> None:
        """:meth:`end`, as an async iterator's ``aclose``."""
        self.end()

    async def __aenter__(self) -> DeadLetterStream:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()


class DeadLetterStreams:
    """The open streams of one owner (a QoS socket, a producer): each letter goes to all."""

    def __init__(self) -> None:
        self._streams: weakref.WeakSet[DeadLetterStream] = weakref.WeakSet()

    def open(self) -> DeadLetterStream:
        """A new stream, listening from now on."""
        return DeadLetterStream(self._streams)

    def put(self, letter: DeadLetter) -> bool:
        """Give ``letter`` to every open stream; False if none is open (nobody looks: the
        owner logs it instead)."""
        streams = list(self._streams)
        for stream in streams:
            stream.put(letter)
        return bool(streams)

    def end_all(self) -> None:
        """The owner has closed: every open stream finishes once it is read."""
        for stream in list(self._streams):
            stream.end()
