"""Moving messages: framing edge cases, ordering, HWM and blocking, cancel safety, timeouts.

Every test runs on tcp, ipc (path and abstract) and inproc, with PUSH/PULL and PAIR where the
behaviour applies to both, on asyncio and trio.
"""

from __future__ import annotations

from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass

import anyio
import pytest

import zmtp
from tests import test_engine_helpers as helpers
from tests.test_engine_helpers import (
    TIMEOUT,
    Link,
    linked,
    unique_name,
    wait_event,
)

pytestmark = pytest.mark.anyio

endpoint = helpers.endpoint  # fixture
transport = helpers.transport  # fixture


@dataclass(frozen=True)
class Pattern:
    binder: zmtp.SocketType
    connector: zmtp.SocketType


PATTERNS = {
    "push-pull": Pattern(binder=zmtp.PULL, connector=zmtp.PUSH),
    "pair": Pattern(binder=zmtp.PAIR, connector=zmtp.PAIR),
}


@pytest.fixture(params=sorted(PATTERNS))
def pattern(request: pytest.FixtureRequest) -> Pattern:
    """The connector sends, the binder receives."""
    return PATTERNS[request.param]


async def recv_all(sock: zmtp.Socket, n: int) -> list[list[bytes]]:
    with anyio.fail_after(TIMEOUT):
        return [await sock.recv_multipart() for _ in range(n)]


# --------------------------------------------------------------------------- messages


@pytest.mark.parametrize(
    "message",
    [
        [b"hello"],
        [b"a", b"bb", b"ccc"],
        [b""],
        [b"", b""],
        [b"head", b"", b"tail"],
        [b"x" * 255, b"y" * 256],  # the short/long frame boundary
    ],
    ids=["single", "multipart", "empty", "two-empty", "empty-middle", "short-long-boundary"],
)
async def test_message_arrives_intact(
    endpoint: str, pattern: Pattern, message: list[bytes]
) -> None:
    async with linked(pattern.binder, pattern.connector, endpoint) as link:
        await link.connector.send_multipart(message)
        assert await recv_all(link.binder, 1) == [message]


async def test_one_mib_messages(endpoint: str, pattern: Pattern) -> None:
    big = bytes(range(256)) * 4096  # 1 MiB, not all one byte value
    async with linked(pattern.binder, pattern.connector, endpoint) as link:
        await link.connector.send(big)
        await link.connector.send_multipart([b"head", big, b"tail"])
        assert await recv_all(link.binder, 2) == [[big], [b"head", big, b"tail"]]


async def test_ten_thousand_messages_keep_their_order(endpoint: str, pattern: Pattern) -> None:
    n = 10_000
    async with linked(pattern.binder, pattern.connector, endpoint) as link:

        async def produce() -> None:
            for i in range(n):
                await link.connector.send(b"%d" % i)

        async with anyio.create_task_group() as tg:
            tg.start_soon(produce)  # the default HWM (1000) makes it wait for the consumer
            got = await recv_all(link.binder, n)
        assert got == [[b"%d" % i] for i in range(n)]


async def test_pair_is_bidirectional(endpoint: str) -> None:
    async with linked(zmtp.PAIR, zmtp.PAIR, endpoint) as link:
        await link.binder.send(b"from binder")
        await link.connector.send(b"from connector")
        assert await recv_all(link.connector, 1) == [[b"from binder"]]
        assert await recv_all(link.binder, 1) == [[b"from connector"]]


@pytest.mark.parametrize("transport", ["tcp", "inproc"])
async def test_pair_refuses_a_second_peer_and_keeps_the_first(transport: str) -> None:
    endpoint = "tcp://127.0.0.1:*" if transport == "tcp" else f"inproc://{unique_name()}"
    async with linked(zmtp.PAIR, zmtp.PAIR, endpoint) as link:
        async with zmtp.Socket(zmtp.PAIR, linger=0, reconnect_ivl=None) as second:
            await second.connect(link.endpoint)
            event = await wait_event(link.binder_monitor, zmtp.HandshakeFailed)
            assert event.reason == "PAIR socket already has a peer"
        await link.connector.send(b"first still paired")
        assert await recv_all(link.binder, 1) == [[b"first still paired"]]


async def test_async_for_yields_messages(endpoint: str) -> None:
    async with linked(zmtp.PULL, zmtp.PUSH, endpoint) as link:
        for i in range(3):
            await link.connector.send_multipart([b"n", b"%d" % i])
        got = []
        with anyio.fail_after(TIMEOUT):
            async for message in link.binder:
                got.append(message)
                if len(got) == 3:
                    break
        assert got == [[b"n", b"0"], [b"n", b"1"], [b"n", b"2"]]


