"""QoS 1 fail-over when a PULL in another process is SIGKILLed mid-stream: every message is
acknowledged by someone, and what the survivor acknowledged it received."""

from __future__ import annotations

import os
import signal
import subprocess
import sys

import anyio
import pytest

import zmtp
import zmtp_qos
from zmtp_qos import Delivered

pytestmark = pytest.mark.anyio

VICTIM = r"""
import sys, anyio, zmtp, zmtp_qos

async def main():
    # Small reads: a read delivers (and ACKs) a handful of messages, and once recv_hwm are
    # waiting the connection stops reading, whatever size the sender's writes were.
    async with zmtp_qos.Socket(zmtp.PULL, qos=1, recv_hwm=5, read_size=64) as pull:
        await pull.connect(sys.argv[1])
        print(await pull.recv(), flush=True)  # then stall: the rest stays un-ACKed
        await anyio.sleep_forever()

anyio.run(main, backend=sys.argv[2])
"""

COUNT = 300


async def test_level1_fail_over_when_a_pull_process_is_sigkilled(anyio_backend: str) -> None:
    backend = anyio_backend if isinstance(anyio_backend, str) else anyio_backend[0]
    with anyio.fail_after(60):
        async with zmtp_qos.Socket(zmtp.PUSH, qos=1, send_hwm=10_000, linger=0) as push:
            events = push.monitor()
            ep = await push.bind("tcp://127.0.0.1:*")
            victim = await anyio.open_process(
                [sys.executable, "-c", VICTIM, ep, backend],
                env={**os.environ, "PYTHONPATH": os.getcwd()},
                stdout=subprocess.PIPE,
            )
            try:
                await events.wait_for(zmtp.HandshakeSucceeded)
                receipts = [await push.send(b"%d" % i) for i in range(COUNT)]
                assert victim.stdout is not None
                await victim.stdout.receive()  # it got at least one: we are mid-stream
                # Its recv returning is not the push hearing its ACK: the victim queues the
                # ACK for its connection's writer task, which (on a loaded machine) may not
                # have run yet when it is killed; everything then fails over and the survivor
                # acknowledges all of it. Wait for the ACK of the message it printed: the
                # victim is alive and idle, so it comes, and only the victim can send it.
                first = await receipts[0]  # type: ignore[misc]
                assert isinstance(first, Delivered), first
                async with zmtp_qos.Socket(zmtp.PULL, qos=1) as survivor:
                    await survivor.connect(ep)
                    await events.wait_for(zmtp.HandshakeSucceeded)
                    victim.send_signal(signal.SIGKILL)
                    outcomes = [await r for r in receipts]  # type: ignore[misc]
                    assert all(isinstance(o, Delivered) for o in outcomes)
                    names = {o.peer for o in outcomes}  # type: ignore[union-attr]
                    assert len(names) == 2, names  # both peers acknowledged some
                    survivor_name = survivor_address(push)
                    expected = {
                        b"%d" % i
                        for i, o in enumerate(outcomes)
                        if o.peer == survivor_name  # type: ignore[union-attr]
                    }
                    got: set[bytes] = set()
                    while not expected <= got:
                        got.add(await survivor.recv())
            finally:
                if victim.returncode is None:
                    victim.kill()
                await victim.wait()


def survivor_address(push: zmtp_qos.Socket) -> str:
    peers = push.raw.peers
    assert len(peers) == 1  # the victim is gone
    return peers[0].address
