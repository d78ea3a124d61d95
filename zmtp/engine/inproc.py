"""inproc://: sockets in one process linked directly, with no encoding and no tasks.

Linking two sockets creates a pipe on each side whose queues are shared: the connecting side's
outbox *is* the binding side's inbox and vice versa, so a message is a list of parts passed by
reference. Sending to an inproc pipe calls the receiving socket's routing strategy directly (so
SUB filtering, XPUB subscription handling and extensions' receive hooks apply as on tcp), and
commands go straight to the peer's command handler. The HWM of a direction is the sender's
``send_hwm`` plus the receiver's ``recv_hwm``, as in libzmq.

Connecting before the name is bound works like libzmq: the connect pipe queues messages and is
linked when a socket binds the name. When the binding socket goes away, the connecting pipe
waits for the next bind of that name.
"""

from __future__ import annotations

import errno
from collections.abc import Callable
from typing import TYPE_CHECKING

from ..monitor import (
    Accepted,
    Connected,
    Disconnected,
    HandshakeFailed,
    HandshakeSucceeded,
    PeerInfo,
)
from ..options import hwm_capacity
from ..protocol.properties import Properties
from ..protocol.sockettypes import compatible
from ..routing.base import RoutingStrategy
from .pipe import Pipe
from .queue import Message, MessageQueue

if TYPE_CHECKING:
    from .contract import ConnectionHost

_bound: dict[str, ConnectionHost] = {}
_pending: dict[str, list[tuple[ConnectionHost, Pipe]]] = {}
#: Live links: dialer pipe -> (binding socket, its pipe).
_links: dict[Pipe, tuple[ConnectionHost, ConnectionHost, Pipe]] = {}


def bind(socket: ConnectionHost, name: str) -> None:
    if name in _bound:
        raise OSError(errno.EADDRINUSE, f"inproc://{name} is already bound")
    _bound[name] = socket
    for dialer, pipe in _pending.pop(name, []):
        _link(name, dialer, pipe, socket)


def connect(socket: ConnectionHost, name: str, pipe: Pipe) -> None:
    binder = _bound.get(name)
    if binder is None:
        _pending.setdefault(name, []).append((socket, pipe))
    else:
        _link(name, socket, pipe, binder)


def disconnect(socket: ConnectionHost, name: str, pipe: Pipe) -> None:
    waiting = _pending.get(name)
    if waiting is not None:
        waiting[:] = [(s, p) for s, p in waiting if p is not pipe]
        if not waiting:
            del _pending[name]
    _unlink(pipe, "disconnected", requeue=False)


def unbind(socket: ConnectionHost, name: str, close_connections: bool) -> None:
    if _bound.get(name) is socket:
        del _bound[name]
    if close_connections:
        for dialer_pipe, (_, binder, _) in list(_links.items()):
            if binder is socket and dialer_pipe.endpoint == f"inproc://{name}":
                _unlink(dialer_pipe, "endpoint unbound", requeue=True)


def drop(pipe: Pipe, reason: str) -> None:
    """Cut the link ``pipe`` (on either side) belongs to, as if its connection had failed."""
    if pipe in _links:
        _unlink(pipe, reason, requeue=False)
        return
    for dialer_pipe, (_, _, binder_pipe) in list(_links.items()):
        if binder_pipe is pipe:
            _unlink(dialer_pipe, reason, requeue=True)
            return


def bound_socket(name: str) -> ConnectionHost | None:
    """The socket bound at ``inproc://name`` in this process, if any (ZAP finds its handler
    so)."""
    return _bound.get(name)


def socket_closed(socket: ConnectionHost) -> None:
    """Forget every registration and link of a closing socket."""
    for name, bound in list(_bound.items()):
        if bound is socket:
            del _bound[name]
    for name, waiting in list(_pending.items()):
        waiting[:] = [(s, p) for s, p in waiting if s is not socket]
        if not waiting:
            del _pending[name]
    for dialer_pipe, (dialer, binder, _) in list(_links.items()):
        if dialer is socket:
            _unlink(dialer_pipe, "peer closed", requeue=False)
        elif binder is socket:
            _unlink(dialer_pipe, "peer closed", requeue=True)


def _peer_info(of: ConnectionHost, endpoint: str) -> PeerInfo:
    props = of.local_properties()
    return PeerInfo(
        socket_type=of.socket_type,
        identity=props.get("Identity", b""),
        properties=Properties(props),
        zmtp_version=(3, 1),
        mechanism="NULL",
        endpoint=endpoint,
        address="inproc",
    )


