"""Keep large reads out of glibc malloc's mmap path (docs/performance.md, "Large reads and
malloc").

Why: every read allocates a ``bytes`` of ``read_size`` (256 KiB by default) before the kernel
fills it. glibc serves an allocation at or above its *mmap threshold* (128 KiB at start) with a
fresh ``mmap``, so the kernel faults in every page it copies into (a 64 KiB message cost ~16
page faults, half the receiver's CPU), and frees it with ``munmap``. glibc raises the threshold
by itself, to the size of the largest mmapped block freed, but a connection whose reads come
back shorter than ``read_size`` (a receiver that keeps up) never frees one that large: whether
a process paid the faults depended on whether one read had ever been full. Freeing one block
of a few reads' size once makes it deterministic: the threshold rises above a read, and the trim
threshold (twice it) above the heap that a few reads in flight keep.

The block comes from ``calloc`` (``bytes(n)``), whose fresh mmapped pages are never touched:
the cost is one ``mmap`` and one ``munmap``, once per process. Done only with glibc (elsewhere
the allocator has other rules and nothing is known to gain); it changes no semantics.
"""

from __future__ import annotations

import os

#: The size of the block freed, in reads: the threshold must exceed one read's ``bytes``, and
#: the trim threshold (twice the block) the heap of the reads in flight (measured on trio with
#: 256 KiB reads: a block of one read left 8 faults per 64 KiB message, one of 2.3 none).
_READS_PER_BLOCK = 4
#: glibc's dynamic threshold never rises above 32 MiB (DEFAULT_MMAP_THRESHOLD_MAX).
_MAX_BLOCK = 32 << 20


def _is_glibc() -> bool:
    try:
        return os.confstr("CS_GNU_LIBC_VERSION") is not None
    except (AttributeError, ValueError, OSError):
        return False


#: Whether this process runs on glibc (the only allocator this tunes for).
ON_GLIBC = _is_glibc()
_settled = 0  # the largest read size settled for in this process


def settle_for_reads(read_size: int) -> None:
    """Make glibc serve reads of ``read_size`` from its heap, once per process and size."""
    global _settled
    if not ON_GLIBC or read_size <= _settled:
        return
    _settled = read_size
    block = bytes(min(_READS_PER_BLOCK * read_size, _MAX_BLOCK - 4096))
    del block
