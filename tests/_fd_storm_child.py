"""Child process of tests/test_hardening_fds.py: a PULL server whose descriptor limit is low.

``python -m tests._fd_storm_child BACKEND TRANSPORT NOFILE``. Prints ``endpoint ...``, then one
line per event the parent waits for: ``msg <body>`` per message received, ``accept-failed
<reason>`` for the first accept failure, and ``exit ok`` (or a traceback) when it receives
``quit``. The socket must survive the parent's connection storm and keep serving.
"""

from __future__ import annotations

import resource
import sys

import anyio

import zmtp


def say(line: str) -> None:
    print(line, flush=True)


async def main(transport: str, nofile: int) -> None:
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (nofile, hard))
    async with zmtp.Socket(zmtp.PULL) as pull, anyio.create_task_group() as tg:
        monitor = pull.monitor()

        async def report() -> None:
            async for event in monitor:
                if isinstance(event, zmtp.AcceptFailed):
                    say(f"accept-failed {event.reason}")
                    return

        tg.start_soon(report)
        endpoint = await pull.bind(
            f"{transport}://127.0.0.1:*" if transport == "tcp" else "ipc://*"
        )
        say(f"endpoint {endpoint}")
        while True:
            body = await pull.recv()
            if body == b"quit":
                break
            say(f"msg {body.decode()}")
        tg.cancel_scope.cancel()
    say("exit ok")


if __name__ == "__main__":
    anyio.run(main, sys.argv[2], int(sys.argv[3]), backend=sys.argv[1])
