"""The round trip's fast paths (docs/performance.md, "Trio REQ REP round trip fast paths"):
each one must give exactly what the general path gives, and keep its edges (HWM wake-ups,
a gating extension, a closed socket)."""

from __future__ import annotations

import socket as pysocket
from collections.abc import Iterator

import anyio
import pytest

import zmtp
from zmtp.engine import stream as stream_module
from zmtp.engine.queue import MessageQueue
from zmtp.protocol import frames
from zmtp.routing.base import FairQueue
from zmtp.testing import linked, recv_within

SIZES = (0, 1, 64, 255, 256, 70_000)


def _general(batch: list[list[bytes]]) -> bytes:
    out: list[bytes] = []
    for parts in batch:
        frames.append_message(out, parts)
    return b"".join(out)


@pytest.mark.parametrize("head", SIZES)
@pytest.mark.parametrize("body", SIZES)
def test_one_message_encodes_as_the_general_encoder(head: int, body: int) -> None:
    """A batch of one message (one or two parts, short or long) is framed by the fast path
    exactly as append_message frames it; longer messages and batches are unchanged."""
    one, two = [b"b" * body], [b"h" * head, b"b" * body]
    three = [b"h" * head, b"", b"b" * body]
    for batch in ([one], [two], [three], [two, one], [one, two, three]):
        assert frames.encode_messages(batch) == _general(batch)


class _Pipe:
    """What FairQueue.fq_recv_from touches of a pipe: its inbox."""

    def __init__(self, capacity: int) -> None:
        self.inbox = MessageQueue(capacity)


def test_fair_queue_pop_at_the_hwm_wakes_the_reader() -> None:
    """fq_recv_from's inlined pop fires the inbox's on_space exactly on the full -> not full
    edge (the reader stopped at recv_hwm waits for it), as MessageQueue.get does."""
    fq = FairQueue()
    pipe = _Pipe(2)
    woken: list[bool] = []
    pipe.inbox.on_space = lambda: woken.append(True)
    pipe.inbox.put_many([[b"1"], [b"2"]])
    fq.readable(pipe)  # type: ignore[arg-type]
    assert fq.fq_recv_from() == (pipe, [b"1"])
    assert woken == [True]
    assert fq.fq_recv_from() == (pipe, [b"2"])
    assert woken == [True]  # not full before this pop: no second wake-up
    assert fq.fq_recv_from() is None


@pytest.fixture
def socket_pair() -> Iterator[tuple[pysocket.socket, pysocket.socket]]:
    a, b = pysocket.socketpair()
    a.setblocking(False)
    try:
        yield a, b
    finally:
        a.close()
        b.close()


def test_recv_ready_reads_what_is_there(
    socket_pair: tuple[pysocket.socket, pysocket.socket],
) -> None:
    """The one non-blocking read of the lent reads and the answer spin: None while nothing
    is there, the bytes once they are, EndOfStream at the peer's close."""
    ours, theirs = socket_pair
    assert stream_module._recv_ready(ours, 1024) is None
    theirs.sendall(b"abc")
    assert stream_module._recv_ready(ours, 1024) == b"abc"
    theirs.close()
    with pytest.raises(anyio.EndOfStream):
        stream_module._recv_ready(ours, 1024)


def test_recv_ready_reports_errors_as_the_stream_would() -> None:
    """A socket closed under us is ClosedResourceError; any other error BrokenResourceError
    with the kernel's error as its cause, which the connection's reason quotes."""
    closed = pysocket.socket(pysocket.AF_INET, pysocket.SOCK_STREAM)
    closed.close()
    with pytest.raises(anyio.ClosedResourceError):
        stream_module._recv_ready(closed, 1024)
    error = anyio.BrokenResourceError()
    error.__cause__ = ConnectionResetError(104, "Connection reset by peer")
    assert stream_module._describe_io_error(error) == (
        "connection lost: [Errno 104] Connection reset by peer"
    )
    assert stream_module._describe_io_error(anyio.BrokenResourceError()) == (
        "connection lost: BrokenResourceError"
    )


@pytest.mark.anyio
async def test_loop_clock_is_the_loops_time() -> None:
    """The connection's clock reads what anyio.current_time reads (trio: the run's clock,
    without trio.current_time's wrappers)."""
    clock = stream_module._loop_clock()
    before = anyio.current_time()
    now = clock()
    assert before <= now <= anyio.current_time()


