"""Deprecated shim: these helpers are public in :mod:`zmtp.testing` now (docs/testing.md).

The project's tests import them from there; this module keeps the old import path
(``from tests.interop_helpers import libzmq_env  # noqa: F401``, fixture ``lz``) working for
tests written against it. Do not add to it: add to ``zmtp.testing`` instead.
"""

from __future__ import annotations

from zmtp.testing.fixtures import OP_TIMEOUT, TEST_TIMEOUT, libzmq_env
from zmtp.testing.pyzmq_sockets import bind_when_free
from zmtp.testing.sockets import bind_endpoint, event_within, tcp_port
from zmtp.testing.tcp_peers import SilentZmtpPeer, raw_exchange, silent_zmtp_peer
from zmtp.testing.wire import NULL_GREETING, count_commands, ready_command

__all__ = [
    "NULL_GREETING",
    "OP_TIMEOUT",
    "TEST_TIMEOUT",
    "SilentZmtpPeer",
    "bind_endpoint",
    "bind_when_free",
    "count_commands",
    "event_within",
    "libzmq_env",
    "raw_exchange",
    "ready_command",
    "silent_zmtp_peer",
    "tcp_port",
]
