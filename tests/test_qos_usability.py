"""What a new user trips over first (found by using the package from its docs): a receipt that
prints as what it is, pyzmq millisecond habits in ``QoSConfig``, a ``Producer`` given a level,
a worker handler that is not a function or that hands back a coroutine from a plain ``def``,
and the worker's log line for a processing timeout."""

from __future__ import annotations

import logging
import re
import warnings

import anyio
import pytest

import zmtp
import zmtp_qos
from zmtp_qos import DeadLetter, Delivered, QoSConfig, Receipt

pytestmark = pytest.mark.anyio


def test_a_receipt_prints_its_state() -> None:
    receipt = Receipt()
    assert repr(receipt) == "<Receipt pending>"
    receipt.resolve(Delivered("w1"))
    assert repr(receipt) == "<Receipt Delivered(peer='w1')>"


async def test_a_sent_receipt_prints_as_a_receipt() -> None:
    """``send`` hands out the tracker's entry (a Receipt subclass): it prints as a Receipt."""
    async with (
        zmtp_qos.Socket(zmtp.PULL, qos=1) as pull,
        zmtp_qos.Socket(zmtp.PUSH, qos=1) as push,
    ):
        await push.connect(await pull.bind("inproc://usability-receipt"))
        receipt = await push.send(b"x")
        assert receipt is not None
        assert await pull.recv() == b"x"
        with anyio.fail_after(5):
            outcome = await receipt
        assert repr(receipt) == f"<Receipt {outcome!r}>"


def test_qos_config_warns_about_milliseconds() -> None:
    with pytest.warns(UserWarning, match=r"dead_letter_timeout=60\?"):
        config = QoSConfig(dead_letter_timeout=60000)
    assert config.dead_letter_timeout == 60000  # still seconds, as zmtp's options
    with pytest.warns(UserWarning, match="processing_timeout=30"):
        QoSConfig(processing_timeout=30000)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        QoSConfig(dead_letter_timeout=60000.0, dedup_ttl=120)  # a float, or a small int


def test_a_producer_refuses_a_level_clearly() -> None:
    with pytest.raises(TypeError, match="always QoS 3"):
        zmtp_qos.Producer(qos=2)


def test_a_worker_refuses_a_handler_that_is_not_callable() -> None:
    with pytest.raises(TypeError, match="handler must be a function"):
        zmtp_qos.Worker("jobs:resize", connect=["tcp://127.0.0.1:1"])  # type: ignore[arg-type]


def test_a_worker_answers_linger_with_what_to_use_instead() -> None:
    """``Worker(..., linger=0)``: a worker has no linger of its own (stop() waits for its
    verdicts, kill() closes at once); the error says so, and where the socket's linger goes."""
    with pytest.raises(TypeError) as refused:
        zmtp_qos.Worker(print, connect=["tcp://127.0.0.1:1"], linger=0)  # type: ignore[arg-type]
    text = str(refused.value)
    assert text.startswith("Worker() got an unexpected keyword argument 'linger': ")
    assert "kill() closes at once (linger 0)" in text and "confirm_timeout" in text
    assert text.endswith("options={'linger': 0}")


def test_a_worker_points_a_socket_option_keyword_to_options() -> None:
    with pytest.raises(TypeError, match=re.escape("go in options={'recv_hwm': 5}")):
        zmtp_qos.Worker(print, connect=["tcp://127.0.0.1:1"], recv_hwm=5)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"unexpected keyword argument 'concurency'$"):
        zmtp_qos.Worker(print, connect=["tcp://127.0.0.1:1"], concurency=5)  # type: ignore[arg-type]


async def test_the_linger_the_error_suggests_reaches_the_worker_s_socket() -> None:
    async with zmtp_qos.Producer() as producer:
        endpoint = await producer.bind("tcp://127.0.0.1:*")
        worker = zmtp_qos.Worker(print, connect=[endpoint], options={"linger": 0})
        async with anyio.create_task_group() as tg:
            await tg.start(worker.run)
            assert worker.socket is not None and worker.socket.raw.options.linger == 0
            worker.stop()


async def test_a_plain_function_returning_a_coroutine_is_awaited() -> None:
    """``lambda parts: process(parts)`` over an async ``process`` is a plain function: it runs
    in a thread and returns a coroutine. The job is that coroutine: it is awaited (it used to
    be dropped unawaited and the job answered COMP with nothing done)."""
    done: list[bytes] = []

    async def process(parts: list[bytes]) -> None:
        await anyio.sleep(0)
        done.append(parts[0])

    async with zmtp_qos.Producer() as producer:
        endpoint = await producer.bind("tcp://127.0.0.1:*")
        worker = zmtp_qos.Worker(lambda parts: process(parts), connect=[endpoint])
        async with anyio.create_task_group() as tg:
            await tg.start(worker.run)
            with anyio.fail_after(10):
                receipt = await producer.submit(b"job")
                assert isinstance(await receipt, Delivered)
            worker.stop()
    assert done == [b"job"]


async def test_the_timeout_log_line_names_no_private_class(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING, logger="zmtp_qos.worker")

    async def slow(parts: list[bytes]) -> None:
        await anyio.sleep(10)

    config = QoSConfig(max_retries=0)
    async with zmtp_qos.Producer(config=config) as producer:
        endpoint = await producer.bind("tcp://127.0.0.1:*")
        worker = zmtp_qos.Worker(slow, connect=[endpoint], processing_timeout=0.05)
        async with anyio.create_task_group() as tg:
            await tg.start(worker.run)
            with anyio.fail_after(10):
                letter = await (await producer.submit(b"slow"))
            assert isinstance(letter, DeadLetter) and letter.reason == "retry_exhausted"
            worker.stop()
    assert "timeout: ran past processing_timeout (0.05 s) -> NACK TIMEOUT" in caplog.text
    assert "_Expired" not in caplog.text
