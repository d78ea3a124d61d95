"""The victim of the soak (tests/_soak.py): one ROUTER echo server on tcp and ipc, in its own
process so that its memory, descriptors and tasks are its own.

``python -m tests._soak_victim BACKEND``. Prints ``{"tcp": ..., "ipc": ...}``, then answers one
JSON line per command read from stdin: ``stats`` (RSS, open descriptors, tasks, peers,
messages echoed, why connections ended), ``ledger ID...`` (what the victim did with each
well-behaved peer's messages, see :class:`Ledger`), ``forget ID`` (a peer the driver found
whole: its ledger entry goes, so the ledger stays as small as the set of live peers), ``quit``.
"""

from __future__ import annotations

import json
import os
import re
import sys
import time
from collections import Counter
from dataclasses import asdict, dataclass, field

import anyio

import zmtp
from zmtp.engine.pipe import Pipe
from zmtp.engine.queue import Message
from zmtp.extension import SocketExtension

#: Lines of history kept per peer.
HISTORY = 20
#: Routing ids of the peers whose every message must come back (the soak's well-behaved ones).
ACCOUNTED = (b"good-", b"standing-")


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


def reason_kind(reason: str) -> str:
    """A reason with its numbers and quoted bytes blanked, so that the histogram of reasons
    stays small."""
    return re.sub(r"\d+", "N", reason.split(": first bytes")[0])[:100]


@dataclass
class Entry:
    """One well-behaved peer (by routing id), over all its connections."""

    connections: int = 0  #: handshakes completed
    accepted: int = 0  #: messages its connections took off the wire (parsed, queued)
    delivered: int = 0  #: of those, handed to the application by ``recv``
    written: int = 0  #: echoes a connection's writer took from the outbox to write
    ends: list[str] = field(default_factory=list)  #: why each connection ended
    #: Per connection, with ``time.time()``: its handshake (and address), its end, and what
    #: it accepted and wrote (the first few connections only).
    history: list[str] = field(default_factory=list)
    #: The current connection's own counts (accepted, written).
    current: list[int] = field(default_factory=lambda: [0, 0])


class Ledger(SocketExtension):
    """Per-peer accounting through the socket's public extension hooks, so that the soak's
    checker can tell a message the victim *accepted* and lost (a bug) from one the kernel
    lost with a reset connection, or one that never left its peer.

    ``accepted`` counts at ``on_receive_batch`` (the connection parsed the messages and is
    about to queue them for the application), ``written`` at ``before_send_batch`` (the
    writer took them from the outbox), ``ends`` at ``pipe_disconnected`` (the reason the
    monitor's ``Disconnected`` event carries). Only peers named by :data:`ACCOUNTED`
    routing ids are kept.
    """

    def __init__(self) -> None:
        self.entries: dict[bytes, Entry] = {}
        #: Why connections ended, all peers (hostile and killed ones included), by kind.
        self.ends = Counter[str]()

    def entry(self, pipe: Pipe) -> Entry | None:
        peer = pipe.peer
        return None if peer is None else self.entries.get(peer.identity)

    def pipe_connected(self, pipe: Pipe) -> None:
        peer = pipe.peer
        if peer is not None and peer.identity.startswith(ACCOUNTED):
            entry = self.entries.setdefault(peer.identity, Entry())
            entry.connections += 1
            entry.current = [0, 0]
            if len(entry.history) < HISTORY:
                entry.history.append(f"{time.time():.3f} handshake {pipe.endpoint} {peer.address}")

    def pipe_disconnected(self, pipe: Pipe, reason: str) -> None:
        self.ends[reason_kind(reason)] += 1
        entry = self.entry(pipe)
        if entry is not None:  # (None also for a peer already forgotten)
            entry.ends.append(reason)
            if len(entry.history) < HISTORY:
                accepted, written = entry.current
                entry.history.append(
                    f"{time.time():.3f} end: {reason} (accepted {accepted}, wrote {written})"
                )

    def on_receive_batch(self, pipe: Pipe, messages: list[Message]) -> list[Message]:
        entry = self.entry(pipe)
        if entry is not None:
            entry.accepted += len(messages)
            entry.current[0] += len(messages)
        return messages

    def before_send_batch(self, pipe: Pipe, messages: list[Message]) -> None:
        entry = self.entry(pipe)
        if entry is not None:
            entry.written += len(messages)
            entry.current[1] += len(messages)


def ledger_of(entry: Entry | None) -> dict[str, object] | None:
    """An entry as the checker reads it, the current connection's counts in its history."""
    if entry is None:
        return None
    data = asdict(entry)
    accepted, written = data.pop("current")
    data["history"].append(f"{time.time():.3f} now (accepted {accepted}, wrote {written})")
    return data


async def main() -> None:
    options = {"max_message_size": 1 << 20, "handshake_ivl": 3.0, "heartbeat_ivl": 1.0}
    ledger = Ledger()
    refused = Counter[str]()  # HandshakeFailed reasons, by kind
    async with zmtp.Socket(zmtp.ROUTER, **options) as router, anyio.create_task_group() as tg:
        router.install_extension(ledger)
        monitor = router.monitor()
        tcp = await router.bind("tcp://127.0.0.1:*")
        ipc = await router.bind("ipc://*")
        echoed = 0

        async def echo() -> None:
            nonlocal echoed
            entries = ledger.entries
            async for message in router:
                entry = entries.get(message[0])
                if entry is not None:
                    entry.delivered += 1
                await router.send_multipart(message)  # a full peer loses its copy (ROUTER)
                echoed += 1

        lag = [0.0]  # the event loop's longest lateness since the last ``stats``

        async def sample_lag() -> None:
            """How late a 0.1 s sleep wakes up: how starved the victim's loop is (a heartbeat
            timeout of 1 s fires on a loop that is over 1 s late, whatever the peer did)."""
            while True:
                start = anyio.current_time()
                await anyio.sleep(0.1)
                lag[0] = max(lag[0], anyio.current_time() - start - 0.1)

        async def watch() -> None:
            async for event in monitor:
                if isinstance(event, zmtp.HandshakeFailed):
                    refused[f"{event.kind}: {reason_kind(event.reason)}"] += 1

        tg.start_soon(echo)
        tg.start_soon(watch)
        tg.start_soon(sample_lag)
        print(json.dumps({"tcp": tcp, "ipc": ipc}), flush=True)
        async for line in anyio.wrap_file(sys.stdin):
            command, *args = line.split()
            await anyio.sleep(0)
            if command == "stats":
                answer: object = {
                    "rss_kib": rss_kib(),
                    "fds": open_fds(),
                    "tasks": task_count(),
                    "peers": len(router.peers),
                    "echoed": echoed,
                    "ledger": len(ledger.entries),
                    "lag_ms": int(1000 * lag[0]),
                }
                lag[0] = 0.0
            elif command == "forget":
                ledger.entries.pop(args[0].encode(), None)
                continue
            elif command == "ledger":
                entries = ledger.entries
                answer = {name: ledger_of(entries.get(name.encode())) for name in args}
            elif command == "ends":
                answer = {"disconnected": dict(ledger.ends), "handshake_failed": dict(refused)}
            else:
                break
            print(json.dumps(answer), flush=True)
        monitor.close()
        tg.cancel_scope.cancel()


if __name__ == "__main__":
    anyio.run(main, backend=sys.argv[1])
