"""REQ→REP at QoS 1-3 (docs/qos-protocol.md §5.2): the reply is the acknowledgement; level 1
re-sends to the next REP when the connection drops, level 2 waits for the same anchor (or
raises the dead-letter error), level 3 answers failures with NACK, raised as NackError."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile

import anyio
import pytest

import zmtp
import zmtp_qos
from zmtp.testing.faultproxy import FaultProxy
from zmtp_qos import DeadLetterError, NackError, QoSConfig, ReplyHandle
from zmtp_qos.events import QoSDeadLettered, QoSFailedOver, QoSReplayed

pytestmark = pytest.mark.anyio


def _endpoint(transport: str) -> str:
    if transport == "inproc":
        return "inproc://qos-reqrep-" + os.urandom(6).hex()
    if transport == "ipc":
        return f"ipc://{tempfile.gettempdir()}/zmtp-qos-reqrep-{os.urandom(6).hex()}.sock"
    return "tcp://127.0.0.1:*"


TRANSPORTS = ["tcp", "ipc", "inproc"]
PROCESS_TRANSPORTS = ["tcp", "ipc"]  #: a SIGKILLed peer lives in another process


async def _answer(rep: zmtp_qos.Socket, reply: bytes) -> bytes:
    """Receive one request on ``rep`` and answer ``reply``; the request body."""
    if rep.level == 3:
        handle = await rep.recv()
        assert isinstance(handle, ReplyHandle)
        async with handle:
            await rep.send(reply)
        return handle.parts[0]
    request: bytes = await rep.recv()
    await rep.send(reply)
    return request


@pytest.mark.parametrize("transport", ["tcp", "inproc"])
@pytest.mark.parametrize("level", [1, 2, 3])
async def test_request_reply_at_each_level(level: int, transport: str) -> None:
    with anyio.fail_after(20):
        async with (
            zmtp_qos.Socket(zmtp.REP, qos=level) as rep,
            zmtp_qos.Socket(zmtp.REQ, qos=level) as req,
        ):
            ep = await rep.bind(_endpoint(transport))
            await req.connect(ep)
            for i in range(3):
                async with anyio.create_task_group() as tg:
                    tg.start_soon(_answer, rep, b"reply-%d" % i)
                    assert await req.send(b"request-%d" % i) is None  # no receipt: the reply is
                    assert await req.recv() == b"reply-%d" % i


async def test_multipart_request_reply() -> None:
    with anyio.fail_after(20):
        async with (
            zmtp_qos.Socket(zmtp.REP, qos=2) as rep,
            zmtp_qos.Socket(zmtp.REQ, qos=2) as req,
        ):
            await req.connect(await rep.bind("tcp://127.0.0.1:*"))
            await req.send_multipart([b"a", b"b"])
            assert await rep.recv_multipart() == [b"a", b"b"]
            await rep.send_multipart([b"c", b"d"])
            assert await req.recv_multipart() == [b"c", b"d"]


VICTIM = r"""
import sys, anyio, zmtp, zmtp_qos

async def main():
    async with zmtp_qos.Socket(zmtp.REP, qos=1) as rep:
        await rep.connect(sys.argv[1])
        print(await rep.recv(), flush=True)  # then never answer
        await anyio.sleep_forever()

