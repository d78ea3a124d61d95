"""ZMTP metadata properties (READY / INITIATE bodies, ZAP metadata).

Encoding (RFC 37): ``name-len(1) name value-len(4, BE) value``, repeated. We send the canonical
spellings (libzmq compares ``Socket-Type`` and ``Identity`` case-sensitively) and read names
case-insensitively, as the RFC says: :class:`Properties` keeps the names as sent but looks them up
without regard to case.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from struct import Struct

from .errors import ProtocolError

_U32 = Struct(">I")
_NAME_CHARS = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_.+")


class Properties(Mapping[str, bytes]):
    """Read-only, case-insensitive mapping of property name to raw value."""

    __slots__ = ("_items", "_lower")

    def __init__(self, items: Mapping[str, bytes] | None = None) -> None:
        items = dict(items or {})
        self._lower = {k.lower(): k for k in items}
        # Names differing only in case are one property: keep the last, as lookups do, so that
        # iteration, len() and items() agree with [] (a peer may send both spellings).
        self._items: dict[str, bytes] = {k: items[k] for k in self._lower.values()}

    def __getitem__(self, name: str) -> bytes:
        return self._items[self._lower[name.lower()]]

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and name.lower() in self._lower

    def __iter__(self) -> Iterator[str]:
        return iter(self._items)

    def __len__(self) -> int:
        return len(self._items)

    def __repr__(self) -> str:
        return f"Properties({self._items!r})"

    def text(self, name: str, default: str = "") -> str:
        """A value decoded as text (latin-1 never fails), or ``default``."""
        value = self.get(name)
        return default if value is None else value.decode("latin-1")


def encode_properties(props: Mapping[str, bytes]) -> bytes:
    """Encode properties in the given order."""
    out: list[bytes] = []
    for name, value in props.items():
        raw = name.encode("ascii")
        if not 0 < len(raw) < 256 or not set(raw) <= _NAME_CHARS:
            raise ValueError(f"invalid property name {name!r}")
        if len(value) > 0x7FFFFFFF:
            raise ValueError(f"property {name!r} value too long")
        out += (bytes((len(raw),)), raw, _U32.pack(len(value)), bytes(value))
    return b"".join(out)


def parse_properties(data: bytes) -> Properties:
    """Decode a property list; any truncation or trailing garbage is a protocol error."""
    items: dict[str, bytes] = {}
    pos, end = 0, len(data)
    while pos < end:
        n = data[pos]
        pos += 1
        if n == 0 or pos + n + 4 > end:
            raise ProtocolError("malformed metadata: truncated property name")
        name = bytes(data[pos : pos + n])
        if not set(name) <= _NAME_CHARS:
            raise ProtocolError(f"malformed metadata: invalid property name {name!r}")
        pos += n
        (vlen,) = _U32.unpack_from(data, pos)
        pos += 4
        if pos + vlen > end:
            raise ProtocolError(f"malformed metadata: property {name.decode()} value truncated")
        items[name.decode("ascii")] = bytes(data[pos : pos + vlen])
        pos += vlen
    return Properties(items)