async def test_async_for_ends_when_the_socket_closes() -> None:
    async with zmtp.Socket(zmtp.PULL, linger=0) as pull:
        await pull.bind("tcp://127.0.0.1:*")
        seen: list[list[bytes]] = []

        async def consume() -> None:
            async for message in pull:
                seen.append(message)

        with anyio.fail_after(TIMEOUT):
            async with anyio.create_task_group() as tg:
                tg.start_soon(consume)
                await anyio.wait_all_tasks_blocked()
                await pull.close()  # the loop ends instead of raising
        assert seen == []


async def test_str_bytearray_and_memoryview_parts_are_sent_as_bytes(endpoint: str) -> None:
    async with linked(zmtp.PULL, zmtp.PUSH, endpoint) as link:
        await link.connector.send_multipart(["héllo", bytearray(b"ba"), memoryview(b"mv"), b"b"])
        await link.connector.send("text")
        got = await recv_all(link.binder, 2)
        assert got == [["héllo".encode(), b"ba", b"mv", b"b"], [b"text"]]
        assert all(type(part) is bytes for message in got for part in message)


async def test_parts_of_other_types_are_refused() -> None:
    async with zmtp.Socket(zmtp.PUSH, linger=0) as push:
        with pytest.raises(TypeError, match="int"):
            await push.send_multipart([b"ok", 42])
        with pytest.raises(ValueError, match="at least one part"):
            await push.send_multipart([])


async def test_recv_of_a_multipart_message_raises_value_error(endpoint: str) -> None:
    async with linked(zmtp.PULL, zmtp.PUSH, endpoint) as link:
        await link.connector.send_multipart([b"a", b"b"])
        with anyio.fail_after(TIMEOUT), pytest.raises(ValueError, match="2-part"):
            await link.binder.recv()


async def test_recv_of_a_multipart_message_leaves_it_for_recv_multipart() -> None:
    # Regression: recv() used to pop the message before raising ValueError, losing it.
    async with linked(zmtp.PULL, zmtp.PUSH, f"inproc://{unique_name()}") as link:
        await link.connector.send_multipart([b"a", b"b"])
        with anyio.fail_after(TIMEOUT), pytest.raises(ValueError):
            await link.binder.recv()
        link.binder.options.recv_timeout = 0.1
        assert await link.binder.recv_multipart() == [b"a", b"b"]


async def test_recv_on_push_raises_unsupported_operation() -> None:
    async with zmtp.Socket(zmtp.PUSH, linger=0) as push:
        with anyio.fail_after(TIMEOUT), pytest.raises(zmtp.UnsupportedOperation):
            await push.recv()


async def test_send_on_pull_raises_unsupported_operation() -> None:
    async with zmtp.Socket(zmtp.PULL, linger=0) as pull:
        with anyio.fail_after(TIMEOUT), pytest.raises(zmtp.UnsupportedOperation):
            await pull.send(b"nope")


async def test_send_and_recv_after_close_raise_socket_closed() -> None:
    async with zmtp.Socket(zmtp.PAIR, linger=0) as pair:
        await pair.close()
        with pytest.raises(zmtp.SocketClosed):
            await pair.send(b"late")
        with pytest.raises(zmtp.SocketClosed):
            await pair.recv()


# --------------------------------------------------------------------------- HWM
#
# What the marks count (docs/architecture.md): messages per peer. A send blocks when the
# routing strategy finds no peer whose outbox holds fewer than send_hwm messages; a reader stops
# reading a connection once its inbox holds recv_hwm messages. On inproc the two queues are
# one, of capacity send_hwm + recv_hwm, so the blocking point is exact. On tcp/ipc the kernel's
# socket buffers sit between the two queues and hold an unknown number of messages, so there
# the tests check that sending does block, and that nothing is lost or reordered.

SEND_HWM = 2
RECV_HWM = 3


def payload(transport: str, i: int) -> bytes:
    """Large messages on stream transports, to fill the kernel buffers quickly."""
    filler = b"." * (64 * 1024) if transport != "inproc" else b""
    return b"%d:" % i + filler


def hwm_linked(
    binder: zmtp.SocketType, connector: zmtp.SocketType, endpoint: str
) -> AbstractAsyncContextManager[Link]:
    """A :func:`linked` pair with the small marks above, and a 0.1 s send timeout for
    :func:`fill_until_blocked` to see where sending blocks."""
    return linked(
        binder,
        connector,
        endpoint,
        binder_options={"recv_hwm": RECV_HWM},
        connector_options={"send_hwm": SEND_HWM, "send_timeout": 0.1},
    )


async def fill_until_blocked(link: Link, transport: str) -> list[bytes]:
    """Send until a send times out; returns what was sent successfully."""
    sent: list[bytes] = []
    for i in range(100_000):
        message = payload(transport, i)
        try:
            await link.connector.send(message)
        except TimeoutError:
            return sent
        sent.append(message)
    raise AssertionError("sending never blocked: the HWM is not enforced")


