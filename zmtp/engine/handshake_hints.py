"""What to check when a handshake ends without a reason from the peer.

A CURVE server that cannot open a client's HELLO (the client used the wrong server key) just
closes the connection, as libzmq does: the client then sees only "connection closed by peer",
which names no cause. The hint says what usually causes it.
"""

from __future__ import annotations

from ..options import Options

#: The reason an ended read gives (engine/stream.py); only that one gets a hint.
PEER_CLOSED = "connection closed by peer"


def handshake_failure_reason(options: Options, reason: str) -> str:
    """``reason``, with a hint for a client whose secured handshake the server ended."""
    if reason != PEER_CLOSED:
        return reason
    if options.curve_serverkey is not None and not options.curve_server:
        return (
            f"{reason} during the CURVE handshake: check curve_serverkey (the server's public "
            "key), and that the server's authenticator accepts our key"
        )
    return reason
