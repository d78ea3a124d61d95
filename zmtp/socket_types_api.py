"""The socket-type methods of :class:`zmtp.Socket` (docs/socket-types.md), as a mixin.

Thin wrappers: each checks that the socket type supports the call (UnsupportedOperation
otherwise) and delegates to the routing strategy through the socket's engine core. Nothing
here is on the send/recv fast paths, so it lives apart from them.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, TypeVar

from .errors import UnsupportedOperation
from .protocol.errors import WrongType
from .routing.mixins import Groups, RoutingIds, Subscriptions
from .transport import parse_endpoint

if TYPE_CHECKING:
    from .engine.core import SocketCore
    from .options import Options

_API = TypeVar("_API")


class SocketTypeMethods:
    """subscribe/join/send_to/... for the socket types that have them (a mixin of Socket)."""

    __slots__ = ()

    if TYPE_CHECKING:
        socket_type: str
        options: Options

        @property
        def engine(self) -> SocketCore: ...

        async def connect(self, endpoint: str, *, routing_id: bytes | None = None) -> None: ...

        async def send_multipart(self, parts: Iterable[Any]) -> None: ...

        async def recv_multipart(self) -> list[bytes]: ...

    def _strategy_as(self, api: type[_API], what: str) -> _API:
        strategy = self.engine.strategy
        if not isinstance(strategy, api):
            raise UnsupportedOperation(f"{self.socket_type} sockets do not support {what}")
        return strategy

    def subscribe(self, topic: bytes | bytearray | memoryview | str = b"") -> None:
        """SUB/XSUB: receive messages whose first frame starts with ``topic`` (b"" = all).

        Counted: each call needs its own :meth:`unsubscribe`. Sent to every publisher now and
        again after each reconnect. On an XPUB with ``xpub_manual``: subscribe the peer whose
        subscription message was received last.
        """
        self._strategy_as(Subscriptions, "subscribe()").subscribe(_as_bytes(topic))

    def unsubscribe(self, topic: bytes | bytearray | memoryview | str = b"") -> None:
        """Undo one :meth:`subscribe` of exactly ``topic`` (unknown topics are ignored)."""
        self._strategy_as(Subscriptions, "unsubscribe()").unsubscribe(_as_bytes(topic))

    def join(self, group: bytes | bytearray | memoryview | str) -> None:
        """DISH: receive messages of ``group`` (0-255 bytes, exact match).

        Raises ValueError if already joined (libzmq: EINVAL).
        """
        self._strategy_as(Groups, "join()").join(_as_bytes(group))

    def leave(self, group: bytes | bytearray | memoryview | str) -> None:
        """DISH: stop receiving ``group``. Raises ValueError if not joined."""
        self._strategy_as(Groups, "leave()").leave(_as_bytes(group))

    async def send_to(self, routing_id: int, data: bytes | bytearray | memoryview | str) -> None:
        """SERVER/PEER: send ``data`` to the peer with this routing id.

        Raises HostUnreachable if no such peer is attached; blocks while it is at its HWM.
        """
        routing = self._strategy_as(RoutingIds, "send_to()")
        await self.send_multipart([routing.encode_routing_id(routing_id), data])

    async def recv_from(self) -> tuple[int, bytes]:
        """SERVER/PEER: the next message as ``(routing_id, data)``."""
        routing = self._strategy_as(RoutingIds, "recv_from()")
        routing_id, data = await self.recv_multipart()
        return routing.decode_routing_id(routing_id), data

    async def send_group(
        self, group: bytes | str, data: bytes | bytearray | memoryview | str
    ) -> None:
        """RADIO: send ``data`` to the DISHes that joined ``group``. Never blocks (drops per
        full DISH) unless ``xpub_nodrop``."""
        from .routing.radio_dish import Radio  # loaded already if this socket is a RADIO

        if not isinstance(self.engine.strategy, Radio):
            raise UnsupportedOperation(f"{self.socket_type} sockets do not support send_group()")
        await self.send_multipart([group, data])

    async def recv_group(self) -> tuple[bytes, bytes]:
        """DISH: the next message as ``(group, data)``."""
        self._strategy_as(Groups, "recv_group()")
        group, data = await self.recv_multipart()
        return group, data

    async def connect_peer(self, endpoint: str) -> int:
        """PEER: connect to ``endpoint`` and return the routing id of that peer at once.

        Messages sent to it are queued until the connection is up (so ``immediate`` cannot be
        used, as with libzmq's ``zmq_connect_peer``).
        """
        from .routing.peer import Peer  # loaded already if this socket is a PEER

        if not isinstance(self.engine.strategy, Peer):
            raise UnsupportedOperation(f"{self.socket_type} sockets do not support connect_peer()")
        if self.options.immediate:
            raise UnsupportedOperation("connect_peer() cannot be used with immediate=True")
        await self.connect(endpoint)
        pipe = self.engine.endpoints.dialer_pipe(str(parse_endpoint(endpoint)))
        return int.from_bytes(pipe.routing_id, "big")


def _as_bytes(value: bytes | bytearray | memoryview | str) -> bytes:
    """Topics and groups: bytes-like, or str as UTF-8 (like message parts)."""
    if isinstance(value, str):
        return value.encode("utf-8")
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value)
    raise WrongType(f"expected bytes or str, not {type(value).__name__}")