async def test_sender_blocks_once_both_queues_are_full(
    endpoint: str, transport: str, pattern: Pattern
) -> None:
    async with hwm_linked(pattern.binder, pattern.connector, endpoint) as link:
        sent = await fill_until_blocked(link, transport)
        if transport == "inproc":
            assert len(sent) == SEND_HWM + RECV_HWM
        else:
            assert len(sent) >= SEND_HWM + RECV_HWM
        # The timed-out send was cancelled while blocked: it must have queued nothing. The
        # receiver gets exactly what was sent, then the marker, and nothing in between.
        assert await recv_all(link.binder, len(sent)) == [[m] for m in sent]
        await link.connector.send(b"marker")
        assert await recv_all(link.binder, 1) == [[b"marker"]]


async def test_blocked_sender_resumes_when_the_receiver_drains(
    endpoint: str, transport: str, pattern: Pattern
) -> None:
    async with hwm_linked(pattern.binder, pattern.connector, endpoint) as link:
        sent = await fill_until_blocked(link, transport)
        link.connector.options.send_timeout = None
        done = anyio.Event()

        async def blocked_send() -> None:
            await link.connector.send(b"resumed")
            done.set()

        async with anyio.create_task_group() as tg:
            tg.start_soon(blocked_send)
            await anyio.wait_all_tasks_blocked()
            assert not done.is_set()
            received = await recv_all(link.binder, len(sent))  # drain: room opens up
            with anyio.fail_after(TIMEOUT):
                await done.wait()
        assert received == [[m] for m in sent]
        assert await recv_all(link.binder, 1) == [[b"resumed"]]


async def test_blocked_send_raises_socket_closed_when_the_socket_closes() -> None:
    outcome: list[str] = []
    async with zmtp.Socket(zmtp.PUSH, linger=0) as push:

        async def blocked_send() -> None:
            try:
                await push.send(b"nobody will take this")
            except zmtp.SocketClosed:
                outcome.append("SocketClosed")

        with anyio.fail_after(TIMEOUT):
            async with anyio.create_task_group() as tg:
                tg.start_soon(blocked_send)
                await anyio.wait_all_tasks_blocked()
                await push.close()
    assert outcome == ["SocketClosed"]


async def test_push_without_any_peer_blocks() -> None:
    async with zmtp.Socket(zmtp.PUSH, linger=0, send_timeout=0.1) as push:
        with anyio.fail_after(TIMEOUT), pytest.raises(TimeoutError):
            await push.send(b"nobody")


async def test_push_connecting_to_nobody_queues_send_hwm_then_blocks(endpoint: str) -> None:
    """A connect() pipe takes messages before its connection is up, up to send_hwm."""
    async with zmtp.Socket(zmtp.PUSH, linger=0, send_hwm=SEND_HWM, send_timeout=0.1) as push:
        target = endpoint.replace("*", "1")  # tcp: port 1, nothing listens there
        await push.connect(target)
        for i in range(SEND_HWM):
            await push.send(b"%d" % i)
        with anyio.fail_after(TIMEOUT), pytest.raises(TimeoutError):
            await push.send(b"one too many")


async def test_push_round_robins_across_two_pulls(endpoint: str) -> None:
    async with zmtp.Socket(zmtp.PUSH, linger=0) as push:
        monitor = push.monitor()
        resolved = await push.bind(endpoint)
        async with zmtp.Socket(zmtp.PULL, linger=0) as a, zmtp.Socket(zmtp.PULL, linger=0) as b:
            await a.connect(resolved)
            await wait_event(monitor, zmtp.HandshakeSucceeded)
            await b.connect(resolved)
            await wait_event(monitor, zmtp.HandshakeSucceeded)
            for i in range(10):
                await push.send(b"%d" % i)
            got_a, got_b = await recv_all(a, 5), await recv_all(b, 5)
        numbers_a = [int(m[0]) for m in got_a]
        numbers_b = [int(m[0]) for m in got_b]
        assert sorted(numbers_a + numbers_b) == list(range(10))
        # strict alternation: one PULL gets the even messages, the other the odd ones
        assert {n % 2 for n in numbers_a} in ({0}, {1})
        assert {n % 2 for n in numbers_b} == {1, 0} - {numbers_a[0] % 2}


async def test_pull_fair_queues_between_two_pushes() -> None:
    """With both peers' messages waiting, PULL takes one from each in turn. (inproc: the only
    transport where both inboxes are known to be full before the first recv.)"""
    endpoint = f"inproc://{unique_name()}"
    async with zmtp.Socket(zmtp.PULL, linger=0) as pull:
        await pull.bind(endpoint)
        async with zmtp.Socket(zmtp.PUSH, linger=0) as a, zmtp.Socket(zmtp.PUSH, linger=0) as b:
            await a.connect(endpoint)
            await b.connect(endpoint)
            for i in range(3):
                await a.send(b"a%d" % i)
            for i in range(3):
                await b.send(b"b%d" % i)
            got = [m[0] for m in await recv_all(pull, 6)]
        assert got == [b"a0", b"b0", b"a1", b"b1", b"a2", b"b2"]


