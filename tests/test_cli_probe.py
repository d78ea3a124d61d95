"""``zmtp probe ENDPOINT`` end to end: a subprocess probing pyzmq peers (NULL on tcp and ipc,
CURVE, PLAIN, refused by ZAP), a zmtp peer, a non-ZMTP service, a silent one and nothing at all,
on both backends."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests._cli import ROOT, run_zmtp

pytestmark = pytest.mark.interop
zmq = pytest.importorskip("zmq")

BACKENDS = ["asyncio", "trio"]


def probe(*args: str, backend: str = "asyncio") -> subprocess.CompletedProcess[str]:
    return run_zmtp("probe", *args, "--backend", backend, timeout=60)


KEEP: list[object] = []  # the bound sockets of the running test (a dropped socket closes)


@pytest.fixture
def context() -> Iterator[object]:
    ctx = zmq.Context()
    yield ctx
    KEEP.clear()
    ctx.destroy(linger=0)


def bound(
    context: object, kind: int, endpoint: str = "tcp://127.0.0.1:*", **options: object
) -> str:
    sock = context.socket(kind)  # type: ignore[attr-defined]
    for name, value in options.items():
        setattr(sock, name, value)
    sock.bind(endpoint)
    KEEP.append(sock)
    return str(sock.last_endpoint.decode())


@pytest.mark.parametrize("backend", BACKENDS)
def test_null_peer_reports_revision_type_and_properties(context: object, backend: str) -> None:
    endpoint = bound(context, zmq.DEALER, routing_id=b"svc-1")
    proc = probe(endpoint, "--json", backend=backend)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    report = json.loads(proc.stdout)
    assert report["endpoint"] == endpoint and report["connected"] is True
    assert (report["stage"], report["ok"], report["zmtp"]) == ("ready", True, "3.1")
    assert (report["mechanism"], report["as_server"]) == ("NULL", False)
    assert report["socket_type"] == "DEALER"
    assert report["properties"] == {"Socket-Type": "DEALER", "Identity": "svc-1"}
    assert report["stopped"] is None and report["verdict"].startswith("a ZMTP 3.1 DEALER peer")


def test_text_report_and_ipc(context: object, tmp_path: Path) -> None:
    endpoint = bound(context, zmq.PUB, f"ipc://{tmp_path}/probe.ipc")
    proc = probe(endpoint)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0] == f"endpoint:    {endpoint}"
    assert "greeting:    ZMTP 3.1, mechanism NULL, as-server 0" in lines
    assert "socket type: PUB" in lines and "property:    Socket-Type = PUB" in lines
    assert lines[-1].startswith("verdict:     a ZMTP 3.1 PUB peer, mechanism NULL (")


@pytest.mark.parametrize("backend", BACKENDS)
def test_curve_and_plain_servers_stop_at_the_greeting(context: object, backend: str) -> None:
    _, secret = zmq.curve_keypair()
    curve = bound(context, zmq.PULL, curve_server=True, curve_secretkey=secret)
    report = json.loads(probe(curve, "--json", backend=backend).stdout)
    assert (report["stage"], report["mechanism"], report["ok"]) == ("handshake", "CURVE", True)
    assert "CURVE needs credentials" in report["stopped"] and report["socket_type"] is None
    plain = bound(context, zmq.REP, plain_server=True)
    proc = probe(plain, backend=backend)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "greeting:    ZMTP 3.1, mechanism PLAIN, as-server 0" in proc.stdout
    assert "stopped:     PLAIN needs credentials" in proc.stdout


def test_zmtp_peer(tmp_path: Path) -> None:
    """A zmtp socket in another process: the probe reads our own READY."""
    script = tmp_path / "peer.py"
    script.write_text(
        "import anyio, sys, zmtp\n"
        "async def main():\n"
        "    async with zmtp.Socket(zmtp.REP) as rep:\n"
        "        print(await rep.bind('tcp://127.0.0.1:*'), flush=True)\n"
        "        await anyio.to_thread.run_sync(sys.stdin.read)\n"
        "anyio.run(main)\n"
    )
    peer = subprocess.Popen(
        [sys.executable, str(script)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        assert peer.stdout is not None
        endpoint = peer.stdout.readline().strip()
        report = json.loads(probe(endpoint, "--json").stdout)
    finally:
        peer.communicate("", timeout=30)
    assert (report["stage"], report["socket_type"]) == ("ready", "REP")
    assert report["properties"] == {"Socket-Type": "REP"}


def serve_once(reply: bytes | None) -> tuple[str, threading.Thread, socket.socket]:
    """A tcp listener; with ``reply``, it accepts one connection, sends that and closes;
    without, it never accepts (the kernel completes the connection: a silent service)."""
    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]

    def serve() -> None:
        if reply is None:
            return
        conn, _ = listener.accept()
        with conn:
            conn.sendall(reply)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    return f"tcp://127.0.0.1:{port}", thread, listener


@pytest.mark.parametrize("backend", BACKENDS)
def test_not_zmtp_silent_and_nothing_listening(backend: str) -> None:
    endpoint, thread, listener = serve_once(b"HTTP/1.1 400 Bad Request\r\n\r\n")
    with listener:
        proc = probe(endpoint, "--json", backend=backend)
        thread.join(10)
    report = json.loads(proc.stdout)
    assert proc.returncode == 1 and report["stage"] == "greeting" and not report["ok"]
    assert (
        report["stopped"].startswith("not a ZMTP 3.x service") and "HTTP/1.1" in report["stopped"]
    )

    endpoint, _, listener = serve_once(None)
    with listener:
        proc = probe(endpoint, "--timeout", "0.5", backend=backend)
    assert proc.returncode == 2, proc.stdout
    assert "stopped:     the peer sent no greeting within 0.5s" in proc.stdout

    free = socket.create_server(("127.0.0.1", 0))
    port = free.getsockname()[1]
    free.close()
    proc = probe(f"tcp://127.0.0.1:{port}", "--json", backend=backend)
    report = json.loads(proc.stdout)
    assert proc.returncode == 1 and report["connected"] is False and report["stage"] == "connect"
    assert report["stopped"].startswith("nothing listening")


def test_peer_error_and_bad_endpoint(context: object) -> None:
    """A NULL server whose ZAP handler refuses us answers ERROR (libzmq puts the ZAP status
    code in it, not the text): the probe quotes it."""
    zap = context.socket(zmq.REP)  # type: ignore[attr-defined]
    zap.bind("inproc://zeromq.zap.01")

    def deny() -> None:
        if zap.poll(20000):
            request = zap.recv_multipart()
            zap.send_multipart([request[0], request[1], b"400", b"go away", b"", b""])

    thread = threading.Thread(target=deny, daemon=True)
    thread.start()
    endpoint = bound(context, zmq.ROUTER, zap_domain=b"global")
    proc = probe(endpoint, "--json")
    thread.join(20)
    zap.close(linger=0)
    report = json.loads(proc.stdout)
    assert proc.returncode == 1 and report["stage"] == "handshake", proc.stdout
    assert report["stopped"] == "the peer sent ERROR: '400'"  # libzmq sends the ZAP status

    proc = probe("inproc://nothing")
    assert proc.returncode == 2 and "only tcp:// and ipc://" in proc.stderr


def test_help_texts_name_every_option() -> None:
    for command, options in {
        "probe": ("ENDPOINT", "--json", "--timeout", "--backend", "Exit status"),
        "interop": ("--list", "--json", "--markdown", "--progress", "-k", "Exit status"),
        "keygen": ("--json", "--public-of"),
    }.items():
        proc = subprocess.run(
            [sys.executable, "-m", "zmtp", command, "--help"],
            capture_output=True,
            text=True,
            timeout=60,
            cwd=ROOT,
            check=False,
        )
        assert proc.returncode == 0, proc.stderr
        for option in options:
            assert option in proc.stdout, (command, option)
    proc = subprocess.run(
        [sys.executable, "-m", "zmtp", "--help"],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ROOT,
        check=False,
    )
    for command in ("interop", "keygen", "cat", "probe", "trace"):
        assert command in proc.stdout, command
