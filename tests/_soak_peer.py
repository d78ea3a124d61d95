"""A peer process of the soak (tests/_soak.py), killed with SIGKILL at a random moment.

``python -m tests._soak_peer BACKEND ENDPOINT SEED``: opens a few connections to the soak's
ROUTER echo server with :class:`zmtp.testing.RawPeer` and keeps them busy until it is killed:
some stream messages and read their echoes, some stop reading (slow readers), some misbehave
(PING floods, a frame header announcing 2^40 bytes and then silence). Prints ``ready`` once
every connection is open, so the driver kills a process with live connections mid-stream; the
kernel then closes them as it does for any crashed process.
"""

from __future__ import annotations

import contextlib
import random
import sys

import anyio

from zmtp.testing import STREAM_ERRORS, RawPeer

KINDS = ("streaming", "slow-reader", "ping-flood", "stalled-frame")


async def one(endpoint: str, kind: str, ready: anyio.Event, counter: list[int]) -> None:
    counted = False

    def connected() -> None:  # (or failed to): "ready" once each connection got this far
        nonlocal counted
        if not counted:
            counted = True
            counter[0] -= 1
            if counter[0] == 0:
                ready.set()

    # The victim may drop any connection (a hostile one, or one whose handshake a loaded
    # machine made miss handshake_ivl): that connection's end, not the process's.
    try:
        with contextlib.suppress(*STREAM_ERRORS):
            peer = await RawPeer.connect(endpoint)
            peer.timeout = None
            await peer.handshake("DEALER")
            connected()
            await busy(peer, kind)  # until the driver kills us
    finally:
        connected()
    await anyio.sleep_forever()


async def busy(peer: RawPeer, kind: str) -> None:
    if kind == "streaming":
        i = 0
        while True:
            await peer.send(peer.message(b"doomed-%d" % i))
            if i % 10 == 9:  # one echo in; the victim's heartbeat PINGs are skipped
                while (await peer.read_item())[0] != "message":
                    pass
            i += 1
    elif kind == "slow-reader":
        while True:
            await peer.send(peer.message(b"x" * 512))
    elif kind == "ping-flood":
        ping = peer.command(b"PING", b"\x00\x00")
        while True:
            await peer.send(ping * 1000)
    else:
        await peer.send(peer.frame_header(1 << 40))
        await anyio.sleep_forever()


async def main(endpoint: str, seed: int) -> None:
    rng = random.Random(seed)
    kinds = [rng.choice(KINDS) for _ in range(rng.randint(1, 4))]
    ready = anyio.Event()
    counter = [len(kinds)]
    async with anyio.create_task_group() as tg:
        for kind in kinds:
            tg.start_soon(one, endpoint, kind, ready, counter)
        await ready.wait()
        print("ready", " ".join(kinds), flush=True)


if __name__ == "__main__":
    anyio.run(main, sys.argv[2], int(sys.argv[3]), backend=sys.argv[1])
