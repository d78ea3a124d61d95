"""Rows for CURVE and PLAIN against libzmq, with zmtp as client and as server.

The mechanism is a property of the options, not of who binds: every row runs with zmtp binding
and with libzmq binding, so a CURVE server that connects and a client that binds are covered
too. Row names are the socket pair with the mechanism and zmtp's role in brackets.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

from ...crypto import z85_decode
from ...monitor import HandshakeFailed, PeerInfo
from ..checks import big_payload, expect_messages, expect_peer, probe_until_received, transfer
from ..common import PROBE, CaseFailed
from ..context import CaseContext
from ..registry import register


def _curve_keys(c: CaseContext) -> dict[str, bytes]:
    """Fresh server and client key pairs from libzmq (Z85 bytes)."""
    (sp, ss), (cp, cs) = c.zmq.curve_keypair(), c.zmq.curve_keypair()
    return {"sp": sp, "ss": ss, "cp": cp, "cs": cs}


def _curve(k: dict[str, bytes], zmtp_serves: bool) -> tuple[dict[str, Any], dict[str, Any]]:
    """(zmtp options, libzmq sockopts) for a CURVE pair; zmtp is the server or the client."""
    server_zmtp = {"curve_server": True, "curve_secretkey": k["ss"]}
    client_zmtp = {"curve_serverkey": k["sp"], "curve_secretkey": k["cs"]}
    server_lz = {"curve_server": 1, "curve_secretkey": k["ss"]}
    client_lz = {
        "curve_serverkey": k["sp"],
        "curve_publickey": k["cp"],
        "curve_secretkey": k["cs"],
    }
    return (server_zmtp, client_lz) if zmtp_serves else (client_zmtp, server_lz)


def _expect_curve_peer(
    peer: PeerInfo, socket_type: str, k: dict[str, bytes], zmtp_serves: bool
) -> None:
    """The handshake used CURVE, and we learned the other side's long-term key: the client's
    on a server, the server's on a client."""
    expect_peer(peer, socket_type, mechanism="CURVE")
    expected = z85_decode(k["cp"] if zmtp_serves else k["sp"])
    if peer.curve_public_key != expected:
        whose = "client" if zmtp_serves else "server"
        raise CaseFailed(f"PeerInfo.curve_public_key is not the {whose}'s public key")


async def _curve_one_way(c: CaseContext, ours_type: str, theirs_type: str, serves: bool) -> str:
    k = _curve_keys(c)
    ours_opts, theirs_opts = _curve(k, serves)
    async with c.zmtp_socket(ours_type, **ours_opts) as ours:
        theirs = c.libzmq_socket(theirs_type, **theirs_opts)
        peer = await c.link(ours, theirs)
        _expect_curve_peer(peer, theirs_type, k, serves)
        messages = [[b"hello"], [b"multi", b"part"], [b""], [big_payload()]]
        if ours_type == "PUSH":
            await transfer(c.end(ours), theirs, messages)
        else:
            await transfer(theirs, c.end(ours), messages)
        role = "server" if serves else "client"
        return f"zmtp is CURVE {role}; 4 msgs incl. 1 MiB encrypted; peer key checked"


@register("PUSH->PULL[CURVE-client]", flow="zmtp->libzmq", requires=("PUSH",))
async def curve_push_client(c: CaseContext) -> str:
    return await _curve_one_way(c, "PUSH", "PULL", serves=False)


@register("PULL<-PUSH[CURVE-server]", flow="libzmq->zmtp", requires=("PULL",))
async def curve_pull_server(c: CaseContext) -> str:
    return await _curve_one_way(c, "PULL", "PUSH", serves=True)


async def _curve_dealer_router(c: CaseContext, serves: bool) -> str:
    k = _curve_keys(c)
    ours_opts, theirs_opts = _curve(k, serves)
    async with c.zmtp_socket("DEALER", **ours_opts) as ours:
        theirs = c.libzmq_socket("ROUTER", **theirs_opts)
        peer = await c.link(ours, theirs)
        _expect_curve_peer(peer, "ROUTER", k, serves)
        c.step("DEALER -> ROUTER -> DEALER, encrypted")
        await ours.send_multipart([b"ping", b"2 parts"])
        [routed] = await theirs.recv_many(1)
        if routed[1:] != [b"ping", b"2 parts"]:
            raise CaseFailed(f"libzmq ROUTER received {routed!r}")
        await theirs.send_multipart([routed[0], b"pong", big_payload()])
        await expect_messages(c.end(ours), [[b"pong", big_payload()]])
        return "round trip through an encrypted ROUTER (1 MiB reply); peer key checked"


@register("DEALER->ROUTER[CURVE-client]", flow="both", requires=("DEALER",))
async def curve_dealer_client(c: CaseContext) -> str:
    return await _curve_dealer_router(c, serves=False)


@register("DEALER->ROUTER[CURVE-server]", flow="both", requires=("DEALER",))
async def curve_dealer_server(c: CaseContext) -> str:
    return await _curve_dealer_router(c, serves=True)


