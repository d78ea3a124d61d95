"""Live interop check against libzmq (the copy bundled with pyzmq): ``python -m zmtp interop``.

The check runs a matrix of *cases*. Each registered case function becomes one row per
transport (tcp, ipc) x binder (zmtp binds / libzmq binds), and each row runs once per anyio
backend (asyncio, trio). The table is grouped by case name: every row of a case, asyncio then
trio, before the next case. A row is PASS, FAIL (with a one-line reason) or SKIP (a socket type
it needs is not implemented yet). Every row runs under a timeout, so a hang is a FAIL row,
never a hung command; a process-level watchdog ends the run if a case cannot even be
cancelled. The exit status is 1 if any row failed, 2 if the check could not run (pyzmq or trio
missing).

pyzmq is blocking, so every libzmq call runs in a worker thread and is bounded by a timeout; the
event loop is never blocked. Waiting is always on a message or a monitor event, never a sleep.
Bound libzmq sockets attach a new peer only when the application touches the socket, so the
helpers keep polling the libzmq socket while they wait, and touch it before every send.

The built-in rows live in :mod:`zmtp.interop_rows`, one module per area (``sockets``:
PUSH/PULL/PAIR and request-reply, every standard pairing; ``pubsub``: PUB/SUB/XPUB/XSUB, every
standard pairing; ``security``: CURVE and PLAIN in both roles; ``options``: probe_router,
router_notify (ours only: DRAFT in libzmq), connect_routing_id, invert_matching, conflate).
They register into
:data:`REGISTRY` when this module is imported.

Adding rows
-----------
In the module of its area, write an ``async def`` that takes a :class:`CaseContext` and
returns a short detail string for the table (raise :class:`CaseFailed`, or let any exception
escape, to fail the row; its message becomes the reason), and register it with
:func:`register`. Name it after the pair, zmtp's type first, without spaces (``REQ->REP``; a
variant in brackets: ``REQ->ROUTER[correlate]``)::

    @register("REQ->REP", flow="both", requires=("REQ",))
    async def req_to_libzmq_rep(c: CaseContext) -> str:
        async with c.zmtp_socket("REQ") as ours:       # zmtp.Socket with test defaults
            theirs = c.libzmq_socket("REP")            # pyzmq socket driven from threads
            peer = await c.link(ours, theirs)          # bind/connect as the row says, wait for
            expect_peer(peer, "REP")                   #   both sides' handshake
            await ours.send(b"ping")
            [request] = await theirs.recv_many(1)
            await theirs.send_many([request])
            ...
            return "1 round trip"

* ``register`` options: ``flow`` (``"zmtp->libzmq"``, ``"libzmq->zmtp"`` or ``"both"``, shown
  in the table), ``transports=("tcp",)`` / ``binds=("zmtp",)`` to narrow the matrix,
  ``requires=("REQ",)`` (zmtp socket types that must exist, else SKIP), ``timeout=`` (seconds).
* Options: ``c.zmtp_socket(type, **zmtp_options)``; ``c.libzmq_socket(type, **sockopts)`` where
  each name is a ``zmq`` constant in lower case (``subscribe=b""``, ``curve_server=1``,
  ``rcvhwm=10``...; a list sets it once per item: ``subscribe=[b"a", b"b"]``). A CURVE or PLAIN
  row passes its mechanism options to both. ``await theirs.set_option("unsubscribe", b"a")``
  changes one later, from a worker thread.
* Helpers: :func:`transfer` (send a list of messages one way and compare, order included),
  :func:`sample_messages` (single, multipart, empty, 1 MiB, then N numbered messages),
  :func:`expect_messages` (receive and compare a few), :func:`expect_peer` (our
  :class:`~zmtp.PeerInfo` of libzmq), :func:`expect_libzmq_saw` (the properties libzmq read
  from our READY), :meth:`CaseContext.step` (names the current step: it is printed with ``-v``
  and quoted if the row times out).
* Subscriptions: :func:`probe_until_received` (numbered probes until one gets through: the way
  to wait for a subscription to reach a publisher), :func:`publish_until_cancelled` (the same
  for an unsubscribe), ``skip=PROBE`` / :func:`recv_skipping` to read past late probes.

The registry of the built-in rows is :data:`REGISTRY`; tests build their own :class:`Registry`
(or :meth:`Registry.unregister` what they added) to inject cases.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import itertools
import os
import re
import shutil
import sys
import tempfile
import threading
import time
from collections.abc import Awaitable, Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from types import ModuleType, TracebackType
from typing import IO, Any, Protocol

import anyio

from .monitor import HandshakeFailed, HandshakeSucceeded, MonitorEvent, PeerInfo
from .routing import STRATEGIES
from .socket import Socket

BACKENDS = ("asyncio", "trio")
TRANSPORTS = ("tcp", "ipc")
BINDERS = ("zmtp", "libzmq")
FLOWS = ("zmtp->libzmq", "libzmq->zmtp", "both")
#: Default per-row timeout (seconds); one libzmq or zmtp operation gets half of it.
DEFAULT_TIMEOUT = 10.0
#: Numbered messages sent after the fixed samples to check ordering.
DEFAULT_COUNT = 1000
#: Extra time a timed-out row gets to unwind before the watchdog ends the process.
WATCHDOG_GRACE = 15.0
ONE_MIB = 1 << 20
#: Topic of the numbered probes of :func:`probe_until_received`.
PROBE = b"probe"
_IPC_NAMES = itertools.count(1)

Message = list[bytes]


class InteropUnavailable(RuntimeError):
    """The check cannot run here (pyzmq or a backend missing)."""


class CaseFailed(AssertionError):
    """A check in a case failed; the message is the row's one-line reason."""


