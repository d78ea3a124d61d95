"""The tracked ``send`` of a PUSH or SCATTER at QoS >= 1, made once per socket.

:func:`tracked_send` returns the coroutine function that :class:`zmtp_qos.Socket` binds as
its ``send``. It is a closure rather than a method so that what it reads per message (the
runtime, its ``queued`` table and ``send_hwm``, the raw socket's two prepared sends) are cell
loads fixed when the socket is made, not attribute loads through ``self`` and an assertion
that the runtime exists: a dozen interpreter steps fewer per message on the level-1 sender,
the QoS bottleneck (docs/performance.md, optimisation log "QoS sender send as a closure and
class attribute reads").
Level 0 and plain zmtp sockets never run it.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Coroutine
from typing import Any

import zmtp
from zmtp.pyzmq_hints import check_send_flags
from zmtp.socket import as_message

from .results import Receipt
from .runtime import Entry, QoSRuntime

_new_object = object.__new__

Payload = bytes | bytearray | memoryview | str
TrackedSend = Callable[[Payload, int | None], Coroutine[Any, Any, Receipt]]


def refuse_flags(flags: int, call: str) -> None:
    """pyzmq's ``flags`` on a QoS socket's own ``send``/``recv`` (a level where it adds QoS
    work: elsewhere the zmtp socket's own methods take them): 0 is no flags; others are
    refused, saying what to write instead. A receipt covers one whole message, so
    ``SNDMORE`` parts cannot be held for it; a non-blocking call is a zero timeout."""
    check_send_flags(flags)  # an unknown flag, or not an int: the same errors as zmtp's
    if flags:
        raise zmtp.UnsupportedOperation(
            f"a QoS socket's {call}() takes no pyzmq flags ({flags!r}) at QoS "
            "levels that track messages: for SNDMORE send the parts together with "
            "send_multipart([...]) (one receipt per message); for NOBLOCK set "
            "send_timeout=0 or recv_timeout=0 (TimedOut, zmtp's zmq.Again)"
        )


def tracked_send(
    runtime: QoSRuntime, raw: zmtp.Socket, wait_for_slot: Callable[[], Awaitable[None]]
) -> TrackedSend:
    """The ``send`` of a tracked socket: ``runtime`` is its QoS runtime, ``raw`` the zmtp
    socket under it, ``wait_for_slot`` what blocks while ``send_hwm`` messages are unsettled
    (up to ``send_timeout``).

    The rules it keeps, as ``zmtp_qos.Socket.send_multipart`` does: the slot is taken and
    the entry filed in ``runtime.queued`` (by the id of the list zmtp queues) before zmtp
    sees the message, so a write, however soon, finds its entry; a send that fails before
    zmtp took the message (timeout, cancellation, close, a wrong type) unregisters it, so
    nothing is tracked and its slot is free; once queued, the receipt is returned and stays
    valid whatever happens to the caller. A one-part ``bytes`` message with a peer ready
    (``try_send_part``: the message is a one-part list of bytes by construction) awaits no
    second coroutine.
    """
    queued = runtime.queued
    send_hwm = runtime.send_hwm  # fixed when the runtime is made
    try_send_part = raw.try_send_part
    send_prepared = raw.send_prepared
    unregister = runtime.unregister

    async def send(data: Payload, flags: int | None = None) -> Receipt:
        """Send one part and return its :class:`~zmtp_qos.Receipt` (str as UTF-8; anything
        else refused as zmtp refuses it: the digest is over the bytes on the wire).
        pyzmq's ``flags``: see :func:`refuse_flags`."""
        if flags is not None:  # looked at only when given
            refuse_flags(flags, "send")
        if type(data) is bytes:
            message = [data]
        else:
            message = as_message((data,))
            data = message[0]
        unsettled = runtime.unsettled
        if unsettled >= send_hwm:
            await wait_for_slot()
            unsettled = runtime.unsettled
        # Entry.new(message) and runtime.register inlined (one call fewer per message; keep
        # the three in step): the entry keeps the bytes, the list is zmtp's (see Entry).
        receipt = queued[id(message)] = _new_object(Entry)
        receipt.outcome = None
        receipt.watched = None
        receipt.parts = data
        runtime.unsettled = unsettled + 1
        if try_send_part(message):  # queued: no second coroutine awaited
            return receipt
        try:
            await send_prepared(message)
        except BaseException:
            unregister(message)  # never queued: no receipt, no dead letter
            raise
        return receipt

    return send
