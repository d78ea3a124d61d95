"""``zmtp.Context``: pyzmq's context for ported code, making sockets and closing them together.

zmtp needs no context (no I/O threads to share), so this is mostly a convenience: it remembers
default options, makes sockets already open, and closes every socket it made when its own
``async with`` ends (newest first). Call :meth:`Context.socket` from the task that entered the
context: its sockets' tasks run in one task group that the context entered there.

All its sockets run in one group (``Socket.open_in``), which adds one cancel scope to the
task that entered the context; a socket's own ``async with`` adds none on asyncio, whose
cancel check walks them all (``_GroupTask`` in socket.py), and one on trio, where that costs
nothing.
"""

from __future__ import annotations

from contextlib import AsyncExitStack
from functools import partial
from types import TracebackType
from typing import Any

import anyio
from anyio.abc import TaskGroup

from .errors import NEVER_OPENED, SocketClosed
from .group_exit import leave_task_group
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
        self._task_group: TaskGroup | None = None
        self.sockets: list[Socket] = []

    async def __aenter__(self) -> Context:
        stack = AsyncExitStack()
        await stack.__aenter__()
        try:
            group = anyio.create_task_group()
            await group.__aenter__()
            stack.push_async_exit(partial(leave_task_group, group))
            self._task_group = group
        except BaseException as error:
            await stack.__aexit__(type(error), error, error.__traceback__)
            raise
        self._stack = stack
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> bool | None:
        stack, self._stack = self._stack, None
        self._task_group = None
        if stack is None:
            return None
        return await stack.__aexit__(exc_type, exc, tb)

    async def socket(self, socket_type: SocketType | str, **options: Any) -> Socket:
        """A new socket, entered (ready to bind/connect) and closed with the context."""
        if self._stack is None:
            raise SocketClosed(NEVER_OPENED.replace("socket", "context", 1))
        assert self._task_group is not None
        sock = Socket(socket_type, **{**self.defaults, **options})
        sock.open_in(self._task_group)

        async def close(
            exc_type: type[BaseException] | None,
            exc: BaseException | None,
            tb: TracebackType | None,
        ) -> None:
            # What the socket's own __aexit__ does, but for leaving the (shared) group, which
            # the stack leaves last: it was entered first.
            await sock.close() if exc_type is None else await sock.close(linger=0)

        self._stack.push_async_exit(close)
        self.sockets.append(sock)
        return sock
