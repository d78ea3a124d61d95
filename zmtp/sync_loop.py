"""The event loop behind ``zmtp.sync``: one asyncio loop per process, run by whichever thread
needs it.

Why not simply a loop thread. With the loop on a thread of its own, every blocking call is a
hand-over to that thread and back: two thread wake-ups, each a full trip through the OS
scheduler (tens of microseconds on a VM, milliseconds on a loaded machine), and the GIL
changing hands twice. A REQ/REP round trip then costs about twice the async one.

So the loop *migrates*: a thread that must wait (``recv`` with nothing buffered, ``bind``,
``close``...) runs the loop itself, in its own thread, until its work is done, and the work
costs what it costs in async code. One lock, the *driver* lock, says who runs the loop; only
its holder may touch loop state. asyncio allows a loop to be run from different threads one
after another (it refuses two at once, and we never try); anyio's asyncio backend keeps no
per-thread state for tasks, cancel scopes or sockets.

* **The driver lock is free** (the usual case for a thread that is the only user): take it,
  run the work as a task and the loop until the task is done, release it. No other thread is
  involved at all.
* **The background thread holds it** (nobody else needed the loop for a while, see below): ask
  it to stop (``loop.stop`` through ``call_soon_threadsafe``), wait for the lock, then run the
  loop here. One hand-over, once; the calls after it find the lock free again.
* **Another caller holds it** (several threads): post the work to the loop and sleep until the
  driver has done it (the classic hand-over). When a driver finishes while posted work is
  still in flight it wakes the background thread to carry on with it.

Between two blocking calls nobody runs the loop, and the network waits in the kernel's
buffers, which is harmless for a short while (the next call catches up). The background
thread (a daemon named ``zmtp.sync``) is what bounds "a short while": it takes the loop over
when it has not run for :data:`GRACE` seconds (a caller busy elsewhere, a queued send to
flush, reconnects, heartbeats) or when woken for work that nobody is driving (``kick``), and
runs it until a caller asks for it back. A caller that comes back within ``GRACE`` finds the
lock free: the round trip of ping-pong code never touches a second thread.

Ctrl-C. Only the main thread receives it, and while that thread runs the loop the
``KeyboardInterrupt`` would land in whatever task happens to be running (a connection's reader,
say) and break it. So while the main thread drives, SIGINT (if it has Python's default handler)
only stops the loop; the caller then cancels its own work (the async socket never loses a
message to a cancel), lets the cancellation finish, and raises ``KeyboardInterrupt``.
"""

from __future__ import annotations

import asyncio
import importlib
import inspect
import os
import signal
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

#: Seconds the loop may go unrun between two callers' calls before the background thread
#: takes it over (a caller returning within this finds it free: no thread hand-over).
GRACE = 0.005

_MAIN = threading.main_thread().ident

try:
    # The C module under ``signal``: the same functions without the enum conversions of
    # their arguments and results, which cost ~10 us per drive (three calls) against 0.6 us.
    _sig: Any = importlib.import_module("_signal")
except ImportError:  # pragma: no cover - an interpreter without it
    _sig = signal


class _Call:
    """One piece of work posted to whoever drives the loop, for a caller that waits."""

    __slots__ = ("done", "error", "result", "task")

    def __init__(self) -> None:
        self.done = threading.Lock()
        self.done.acquire()
        self.result: Any = None
        self.error: BaseException | None = None
        self.task: asyncio.Task[None] | None = None


class _Ticket:
    """A caller waiting for the background thread to hand the loop over."""

    __slots__ = ("granted", "ready")

    def __init__(self) -> None:
        self.ready = threading.Lock()
        self.ready.acquire()
        #: True: the driver lock was passed to this caller (it holds it now, unreleased).
        self.granted = False


