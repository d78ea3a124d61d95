"""QoS 1-3 on PUSH->PULL and SCATTER->GATHER over tcp, ipc and inproc (both backends)."""

from __future__ import annotations

import os
import tempfile

import anyio
import pytest

import zmtp
import zmtp_qos
from tests.test_qos_captures import _port, _read_until
from tests.test_qos_reconnect import _raw_peer
from zmtp.crypto.keys import decode_key
from zmtp_qos import Delivered
from zmtp_qos.events import QoSDeadLettered, QoSRetried
from zmtp_qos.socket import Handle, VerdictError

pytestmark = pytest.mark.anyio

_counter = 0


def _endpoint(transport: str) -> str:
    global _counter
    _counter += 1
    if transport == "tcp":
        return "tcp://127.0.0.1:*"
    if transport == "ipc":
        return f"ipc://{tempfile.gettempdir()}/zmtp-qos-{os.getpid()}-{_counter}.sock"
    return f"inproc://qos-{os.getpid()}-{_counter}"


@pytest.mark.parametrize("transport", ["tcp", "ipc", "inproc"])
@pytest.mark.parametrize("level", [1, 2])
async def test_receipts_resolve_delivered(transport: str, level: int) -> None:
    with anyio.fail_after(20):
        async with (
            zmtp_qos.Socket(zmtp.PULL, qos=level) as pull,
            zmtp_qos.Socket(zmtp.PUSH, qos=level) as push,
        ):
            ep = await pull.bind(_endpoint(transport))
            await push.connect(ep)
            receipts = []
            for i in range(50):
                receipt = await push.send_multipart([b"m", str(i).encode()])
                assert receipt is not None
                receipts.append(receipt)
            got = [await pull.recv_multipart() for _ in range(50)]
            assert got == [[b"m", str(i).encode()] for i in range(50)]
            outcomes = [await r for r in receipts]
            assert all(isinstance(o, Delivered) for o in outcomes)
            assert push.runtime is not None and push.runtime.in_flight == 0
            assert push.runtime.delivered == 50


@pytest.mark.parametrize("transport", ["tcp", "inproc"])
async def test_level3_complete_and_terminal_nack(transport: str) -> None:
    with anyio.fail_after(20):
        async with (
            zmtp_qos.Socket(zmtp.PULL, qos=3) as pull,
            zmtp_qos.Socket(zmtp.PUSH, qos=3) as push,
        ):
            ep = await pull.bind(_endpoint(transport))
            await push.connect(ep)
            good = await push.send(b"good")
            bad = await push.send(b"bad")
            h1: Handle = await pull.recv()
            async with h1:
                assert h1.parts == [b"good"]
            with pytest.raises(VerdictError):
                h1.complete()
            h2: Handle = await pull.recv()
            with pytest.raises(zmtp_qos.BadInput):
                async with h2:
                    raise zmtp_qos.BadInput("not a number")
            assert isinstance(await good, Delivered)  # type: ignore[misc]
            letter = await bad  # type: ignore[misc]
            assert isinstance(letter, zmtp_qos.DeadLetter)
            assert letter.reason == "terminal_nack" and letter.parts == [b"bad"]
            assert letter.error == zmtp_qos.NackError(0x02, "not a number")


async def test_level3_retryable_nack_then_success() -> None:
    config = zmtp_qos.QoSConfig(backoff_base=0.01, backoff_max=0.05)
    with anyio.fail_after(20):
        async with (
            zmtp_qos.Socket(zmtp.PULL, qos=3) as pull,
            zmtp_qos.Socket(zmtp.PUSH, qos=3, config=config) as push,
        ):
            ep = await pull.bind("tcp://127.0.0.1:*")
            await push.connect(ep)
            events = push.monitor()
            receipt = await push.send(b"job")
            for _ in range(2):
                handle = await pull.recv_handle()
                handle.reject(0x84, "busy")
            for retry in (1, 2):
                event = await events.wait_for(QoSRetried)
                assert isinstance(event, QoSRetried)
                assert (event.code, event.retry) == (0x84, retry)
            handle = await pull.recv_handle()
            assert handle.parts == [b"job"]
            handle.complete()
            assert isinstance(await receipt, Delivered)  # type: ignore[misc]