def _link(name: str, dialer: ConnectionHost, dpipe: Pipe, binder: ConnectionHost) -> None:
    endpoint = f"inproc://{name}"
    if not compatible(dialer.socket_type, binder.socket_type):
        mismatch = (
            f"incompatible socket types: {dialer.socket_type} cannot talk to {binder.socket_type}"
        )
        dialer.emit(HandshakeFailed(endpoint, mismatch, "protocol", "inproc"))
        binder.emit(HandshakeFailed(endpoint, mismatch, "protocol", "inproc"))
        return
    to_binder, to_dialer = dpipe.outbox, dpipe.inbox
    to_binder.capacity = hwm_capacity(dialer.options.send_hwm) + hwm_capacity(
        binder.options.recv_hwm
    )
    to_dialer.capacity = hwm_capacity(binder.options.send_hwm) + hwm_capacity(
        dialer.options.recv_hwm
    )
    bpipe = binder.new_pipe(endpoint, persistent=False, inbox=to_binder, outbox=to_dialer)
    # What the dialer queued before the bind is handed over once both handshakes are done,
    # behind what its strategy sends while they run (a probe, a welcome message: the first
    # messages of a connection), which waits aside meanwhile: the queue is the binder's inbox
    # already, and the binder's strategy may put its own first message there (a ROUTER's
    # connect notification).
    backlog = list(to_binder.items)
    to_binder.items.clear()
    early: list[Message] = []
    dpipe.send = early.append
    dpipe.send_is_put = False
    _hand_over(binder, bpipe, dialer, dpipe)
    dialer.emit(Connected(endpoint, "inproc"))
    binder.emit(Accepted(endpoint, "inproc"))
    dpeer, bpeer = _peer_info(binder, endpoint), _peer_info(dialer, endpoint)

    def to_binder_command(command: bytes, data: bytes) -> None:
        binder.command(bpipe, command, data)

    def to_dialer_command(command: bytes, data: bytes) -> None:
        dialer.command(dpipe, command, data)

    reason = dialer.pipe_handshake(dpipe, dpeer, to_binder_command)
    if reason is None:
        reason = binder.pipe_handshake(bpipe, bpeer, to_dialer_command)
        if reason is not None:
            dialer.pipe_disconnected(dpipe, reason)
    if reason is not None:
        # The queue is the dialer's outbox again, waiting for a peer; what its strategy sent
        # during the refused handshake is dropped (the next link sends its own).
        _queue_here(dpipe)
        to_binder.items.extend(backlog)
        # Unhook the refused binder pipe from the queues it shared with the dialer, or the
        # dialer's next message would wake the binder and be read from a refused peer.
        to_binder.on_data = to_dialer.on_space = _noop_data
        to_binder.capacity = hwm_capacity(dialer.options.send_hwm)
        binder.pipe_refused(bpipe)
        dialer.emit(HandshakeFailed(endpoint, reason, "rejected", "inproc"))
        binder.emit(HandshakeFailed(endpoint, reason, "rejected", "inproc"))
        return
    _links[dpipe] = (dialer, binder, bpipe)
    dialer.emit(HandshakeSucceeded(endpoint, dpeer))
    binder.emit(HandshakeSucceeded(endpoint, bpeer))
    # Hand both over as if just sent, so that they go through the same hooks (the dialer's
    # before_send, the binder's on_receive and filtering).
    _hand_over(dialer, dpipe, binder, bpipe)
    for message in (*early, *backlog):
        dpipe.send(message)


def _hand_over(sender: ConnectionHost, spipe: Pipe, receiver: ConnectionHost, rpipe: Pipe) -> None:
    """Set ``spipe.send`` to :func:`_sender`'s function (and ``send_is_put``, which lets a
    strategy inline the inbox's ``put``)."""
    send = spipe.send = _sender(sender, spipe, receiver, rpipe)
    spipe.send_is_put = send == spipe.outbox.put  # the peer's inbox is our outbox


def _queue_here(pipe: Pipe) -> None:
    """No peer: ``pipe`` queues in its own outbox until the next link."""
    pipe.send = pipe.outbox.put
    pipe.send_is_put = True


def _sender(
    sender: ConnectionHost, spipe: Pipe, receiver: ConnectionHost, rpipe: Pipe
) -> Callable[[list[bytes]], None]:
    """The function ``sender`` uses to hand ``receiver`` a message over ``spipe``, arriving
    on ``rpipe``.

    When the receiver neither filters nor inspects messages (no extension, the strategy's
    default ``incoming_one``) and the sender has no extension, that is the inbox's own
    ``put``: no extra call per message. A sender's extension sees the message in
    ``before_send`` when it is handed over, as a stream connection's writer would show it.
    """
    default = type(receiver.strategy).incoming_one is RoutingStrategy.incoming_one
    ext = sender.extension
    if ext is None and receiver.extension is None and default:
        return rpipe.inbox.put
    incoming_one = receiver.incoming_one
    if ext is None:

        def send(message: list[bytes]) -> None:
            incoming_one(rpipe, message)

        return send
    before_send = ext.before_send

    def send_with_hook(message: list[bytes]) -> None:
        before_send(spipe, message)
        incoming_one(rpipe, message)

    return send_with_hook


def _unlink(dpipe: Pipe, reason: str, requeue: bool) -> None:
    link = _links.pop(dpipe, None)
    if link is None:
        return
    dialer, binder, bpipe = link
    # Each shared queue now belongs to its reader alone: messages already handed over stay
    # readable (as on tcp), and the writers get fresh outboxes, so that dropping a pipe's
    # undelivered outbox can never empty the peer's inbox.
    shared = dpipe.outbox
    dpipe.outbox = MessageQueue(hwm_capacity(dialer.options.send_hwm))
    dpipe.outbox.on_space = shared.on_space  # the dialer's sender wake-up
    _queue_here(dpipe)  # queued until the next link
    dpipe.inbox.on_space = _noop_data  # no producer any more
    bpipe.outbox = MessageQueue(hwm_capacity(binder.options.send_hwm))
    _queue_here(bpipe)
    dialer.pipe_disconnected(dpipe, reason)
    binder.pipe_disconnected(bpipe, reason)
    dialer.emit(Disconnected(dpipe.endpoint, reason, "inproc"))
    binder.emit(Disconnected(bpipe.endpoint, reason, "inproc"))
    if requeue and not dialer.closing and dialer.owns(dpipe):
        name = dpipe.endpoint.removeprefix("inproc://")
        _pending.setdefault(name, []).append((dialer, dpipe))


def _noop_data() -> None:
    return None
