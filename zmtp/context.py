"""``zmtp.Context``: pyzmq's context for ported code, making sockets and closing them together.

zmtp needs no context (no I/O threads to share), so this is only a convenience: it remembers
default options, makes sockets already entered, and closes every socket it made when its own
``async with`` ends (newest first). Call :meth:`Context.socket` from the task that entered the
context: a socket's ``async with`` must begin and end in one task.
"""

from __future__ import annotations

from contextlib import AsyncExitStack
from types import TracebackType
from typing import Any

from .errors import NEVER_OPENED, SocketClosed
from .protocol.sockettypes import SocketType
from .socket import Socket


class Context:
    """``async with zmtp.Context(linger=0) as ctx: push = await ctx.socket(zmtp.PUSH)``.

    Keyword arguments are default options for every socket it makes (a socket's own options
    win).
    """

    def __init__(self, **defaults: Any) -> None:
        self.defaults = defaults
        self._stack: AsyncExitStack | None = None
        self.sockets: list[Socket] = []

    async def __aenter__(self) -> Context:
        self._stack = AsyncExitStack()
        await self._stack.__aenter__()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> bool | None:
        stack, self._stack = self._stack, None
        if stack is None:
            return None
        return await stack.__aexit__(exc_type, exc, tb)

    async def socket(self, socket_type: SocketType | str, **options: Any) -> Socket:
        """A new socket, entered (ready to bind/connect) and closed with the context."""
        if self._stack is None:
            raise SocketClosed(NEVER_OPENED.replace("socket", "context", 1))
        sock = Socket(socket_type, **{**self.defaults, **options})
        await self._stack.enter_async_context(sock)
        self.sockets.append(sock)
        return sock
