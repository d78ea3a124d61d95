"""The REQ/REP extension points (docs/extensions.md, "Extension points added for QoS") on plain
zmtp sockets: what zmtp_qos builds REQ→REP QoS on, with no extension installed."""

from __future__ import annotations

import anyio
import pytest

import zmtp
from zmtp.routing.req_rep import Rep, Req

pytestmark = pytest.mark.anyio


class Boom(Exception):
    pass


async def test_req_pending_request_resend_and_fail_request() -> None:
    with anyio.fail_after(20):
        # req_correlate: the duplicate reply below must not be taken for a later request.
        async with zmtp.Socket(zmtp.REP) as rep, zmtp.Socket(zmtp.REQ, req_correlate=True) as req:
            await req.connect(await rep.bind("tcp://127.0.0.1:*"))
            strategy = req.engine.strategy
            assert isinstance(strategy, Req)
            assert strategy.pending_request is None
            await req.send(b"job")
            pending = strategy.pending_request
            assert pending is not None
            pipe, wire = pending
            assert len(wire[0]) == 4  # as written: the request id and the delimiter included
            assert wire[1:] == [b"", b"job"]
            assert await rep.recv() == b"job"
            strategy.resend(pipe)  # the same request once more, to the same peer
            await rep.send(b"first")
            assert await rep.recv() == b"job"
            await rep.send(b"second")
            assert await req.recv() == b"first"
            assert strategy.pending_request is None
            with pytest.raises(zmtp.InvalidState):
                strategy.resend(pipe)  # nothing pending
            # fail_request wakes the recv waiting for a reply, which raises the error once.
            await req.send(b"lost")
            assert await rep.recv() == b"lost"
            caught: list[Boom] = []

            async def fail_soon() -> None:
                await anyio.wait_all_tasks_blocked()
                strategy.fail_request(Boom("gave up"))

            async with anyio.create_task_group() as tg:
                tg.start_soon(fail_soon)
                try:
                    await req.recv()
                except Boom as error:
                    caught.append(error)
            assert [str(e) for e in caught] == ["gave up"]
            with pytest.raises(zmtp.InvalidState):
                await req.recv()  # raised once; REQ is back to ready
            await rep.send(b"late")  # the abandoned request's reply is not taken for the next
            await req.send(b"next")
            assert await rep.recv() == b"next"
            await rep.send(b"answer")
            assert await req.recv() == b"answer"


async def test_rep_current_request_and_answer_command() -> None:
    with anyio.fail_after(20):
        async with zmtp.Socket(zmtp.REP) as rep, zmtp.Socket(zmtp.REQ, req_relaxed=True) as req:
            await req.connect(await rep.bind("tcp://127.0.0.1:*"))
            strategy = rep.engine.strategy
            assert isinstance(strategy, Rep)
            assert strategy.current_request is None
            with pytest.raises(zmtp.InvalidState):
                strategy.answer_command(b"NACK", b"")
            await req.send(b"one")
            assert await rep.recv() == b"one"
            current = strategy.current_request
            assert current is not None
            assert current[1] == [b""]  # the envelope: just the delimiter, direct from a REQ
            strategy.answer_command(b"X-TEST", b"data")  # REQ ignores an unknown command
            assert strategy.current_request is None
            await req.send(b"two")  # relaxed: the first is abandoned
            assert await rep.recv() == b"two"  # REP was ready for the next request
            await rep.send(b"reply")
            assert await req.recv() == b"reply"