@pytest.mark.anyio
async def test_req_to_one_peer_blocks_at_its_hwm_and_sends_once_it_has_room() -> None:
    """REQ's single-peer send (no rotation) reports a full peer as "would block" (inproc:
    the REP's inbox at recv_hwm 1 plus the REQ's send_hwm 1), and a request goes again once
    the peer takes one."""
    async with linked(
        "REP",
        "REQ",
        "inproc",
        bind_options={"recv_hwm": 1},
        connect_options={"send_hwm": 1, "req_relaxed": True, "send_timeout": 0.2},
    ) as (rep, req):
        sent = 0
        with pytest.raises(TimeoutError):
            for i in range(10):
                await req.send(b"q%d" % i)
                sent += 1
        assert sent == 2
        assert await recv_within(rep) == [b"q0"]
        await req.send(b"after")  # room again: the single-peer path queues it


class _Gate(zmtp.SocketExtension):
    """An extension that holds REQ's sends until opened (a gating extension takes the
    round-robin loop, not the single-peer path)."""

    def __init__(self) -> None:
        self.open = False
        self.asked = 0

    def can_send(self, pipe: object) -> bool:
        self.asked += 1
        return self.open


@pytest.mark.anyio
async def test_req_single_peer_send_asks_a_gating_extension() -> None:
    gate = _Gate()
    async with zmtp.Socket(zmtp.REP, linger=0) as rep:
        endpoint = await rep.bind("tcp://127.0.0.1:*")
        async with zmtp.Socket(zmtp.REQ, linger=0, send_timeout=0.2) as req:
            req.install_extension(gate)
            await req.connect(endpoint)
            with pytest.raises(TimeoutError):
                await req.send(b"held")
            assert gate.asked > 0
            gate.open = True
            req.wake_senders()
            await req.send(b"goes")
            assert await recv_within(rep) == [b"goes"]


def test_mechanisms_in_clear_encode_with_the_frames_encoder() -> None:
    """NULL and PLAIN frame a batch with ``frames.encode_messages`` itself (a static method:
    one Python call per batch, not two); CURVE keeps its own, which boxes every frame."""
    from zmtp.protocol.curve import CurveClient
    from zmtp.protocol.mechanism import Mechanism, NullMechanism
    from zmtp.protocol.plain import PlainClient

    assert Mechanism.encode_messages is frames.encode_messages
    assert NullMechanism(b"", as_server=False).encode_messages is frames.encode_messages
    assert PlainClient(b"", b"u", b"p").encode_messages is frames.encode_messages
    assert CurveClient.encode_messages is not frames.encode_messages


@pytest.mark.anyio
@pytest.mark.parametrize("mechanism", ["null", "curve"])
async def test_eager_answers_are_encoded_by_the_connections_mechanism(mechanism: str) -> None:
    """The eager write's encoder is the connection's mechanism's: a REQ/REP round trip in
    clear and under CURVE (whose boxes the peer must open) gives the bodies back."""
    options: dict[str, object] = {}
    bind_options: dict[str, object] = {}
    if mechanism == "curve":
        server_public, server_secret = zmtp.curve_keypair()
        _client_public, client_secret = zmtp.curve_keypair()
        bind_options = {"curve_server": True, "curve_secretkey": server_secret}
        options = {"curve_serverkey": server_public, "curve_secretkey": client_secret}
    async with linked(zmtp.REP, zmtp.REQ, bind_options=bind_options, connect_options=options) as (
        rep,
        req,
    ):
        for i in range(20):
            await req.send(b"q%d" % i)
            assert await recv_within(rep) == [b"q%d" % i]
            await rep.send(b"a%d" % i)
            assert await recv_within(req) == [b"a%d" % i]


@pytest.mark.anyio
async def test_recv_with_and_without_a_timeout() -> None:
    """``_recv_blocking`` enters the timeout's scope only with a ``recv_timeout``: without
    one it waits in the loop at once; with one, round trips still complete inside the scope
    (lent reads included), and an expiry raises ``TimedOut`` naming recv and lets a REQ send
    again. The option is read per call."""
    async with linked(zmtp.REP, zmtp.REQ) as (rep, req):
        for timeout in (None, 5.0, None):
            rep.options.recv_timeout = req.options.recv_timeout = timeout
            for i in range(10):
                await req.send(b"%d" % i)
                with anyio.fail_after(5):
                    await rep.send(await rep.recv())
                    assert await req.recv() == b"%d" % i
        req.options.recv_timeout = 0.05
        await req.send(b"unanswered")
        assert await recv_within(rep) == [b"unanswered"]
        with pytest.raises(zmtp.TimedOut, match="recv timed out"):
            await req.recv()
        await req.send(b"again")  # the request was abandoned: REQ may send
        await rep.send(b"late")  # REP owes the first request its reply before it may recv
        assert await recv_within(rep) == [b"again"]
