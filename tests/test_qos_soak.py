"""A soak with a checker: unique (sender, sequence) payloads through the fault-injecting
proxy, which cuts the connection again and again mid-stream. The checker counts
lost = acknowledged - received, duplicates delivered and unexpected messages.
Required: 0 lost at every level, 0 duplicates delivered at levels 2 and 3, with the default
options (send_hwm = recv_hwm = 1000: the in-flight cap equals the dedup capacity).
(The cuts are driven by the receiver's progress, so every run cuts mid-stream.)

Progress counts *new* messages only. Counting every delivery livelocked level 1 on asyncio
(docs/qos.md, "Soak findings"): a cut connection leaves up to ``recv_hwm`` messages queued at
the receiver whose ACKs never left, the sender re-sends them all, and delivering that backlog
of duplicates triggered the next cut before any ACK of the new connection got through.

The test suite runs 2000 messages per level; the long run is this module as a script::

    python -m tests.test_qos_soak --level 2 --count 100000 [--backend trio]
"""

from __future__ import annotations

import argparse
import random
import time
from collections import Counter
from dataclasses import dataclass

import anyio
import pytest

import zmtp
import zmtp_qos
from tests.test_qos_captures import _port
from zmtp.testing import FaultProxy
from zmtp_qos import Delivered

pytestmark = pytest.mark.anyio

COUNT = 2000


@dataclass
class SoakReport:
    level: int
    count: int
    acknowledged: int
    received: int  #: distinct messages received
    lost: int  #: acknowledged but never received
    duplicates: int  #: deliveries beyond the first
    unexpected: int  #: received but never sent
    cuts: int
    seconds: float

    def __str__(self) -> str:
        return (
            f"level {self.level}: {self.count} sent, {self.acknowledged} acknowledged, "
            f"{self.received} received, lost {self.lost}, duplicates {self.duplicates}, "
            f"unexpected {self.unexpected}, {self.cuts} cuts, {self.seconds:.1f} s"
        )


async def soak(level: int, count: int, seed: int) -> SoakReport:
    """Send ``count`` unique messages at ``level`` through a proxy that cuts the connection
    after every 20-80 new messages received; every receipt is awaited."""
    rng = random.Random(seed)
    received: Counter[bytes] = Counter()
    cuts = 0
    started = time.monotonic()
    async with zmtp_qos.Socket(zmtp.PULL, qos=level, identity=b"soak-pull") as pull:
        ep = await pull.bind("tcp://127.0.0.1:*")
        async with (
            FaultProxy("127.0.0.1", _port(ep)) as proxy,
            zmtp_qos.Socket(
                zmtp.PUSH, qos=level, identity=b"soak-push", reconnect_ivl=0.01, linger=0
            ) as push,
        ):
            await push.connect(proxy.endpoint)
            sent = [b"soak-push:%d" % i for i in range(count)]

            async def receive_and_cut() -> None:
                nonlocal cuts
                next_cut = rng.randint(20, 80)
                while len(received) < count:
                    if level == 3:
                        handle = await pull.recv_handle()
                        handle.complete()
                        parts = handle.parts[0]
                    else:
                        parts = await pull.recv()
                    received[parts] += 1
                    if received[parts] == 1 and len(received) >= next_cut:
                        proxy.cut()
                        cuts += 1
                        next_cut += rng.randint(20, 80)

            async with anyio.create_task_group() as tg:
                tg.start_soon(receive_and_cut)
                receipts = [await push.send(m) for m in sent]
                outcomes = [await r for r in receipts]  # type: ignore[misc]
            acknowledged = {
                m for m, o in zip(sent, outcomes, strict=True) if isinstance(o, Delivered)
            }
    return SoakReport(
        level=level,
        count=count,
        acknowledged=len(acknowledged),
        received=len(received),
        lost=len(acknowledged - set(received)),
        duplicates=sum(n - 1 for n in received.values()),
        unexpected=len(set(received) - set(sent)),
        cuts=cuts,
        seconds=time.monotonic() - started,
    )


@pytest.mark.parametrize("level", [1, 2, 3])
async def test_soak_through_cutting_proxy(level: int) -> None:
    with anyio.fail_after(120):
        report = await soak(level, COUNT, seed=level)
    assert report.cuts >= 5
    assert report.acknowledged == COUNT
    assert report.lost == 0
    assert report.unexpected == 0
    if level >= 2:
        assert report.duplicates == 0


def main() -> None:
    parser = argparse.ArgumentParser(description="The long QoS soak (docs/qos.md).")
    parser.add_argument("--level", type=int, choices=(1, 2, 3), action="append")
    parser.add_argument("--count", type=int, default=100_000)
    parser.add_argument("--backend", choices=("asyncio", "trio"), default="asyncio")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    failed = False
    for level in args.level or [2]:
        report = anyio.run(soak, level, args.count, args.seed, backend=args.backend)
        print(f"{args.backend} {report}", flush=True)
        bad = report.lost or report.unexpected or (level >= 2 and report.duplicates)
        failed = failed or bool(bad) or report.acknowledged != args.count
    raise SystemExit(1 if failed else 0)


if __name__ == "__main__":
    main()
