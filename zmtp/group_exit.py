"""Leaving the task group an ``async with`` body ran in, so the body's exception leaves as
itself.

anyio's task groups wrap whatever leaves their body in an ``ExceptionGroup``; a socket's (or a
context's) group holds only its own connection tasks, which ``close`` has stopped by the time
the body ends, so that wrapping told the user nothing and broke ``except zmtp.TimedOut:``
(``except ValueError:``...) written around the ``async with``, as around a pyzmq ``with``.
"""

from __future__ import annotations

from types import TracebackType

from anyio.abc import TaskGroup


async def leave_task_group(
    group: TaskGroup,
    exc_type: type[BaseException] | None,
    exc: BaseException | None,
    tb: TracebackType | None,
) -> None:
    """Join ``group``'s tasks as the body ends; an ``Exception`` from the body propagates
    unwrapped (the caller re-raises it by returning a false value from its ``__aexit__``).

    A cancellation or ``KeyboardInterrupt`` (no ``Exception``) is handed to the group: its
    cancel scope may be the one that was cancelled (a socket task failed), and the group then
    raises that task's error. An error of a socket task (a bug: they catch their own) still
    comes out in the group's ``ExceptionGroup``, with the body's exception as its context.
    """
    if isinstance(exc, Exception):
        await group.__aexit__(None, None, None)
    else:
        await group.__aexit__(exc_type, exc, tb)
