"""The built-in rows of ``zmtp interop``, one module per area.

Each module registers its cases into :data:`zmtp.interop.REGISTRY` when imported (they import
only the modules of :mod:`zmtp.interop` they use, never the package itself), and
:mod:`zmtp.interop` imports this package, so the rows are there whichever module is imported
first. The table runs (and groups) the cases in this order:

* :mod:`.sockets`: the pipeline, exclusive-pair and request-reply types (PUSH, PULL, PAIR, REQ,
  REP, DEALER, ROUTER) in every standard pairing;
* :mod:`.pubsub`: PUB, SUB, XPUB, XSUB in every standard pairing;
* :mod:`.security`: CURVE and PLAIN, with zmtp as client and as server;
* :mod:`.options`: the libzmq socket options zmtp has too (probe_router, router_notify,
  connect_routing_id, invert_matching, conflate), each checked for the same meaning on both
  ends of the wire.

Case names read "ours, arrow, theirs": ``REQ->ROUTER`` is a zmtp REQ and a libzmq ROUTER, the
arrow pointing the way the case's checks look; a suffix in brackets names a variant
(``REQ->ROUTER[correlate]``, ``PUSH->PULL[CURVE-client]``).
"""

from __future__ import annotations

# Registration order is table order: keep these in this order (options imports sockets).
# isort: off
from . import sockets
from . import pubsub
from . import security
from . import options

# isort: on

__all__ = ["options", "pubsub", "security", "sockets"]