@register("SUB<-PUB[CURVE-client]", flow="libzmq->zmtp", requires=("SUB",))
async def curve_sub_client(c: CaseContext) -> str:
    k = _curve_keys(c)
    ours_opts, theirs_opts = _curve(k, zmtp_serves=False)
    async with c.zmtp_socket("SUB", **ours_opts) as ours:
        ours.subscribe(b"news")
        theirs = c.libzmq_socket("PUB", **theirs_opts)
        peer = await c.link(ours, theirs)
        _expect_curve_peer(peer, "PUB", k, zmtp_serves=False)
        c.step("probes until the encrypted SUBSCRIBEs reach libzmq")
        ours.subscribe(PROBE)  # after news, on the same connection
        probes = await probe_until_received(theirs, c.end(ours))
        await theirs.send_many([[b"other", b"dropped"], [b"news", b"flash"]])
        await expect_messages(c.end(ours), [[b"news", b"flash"]], skip=PROBE)
        return f"encrypted SUBSCRIBE honoured by libzmq PUB ({probes} probe(s))"


@register("PUSH->PULL[CURVE-bad-key]", flow="zmtp->libzmq", requires=("PUSH",))
async def curve_wrong_key(c: CaseContext) -> str:
    k = _curve_keys(c)
    other, _ = c.zmq.curve_keypair()
    theirs = c.libzmq_socket("PULL", curve_server=1, curve_secretkey=k["ss"])
    their_monitor = theirs.monitor()  # before bind/connect, or its events are missed
    async with c.zmtp_socket(
        "PUSH", curve_serverkey=other, curve_secretkey=k["cs"], reconnect_ivl=None
    ) as ours:
        monitor = ours.monitor()
        if c.binds == "libzmq":
            await ours.connect(theirs.bind(c.endpoint()))
        else:  # a CURVE client may bind too: libzmq's server then connects to us
            theirs.connect(await ours.bind(c.endpoint()))
        c.step("waiting for both sides to refuse the handshake")
        event = await monitor.wait_for(HandshakeFailed)
        assert isinstance(event, HandshakeFailed)
        failed = await their_monitor.wait_for(
            "HANDSHAKE_FAILED_PROTOCOL", fail_on=("HANDSHAKE_SUCCEEDED",)
        )
        return f"refused: zmtp {event.kind}, libzmq {failed.name}"


@contextlib.contextmanager
def _libzmq_plain_zap(c: CaseContext, passwords: dict[str, str]) -> Iterator[None]:
    """pyzmq's ZAP handler for this case's libzmq context (a thread; stopped on exit)."""
    from zmq.auth.thread import ThreadAuthenticator

    auth = ThreadAuthenticator(c.libzmq.context)
    auth.start()
    try:
        auth.configure_plain(domain="*", passwords=passwords)
        yield
    finally:
        auth.stop()


@register("PUSH->PULL[PLAIN-client]", flow="zmtp->libzmq", requires=("PUSH",))
async def plain_client(c: CaseContext) -> str:
    with _libzmq_plain_zap(c, {"admin": "secret"}):
        c.step("right password, libzmq ZAP handler")
        async with c.zmtp_socket("PUSH", plain_username="admin", plain_password="secret") as ours:
            theirs = c.libzmq_socket("PULL", plain_server=1)
            peer = await c.link(ours, theirs)
            expect_peer(peer, "PULL", mechanism="PLAIN")
            await transfer(c.end(ours), theirs, [[b"hello"], [b"multi", b"part"]])
        c.step("wrong password")
        async with c.zmtp_socket(
            "PUSH", plain_username="admin", plain_password="guess", reconnect_ivl=None
        ) as ours:
            theirs = c.libzmq_socket("PULL", plain_server=1)
            monitor = ours.monitor()
            if c.binds == "libzmq":
                await ours.connect(theirs.bind(c.endpoint()))
            else:
                theirs.connect(await ours.bind(c.endpoint()))
            event = await monitor.wait_for(HandshakeFailed)
            assert isinstance(event, HandshakeFailed)
            if event.kind != "peer-error":
                raise CaseFailed(f"wrong password: expected libzmq's ERROR, got {event}")
            return f"right password accepted; wrong one: {event.reason}"


@register("PULL<-PUSH[PLAIN-server]", flow="libzmq->zmtp", requires=("PULL",))
async def plain_server(c: CaseContext) -> str:
    from ...auth import Authenticator

    auth = Authenticator()
    auth.configure_plain({"admin": "secret"})
    async with c.zmtp_socket("PULL", plain_server=True) as ours:
        ours.authenticator = auth
        theirs = c.libzmq_socket("PUSH", plain_username=b"admin", plain_password=b"secret")
        peer = await c.link(ours, theirs)
        expect_peer(peer, "PUSH", mechanism="PLAIN")
        if peer.user_id != "admin":
            raise CaseFailed(f"user id {peer.user_id!r}, expected 'admin'")
        await transfer(theirs, c.end(ours), [[b"hello"], [b"multi", b"part"]])
        return "libzmq PLAIN client authenticated as 'admin' by our Authenticator"
