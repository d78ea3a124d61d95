"""Smoke test of benchmarks/sender_sockets.py (K zmtp PUSH sockets in one task -> a pyzmq
PULL process): its measured program (``--child``) and its native harness run with a few
sockets and messages per backend, so the script cannot rot; the valgrind harness
(``--callgrind``) is not run by the suite (minutes under callgrind). Nothing about speed is
asserted."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from ._bench_run import BENCHMARKS

# A benchmark run in subprocesses: bounded by its own timeouts, not the suite's 60 s per
# test (a loaded machine runs it several times slower).
pytestmark = pytest.mark.timeout(600)

SCRIPT = str(BENCHMARKS / "sender_sockets.py")


@pytest.mark.parametrize("context", [False, True])
@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_sender_sockets_child_delivers_everything(backend: str, context: bool) -> None:
    """The measured program returns only once the PULL has counted every message (sockets
    entered one by one, or made by one ``zmtp.Context``)."""
    proc = subprocess.run(
        [
            sys.executable,
            SCRIPT,
            "--child",
            "--messages",
            "600",
            "--sockets",
            "3",
            "--backend",
            backend,
            *(["--context"] if context else []),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    assert set(result) == {"cpu_us_per_msg", "segments_per_msg", "msgs_per_s"}
    assert result["cpu_us_per_msg"] > 0 and result["msgs_per_s"] > 0, result
    assert result["segments_per_msg"] > 0, result  # the connections were found and wrote


def test_sender_sockets_native_harness_prints_its_tables() -> None:
    proc = subprocess.run(
        [sys.executable, SCRIPT, "--messages", "300", "--sockets", "2", "--cycles", "1"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "2 zmtp PUSH sockets in one task -> pyzmq PULL" in proc.stdout
    assert "sender CPU us/msg" in proc.stdout and "TCP segments/msg" in proc.stdout
