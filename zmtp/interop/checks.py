"""The checks rows are written with: sample messages, transfers compared in order, waiting for
subscriptions on messages (never on delays), and what each side learned about the other."""

from __future__ import annotations

import itertools
import time
from collections.abc import Sequence
from types import ModuleType

import anyio

from ..monitor import PeerInfo
from .common import (
    DEFAULT_COUNT,
    ONE_MIB,
    PROBE,
    CaseFailed,
    Message,
    import_zmq,
    leaf_exception,
)
from .ends import MessageEnd
from .libzmq import LibzmqSocket


def big_payload(size: int = ONE_MIB) -> bytes:
    """A deterministic payload that is not all one byte value."""
    pattern = bytes(range(256))
    return (pattern * (size // 256 + 1))[:size]


def sample_messages(count: int = DEFAULT_COUNT) -> list[Message]:
    """Single, multipart, empty and 1 MiB messages, then ``count`` numbered ones."""
    fixed: list[Message] = [
        [b"hello"],
        [b"multi", b"part", b"message"],
        [b""],
        [b"", b"empty frames around", b""],
        [bytes(range(256))],
        [big_payload()],
        [b"after the big one"],
    ]
    return fixed + [[b"seq", i.to_bytes(4, "big")] for i in range(count)]


def describe_message(message: Message | None) -> str:
    if message is None:
        return "nothing"
    sizes = ", ".join(f"{len(p)} B" if len(p) > 24 else repr(p) for p in message[:4])
    more = ", ..." if len(message) > 4 else ""
    return f"{len(message)} part(s) [{sizes}{more}]"


def compare_messages(sent: Sequence[Message], received: Sequence[Message]) -> None:
    """Raise CaseFailed describing the first difference (content, order, count)."""
    if list(sent) == list(received):
        return
    for index in range(max(len(sent), len(received))):
        a = sent[index] if index < len(sent) else None
        b = received[index] if index < len(received) else None
        if a != b:
            raise CaseFailed(
                f"message #{index} differs: sent {describe_message(a)}, "
                f"received {describe_message(b)}"
            )


async def transfer(
    sender: MessageEnd,
    receiver: MessageEnd,
    messages: Sequence[Message],
    timeout: float | None = None,
) -> int:
    """Send ``messages`` from ``sender`` while ``receiver`` reads them; compare everything.

    Returns the number of messages. Raises CaseFailed on any difference, TimeoutError if the
    messages do not all get through in time.
    """
    received: list[Message] = []

    async def receive() -> None:
        received.extend(await receiver.recv_many(len(messages), timeout))

    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(receive)
            await sender.send_many(messages, timeout)
    except Exception as exc:
        raise leaf_exception(exc) from None
    compare_messages(messages, received)
    return len(messages)


def who(end: MessageEnd) -> str:
    """Who an end is, for messages: "libzmq ROUTER", "zmtp ROUTER"."""
    return f"libzmq {end.type_name}" if isinstance(end, LibzmqSocket) else repr(end)


async def expect_messages(
    receiver: MessageEnd,
    expected: Sequence[Message],
    *,
    skip: bytes | None = None,
    timeout: float | None = None,
) -> None:
    """Receive ``len(expected)`` messages and compare them, order included (CaseFailed naming
    the receiver and the first difference). ``skip``: ignore messages whose first frame is
    exactly that (late probes, see :func:`probe_until_received`)."""
    if skip is None:
        received = await receiver.recv_many(len(expected), timeout)
    else:
        received = await recv_skipping(receiver, len(expected), skip, timeout)
    try:
        compare_messages(expected, received)
    except CaseFailed as exc:
        raise CaseFailed(f"{who(receiver)}: {exc}") from None


async def recv_briefly(receiver: MessageEnd, seconds: float) -> Message | None:
    """The next message if one arrives within ``seconds``, else None."""
    try:
        [message] = await receiver.recv_many(1, seconds)
    except TimeoutError:
        return None
    return message


async def recv_skipping(
    receiver: MessageEnd, count: int, skip: bytes = PROBE, timeout: float | None = None
) -> list[Message]:
    """Receive ``count`` messages, ignoring those whose first frame is exactly ``skip``."""
    received: list[Message] = []
    while len(received) < count:
        [message] = await receiver.recv_many(1, timeout)
        if message[0] != skip:
            received.append(message)
    return received


async def probe_until_received(
    sender: MessageEnd,
    receiver: MessageEnd,
    topic: bytes = PROBE,
    *,
    wait: float = 0.02,
    timeout: float | None = None,
) -> int:
    """Send numbered probes ``[topic, n]`` until ``receiver`` gets one; returns how many were
    sent.

    This is how a case waits for subscriptions to reach a publisher: on a message, never on a
    delay (a libzmq publisher applies subscriptions only when its thread touches the socket,
    which each probe does). Subscribe to ``topic`` *after* the topics the case checks, on the
    same connection: a probe getting through then proves the earlier ones were applied. Probes
    sent after the first one that arrived may still come: read past them with ``skip=topic``.
    """
    seconds = timeout or receiver.timeout
    deadline = time.monotonic() + seconds
    sent = 0
    while True:
        await sender.send_many([[topic, sent.to_bytes(4, "big")]])
        sent += 1
        message = await recv_briefly(receiver, wait)
        if message is not None:
            if message[0] != topic:
                raise CaseFailed(
                    f"{who(receiver)} expected a probe, received {describe_message(message)}"
                )
            return sent
        if time.monotonic() >= deadline:
            raise TimeoutError(f"{who(receiver)} received none of {sent} probes in {seconds:g}s")


async def publish_until_cancelled(
    sender: MessageEnd,
    receiver: MessageEnd,
    cancelled: bytes,
    kept: bytes,
    *,
    skip: bytes = PROBE,
    timeout: float | None = None,
) -> int:
    """After the receiver unsubscribed ``cancelled`` (which the publisher applies in its own
    time), publish ``[cancelled, n]`` then ``[kept, n]`` until ``[kept, n]`` arrives without its
    twin; returns the rounds. For an XSUB receiver, which does not filter, this shows that the
    *publisher* honoured the cancel. Any other message fails the case."""
    seconds = timeout or receiver.timeout
    deadline = time.monotonic() + seconds
    for n in itertools.count():
        number = n.to_bytes(4, "big")
        await sender.send_many([[cancelled, number], [kept, number]])
        [first] = await recv_skipping(receiver, 1, skip, timeout)
        if first == [kept, number]:
            return n + 1
        [second] = await recv_skipping(receiver, 1, skip, timeout)
        if [first, second] != [[cancelled, number], [kept, number]]:
            raise CaseFailed(
                f"{who(receiver)} received {describe_message(first)} then "
                f"{describe_message(second)} in round {n} of the unsubscribe check"
            )
        if time.monotonic() >= deadline:
            break
    raise TimeoutError(
        f"the publisher still sent {cancelled!r} after {n + 1} rounds in {seconds:g}s"
    )


def libzmq_zmtp_version(zmq: ModuleType | None = None) -> tuple[int, int]:
    """The ZMTP version libzmq announces: 3.1 from libzmq 4.3.3 on, 3.0 before."""
    info = tuple((zmq or import_zmq()).zmq_version_info())
    return (3, 1) if info >= (4, 3, 3) else (3, 0)


def expect_peer(peer: PeerInfo, socket_type: str, mechanism: str = "NULL") -> None:
    """Check what our handshake learned about a libzmq peer."""
    if peer.socket_type != socket_type:
        raise CaseFailed(f"our PeerInfo says Socket-Type {peer.socket_type!r}, not {socket_type}")
    if peer.properties.get("Socket-Type") != socket_type.encode():
        raise CaseFailed(f"peer properties lack Socket-Type {socket_type}: {peer.properties!r}")
    if peer.mechanism != mechanism:
        raise CaseFailed(f"our PeerInfo says mechanism {peer.mechanism}, not {mechanism}")
    expected = libzmq_zmtp_version()
    if peer.zmtp_version != expected:
        raise CaseFailed(f"libzmq announces ZMTP {expected}, PeerInfo says {peer.zmtp_version}")


def expect_libzmq_saw(theirs: LibzmqSocket, socket_type: str, identity: str | None = None) -> None:
    """Check the properties libzmq attached to a message from us (read by ``recv_many``)."""
    props = theirs.peer_properties
    if props.get("Socket-Type") != socket_type:
        raise CaseFailed(f"libzmq saw Socket-Type {props.get('Socket-Type')!r}, not {socket_type}")
    if props.get("Identity") != identity:
        raise CaseFailed(f"libzmq saw Identity {props.get('Identity')!r}, expected {identity!r}")