async def test_level3_retries_exhausted_counts_retries_not_attempts() -> None:
    config = zmtp_qos.QoSConfig(max_retries=1, backoff_base=0.01, backoff_max=0.02)
    with anyio.fail_after(20):
        async with (
            zmtp_qos.Socket(zmtp.PULL, qos=3) as pull,
            zmtp_qos.Socket(zmtp.PUSH, qos=3, config=config) as push,
        ):
            ep = await pull.bind("tcp://127.0.0.1:*")
            await push.connect(ep)
            receipt = await push.send(b"job")
            for _ in range(2):  # first attempt + 1 retry = 2 handler calls
                (await pull.recv_handle()).reject(0x83, "boom")
            letter = await receipt  # type: ignore[misc]
            assert isinstance(letter, zmtp_qos.DeadLetter)
            assert letter.reason == "retry_exhausted"
            assert letter.error == zmtp_qos.NackError(0x83, "boom")


async def test_level3_processing_timeout_nacks_0x81() -> None:
    config = zmtp_qos.QoSConfig(processing_timeout=0.05, max_retries=0)
    with anyio.fail_after(20):
        async with (
            zmtp_qos.Socket(zmtp.PULL, qos=3, config=config) as pull,
            zmtp_qos.Socket(zmtp.PUSH, qos=3, config=config) as push,
        ):
            ep = await pull.bind("tcp://127.0.0.1:*")
            await push.connect(ep)
            receipt = await push.send(b"slow")
            handle = await pull.recv_handle()  # never decided by the application
            letter = await receipt  # type: ignore[misc]
            assert isinstance(letter, zmtp_qos.DeadLetter)
            assert letter.error is not None and letter.error.code == 0x81
            with pytest.raises(VerdictError):
                handle.complete()


@pytest.mark.parametrize("level", [1, 2, 3])
async def test_scatter_gather(level: int) -> None:
    with anyio.fail_after(20):
        async with (
            zmtp_qos.Socket(zmtp.GATHER, qos=level) as gather,
            zmtp_qos.Socket(zmtp.SCATTER, qos=level) as scatter,
        ):
            ep = await gather.bind("tcp://127.0.0.1:*")
            await scatter.connect(ep)
            receipt = await scatter.send(b"one")
            if level == 3:
                (await gather.recv_handle()).complete()
            else:
                assert await gather.recv() == b"one"
            assert isinstance(await receipt, Delivered)  # type: ignore[misc]


async def test_level_mismatch_is_rejected_with_the_reason() -> None:
    with anyio.fail_after(20):
        async with (
            zmtp_qos.Socket(zmtp.PULL, qos=1) as pull,
            zmtp_qos.Socket(zmtp.PUSH, qos=2) as push,
        ):
            events = pull.monitor()
            ep = await pull.bind("tcp://127.0.0.1:*")
            await push.connect(ep)
            event = await events.wait_for(zmtp.HandshakeFailed)
            assert isinstance(event, zmtp.HandshakeFailed)
            assert event.kind == "rejected"
            assert event.reason == "QoS mismatch: local=1 peer=2"


async def test_un_acked_messages_count_against_send_hwm() -> None:
    """A peer that never ACKs (a plain PULL cannot connect; use level 3 with no verdict)."""
    with anyio.fail_after(20):
        async with (
            zmtp_qos.Socket(zmtp.PULL, qos=3) as pull,
            zmtp_qos.Socket(zmtp.PUSH, qos=3, send_hwm=4, linger=0) as push,
        ):
            ep = await pull.bind("tcp://127.0.0.1:*")
            await push.connect(ep)
            receipts = [await push.send(b"%d" % i) for i in range(4)]
            handles = [await pull.recv_handle() for _ in range(4)]
            assert push.runtime is not None and push.runtime.in_flight == 4
            with pytest.raises(TimeoutError):
                with anyio.fail_after(0.3):
                    await push.send(b"blocked")  # the in-flight cap is full
            handles[0].complete()
            await receipts[0]  # type: ignore[misc]
            fifth = await push.send(b"now")  # a slot opened
            assert fifth is not None


