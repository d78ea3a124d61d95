"""``python -m zmtp_qos worker`` in a real subprocess: SIGTERM drains and exits 0 (the jobs
taken complete and their COMP reaches the producer), a second signal kills (exit 130), the
jobs not taken are run by a worker started again with the same identity; --help; bad usage."""

from __future__ import annotations

import signal
import subprocess
import sys
import threading
from pathlib import Path
from typing import IO

import anyio
import pytest

import zmtp
import zmtp_qos
from zmtp_qos import Delivered, Receipt

ROOT = Path(__file__).resolve().parent.parent
DEADLINE = 60.0


def worker_command(*args: str) -> list[str]:
    return [sys.executable, "-m", "zmtp_qos", "worker", *args]


class WorkerProcess:
    """A worker subprocess; threads collect its stdout and stderr lines."""

    def __init__(self, *args: str) -> None:
        self.proc = subprocess.Popen(
            worker_command(*args),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            cwd=ROOT,
        )
        self.lines: list[str] = []
        self.err: list[str] = []
        self._readers = [
            threading.Thread(target=self._read, args=(self.proc.stdout, self.lines), daemon=True),
            threading.Thread(target=self._read, args=(self.proc.stderr, self.err), daemon=True),
        ]
        for reader in self._readers:
            reader.start()

    @staticmethod
    def _read(stream: IO[str] | None, into: list[str]) -> None:
        assert stream is not None
        for line in stream:
            into.append(line.rstrip("\n"))

    async def wait_lines(self, prefix: str, count: int, err: bool = False) -> None:
        """Until ``count`` lines of stdout (stderr) contain ``prefix`` (the caller's
        fail_after bounds it)."""
        lines = self.err if err else self.lines
        while sum(prefix in line for line in lines) < count:
            if self.proc.poll() is not None:
                raise AssertionError(f"worker ended: {self.stderr()}")
            await anyio.sleep(0.01)

    async def exit_status(self) -> int:
        status: int = await anyio.to_thread.run_sync(lambda: self.proc.wait(DEADLINE))
        for reader in self._readers:
            await anyio.to_thread.run_sync(reader.join, DEADLINE)
        return status

    def stderr(self) -> str:
        return "\n".join(self.err)

    def finish(self) -> None:
        """Make sure it has ended and its output is collected."""
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        for reader in self._readers:
            reader.join(DEADLINE)
        for stream in (self.proc.stdout, self.proc.stderr):
            if stream is not None:
                stream.close()


async def send_jobs(push: zmtp_qos.Socket, names: list[str], seconds: float) -> list[Receipt]:
    receipts = []
    for name in names:
        receipt = await push.send_multipart([name.encode(), str(seconds).encode()])
        assert receipt is not None
        receipts.append(receipt)
    return receipts


@pytest.mark.anyio
async def test_sigterm_drains_exits_0_and_the_rest_runs_on_restart(anyio_backend: str) -> None:
    names = [f"job{i}" for i in range(6)]
    identity = f"cli-worker-{anyio_backend}"
    with anyio.fail_after(DEADLINE):
        async with zmtp_qos.Socket(zmtp.PUSH, qos=3) as push:
            ep = await push.bind("tcp://127.0.0.1:*")
            args = ("tests._worker_jobs:slow", "--connect", ep, "--concurrency", "2")
            args += ("--prefetch", "2", "--identity", identity, "--backend", anyio_backend)
            first = WorkerProcess(*args)
            try:
                receipts = await send_jobs(push, names, 0.5)
                await first.wait_lines("start", 2)
                first.proc.send_signal(signal.SIGTERM)
                assert await first.exit_status() == 0, first.stderr()
                err = first.stderr()
            finally:
                first.finish()
            started = [line.split()[1] for line in first.lines if line.startswith("start")]
            assert len(started) == 2
            # The two taken jobs completed, and their COMP had reached us before it exited.
            for name, receipt in zip(names, receipts, strict=True):
                assert receipt.done == (name in started), name
                if name in started:
                    assert isinstance(receipt.outcome, Delivered)
            assert "concurrency=2" in err and "prefetch=2" in err and "stopping" in err
            assert "status:" not in err  # stderr is not a terminal
            second = WorkerProcess(*args)
            try:
                outcomes = [await r for r in receipts]
                await second.wait_lines("done", 4)
                second.proc.send_signal(signal.SIGINT)
                assert await second.exit_status() == 0, second.stderr()
            finally:
                second.finish()
    assert all(isinstance(o, Delivered) for o in outcomes)
    ran = [line.split()[1] for line in first.lines + second.lines if line.startswith("done")]
    assert sorted(ran) == sorted(names)  # every job once: none lost, none run twice


