"""Handshake edge cases against libzmq: incompatible socket types are refused on both sides
with a clear reason, a non-ZMTP client fails fast without disturbing a libzmq peer on the
same socket, and each side sees the right peer properties."""

from __future__ import annotations

import contextlib
from pathlib import Path

import anyio
import pytest

import zmtp
from zmtp.interop import Libzmq, link
from zmtp.routing import STRATEGIES
from zmtp.testing import bind_endpoint, raw_exchange, tcp_port
from zmtp.testing.fixtures import OP_TIMEOUT, TEST_TIMEOUT, libzmq_env  # noqa: F401

pytestmark = [pytest.mark.anyio, pytest.mark.interop]

LIBZMQ_HANDSHAKE_FAILURES = (
    "HANDSHAKE_FAILED_NO_DETAIL",
    "HANDSHAKE_FAILED_PROTOCOL",
    "HANDSHAKE_FAILED_AUTH",
)


# ---------------------------------------------------------------------- socket-type mismatch


@pytest.mark.parametrize(
    ("ours_type", "theirs_type"), [("PUSH", "PUSH"), ("PAIR", "PULL"), ("PULL", "PAIR")]
)
@pytest.mark.parametrize("binds", ["zmtp", "libzmq"])
@pytest.mark.parametrize("transport", ["tcp", "ipc"])
async def test_socket_type_mismatch_refused(
    lz: Libzmq, tmp_path: Path, transport: str, binds: str, ours_type: str, theirs_type: str
) -> None:
    with anyio.fail_after(TEST_TIMEOUT):
        theirs = lz.socket(theirs_type)
        theirs_monitor = theirs.monitor()
        async with zmtp.Socket(ours_type, linger=0) as ours:
            monitor = ours.monitor()
            with pytest.raises(Exception, match="handshake failed") as failure:
                await link(ours, theirs, binds=binds, endpoint=bind_endpoint(transport, tmp_path))
            # Our side: a HandshakeFailed whose reason names both socket types.
            reason = str(failure.value)
            assert f"{ours_type} cannot talk to {theirs_type}" in reason, reason
            assert "incompatible socket types" in reason, reason
            event = await monitor.wait_for(zmtp.HandshakeFailed)
            assert isinstance(event, zmtp.HandshakeFailed) and event.kind == "protocol", event
            # libzmq's side: the connection closed, never reported as a completed handshake.
            await theirs_monitor.wait_for("DISCONNECTED", touch=False)
            assert "HANDSHAKE_SUCCEEDED" not in [e.name for e in theirs_monitor.seen]
            # And no message is delivered either way.
            if ours_type in ("PUSH", "PAIR") and binds == "libzmq":
                await ours.send(b"must not arrive")  # queued in the connect()ed pipe
            if theirs_type in ("PULL", "PAIR"):
                assert await theirs.recv_within(0.3) == []
            if theirs_type in ("PUSH", "PAIR") and binds == "zmtp":
                # libzmq dropped its session for good (a protocol error: it never reconnects),
                # so the message is either queued in a dead pipe or not accepted at all.
                with contextlib.suppress(TimeoutError):
                    await theirs.send_multipart([b"must not arrive"], timeout=0.2)
            if ours_type in ("PULL", "PAIR"):
                with anyio.move_on_after(0.3):
                    message = await ours.recv_multipart()
                    pytest.fail(f"received {message!r} from an incompatible peer")
            assert ours.peers == []


# ---------------------------------------------------------------------- non-ZMTP peers


async def test_http_client_fails_fast_libzmq_peer_unaffected(lz: Libzmq) -> None:
    with anyio.fail_after(TEST_TIMEOUT):
        theirs = lz.socket("PUSH")
        async with zmtp.Socket(zmtp.PULL, linger=0) as ours:
            await link(ours, theirs, binds="zmtp", endpoint="tcp://127.0.0.1:*")
            monitor = ours.monitor()
            await theirs.send_multipart([b"before"])
            assert await ours.recv_multipart() == [b"before"]

            started = anyio.current_time()
            reply = await raw_exchange(tcp_port(ours.last_endpoint), b"GET / HTTP/1.1\r\n\r\n")
            event = await monitor.wait_for((zmtp.HandshakeFailed, zmtp.Disconnected))
            elapsed = anyio.current_time() - started
            assert isinstance(event, zmtp.HandshakeFailed), event
            assert event.kind == "protocol", event
            assert "not speaking ZMTP" in event.reason and "GET" in event.reason, event.reason
            assert event.peer_address.startswith("127.0.0.1:")
            assert elapsed < 1.0, f"took {elapsed:.2f}s to refuse a non-ZMTP peer"
            # We closed the connection after at most our greeting (never a READY).
            assert len(reply) <= 64 and (not reply or reply[0] == 0xFF), reply

            # The libzmq peer on the same socket never noticed.
            await theirs.send_multipart([b"after"])
            assert await ours.recv_multipart() == [b"after"]
            assert [p.socket_type for p in ours.peers] == ["PUSH"]


