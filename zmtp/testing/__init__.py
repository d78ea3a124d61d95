"""Helpers for testing systems built on zmtp or talking to libzmq (see ``docs/testing.md``).

* :class:`FaultProxy`: a TCP proxy that cuts, delays, throttles, corrupts, half-closes or pauses
  the connections through it, on asyncio and trio.
* :class:`RawPeer`: a peer that sends exactly the bytes a test scripts (bad greetings,
  oversized frames, silence mid-frame, any command) and reads the other side's frames.
* :func:`libzmq_peer`: a pyzmq peer of any type and mechanism, in a thread or a subprocess,
  that receives (and with ``echo=True`` answers) and reports what it received.
* :mod:`zmtp.testing.pytest_plugin`: the opt-in pytest plugin (``zmtp_testing = true``): the
  ``zmtp_both_backends`` marker and the ``fault_proxy`` and ``libzmq`` fixtures.

The libzmq side of the interop check (:mod:`zmtp.interop`: :class:`~zmtp.interop.Libzmq`,
:func:`~zmtp.interop.link`, the transfer helpers) is public too and is what the project's own
live tests use.
"""

from __future__ import annotations

from .faultproxy import DIRECTIONS, FaultProxy
from .libzmq_peer import LibzmqPeer, libzmq_peer
from .rawpeer import RawPeer

__all__ = ["DIRECTIONS", "FaultProxy", "LibzmqPeer", "RawPeer", "libzmq_peer"]
