"""PUB, SUB, XPUB, XSUB: ours against ours, and byte by byte against hand-written ZMTP 3.0 and
3.1 peers (docs/libzmq-notes.md#subscriptions)."""

from __future__ import annotations

import anyio
import pytest

import zmtp
from zmtp.testing import (
    TIMEOUT,
    linked,
    nothing_pending,
    ours_briefly,
    ours_sender,
    probe_path,
    raw_client,
    raw_server,
    recv_within,
    wait_event,
)
from zmtp.testing.wire import command, frame, message

pytestmark = pytest.mark.anyio

TRANSPORTS = ["tcp", "ipc", "inproc"]


async def publish_until_received(
    pub: zmtp.Socket, sub: zmtp.Socket, probe: bytes = b"probe"
) -> None:
    """Publish numbered probes until the SUB gets them: its subscription reached the PUB."""
    await probe_path(ours_sender(pub), ours_briefly(sub), probe)


# ---------------------------------------------------------------------- ours <-> ours


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_pub_sub_filters_by_prefix_and_unsubscribes(transport: str) -> None:
    async with linked("PUB", "SUB", transport) as (pub, sub):
        sub.subscribe(b"a")
        sub.subscribe("b")
        sub.subscribe(b"probe")
        await publish_until_received(pub, sub)
        for topic in (b"a1", b"c1", b"b1", b"", b"ab", b"x"):
            await pub.send_multipart([topic, b"body"])
        await pub.send(b"probe-end")
        got = [await recv_within(sub) for _ in range(4)]
        assert got == [[b"a1", b"body"], [b"b1", b"body"], [b"ab", b"body"], [b"probe-end"]]
        sub.unsubscribe(b"a")
        await publish_until_received(pub, sub, b"probe-2")
        await pub.send(b"a2")
        await pub.send(b"b2")
        assert await recv_within(sub) == [b"b2"]


async def test_subscriptions_are_counted_on_the_sub_side() -> None:
    async with linked("XPUB", "SUB", "inproc") as (xpub, sub):
        sub.subscribe(b"t")
        sub.subscribe(b"t")
        assert await recv_within(xpub) == [b"\x01t"]  # the second is a duplicate for XPUB
        sub.unsubscribe(b"t")  # still one left: nothing is sent upstream
        sub.subscribe(b"u")
        assert await recv_within(xpub) == [b"\x01u"]
        await xpub.send(b"t-still")
        assert await recv_within(sub) == [b"t-still"]
        sub.unsubscribe(b"t")
        assert await recv_within(xpub) == [b"\x00t"]


async def test_sub_filters_on_its_side_too_even_queued_messages() -> None:
    async with linked("PUB", "SUB", "inproc") as (pub, sub):
        sub.subscribe(b"x")
        sub.subscribe(b"y")
        await publish_until_received(pub, sub, b"x-probe")
        await pub.send(b"x1")
        await pub.send(b"y1")
        sub.unsubscribe(b"x")  # x1 is already queued: libzmq would not deliver it either
        assert await recv_within(sub) == [b"y1"]
        assert await nothing_pending(sub)


async def flood_past_a_slow_sub(pub: zmtp.Socket, fast: zmtp.Socket) -> list[bytes]:
    """Publish 300 messages of 100 kB (30 MB: far beyond a slow subscriber's buffers), then
    ``b"last"`` until the ``fast`` subscriber has it; what ``fast`` received. All within
    TIMEOUT: a PUB that blocked on the slow subscriber fails the test."""
    received: list[bytes] = []
    done = anyio.Event()

    async def reader() -> None:
        while True:
            data = await fast.recv()
            received.append(data)
            if data == b"last":
                done.set()
                return

    big = b"x" * 100_000
    async with anyio.create_task_group() as tg:
        tg.start_soon(reader)
        with anyio.fail_after(TIMEOUT):
            for _ in range(300):
                await pub.send(big)
            while not done.is_set():
                await pub.send(b"last")
                with anyio.move_on_after(0.01):
                    await done.wait()
    return received


async def test_pub_never_blocks_and_a_slow_sub_only_loses_its_own() -> None:
    async with zmtp.Socket(zmtp.PUB, linger=0, send_hwm=5) as pub:
        endpoint = await pub.bind("tcp://127.0.0.1:*")
        async with (
            zmtp.Socket(zmtp.SUB, linger=0, recv_hwm=5) as slow,
            zmtp.Socket(zmtp.SUB, linger=0) as fast,
        ):
            for sub in (slow, fast):
                sub.subscribe(b"")
                await sub.connect(endpoint)
                await publish_until_received(pub, sub)
            received = await flood_past_a_slow_sub(pub, fast)
            slow_count = 0
            with anyio.move_on_after(0.2):
                while True:
                    await slow.recv()
                    slow_count += 1
            assert slow_count < 300  # it dropped at its HWM...
            assert received[-1] == b"last"  # ...while the fast one kept going


