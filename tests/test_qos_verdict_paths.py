"""A level-3 receiver's success verdict means the same whichever way it is given.

A PULL's handle completes through its own inlined copy of the runtime's COMP queueing (one
Python call fewer per message, docs/performance.md) when its connection already has COMPs
queued, and through the general verdict path otherwise (the first verdict after a flush, the
first on another connection, the 256th queued); ``Handle.complete`` (the base class's
spelling) and ``async with handle:`` are the general path's public doors. The code asks that
the copies be kept in step: these tests pin them to each other through public behaviour only
(the COMP and NACK frames on each connection, in verdict order; the counters; the answer to a
later copy; a second verdict), for every spelling, across the boundaries where the path
changes, and (hypothesis) for any mix of spellings, rejections, connections and yields.

Raw TCP senders stand in for the PUSH: they never send CLR, so what the receiver remembers
and answers is exactly what the tests give verdicts for.
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from typing import Any

import anyio
import pytest
from anyio.abc import SocketStream
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import zmtp
import zmtp_qos
from tests.test_qos_captures import _port, _read_until
from tests.test_qos_reconnect import _raw_peer
from tests.test_qos_verdict_flush import _data, _digest, _verdicts
from zmtp_qos import Handle, VerdictError

pytestmark = pytest.mark.anyio

Verdict = Callable[[Handle], Coroutine[Any, Any, None]]


async def _complete(handle: Handle) -> None:
    handle.complete()


async def _base_complete(handle: Handle) -> None:
    Handle.complete(handle)  # the general path, whatever a subclass inlines


async def _async_with(handle: Handle) -> None:
    async with handle:
        pass


#: Every public spelling of success; none of them yields.
SUCCESS: dict[str, Verdict] = {
    "complete": _complete,
    "Handle.complete": _base_complete,
    "async with": _async_with,
}


def _rejecting(code: int) -> Verdict:
    async def reject(handle: Handle) -> None:
        handle.reject(code, "no")

    return reject


#: Terminal and retryable NACKs, which go out at once after the COMPs queued before them.
FAILURE: dict[str, Verdict] = {"nack 0x05": _rejecting(0x05), "nack 0x84": _rejecting(0x84)}


async def _connect(
    pull: zmtp_qos.Socket, port: int, sender: bytes, bodies: list[bytes]
) -> SocketStream:
    raw = await _raw_peer(port, b"PUSH", sender, 3)
    await raw.send(_data(bodies))
    return raw


@pytest.mark.parametrize("spelling", list(SUCCESS))
@pytest.mark.parametrize("count", [1, 2, 255, 256, 257, 300])
async def test_every_spelling_of_success_is_the_same_comps(spelling: str, count: int) -> None:
    """``count`` verdicts in a row without a yield (the runtime writes 256 queued at once):
    exactly one COMP per message, in verdict order; the counters see every verdict at once;
    a second verdict changes nothing on the wire; a later copy is answered COMP, not
    delivered."""
    give = SUCCESS[spelling]
    bodies = [b"v%d" % i for i in range(count)]
    with anyio.fail_after(30):
        async with zmtp_qos.Socket(zmtp.PULL, qos=3) as pull:
            port = _port(await pull.bind("tcp://127.0.0.1:*"))
            async with await _connect(pull, port, b"sender-A", bodies) as raw:
                handles = [await pull.recv_handle() for _ in bodies]
                order = handles[::2] + handles[1::2]
                for handle in order:
                    await give(handle)
                stats = pull.stats()
                assert (stats.awaiting_verdict, stats.dedup) == (0, count)
                assert pull.unconfirmed() == count
                for handle in order:  # a second verdict: refused, or (async with) ignored
                    if spelling == "async with":
                        await give(handle)
                    else:
                        with pytest.raises(VerdictError):
                            await give(handle)
                await raw.send(_data([bodies[0], b"new"]))  # a copy of a completed one
                last = await pull.recv_handle()
                assert last.parts == [b"new"]
                await give(last)
                buf = bytearray()
                await _read_until(raw, buf, 1 + count + 2)
                expected = [h.parts[0] for h in order] + [bodies[0], b"new"]
                assert _verdicts(bytes(buf)) == [(b"COMP", _digest(b)) for b in expected]
                assert pull.pending_handles == 0


#: One verdict: its spelling, and whether the application yields after it (the flusher
#: then writes what is queued, and the next verdict starts a new batch).
_steps = st.tuples(st.sampled_from(sorted(SUCCESS) + sorted(FAILURE)), st.booleans())


@settings(deadline=None, max_examples=20, suppress_health_check=[HealthCheck.too_slow])
@given(counts=st.tuples(st.integers(1, 6), st.integers(0, 6)), data=st.data())
async def test_any_mix_of_spellings_connections_and_yields_keeps_verdict_order(
    counts: tuple[int, int], data: st.DataObject
) -> None:
    """Two senders (two connections, two anchors), verdicts in any order, each given any
    way, with or without a yield after it: each connection gets exactly its messages'
    verdicts, COMP or NACK as given, in the order given."""
    senders = [b"sender-A", b"sender-B"]
    bodies = [
        [b"%s-%d" % (s[-1:], i) for i in range(n)] for s, n in zip(senders, counts, strict=True)
    ]
    with anyio.fail_after(30):
        async with zmtp_qos.Socket(zmtp.PULL, qos=3) as pull:
            port = _port(await pull.bind("tcp://127.0.0.1:*"))
            raws = [
                await _connect(pull, port, s, b) for s, b in zip(senders, bodies, strict=True) if b
            ]
            total = sum(counts)
            handles = [await pull.recv_handle() for _ in range(total)]
            order = data.draw(st.permutations(handles))
            steps = data.draw(st.lists(_steps, min_size=total, max_size=total))
            given_verdicts: dict[bytes, list[tuple[bytes, bytes]]] = {b"A": [], b"B": []}
            for handle, (spelling, yields) in zip(order, steps, strict=True):
                body = handle.parts[0]
                await {**SUCCESS, **FAILURE}[spelling](handle)
                name = b"COMP" if spelling in SUCCESS else b"NACK"
                given_verdicts[body[:1]].append((name, _digest(body)))
                if yields:
                    await anyio.lowlevel.checkpoint()
            assert pull.stats().awaiting_verdict == 0
            for raw, sender in zip(raws, senders, strict=False):
                async with raw:
                    expected = given_verdicts[sender[-1:]]
                    buf = bytearray()
                    await _read_until(raw, buf, 1 + len(expected))
                    assert _verdicts(bytes(buf)) == expected
