"""The victim of the soak (tests/_soak.py): one ROUTER echo server on tcp and ipc, in its own
process so that its memory, descriptors and tasks are its own.

``python -m tests._soak_victim BACKEND``. Prints ``{"tcp": ..., "ipc": ...}``, then answers one
JSON line per command read from stdin: ``stats`` (RSS, open descriptors, tasks, peers,
messages echoed), ``quit``.
"""

from __future__ import annotations

import json
import os
import sys

import anyio

import zmtp


def rss_kib() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") // 1024


def open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def task_count() -> int:
    try:
        import asyncio

        return len(asyncio.all_tasks())
    except RuntimeError:  # trio: walk the task tree
        import trio

        count, stack = 0, [trio.lowlevel.current_root_task()]
        while stack:
            task = stack.pop()
            count += 1
            for nursery in task.child_nurseries:
                stack.extend(nursery.child_tasks)
        return count


async def main() -> None:
    options = {"max_message_size": 1 << 20, "handshake_ivl": 3.0, "heartbeat_ivl": 1.0}
    async with zmtp.Socket(zmtp.ROUTER, **options) as router, anyio.create_task_group() as tg:
        tcp = await router.bind("tcp://127.0.0.1:*")
        ipc = await router.bind("ipc://*")
        echoed = 0

        async def echo() -> None:
            nonlocal echoed
            async for message in router:
                await router.send_multipart(message)  # a full peer loses its copy (ROUTER)
                echoed += 1

        tg.start_soon(echo)
        print(json.dumps({"tcp": tcp, "ipc": ipc}), flush=True)
        async for line in anyio.wrap_file(sys.stdin):
            if line.strip() != "stats":
                break
            await anyio.sleep(0)
            stats = {
                "rss_kib": rss_kib(),
                "fds": open_fds(),
                "tasks": task_count(),
                "peers": len(router.peers),
                "echoed": echoed,
            }
            print(json.dumps(stats), flush=True)
        tg.cancel_scope.cancel()


if __name__ == "__main__":
    anyio.run(main, backend=sys.argv[1])