anyio.run(main, backend=sys.argv[2])
"""


@pytest.mark.parametrize("transport", PROCESS_TRANSPORTS)
async def test_level1_request_re_sent_to_another_rep_when_its_rep_is_sigkilled(
    anyio_backend: str, transport: str
) -> None:
    backend = anyio_backend if isinstance(anyio_backend, str) else anyio_backend[0]
    with anyio.fail_after(60):
        async with zmtp_qos.Socket(zmtp.REQ, qos=1, linger=0) as req:
            events = req.monitor()
            ep = await req.bind(_endpoint(transport))
            victim = await anyio.open_process(
                [sys.executable, "-c", VICTIM, ep, backend],
                env={**os.environ, "PYTHONPATH": os.getcwd()},
                stdout=subprocess.PIPE,
            )
            try:
                await events.wait_for(zmtp.HandshakeSucceeded)
                await req.send(b"idempotent")
                assert victim.stdout is not None
                assert b"idempotent" in await victim.stdout.receive()  # the victim has it
                async with zmtp_qos.Socket(zmtp.REP, qos=1) as survivor:
                    await survivor.connect(ep)
                    await events.wait_for(zmtp.HandshakeSucceeded)
                    victim.send_signal(signal.SIGKILL)
                    async with anyio.create_task_group() as tg:
                        tg.start_soon(_answer, survivor, b"from the survivor")
                        assert await req.recv() == b"from the survivor"
                    await events.wait_for(QoSFailedOver)
                    # REQ is ready again and keeps working with the survivor.
                    async with anyio.create_task_group() as tg:
                        tg.start_soon(_answer, survivor, b"again")
                        await req.send(b"next")
                        assert await req.recv() == b"again"
            finally:
                if victim.returncode is None:
                    victim.kill()
                await victim.wait()


PINNED_VICTIM = r"""
import sys, anyio, zmtp, zmtp_qos

async def main():
    level = int(sys.argv[3])
    async with zmtp_qos.Socket(zmtp.REP, qos=level, identity=b"rep-A") as rep:
        await rep.connect(sys.argv[1])
        got = await rep.recv()
        print(got.parts[0] if level == 3 else got, flush=True)  # then never answer
        await anyio.sleep_forever()

anyio.run(main, backend=sys.argv[2])
"""


@pytest.mark.parametrize("transport", PROCESS_TRANSPORTS)
@pytest.mark.parametrize("level", [2, 3])
@pytest.mark.parametrize("comes_back", [True, False])
async def test_levels_2_3_rep_sigkilled_mid_request(
    anyio_backend: str, level: int, transport: str, comes_back: bool
) -> None:
    """The REP process holding the request is SIGKILLed. No fail-over: another REP gets
    nothing; the same anchor coming back gets the request again and its reply is the
    answer; if it never comes back, REQ's recv raises the dead letter and REQ is ready."""
    backend = anyio_backend if isinstance(anyio_backend, str) else anyio_backend[0]
    config = QoSConfig(dead_letter_timeout=0.5 if not comes_back else 30)
    with anyio.fail_after(60):
        async with zmtp_qos.Socket(zmtp.REQ, qos=level, config=config, linger=0) as req:
            events = req.monitor()
            ep = await req.bind(_endpoint(transport))
            victim = await anyio.open_process(
                [sys.executable, "-c", PINNED_VICTIM, ep, backend, str(level)],
                env={**os.environ, "PYTHONPATH": os.getcwd()},
                stdout=subprocess.PIPE,
            )
            try:
                await events.wait_for(zmtp.HandshakeSucceeded)
                await req.send(b"pinned job")
                assert victim.stdout is not None
                assert b"pinned job" in await victim.stdout.receive()  # the victim has it
                async with zmtp_qos.Socket(zmtp.REP, qos=level, identity=b"rep-B") as other:
                    await other.connect(ep)
                    await events.wait_for(zmtp.HandshakeSucceeded)
                    victim.send_signal(signal.SIGKILL)
                    await victim.wait()
                    await events.wait_for(zmtp.Disconnected)
                    if comes_back:
                        async with zmtp_qos.Socket(zmtp.REP, qos=level, identity=b"rep-A") as a:
                            await a.connect(ep)
                            async with anyio.create_task_group() as tg:
                                tg.start_soon(_answer, a, b"from rep-A again")
                                assert await req.recv() == b"from rep-A again"
                            replayed = await events.wait_for(QoSReplayed)
                            assert isinstance(replayed, QoSReplayed)
                            assert replayed.peer == "rep-A"
                    else:
                        with pytest.raises(DeadLetterError) as caught:
                            await req.recv()
                        letter = caught.value.letter
                        assert (letter.reason, letter.peer) == ("peer_timeout", "rep-A")
                    assert not other.raw.readable()  # no fail-over at level >= 2
                    async with anyio.create_task_group() as tg:  # REQ is ready again
                        tg.start_soon(_answer, other, b"next")
                        await req.send(b"after")
                        assert await req.recv() == b"next"
            finally:
                if victim.returncode is None:
                    victim.kill()
                await victim.wait()


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_level1_request_waits_for_the_next_rep_to_connect(transport: str) -> None:
    with anyio.fail_after(20):
        async with zmtp_qos.Socket(zmtp.REQ, qos=1, linger=0) as req:
            ep = await req.bind(_endpoint(transport))
            async with zmtp_qos.Socket(zmtp.REP, qos=1, linger=0) as first:
                await first.connect(ep)
                await req.send(b"job")
                assert await first.recv() == b"job"
            # The only REP has gone unanswered: the first REP to come gets the request.
            async with zmtp_qos.Socket(zmtp.REP, qos=1) as second:
                await second.connect(ep)
                async with anyio.create_task_group() as tg:
                    tg.start_soon(_answer, second, b"done")
                    assert await req.recv() == b"done"