async def test_garbage_after_a_valid_signature_fails_fast(lz: Libzmq) -> None:
    """A client that starts like ZMTP but then speaks ZMTP 2.0 is refused with a reason."""
    with anyio.fail_after(TEST_TIMEOUT):
        async with zmtp.Socket(zmtp.PULL, linger=0) as ours:
            monitor = ours.monitor()
            endpoint = await ours.bind("tcp://127.0.0.1:*")
            greeting_v2 = b"\xff" + b"\0" * 8 + b"\x7f" + b"\x01" + b"\x07\x00\x00"
            await raw_exchange(tcp_port(endpoint), greeting_v2)
            event = await monitor.wait_for(zmtp.HandshakeFailed)
            assert isinstance(event, zmtp.HandshakeFailed)
            assert "ZMTP 2.0" in event.reason, event.reason


# ---------------------------------------------------------------------- peer properties


def libzmq_props_between(lz: Libzmq, sender: str, receiver: str) -> dict[str, str]:
    """What a libzmq ``receiver`` learns from a libzmq ``sender`` (the reference)."""
    recv = lz.socket(receiver)
    send = lz.socket(sender, routing_id=b"ref")
    endpoint = recv.bind("tcp://127.0.0.1:*")
    send.connect(endpoint)
    send.raw.send(b"x")
    assert recv.raw.poll(OP_TIMEOUT * 1000)
    recv._recv_first()
    props = dict(recv.peer_properties)
    send.close()
    recv.close()
    return props


@pytest.mark.parametrize(("ours_type", "theirs_type"), [("PUSH", "PULL"), ("PAIR", "PAIR")])
@pytest.mark.parametrize("binds", ["zmtp", "libzmq"])
async def test_properties_libzmq_receives_from_us(
    lz: Libzmq, binds: str, ours_type: str, theirs_type: str
) -> None:
    reference = libzmq_props_between(lz, ours_type, theirs_type)
    with anyio.fail_after(TEST_TIMEOUT):
        theirs = lz.socket(theirs_type)
        # An identity is set, but like libzmq a PUSH/PAIR does not announce it.
        async with zmtp.Socket(ours_type, identity=b"ours", linger=0) as ours:
            await link(ours, theirs, binds=binds, endpoint="tcp://127.0.0.1:*")
            await ours.send(b"x")
            await theirs.recv_many(1)
            props = theirs.peer_properties
            assert props["Socket-Type"] == ours_type
            assert "Identity" not in props
            assert props["Peer-Address"] == "127.0.0.1"
            # Exactly what a libzmq socket of our type would have told it.
            assert props == reference


@pytest.mark.parametrize("binds", ["zmtp", "libzmq"])
@pytest.mark.parametrize("transport", ["tcp", "ipc"])
async def test_peer_info_of_libzmq(lz: Libzmq, tmp_path: Path, transport: str, binds: str) -> None:
    with anyio.fail_after(TEST_TIMEOUT):
        theirs = lz.socket("PUSH", routing_id=b"lz")
        async with zmtp.Socket(zmtp.PULL, linger=0) as ours:
            endpoint = bind_endpoint(transport, tmp_path)
            peer = await link(ours, theirs, binds=binds, endpoint=endpoint)
            assert peer.socket_type == "PUSH"
            assert peer.identity == b""  # libzmq PUSH sends no Identity, whatever its routing id
            assert dict(peer.properties) == {"Socket-Type": b"PUSH"}
            assert peer.properties["socket-type"] == b"PUSH"  # names are case-insensitive
            assert peer.zmtp_version == (3, 1)
            assert peer.mechanism == "NULL"
            assert peer.user_id == "" and peer.curve_public_key == b""
            resolved = ours.last_endpoint if binds == "zmtp" else peer.endpoint
            assert peer.endpoint == resolved
            if transport == "tcp":
                host, _, port = peer.address.rpartition(":")
                assert host == "127.0.0.1" and port.isdigit(), peer.address
                if binds == "libzmq":
                    assert peer.address == resolved.removeprefix("tcp://")
            elif binds == "libzmq":
                assert peer.address == resolved.removeprefix("ipc://")
            assert ours.peers == [peer]


