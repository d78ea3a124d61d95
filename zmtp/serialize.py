"""pyzmq's serialisation helpers (``send_string``, ``send_json``, ``send_pyobj``...) as mixins.

One class per API: :class:`AsyncSerializers` for :class:`zmtp.Socket` (coroutines) and
:class:`SyncSerializers` for :class:`zmtp.sync.Socket` (blocking calls). Each needs only the
socket's own ``send``/``recv``/``send_multipart``/``recv_multipart``; the encodings are shared
functions, so both APIs put the same bytes on the wire as pyzmq (a pyzmq peer's
``recv_json``/``recv_pyobj`` reads what these send, and the other way round).

``recv_pyobj`` runs :func:`pickle.loads`, which executes code chosen by whoever built the
bytes: never use it on a socket that untrusted peers can reach.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any

from .protocol.errors import WrongType

#: A ``send_serialized`` serialiser: an object to the parts of one message.
Serializer = Callable[[Any], Sequence[bytes | bytearray | memoryview | str]]
#: A ``recv_serialized`` deserialiser: the parts of one message to an object.
Deserializer = Callable[[list[bytes]], Any]


def encode_json(obj: Any, **kwargs: Any) -> bytes:
    """``json.dumps`` as UTF-8 (pyzmq's ``send_json``); ``kwargs`` go to ``json.dumps``."""
    import json

    return json.dumps(obj, **kwargs).encode("utf-8")


def decode_json(data: bytes, **kwargs: Any) -> Any:
    """``json.loads`` of a UTF-8 message (pyzmq's ``recv_json``)."""
    import json

    return json.loads(data.decode("utf-8"), **kwargs)


def encode_pyobj(obj: Any, protocol: int | None = None) -> bytes:
    """``pickle.dumps`` with the highest protocol by default (as pyzmq's ``send_pyobj``)."""
    import pickle

    return pickle.dumps(obj, pickle.HIGHEST_PROTOCOL if protocol is None else protocol)


def decode_pyobj(data: bytes) -> Any:
    """``pickle.loads``: runs code chosen by the sender. Never on untrusted input."""
    import pickle

    return pickle.loads(data)  # trusted peers only (see the module docstring)


class AsyncSerializers:
    """``send_string``/``recv_string``, ``send_json``/``recv_json``, ``send_pyobj``/
    ``recv_pyobj`` and ``send_serialized``/``recv_serialized`` for the async socket."""

    __slots__ = ()

    if TYPE_CHECKING:

        async def send(
            self, data: bytes | bytearray | memoryview | str, flags: int | None = None
        ) -> None: ...
        async def recv(self, flags: int | None = None, copy: bool = True) -> bytes: ...
        async def send_multipart(self, parts: Iterable[Any], flags: int | None = None) -> None: ...
        async def recv_multipart(
            self, flags: int | None = None, copy: bool = True
        ) -> list[bytes]: ...

    async def send_string(
        self, text: str, flags: int | None = None, copy: bool = True, encoding: str = "utf-8"
    ) -> None:
        """Send ``text`` encoded with ``encoding`` as a single-part message (``flags`` and
        ``copy`` as for ``send``, in pyzmq's order: the encoding is a keyword)."""
        if not isinstance(text, str):
            raise WrongType(f"send_string takes a str, not {type(text).__name__}")
        await self.send(text.encode(encoding), flags)

    async def recv_string(self, flags: int | None = None, encoding: str = "utf-8") -> str:
        """Receive a single-part message and decode it with ``encoding`` (``flags`` as for
        ``recv``)."""
        return (await self.recv(flags)).decode(encoding)

    async def send_json(self, obj: Any, flags: int | None = None, **kwargs: Any) -> None:
        """Send ``obj`` as JSON (UTF-8); ``kwargs`` go to ``json.dumps``."""
        await self.send(encode_json(obj, **kwargs), flags)

    async def recv_json(self, flags: int | None = None, **kwargs: Any) -> Any:
        """Receive a JSON message; ``kwargs`` go to ``json.loads``."""
        return decode_json(await self.recv(flags), **kwargs)

    async def send_pyobj(
        self, obj: Any, flags: int | None = None, protocol: int | None = None
    ) -> None:
        """Send ``obj`` pickled (highest protocol unless ``protocol`` is given: a keyword,
        after ``flags`` as in pyzmq)."""
        await self.send(encode_pyobj(obj, protocol), flags)

    async def recv_pyobj(self, flags: int | None = None) -> Any:
        """Receive and unpickle an object. **Never on a socket untrusted peers can reach**:
        unpickling runs code the sender chose."""
        return decode_pyobj(await self.recv(flags))

    async def send_serialized(
        self, obj: Any, serialize: Serializer, flags: int | None = None, copy: bool = True
    ) -> None:
        """Send ``serialize(obj)`` (a sequence of parts) as one message."""
        await self.send_multipart(serialize(obj), flags)

    async def recv_serialized(
        self, deserialize: Deserializer, flags: int | None = None, copy: bool = True
    ) -> Any:
        """Receive one message and return ``deserialize(parts)``."""
        return deserialize(await self.recv_multipart(flags, copy))


class SyncSerializers:
    """The same helpers for the blocking socket (:mod:`zmtp.sync`)."""

    __slots__ = ()

    if TYPE_CHECKING:

        def send(
            self, data: bytes | bytearray | memoryview | str, flags: int | None = None
        ) -> None: ...
        def recv(self, flags: int | None = None, copy: bool = True) -> bytes: ...
        def send_multipart(self, parts: Iterable[Any], flags: int | None = None) -> None: ...
        def recv_multipart(self, flags: int | None = None, copy: bool = True) -> list[bytes]: ...

    def send_string(
        self, text: str, flags: int | None = None, copy: bool = True, encoding: str = "utf-8"
    ) -> None:
        """Send ``text`` encoded with ``encoding`` as a single-part message (``flags`` and
        ``copy`` as for ``send``, in pyzmq's order: the encoding is a keyword)."""
        if not isinstance(text, str):
            raise WrongType(f"send_string takes a str, not {type(text).__name__}")
        self.send(text.encode(encoding), flags)

    def recv_string(self, flags: int | None = None, encoding: str = "utf-8") -> str:
        """Receive a single-part message and decode it with ``encoding`` (``flags`` as for
        ``recv``)."""
        return self.recv(flags).decode(encoding)

    def send_json(self, obj: Any, flags: int | None = None, **kwargs: Any) -> None:
        """Send ``obj`` as JSON (UTF-8); ``kwargs`` go to ``json.dumps``."""
        self.send(encode_json(obj, **kwargs), flags)

    def recv_json(self, flags: int | None = None, **kwargs: Any) -> Any:
        """Receive a JSON message; ``kwargs`` go to ``json.loads``."""
        return decode_json(self.recv(flags), **kwargs)

    def send_pyobj(self, obj: Any, flags: int | None = None, protocol: int | None = None) -> None:
        """Send ``obj`` pickled (highest protocol unless ``protocol`` is given: a keyword,
        after ``flags`` as in pyzmq)."""
        self.send(encode_pyobj(obj, protocol), flags)

    def recv_pyobj(self, flags: int | None = None) -> Any:
        """Receive and unpickle an object. **Never on a socket untrusted peers can reach**:
        unpickling runs code the sender chose."""
        return decode_pyobj(self.recv(flags))

    def send_serialized(
        self, obj: Any, serialize: Serializer, flags: int | None = None, copy: bool = True
    ) -> None:
        """Send ``serialize(obj)`` (a sequence of parts) as one message."""
        self.send_multipart(serialize(obj), flags)

    def recv_serialized(
        self, deserialize: Deserializer, flags: int | None = None, copy: bool = True
    ) -> Any:
        """Receive one message and return ``deserialize(parts)``."""
        return deserialize(self.recv_multipart(flags, copy))