@pytest.mark.parametrize("transport", ["tcp", "inproc"])
async def test_sub_resubscribes_after_reconnect(transport: str) -> None:
    endpoint = "tcp://127.0.0.1:*" if transport == "tcp" else f"inproc://resub-{id(transport)}"
    async with zmtp.Socket(zmtp.SUB, linger=0) as sub:
        sub.subscribe(b"a")
        sub.subscribe(b"a")
        sub.subscribe(b"b")
        async with zmtp.Socket(zmtp.XPUB, linger=0, xpub_verbose=True) as xpub:
            endpoint = await xpub.bind(endpoint)
            await sub.connect(endpoint)
            got = sorted([(await recv_within(xpub))[0] for _ in range(2)])
            assert got == [b"\x01a", b"\x01b"]
        async with zmtp.Socket(zmtp.XPUB, linger=0, xpub_verbose=True) as xpub2:
            await xpub2.bind(endpoint)
            got = sorted([(await recv_within(xpub2))[0] for _ in range(2)])
            assert got == [b"\x01a", b"\x01b"]  # once per topic, from the trie
            await xpub2.send(b"a-after-restart")
            assert await recv_within(sub) == [b"a-after-restart"]


async def test_xpub_notifications_verbose_and_disconnect() -> None:
    async with zmtp.Socket(zmtp.XPUB, linger=0) as xpub:
        endpoint = await xpub.bind("tcp://127.0.0.1:*")
        async with zmtp.Socket(zmtp.SUB, linger=0) as s1, zmtp.Socket(zmtp.SUB, linger=0) as s2:
            s1.subscribe(b"t")
            await s1.connect(endpoint)
            assert await recv_within(xpub) == [b"\x01t"]
            s2.subscribe(b"t")
            s2.subscribe(b"v")
            await s2.connect(endpoint)
            assert await recv_within(xpub) == [b"\x01v"]  # t already had a subscriber
            s1.unsubscribe(b"t")
            s2.unsubscribe(b"v")
            assert await recv_within(xpub) == [b"\x00v"]  # t still has s2
            async with xpub.monitor() as mon:
                await s2.disconnect(endpoint)
                await wait_event(mon, zmtp.Disconnected)
            assert await recv_within(xpub) == [b"\x00t"]  # s2's subscriptions end with it


async def test_xpub_verboser_passes_everything() -> None:
    async with linked("XPUB", "XSUB", "inproc", bind_options={"xpub_verboser": True}) as (
        xpub,
        xsub,
    ):
        for m in (b"\x01t", b"\x01t", b"\x00t"):
            await xsub.send(m)
        assert [await recv_within(xpub) for _ in range(2)] == [[b"\x01t"], [b"\x01t"]]
        # XSUB counts: the cancel is only forwarded when the last subscription goes.
        await xsub.send(b"\x00t")
        assert await recv_within(xpub) == [b"\x00t"]


async def test_xpub_manual_applies_subscriptions_on_request() -> None:
    async with linked("XPUB", "SUB", "tcp", bind_options={"xpub_manual": True}) as (xpub, sub):
        sub.subscribe(b"real")
        assert await recv_within(xpub) == [b"\x01real"]
        await xpub.send(b"real-1")  # not applied yet: nobody gets it
        xpub.subscribe(b"re")  # apply "re" to the peer heard last instead
        sub.subscribe(b"probe")
        assert await recv_within(xpub) == [b"\x01probe"]
        xpub.subscribe(b"probe")
        await publish_until_received(xpub, sub)
        await xpub.send(b"real-2")
        assert await recv_within(sub) == [b"real-2"]
        xpub.unsubscribe(b"re")
        await xpub.send(b"real-3")
        await xpub.send(b"probe-end")
        assert await recv_within(sub) == [b"probe-end"]
    async with zmtp.Socket(zmtp.XPUB) as plain:
        with pytest.raises(zmtp.UnsupportedOperation, match="xpub_manual"):
            plain.subscribe(b"x")


async def test_xsub_upstream_messages_reach_the_xpub_application() -> None:
    async with linked("XPUB", "XSUB", "tcp") as (xpub, xsub):
        await xsub.send(b"\x01news")
        assert await recv_within(xpub) == [b"\x01news"]
        await xsub.send_multipart([b"hello", b"upstream"])
        assert await recv_within(xpub) == [b"hello", b"upstream"]
        await xpub.send(b"news!")
        await xpub.send(b"other")
        assert await recv_within(xsub) == [b"news!"]


