"""Decoding one direction of a ZMTP byte stream for the tools (``zmtp trace``, ``zmtp probe``).

:class:`WireDecoder` is sans-IO like :mod:`zmtp.protocol`, whose parsers it uses: bytes in,
:class:`WireEvent` items out. Unlike :class:`zmtp.protocol.Connection` it never refuses
anything and plays no part in the handshake: it only reports what each byte means, including
bytes that break the protocol (which a tracer must show, not hide). Each event has a one-line
:meth:`~WireEvent.describe` and a JSON form (:meth:`~WireEvent.to_json`).

Command frames are named and, where the data has a known layout, decoded: READY's properties,
ERROR's reason, PING's TTL and context, PONG, SUBSCRIBE/CANCEL topics, JOIN/LEAVE groups, the
QoS commands (ACK, CLR, COMP with their digest; NACK with code and message) and the CURVE
handshake commands (sizes). After a CURVE handshake every frame is a MESSAGE command whose
content is encrypted: only its size is shown.
"""

from __future__ import annotations

import base64
import json
from dataclasses import dataclass, field
from typing import Any

from ..protocol import ProtocolError
from ..protocol.commands import parse_error, parse_ping
from ..protocol.frames import COMMAND, MORE, FrameDecoder, parse_command
from ..protocol.greeting import GREETING_SIZE, check_greeting_prefix
from ..protocol.properties import parse_properties

#: Bytes of a frame body shown in a preview.
PREVIEW = 32


def preview(data: bytes, limit: int = PREVIEW) -> str:
    """Printable text if the bytes are text, else hex; cut at ``limit`` bytes with "..."."""
    head = data[:limit]
    more = "..." if len(data) > limit else ""
    if not head:
        return '""'
    try:
        text = head.decode("ascii")
    except UnicodeDecodeError:
        text = ""
    if text and text.isprintable():
        return json.dumps(text) + more
    return "0x" + head.hex() + more


def _text_or_b64(value: bytes) -> str:
    try:
        text = value.decode("utf-8")
    except UnicodeDecodeError:
        return "base64:" + base64.b64encode(value).decode()
    return text if text.isprintable() else "base64:" + base64.b64encode(value).decode()


@dataclass
class WireEvent:
    """Something one direction of a connection said."""

    kind: str = field(init=False, default="event")

    def describe(self) -> str:
        raise NotImplementedError

    def to_json(self) -> dict[str, Any]:
        raise NotImplementedError


@dataclass
class Greeting(WireEvent):
    major: int
    minor: int
    mechanism: str
    as_server: bool

    def __post_init__(self) -> None:
        self.kind = "greeting"

    def describe(self) -> str:
        return (
            f"greeting ZMTP {self.major}.{self.minor} mechanism {self.mechanism} "
            f"as-server {int(self.as_server)}"
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "version": f"{self.major}.{self.minor}",
            "mechanism": self.mechanism,
            "as_server": self.as_server,
        }


@dataclass
class NotZmtp(WireEvent):
    """The bytes cannot be a ZMTP 3.x greeting (or a frame): the rest is shown raw."""

    reason: str
    data: bytes

    def __post_init__(self) -> None:
        self.kind = "not-zmtp"

    def describe(self) -> str:
        return f"not ZMTP: {self.reason}; first bytes {preview(self.data)}"

    def to_json(self) -> dict[str, Any]:
        return {"kind": self.kind, "reason": self.reason, "preview": preview(self.data)}


@dataclass
class Raw(WireEvent):
    """Bytes after the stream stopped being ZMTP."""

    size: int
    data: bytes

    def __post_init__(self) -> None:
        self.kind = "raw"

    def describe(self) -> str:
        return f"raw {self.size} B {preview(self.data)}"

    def to_json(self) -> dict[str, Any]:
        return {"kind": self.kind, "size": self.size, "preview": preview(self.data)}


@dataclass
class Frame(WireEvent):
    """A message frame."""

    flags: int
    size: int
    body: bytes  #: the first bytes (at most :data:`PREVIEW`)

    def __post_init__(self) -> None:
        self.kind = "frame"

    @property
    def more(self) -> bool:
        return bool(self.flags & MORE)

    def describe(self) -> str:
        flag = "MORE" if self.more else "LAST"
        return f"frame {flag} {self.size} B {self.preview()}"

    def preview(self) -> str:
        return preview(self.body) + ("..." if self.size > len(self.body) else "")

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "flags": self.flags,
            "more": self.more,
            "size": self.size,
            "preview": self.preview(),
        }


@dataclass
class CommandFrame(WireEvent):
    """A command frame, decoded where its layout is known (``fields``)."""

    name: str
    size: int  #: the command's data size
    fields: dict[str, Any]

    def __post_init__(self) -> None:
        self.kind = "command"

    def describe(self) -> str:
        if not self.fields:
            return f"command {self.name} ({self.size} B)"
        parts = ", ".join(f"{k}={_show(v)}" for k, v in self.fields.items())
        return f"command {self.name} {parts}"

    def to_json(self) -> dict[str, Any]:
        fields = {k: preview(v, 64) if isinstance(v, bytes) else v for k, v in self.fields.items()}
        return {"kind": self.kind, "name": self.name, "size": self.size, **fields}