async def test_fan_out_and_unsupported_types_refuse_qos() -> None:
    for kind in (zmtp.PUB, zmtp.SUB, zmtp.XPUB, zmtp.XSUB):
        with pytest.raises(ValueError, match="subscriber"):
            zmtp_qos.Socket(kind, qos=1)
    with pytest.raises(ValueError, match="supported"):
        zmtp_qos.Socket(zmtp.PAIR, qos=1)
    with pytest.raises(ValueError):
        zmtp_qos.Socket(zmtp.PUSH, qos=4)
    plain = zmtp_qos.Socket(zmtp.PUSH, qos=0)
    assert plain.raw.extension is None  # level 0 is plain zmtp


async def test_close_lingers_for_pending_comp() -> None:
    """Reference shortcoming 5: close did not wait for acknowledgements."""
    with anyio.fail_after(20):
        async with zmtp_qos.Socket(zmtp.PULL, qos=3) as pull:
            ep = await pull.bind("tcp://127.0.0.1:*")
            push = zmtp_qos.Socket(zmtp.PUSH, qos=3, linger=10)
            async with anyio.create_task_group() as tg:
                async with push:
                    await push.connect(ep)
                    receipt = await push.send(b"work")
                    handle = await pull.recv_handle()
                    lingering = anyio.Event()
                    assert push.runtime is not None
                    push.runtime.on_linger = lingering.set
                    tg.start_soon(_complete_later, handle, lingering)
                # left the block: close waited for the COMP
                assert isinstance(await receipt, Delivered)  # type: ignore[misc]


async def _complete_later(handle: Handle, lingering: anyio.Event) -> None:
    await lingering.wait()  # complete only once the close is waiting for it
    handle.complete()


async def test_linger_zero_dead_letters_pending_at_once() -> None:
    with anyio.fail_after(20):
        async with zmtp_qos.Socket(zmtp.PULL, qos=3) as pull:
            ep = await pull.bind("tcp://127.0.0.1:*")
            async with zmtp_qos.Socket(zmtp.PUSH, qos=3, linger=0) as push:
                await push.connect(ep)
                receipt = await push.send(b"work")
                await pull.recv_handle()  # no verdict
            letter = await receipt  # type: ignore[misc]
            assert isinstance(letter, zmtp_qos.DeadLetter) and letter.reason == "socket_closed"


@pytest.mark.parametrize("level", [1, 2])
async def test_identical_messages_in_flight_are_settled_fifo(level: int) -> None:
    """Reference shortcoming 7: identical messages overwrote each other and leaked a slot."""
    with anyio.fail_after(20):
        async with (
            zmtp_qos.Socket(zmtp.PULL, qos=level) as pull,
            zmtp_qos.Socket(zmtp.PUSH, qos=level) as push,
        ):
            await push.connect(await pull.bind("tcp://127.0.0.1:*"))
            receipts = [await push.send(b"same") for _ in range(3)]
            assert await pull.recv() == b"same"
            for r in receipts:
                assert isinstance(await r, Delivered)  # type: ignore[misc]
            assert push.runtime is not None and push.runtime.in_flight == 0


@pytest.mark.parametrize("level", [2, 3])
async def test_curve_public_keys_are_the_anchors(level: int) -> None:
    server_public, server_secret = zmtp.curve_keypair()
    client_public, client_secret = zmtp.curve_keypair()
    with anyio.fail_after(20):
        async with (
            zmtp_qos.Socket(
                zmtp.PULL, qos=level, curve_server=True, curve_secretkey=server_secret
            ) as pull,
            zmtp_qos.Socket(
                zmtp.PUSH,
                qos=level,
                curve_secretkey=client_secret,
                curve_publickey=client_public,
                curve_serverkey=server_public,
            ) as push,
        ):
            await push.connect(await pull.bind("tcp://127.0.0.1:*"))
            receipt = await push.send(b"secret")
            if level == 3:
                (await pull.recv_handle()).complete()
            else:
                assert await pull.recv() == b"secret"
            outcome = await receipt  # type: ignore[misc]
            assert isinstance(outcome, Delivered)
            assert outcome.peer == "curve:" + decode_key(server_public).hex()


