"""PEER: the thread-safe ROUTER-ROUTER replacement (RFC 51). Single-part messages only.

Exactly SERVER's routing (uint32 routing ids, ``recv_from``/``send_to``), plus symmetric use:
``Socket.connect_peer(endpoint)`` connects and returns the routing id of the new peer at once,
so the application can address a peer it connected to before that peer ever sends anything.
That works because a connecting PEER attaches its pipe (and assigns the id) at connect time,
queueing messages until the connection is up; it therefore cannot be combined with
``immediate`` (libzmq refuses ``zmq_connect_peer`` then too).
"""

from __future__ import annotations

from .client_server import Server


class Peer(Server):
    """SERVER routing between PEERs; see the module docstring."""

    socket_type = "PEER"