@pytest.mark.parametrize("transport", TRANSPORTS)
@pytest.mark.parametrize("level", [2, 3])
async def test_level2_request_re_sent_to_the_same_anchor_when_it_reconnects(
    level: int, transport: str
) -> None:
    with anyio.fail_after(20):
        async with zmtp_qos.Socket(zmtp.REQ, qos=level, linger=0) as req:
            events = req.monitor()
            ep = await req.bind(_endpoint(transport))
            async with zmtp_qos.Socket(zmtp.REP, qos=level, identity=b"rep-A", linger=0) as a:
                await a.connect(ep)
                await req.send(b"job")
                got = await a.recv()
                assert (got.parts[0] if level == 3 else got) == b"job"
            # Another REP is no fail-over target at level >= 2: it gets nothing.
            async with zmtp_qos.Socket(zmtp.REP, qos=level, identity=b"rep-B") as other:
                await other.connect(ep)
                await events.wait_for(zmtp.HandshakeSucceeded)
                async with zmtp_qos.Socket(zmtp.REP, qos=level, identity=b"rep-A") as back:
                    await back.connect(ep)
                    async with anyio.create_task_group() as tg:
                        tg.start_soon(_answer, back, b"done")
                        assert await req.recv() == b"done"
                    replayed = await events.wait_for(QoSReplayed)
                    assert isinstance(replayed, QoSReplayed)
                    assert replayed.count == 1
                assert not other.raw.readable()


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_level2_dead_letter_error_after_the_timeout_and_req_is_ready_again(
    transport: str,
) -> None:
    config = QoSConfig(dead_letter_timeout=0.4, dedup_ttl=1.0)
    with anyio.fail_after(20):
        async with zmtp_qos.Socket(zmtp.REQ, qos=2, config=config, linger=0) as req:
            events = req.monitor()
            ep = await req.bind(_endpoint(transport))
            async with zmtp_qos.Socket(zmtp.REP, qos=2, identity=b"rep-A", linger=0) as a:
                await a.connect(ep)
                await req.send(b"job")
                assert await a.recv() == b"job"
            start = anyio.current_time()
            with pytest.raises(DeadLetterError) as caught:
                await req.recv()
            assert anyio.current_time() - start >= 0.3
            letter = caught.value.letter
            assert letter.reason == "peer_timeout"
            assert letter.parts == [b"", b"job"]  # as it was written, delimiter included
            assert letter.peer == "rep-A"
            event = await events.wait_for(QoSDeadLettered)
            assert isinstance(event, QoSDeadLettered)
            assert event.reason == "peer_timeout"
            async with zmtp_qos.Socket(zmtp.REP, qos=2, identity=b"rep-B") as b:
                await b.connect(ep)
                async with anyio.create_task_group() as tg:
                    tg.start_soon(_answer, b, b"fresh")
                    await req.send(b"again")  # REQ is ready: no InvalidState
                    assert await req.recv() == b"fresh"


