"""HWM back-pressure with a peer that never ACKs, measured as a real process's RSS
(docs/qos-protocol.md §5.3): a sender blocked at ``send_hwm`` keeps its memory flat however
many more messages are offered to it. (``tests/test_qos_bounds.py`` checks the same with
tracemalloc in-process; this one counts every byte the process holds, allocator included.)

The victim is a subprocess: a level-2 PUSH with ``send_hwm=50`` facing a raw peer (in the
same process) that reads every byte and never ACKs. It fills the cap, then offers many more
100 kB messages, each timing out (``send_timeout``), sampling its ``VmRSS`` from
``/proc/self/status`` as it goes, and prints the figures as JSON.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import anyio
import pytest

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.skipif(not os.path.exists("/proc/self/status"), reason="needs Linux /proc"),
]

SIZE = 100_000
HWM = 50
OFFERS = 1000  #: 100 MB if the offered messages were kept

VICTIM = r"""
import contextlib, json, sys
import anyio, zmtp, zmtp_qos
from tests.test_qos_captures import _port
from tests.test_qos_reconnect import _raw_peer

SIZE, HWM, OFFERS = (int(a) for a in sys.argv[2:5])


def rss_kb():
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise RuntimeError("no VmRSS")


async def main():
    async with zmtp_qos.Socket(
        zmtp.PUSH, qos=2, send_hwm=HWM, send_timeout=0.001, linger=0
    ) as push:
        events = push.monitor()
        ep = await push.bind("tcp://127.0.0.1:*")
        raw = await _raw_peer(_port(ep), b"PULL", b"receiver-A", 2)
        async with raw, anyio.create_task_group() as tg:

            async def drain():  # reads every byte, never answers
                with contextlib.suppress(anyio.EndOfStream, anyio.ClosedResourceError):
                    while True:
                        await raw.receive()

            tg.start_soon(drain)
            await events.wait_for(zmtp.HandshakeSucceeded)
            for n in range(HWM):
                await push.send(b"%08d" % n + bytes(SIZE))
            refused = 0
            samples = [rss_kb()]
            for n in range(OFFERS):
                try:
                    await push.send(b"%08d" % (HWM + n) + bytes(SIZE))
                except zmtp.TimedOut:
                    refused += 1
                if n % 50 == 49:
                    samples.append(rss_kb())
            print(json.dumps({
                "at_cap_kb": samples[0], "max_kb": max(samples), "samples": samples,
                "refused": refused, "in_flight": push.stats().in_flight,
            }), flush=True)
            tg.cancel_scope.cancel()


anyio.run(main, backend=sys.argv[1])
"""


async def test_sender_rss_stays_flat_beyond_send_hwm(anyio_backend: str) -> None:
    backend = anyio_backend if isinstance(anyio_backend, str) else anyio_backend[0]
    with anyio.fail_after(120):
        result = await anyio.run_process(
            [sys.executable, "-c", VICTIM, backend, str(SIZE), str(HWM), str(OFFERS)],
            env={**os.environ, "PYTHONPATH": os.getcwd()},
            stderr=subprocess.PIPE,
        )
    figures = json.loads(result.stdout.decode().strip().splitlines()[-1])
    growth_kb = figures["max_kb"] - figures["at_cap_kb"]
    # Keeping the offered messages would add OFFERS * SIZE = 100 MB; allow allocator noise.
    assert growth_kb < 10_000, figures
    assert figures["refused"] == OFFERS, figures  # every offer beyond the cap was refused
    assert figures["in_flight"] == HWM
