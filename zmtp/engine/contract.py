"""The engine's contract: what connections and transports may call on the socket they serve.

A connection (``stream.py``: tcp/ipc, ``inproc.py``, ``udp.py``) never sees the public
:class:`zmtp.Socket`; it is given the socket's engine core (:class:`zmtp.engine.core.SocketCore`)
and is typed against :class:`ConnectionHost`, the small interface below. Everything else on the
core (endpoint bookkeeping, linger, the close sequence) is the core's own business. The routing
strategies have their own, smaller contract: :class:`zmtp.routing.base.RoutingHost`.

docs/architecture.md lists both contracts and the order in which a connection calls them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    import anyio

    from ..auth.authenticator import AuthHandler
    from ..extension import SocketExtension
    from ..monitor import MonitorEvent, PeerInfo
    from ..options import Options
    from ..protocol.frames import Command
    from ..protocol.mechanism import Mechanism
    from ..routing.base import RoutingStrategy
    from .pipe import Pipe
    from .queue import Message, MessageQueue, Received


class ConnectionHost(Protocol):
    """The socket as a connection sees it.

    Attributes are read-only for connections. The call order for one connection is:
    ``new_pipe`` (accepted connections, at the handshake) -> ``pipe_handshake`` (accept or
    refuse the peer; on refusal ``pipe_refused``) -> ``incoming`` / ``incoming_one`` /
    ``command`` while it lives, ``written`` after each write batch -> ``pipe_disconnected``
    when it ends (``remove_pipe`` for a pipe that goes away with it). ``emit`` reports to the
    socket's monitors at any time.
    """

    socket_type: str
    options: Options
    extension: SocketExtension | None
    strategy: RoutingStrategy
    #: The socket closes: no new links (inproc), no reconnects.
    closing: bool

    @property
    def authenticator(self) -> AuthHandler | None: ...

    @property
    def receivers_waiting(self) -> bool:
        """Whether a task is blocked in ``recv`` right now (a reader then yields once after
        delivering, so that the woken task answers first; see stream.py)."""
        ...

    def read_wakeup(self) -> anyio.Event:
        """The event a reader waits on while the extension's ``can_receive`` is False (set
        by ``wake_readers``)."""
        ...

    # -- handshake

    def make_mechanism(self) -> Mechanism: ...

    def extension_properties(self) -> Mapping[str, bytes] | None: ...

    def local_properties(self) -> dict[str, bytes]: ...

    # -- pipe lifecycle

    def new_pipe(
        self,
        endpoint: str,
        persistent: bool,
        inbox: MessageQueue | None = None,
        outbox: MessageQueue | None = None,
    ) -> Pipe: ...

    def owns(self, pipe: Pipe) -> bool: ...

    def attach(self, pipe: Pipe) -> str | None: ...

    def pipe_handshake(
        self, pipe: Pipe, peer: PeerInfo, command_sink: Callable[[bytes, bytes], None]
    ) -> str | None: ...

    def pipe_refused(self, pipe: Pipe) -> None: ...

    def pipe_disconnected(self, pipe: Pipe, reason: str) -> None: ...

    def remove_pipe(self, pipe: Pipe) -> None: ...

    def is_bound(self, endpoint: str) -> bool: ...

    # -- traffic

    def incoming(self, pipe: Pipe, messages: list[Message]) -> None: ...

    def incoming_received(self, pipe: Pipe, messages: list[Received]) -> None:
        """A batch from a connection that decodes one-part messages bare (only when the
        strategy's ``bare_single_part`` is set, and no extension is installed or it set
        ``SocketExtension.bare_single_part``)."""
        ...

    def incoming_one(self, pipe: Pipe, message: Message) -> None: ...

    def command(self, pipe: Pipe, name: bytes, data: bytes) -> None: ...

    def commands(self, pipe: Pipe, commands: list[Command]) -> None: ...

    def written(self) -> None: ...

    # -- reporting

    def emit(self, event: MonitorEvent) -> None: ...
