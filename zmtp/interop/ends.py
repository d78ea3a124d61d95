"""The zmtp side of a transfer, and the protocol both sides of one satisfy."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

import anyio

from ..socket import Socket
from .common import DEFAULT_TIMEOUT, Message


class MessageEnd(Protocol):
    """Either side of a transfer: a :class:`LibzmqSocket` or :class:`ZmtpEnd`."""

    timeout: float  #: default seconds for one ``send_many`` / ``recv_many``

    def __repr__(self) -> str: ...

    async def send_many(
        self, messages: Sequence[Message], timeout: float | None = None
    ) -> None: ...

    async def recv_many(self, count: int, timeout: float | None = None) -> list[Message]: ...


class ZmtpEnd:
    """A :class:`zmtp.Socket` with the bulk ``send_many``/``recv_many`` of :class:`LibzmqSocket`."""

    def __init__(self, sock: Socket, timeout: float = DEFAULT_TIMEOUT / 2) -> None:
        self.sock = sock
        self.timeout = timeout

    def __repr__(self) -> str:
        return f"zmtp {self.sock.socket_type}"

    async def send_many(self, messages: Sequence[Message], timeout: float | None = None) -> None:
        seconds = timeout or self.timeout
        sent = 0
        with anyio.move_on_after(seconds) as scope:
            for message in messages:
                await self.sock.send_multipart(message)
                sent += 1
        if scope.cancelled_caught:
            raise TimeoutError(
                f"zmtp {self.sock.socket_type} queued only {sent}/{len(messages)} messages "
                f"in {seconds:g}s"
            )

    async def recv_many(self, count: int, timeout: float | None = None) -> list[Message]:
        seconds = timeout or self.timeout
        received: list[Message] = []
        with anyio.move_on_after(seconds) as scope:
            while len(received) < count:
                received.append(await self.sock.recv_multipart())
        if scope.cancelled_caught:
            raise TimeoutError(
                f"zmtp {self.sock.socket_type} received {len(received)}/{count} messages "
                f"in {seconds:g}s"
            )
        return received