async def test_welcome_message_reaches_a_subscribed_sub_first() -> None:
    opts = {"xpub_welcome_msg": b"WELCOME!"}

    def subscribe(_: zmtp.Socket, sub: zmtp.Socket) -> None:
        sub.subscribe(b"WEL")

    async with linked("XPUB", "SUB", "tcp", bind_options=opts, before_connect=subscribe) as (
        xpub,
        sub,
    ):
        assert await recv_within(sub) == [b"WELCOME!"]
        assert await recv_within(xpub) == [b"\x01WEL"]


async def test_conflate_keeps_only_the_newest() -> None:
    async with linked("PUB", "SUB", "inproc", connect_options={"conflate": True}) as (pub, sub):
        sub.subscribe(b"")
        await publish_until_received(pub, sub)
        for i in range(10):
            await pub.send(str(i).encode())
        assert await recv_within(sub) == [b"9"]
        assert await nothing_pending(sub)


async def test_xpub_nodrop_waits_instead_of_dropping() -> None:
    opts = {"xpub_nodrop": True, "send_hwm": 1, "send_timeout": 0.05}
    async with linked(
        "XPUB", "SUB", "inproc", bind_options=opts, connect_options={"recv_hwm": 1}
    ) as (xpub, sub):
        sub.subscribe(b"")
        assert await recv_within(xpub) == [b"\x01"]
        await xpub.send(b"1")
        await xpub.send(b"2")
        with pytest.raises(TimeoutError):
            await xpub.send(b"3")
        assert await recv_within(sub) == [b"1"]
        await xpub.send(b"3")


async def test_sub_cannot_send_and_pub_cannot_receive() -> None:
    async with zmtp.Socket(zmtp.SUB) as sub, zmtp.Socket(zmtp.PUB) as pub:
        with pytest.raises(zmtp.UnsupportedOperation):
            await sub.send(b"x")
        with pytest.raises(zmtp.UnsupportedOperation):
            await pub.recv()
        with pytest.raises(zmtp.UnsupportedOperation, match="from SUB peers"):
            pub.subscribe(b"x")


# ---------------------------------------------------------------------- byte level


async def test_pub_accepts_legacy_and_command_subscriptions_from_a_3_0_peer() -> None:
    async with zmtp.Socket(zmtp.PUB, linger=0) as pub:
        endpoint = await pub.bind("tcp://127.0.0.1:*")
        async with raw_client(endpoint) as peer:
            await peer.handshake("SUB", minor=0)
            await peer.send(bytes.fromhex("00020141"))  # 3.0 subscribe "A" (test_mock_pub_sub)
            await peer.send(command(b"SUBSCRIBE", b"C"))  # also accepted from a 3.0 peer
            # Both are applied once probes on "C" (the later one) come through.
            await probe_path(ours_sender(pub), peer.read_message_briefly, b"C-probe")
            await pub.send(b"BLOL")  # filtered on the PUB side: never written
            await pub.send(b"ALOL")
            assert await peer.read_raw_frame() == bytes.fromhex("0004") + b"ALOL"
            await peer.send(bytes.fromhex("00020041"))  # 3.0 cancel "A"
            await peer.send(command(b"CANCEL", b"C"))
            await peer.send(bytes.fromhex("00020142"))  # subscribe "B", processed after both
            await probe_path(ours_sender(pub), peer.read_message_briefly, b"B-probe")
            await pub.send(b"CLOL")
            await pub.send(b"ALOL")
            await pub.send(b"BLOL")
            assert await peer.read_message() == [b"BLOL"]


async def test_sub_speaks_commands_to_3_1_and_legacy_messages_to_3_0() -> None:
    for minor in (1, 0):
        async with raw_server() as server, zmtp.Socket(zmtp.SUB, linger=0) as sub:
            sub.subscribe(b"topic")
            async with sub.monitor() as mon:
                await sub.connect(server.endpoint)
                peer = await server.accept()
                await peer.handshake("PUB", minor=minor)
                await wait_event(mon, zmtp.HandshakeSucceeded)  # else the calls below coalesce
            sub.subscribe(b"topic")
            sub.subscribe(b"")
            sub.unsubscribe(b"topic")  # counted: not the last one, nothing on the wire
            sub.unsubscribe(b"topic")
            if minor == 1:  # observed from libzmq 4.3.5 (libzmq-notes.md#subscriptions)
                expected = [
                    bytes.fromhex("040f09") + b"SUBSCRIBEtopic",
                    bytes.fromhex("040f09") + b"SUBSCRIBEtopic",
                    bytes.fromhex("040a09") + b"SUBSCRIBE",
                    bytes.fromhex("040c06") + b"CANCELtopic",
                ]
            else:
                expected = [
                    bytes.fromhex("000601") + b"topic",
                    bytes.fromhex("000601") + b"topic",
                    bytes.fromhex("000101"),
                    bytes.fromhex("000600") + b"topic",
                ]
            assert [await peer.read_raw_frame() for _ in expected] == expected
            await peer.aclose()


