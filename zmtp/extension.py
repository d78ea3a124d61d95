"""Extension points: how a layer above zmtp (the QoS package) plugs into a socket.

Subclass :class:`SocketExtension`, override what you need, and install it with
``socket.install_extension(ext)`` before the first bind/connect. Every hook has a no-op
default, and a socket without an extension never calls any of them: the hot paths test one
attribute against None. The hooks (docs/extensions.md lists them too):

1. :meth:`handshake_properties` - extra READY/INITIATE metadata we advertise (``X-QoS``...).
2. :meth:`validate_peer` - after the handshake, reject a peer with a reason
   (-> ``HandshakeFailed(kind="rejected")`` monitor event, connection closed).
3. :meth:`on_command` - every post-handshake command the core and the socket type do not
   consume, per connection, on every transport (inproc included).
4. Routing hooks: :meth:`before_send` (a message is about to be written to a peer, wire parts
   available), :meth:`on_receive` (a message arrived; return False to consume it), their
   batch forms :meth:`before_send_batch` / :meth:`on_receive_batch` (tcp/ipc call these),
   :meth:`on_received_batch` (the same for an extension that sets :attr:`bare_single_part`:
   one-part messages as bare ``bytes``), :meth:`pipe_connected` / :meth:`pipe_disconnected` /
   :meth:`pipe_removed`, :meth:`can_send`
   (send-slot gating; call ``socket.wake_senders()`` when a gate opens), :meth:`can_receive`
   (read gating: a tcp/ipc connection reads no more input while it is False; call
   ``socket.wake_readers()`` when it opens), and :meth:`linger` (``close()`` waits on it
   within the socket's linger time).
5. Sending a command on a connection: ``pipe.send_command(name, data)``, or several encoded
   frames at once: ``pipe.send_command_frames(frames)``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from .engine.pipe import Pipe
from .engine.queue import Message, Received, as_parts
from .monitor import PeerInfo
from .protocol.frames import Command, expand_runs


class SocketExtension:
    """Base class for socket extensions. All hooks are optional."""

    #: Whether this class overrides :meth:`can_send` (set for every subclass as it is
    #: defined): a send path may then skip the call for an extension that never gates, as
    #: the load balancer's single-peer path does (one Python call fewer per message).
    #: Installing the extension copies it onto the instance: the load balancer reads it per
    #: message, and CPython 3.11 specialises the read of an instance attribute, not that of
    #: a class attribute through an instance (a generic lookup, ~400 instructions).
    gates_sends: bool = False
    #: Whether this extension takes a tcp/ipc read's messages as ``zmtp.engine.queue.Received``
    #: items through :meth:`on_received_batch`: a one-part message as its bare ``bytes``,
    #: a multipart one as its list. Only for socket types whose own receive path is bare
    #: (``RoutingStrategy.bare_single_part``: PULL, SUB, PAIR, DEALER, CHANNEL, CLIENT,
    #: GATHER); elsewhere the extension keeps getting lists through
    #: :meth:`on_receive_batch`. Why: an extension that looks at every message (QoS digests
    #: each one) otherwise forces a list per message on the decoder, the inbox and the
    #: collector, which a socket without an extension does not pay (docs/extensions.md).
    #: inproc and udp still call :meth:`on_receive` with lists. Off by default.
    bare_single_part: ClassVar[bool] = False

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls.gates_sends = cls.can_send is not SocketExtension.can_send

    def handshake_properties(self) -> Mapping[str, bytes]:
        """Properties added to our handshake metadata (names must not be Socket-Type/Identity)."""
        return {}

    def validate_peer(self, pipe: Pipe, peer: PeerInfo) -> str | None:
        """Return a reason to reject this peer, or None to accept it."""
        return None

    def pipe_connected(self, pipe: Pipe) -> None:
        """A connection to this pipe's peer completed its handshake and was accepted."""

    def pipe_disconnected(self, pipe: Pipe, reason: str) -> None:
        """The connection behind ``pipe`` ended (a connect() pipe may reconnect later)."""

    def pipe_removed(self, pipe: Pipe) -> None:
        """``pipe`` is gone for good (accepted connection closed, or disconnect()).

        Called before its outbox is dropped: what was queued for that peer and never written
        is still in ``pipe.outbox``, for an extension that must not lose it to take
        (``pipe.outbox.clear()`` returns it); whatever is left there is dropped."""

    def on_command(self, pipe: Pipe, name: bytes, data: bytes) -> None:
        """A command nobody else handled arrived from ``pipe``'s peer."""

    def on_command_batch(self, pipe: Pipe, commands: list[Command]) -> None:
        """A run of commands from ``pipe``'s peer (tcp/ipc: consecutive commands of one
        read), in order; the default calls :meth:`on_command` for each. inproc calls
        :meth:`on_command` per command. Commands named in :meth:`command_runs` may come as
        ``zmtp.protocol.frames.CommandRun`` items (the default expands them)."""
        on_command = self.on_command
        for command in expand_runs(commands):
            on_command(pipe, command.name, command.data)

    def command_runs(self) -> Mapping[bytes, int]:
        """Commands (name -> exact data size) that :meth:`on_command_batch` takes as runs.

        Over tcp/ipc in clear (NULL, PLAIN), consecutive frames of such a command in one read
        arrive as one ``zmtp.protocol.frames.CommandRun`` holding their wire bytes,
        instead of a ``Command`` each: an extension that receives a fixed-size command
        per message it sent (an acknowledgement) can then read a read's worth with C-level
        slicing. Frames of another size, inproc and CURVE connections still give ordinary
        commands. Asked once per connection; the default asks for none.
        """
        return {}

    def before_send(self, pipe: Pipe, message: Message) -> None:
        """``message`` (wire parts) is about to be written to ``pipe``'s peer."""

    def on_receive(self, pipe: Pipe, message: Message) -> bool:
        """``message`` arrived from ``pipe``; return False to consume it (not delivered)."""
        return True

    def before_send_batch(self, pipe: Pipe, messages: list[Message]) -> None:
        """A tcp/ipc writer is about to write ``messages`` to ``pipe``'s peer, in order.

        The default calls :meth:`before_send` for each; an extension with per-message work
        overrides this to do it in one loop (one Python call per batch instead of per
        message). inproc calls :meth:`before_send` per message.
        """
        before_send = self.before_send
        for message in messages:
            before_send(pipe, message)

    def on_receive_batch(self, pipe: Pipe, messages: list[Message]) -> list[Message]:
        """The messages of one tcp/ipc read arrived from ``pipe``; return those to deliver,
        in order (the default asks :meth:`on_receive` about each). Override it to answer a
        whole read at once, e.g. with :meth:`Pipe.send_command_frames`. inproc and udp call
        :meth:`on_receive` per message.
        """
        on_receive = self.on_receive
        return [message for message in messages if on_receive(pipe, message)]

    def on_received_batch(self, pipe: Pipe, messages: list[Received]) -> list[Received]:
        """:meth:`on_receive_batch` for an extension that set :attr:`bare_single_part` (and a
        socket type with a bare receive path): the messages of one tcp/ipc read, each a
        one-part message as its bare ``bytes`` or a multipart one as its list of parts;
        return those to deliver, in order, in either form (the receive API gives the
        application the same types either way). The default hands lists to
        :meth:`on_receive_batch`, so setting the flag alone changes nothing an extension sees.
        """
        return list(self.on_receive_batch(pipe, [as_parts(m) for m in messages]))

    def can_send(self, pipe: Pipe) -> bool:
        """Whether the socket may route a new message to ``pipe`` now (send-slot gating)."""
        return True

    def can_receive(self, pipe: Pipe) -> bool:
        """Whether the tcp/ipc connection behind ``pipe`` may read more input now.

        Receive-side back-pressure for an extension that consumes messages itself (so the
        inbox's HWM never stops the reader): while False, the connection reads nothing (the
        peer's messages wait in its queues and the kernel's buffers, as when ``recv_hwm`` is
        reached) but stays up, and what we send (commands included) still goes out. Asked
        before each read after the handshake; call ``socket.wake_readers()`` when it turns
        True. inproc and udp deliver without a reader and never ask.
        """
        return True

    async def linger(self) -> None:
        """Wait until the extension's own state allows closing (bounded by the socket linger)."""