async def test_pull_receives_from_two_pushes_keeping_each_ones_order(endpoint: str) -> None:
    async with zmtp.Socket(zmtp.PULL, linger=0) as pull:
        monitor = pull.monitor()
        resolved = await pull.bind(endpoint)
        async with zmtp.Socket(zmtp.PUSH, linger=0) as a, zmtp.Socket(zmtp.PUSH, linger=0) as b:
            await a.connect(resolved)
            await b.connect(resolved)
            await wait_event(monitor, zmtp.HandshakeSucceeded)
            await wait_event(monitor, zmtp.HandshakeSucceeded)
            for i in range(50):
                await a.send(b"a%d" % i)
                await b.send(b"b%d" % i)
            got = [m[0] for m in await recv_all(pull, 100)]
        assert [m for m in got if m.startswith(b"a")] == [b"a%d" % i for i in range(50)]
        assert [m for m in got if m.startswith(b"b")] == [b"b%d" % i for i in range(50)]


# --------------------------------------------------------------------------- cancel safety


async def test_recv_cancelled_while_waiting_loses_nothing(endpoint: str) -> None:
    async with linked(zmtp.PULL, zmtp.PUSH, endpoint) as link:
        with anyio.move_on_after(0.05) as scope:
            await link.binder.recv()
        assert scope.cancelled_caught
        await link.connector.send(b"after the cancel")
        assert await recv_all(link.binder, 1) == [[b"after the cancel"]]


@pytest.mark.parametrize("order", ["send-then-cancel", "cancel-then-send"])
async def test_recv_cancelled_as_its_message_arrives_delivers_it_exactly_once(order: str) -> None:
    """inproc makes the race exact: the send wakes the parked recv with no scheduling point
    between the send and the cancel. Whichever wins, the message is delivered exactly once:
    to the cancelled recv if it had already been woken, else to the next recv."""
    async with linked(zmtp.PULL, zmtp.PUSH, f"inproc://{unique_name()}") as link:
        got: list[bytes] = []
        scope = anyio.CancelScope()

        async def receiver() -> None:
            with scope:
                got.append(await link.binder.recv())

        async with anyio.create_task_group() as tg:
            tg.start_soon(receiver)
            await anyio.wait_all_tasks_blocked()
            if order == "send-then-cancel":
                await link.connector.send(b"precious")  # queues and wakes; does not yield
                scope.cancel()
            else:
                scope.cancel()
                await link.connector.send(b"precious")
        assert scope.cancelled_caught == (not got)
        if not got:
            got.append(await link.binder.recv())
        await link.connector.send(b"marker")
        got.append(await link.binder.recv())
        assert got == [b"precious", b"marker"]  # once, and no second copy queued


async def test_send_cancelled_while_blocked_queued_nothing(endpoint: str, transport: str) -> None:
    async with hwm_linked(zmtp.PULL, zmtp.PUSH, endpoint) as link:
        sent = await fill_until_blocked(link, transport)
        link.connector.options.send_timeout = None
        with anyio.CancelScope() as scope:
            async with anyio.create_task_group() as tg:
                tg.start_soon(link.connector.send, b"cancelled")
                await anyio.wait_all_tasks_blocked()
                scope.cancel()
        received = await recv_all(link.binder, len(sent))
        await link.connector.send(b"marker")
        received += await recv_all(link.binder, 1)
        assert received == [[m] for m in sent] + [[b"marker"]]


# --------------------------------------------------------------------------- timeouts


async def test_recv_timeout_raises_timeout_error(endpoint: str) -> None:
    async with linked(zmtp.PULL, zmtp.PUSH, endpoint, binder_options={"recv_timeout": 0.1}) as link:
        start = anyio.current_time()
        with anyio.fail_after(TIMEOUT), pytest.raises(TimeoutError):
            await link.binder.recv()
        assert anyio.current_time() - start >= 0.1


async def test_send_timeout_raises_timeout_error_and_socket_stays_usable() -> None:
    async with zmtp.Socket(zmtp.PUSH, linger=0, send_timeout=0.1) as push:
        with pytest.raises(TimeoutError):
            await push.send(b"x")
        async with zmtp.Socket(zmtp.PULL, linger=0) as pull:
            monitor = push.monitor()
            name = await pull.bind(f"inproc://{unique_name()}")
            await push.connect(name)
            await wait_event(monitor, zmtp.HandshakeSucceeded)
            await push.send(b"y")
            assert await recv_all(pull, 1) == [[b"y"]]
