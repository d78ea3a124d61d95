"""Job handlers for the ``python -m zmtp_qos worker`` tests (imported by the subprocess)."""

from __future__ import annotations

import anyio


async def slow(parts: list[bytes]) -> None:
    """Print ``start NAME``, sleep the second part's seconds, print ``done NAME``."""
    name = parts[0].decode()
    print("start", name, flush=True)
    await anyio.sleep(float(parts[1]) if len(parts) > 1 else 0.0)
    print("done", name, flush=True)


def sync_echo(parts: list[bytes]) -> None:
    print("sync", parts[0].decode(), flush=True)


NOT_CALLABLE = 42
