"""Certificate files in pyzmq's format: pyzmq's files load here, ours load in pyzmq, and
``Authenticator.configure_curve(location=...)`` admits exactly the clients of a directory
(live, pyzmq CURVE clients against a zmtp CURVE server)."""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Any

import anyio
import pytest
import zmq
import zmq.auth

import zmtp
from zmtp.auth import (
    CertificateError,
    create_certificates,
    load_certificate,
    load_certificates,
)


def test_pyzmq_files_load_here(tmp_path: Path) -> None:
    public_file, secret_file = zmq.auth.create_certificates(tmp_path, "client")
    assert load_certificate(public_file) == zmq.auth.load_certificate(public_file)
    assert load_certificate(secret_file) == zmq.auth.load_certificate(secret_file)
    assert load_certificate(public_file)[1] is None
    zmq.auth.create_certificates(tmp_path, "other")
    assert load_certificates(tmp_path) == zmq.auth.load_certificates(tmp_path)
    assert len(load_certificates(tmp_path)) == 2


def test_our_files_load_in_pyzmq(tmp_path: Path) -> None:
    public_file, secret_file = create_certificates(tmp_path, "server", {"name": "test"})
    assert public_file.endswith("server.key") and secret_file.endswith("server.key_secret")
    public, secret = zmq.auth.load_certificate(secret_file)
    assert (public, secret) == load_certificate(secret_file)
    assert secret is not None
    assert zmtp.curve_public(secret.decode()) == public.decode()  # a real key pair
    assert zmq.auth.load_certificate(public_file) == (public, None)
    assert zmq.auth.load_certificates(tmp_path) == {public: True}
    assert stat.S_IMODE(os.stat(secret_file).st_mode) == 0o600


def test_bad_files(tmp_path: Path) -> None:
    with pytest.raises(CertificateError, match="cannot read") as info:
        load_certificate(tmp_path / "missing.key")
    assert isinstance(info.value, OSError) and isinstance(info.value, zmtp.ZMTPError)
    (tmp_path / "junk.key").write_text("hello\n")
    with pytest.raises(CertificateError, match="no public key"):
        load_certificate(tmp_path / "junk.key")
    with pytest.raises(CertificateError, match="does not exist"):
        load_certificates(tmp_path / "nowhere")


def _pyzmq_client(ctx: zmq.Context[zmq.Socket[bytes]], cert: str, server_public: bytes) -> Any:
    public, secret = zmq.auth.load_certificate(cert)
    sock = ctx.socket(zmq.PUSH)
    sock.setsockopt(zmq.LINGER, 0)
    sock.curve_publickey = public
    sock.curve_secretkey = secret
    sock.curve_serverkey = server_public
    return sock


@pytest.mark.anyio
async def test_configure_curve_location_admits_the_directory(tmp_path: Path) -> None:
    clients, strangers, server_dir = tmp_path / "clients", tmp_path / "strangers", tmp_path / "s"
    for d in (clients, strangers, server_dir):
        d.mkdir()
    _, known_secret = zmq.auth.create_certificates(clients, "known")  # written by pyzmq
    _, stranger_secret = zmq.auth.create_certificates(strangers, "stranger")
    _, server_secret_file = create_certificates(server_dir, "server")  # written by us
    server_public, server_secret = load_certificate(server_secret_file)
    assert server_secret is not None

    auth = zmtp.Authenticator()
    auth.configure_curve(location=clients)
    ctx: zmq.Context[zmq.Socket[bytes]] = zmq.Context()
    try:
        with anyio.fail_after(20):
            async with zmtp.Socket(
                zmtp.PULL, curve_server=True, curve_secretkey=server_secret
            ) as server:
                server.authenticator = auth
                monitor = server.monitor()
                endpoint = await server.bind("tcp://127.0.0.1:*")
                stranger = _pyzmq_client(ctx, stranger_secret, server_public)
                stranger.connect(endpoint)
                stranger.send(b"from a stranger", zmq.NOBLOCK)
                await monitor.wait_for(zmtp.HandshakeFailed)  # refused: not in the directory
                known = _pyzmq_client(ctx, known_secret, server_public)
                known.connect(endpoint)
                known.send(b"from a known client")
                assert await server.recv() == b"from a known client"
                assert not server.readable()
    finally:
        ctx.destroy(linger=0)
