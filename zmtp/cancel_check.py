"""The running event loop's own "raise if cancelled" check, looked up once instead of per call.

Why: ``anyio.lowlevel.checkpoint_if_cancelled``, which the send and receive fast paths await
every 16 sends and every 64 receives, first looks up the running backend (sniffio's
``current_async_library`` and anyio's table of backends, several Python calls) and only then
awaits that backend's check. The backend does not change under a socket (its task group lives
in one event loop), so :class:`zmtp.Socket` asks :func:`backend_cancel_check` once, when it
is entered, and awaits the function it got from then on (docs/performance.md, "A cheaper PUSH
sender"). What the check does is exactly what anyio's does, since it is what anyio's awaits:

* trio: ``trio.lowlevel.checkpoint_if_cancelled`` (anyio's trio backend awaits it, through
  two coroutine frames more);
* asyncio and any other backend: the backend class's ``checkpoint_if_cancelled`` (public API
  of ``anyio.abc.AsyncBackend``), found through ``anyio.lowlevel.current_token()`` (anyio
  4.11 and later; older versions keep anyio's own function).
"""

from __future__ import annotations

import sys
from collections.abc import Awaitable, Callable

import anyio.lowlevel

CancelCheck = Callable[[], Awaitable[None]]


def backend_cancel_check() -> CancelCheck:
    """The running backend's ``checkpoint_if_cancelled``; anyio's own if there is no running
    loop or it cannot be told apart (the same check, through its look-up)."""
    trio = sys.modules.get("trio")  # a trio run has imported it; asyncio needs no import
    if trio is not None:
        try:
            trio.lowlevel.current_trio_token()
        except RuntimeError:  # not in a trio run
            pass
        else:
            check: CancelCheck = trio.lowlevel.checkpoint_if_cancelled
            return check
    current_token = getattr(anyio.lowlevel, "current_token", None)  # anyio >= 4.11
    if current_token is not None:
        try:
            backend_class = current_token().backend_class
        except Exception:  # no running loop anyio knows of (NoEventLoopError, RuntimeError)
            pass
        else:
            check = backend_class.checkpoint_if_cancelled
            return check
    return anyio.lowlevel.checkpoint_if_cancelled