@pytest.mark.parametrize("transport", ["tcp", "inproc"])
async def test_level3_nack_raises_nack_error_and_req_is_ready_again(transport: str) -> None:
    with anyio.fail_after(20):
        async with (
            zmtp_qos.Socket(zmtp.REP, qos=3) as rep,
            zmtp_qos.Socket(zmtp.REQ, qos=3) as req,
        ):
            await req.connect(await rep.bind(_endpoint(transport)))
            await req.send(b"bad")
            handle = await rep.recv()
            assert isinstance(handle, ReplyHandle)
            handle.reject(0x05, "no good")
            with pytest.raises(NackError) as caught:
                await req.recv()
            assert (caught.value.code, caught.value.text) == (0x05, "no good")
            # An exception out of the handle's block answers NACK with the mapped code.
            await req.send(b"worse")
            handle = await rep.recv()
            with pytest.raises(zmtp_qos.BadInput):
                async with handle:
                    raise zmtp_qos.BadInput("cannot parse")
            with pytest.raises(NackError) as caught:
                await req.recv()
            assert (caught.value.code, caught.value.text) == (0x02, "cannot parse")
            # Both ends are ready for the next request; nothing was retried.
            async with anyio.create_task_group() as tg:
                tg.start_soon(_answer, rep, b"ok")
                await req.send(b"good")
                assert await req.recv() == b"ok"


async def test_level3_rep_handle_needs_a_reply_or_a_rejection() -> None:
    with anyio.fail_after(20):
        async with (
            zmtp_qos.Socket(zmtp.REP, qos=3) as rep,
            zmtp_qos.Socket(zmtp.REQ, qos=3) as req,
        ):
            await req.connect(await rep.bind("tcp://127.0.0.1:*"))
            await req.send(b"x")
            handle = await rep.recv()
            with pytest.raises(zmtp_qos.VerdictError):
                async with handle:
                    pass  # no reply sent
            handle.reject(0x83, "late")
            with pytest.raises(zmtp_qos.VerdictError):
                handle.reject(0x83, "twice")
            with pytest.raises(NackError):
                await req.recv()


@pytest.mark.parametrize(("req_level", "rep_level"), [(1, 2), (3, 1), (0, 2)])
async def test_level_mismatch_is_a_monitor_event(req_level: int, rep_level: int) -> None:
    with anyio.fail_after(20):
        async with (
            zmtp_qos.Socket(zmtp.REP, qos=rep_level) as rep,
            zmtp_qos.Socket(zmtp.REQ, qos=req_level) as req,
        ):
            events = rep.monitor()
            await req.connect(await rep.bind("tcp://127.0.0.1:*"))
            event = await events.wait_for(zmtp.HandshakeFailed)
            assert isinstance(event, zmtp.HandshakeFailed)
            assert event.kind == "rejected"
            assert event.reason == f"QoS mismatch: local={rep_level} peer={req_level}"


def test_req_rep_accept_qos_fan_out_still_refuses() -> None:
    for level in (1, 2, 3):
        assert zmtp_qos.Socket(zmtp.REQ, qos=level).level == level
        assert zmtp_qos.Socket(zmtp.REP, qos=level).level == level
    with pytest.raises(ValueError, match="PUB cannot have QoS"):
        zmtp_qos.Socket(zmtp.PUB, qos=1)
    with pytest.raises(ValueError, match="not DEALER"):
        zmtp_qos.Socket(zmtp.DEALER, qos=1)