async def test_linger_keeps_retrying_a_message_in_back_off() -> None:
    """A level-3 message NACKed retryably just before close is retried within linger
    (docs/qos-protocol.md §5.3), not dead-lettered ``socket_closed`` at the deadline: the
    retry timers used to stop when the close started."""
    config = zmtp_qos.QoSConfig(backoff_base=0.5, backoff_max=0.5)
    retried_while_lingering: list[bool] = []
    with anyio.fail_after(20):
        async with zmtp_qos.Socket(zmtp.PULL, qos=3) as pull:
            ep = await pull.bind("tcp://127.0.0.1:*")
            push = zmtp_qos.Socket(zmtp.PUSH, qos=3, config=config, linger=5)
            lingering = anyio.Event()

            async def complete_the_retry() -> None:
                handle = await pull.recv_handle()
                retried_while_lingering.append(lingering.is_set())
                handle.complete()

            async with anyio.create_task_group() as tg:
                async with push:
                    events = push.monitor()
                    await push.connect(ep)
                    receipt = await push.send(b"work")
                    (await pull.recv_handle()).reject(0x84, "busy")
                    await events.wait_for(QoSRetried)  # in back-off now
                    assert push.runtime is not None
                    push.runtime.on_linger = lingering.set
                    tg.start_soon(complete_the_retry)
                # left the block: the close lingered while the retry went out and was COMPed
                tg.cancel_scope.cancel()  # (before the fix: no retry ever came)
            assert retried_while_lingering == [True]
            assert isinstance(await receipt, Delivered)  # type: ignore[misc]


@pytest.mark.parametrize("level", [1, 2])
async def test_an_immediate_ack_finds_its_message(level: int) -> None:
    """Reference shortcoming 6: it wrote before tracking, so an ACK arriving at once was for
    an unknown digest and ignored. On inproc the receiver's ACK comes back inside the very
    hand-over (before ``send`` returns): the message must already be tracked."""
    endpoint = _endpoint("inproc")
    with anyio.fail_after(20):
        async with (
            zmtp_qos.Socket(zmtp.PULL, qos=level) as pull,
            zmtp_qos.Socket(zmtp.PUSH, qos=level) as push,
        ):
            events = push.monitor()
            await pull.bind(endpoint)
            await push.connect(endpoint)
            await events.wait_for(zmtp.HandshakeSucceeded)
            receipt = await push.send(b"at once")
            assert receipt is not None and receipt.done  # settled by the immediate ACK
            assert isinstance(receipt.outcome, Delivered)
            assert push.stats().in_flight == 0
            assert await pull.recv() == b"at once"


@pytest.mark.parametrize(("level", "reason"), [(1, "dropped_at_close"), (2, "socket_closed")])
async def test_what_is_pending_at_the_linger_deadline_is_reported(level: int, reason: str) -> None:
    """Close waited ``linger`` for an ACK that never came: the receipt resolves to a dead
    letter (level 1: ``dropped_at_close``) and the monitor reports it before it stops."""
    with anyio.fail_after(20):
        push = zmtp_qos.Socket(zmtp.PUSH, qos=level, linger=0.3)
        async with push:
            events = push.monitor()
            ep = await push.bind("tcp://127.0.0.1:*")
            raw = await _raw_peer(_port(ep), b"PULL", b"receiver-A", level)  # never ACKs
            await events.wait_for(zmtp.HandshakeSucceeded)
            receipt = await push.send(b"unanswered")
            await _read_until(raw, bytearray(), 2)  # it was written
        letter = await receipt  # type: ignore[misc]
        assert isinstance(letter, zmtp_qos.DeadLetter) and letter.reason == reason
        seen = [event async for event in events]  # ends with MonitorStopped
        dead = [e for e in seen if isinstance(e, QoSDeadLettered)]
        assert [(e.reason, e.endpoint) for e in dead] == [(reason, ep)]  # the connection's
        await raw.aclose()