@pytest.mark.skipif("DEALER" not in STRATEGIES, reason="zmtp has no DEALER socket yet")
@pytest.mark.parametrize("identity", [b"abc", b""])
async def test_dealer_identity_reaches_libzmq_router(lz: Libzmq, identity: bytes) -> None:
    """libzmq reads our Identity (sent even when empty, like libzmq) and routes by it."""
    with anyio.fail_after(TEST_TIMEOUT):
        theirs = lz.socket("ROUTER")
        async with zmtp.Socket("DEALER", identity=identity, linger=0) as ours:
            peer = await link(ours, theirs, binds="libzmq", endpoint="tcp://127.0.0.1:*")
            # libzmq's ROUTER announces an (empty) Identity too.
            assert dict(peer.properties) == {"Socket-Type": b"ROUTER", "Identity": b""}
            await ours.send(b"hi")
            [[routing_id, body]] = await theirs.recv_many(1)
            assert body == b"hi"
            props = theirs.peer_properties
            assert props["Socket-Type"] == "DEALER"
            assert props["Identity"] == identity.decode()
            if identity:
                assert routing_id == identity
            else:  # libzmq generated one: 0x00 + a 32-bit counter
                assert len(routing_id) == 5 and routing_id[0] == 0


@pytest.mark.skipif("ROUTER" not in STRATEGIES, reason="zmtp has no ROUTER socket yet")
async def test_peer_info_shows_libzmq_dealer_identity(lz: Libzmq) -> None:
    with anyio.fail_after(TEST_TIMEOUT):
        theirs = lz.socket("DEALER", routing_id=b"lz")
        async with zmtp.Socket("ROUTER", linger=0) as ours:
            peer = await link(ours, theirs, binds="zmtp", endpoint="tcp://127.0.0.1:*")
            assert peer.socket_type == "DEALER"
            assert peer.identity == b"lz"
            assert dict(peer.properties) == {"Socket-Type": b"DEALER", "Identity": b"lz"}
            await theirs.send_multipart([b"x"])
            assert await ours.recv_multipart() == [b"lz", b"x"]


# ---------------------------------------------------------------------- slow peers


async def test_client_that_never_greets_is_dropped_after_handshake_ivl(lz: Libzmq) -> None:
    """A connection that sends nothing is closed after handshake_ivl (libzmq's
    ZMQ_HANDSHAKE_IVL), while a libzmq peer on the same socket is unaffected."""
    with anyio.fail_after(TEST_TIMEOUT):
        theirs = lz.socket("PUSH")
        async with zmtp.Socket(zmtp.PULL, handshake_ivl=0.3, linger=0) as ours:
            await link(ours, theirs, binds="zmtp", endpoint="tcp://127.0.0.1:*")
            monitor = ours.monitor()
            port = tcp_port(ours.last_endpoint)
            async with await anyio.connect_tcp("127.0.0.1", port) as silent:
                started = anyio.current_time()
                event = await monitor.wait_for((zmtp.HandshakeFailed, zmtp.Disconnected))
                elapsed = anyio.current_time() - started
                assert isinstance(event, zmtp.HandshakeFailed), event
                assert event.kind == "timeout" and "timed out" in event.reason, event
                assert 0.25 <= elapsed < 1.5, elapsed
                # We sent our greeting and then closed.
                greeting = b""
                with contextlib.suppress(anyio.EndOfStream, anyio.BrokenResourceError):
                    while True:
                        greeting += await silent.receive()
                assert greeting[:1] == b"\xff" and len(greeting) == 64
            await theirs.send_multipart([b"unaffected"])
            assert await ours.recv_multipart() == [b"unaffected"]
