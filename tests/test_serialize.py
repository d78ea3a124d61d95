"""The async socket's serialisation helpers, live against pyzmq's (same bytes both ways)."""

from __future__ import annotations

import anyio
import pytest
import zmq

import zmtp
from zmtp.serialize import encode_json

pytestmark = pytest.mark.anyio

OBJ = {"text": "héllo", "n": [1, 2.5, None], "nested": {"ok": True}}


async def test_helpers_against_pyzmq() -> None:
    ctx: zmq.Context[zmq.Socket[bytes]] = zmq.Context()
    theirs = ctx.socket(zmq.PAIR)
    theirs.setsockopt(zmq.RCVTIMEO, 10_000)
    theirs.setsockopt(zmq.LINGER, 0)
    try:
        with anyio.fail_after(20):
            async with zmtp.Socket(zmtp.PAIR) as ours:
                theirs.connect(await ours.bind("tcp://127.0.0.1:*"))
                run = anyio.to_thread.run_sync

                await ours.send_string("héllo", encoding="latin-1")
                assert await run(lambda: theirs.recv_string(encoding="latin-1")) == "héllo"
                await ours.send_json(OBJ, sort_keys=True)
                assert await run(theirs.recv) == encode_json(OBJ, sort_keys=True)
                await ours.send_pyobj({1, 2, 3})
                assert await run(theirs.recv_pyobj) == {1, 2, 3}
                await ours.send_serialized(OBJ, lambda o: [b"json", encode_json(o)])
                assert await run(theirs.recv_multipart) == [b"json", encode_json(OBJ)]

                theirs.send_string("zurück")
                assert await ours.recv_string() == "zurück"
                theirs.send_json(OBJ)
                assert await ours.recv_json() == OBJ
                theirs.send_pyobj((1, "two"))
                assert await ours.recv_pyobj() == (1, "two")
                theirs.send_multipart([b"a", b"b"])
                assert await ours.recv_serialized(lambda parts: b"+".join(parts)) == b"a+b"
                with pytest.raises(TypeError, match="str"):
                    await ours.send_string(b"bytes")  # type: ignore[arg-type]
    finally:
        theirs.close(linger=0)
        ctx.term()


async def test_readable_consumes_nothing() -> None:
    with anyio.fail_after(10):
        async with zmtp.Socket(zmtp.PULL) as pull, zmtp.Socket(zmtp.PUSH) as push:
            await push.connect(await pull.bind("inproc://readable-async"))
            assert not pull.readable()
            await push.send(b"x")  # inproc: in the PULL's queue when send returns
            assert pull.readable() and pull.readable()
            assert await pull.recv() == b"x"
            assert not pull.readable()
            assert not push.readable()  # PUSH cannot receive: never readable
