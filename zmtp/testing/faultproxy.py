"""A fault-injecting TCP proxy for tests, on anyio (asyncio and trio).

    async with FaultProxy("127.0.0.1", port) as proxy:
        await sock.connect(proxy.endpoint)       # goes through the proxy
        await proxy.wait_for_connections(1)
        proxy.cut()                              # kill every live connection, both ways

Each accepted client gets its own upstream connection; two pump tasks copy bytes in each
direction (``"up"``: client to target, ``"down"``: target to client). Faults, each on the
connections live now and later until changed:

* ``cut()``: close both ends of every live connection at once (the peers see the connection drop
  mid-stream); the proxy keeps accepting, so a reconnecting client gets through again.
* ``cut_after(n, direction)``: drop the connection on which ``n`` more bytes have passed that
  way (the chunk that crosses the mark is cut short at it: exactly ``n`` bytes get through);
  once, then it is disarmed.
* ``delay(seconds)``: hold each chunk that long before forwarding it.
* ``throttle(bytes_per_second)``: forward at most that fast.
* ``corrupt(offset, direction)``: flip every bit of the byte at that offset of each new
  connection's stream in that direction (offset 0 is the greeting's first byte).
* ``half_close(direction)``: end that direction (send EOF to the receiving side) and forward
  nothing more that way; the other direction stays open.
* ``pause()`` / ``resume()``: stop forwarding, keeping the bytes, until resumed.
* ``hold()`` / ``release()``: clients accepted meanwhile wait (connected to the proxy, nothing
  forwarded and no connection to the target yet): a test decides when a reconnection reaches
  the other side.

``accepted`` counts connections put through to the target, ``live`` those open now;
``FaultProxy(host, port, record=True)`` keeps every forwarded byte in ``recorded["up"]`` and
``recorded["down"]``.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from types import TracebackType

import anyio
from anyio.abc import SocketAttribute, SocketListener, SocketStream, TaskGroup

_GONE = (anyio.EndOfStream, anyio.BrokenResourceError, anyio.ClosedResourceError, OSError)
DIRECTIONS = ("up", "down")


@dataclass
class _Faults:
    """The faults applied to one direction."""

    cut_after: int | None = None  #: bytes still allowed through before a cut (None: no limit)
    corrupt_at: int | None = None  #: stream offset of the byte to flip, per connection
    half_closed: bool = False


class FaultProxy:
    def __init__(self, target_host: str, target_port: int, *, record: bool = False) -> None:
        self.target_host = target_host
        self.target_port = target_port
        #: With ``record=True``: every byte forwarded each way ("up", "down"), over all
        #: connections, in order per direction (what a test inspects on the wire).
        self.recorded: dict[str, bytearray] | None = (
            {d: bytearray() for d in DIRECTIONS} if record else None
        )
        self.endpoint = ""  #: tcp://127.0.0.1:<port> once entered
        self.accepted = 0
        self._live: set[anyio.CancelScope] = set()
        self._tg: TaskGroup | None = None
        self._changed = anyio.Event()
        self._admit: anyio.Event | None = None  #: set while new clients are held
        self._faults = {d: _Faults() for d in DIRECTIONS}
        self._delay = 0.0
        self._rate: float | None = None
        self._running: anyio.Event | None = None  #: set while paused (cleared = paused)

    async def __aenter__(self) -> FaultProxy:
        multi = await anyio.create_tcp_listener(local_host="127.0.0.1")
        listener = multi.listeners[0]  # one address: 127.0.0.1
        assert isinstance(listener, SocketListener)
        self.endpoint = f"tcp://127.0.0.1:{listener.extra(SocketAttribute.local_port)}"
        self._tg = anyio.create_task_group()
        await self._tg.__aenter__()
        self._tg.start_soon(self._serve, listener)
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> bool | None:
        assert self._tg is not None
        self._tg.cancel_scope.cancel()
        return await self._tg.__aexit__(exc_type, exc, tb)

    # faults

    def cut(self) -> None:
        """Drop every live connection (both directions) now."""
        for scope in list(self._live):
            scope.cancel()

    def cut_after(self, nbytes: int, direction: str = "down") -> None:
        """Cut every connection once ``nbytes`` more bytes have gone ``direction``."""
        self._faults[_check(direction)].cut_after = nbytes

    def corrupt(self, offset: int, direction: str = "down") -> None:
        """Flip the byte at ``offset`` of each new connection's ``direction`` stream."""
        self._faults[_check(direction)].corrupt_at = offset

    def half_close(self, direction: str = "down") -> None:
        """End ``direction`` on the live connections and later ones (EOF to the receiver)."""
        self._faults[_check(direction)].half_closed = True
        self._notify()

    def delay(self, seconds: float) -> None:
        """Forward each chunk ``seconds`` after it arrived (0: no delay)."""
        self._delay = seconds

    def throttle(self, bytes_per_second: float | None) -> None:
        """Forward at most ``bytes_per_second`` in each direction (None: no limit)."""
        self._rate = bytes_per_second

    def pause(self) -> None:
        """Stop forwarding (bytes wait in the proxy) until :meth:`resume`."""
        if self._running is None:
            self._running = anyio.Event()

    def resume(self) -> None:
        if self._running is not None:
            self._running.set()
            self._running = None

    def hold(self) -> None:
        """Keep clients accepted from now on waiting, not yet connected to the target."""
        if self._admit is None:
            self._admit = anyio.Event()

    def release(self) -> None:
        """Put the held clients (and later ones) through to the target."""
        if self._admit is not None:
            self._admit.set()
            self._admit = None

    # state

    @property
    def live(self) -> int:
        return len(self._live)

    async def wait_for_connections(self, accepted: int) -> None:
        """Wait until ``accepted`` connections have been put through in total."""
        while self.accepted < accepted:
            await self._changed.wait()

    def _notify(self) -> None:
        self._changed.set()
        self._changed = anyio.Event()

    async def _serve(self, listener: SocketListener) -> None:
        async with listener:
            assert self._tg is not None
            while True:
                client = await listener.accept()
                self._tg.start_soon(self._proxy, client)

    async def _proxy(self, client: SocketStream) -> None:
        with anyio.CancelScope() as scope:
            self._live.add(scope)
            try:
                async with client:
                    admit = self._admit
                    if admit is not None:
                        await admit.wait()
                    try:
                        upstream = await anyio.connect_tcp(self.target_host, self.target_port)
                    except OSError:
                        return  # target down: the client sees its connection close
                    async with upstream, anyio.create_task_group() as tg:
                        self.accepted += 1
                        self._notify()
                        tg.start_soon(self._pump, "up", client, upstream, scope)
                        tg.start_soon(self._pump, "down", upstream, client, scope)
            finally:
                self._live.discard(scope)

    async def _pump(
        self, direction: str, source: SocketStream, sink: SocketStream, both: anyio.CancelScope
    ) -> None:
        faults = self._faults[direction]
        offset = 0
        with contextlib.suppress(*_GONE):
            async for data in source:
                chunk = bytes(data)
                if faults.half_closed:
                    with contextlib.suppress(*_GONE):
                        await sink.send_eof()
                    continue  # keep reading (and dropping) so the other way stays alive
                running = self._running
                if running is not None:
                    await running.wait()
                if self._delay:
                    await anyio.sleep(self._delay)  # the fault asked for
                at = faults.corrupt_at
                if at is not None and offset <= at < offset + len(chunk):
                    flipped = bytearray(chunk)
                    flipped[at - offset] ^= 0xFF
                    chunk = bytes(flipped)
                offset += len(chunk)
                limit = faults.cut_after
                if limit is not None:
                    if len(chunk) >= limit:
                        faults.cut_after = None
                        if limit:
                            await sink.send(chunk[:limit])
                        both.cancel()
                        return
                    faults.cut_after = limit - len(chunk)
                if self._rate:
                    await anyio.sleep(len(chunk) / self._rate)  # the throttle asked for
                if self.recorded is not None:
                    self.recorded[direction] += chunk
                await sink.send(chunk)
        both.cancel()  # one direction ended: end the other too, closing both sockets


def _check(direction: str) -> str:
    if direction not in DIRECTIONS:
        raise ValueError(f"direction is 'up' (client to target) or 'down', not {direction!r}")
    return direction
