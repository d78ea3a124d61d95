"""A ``zmtp_qos`` peer in its own process, for the ``zmtp cat --qos`` tests.

python -m tests._qos_peer pull LEVEL COUNT BACKEND
    binds a PULL at LEVEL on tcp://127.0.0.1:*, prints ``bound ENDPOINT``, then each of
    COUNT messages (parts joined by a space); level 3 completes each one printed.
python -m tests._qos_peer push LEVEL ENDPOINT BACKEND MESSAGE...
    connects a PUSH at LEVEL, sends each MESSAGE, awaits every receipt and prints its
    outcome's class name (Delivered / DeadLetter) per message.
"""

from __future__ import annotations

import sys

import anyio

import zmtp_qos


async def pull(level: int, count: int) -> None:
    async with zmtp_qos.Socket("PULL", qos=level, linger=1.0) as sock:
        print("bound", await sock.bind("tcp://127.0.0.1:*"), flush=True)
        for _ in range(count):
            with anyio.fail_after(60):
                if level == 3:
                    handle = await sock.recv_handle()
                    print(b" ".join(handle.parts).decode(), flush=True)
                    handle.complete()
                else:
                    print(b" ".join(await sock.recv_multipart()).decode(), flush=True)


async def push(level: int, endpoint: str, messages: list[str]) -> None:
    async with zmtp_qos.Socket("PUSH", qos=level, linger=1.0) as sock:
        await sock.connect(endpoint)
        receipts = [await sock.send_multipart([m.encode()]) for m in messages]
        with anyio.fail_after(60):
            for receipt in receipts:
                assert receipt is not None
                print(type(await receipt).__name__, flush=True)


def main(argv: list[str]) -> None:
    role, level, backend = argv[0], int(argv[1]), argv[3]
    if role == "pull":
        anyio.run(pull, level, int(argv[2]), backend=backend)
    else:
        anyio.run(push, level, argv[2], argv[4:], backend=backend)


if __name__ == "__main__":
    main(sys.argv[1:])
