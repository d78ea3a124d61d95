"""Reading a run of ACK, COMP or CLR frames as zmtp hands it over (a
:class:`zmtp.protocol.frames.CommandRun`: the frames' wire bytes), with C-level slicing.

The sender receives one ACK (COMP) per message it sent, the level-2/3 receiver one CLR per
message it acknowledged: a fixed 15- or 16-byte frame each (docs/qos-protocol.md §4). Asked
for as runs (:meth:`zmtp.SocketExtension.command_runs`), a read's worth of them is one
bytes object; ``struct.iter_unpack`` then cuts every digest out in C, and the CLRs answering
a whole run of ACKs or COMPs are built by strided slice assignment, instead of a Python
object and a few bytecodes per frame (docs/performance.md, "QoS levels").
"""

from __future__ import annotations

import struct
from functools import lru_cache
from operator import itemgetter

from zmtp.protocol.frames import CommandRun, encode_command

from .commands import CLR
from .digest import DIGEST_SIZE

#: The data of every run QoS asks for: [algorithm letter][digest 8] (§4).
REF_SIZE = 1 + DIGEST_SIZE
_first = itemgetter(0)
_CLR_HEADER = encode_command(CLR, bytes(REF_SIZE))[:-REF_SIZE]
_CLR_SIZE = len(_CLR_HEADER) + REF_SIZE


@lru_cache(maxsize=8)
def _layout(frame_size: int, skip: int, size: int) -> struct.Struct:
    """A frame of ``frame_size`` bytes read as ``skip`` bytes ignored, ``size`` taken."""
    return struct.Struct(f"{skip}x{size}s{frame_size - skip - size}x")


@lru_cache(maxsize=256)
def _digests_layout(frame_size: int, count: int) -> struct.Struct:
    """``count`` frames of ``frame_size`` bytes, each read as its last 8 bytes (the digest):
    one flat tuple of bytes for the whole run."""
    return struct.Struct(f"{frame_size - DIGEST_SIZE}x{DIGEST_SIZE}s" * count)


def digests(run: CommandRun) -> list[bytes]:
    """The 8-byte digest of every frame of ``run``, in order: one ``struct`` call for a run
    of up to 256 frames (the receiver's CLRs), no tuple per frame."""
    count, size = run.count, run.frame_size
    if count > 256:  # a very long run: the cache would hold huge layouts
        offset = size - REF_SIZE + 1  # past the header and the algorithm letter
        layout = _layout(size, offset, DIGEST_SIZE)
        return list(map(_first, layout.iter_unpack(run.data)))
    return list(_digests_layout(size, count).unpack_from(run.data))


@lru_cache(maxsize=256)
def _keys_layout(frame_size: int, count: int) -> struct.Struct:
    """``count`` frames of ``frame_size`` bytes, each read as its last 8 bytes (the digest)
    as a little-endian unsigned integer: one flat tuple for the whole run."""
    skip = frame_size - DIGEST_SIZE
    return struct.Struct("<" + f"{skip}xQ" * count)


def digest_keys(run: CommandRun) -> list[int]:
    """The digest of every frame of ``run`` as the sender's int key
    (:func:`zmtp_qos.digest.key_of`), in order, cut out by one ``struct`` call: no tuple or
    bytes object per frame."""
    count = run.count
    if count > 256:  # a very long run: the cache would hold huge layouts, go by 256
        keys: list[int] = []
        size = run.frame_size
        layout = _keys_layout(size, 256)
        data = run.data
        whole = count - count % 256
        for start in range(0, whole * size, 256 * size):
            keys.extend(layout.unpack_from(data, start))
        if whole < count:
            keys.extend(_keys_layout(size, count - whole).unpack_from(data, whole * size))
        return keys
    return list(_keys_layout(run.frame_size, count).unpack_from(run.data))


def references(run: CommandRun) -> list[bytes]:
    """The data of every frame of ``run`` ([algorithm][digest], what a CLR echoes)."""
    layout = _layout(run.frame_size, run.frame_size - REF_SIZE, REF_SIZE)
    return list(map(_first, layout.iter_unpack(run.data)))


def clear_frames(run: CommandRun) -> bytes:
    """The CLR frames answering every frame of ``run`` (ACKs or COMPs), in order, as one
    buffer: each CLR echoes its frame's data as it came (§5.1)."""
    count, size = run.count, run.frame_size
    data = run.data
    if size == _CLR_SIZE:  # ACK -> CLR: the same frame with another name
        out = bytearray(data)
        start = len(_CLR_HEADER) - len(CLR)
    else:
        out = bytearray(_CLR_SIZE * count)
        start = 0
        offset = size - REF_SIZE
        for i in range(REF_SIZE):
            out[len(_CLR_HEADER) + i :: _CLR_SIZE] = data[offset + i :: size]
    for i in range(start, len(_CLR_HEADER)):
        out[i::_CLR_SIZE] = _CLR_HEADER[i : i + 1] * count
    return bytes(out)