async def test_sub_filters_what_a_publisher_sends_anyway() -> None:
    async with raw_server() as server, zmtp.Socket(zmtp.SUB, linger=0) as sub:
        sub.subscribe(b"A")
        await sub.connect(server.endpoint)
        peer = await server.accept()
        await peer.handshake("PUB")
        assert await peer.read_command() == (b"SUBSCRIBE", b"A")
        await peer.send(message(b"BLOL") + message(b"B", b"A-in-second-frame") + message(b"ALOL"))
        assert await recv_within(sub) == [b"ALOL"]
        assert await nothing_pending(sub)


async def test_sub_resends_subscriptions_on_every_reconnect() -> None:
    async with raw_server() as server, zmtp.Socket(zmtp.SUB, linger=0, reconnect_ivl=0.01) as sub:
        for topic in (b"x", b"y", b"x"):
            sub.subscribe(topic)
        await sub.connect(server.endpoint)
        for _ in range(2):
            peer = await server.accept()
            await peer.handshake("PUB")
            got = sorted([await peer.read_command() for _ in range(2)])
            assert got == [(b"SUBSCRIBE", b"x"), (b"SUBSCRIBE", b"y")]  # once per topic
            await peer.expect_silence()
            await peer.aclose()


async def test_xsub_forwards_raw_subscriptions_as_data_frames() -> None:
    async with raw_server() as server, zmtp.Socket(zmtp.XSUB, linger=0) as xsub:
        async with xsub.monitor() as mon:
            await xsub.connect(server.endpoint)
            peer = await server.accept()
            await peer.handshake("XPUB")
            await wait_event(mon, zmtp.HandshakeSucceeded)  # else it goes out from the trie
        await xsub.send(b"\x01abc")  # as libzmq: a data frame even to a 3.1 peer
        assert await peer.read_raw_frame() == bytes.fromhex("00040161") + b"bc"
        xsub.subscribe(b"def")  # the API form is a command
        assert await peer.read_raw_frame() == bytes.fromhex("040d09") + b"SUBSCRIBEdef"
        await xsub.send(b"\x00abc")
        assert await peer.read_raw_frame() == bytes.fromhex("00040061") + b"bc"
        await peer.send(message(b"anything"))  # XSUB does not filter
        assert await recv_within(xsub) == [b"anything"]


async def test_xpub_welcome_is_the_first_data_frame() -> None:
    async with zmtp.Socket(zmtp.XPUB, linger=0, xpub_welcome_msg=b"WELCOME!") as xpub:
        endpoint = await xpub.bind("tcp://127.0.0.1:*")
        async with raw_client(endpoint) as peer:
            await peer.handshake("SUB")
            assert await peer.read_raw_frame() == frame(b"WELCOME!")  # 00 08 WELCOME!
            await peer.send(command(b"SUBSCRIBE", b"A"))
            assert await recv_within(xpub) == [b"\x01A"]


@pytest.mark.parametrize("invert", [False, True])
async def test_sub_filter_follows_subscription_changes_while_messages_flow(invert: bool) -> None:
    """SUB's tuple-of-prefixes filter (up to PREFIXES_MAX topics) and the trie walk beyond it
    give the same answers, batch after batch, as topics come and go across that limit."""
    candidates = [[b"A1"], [b"B1", b"x"], [b"C", b"A-in-second-frame"], [b"H9"], [b"Q"], [b"J"]]
    phases = [
        ("sub", b"B"),
        ("sub", b"C"),
        *[("sub", bytes([c])) for c in b"DEFGHIJK"],  # past the limit: the trie walk
        ("unsub", b"H"),
        ("unsub", b"J"),
        *[("unsub", bytes([c])) for c in b"DEFGIK"],  # back under it
        ("unsub", b"A"),
    ]
    subscribed = {b"A"}
    async with (
        raw_server() as server,
        zmtp.Socket(zmtp.SUB, linger=0, invert_matching=invert) as sub,
    ):
        sub.subscribe(b"A")
        if not invert:
            sub.subscribe(b"~")  # the end marker passes
            subscribed.add(b"~")
        await sub.connect(server.endpoint)
        peer = await server.accept()
        await peer.handshake("PUB")
        for op, topic in phases:
            if op == "sub":
                sub.subscribe(topic)
                subscribed.add(topic)
            else:
                sub.unsubscribe(topic)
                subscribed.discard(topic)
            await peer.send(b"".join(message(*m) for m in candidates) + message(b"~end"))
            expected = [
                m for m in candidates if any(m[0].startswith(t) for t in subscribed) is not invert
            ]
            got = [await recv_within(sub) for _ in range(len(expected) + 1)]
            assert got == [*expected, [b"~end"]], (op, topic)
