"""Timeouts of the application's calls: ``send_timeout`` and ``recv_timeout``.

A bare ``anyio.fail_after`` raises an empty ``TimeoutError``; the application then cannot tell
which call or option expired. :func:`call_timeout` raises :class:`~zmtp.TimedOut` (a
``TimeoutError`` too) saying what timed out and what to do about it.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from typing import Any

import anyio

from .protocol.errors import TimedOut


def call_timeout(seconds: float | None, what: str) -> AbstractContextManager[Any]:
    """The timeout of one ``send``/``recv`` call (``what``); None waits for ever."""
    if seconds is None:
        return _NO_TIMEOUT
    return _timed(seconds, what)


#: What :func:`call_timeout` returns for no timeout: one shared instance (a ``nullcontext``
#: keeps no state, so it is reusable and reentrant), not a new one per blocking call.
_NO_TIMEOUT: AbstractContextManager[Any] = nullcontext()


@contextmanager
def _timed(seconds: float, what: str) -> Iterator[None]:
    """``anyio.fail_after`` whose TimeoutError says which operation and option expired."""
    try:
        with anyio.fail_after(seconds):
            yield
    except TimedOut:
        raise
    except TimeoutError:
        hint = _TIMEOUT_HINTS[what]
        raise TimedOut(f"{what} timed out after {seconds:g} s ({what}_timeout): {hint}") from None


_TIMEOUT_HINTS = {
    "send": "no peer could take the message (none connected, or all at their send_hwm); "
    "check that a peer is up, or raise send_timeout (None blocks)",
    "recv": "no message arrived; check that a peer is sending, or raise recv_timeout (None blocks)",
}
