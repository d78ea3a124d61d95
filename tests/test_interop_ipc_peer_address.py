"""The address an ipc peer has in authentication requests, as libzmq 4.3.5 gives it.

libzmq names an ipc peer ``localhost:uid:gid:pid`` (``SO_PEERCRED`` on Linux) in the ZAP
request's Address frame and in the ``Peer-Address`` property, on whichever side authenticates.
A ZAP handler written for libzmq (authorise local peers by user id) must see the same from us.
The client processes here are this test process, so both libzmq's answer and ours must be this
process's credentials.
"""

from __future__ import annotations

import os
import socket
import threading

import anyio
import pytest

import zmtp
from zmtp.auth import Authenticator, AuthRequest, AuthResult
from zmtp.testing import TIMEOUT, ipc_path, wait_event
from zmtp.testing.pyzmq_sockets import zmq_module

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.skipif(
        not hasattr(socket, "SO_PEERCRED"),
        reason="ipc peer credentials need SO_PEERCRED (Linux); elsewhere the address is the path",
    ),
]

THIS_PROCESS = f"localhost:{os.getuid()}:{os.getgid()}:{os.getpid()}"


def libzmq_zap_address_for_ipc() -> str:
    """What libzmq's own PLAIN server puts in the ZAP Address frame for an ipc client."""
    zmq = zmq_module()
    ctx = zmq.Context()
    zap = ctx.socket(zmq.REP)
    zap.linger = 0
    zap.rcvtimeo = int(TIMEOUT * 1000)
    zap.bind("inproc://zeromq.zap.01")
    seen: list[bytes] = []

    def handler() -> None:
        frames = zap.recv_multipart()
        seen.append(frames[3])
        zap.send_multipart([frames[0], frames[1], b"200", b"OK", b"user", b""])

    thread = threading.Thread(target=handler)
    thread.start()
    server, client = ctx.socket(zmq.PULL), ctx.socket(zmq.PUSH)
    try:
        server.zap_domain = b"test"
        server.plain_server = True
        server.rcvtimeo = int(TIMEOUT * 1000)
        endpoint = f"ipc://{ipc_path()}"
        server.bind(endpoint)
        client.plain_username, client.plain_password = b"u", b"p"
        client.connect(endpoint)
        client.send(b"hello")
        assert server.recv() == b"hello"
    finally:
        thread.join(TIMEOUT)
        for s in (client, server, zap):
            s.close(linger=0)
        ctx.term()
    return seen[0].decode()


async def test_libzmq_names_an_ipc_peer_by_its_credentials() -> None:
    """The premise, checked live: libzmq's format is the one we copy."""
    assert await anyio.to_thread.run_sync(libzmq_zap_address_for_ipc) == THIS_PROCESS


@pytest.mark.parametrize("client", ["zmtp", "libzmq"])
async def test_our_authenticator_sees_the_same_ipc_address_as_libzmq(client: str) -> None:
    seen: list[str] = []

    async def record(request: AuthRequest) -> AuthResult:
        seen.append(request.address)
        return AuthResult.allow("u")

    endpoint = f"ipc://{ipc_path()}"
    async with (
        zmtp.Socket(zmtp.PULL, linger=0, plain_server=True) as server,
        server.monitor() as monitor,
    ):
        server.authenticator = Authenticator(callback=record)
        await server.bind(endpoint)
        if client == "zmtp":
            async with zmtp.Socket(
                zmtp.PUSH, linger=0, plain_username="u", plain_password="p"
            ) as ours:
                await ours.connect(endpoint)
                event = await wait_event(monitor, zmtp.HandshakeSucceeded)
        else:
            zmq = zmq_module()
            theirs = zmq.Context.instance().socket(zmq.PUSH)
            try:
                theirs.linger = 0
                theirs.plain_username, theirs.plain_password = b"u", b"p"
                theirs.connect(endpoint)
                event = await wait_event(monitor, zmtp.HandshakeSucceeded)
            finally:
                theirs.close(linger=0)
    assert seen == [THIS_PROCESS]
    assert event.peer.address == THIS_PROCESS  # and the accepted side's monitor events


async def test_the_connecting_side_authenticates_with_the_binders_credentials() -> None:
    """A PLAIN server that connects (to a bound client) also names its peer libzmq's way;
    its monitor events keep the path it connected to."""
    seen: list[str] = []

    async def record(request: AuthRequest) -> AuthResult:
        seen.append(request.address)
        return AuthResult.allow("u")

    endpoint = f"ipc://{ipc_path()}"
    async with (
        zmtp.Socket(zmtp.PUSH, linger=0, plain_username="u", plain_password="p") as bound,
        zmtp.Socket(zmtp.PULL, linger=0, plain_server=True) as server,
        server.monitor() as monitor,
    ):
        server.authenticator = Authenticator(callback=record)
        await bound.bind(endpoint)
        await server.connect(endpoint)
        event = await wait_event(monitor, zmtp.HandshakeSucceeded)
    assert seen == [THIS_PROCESS]
    assert event.peer.address == endpoint.removeprefix("ipc://")
