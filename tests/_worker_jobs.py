"""Job handlers for the ``python -m zmtp_qos worker`` tests (imported by the subprocess)."""

from __future__ import annotations

import os

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


async def record(parts: list[bytes]) -> None:
    """Append ``start JOB`` to the file named by ``$WORKER_JOBS_OUT``, sleep 10 ms, append
    ``done JOB`` (flushed line by line: a SIGKILL loses nothing written), for the producer's
    fault tests (tests/test_producer_faults.py)."""
    job = parts[0].decode()
    with open(os.environ["WORKER_JOBS_OUT"], "a", encoding="utf-8") as out:
        out.write(f"start {job}\n")
        out.flush()
        await anyio.sleep(0.01)
        out.write(f"done {job}\n")
        out.flush()