@pytest.mark.anyio
async def test_second_signal_kills(anyio_backend: str) -> None:
    with anyio.fail_after(DEADLINE):
        async with zmtp_qos.Socket(zmtp.PUSH, qos=3) as push:
            ep = await push.bind("tcp://127.0.0.1:*")
            worker = WorkerProcess(
                "tests._worker_jobs:slow", "--connect", ep, "--backend", anyio_backend
            )
            try:
                (receipt,) = await send_jobs(push, ["long"], 600)
                await worker.wait_lines("start", 1)
                worker.proc.send_signal(signal.SIGINT)
                await worker.wait_lines("stopping gracefully", 1, err=True)
                worker.proc.send_signal(signal.SIGINT)
                assert await worker.exit_status() == 130
                err = worker.stderr()
            finally:
                worker.finish()
            assert not receipt.done  # no verdict: the producer keeps it for redelivery
    assert "killed" in err


def test_help_lists_every_option() -> None:
    result = subprocess.run(
        worker_command("--help"), capture_output=True, text=True, cwd=ROOT, timeout=DEADLINE
    )
    assert result.returncode == 0
    for option in (
        "MODULE:FUNCTION",
        "--connect",
        "--bind",
        "--concurrency",
        "--threads",
        "--prefetch",
        "--processing-timeout",
        "--identity",
        "--curve-serverkey",
        "--curve-publickey",
        "--curve-secretkey",
        "--curve-cert",
        "--backend",
        "Exit status",
    ):
        assert option in result.stdout, option


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["tests._worker_jobs:slow"], "at least one --connect or --bind"),
        (["tests._worker_jobs:missing", "-c", "tcp://127.0.0.1:1"], "has no 'missing'"),
        (["no_such_module_xyz:f", "-c", "tcp://127.0.0.1:1"], "cannot import"),
        (["tests._worker_jobs:NOT_CALLABLE", "-c", "tcp://127.0.0.1:1"], "not callable"),
        (["tests._worker_jobs", "-c", "tcp://127.0.0.1:1"], "expected MODULE:FUNCTION"),
    ],
)
def test_bad_usage_exits_2(args: list[str], message: str) -> None:
    result = subprocess.run(
        worker_command(*args), capture_output=True, text=True, cwd=ROOT, timeout=DEADLINE
    )
    assert result.returncode == 2
    assert message in result.stderr


@pytest.mark.anyio
async def test_status_line_only_on_a_terminal(anyio_backend: str) -> None:
    """stderr a pseudo-terminal: the one-line status appears; a pipe (the tests above): not."""
    import os
    import pty

    master, slave = pty.openpty()
    try:
        with anyio.fail_after(DEADLINE):
            async with zmtp_qos.Socket(zmtp.PUSH, qos=3) as push:
                ep = await push.bind("tcp://127.0.0.1:*")
                proc = subprocess.Popen(
                    worker_command(
                        "tests._worker_jobs:slow",
                        "--connect",
                        ep,
                        "--status-interval",
                        "0.2",
                        "--backend",
                        anyio_backend,
                    ),
                    stdin=subprocess.DEVNULL,
                    stdout=subprocess.DEVNULL,
                    stderr=slave,
                    cwd=ROOT,
                )
                os.close(slave)
                slave = -1
                try:
                    (receipt,) = await send_jobs(push, ["one"], 0)
                    assert isinstance(await receipt, Delivered)
                    seen = b""
                    while b"status: done 1, failed 0, in flight 0" not in seen:
                        chunk = await anyio.to_thread.run_sync(os.read, master, 4096)
                        assert chunk, seen
                        seen += chunk
                    proc.send_signal(signal.SIGTERM)
                    status = await anyio.to_thread.run_sync(lambda: proc.wait(DEADLINE))
                finally:
                    if proc.poll() is None:
                        proc.kill()
                        proc.wait()
        assert status == 0
        assert b"jobs/s" in seen
    finally:
        os.close(master)
        if slave >= 0:
            os.close(slave)
