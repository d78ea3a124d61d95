"""A plain level-3 PULL receive loop in its own process, for the producer's fault tests.

    python -m tests.qos_worker_proc ENDPOINT --identity ID --out FILE [--concurrency N]
        [--sleep SECONDS] [--hang] [--backend asyncio|trio]

It connects to ``ENDPOINT``, runs ``--concurrency`` tasks that each take a handle, write
``start JOB`` to ``--out``, sleep ``--sleep`` seconds, write ``done JOB`` and answer COMP
(``JOB`` is the job's first part). With ``--hang`` a task writes ``start JOB`` and never gives
a verdict (a worker stuck, or about to be killed, with jobs in flight). Every line is flushed
at once, so a SIGKILL loses nothing that was written; ``got JOB`` also goes to stdout, for a
test that waits for the jobs to arrive. Not a Worker class: ``zmtp_qos.Worker`` is tested on
its own.
"""

from __future__ import annotations

import argparse
import sys
from typing import TextIO

import anyio

import zmtp
import zmtp_qos


async def serve(args: argparse.Namespace, out: TextIO) -> None:
    async with zmtp_qos.Socket(
        zmtp.PULL, qos=3, identity=args.identity.encode(), recv_hwm=args.recv_hwm, linger=0
    ) as pull:
        await pull.connect(args.endpoint)

        async def loop() -> None:
            while True:
                handle = await pull.recv()
                job = handle.parts[0].decode()
                out.write(f"start {job}\n")
                out.flush()
                # After the file line: a test that SIGKILLs on the last "got" finds every start.
                print(f"got {job}", flush=True)
                if args.hang:
                    continue  # no verdict, ever
                await anyio.sleep(args.sleep)
                out.write(f"done {job}\n")
                out.flush()
                handle.complete()

        async with anyio.create_task_group() as tg:
            for _ in range(args.concurrency):
                tg.start_soon(loop)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("endpoint")
    ap.add_argument("--identity", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--concurrency", type=int, default=1)
    ap.add_argument("--sleep", type=float, default=0.0)
    ap.add_argument("--recv-hwm", type=int, default=1000)
    ap.add_argument("--hang", action="store_true")
    ap.add_argument("--backend", default="asyncio", choices=("asyncio", "trio"))
    args = ap.parse_args(argv)
    with open(args.out, "a", encoding="utf-8") as out:
        anyio.run(serve, args, out, backend=args.backend)


if __name__ == "__main__":
    sys.exit(main())
