"""What a case function gets (:class:`CaseContext`), and :func:`link`, which connects a zmtp
socket and a libzmq socket and waits for both sides' handshake."""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import Any

import anyio

from ..monitor import HandshakeFailed, HandshakeSucceeded, MonitorEvent, PeerInfo
from ..socket import Socket
from .common import BINDERS, DEFAULT_COUNT, DEFAULT_TIMEOUT, CaseFailed
from .ends import ZmtpEnd
from .libzmq import Libzmq, LibzmqSocket
from .registry import Case

_IPC_NAMES = itertools.count(1)


class CaseContext:
    """What a case function gets: its row's parameters and ready-made, cleaned-up sockets."""

    def __init__(
        self,
        case: Case,
        backend: str,
        libzmq: Libzmq,
        workdir: str,
        timeout: float,
        count: int = DEFAULT_COUNT,
        log: Callable[[str], None] | None = None,
    ) -> None:
        self.case = case
        self.backend = backend
        self.transport = case.transport
        self.binds = case.binds
        self.libzmq = libzmq
        self.zmq = libzmq.zmq
        self.workdir = workdir
        self.timeout = timeout  #: per operation (half the row's timeout)
        self.count = count  #: numbered messages for ordering checks
        self.current_step = "starting"
        self._log = log

    def step(self, text: str) -> None:
        """Name the current step (printed with -v, quoted if the row times out)."""
        self.current_step = text
        if self._log is not None:
            self._log(text)

    def endpoint(self) -> str:
        """A fresh endpoint to bind on this row's transport."""
        if self.transport == "tcp":
            return "tcp://127.0.0.1:*"
        return f"ipc://{self.workdir}/{next(_IPC_NAMES)}.ipc"

    def zmtp_socket(self, socket_type: str, **options: Any) -> Socket:
        """A zmtp socket (use with ``async with``); linger defaults to 0."""
        options.setdefault("linger", 0)
        return Socket(socket_type, **options)

    def libzmq_socket(self, socket_type: str, **options: Any) -> LibzmqSocket:
        return self.libzmq.socket(socket_type, **options)

    def end(self, sock: Socket) -> ZmtpEnd:
        return ZmtpEnd(sock, self.timeout)

    async def link(self, ours: Socket, theirs: LibzmqSocket) -> PeerInfo:
        """Bind one side and connect the other as the row says (see :func:`link`)."""
        return await link(
            ours,
            theirs,
            binds=self.binds,
            endpoint=self.endpoint(),
            timeout=self.timeout,
            step=self.step,
        )


async def link(
    ours: Socket,
    theirs: LibzmqSocket,
    *,
    binds: str,
    endpoint: str,
    timeout: float = DEFAULT_TIMEOUT / 2,
    step: Callable[[str], None] | None = None,
) -> PeerInfo:
    """Bind ``endpoint`` on one side (``binds``: "zmtp" or "libzmq") and connect the other to
    it; wait until both sides report a completed handshake (our monitor and libzmq's); return
    what our side learned about the peer. Raises CaseFailed if either side refuses."""
    if binds not in BINDERS:
        raise ValueError(f"binds must be one of {BINDERS}")
    note = step or (lambda text: None)
    event: MonitorEvent | None = None
    monitor = ours.monitor()
    theirs_monitor = theirs.monitor()
    try:
        if binds == "zmtp":
            note("zmtp binds, libzmq connects")
            endpoint = await ours.bind(endpoint)
            theirs.connect(endpoint)
        else:
            note("libzmq binds, zmtp connects")
            endpoint = theirs.bind(endpoint)
            await ours.connect(endpoint)
        note(f"handshake on {endpoint}")
        with anyio.move_on_after(timeout):
            event = await monitor.wait_for((HandshakeSucceeded, HandshakeFailed))
        if event is None:
            raise TimeoutError(f"zmtp saw no handshake with libzmq on {endpoint} in {timeout:g}s")
    finally:
        monitor.close()
    if isinstance(event, HandshakeFailed):
        raise CaseFailed(f"zmtp handshake failed ({event.kind}): {event.reason}")
    assert isinstance(event, HandshakeSucceeded)
    await theirs_monitor.wait_for(
        "HANDSHAKE_SUCCEEDED",
        fail_on=(
            "HANDSHAKE_FAILED_NO_DETAIL",
            "HANDSHAKE_FAILED_PROTOCOL",
            "HANDSHAKE_FAILED_AUTH",
        ),
        timeout=timeout,
    )
    note(f"handshake done: libzmq is {event.peer.socket_type}")
    return event.peer
