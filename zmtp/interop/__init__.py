"""Live interop check against libzmq (the copy bundled with pyzmq): ``zmtp interop``.

The check runs a matrix of *cases*. Each registered case function becomes one row per
transport (tcp, ipc) x binder (zmtp binds / libzmq binds), and each row runs once per anyio
backend (asyncio, trio). The table is grouped by case name: every row of a case, asyncio then
trio, before the next case. A row is PASS, FAIL (with a one-line reason) or SKIP (a socket type
it needs is not implemented yet). Every row runs under a timeout, so a hang is a FAIL row,
never a hung command; a process-level watchdog ends the run if a case cannot even be
cancelled. The exit status is 1 if any row failed, 2 if the check could not run (pyzmq or trio
missing).

pyzmq is blocking, so every libzmq call runs in a worker thread and is bounded by a timeout; the
event loop is never blocked. Waiting is always on a message or a monitor event, never a sleep.
Bound libzmq sockets attach a new peer only when the application touches the socket, so the
helpers keep polling the libzmq socket while they wait, and touch it before every send.

The package's modules, one job each: :mod:`.common` (the matrix's dimensions, the
exceptions), :mod:`.libzmq` (pyzmq sockets and monitors driven from worker threads),
:mod:`.ends` (the zmtp side of a transfer), :mod:`.checks` (the helpers rows are written with),
:mod:`.registry` (rows and :data:`REGISTRY`), :mod:`.context` (:class:`CaseContext`,
:func:`link`), :mod:`.runner` (timeouts, watchdog, table, progress line), :mod:`.report`
(JSON and markdown reports). The command line is :mod:`zmtp.cli.interop`.

The built-in rows live in :mod:`zmtp.interop.rows`, one module per area (``sockets``:
PUSH/PULL/PAIR and request-reply, every standard pairing; ``pubsub``: PUB/SUB/XPUB/XSUB, every
standard pairing; ``security``: CURVE and PLAIN in both roles; ``options``: probe_router,
router_notify (ours only: DRAFT in libzmq), connect_routing_id, invert_matching, conflate).
They register into
:data:`REGISTRY` when this package is imported.

Adding rows
-----------
In the module of its area, write an ``async def`` that takes a :class:`CaseContext` and
returns a short detail string for the table (raise :class:`CaseFailed`, or let any exception
escape, to fail the row; its message becomes the reason), and register it with
:func:`register`. Name it after the pair, zmtp's type first, without spaces (``REQ->REP``; a
variant in brackets: ``REQ->ROUTER[correlate]``)::

    @register("REQ->REP", flow="both", requires=("REQ",))
    async def req_to_libzmq_rep(c: CaseContext) -> str:
        async with c.zmtp_socket("REQ") as ours:       # zmtp.Socket with test defaults
            theirs = c.libzmq_socket("REP")            # pyzmq socket driven from threads
            peer = await c.link(ours, theirs)          # bind/connect as the row says, wait for
            expect_peer(peer, "REP")                   #   both sides' handshake
            await ours.send(b"ping")
            [request] = await theirs.recv_many(1)
            await theirs.send_many([request])
            ...
            return "1 round trip"

* ``register`` options: ``flow`` (``"zmtp->libzmq"``, ``"libzmq->zmtp"`` or ``"both"``, shown
  in the table), ``transports=("tcp",)`` / ``binds=("zmtp",)`` to narrow the matrix,
  ``requires=("REQ",)`` (zmtp socket types that must exist, else SKIP), ``timeout=`` (seconds).
* Options: ``c.zmtp_socket(type, **zmtp_options)``; ``c.libzmq_socket(type, **sockopts)`` where
  each name is a ``zmq`` constant in lower case (``subscribe=b""``, ``curve_server=1``,
  ``rcvhwm=10``...; a list sets it once per item: ``subscribe=[b"a", b"b"]``). A CURVE or PLAIN
  row passes its mechanism options to both. ``await theirs.set_option("unsubscribe", b"a")``
  changes one later, from a worker thread.
* Helpers: :func:`transfer` (send a list of messages one way and compare, order included),
  :func:`sample_messages` (single, multipart, empty, 1 MiB, then N numbered messages),
  :func:`expect_messages` (receive and compare a few), :func:`expect_peer` (our
  :class:`~zmtp.PeerInfo` of libzmq), :func:`expect_libzmq_saw` (the properties libzmq read
  from our READY), :meth:`CaseContext.step` (names the current step: it is printed with ``-v``
  and quoted if the row times out).
* Subscriptions: :func:`probe_until_received` (numbered probes until one gets through: the way
  to wait for a subscription to reach a publisher), :func:`publish_until_cancelled` (the same
  for an unsubscribe), ``skip=PROBE`` / :func:`recv_skipping` to read past late probes.

The registry of the built-in rows is :data:`REGISTRY`; tests build their own :class:`Registry`
(or :meth:`Registry.unregister` what they added) to inject cases.
"""

from __future__ import annotations

# The built-in rows register themselves into REGISTRY when imported (zmtp/interop/rows/).
from . import rows
from .checks import (
    big_payload,
    compare_messages,
    describe_message,
    expect_libzmq_saw,
    expect_messages,
    expect_peer,
    libzmq_zmtp_version,
    probe_until_received,
    publish_until_cancelled,
    recv_briefly,
    recv_skipping,
    sample_messages,
    transfer,
    who,
)
from .common import (
    BACKENDS,
    BINDERS,
    DEFAULT_COUNT,
    DEFAULT_TIMEOUT,
    FLOWS,
    ONE_MIB,
    PROBE,
    TRANSPORTS,
    CaseFailed,
    InteropUnavailable,
    Message,
    describe_exception,
    import_zmq,
    leaf_exception,
    one_line,
)
from .context import (
    CaseContext,
    link,
)
from .ends import (
    MessageEnd,
    ZmtpEnd,
)
from .libzmq import (
    Libzmq,
    LibzmqEvent,
    LibzmqMonitor,
    LibzmqSocket,
)
from .registry import (
    REGISTRY,
    Case,
    CaseFunc,
    Registry,
    register,
)
from .runner import (
    OnFinish,
    Result,
    RunInfo,
    run_case,
    run_check,
)

__all__ = [
    "BACKENDS",
    "BINDERS",
    "DEFAULT_COUNT",
    "DEFAULT_TIMEOUT",
    "FLOWS",
    "ONE_MIB",
    "PROBE",
    "REGISTRY",
    "TRANSPORTS",
    "Case",
    "CaseContext",
    "CaseFailed",
    "CaseFunc",
    "InteropUnavailable",
    "Libzmq",
    "LibzmqEvent",
    "LibzmqMonitor",
    "LibzmqSocket",
    "Message",
    "MessageEnd",
    "OnFinish",
    "Registry",
    "Result",
    "RunInfo",
    "ZmtpEnd",
    "big_payload",
    "compare_messages",
    "describe_exception",
    "describe_message",
    "expect_libzmq_saw",
    "expect_messages",
    "expect_peer",
    "import_zmq",
    "leaf_exception",
    "libzmq_zmtp_version",
    "link",
    "one_line",
    "probe_until_received",
    "publish_until_cancelled",
    "recv_briefly",
    "recv_skipping",
    "register",
    "rows",
    "run_case",
    "run_check",
    "sample_messages",
    "transfer",
    "who",
]
