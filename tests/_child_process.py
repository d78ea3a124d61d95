"""A child Python process driven line by line, with a deadline on every wait (the hardening
tests run their victim in a subprocess so that its descriptor limit or memory is its own)."""

from __future__ import annotations

import os
import selectors
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


class Child:
    """``python -m MODULE ARGS...`` with stdout read line by line."""

    def __init__(self, module: str, *args: str) -> None:
        env = dict(os.environ, PYTHONPATH=str(ROOT))
        self.proc = subprocess.Popen(
            [sys.executable, "-m", module, *args],
            cwd=ROOT,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        assert self.proc.stdout is not None
        self._selector = selectors.DefaultSelector()
        self._selector.register(self.proc.stdout, selectors.EVENT_READ)
        self._buffer = b""
        self.lines: list[str] = []

    def _read_line(self, deadline: float) -> str | None:
        assert self.proc.stdout is not None
        while b"\n" not in self._buffer:
            left = deadline - time.monotonic()
            if left <= 0 or not self._selector.select(left):
                return None
            chunk = os.read(self.proc.stdout.fileno(), 65536)
            if not chunk:
                return None
            self._buffer += chunk
        line, self._buffer = self._buffer.split(b"\n", 1)
        text = line.decode()
        self.lines.append(text)
        return text

    def expect(self, prefix: str, timeout: float = 20.0) -> str:
        """The next line starting with ``prefix`` (earlier lines are kept in ``lines``)."""
        deadline = time.monotonic() + timeout
        while True:
            line = self._read_line(deadline)
            if line is None:
                raise AssertionError(
                    f"child did not print {prefix!r}; printed {self.lines!r}; stderr:\n"
                    + self.stderr()
                )
            if line.startswith(prefix):
                return line[len(prefix) :].strip()

    def stderr(self) -> str:
        if self.proc.poll() is None:
            return "(still running)"
        assert self.proc.stderr is not None
        return self.proc.stderr.read().decode(errors="replace")

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(10)
        self._selector.close()
        for stream in (self.proc.stdout, self.proc.stderr):
            if stream is not None:
                stream.close()
