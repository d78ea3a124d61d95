"""zmtp.engine.allocator: reads of ``read_size`` come from glibc's heap, not a fresh mmap each
(docs/performance.md, "Large reads and malloc"). Measured in a fresh interpreter, whose malloc
thresholds no earlier test has moved: page faults while allocating and touching read-sized
``bytes`` objects, before and after the settling."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from zmtp.engine import allocator

_CHILD = """
import importlib.util, resource, socket, sys

# The module alone, from its file: importing the package would compile other modules first
# (with no cached bytecode), and compiling a large one frees blocks big enough to raise glibc's
# threshold itself, before the unsettled reads are measured.
spec = importlib.util.spec_from_file_location("allocator", sys.argv[1])
allocator = importlib.util.module_from_spec(spec)
spec.loader.exec_module(allocator)
settle_for_reads = allocator.settle_for_reads

READ = 256 * 1024
PART = 100 * 1024  # what the kernel has: recv allocates READ, then shrinks the bytes to PART
a, b = socket.socketpair()
a.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4 * READ)
b.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 * READ)

def faults_for_reads():
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    for _ in range(8):
        a.sendall(b"r" * PART)
        got = 0
        while got < PART:
            got += len(b.recv(READ))
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before

faults_for_reads()  # whatever start-up leaves to fault in once
unsettled = faults_for_reads()
settle_for_reads(READ)
faults_for_reads()
settled = faults_for_reads()
print(unsettled, settled)
"""


@pytest.mark.skipif(not allocator.ON_GLIBC, reason="the mmap threshold is glibc's")
def test_reads_stop_faulting_in_fresh_pages_once_settled() -> None:
    env = {**os.environ, "MALLOC_MMAP_THRESHOLD_": "", "MALLOC_TRIM_THRESHOLD_": ""}
    env = {k: v for k, v in env.items() if v}  # glibc's defaults, whatever the caller set
    out = subprocess.run(
        [sys.executable, "-c", _CHILD, allocator.__file__],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert out.returncode == 0, out.stderr
    unsettled, settled = map(int, out.stdout.split())
    pages = 8 * 100 * 1024 // 4096  # what the kernel copied into the reads' buffers
    assert unsettled >= pages // 2  # each read a fresh mmap: its pages faulted in again
    assert settled < pages // 8  # from the heap: pages faulted in before, reused
