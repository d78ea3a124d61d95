"""Helpers for testing systems built on zmtp or talking to libzmq (see ``docs/testing.md``).

* :class:`FaultProxy`: a TCP proxy that cuts, delays, throttles, corrupts, half-closes or pauses
  the connections through it, on asyncio and trio.
* :class:`RawPeer` (with :func:`raw_server`, :func:`raw_client`, :func:`serve_raw_peers`): a
  peer that sends exactly the bytes a test scripts (bad greetings, oversized frames, silence
  mid-frame, any command) and reads the other side's frames; :mod:`zmtp.testing.wire` spells
  ZMTP bytes out by hand;
  :mod:`zmtp.testing.tcp_peers`: a ZMTP peer that goes silent after its handshake, and a
  one-shot raw client.
* :func:`libzmq_peer`: a pyzmq peer of any type and mechanism, in a thread or a subprocess,
  that receives (and with ``echo=True`` answers) and reports what it received;
  :mod:`zmtp.testing.pyzmq_sockets`: plain pyzmq sockets in async tests.
* :mod:`zmtp.testing.sockets`: endpoints to bind, two linked sockets, bounded waits on events
  and messages, probing a path open (:func:`linked`, :func:`wait_event`, :func:`probe_path`...).
* :mod:`zmtp.testing.pytest_plugin`: the opt-in pytest plugin (``zmtp_testing = true``): the
  ``zmtp_both_backends`` marker and the ``fault_proxy`` and ``libzmq`` fixtures;
  :mod:`zmtp.testing.fixtures`: fixtures to import explicitly (``lz``).

The libzmq side of the interop check (:mod:`zmtp.interop`: :class:`~zmtp.interop.Libzmq`,
:func:`~zmtp.interop.link`, the transfer helpers) is public too and is what the project's own
live tests use.
"""

from __future__ import annotations

from .faultproxy import DIRECTIONS, FaultProxy
from .libzmq_peer import LibzmqPeer, libzmq_peer
from .rawpeer import STREAM_ERRORS, RawPeer, RawServer, raw_client, raw_server, serve_raw_peers
from .sockets import (
    TIMEOUT,
    bind_endpoint,
    bindable,
    event_within,
    ipc_path,
    linked,
    nothing_pending,
    ours_briefly,
    ours_sender,
    probe_path,
    recv_within,
    send_until_received,
    tcp_port,
    unique,
    wait_event,
)
from .tcp_peers import SilentZmtpPeer, raw_exchange, silent_zmtp_peer

__all__ = [
    "DIRECTIONS",
    "STREAM_ERRORS",
    "TIMEOUT",
    "FaultProxy",
    "LibzmqPeer",
    "RawPeer",
    "RawServer",
    "SilentZmtpPeer",
    "bind_endpoint",
    "bindable",
    "event_within",
    "ipc_path",
    "libzmq_peer",
    "linked",
    "nothing_pending",
    "ours_briefly",
    "ours_sender",
    "probe_path",
    "raw_client",
    "raw_exchange",
    "raw_server",
    "recv_within",
    "send_until_received",
    "serve_raw_peers",
    "silent_zmtp_peer",
    "tcp_port",
    "unique",
    "wait_event",
]
