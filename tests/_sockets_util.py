"""Deprecated shim: these helpers are public in :mod:`zmtp.testing` now (docs/testing.md).

The project's tests import them from there; this module keeps the old import path
(``from tests._sockets_util import linked``) working for tests written against it. Do not add
to it: add to ``zmtp.testing`` instead. ``probe_until_received`` here is
:func:`zmtp.testing.probe_path` (``zmtp.interop`` has a different function of that name).
"""

from __future__ import annotations

from zmtp.testing import RawPeer, RawServer, raw_client, raw_server
from zmtp.testing.pyzmq_sockets import (
    connect_ours,
    zbind,
    zmq_briefly,
    zmq_module,
    zmq_sender,
    zrecv,
    zsend,
    zsocket,
)
from zmtp.testing.sockets import (
    TIMEOUT,
    bindable,
    ipc_path,
    linked,
    nothing_pending,
    ours_briefly,
    ours_sender,
    recv_within,
    send_until_received,
    unique,
    wait_event,
)
from zmtp.testing.sockets import probe_path as probe_until_received
from zmtp.testing.wire import (
    COMMAND,
    LONG,
    MORE,
    command,
    frame,
    greeting,
    message,
    parse_properties,
    properties,
)

__all__ = [
    "COMMAND",
    "LONG",
    "MORE",
    "TIMEOUT",
    "RawPeer",
    "RawServer",
    "bindable",
    "command",
    "connect_ours",
    "frame",
    "greeting",
    "ipc_path",
    "linked",
    "message",
    "nothing_pending",
    "ours_briefly",
    "ours_sender",
    "parse_properties",
    "probe_until_received",
    "properties",
    "raw_client",
    "raw_server",
    "recv_within",
    "send_until_received",
    "unique",
    "wait_event",
    "zbind",
    "zmq_briefly",
    "zmq_module",
    "zmq_sender",
    "zrecv",
    "zsend",
    "zsocket",
]
