"""Smoke tests of benchmarks/callgrind_fanout.py, callgrind_receiver.py, callgrind_sync.py,
callgrind_sender.py and callgrind_roundtrip.py: their measured programs (``--child``: a zmtp
PUB and pyzmq SUB processes, every message delivered; a zmtp PULL fed by pyzmq PUSH sockets; a
zmtp ROUTER or DEALER with a pyzmq peer, or inproc in one process; one ping-pong side against a
native peer, in its counting mode) run natively here; the valgrind harness around them is not
run by the suite (minutes under callgrind). Nothing about speed is asserted."""

from __future__ import annotations

import subprocess
import sys

import pytest

from ._bench_run import BENCHMARKS

# A benchmark run in subprocesses: bounded by its own timeouts, not the suite's 60 s per
# test (a loaded machine runs it several times slower).
pytestmark = pytest.mark.timeout(600)


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_callgrind_fanout_child_delivers_everything(backend: str) -> None:
    proc = subprocess.run(
        [
            sys.executable,
            str(BENCHMARKS / "callgrind_fanout.py"),
            "--child",
            "--messages",
            "300",
            "--subscribers",
            "3",
            "--backend",
            backend,
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
@pytest.mark.parametrize(("peers", "read_size"), [(1, 256 * 1024), (4, 1024)])
def test_callgrind_receiver_child_receives_everything(
    backend: str, peers: int, read_size: int
) -> None:
    """benchmarks/callgrind_receiver.py's measured program: a zmtp PULL fed by pyzmq PUSH
    sockets in another process; it returns only once it has received every message (also
    with small reads, ``--read-size``, whose frames straddle reads)."""
    proc = subprocess.run(
        [
            sys.executable,
            str(BENCHMARKS / "callgrind_receiver.py"),
            "--child",
            "--messages",
            "300",
            "--peers",
            str(peers),
            "--backend",
            backend,
            "--read-size",
            str(read_size),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
@pytest.mark.parametrize("pattern", ["router", "dealer", "push", "inproc"])
def test_callgrind_sender_child_sends_everything(backend: str, pattern: str) -> None:
    """benchmarks/callgrind_sender.py's measured program: a zmtp ROUTER, DEALER or PUSH sending to
    a pyzmq peer process, which reports once it has every message, or inproc PUSH -> PULL in
    one process, which receives every message."""
    script = str(BENCHMARKS / "callgrind_sender.py")
    options = ["--pattern", pattern, "--messages", "300", "--backend", backend]
    proc = subprocess.run(
        [sys.executable, script, "--child", *options], capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
@pytest.mark.parametrize("side", ["req", "rep", "raw-client", "raw-server"])
def test_callgrind_roundtrip_counts_every_side(backend: str, side: str) -> None:
    """benchmarks/callgrind_roundtrip.py's counting mode (the measured side natively, twice,
    against a native peer): it completes every round trip and prints its per-round-trip
    counts, calls included."""
    proc = subprocess.run(
        [
            sys.executable,
            str(BENCHMARKS / "callgrind_roundtrip.py"),
            "--mode",
            "counts",
            "--calls",
            "--top",
            "3",
            "--n",
            "100",
            "--side",
            side,
            "--backend",
            backend,
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "event-loop passes" in proc.stdout and "functions called" in proc.stdout


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
@pytest.mark.parametrize(("level", "end"), [(-1, "both"), (2, "both"), (1, "sender")])
def test_callgrind_qos_child_settles_everything(backend: str, level: int, end: str) -> None:
    """benchmarks/callgrind_qos.py's measured program: PUSH -> PULL at ``level`` (both ends in
    one process, or one end against a native child), every message settled."""
    script = str(BENCHMARKS / "callgrind_qos.py")
    options = [f"--level={level}", "--end", end, "--messages", "200", "--backend", backend]
    proc = subprocess.run(
        [sys.executable, script, "--child", *options], capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr


@pytest.mark.parametrize("pattern", ["router", "push"])
def test_callgrind_sync_child_sends_everything(pattern: str) -> None:
    """benchmarks/callgrind_sync.py's measured program: a zmtp.sync ROUTER (direct sends) or
    PUSH (queued sends) against a pyzmq peer process, which reports every message."""
    script = str(BENCHMARKS / "callgrind_sync.py")
    options = ["--pattern", pattern, "--messages", "300"]
    proc = subprocess.run(
        [sys.executable, script, "--child", *options], capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