class SharedLoop:
    """The process's event loop and the rules for running it (see the module docstring)."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.pid = os.getpid()
        #: Held by whoever runs the loop or touches its state.
        self._driver = threading.Lock()
        #: The thread holding ``_driver`` (0: none), to refuse a re-entrant blocking call.
        self._driver_ident = 0
        #: True while the background thread runs the loop (changed under ``_state``).
        self._bg_driving = False
        #: Callers waiting for the background thread to give the loop back.
        self._waiting: list[_Ticket] = []
        #: Guards ``_bg_driving``, ``_waiting`` and ``_inflight``.
        self._state = threading.Lock()
        #: Posted calls not finished yet: a driver leaving with some in flight wakes the
        #: background thread.
        self._inflight = 0
        self._last_ran = time.monotonic()
        self._kick = threading.Event()
        self._interrupted = False
        threading.Thread(target=self._background, name="zmtp.sync", daemon=True).start()

    # ------------------------------------------------------------------ the background thread

    def _background(self) -> None:
        loop, driver, kick = self.loop, self._driver, self._kick
        wait = GRACE
        while True:
            kicked = kick.wait(wait)
            kick.clear()
            wait = GRACE
            if not driver.acquire(blocking=False):
                continue  # a caller runs the loop (and serves everything meanwhile)
            idle = time.monotonic() - self._last_ran
            if not kicked and not self._inflight and idle < GRACE:
                driver.release()  # a caller ran it just now and is likely to be back
                # (work posted while we held the lock found it "busy": look again at once)
                wait = 0.0 if self._inflight else max(GRACE - idle, GRACE / 10)
                continue
            with self._state:
                self._bg_driving = True
            while True:
                loop.run_forever()  # until a caller asks for the loop (or a stale stop)
                with self._state:
                    waiting, self._waiting = self._waiting, []
                    if waiting:
                        self._bg_driving = False
                        waiting[0].granted = True
                        break
            self._last_ran = time.monotonic()
            # The driver lock passes to the first caller as it is (never free in between,
            # so no other thread can slip in); the others look again (and post their work).
            for ticket in waiting:
                ticket.ready.release()

    def kick(self) -> None:
        """Work was posted that nobody may be driving: let the background thread run it now."""
        if not self._driver.locked():
            self._kick.set()

    # ------------------------------------------------------------------ running work

    def run(self, func: Callable[..., Any], *args: Any) -> Any:
        """``func(*args)`` (a plain or a coroutine function) run with the loop; its result.

        Blocks the calling thread until done; exceptions propagate.
        """
        driver = self._driver
        if driver.acquire(blocking=False):
            if _other_loop_running():
                driver.release()
                return self._post_and_wait(func, args)
            return self._drive(func, args)
        if self._driver_ident == threading.get_ident():
            raise RuntimeError(
                "a blocking zmtp.sync call from inside zmtp.sync's own event loop would wait "
                "for itself; use the async socket (Socket.async_socket) there"
            )
        if self._bg_driving and not _other_loop_running():
            return self._take_over(func, args)
        return self._post_and_wait(func, args)

    def try_now(self, func: Callable[..., Any], *args: Any) -> tuple[bool, Any]:
        """The fast path: if the loop is free, run the plain function ``func(*args)`` in a
        loop pass here (no task: a callback), then, if it returned something true (it did
        something), one more pass for the tasks it woke (a connection's writer). Returns
        ``(True, result)``, or ``(False, None)`` if the loop is busy: use :meth:`run`.

        Run inside the loop rather than beside it because engine code may ask anyio for the
        time or make an event, which needs a running loop; anyio finds its backend through
        sniffio, which sees no task in a callback, so asyncio is named for it meanwhile.
        """
        driver = self._driver
        if not driver.acquire(blocking=False):
            return False, None
        try:
            if _other_loop_running():
                return False, None
            self._driver_ident = threading.get_ident()
            loop = self.loop
            outcome: list[Any] = []
            loop.call_soon(self._call_back, func, args, outcome)
            restore = self._catch_sigint()
            try:
                while not outcome:
                    loop.run_forever()  # one or two passes: _call_back stops it
                self._last_ran = time.monotonic()
            finally:
                if restore is not None:
                    _sig.signal(signal.SIGINT, restore)
                    if self._interrupted:
                        self._interrupted = False
                        raise KeyboardInterrupt  # func's work is done and kept
            ok, value = outcome
            if not ok:
                raise value
            return True, value
        finally:
            self._driver_ident = 0
            driver.release()
            if self._inflight:
                self._kick.set()

    def _call_back(self, func: Callable[..., Any], args: tuple[Any, ...], out: list[Any]) -> None:
        sniffio = sys.modules.get("sniffio")
        local = None if sniffio is None else sniffio.thread_local
        previous = None if local is None else local.name
        if local is not None:
            local.name = "asyncio"
        try:
            result = func(*args)
        except BaseException as exc:
            out[:] = [False, exc]
            self.loop.stop()
            return
        finally:
            if local is not None:
                local.name = previous
        out[:] = [True, result]
        if result:
            self.loop.call_soon(self.loop.stop)  # after what it woke, in the next pass
        else:
            self.loop.stop()

    def _take_over(self, func: Callable[..., Any], args: tuple[Any, ...]) -> Any:
        """Ask the background thread for the loop, then drive it here."""
        ticket = _Ticket()
        with self._state:
            queued = self._bg_driving  # else it let go meanwhile: look again
            if queued:
                self._waiting.append(ticket)
        if not queued:
            return self.run(func, *args)
        self.loop.call_soon_threadsafe(self.loop.stop)
        try:
            ticket.ready.acquire()
        except BaseException:  # Ctrl-C while waiting
            with self._state:
                withdrawn = ticket in self._waiting
                if withdrawn:
                    self._waiting.remove(ticket)
            if not withdrawn and ticket.granted:  # the loop is ours: give it back
                self._driver.release()
                self._kick.set()
            raise
        if ticket.granted:
            return self._drive(func, args)
        return self.run(func, *args)  # another caller got the loop first

    def _drive(self, func: Callable[..., Any], args: tuple[Any, ...]) -> Any:
        """Run ``func(*args)`` here, holding the driver lock (released on return)."""
        loop = self.loop
        self._driver_ident = threading.get_ident()
        try:
            task = loop.create_task(self._call_and_stop(func, args))
            restore = self._catch_sigint()
            try:
                while not task.done():
                    loop.run_forever()
                    if self._interrupted:
                        self._interrupted = False
                        task.cancel()
                        while not task.done():
                            loop.run_forever()
                        raise KeyboardInterrupt  # a result is dropped: receives buffer theirs
            finally:
                if restore is not None:
                    _sig.signal(signal.SIGINT, restore)
            return task.result()
        finally:
            self._driver_ident = 0
            self._last_ran = time.monotonic()
            self._driver.release()
            if self._inflight:
                self._kick.set()  # posted work is still waiting for a driver

    async def _call_and_stop(self, func: Callable[..., Any], args: tuple[Any, ...]) -> Any:
        """The work of a drive, in a task (where anyio works as in any async code)."""
        try:
            result = func(*args)
            if inspect.isawaitable(result):
                return await result
            await asyncio.sleep(0)  # a plain call: one pass for the tasks it woke
            return result
        finally:
            self.loop.stop()  # back to the caller at the end of this loop pass

    def _catch_sigint(self) -> Any:
        """While the main thread drives, SIGINT only stops the loop (see the module docstring).
        Returns the handler to restore, or None if nothing was changed."""
        if threading.get_ident() != _MAIN:
            return None
        if _sig.getsignal(signal.SIGINT) is not signal.default_int_handler:
            return None  # the application's own handler: leave it alone
        _sig.signal(signal.SIGINT, self._on_sigint)
        return signal.default_int_handler

    def _on_sigint(self, signum: int, frame: object) -> None:
        self._interrupted = True
        self.loop.stop()
        self.loop.call_soon_threadsafe(_nothing)  # end a select() that is waiting

    def _post_and_wait(self, func: Callable[..., Any], args: tuple[Any, ...]) -> Any:
        """Hand the work to whoever drives the loop and sleep until it is done."""
        call = self.post(func, *args)
        try:
            call.done.acquire()
        except BaseException:  # Ctrl-C while waiting: cancel the work (loses no message)
            self.loop.call_soon_threadsafe(_cancel, call)
            self.kick()
            raise
        error = call.error
        if error is not None:
            call.error = None  # no cycle through the traceback
            raise error
        return call.result

    def post(self, func: Callable[..., Any], *args: Any) -> _Call:
        """Start ``func(*args)`` on the loop without waiting for it."""
        call = _Call()
        with self._state:
            self._inflight += 1
        self.loop.call_soon_threadsafe(self._start, call, func, args)
        self.kick()  # after the increment: a driver leaving now sees it, or we see it gone
        return call

    def post_nowait(self, func: Callable[..., Any], *args: Any) -> None:
        """Schedule ``func(*args)`` (plain) on the loop; safe from ``__del__`` (no lock taken:
        the background thread runs it within ``GRACE`` if no caller does sooner)."""
        self.loop.call_soon_threadsafe(func, *args)

    def _start(self, call: _Call, func: Callable[..., Any], args: tuple[Any, ...]) -> None:
        try:
            result = func(*args)
        except BaseException as exc:
            call.error = exc
            self._finished(call)
            return
        if inspect.isawaitable(result):
            call.task = asyncio.ensure_future(self._finish(call, result))
        else:
            call.result = result
            self._finished(call)

    async def _finish(self, call: _Call, awaitable: Any) -> None:
        try:
            call.result = await awaitable
        except BaseException as exc:
            call.error = exc
        finally:
            self._finished(call)

    def _finished(self, call: _Call) -> None:
        with self._state:
            self._inflight -= 1
        call.done.release()


def _other_loop_running() -> bool:
    """True if this thread is inside an event loop already (an asyncio or trio program calling
    the blocking API): it cannot run ours (anyio would even take it for that loop's library),
    so its calls are posted."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        pass
    else:
        return True
    sniffio = sys.modules.get("sniffio")
    return sniffio is not None and getattr(sniffio.thread_local, "name", None) is not None


def _nothing() -> None:
    pass


def _cancel(call: _Call) -> None:
    if call.task is not None:
        call.task.cancel()


_lock = threading.Lock()
_shared: SharedLoop | None = None


def shared_loop() -> SharedLoop:
    """The process's loop, made on first use (and again in a forked child)."""
    global _shared
    current = _shared
    if current is not None and current.pid == os.getpid():
        return current
    with _lock:
        if _shared is None or _shared.pid != os.getpid():
            _shared = SharedLoop()
        return _shared
