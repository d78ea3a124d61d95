"""Issue 14, finding 2 (the engine half): a peer that floods PINGs and never reads.

The protocol keeps one pending PONG however many PINGs arrive (tests/test_protocol_limits.py).
The engine also stops reading such a peer once the PONG it owes cannot be written, as libzmq
does: the flooder's sends then block (the kernel buffers fill) instead of being parsed at line
rate forever, memory stays flat, and another peer of the same socket is still served.
"""

from __future__ import annotations

import resource
import socket
from pathlib import Path

import anyio
import pytest

import zmtp
from tests.test_engine_helpers import TIMEOUT
from zmtp.testing import wire

pytestmark = pytest.mark.anyio

#: Give up (the victim never stopped reading) after this many seconds of flooding. tcp on
#: loopback needs a few seconds: the victim's send buffer autotunes to megabytes of PONGs.
FLOOD_LIMIT = 60.0
#: The flooder counts as blocked when it could not send for this long.
STALL = 1.0


def max_rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def flooder(endpoint: str) -> socket.socket:
    """A raw PUSH peer that reads nothing (a tiny receive buffer fills with our PONGs)."""
    if endpoint.startswith("tcp://"):
        host, port = endpoint.removeprefix("tcp://").rsplit(":", 1)
        raw = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        address: object = (host, int(port))
    else:
        raw = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        address = endpoint.removeprefix("ipc://")
    raw.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    raw.connect(address)
    raw.sendall(wire.NULL_GREETING + wire.ready_command("PUSH"))
    raw.setblocking(False)
    return raw


@pytest.mark.parametrize("transport", ["tcp", "ipc"])
async def test_a_ping_flooder_that_never_reads_is_no_longer_read(
    transport: str, tmp_path: Path
) -> None:
    bind = "tcp://127.0.0.1:*" if transport == "tcp" else f"ipc://{tmp_path / 'p.sock'}"
    async with zmtp.Socket(zmtp.PULL) as pull, zmtp.Socket(zmtp.PUSH) as good:
        endpoint = await pull.bind(bind)
        await good.connect(endpoint)
        await good.send(b"first")
        with anyio.fail_after(TIMEOUT):
            assert await pull.recv() == b"first"
        rss_before = max_rss_mib()
        raw = flooder(endpoint)
        ping = wire.ping(0, b"c" * 16)  # the largest PONG: 16 bytes of context echoed
        sent = 0
        try:
            start = last_sent = anyio.current_time()
            while anyio.current_time() - last_sent < STALL:
                assert anyio.current_time() - start < FLOOD_LIMIT, (
                    f"still reading the flooder after {sent} bytes of PINGs"
                )
                try:
                    sent += raw.send(ping)  # one PING per read: each earns its own PONG
                    last_sent = anyio.current_time()
                except BlockingIOError:
                    pass
                await anyio.sleep(0)  # let the victim read it
            # The flooder is blocked; the good peer is served meanwhile.
            await good.send(b"still served")
            with anyio.fail_after(TIMEOUT):
                assert await pull.recv() == b"still served"
            assert max_rss_mib() - rss_before < 64, (rss_before, max_rss_mib())
        finally:
            raw.close()
