"""Running ``zmtp`` subcommands as subprocesses in tests: to the end (:func:`run_zmtp`,
:func:`cat`, and :func:`piped_into_zmtp` behind a shell pipe), or alongside the test
(:class:`Tool`: lines read by threads, waited for with a deadline, never a sleep; Ctrl-C as
SIGINT). Also the pyzmq :func:`context` fixture the CLI tests talk to their peers with (import
it into the test module to use it)."""

from __future__ import annotations

import queue
import shlex
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import IO

import pytest

ROOT = Path(__file__).resolve().parent.parent
#: Generous: the machine is shared and loaded.
DEADLINE = 60.0


def zmtp_command(*args: str) -> list[str]:
    return [sys.executable, "-m", "zmtp", *args]


def run_zmtp(*args: str, stdin: str = "", timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """``zmtp ARGS`` run to its end from the repository root, ``stdin`` fed to it (empty: the
    tool sees end of input at once), stdout and stderr captured; any exit status returned."""
    return subprocess.run(
        zmtp_command(*args),
        input=stdin,
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=ROOT,
        check=False,
    )


def piped_into_zmtp(
    producer: str, *args: str, timeout: float = 90
) -> subprocess.CompletedProcess[str]:
    """``PRODUCER | zmtp ARGS`` through the shell (``seq 5 | zmtp cat PUSH ...``: a real pipe,
    its end of input included), from the repository root; stdout and stderr captured."""
    command = " ".join([producer, "|", *map(shlex.quote, zmtp_command(*args))])
    return subprocess.run(
        command, shell=True, capture_output=True, text=True, timeout=timeout, cwd=ROOT, check=False
    )


def cat(*args: str, stdin: str = "", timeout: float = 90) -> subprocess.CompletedProcess[str]:
    """``zmtp cat ARGS`` run to its end (see :func:`run_zmtp`)."""
    return run_zmtp("cat", *args, stdin=stdin, timeout=timeout)


@pytest.fixture
def context() -> Iterator[object]:
    """A pyzmq context for the test's peers, destroyed (linger 0) when the test ends."""
    zmq = pytest.importorskip("zmq")
    ctx = zmq.Context()
    yield ctx
    ctx.destroy(linger=0)


class Tool:
    """A running ``zmtp`` subcommand. Its stdout and stderr lines are collected by threads;
    :meth:`wait_for` returns the first new line matching a predicate."""

    def __init__(
        self,
        args: Sequence[str],
        stdin: int | None = subprocess.DEVNULL,
        command: Sequence[str] | None = None,
    ) -> None:
        """``zmtp ARGS``; or, with ``command``, that program instead (``args`` unused)."""
        self.proc = subprocess.Popen(
            list(command) if command is not None else zmtp_command(*args),
            stdin=stdin,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            cwd=ROOT,
        )
        self.out: list[str] = []
        self.err: list[str] = []
        self._lines: queue.Queue[tuple[str, str | None]] = queue.Queue()
        self._cursor = {"out": 0, "err": 0}  # lines of each stream already looked at
        self._closed: set[str] = set()
        assert self.proc.stdout is not None and self.proc.stderr is not None
        self._readers = [
            threading.Thread(target=self._read, args=("out", self.proc.stdout), daemon=True),
            threading.Thread(target=self._read, args=("err", self.proc.stderr), daemon=True),
        ]
        for reader in self._readers:
            reader.start()

    def _read(self, name: str, stream: IO[str]) -> None:
        for line in stream:
            self._lines.put((name, line.rstrip("\n")))
        self._lines.put((name, None))

    def wait_for(
        self, match: Callable[[str], bool], stream: str = "out", timeout: float = DEADLINE
    ) -> str:
        """The next line of ``stream`` ("out" or "err") for which ``match`` is true."""
        deadline = time.monotonic() + timeout
        lines = self.out if stream == "out" else self.err
        while True:
            while self._cursor[stream] < len(lines):
                line = lines[self._cursor[stream]]
                self._cursor[stream] += 1
                if match(line):
                    return line
            if stream in self._closed:
                raise EOFError(f"{stream} closed; out={self.out} err={self.err}")
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError(f"no matching line in {timeout}s; out={self.out} err={self.err}")
            try:
                name, line = self._lines.get(timeout=remaining)
            except queue.Empty:
                continue
            if line is None:
                self._closed.add(name)
            else:
                (self.out if name == "out" else self.err).append(line)

    def interrupt(self, timeout: float = DEADLINE) -> int:
        """Ctrl-C: SIGINT, then wait for the exit; returns the exit status."""
        self.proc.send_signal(signal.SIGINT)
        return self.finish(timeout)

    def finish(self, timeout: float = DEADLINE) -> int:
        """Wait for the exit and for every line; returns the exit status."""
        status = self.proc.wait(timeout)
        for reader in self._readers:
            reader.join(timeout)
        while not self._lines.empty():
            name, line = self._lines.get()
            if line is not None:
                (self.out if name == "out" else self.err).append(line)
        return status

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(DEADLINE)
