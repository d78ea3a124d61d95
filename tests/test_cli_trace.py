"""``zmtp trace`` end to end: a subprocess relaying between pyzmq peers prints each direction
decoded (greeting, READY properties, frames, PING/PONG with TTL, SUBSCRIBE, CURVE's boxes as
sizes only), writes a capture that ``--read`` decodes to the same lines, and stops on SIGINT;
on both backends."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest

from tests import _cli
from tests._cli import ROOT, Tool, run_zmtp, zmtp_command

pytestmark = pytest.mark.interop
zmq = pytest.importorskip("zmq")
#: The pyzmq context fixture of tests/_cli.py, under the name these tests take it by.
context = _cli.context

BACKENDS = ["asyncio", "trio"]
LINE = re.compile(r"^\d\d:\d\d:\d\d\.\d{6} #(?P<conn>\d+) (?P<dir>C>S|S>C|--) (?P<text>.*)$")


def start_trace(upstream: str, *extra: str) -> tuple[Tool, str]:
    tool = Tool(["trace", "--listen", "tcp://127.0.0.1:*", "--to", upstream, *extra])
    line = tool.wait_for(lambda text: "listening on" in text, stream="err")
    listen = line.split("listening on ", 1)[1].split(",", 1)[0]
    return tool, listen


def texts(lines: list[str]) -> list[tuple[str, str]]:
    found = [m for line in lines if (m := LINE.match(line))]
    return [(m["dir"], m["text"]) for m in found]


@pytest.mark.parametrize("backend", BACKENDS)
def test_trace_decodes_both_directions(context: object, backend: str, tmp_path: Path) -> None:
    server = context.socket(zmq.REP)  # type: ignore[attr-defined]
    server.bind("tcp://127.0.0.1:*")
    capture = tmp_path / "capture.jsonl"
    tool, listen = start_trace(
        server.last_endpoint.decode(), "--backend", backend, "--capture", str(capture)
    )
    try:
        client = context.socket(zmq.REQ)  # type: ignore[attr-defined]
        client.heartbeat_ivl = 50  # ms: libzmq PINGs, with a TTL of 3 s
        client.heartbeat_ttl = 3000
        client.routing_id = b"me"
        client.connect(listen)
        client.send_multipart([b"hello", b"x" * 300])
        assert server.poll(30000) and server.recv_multipart() == [b"hello", b"x" * 300]
        server.send(b"world")
        assert client.poll(30000) and client.recv() == b"world"
        tool.wait_for(lambda text: "S>C command PONG" in text)
        client.close(linger=0)
        tool.wait_for(lambda text: text.endswith("-- client closed"))
        assert tool.interrupt() == 0
    finally:
        tool.kill()
        server.close(linger=0)
    assert tool.err[-1] == "zmtp trace: stopped"
    seen = texts(tool.out)
    assert seen[0][0] == "--" and seen[0][1].startswith("connection from 127.0.0.1:")
    expected = [
        ("C>S", "greeting ZMTP 3.1 mechanism NULL as-server 0"),
        ("S>C", "greeting ZMTP 3.1 mechanism NULL as-server 0"),
        ("S>C", 'command READY properties={Socket-Type: "REP"}'),
        ("C>S", 'command READY properties={Socket-Type: "REQ", Identity: "me"}'),
        ("C>S", 'frame MORE 0 B ""'),
        ("C>S", 'frame MORE 5 B "hello"'),
        ("C>S", 'frame LAST 300 B "' + "x" * 32 + '"...'),
        ("S>C", 'frame MORE 0 B ""'),
        ("S>C", 'frame LAST 5 B "world"'),
    ]
    for item in expected:
        assert item in seen, (item, seen)
    ordered = [s for s in seen if s in expected]
    assert [s for s in ordered if s[0] == "C>S"] == [e for e in expected if e[0] == "C>S"]
    assert ("C>S", 'command PING ttl=3.0, context=""') in seen
    assert ("S>C", 'command PONG context=""') in seen
    assert seen[-1] == ("--", "client closed")

    # The capture decodes to the same lines, time stamps included.
    proc = subprocess.run(
        zmtp_command("trace", "--read", str(capture)),
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ROOT,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == tool.out


def test_trace_json_subscriptions_and_curve(context: object) -> None:
    """JSON lines; SUBSCRIBE decoded; under CURVE the handshake commands, then MESSAGE boxes
    whose content never shows."""
    public, secret = zmq.curve_keypair()
    client_public, client_secret = zmq.curve_keypair()
    pub = context.socket(zmq.PUB)  # type: ignore[attr-defined]
    pub.curve_server, pub.curve_secretkey = True, secret
    pub.bind("tcp://127.0.0.1:*")
    tool, listen = start_trace(pub.last_endpoint.decode(), "--json")
    try:
        sub = context.socket(zmq.SUB)  # type: ignore[attr-defined]
        sub.curve_serverkey, sub.curve_publickey, sub.curve_secretkey = (
            public,
            client_public,
            client_secret,
        )
        sub.subscribe(b"news")
        sub.connect(listen)
        tool.wait_for(lambda text: '"name": "MESSAGE"' in text)  # the SUBSCRIBE, boxed
        while not sub.poll(50):  # until the subscription is applied
            pub.send_multipart([b"news", b"secret text"])
        assert sub.recv_multipart() == [b"news", b"secret text"]
        sub.close(linger=0)
        tool.wait_for(lambda text: "client closed" in text)
        assert tool.interrupt() == 0
    finally:
        tool.kill()
        pub.close(linger=0)
    records = [json.loads(line) for line in tool.out]
    commands = [r["name"] for r in records if r.get("kind") == "command"]
    assert commands[:4] == ["HELLO", "WELCOME", "INITIATE", "READY"]
    assert {r["mechanism"] for r in records if r.get("kind") == "greeting"} == {"CURVE"}
    ready = next(r for r in records if r.get("name") == "READY")
    assert ready["encrypted"] is True and "properties" not in ready
    boxes = [r for r in records if r.get("name") == "MESSAGE"]
    assert boxes and all(r["encrypted"] and r["size"] > 0 for r in boxes)
    assert "secret text" not in "\n".join(tool.out) and "news" not in "\n".join(tool.out)


def test_trace_plain_subscribe_and_unreachable_server(context: object) -> None:
    pub = context.socket(zmq.XPUB)  # type: ignore[attr-defined]
    pub.bind("tcp://127.0.0.1:*")
    tool, listen = start_trace(pub.last_endpoint.decode())
    try:
        sub = context.socket(zmq.SUB)  # type: ignore[attr-defined]
        sub.subscribe(b"weather")
        sub.connect(listen)
        assert pub.poll(30000) and pub.recv() == b"\x01weather"
        tool.wait_for(lambda text: 'C>S command SUBSCRIBE topic="weather"' in text)
        sub.unsubscribe(b"weather")
        assert pub.poll(30000) and pub.recv() == b"\x00weather"
        tool.wait_for(lambda text: 'C>S command CANCEL topic="weather"' in text)
        sub.close(linger=0)
        tool.wait_for(lambda text: "client closed" in text)
        assert tool.interrupt() == 0
    finally:
        tool.kill()
    # Nothing at --to: each connection is noted and closed; the relay keeps listening.
    endpoint = pub.last_endpoint.decode()
    pub.close(linger=0)
    tool, listen = start_trace(endpoint)
    try:
        client = context.socket(zmq.PUSH)  # type: ignore[attr-defined]
        client.connect(listen)
        tool.wait_for(lambda text: f"cannot reach {endpoint}" in text)
        client.close(linger=0)
        assert tool.interrupt() == 0
    finally:
        tool.kill()


def test_trace_usage_errors(tmp_path: Path) -> None:
    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return run_zmtp("trace", *args, timeout=60)

    proc = run("--listen", "tcp://127.0.0.1:*")
    assert proc.returncode == 2 and "needs --listen and --to" in proc.stderr
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"time": 1, "conn": 1, "dir": "C>S", "data": "!!"}\n')
    proc = run("--read", str(bad))
    assert proc.returncode == 2 and "capture line 1" in proc.stderr
    proc = run("--read", str(tmp_path / "missing.jsonl"))
    assert proc.returncode == 2 and "cannot read" in proc.stderr
    proc = run("--listen", "udp://127.0.0.1:5555", "--to", "tcp://127.0.0.1:5555")
    assert proc.returncode == 2 and "only tcp:// and ipc://" in proc.stderr
    proc = run("--help")
    assert proc.returncode == 0
    for option in ("--listen", "--to", "--capture", "--read", "--json", "--backend", "Ctrl-C"):
        assert option in proc.stdout, option
