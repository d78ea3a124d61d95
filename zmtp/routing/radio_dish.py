"""RADIO and DISH: group-based publish-subscribe (RFC 48). Single-part bodies only.

A DISH ``join()``s groups; each JOIN/LEAVE goes to its RADIOs as a ZMTP command (JOIN/LEAVE
are commands in every ZMTP version, as libzmq sends them), and all joins are sent again on
every reconnect. A RADIO message carries a group: on the wire it is two frames, the group
(MORE) then the body. Matching is exact (no prefixes). Both sides filter: RADIO sends a
message only to the DISHes that joined its group, DISH drops anything for a group it has not
joined.

API: ``send_group(group, data)`` / ``recv_group() -> (group, data)``; at the multipart API a
message is ``[group, data]``, the same two frames as on the wire. A group is 0-255 bytes
without zero bytes.

udp:// (:mod:`zmtp.engine.udp`) carries no commands, so a RADIO's udp pipe never hears a JOIN:
like libzmq's ``radio_t`` (its ``udp_pipes``, attached with ``subscribe_to_all``), the RADIO
sends every group to it and the DISH at the other end filters, with the same ``incoming_one``
as on every other transport.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..engine.pipe import Pipe
from ..engine.queue import Message
from ..errors import UnsupportedOperation
from ..protocol.commands import JOIN, LEAVE
from ..protocol.errors import InvalidArgument
from .base import FairQueue, RoutingStrategy
from .mixins import FanOut, Groups, check_group, purge_queued

if TYPE_CHECKING:
    from .base import RoutingHost


class _Member:
    """``pipe.state`` of a RADIO pipe: the groups its DISH joined."""

    __slots__ = ("early", "groups")

    def __init__(self) -> None:
        #: group -> JOIN count (libzmq keeps a multimap: two JOINs need two LEAVEs).
        self.groups: dict[bytes, int] = {}
        #: JOIN/LEAVE that arrived before the pipe was attached (an inproc DISH that connects
        #: sends them during its own handshake, before ours has run); applied on attach.
        self.early: list[tuple[bytes, bytes]] = []


def _member(pipe: Pipe) -> _Member:
    state = pipe.state
    if not isinstance(state, _Member):
        state = pipe.state = _Member()
    return state


def _check_group_message(socket_type: str, parts: Message) -> None:
    if len(parts) == 1:
        raise UnsupportedOperation(
            f"{socket_type} messages need a group: use send_group(group, data) "
            "or send_multipart([group, data])"
        )
    if len(parts) != 2:
        raise UnsupportedOperation(
            f"{socket_type} sockets send single-part messages only: [group, data], "
            f"got {len(parts)} parts"
        )
    check_group(parts[0])


class Radio(FanOut, RoutingStrategy):
    """Send each message to the DISHes in its group; never blocks (drops per full DISH,
    unless ``xpub_nodrop``, which libzmq also honours on RADIO)."""

    socket_type = "RADIO"
    can_recv = False
    send_check = True

    def __init__(self, socket: RoutingHost) -> None:
        RoutingStrategy.__init__(self, socket)
        self._members: dict[bytes, dict[Pipe, None]] = {}  # group -> pipes (ordered set)
        #: udp:// pipes (ordered set): they take every group (see the module docstring).
        self._udp: dict[Pipe, None] = {}
        self._nodrop = socket.options.xpub_nodrop

    def attach(self, pipe: Pipe) -> str | None:
        if pipe.endpoint.startswith("udp://"):  # (a pipe is named after its endpoint)
            self._udp[pipe] = None
            return None
        state = _member(pipe)
        early, state.early = state.early, []
        for name, group in early:
            self._membership(pipe, name, group)
        return None

    def disconnected(self, pipe: Pipe) -> None:
        self._forget(pipe)

    def detach(self, pipe: Pipe) -> None:
        self._forget(pipe)

    def _forget(self, pipe: Pipe) -> None:
        self._udp.pop(pipe, None)
        state = pipe.state
        if not isinstance(state, _Member):
            return
        pipe.state = None
        for group in state.groups:
            self._remove_member(group, pipe)

    def _remove_member(self, group: bytes, pipe: Pipe) -> None:
        members = self._members.get(group)
        if members is not None:
            members.pop(pipe, None)
            if not members:
                del self._members[group]

    def command(self, pipe: Pipe, name: bytes, data: bytes) -> bool:
        if name != JOIN and name != LEAVE:
            return False
        state = _member(pipe)
        if not pipe.attached:
            state.early.append((name, data))
        else:
            self._membership(pipe, name, data)
        return True

    def _membership(self, pipe: Pipe, name: bytes, group: bytes) -> None:
        groups = _member(pipe).groups
        if name == JOIN:
            groups[group] = groups.get(group, 0) + 1
            self._members.setdefault(group, {})[pipe] = None
            return
        count = groups.get(group, 0)
        if count > 1:
            groups[group] = count - 1
        elif count == 1:
            del groups[group]
            self._remove_member(group, pipe)

    def incoming(self, pipe: Pipe, messages: list[Message]) -> None:
        """RFC 48: a RADIO silently discards anything dishes send it."""

    def incoming_one(self, pipe: Pipe, message: Message) -> None:
        """See :meth:`incoming`."""

    def check_send(self, parts: Message) -> None:
        _check_group_message(self.socket_type, parts)

    def try_send(self, parts: Message) -> bool:
        members = self._members.get(parts[0])
        udp = self._udp
        if udp:
            # A udp pipe never joins, so it is never among the members: no duplicates.
            targets = [*members, *udp] if members else udp
            return self.fan_out(targets, parts, self._nodrop)
        if not members:
            return True
        return self.fan_out(members, parts, self._nodrop)


class Dish(FairQueue, Groups, RoutingStrategy):
    """Receive fairly from RADIOs, only messages for joined groups."""

    socket_type = "DISH"
    can_send = False

    def __init__(self, socket: RoutingHost) -> None:
        RoutingStrategy.__init__(self, socket)
        FairQueue.__init__(self)
        self._groups: set[bytes] = set()
        self._pipes: list[Pipe] = []

    def attach(self, pipe: Pipe) -> str | None:
        self._pipes.append(pipe)
        return None

    def detach(self, pipe: Pipe) -> None:
        if pipe in self._pipes:
            self._pipes.remove(pipe)

    def connected(self, pipe: Pipe) -> None:
        for group in self._groups:
            pipe.send_command(JOIN, group)

    def join(self, group: bytes) -> None:
        check_group(group)
        if group in self._groups:
            raise InvalidArgument(f"DISH already joined group {group!r}")  # libzmq: EINVAL
        self._groups.add(group)
        for pipe in self._pipes:
            if pipe.connected:
                pipe.send_command(JOIN, group)

    def leave(self, group: bytes) -> None:
        if group not in self._groups:
            raise InvalidArgument(f"DISH has not joined group {group!r}")  # libzmq: EINVAL
        self._groups.discard(group)
        for pipe in self._pipes:
            if pipe.connected:
                pipe.send_command(LEAVE, group)
        # Like SUB: what is already queued for the group is not delivered any more.
        groups = self._groups
        purge_queued(self._ready, lambda m: m[0] in groups)

    def incoming(self, pipe: Pipe, messages: list[Message]) -> None:
        groups = self._groups
        # A RADIO message is exactly [group, body]; anything else is malformed and dropped.
        kept = [m for m in messages if len(m) == 2 and m[0] in groups]
        if kept:
            pipe.inbox.put_many(kept)

    def incoming_one(self, pipe: Pipe, message: Message) -> None:
        if len(message) == 2 and message[0] in self._groups:
            pipe.inbox.put(message)

    try_recv = FairQueue.fq_recv