@dataclass
class Malformed(WireEvent):
    """A frame the protocol does not allow; the rest of this direction is shown raw."""

    reason: str

    def __post_init__(self) -> None:
        self.kind = "malformed"

    def describe(self) -> str:
        return f"malformed: {self.reason}"

    def to_json(self) -> dict[str, Any]:
        return {"kind": self.kind, "reason": self.reason}


def _show(value: Any) -> str:
    if isinstance(value, bytes):
        return preview(value, 64)
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k}: {_show(v)}" for k, v in value.items()) + "}"
    if isinstance(value, str):
        return json.dumps(value)
    return str(value)


def decode_command(name: bytes, data: bytes) -> dict[str, Any]:
    """The fields of a command's data, for the commands with a known layout ({} otherwise).
    Byte strings stay bytes (shown with :func:`preview`); PING's TTL is in seconds."""
    try:
        if name == b"READY":
            props = parse_properties(data)
            return {"properties": {k: _text_or_b64(v) for k, v in props.items()}}
        if name == b"ERROR":
            return {"reason": parse_error(data)}
        if name == b"PING":
            ttl, context = parse_ping(data)
            return {"ttl": ttl / 10, "context": context}
        if name == b"PONG":
            return {"context": data}
        if name in (b"SUBSCRIBE", b"CANCEL"):
            return {"topic": data}
        if name in (b"JOIN", b"LEAVE"):
            return {"group": data}
        if name in (b"ACK", b"CLR", b"COMP", b"NACK") and len(data) >= 9:
            out: dict[str, Any] = {"algo": chr(data[0]), "digest": data[1:9].hex()}
            if name == b"NACK":
                rest = data[9:]
                code = rest[0] if len(rest) >= 3 else 0
                size = int.from_bytes(rest[1:3], "big") if len(rest) >= 3 else 0
                out["code"] = f"0x{code:02x}"
                out["retryable"] = bool(code & 0x80)
                out["message"] = rest[3 : 3 + size].decode("utf-8", "replace")
            return out
        if name == b"HELLO" and len(data) >= 2:
            return {"version": f"{data[0]}.{data[1]}"}
        if name == b"MESSAGE":
            return {"encrypted": True}
    except ProtocolError as exc:
        return {"malformed": str(exc)}
    return {}


class WireDecoder:
    """One direction of a connection: ``feed(bytes) -> list[WireEvent]``.

    After a CURVE greeting the READY carried inside INITIATE/READY is encrypted, so those
    commands report sizes only; everything after is MESSAGE commands (sizes only).
    """

    def __init__(self) -> None:
        self._greeting = b""
        self._greeted = False
        self._raw = False
        self._frames = FrameDecoder()
        self.mechanism = ""

    @property
    def raw(self) -> bool:
        """True once the stream stopped being ZMTP (every later byte is reported raw)."""
        return self._raw

    def feed(self, data: bytes) -> list[WireEvent]:
        if self._raw:
            return [Raw(len(data), data[:PREVIEW])] if data else []
        events: list[WireEvent] = []
        if not self._greeted:
            need = GREETING_SIZE - len(self._greeting)
            self._greeting += data[:need]
            data = data[need:]
            try:
                check_greeting_prefix(self._greeting)
            except ProtocolError as exc:
                self._raw = True
                return [NotZmtp(str(exc), self._greeting + data[:PREVIEW])]
            if len(self._greeting) < GREETING_SIZE:
                return []
            g = self._greeting
            self.mechanism = g[12:32].rstrip(b"\0").decode("ascii", "replace")
            events.append(Greeting(g[10], g[11], self.mechanism, g[32] == 1))
            self._greeted = True
        try:
            frame = self._frames.next_frame(data)
            while frame is not None:
                events.append(self._frame(*frame))
                frame = self._frames.next_frame()
        except ProtocolError as exc:
            self._raw = True
            events.append(Malformed(str(exc)))
        return events

    def _frame(self, flags: int, body: bytes) -> WireEvent:
        if self.mechanism == "CURVE" and body[:8] == b"\x07MESSAGE":
            # libzmq sends CURVE's MESSAGE boxes as plain frames (no COMMAND flag), the MORE
            # flag of the message part inside; we decode either way.
            return CommandFrame("MESSAGE", len(body) - 8, {"encrypted": True})
        if not flags & COMMAND:
            return Frame(flags, len(body), bytes(body[:PREVIEW]))
        if flags & MORE:
            raise ProtocolError("command frame with the MORE flag set")
        command = parse_command(bytes(body))
        name = command.name.decode("ascii", "replace")
        if self.mechanism == "CURVE" and command.name == b"READY":
            fields: dict[str, Any] = {"encrypted": True}  # CURVE's READY metadata is boxed
        else:
            fields = decode_command(command.name, command.data)
        return CommandFrame(name, len(command.data), fields)


__all__ = [
    "PREVIEW",
    "CommandFrame",
    "Frame",
    "Greeting",
    "Malformed",
    "NotZmtp",
    "Raw",
    "WireDecoder",
    "WireEvent",
    "decode_command",
    "preview",
]