def import_zmq() -> ModuleType:
    """pyzmq, imported on first use so that ``zmtp`` itself never needs it."""
    try:
        import zmq
    except ImportError:
        raise InteropUnavailable(
            "pyzmq is required for the interop check: pip install 'zmtp[test]'"
        ) from None
    return zmq


def _one_line(text: str, limit: int = 160) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _leaf(exc: BaseException) -> BaseException:
    """The first meaningful exception inside (nested) exception groups."""
    while True:
        inner = getattr(exc, "exceptions", None)
        if not inner:
            return exc
        # Cancellation exceptions (asyncio's, trio's) are BaseExceptions: prefer a real error.
        exc = next((e for e in inner if isinstance(e, Exception)), inner[0])


def describe_exception(exc: BaseException) -> str:
    exc = _leaf(exc)
    if isinstance(exc, CaseFailed):
        return _one_line(str(exc))
    text = str(exc)
    return _one_line(f"{type(exc).__name__}: {text}" if text else type(exc).__name__)


# ---------------------------------------------------------------------- libzmq side


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
            if touch and not owner._closed and not owner._busy:
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


# ---------------------------------------------------------------------- zmtp side


class MessageEnd(Protocol):
    """Either side of a transfer: a :class:`LibzmqSocket` or :class:`ZmtpEnd`."""

    timeout: float  #: default seconds for one ``send_many`` / ``recv_many``

    def __repr__(self) -> str: ...

    async def send_many(
        self, messages: Sequence[Message], timeout: float | None = None
    ) -> None: ...

    async def recv_many(self, count: int, timeout: float | None = None) -> list[Message]: ...


class ZmtpEnd:
    """A :class:`zmtp.Socket` with the bulk ``send_many``/``recv_many`` of :class:`LibzmqSocket`."""

    def __init__(self, sock: Socket, timeout: float = DEFAULT_TIMEOUT / 2) -> None:
        self.sock = sock
        self.timeout = timeout

    def __repr__(self) -> str:
        return f"zmtp {self.sock.socket_type}"

    async def send_many(self, messages: Sequence[Message], timeout: float | None = None) -> None:
        seconds = timeout or self.timeout
        sent = 0
        with anyio.move_on_after(seconds) as scope:
            for message in messages:
                await self.sock.send_multipart(message)
                sent += 1
        if scope.cancelled_caught:
            raise TimeoutError(
                f"zmtp {self.sock.socket_type} queued only {sent}/{len(messages)} messages "
                f"in {seconds:g}s"
            )

    async def recv_many(self, count: int, timeout: float | None = None) -> list[Message]:
        seconds = timeout or self.timeout
        received: list[Message] = []
        with anyio.move_on_after(seconds) as scope:
            while len(received) < count:
                received.append(await self.sock.recv_multipart())
        if scope.cancelled_caught:
            raise TimeoutError(
                f"zmtp {self.sock.socket_type} received {len(received)}/{count} messages "
                f"in {seconds:g}s"
            )
        return received


