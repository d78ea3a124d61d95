"""How ``zmtp cat`` writes messages out and reads them in: one message per line (or the whole
input, for ``raw``), in one of four formats.

* ``text``: out, the parts as UTF-8 (undecodable bytes escaped) joined by a TAB; in, each line
  is a one-part message (its newline removed).
* ``quoted``: each part in double quotes with C-style escapes (``\\n``, ``\\t``, ``\\\\``,
  ``\\"``, ``\\xNN`` for any other byte that is not printable ASCII), parts separated by one
  space: ``"hello" "\\x00\\x01"``. Reads back exactly what it writes, empty parts included.
* ``json``: one JSON array per line, each part a string (UTF-8) or ``{"base64": "..."}`` for
  bytes that are not UTF-8 text. Reads back exactly what it writes.
* ``raw``: out, the parts' bytes and nothing else; in, the whole input is one one-part message.
"""

from __future__ import annotations

import base64
import codecs
import json
import re
from collections.abc import Sequence

FORMATS = ("text", "quoted", "json", "raw")

_QUOTED_PART = re.compile(rb'"((?:[^"\\]|\\.)*)"')
_ESCAPES = {0x0A: b"\\n", 0x0D: b"\\r", 0x09: b"\\t", 0x5C: b"\\\\", 0x22: b'\\"'}


class FormatError(ValueError):
    """An input line that is not a message in the chosen format."""


def quote(part: bytes) -> bytes:
    out = bytearray(b'"')
    for byte in part:
        escaped = _ESCAPES.get(byte)
        if escaped is not None:
            out += escaped
        elif 0x20 <= byte < 0x7F:
            out.append(byte)
        else:
            out += b"\\x%02x" % byte
    out += b'"'
    return bytes(out)


def _json_part(part: bytes) -> str | dict[str, str]:
    try:
        return part.decode("utf-8")
    except UnicodeDecodeError:
        return {"base64": base64.b64encode(part).decode()}


def encode(message: Sequence[bytes], fmt: str) -> bytes:
    """One message as output bytes (with its newline, except ``raw``)."""
    if fmt == "raw":
        return b"".join(message)
    if fmt == "text":
        return b"\t".join(p.decode("utf-8", "backslashreplace").encode() for p in message) + b"\n"
    if fmt == "quoted":
        return b" ".join(quote(p) for p in message) + b"\n"
    if fmt == "json":
        return json.dumps([_json_part(p) for p in message]).encode() + b"\n"
    raise ValueError(f"unknown format {fmt!r}")


def decode(line: bytes, fmt: str) -> list[bytes]:
    """One input line (newline included or not) as a message."""
    if fmt == "raw":
        return [line]
    line = line.removesuffix(b"\n").removesuffix(b"\r")
    if fmt == "text":
        return [line]
    if fmt == "quoted":
        parts = []
        position = 0
        stripped = line.strip()
        for match in _QUOTED_PART.finditer(stripped):
            gap = stripped[position : match.start()]
            if gap.strip():
                raise FormatError(f"text outside quotes: {gap.strip()[:20]!r}")
            parts.append(codecs.escape_decode(match.group(1))[0])
            position = match.end()
        if stripped[position:].strip() or not parts:
            raise FormatError('expected one or more "quoted" parts')
        return parts
    if fmt == "json":
        try:
            value = json.loads(line)
        except json.JSONDecodeError as exc:
            raise FormatError(f"not JSON: {exc}") from None
        if not isinstance(value, list) or not value:
            raise FormatError("expected a JSON array of parts")
        message = []
        for part in value:
            if isinstance(part, str):
                message.append(part.encode("utf-8"))
            elif isinstance(part, dict) and set(part) == {"base64"}:
                message.append(base64.b64decode(part["base64"], validate=True))
            else:
                raise FormatError('a part is a string or {"base64": "..."}')
        return message
    raise ValueError(f"unknown format {fmt!r}")