@pytest.mark.parametrize("level", [1, 2])
async def test_connection_cut_mid_request_re_sends_it_after_the_reconnect(level: int) -> None:
    """The fault proxy cuts the only connection while the reply is awaited: REQ (the
    connecting side) reconnects and re-sends; the reply to the lost copy goes nowhere."""
    with anyio.fail_after(30):
        async with zmtp_qos.Socket(zmtp.REP, qos=level) as rep:
            port = int((await rep.bind("tcp://127.0.0.1:*")).rsplit(":", 1)[1])
            async with (
                FaultProxy("127.0.0.1", port) as proxy,
                zmtp_qos.Socket(zmtp.REQ, qos=level, linger=0) as req,
            ):
                events = req.monitor()
                await req.connect(proxy.endpoint)
                await req.send(b"job")
                assert await rep.recv() == b"job"
                proxy.cut()
                await events.wait_for(zmtp.Disconnected)
                await rep.send(b"lost reply")  # its connection is gone: dropped
                assert await rep.recv() == b"job"  # the re-sent copy, on the new connection
                await rep.send(b"done")
                assert await req.recv() == b"done"


async def test_poller_reports_a_failed_request_readable_and_recv_raises_it() -> None:
    """A Poller must not swallow the NACK: REQ is readable, and the next recv raises it."""
    with anyio.fail_after(20):
        async with (
            zmtp_qos.Socket(zmtp.REP, qos=3) as rep,
            zmtp_qos.Socket(zmtp.REQ, qos=3) as req,
        ):
            await req.connect(await rep.bind("tcp://127.0.0.1:*"))
            await req.send(b"x")
            handle = await rep.recv()
            poller = zmtp.Poller()
            poller.register(req.raw, zmtp.POLLIN)
            handle.reject(0x05, "no")
            assert await poller.poll() == [(req.raw, zmtp.POLLIN)]
            assert req.raw.readable()  # still: nothing consumed it
            with pytest.raises(NackError):
                await req.recv()
            assert not req.raw.readable()


def test_only_qos_push_and_scatter_give_receipts() -> None:
    for kind in (zmtp.PUSH, zmtp.SCATTER):
        assert zmtp_qos.Socket(kind, qos=1).gives_receipts
        assert not zmtp_qos.Socket(kind, qos=0).gives_receipts
    for kind in (zmtp.REQ, zmtp.REP):
        for level in (1, 2, 3):
            assert not zmtp_qos.Socket(kind, qos=level).gives_receipts


async def test_a_dead_lettered_request_is_in_the_dead_letter_stream_and_not_logged(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """No receipt, but the socket-wide stream sees a REQ's dead letters too (and the
    unconsumed-dead-letter warning stays quiet: recv raises it)."""
    config = QoSConfig(dead_letter_timeout=0.3)
    with anyio.fail_after(20):
        async with zmtp_qos.Socket(zmtp.REQ, qos=2, config=config, linger=0) as req:
            ep = await req.bind("tcp://127.0.0.1:*")
            async with zmtp_qos.Socket(zmtp.REP, qos=2, identity=b"rep-A", linger=0) as a:
                await a.connect(ep)
                assert await req.send(b"job") is None
                assert await a.recv() == b"job"
            letters = req.dead_letters()
            with pytest.raises(DeadLetterError) as caught:
                await req.recv()
            streamed = await letters.__anext__()
            assert streamed == caught.value.letter
            assert (streamed.reason, streamed.peer) == ("peer_timeout", "rep-A")
        # Nobody reads a stream now: the error from recv is the report, nothing logged.
        async with zmtp_qos.Socket(zmtp.REQ, qos=2, config=config, linger=0) as req:
            await req.connect("inproc://qos-reqrep-nobody-" + os.urandom(6).hex())
            await req.send(b"lonely")
            with caplog.at_level("WARNING", logger="zmtp_qos"), pytest.raises(DeadLetterError):
                await req.recv()
            assert not [r for r in caplog.records if r.name == "zmtp_qos"]