# ---------------------------------------------------------------------- checks


def big_payload(size: int = ONE_MIB) -> bytes:
    """A deterministic payload that is not all one byte value."""
    pattern = bytes(range(256))
    return (pattern * (size // 256 + 1))[:size]


def sample_messages(count: int = DEFAULT_COUNT) -> list[Message]:
    """Single, multipart, empty and 1 MiB messages, then ``count`` numbered ones."""
    fixed: list[Message] = [
        [b"hello"],
        [b"multi", b"part", b"message"],
        [b""],
        [b"", b"empty frames around", b""],
        [bytes(range(256))],
        [big_payload()],
        [b"after the big one"],
    ]
    return fixed + [[b"seq", i.to_bytes(4, "big")] for i in range(count)]


def _describe_message(message: Message | None) -> str:
    if message is None:
        return "nothing"
    sizes = ", ".join(f"{len(p)} B" if len(p) > 24 else repr(p) for p in message[:4])
    more = ", ..." if len(message) > 4 else ""
    return f"{len(message)} part(s) [{sizes}{more}]"


def compare_messages(sent: Sequence[Message], received: Sequence[Message]) -> None:
    """Raise CaseFailed describing the first difference (content, order, count)."""
    if list(sent) == list(received):
        return
    for index in range(max(len(sent), len(received))):
        a = sent[index] if index < len(sent) else None
        b = received[index] if index < len(received) else None
        if a != b:
            raise CaseFailed(
                f"message #{index} differs: sent {_describe_message(a)}, "
                f"received {_describe_message(b)}"
            )


async def transfer(
    sender: MessageEnd,
    receiver: MessageEnd,
    messages: Sequence[Message],
    timeout: float | None = None,
) -> int:
    """Send ``messages`` from ``sender`` while ``receiver`` reads them; compare everything.

    Returns the number of messages. Raises CaseFailed on any difference, TimeoutError if the
    messages do not all get through in time.
    """
    received: list[Message] = []

    async def receive() -> None:
        received.extend(await receiver.recv_many(len(messages), timeout))

    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(receive)
            await sender.send_many(messages, timeout)
    except Exception as exc:
        raise _leaf(exc) from None
    compare_messages(messages, received)
    return len(messages)


def _who(end: MessageEnd) -> str:
    """Who an end is, for messages: "libzmq ROUTER", "zmtp ROUTER"."""
    return f"libzmq {end.type_name}" if isinstance(end, LibzmqSocket) else repr(end)


async def expect_messages(
    receiver: MessageEnd,
    expected: Sequence[Message],
    *,
    skip: bytes | None = None,
    timeout: float | None = None,
) -> None:
    """Receive ``len(expected)`` messages and compare them, order included (CaseFailed naming
    the receiver and the first difference). ``skip``: ignore messages whose first frame is
    exactly that (late probes, see :func:`probe_until_received`)."""
    if skip is None:
        received = await receiver.recv_many(len(expected), timeout)
    else:
        received = await recv_skipping(receiver, len(expected), skip, timeout)
    try:
        compare_messages(expected, received)
    except CaseFailed as exc:
        raise CaseFailed(f"{_who(receiver)}: {exc}") from None


async def recv_briefly(receiver: MessageEnd, seconds: float) -> Message | None:
    """The next message if one arrives within ``seconds``, else None."""
    try:
        [message] = await receiver.recv_many(1, seconds)
    except TimeoutError:
        return None
    return message


async def recv_skipping(
    receiver: MessageEnd, count: int, skip: bytes = PROBE, timeout: float | None = None
) -> list[Message]:
    """Receive ``count`` messages, ignoring those whose first frame is exactly ``skip``."""
    received: list[Message] = []
    while len(received) < count:
        [message] = await receiver.recv_many(1, timeout)
        if message[0] != skip:
            received.append(message)
    return received


async def probe_until_received(
    sender: MessageEnd,
    receiver: MessageEnd,
    topic: bytes = PROBE,
    *,
    wait: float = 0.02,
    timeout: float | None = None,
) -> int:
    """Send numbered probes ``[topic, n]`` until ``receiver`` gets one; returns how many were
    sent.

    This is how a case waits for subscriptions to reach a publisher: on a message, never on a
    delay (a libzmq publisher applies subscriptions only when its thread touches the socket,
    which each probe does). Subscribe to ``topic`` *after* the topics the case checks, on the
    same connection: a probe getting through then proves the earlier ones were applied. Probes
    sent after the first one that arrived may still come: read past them with ``skip=topic``.
    """
    seconds = timeout or receiver.timeout
    deadline = time.monotonic() + seconds
    sent = 0
    while True:
        await sender.send_many([[topic, sent.to_bytes(4, "big")]])
        sent += 1
        message = await recv_briefly(receiver, wait)
        if message is not None:
            if message[0] != topic:
                raise CaseFailed(
                    f"{_who(receiver)} expected a probe, received {_describe_message(message)}"
                )
            return sent
        if time.monotonic() >= deadline:
            raise TimeoutError(f"{_who(receiver)} received none of {sent} probes in {seconds:g}s")


async def publish_until_cancelled(
    sender: MessageEnd,
    receiver: MessageEnd,
    cancelled: bytes,
    kept: bytes,
    *,
    skip: bytes = PROBE,
    timeout: float | None = None,
) -> int:
    """After the receiver unsubscribed ``cancelled`` (which the publisher applies in its own
    time), publish ``[cancelled, n]`` then ``[kept, n]`` until ``[kept, n]`` arrives without its
    twin; returns the rounds. For an XSUB receiver, which does not filter, this shows that the
    *publisher* honoured the cancel. Any other message fails the case."""
    seconds = timeout or receiver.timeout
    deadline = time.monotonic() + seconds
    for n in itertools.count():
        number = n.to_bytes(4, "big")
        await sender.send_many([[cancelled, number], [kept, number]])
        [first] = await recv_skipping(receiver, 1, skip, timeout)
        if first == [kept, number]:
            return n + 1
        [second] = await recv_skipping(receiver, 1, skip, timeout)
        if [first, second] != [[cancelled, number], [kept, number]]:
            raise CaseFailed(
                f"{_who(receiver)} received {_describe_message(first)} then "
                f"{_describe_message(second)} in round {n} of the unsubscribe check"
            )
        if time.monotonic() >= deadline:
            break
    raise TimeoutError(
        f"the publisher still sent {cancelled!r} after {n + 1} rounds in {seconds:g}s"
    )


def libzmq_zmtp_version(zmq: ModuleType | None = None) -> tuple[int, int]:
    """The ZMTP version libzmq announces: 3.1 from libzmq 4.3.3 on, 3.0 before."""
    info = tuple((zmq or import_zmq()).zmq_version_info())
    return (3, 1) if info >= (4, 3, 3) else (3, 0)


def expect_peer(peer: PeerInfo, socket_type: str, mechanism: str = "NULL") -> None:
    """Check what our handshake learned about a libzmq peer."""
    if peer.socket_type != socket_type:
        raise CaseFailed(f"our PeerInfo says Socket-Type {peer.socket_type!r}, not {socket_type}")
    if peer.properties.get("Socket-Type") != socket_type.encode():
        raise CaseFailed(f"peer properties lack Socket-Type {socket_type}: {peer.properties!r}")
    if peer.mechanism != mechanism:
        raise CaseFailed(f"our PeerInfo says mechanism {peer.mechanism}, not {mechanism}")
    expected = libzmq_zmtp_version()
    if peer.zmtp_version != expected:
        raise CaseFailed(f"libzmq announces ZMTP {expected}, PeerInfo says {peer.zmtp_version}")


def expect_libzmq_saw(theirs: LibzmqSocket, socket_type: str, identity: str | None = None) -> None:
    """Check the properties libzmq attached to a message from us (read by ``recv_many``)."""
    props = theirs.peer_properties
    if props.get("Socket-Type") != socket_type:
        raise CaseFailed(f"libzmq saw Socket-Type {props.get('Socket-Type')!r}, not {socket_type}")
    if props.get("Identity") != identity:
        raise CaseFailed(f"libzmq saw Identity {props.get('Identity')!r}, expected {identity!r}")


# ---------------------------------------------------------------------- cases and registry

CaseFunc = Callable[["CaseContext"], Awaitable[str | None]]


@dataclass(frozen=True)
class Case:
    """One row of the matrix (run once per backend)."""

    name: str  #: the socket pair, ours first: "PUSH->PULL" is a zmtp PUSH and a libzmq PULL
    transport: str
    binds: str  #: "zmtp" or "libzmq"
    flow: str  #: "zmtp->libzmq", "libzmq->zmtp" or "both"
    func: CaseFunc
    requires: tuple[str, ...] = ()
    timeout: float | None = None

    @property
    def label(self) -> str:
        return f"{self.name} {self.transport} {self.flow} {self.binds}-binds"

    def missing(self) -> list[str]:
        return [t for t in self.requires if t.upper() not in STRATEGIES]


class Registry:
    """The cases a run chooses from, in registration order."""

    def __init__(self) -> None:
        self._cases: list[Case] = []

    def add(self, case: Case) -> Case:
        if case.transport not in TRANSPORTS:
            raise ValueError(f"unknown transport {case.transport!r}")
        if case.binds not in BINDERS:
            raise ValueError(f"binds must be one of {BINDERS}")
        if case.flow not in FLOWS:
            raise ValueError(f"flow must be one of {FLOWS}")
        if any(c.label == case.label for c in self._cases):
            raise ValueError(f"case {case.label!r} is already registered")
        self._cases.append(case)
        return case

    def register(
        self,
        name: str,
        *,
        flow: str,
        transports: Sequence[str] = TRANSPORTS,
        binds: Sequence[str] = BINDERS,
        requires: Sequence[str] = (),
        timeout: float | None = None,
    ) -> Callable[[CaseFunc], CaseFunc]:
        """Decorator: one row per transport x binder for ``func``."""

        def decorator(func: CaseFunc) -> CaseFunc:
            for transport in transports:
                for binder in binds:
                    self.add(Case(name, transport, binder, flow, func, tuple(requires), timeout))
            return func

        return decorator

    def unregister(self, name: str) -> int:
        """Remove every row named ``name``; returns how many."""
        before = len(self._cases)
        self._cases = [c for c in self._cases if c.name != name]
        return before - len(self._cases)

    def select(self, transports: Sequence[str] = TRANSPORTS, pattern: str = "") -> list[Case]:
        """Rows for these transports whose label contains ``pattern`` (case-insensitive)."""
        needle = pattern.lower()
        return [c for c in self._cases if c.transport in transports and needle in c.label.lower()]

    def __iter__(self) -> Iterator[Case]:
        return iter(list(self._cases))

    def __len__(self) -> int:
        return len(self._cases)


#: The built-in rows.
REGISTRY = Registry()
register = REGISTRY.register


class CaseContext:
    """What a case function gets: its row's parameters and ready-made, cleaned-up sockets."""

    def __init__(
        self,
        case: Case,
        backend: str,
        libzmq: Libzmq,
        workdir: str,
        timeout: float,
        count: int = DEFAULT_COUNT,
        log: Callable[[str], None] | None = None,
    ) -> None:
        self.case = case
        self.backend = backend
        self.transport = case.transport
        self.binds = case.binds
        self.libzmq = libzmq
        self.zmq = libzmq.zmq
        self.workdir = workdir
        self.timeout = timeout  #: per operation (half the row's timeout)
        self.count = count  #: numbered messages for ordering checks
        self.current_step = "starting"
        self._log = log

    def step(self, text: str) -> None:
        """Name the current step (printed with -v, quoted if the row times out)."""
        self.current_step = text
        if self._log is not None:
            self._log(text)

    def endpoint(self) -> str:
        """A fresh endpoint to bind on this row's transport."""
        if self.transport == "tcp":
            return "tcp://127.0.0.1:*"
        return f"ipc://{self.workdir}/{next(_IPC_NAMES)}.ipc"

    def zmtp_socket(self, socket_type: str, **options: Any) -> Socket:
        """A zmtp socket (use with ``async with``); linger defaults to 0."""
        options.setdefault("linger", 0)
        return Socket(socket_type, **options)

    def libzmq_socket(self, socket_type: str, **options: Any) -> LibzmqSocket:
        return self.libzmq.socket(socket_type, **options)

    def end(self, sock: Socket) -> ZmtpEnd:
        return ZmtpEnd(sock, self.timeout)

    async def link(self, ours: Socket, theirs: LibzmqSocket) -> PeerInfo:
        """Bind one side and connect the other as the row says (see :func:`link`)."""
        return await link(
            ours,
            theirs,
            binds=self.binds,
            endpoint=self.endpoint(),
            timeout=self.timeout,
            step=self.step,
        )


async def link(
    ours: Socket,
    theirs: LibzmqSocket,
    *,
    binds: str,
    endpoint: str,
    timeout: float = DEFAULT_TIMEOUT / 2,
    step: Callable[[str], None] | None = None,
) -> PeerInfo:
    """Bind ``endpoint`` on one side (``binds``: "zmtp" or "libzmq") and connect the other to
    it; wait until both sides report a completed handshake (our monitor and libzmq's); return
    what our side learned about the peer. Raises CaseFailed if either side refuses."""
    if binds not in BINDERS:
        raise ValueError(f"binds must be one of {BINDERS}")
    note = step or (lambda text: None)
    event: MonitorEvent | None = None
    monitor = ours.monitor()
    theirs_monitor = theirs.monitor()
    try:
        if binds == "zmtp":
            note("zmtp binds, libzmq connects")
            endpoint = await ours.bind(endpoint)
            theirs.connect(endpoint)
        else:
            note("libzmq binds, zmtp connects")
            endpoint = theirs.bind(endpoint)
            await ours.connect(endpoint)
        note(f"handshake on {endpoint}")
        with anyio.move_on_after(timeout):
            event = await monitor.wait_for((HandshakeSucceeded, HandshakeFailed))
        if event is None:
            raise TimeoutError(f"zmtp saw no handshake with libzmq on {endpoint} in {timeout:g}s")
    finally:
        monitor.close()
    if isinstance(event, HandshakeFailed):
        raise CaseFailed(f"zmtp handshake failed ({event.kind}): {event.reason}")
    assert isinstance(event, HandshakeSucceeded)
    await theirs_monitor.wait_for(
        "HANDSHAKE_SUCCEEDED",
        fail_on=(
            "HANDSHAKE_FAILED_NO_DETAIL",
            "HANDSHAKE_FAILED_PROTOCOL",
            "HANDSHAKE_FAILED_AUTH",
        ),
        timeout=timeout,
    )
    note(f"handshake done: libzmq is {event.peer.socket_type}")
    return event.peer


# ---------------------------------------------------------------------- runner


@dataclass
class Result:
    case: Case
    backend: str
    status: str  #: "PASS", "FAIL", "SKIP"
    seconds: float
    detail: str


_COLUMNS = ("BACKEND", "CASE", "TRANSPORT", "FLOW", "BINDS", "RESULT", "TIME", "DETAIL")


@dataclass
class _Table:
    out: IO[str]
    widths: list[int] = field(default_factory=list)

    def setup(self, cases: Sequence[Case], backends: Sequence[str]) -> None:
        values = [
            list(backends),
            [c.name for c in cases],
            [c.transport for c in cases],
            [c.flow for c in cases],
            [c.binds for c in cases],
            ["RESULT"],
            ["999.99s"],
        ]
        self.widths = [
            max([len(h), *(len(v) for v in col)])
            for h, col in zip(_COLUMNS[:-1], values, strict=True)
        ]

    def _line(self, cells: Sequence[str]) -> str:
        parts = []
        for i, cell in enumerate(cells[:-1]):
            parts.append(cell.rjust(self.widths[i]) if i == 6 else cell.ljust(self.widths[i]))
        return ("  ".join(parts) + "  " + cells[-1]).rstrip()

    def header(self) -> None:
        self.print(self._line(_COLUMNS))
        self.print(self._line(["-" * w for w in self.widths] + ["-" * 6]))

    def row(self, result: Result) -> None:
        c = result.case
        cells = [
            result.backend,
            c.name,
            c.transport,
            c.flow,
            c.binds,
            result.status,
            f"{result.seconds:.2f}s",
            result.detail,
        ]
        self.print(self._line(cells))

    def print(self, text: str) -> None:
        self.out.write(text + "\n")
        self.out.flush()


class _Watchdog:
    """Ends the process if a timed-out case cannot even be cancelled (e.g. a shielded hang)."""

    def __init__(self, seconds: float, on_fire: Callable[[], None]) -> None:
        self._timer = threading.Timer(seconds, on_fire)
        self._timer.daemon = True

    def __enter__(self) -> _Watchdog:
        self._timer.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._timer.cancel()


async def run_case(
    case: Case,
    backend: str,
    *,
    workdir: str,
    timeout: float = DEFAULT_TIMEOUT,
    count: int = DEFAULT_COUNT,
    log: Callable[[str], None] | None = None,
) -> Result:
    """Run one row on the current event loop; never raises (except on cancellation)."""
    missing = case.missing()
    if missing:
        return Result(case, backend, "SKIP", 0.0, f"zmtp has no {', '.join(missing)} socket yet")
    seconds = case.timeout or timeout
    start = time.perf_counter()
    context: CaseContext | None = None
    try:
        with Libzmq(seconds / 2) as libzmq:
            context = CaseContext(case, backend, libzmq, workdir, seconds / 2, count, log)
            with anyio.fail_after(seconds):
                detail = await case.func(context)
        status, text = "PASS", detail or ""
    except TimeoutError as exc:
        leaf = _leaf(exc)
        step = context.current_step if context is not None else "starting"
        if str(leaf):
            status, text = "FAIL", describe_exception(leaf)
        else:
            elapsed = time.perf_counter() - start
            status, text = "FAIL", _one_line(f"timed out after {elapsed:.1f}s while: {step}")
    except Exception as exc:
        status, text = "FAIL", describe_exception(exc)
    return Result(case, backend, status, time.perf_counter() - start, text)


def run_check(
    registry: Registry = REGISTRY,
    *,
    backends: Sequence[str] = BACKENDS,
    transports: Sequence[str] = TRANSPORTS,
    pattern: str = "",
    timeout: float = DEFAULT_TIMEOUT,
    count: int = DEFAULT_COUNT,
    verbose: bool = False,
    out: IO[str] | None = None,
) -> int:
    """Run the selected rows on each backend, print the table; returns the exit status."""
    out = out if out is not None else sys.stdout
    zmq = import_zmq()
    for backend in backends:
        if backend not in BACKENDS:
            raise InteropUnavailable(f"unknown backend {backend!r} (asyncio, trio)")
        if backend == "trio" and importlib.util.find_spec("trio") is None:
            raise InteropUnavailable(
                "trio is not installed: pip install trio, or --backend asyncio"
            )
    cases = registry.select(transports, pattern)
    table = _Table(out)
    from . import __version__

    table.print(
        f"zmtp {__version__} interop check against libzmq {zmq.zmq_version()} "
        f"(pyzmq {zmq.__version__}): backends {', '.join(backends)}; "
        f"transports {', '.join(transports)}"
    )
    if not cases:
        table.print(f"no cases match transports {list(transports)} and {pattern!r}")
        return 1
    table.setup(cases, backends)
    table.header()
    results: list[Result] = []
    started = time.perf_counter()
    workdir = tempfile.mkdtemp(prefix="zmtp-interop-")

    def summary() -> int:
        failed = sum(r.status == "FAIL" for r in results)
        passed = sum(r.status == "PASS" for r in results)
        skipped = sum(r.status == "SKIP" for r in results)
        verdict = "FAILED" if failed else "OK"
        table.print(
            f"{verdict}: {len(results)} cases, {passed} passed, {failed} failed, "
            f"{skipped} skipped in {time.perf_counter() - started:.1f}s"
        )
        return 1 if failed else 0

    # Grouped by case name: all the rows of one case, on each backend in turn, then the next
    # case (one event loop per case and backend; starting one costs about a millisecond).
    groups: dict[str, list[Case]] = {}
    for case in cases:
        groups.setdefault(case.name, []).append(case)
    try:
        for group, backend in itertools.product(groups.values(), backends):

            async def run_rows(backend: str = backend, group: list[Case] = group) -> None:
                for case in group:
                    log = None
                    if verbose:

                        def log(text: str, case: Case = case) -> None:
                            table.print(f"    [{backend} {case.label}] {text}")

                    hung = Result(
                        case, backend, "FAIL", 0.0, "hung: the case could not be cancelled"
                    )
                    case_started = time.perf_counter()

                    def fire(hung: Result = hung, case_started: float = case_started) -> None:
                        hung.seconds = time.perf_counter() - case_started
                        results.append(hung)
                        table.row(hung)
                        summary()
                        shutil.rmtree(workdir, ignore_errors=True)
                        os._exit(1)  # the event loop is stuck: no clean way out

                    limit = (case.timeout or timeout) + WATCHDOG_GRACE
                    with _Watchdog(limit, fire):
                        result = await run_case(
                            case, backend, workdir=workdir, timeout=timeout, count=count, log=log
                        )
                    results.append(result)
                    table.row(result)

            anyio.run(run_rows, backend=backend)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    return summary()


# ---------------------------------------------------------------------- command line


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of ``zmtp interop``."""
    parser.add_argument(
        "--backend",
        choices=(*BACKENDS, "both"),
        default="both",
        help="anyio backend(s) to run on (default: both)",
    )
    parser.add_argument(
        "--transport",
        default=",".join(TRANSPORTS),
        type=_transport_list,
        help="comma-separated transports (default: tcp,ipc)",
    )
    parser.add_argument(
        "--timeout",
        type=_positive_float,
        default=DEFAULT_TIMEOUT,
        help=f"seconds per case before it counts as failed (default: {DEFAULT_TIMEOUT:g})",
    )
    parser.add_argument(
        "-k",
        dest="pattern",
        default="",
        metavar="TEXT",
        help="run only cases whose label contains TEXT (e.g. PAIR, ipc, libzmq-binds)",
    )
    parser.add_argument(
        "--count",
        type=_count,
        default=DEFAULT_COUNT,
        help=f"numbered messages per ordering check (default: {DEFAULT_COUNT})",
    )
    parser.add_argument("-v", "--verbose", action="store_true", help="print each step")


def _transport_list(text: str) -> list[str]:
    names = [t.strip().lower() for t in re.split(r"[,\s]+", text) if t.strip()]
    unknown = [t for t in names if t not in TRANSPORTS]
    if unknown or not names:
        what = ", ".join(unknown) if unknown else repr(text)
        raise argparse.ArgumentTypeError(f"unknown transport(s) {what}; choose from tcp, ipc")
    return list(dict.fromkeys(names))


def _positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if value <= 0:
        raise argparse.ArgumentTypeError("must be > 0")
    return value


def _count(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError("must be >= 0")
    return value


def command(args: argparse.Namespace, registry: Registry = REGISTRY) -> int:
    """``zmtp interop``: run the check with parsed arguments; returns the exit status."""
    backends = list(BACKENDS) if args.backend == "both" else [args.backend]
    try:
        return run_check(
            registry,
            backends=backends,
            transports=args.transport,
            pattern=args.pattern,
            timeout=args.timeout,
            count=args.count,
            verbose=args.verbose,
        )
    except InteropUnavailable as exc:
        print(f"zmtp interop: {exc}", file=sys.stderr)
        return 2


# The built-in rows register themselves into REGISTRY; imported last because they use this
# module's helpers (see zmtp/interop_rows/__init__.py).
from . import interop_rows  # noqa: E402, F401

__all__ = [
    "PROBE",
    "REGISTRY",
    "Case",
    "CaseContext",
    "CaseFailed",
    "InteropUnavailable",
    "Libzmq",
    "LibzmqEvent",
    "LibzmqMonitor",
    "LibzmqSocket",
    "Registry",
    "Result",
    "ZmtpEnd",
    "add_arguments",
    "command",
    "compare_messages",
    "expect_libzmq_saw",
    "expect_messages",
    "expect_peer",
    "libzmq_zmtp_version",
    "link",
    "probe_until_received",
    "publish_until_cancelled",
    "recv_briefly",
    "recv_skipping",
    "register",
    "run_case",
    "run_check",
    "sample_messages",
    "transfer",
]
