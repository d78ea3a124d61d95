"""The libzmq side of a row: pyzmq sockets and monitors driven from worker threads.

pyzmq is blocking, so every libzmq call runs in a worker thread and is bounded by a timeout; the
event loop is never blocked. Bound libzmq sockets attach a new peer only when the application
touches the socket, so these helpers keep polling the libzmq socket while they wait, and touch it
before every send.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from types import ModuleType, TracebackType
from typing import Any

import anyio

from .common import DEFAULT_TIMEOUT, CaseFailed, Message, import_zmq


@dataclass(frozen=True)
class LibzmqEvent:
    """One event from a libzmq monitor socket."""

    name: str  #: e.g. "HANDSHAKE_SUCCEEDED", "DISCONNECTED"
    event: int
    value: int
    endpoint: str


class Libzmq:
    """A pyzmq context for one case or test; every socket is closed with linger 0 on exit."""

    def __init__(self, timeout: float = DEFAULT_TIMEOUT / 2) -> None:
        self.zmq = import_zmq()
        self.context: Any = self.zmq.Context()
        self.timeout = timeout
        self._sockets: list[LibzmqSocket] = []

    @property
    def version(self) -> str:
        return f"libzmq {self.zmq.zmq_version()} (pyzmq {self.zmq.__version__})"

    def socket(self, socket_type: str | int, **options: Any) -> LibzmqSocket:
        """A libzmq socket with linger 0. ``options`` are ``zmq`` constants in lower case; a
        list or tuple value sets the option once per item, in order
        (``subscribe=[b"a", b"b"]``)."""
        zmq = self.zmq
        kind = getattr(zmq, socket_type.upper()) if isinstance(socket_type, str) else socket_type
        raw = self.context.socket(kind)
        raw.setsockopt(zmq.LINGER, 0)
        for name, value in options.items():
            for item in value if isinstance(value, (list, tuple)) else [value]:
                raw.setsockopt(getattr(zmq, name.upper()), item)
        sock = LibzmqSocket(raw, zmq, self.timeout)
        self._sockets.append(sock)
        return sock

    def close(self) -> None:
        for sock in self._sockets:
            sock.close()
        self._sockets.clear()
        self.context.destroy(linger=0)

    def __enter__(self) -> Libzmq:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


class _ThreadDriven:
    """Runs blocking pyzmq work in a worker thread, one operation at a time per socket."""

    _busy = False

    @property
    def busy(self) -> bool:
        """True while an operation runs in a worker thread."""
        return self._busy

    async def _run(self, func: Callable[..., Any], *args: Any) -> Any:
        if self._busy:
            raise RuntimeError("a pyzmq socket must not be used by two operations at once")
        self._busy = True
        try:
            # Not abandoned on cancel: every operation ends by its own deadline, so the socket
            # is never used by two threads at once.
            return await anyio.to_thread.run_sync(func, *args)
        finally:
            self._busy = False


_SLICE = 0.05  # seconds per poll inside a worker thread


class LibzmqSocket(_ThreadDriven):
    """A pyzmq socket for async code. Every blocking call runs in a worker thread and ends by
    its timeout (``TimeoutError``), polling the socket meanwhile (which is what lets a bound
    libzmq socket attach new peers)."""

    def __init__(self, raw: Any, zmq: ModuleType, timeout: float) -> None:
        self.raw = raw
        self.zmq = zmq
        self.timeout = timeout
        self.type_name: str = zmq.SocketType(raw.type).name
        #: Properties libzmq attached to the first message of the last ``recv_many``:
        #: what our READY told it (``Socket-Type``, ``Identity`` if sent) and ``Peer-Address``.
        self.peer_properties: dict[str, str] = {}
        self._monitor: LibzmqMonitor | None = None
        self._closed = False

    def __repr__(self) -> str:
        return f"<LibzmqSocket {self.type_name}>"

    @property
    def closed(self) -> bool:
        return self._closed

    # endpoints (non-blocking in libzmq: plain calls)

    def bind(self, endpoint: str) -> str:
        """Bind; returns the resolved endpoint (the real port for ``tcp://host:*``)."""
        self.raw.bind(endpoint)
        last = self.raw.getsockopt(self.zmq.LAST_ENDPOINT)
        return last.decode() if isinstance(last, bytes) else str(last)

    def connect(self, endpoint: str) -> None:
        self.raw.connect(endpoint)

    def unbind(self, endpoint: str) -> None:
        self.raw.unbind(endpoint)

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        if self._monitor is not None:
            self._monitor.close()
        self.raw.close(linger=0)

    def monitor(self) -> LibzmqMonitor:
        """The socket's monitor (created on first call: create it before bind/connect)."""
        if self._monitor is None:
            self._monitor = LibzmqMonitor(self)
        return self._monitor

    def touch(self) -> None:
        """Let libzmq process pending commands (attach pipes of new peers). Thread-side only."""
        self.raw.getsockopt(self.zmq.EVENTS)

    async def set_option(self, name: str, value: Any) -> None:
        """``setsockopt`` in a worker thread (``set_option("subscribe", b"news")``), after
        processing pending commands: a peer whose handshake is done is attached first, so a
        subscription set now reaches it after the ones set before."""
        option = getattr(self.zmq, name.upper())
        await self._run(self._set_option, option, value)

    def _set_option(self, option: int, value: Any) -> None:
        self.touch()
        self.raw.setsockopt(option, value)

    # messages

    async def send_many(self, messages: Sequence[Message], timeout: float | None = None) -> None:
        """Send every message in order; TimeoutError if they are not all queued in time."""
        await self._run(self._send_many, messages, timeout or self.timeout)

    async def send_multipart(self, parts: Message, timeout: float | None = None) -> None:
        await self.send_many([parts], timeout)

    async def recv_many(self, count: int, timeout: float | None = None) -> list[Message]:
        """Receive exactly ``count`` messages; TimeoutError if they do not all arrive in time."""
        result: list[Message] = await self._run(self._recv_many, count, timeout or self.timeout)
        return result

    async def recv_multipart(self, timeout: float | None = None) -> Message:
        return (await self.recv_many(1, timeout))[0]

    async def recv_within(self, seconds: float) -> list[Message]:
        """Everything that arrives within ``seconds`` (used to check that nothing does)."""
        result: list[Message] = await self._run(self._recv_within, seconds)
        return result

    # thread side

    def _send_many(self, messages: Sequence[Message], timeout: float) -> None:
        zmq = self.zmq
        raw = self.raw
        deadline = time.monotonic() + timeout
        # libzmq's send processes pending commands only now and then (throttled): attach the
        # pipes of peers whose handshake is done first, or a PUB/XSUB would send to nobody.
        self.touch()
        for index, message in enumerate(messages):
            while True:
                try:
                    raw.send_multipart(message, zmq.NOBLOCK)
                    break
                except zmq.Again:
                    if time.monotonic() >= deadline:
                        raise TimeoutError(
                            f"libzmq {self.type_name} queued only {index}/{len(messages)} "
                            f"messages in {timeout:g}s (no peer, or it is not reading)"
                        ) from None
                    raw.poll(_SLICE * 1000, zmq.POLLOUT)

    def _recv_many(self, count: int, timeout: float) -> list[Message]:
        zmq = self.zmq
        raw = self.raw
        deadline = time.monotonic() + timeout
        received: list[Message] = []
        while len(received) < count:
            try:
                if not received:
                    received.append(self._recv_first())
                else:
                    received.append(raw.recv_multipart(zmq.NOBLOCK))
                continue
            except zmq.Again:
                pass
            if time.monotonic() >= deadline:
                raise TimeoutError(
                    f"libzmq {self.type_name} received {len(received)}/{count} messages "
                    f"in {timeout:g}s"
                )
            raw.poll(_SLICE * 1000, zmq.POLLIN)
        return received

    def _recv_first(self) -> Message:
        """Receive one message zero-copy, recording the connection properties libzmq holds."""
        zmq = self.zmq
        frame = self.raw.recv(zmq.NOBLOCK, copy=False)
        props: dict[str, str] = {}
        for name in ("Socket-Type", "Identity", "Peer-Address"):
            # libzmq raises EINVAL for a property the peer did not send
            with contextlib.suppress(zmq.ZMQError):
                props[name] = frame.get(name)
        self.peer_properties = props
        parts = [frame.bytes]
        while frame.more:
            frame = self.raw.recv(copy=False)
            parts.append(frame.bytes)
        return parts

    def _recv_within(self, seconds: float) -> list[Message]:
        zmq = self.zmq
        deadline = time.monotonic() + seconds
        received: list[Message] = []
        while (remaining := deadline - time.monotonic()) > 0:
            if self.raw.poll(min(remaining, _SLICE) * 1000, zmq.POLLIN):
                received.append(self.raw.recv_multipart(zmq.NOBLOCK))
        return received


class LibzmqMonitor(_ThreadDriven):
    """Events from ``zmq_socket_monitor`` of one libzmq socket."""

    def __init__(self, owner: LibzmqSocket) -> None:
        self.owner = owner
        self.zmq = owner.zmq
        self.raw: Any = owner.raw.get_monitor_socket()
        self.seen: list[LibzmqEvent] = []  #: every event received so far

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.owner.raw.disable_monitor()
        self.raw.close(linger=0)

    async def wait_for(
        self,
        names: str | Iterable[str],
        *,
        fail_on: Iterable[str] = (),
        timeout: float | None = None,
        touch: bool = True,
    ) -> LibzmqEvent:
        """Wait for an event named in ``names`` (e.g. ``"HANDSHAKE_SUCCEEDED"``).

        Raises CaseFailed for an event in ``fail_on`` and TimeoutError after ``timeout``.
        ``touch`` polls the monitored socket meanwhile (so a bound socket attaches peers);
        use it only while no other operation uses that socket.
        """
        wanted = {names} if isinstance(names, str) else set(names)
        failing = set(fail_on)
        event: LibzmqEvent = await self._run(
            self._wait_for, wanted, failing, timeout or self.owner.timeout, touch
        )
        return event

    async def events_within(self, seconds: float) -> list[LibzmqEvent]:
        """Every event that arrives within ``seconds``."""
        events: list[LibzmqEvent] = await self._run(self._events_within, seconds)
        return events

    def _next(self, wait: float) -> LibzmqEvent | None:
        from zmq.utils.monitor import recv_monitor_message

        if not self.raw.poll(wait * 1000):
            return None
        raw = recv_monitor_message(self.raw)
        number = int(raw["event"])
        try:
            name = str(self.zmq.Event(number).name)
        except ValueError:
            name = f"EVENT_{number:#x}"
        endpoint = raw.get("endpoint", b"")
        event = LibzmqEvent(
            name,
            number,
            int(raw.get("value", 0)),
            endpoint.decode(errors="replace") if isinstance(endpoint, bytes) else str(endpoint),
        )
        self.seen.append(event)
        return event

    def _wait_for(
        self, wanted: set[str], failing: set[str], timeout: float, touch: bool
    ) -> LibzmqEvent:
        deadline = time.monotonic() + timeout
        while (remaining := deadline - time.monotonic()) > 0:
            owner = self.owner
            if touch and not owner.closed and not owner.busy:
                owner.touch()
            event = self._next(min(remaining, _SLICE))
            if event is None:
                continue
            if event.name in wanted:
                return event
            if event.name in failing:
                raise CaseFailed(
                    f"libzmq {self.owner.type_name} monitor: {event.name} (value {event.value})"
                )
        seen = ", ".join(e.name for e in self.seen[-6:]) or "none"
        raise TimeoutError(
            f"libzmq {self.owner.type_name} monitor: no {'/'.join(sorted(wanted))} "
            f"within {timeout:g}s (last events: {seen})"
        )

    def _events_within(self, seconds: float) -> list[LibzmqEvent]:
        deadline = time.monotonic() + seconds
        events: list[LibzmqEvent] = []
        while (remaining := deadline - time.monotonic()) > 0:
            event = self._next(min(remaining, _SLICE))
            if event is not None:
                events.append(event)
        return events
