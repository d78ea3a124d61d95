"""``zmtp cat TYPE`` end to end: subprocesses talking to pyzmq peers, pipes included, on both
backends: PUSH from a pipe, PULL, REQ, REP and ROUTER echo, SUB with a timeout, the four formats,
CURVE (keys as text and from certificate files) and PLAIN, errors and Ctrl-C."""

from __future__ import annotations

import contextlib
import json
from pathlib import Path

import pytest

from tests import _cli
from tests._cli import Tool, cat, piped_into_zmtp

pytestmark = pytest.mark.interop
zmq = pytest.importorskip("zmq")
#: The pyzmq context fixture of tests/_cli.py, under the name these tests take it by.
context = _cli.context

BACKENDS = ["asyncio", "trio"]
WAIT = 30000  # ms: generous, the machine is shared


def socket(context: object, kind: int, **options: object) -> object:
    sock = context.socket(kind)  # type: ignore[attr-defined]
    sock.linger = 0
    for name, value in options.items():
        setattr(sock, name, value)
    return sock


def bind(sock: object) -> str:
    sock.bind("tcp://127.0.0.1:*")  # type: ignore[attr-defined]
    return str(sock.last_endpoint.decode())  # type: ignore[attr-defined]


def recv(sock: object) -> list[bytes]:
    assert sock.poll(WAIT), "nothing arrived"  # type: ignore[attr-defined]
    message: list[bytes] = sock.recv_multipart()  # type: ignore[attr-defined]
    return message


def bound_endpoint(tool: Tool) -> str:
    return tool.wait_for(lambda text: text.startswith("zmtp cat: bound "), stream="err").split()[-1]


@pytest.mark.parametrize("backend", BACKENDS)
def test_seq_piped_into_push_reaches_a_pyzmq_pull(context: object, backend: str) -> None:
    pull = socket(context, zmq.PULL)
    endpoint = bind(pull)
    proc = piped_into_zmtp("seq 5", "cat", "PUSH", "-c", endpoint, "--backend", backend, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert [recv(pull) for _ in range(5)] == [[str(n).encode()] for n in range(1, 6)]


@pytest.mark.parametrize("backend", BACKENDS)
def test_pull_prints_count_messages_then_exits(context: object, backend: str) -> None:
    tool = Tool(["cat", "pull", "-b", "tcp://127.0.0.1:*", "-n", "3", "--backend", backend])
    try:
        push = socket(context, zmq.PUSH)
        push.connect(bound_endpoint(tool))  # type: ignore[attr-defined]
        for message in ([b"one"], [b"two", b"parts"], [b"three"]):
            push.send_multipart(message)  # type: ignore[attr-defined]
        assert tool.finish() == 0, tool.err
    finally:
        tool.kill()
    assert tool.out == ["one", "two\tparts", "three"]


@pytest.mark.parametrize("backend", BACKENDS)
def test_rep_echo_and_ctrl_c(context: object, backend: str) -> None:
    tool = Tool(["cat", "REP", "-b", "tcp://127.0.0.1:*", "--echo", "--backend", backend])
    try:
        req = socket(context, zmq.REQ)
        req.connect(bound_endpoint(tool))  # type: ignore[attr-defined]
        for n in range(3):
            req.send_multipart([b"ping", str(n).encode()])  # type: ignore[attr-defined]
            assert recv(req) == [b"ping", str(n).encode()]
        tool.wait_for(lambda text: text == "ping\t2")
        assert tool.interrupt() == 0  # Ctrl-C ends a server cleanly
    finally:
        tool.kill()
    assert tool.out == ["ping\t0", "ping\t1", "ping\t2"]
    assert not [line for line in tool.err if "Traceback" in line]


@pytest.mark.parametrize("backend", BACKENDS)
def test_req_json_round_trips(context: object, backend: str) -> None:
    rep = socket(context, zmq.REP)
    endpoint = bind(rep)
    binary = {"base64": "AAH/"}
    lines = json.dumps(["hello", binary]) + "\n" + json.dumps(["", "x"]) + "\n"
    tool = Tool(["cat", "REQ", "-c", endpoint, "-f", "json", "--backend", backend], stdin=-1)
    try:
        assert tool.proc.stdin is not None
        tool.proc.stdin.write(lines)
        tool.proc.stdin.close()
        for _ in range(2):
            request = recv(rep)
            rep.send_multipart([b"re:", *request])  # type: ignore[attr-defined]
        assert tool.finish() == 0, tool.err
    finally:
        tool.kill()
    assert [json.loads(line) for line in tool.out] == [["re:", "hello", binary], ["re:", "", "x"]]


def test_router_echo_quoted_and_dealer_data(context: object) -> None:
    tool = Tool(["cat", "ROUTER", "-b", "tcp://127.0.0.1:*", "--echo", "-f", "quoted", "-n", "2"])
    try:
        dealer = socket(context, zmq.DEALER, routing_id=b"d1")
        dealer.connect(bound_endpoint(tool))  # type: ignore[attr-defined]
        dealer.send_multipart([b"a b", b"\x00\n"])  # type: ignore[attr-defined]
        assert recv(dealer) == [b"a b", b"\x00\n"]  # routed back to the sender
        dealer.send_multipart([b""])  # type: ignore[attr-defined]
        assert recv(dealer) == [b""]
        assert tool.finish() == 0, tool.err
    finally:
        tool.kill()
    assert tool.out == ['"d1" "a b" "\\x00\\n"', '"d1" ""']

    # DEALER with --data (quoted) to a pyzmq ROUTER, printing the reply.
    router = socket(context, zmq.ROUTER)
    endpoint = bind(router)
    tool = Tool(["cat", "DEALER", "-c", endpoint, "-f", "quoted", "-d", '"x" "y"', "-n", "1"])
    try:
        identity, *body = recv(router)
        assert body == [b"x", b"y"]
        router.send_multipart([identity, b"reply"])  # type: ignore[attr-defined]
        assert tool.finish() == 0, tool.err
    finally:
        tool.kill()
    assert tool.out == ['"reply"']


@pytest.mark.parametrize("backend", BACKENDS)
def test_sub_filters_and_times_out(context: object, backend: str) -> None:
    pub = socket(context, zmq.PUB)
    endpoint = bind(pub)
    tool = Tool(["cat", "SUB", "-c", endpoint, "-s", "news", "-t", "3", "--backend", backend])
    try:
        # Publish until the subscription has reached the publisher (a line comes out).
        n = 0
        while not tool.out:
            pub.send_multipart([b"weather", b"skip"])  # type: ignore[attr-defined]
            pub.send_multipart([b"news", str(n).encode()])  # type: ignore[attr-defined]
            n += 1
            with contextlib.suppress(TimeoutError):
                tool.wait_for(lambda text: True, timeout=0.05)
        status = tool.finish()  # nothing more: --timeout ends it with 2
    finally:
        tool.kill()
    assert status == 2, tool.err
    assert tool.out and all(line.startswith("news\t") for line in tool.out)
    assert "timed out after 3s" in tool.err[-1]


def test_raw_format_and_text_out(context: object) -> None:
    pull = socket(context, zmq.PULL)
    endpoint = bind(pull)
    proc = cat("PUSH", "-c", endpoint, "--in-format", "raw", stdin="all\nof it\n")
    assert proc.returncode == 0, proc.stderr
    assert recv(pull) == [b"all\nof it\n"]
    tool = Tool(["cat", "PULL", "-b", "tcp://127.0.0.1:*", "--out-format", "raw", "-n", "1"])
    try:
        push = socket(context, zmq.PUSH)
        push.connect(bound_endpoint(tool))  # type: ignore[attr-defined]
        push.send_multipart([b"ab", b"cd"])  # type: ignore[attr-defined]
        assert tool.finish() == 0, tool.err
    finally:
        tool.kill()
    assert tool.out == ["abcd"]


def test_curve_both_roles_and_certificate_files(context: object, tmp_path: Path) -> None:
    import zmq.auth

    server_public, server_secret = (k.decode() for k in zmq.curve_keypair())
    # zmtp cat as CURVE server (keys as text), a pyzmq client.
    tool = Tool(
        [
            "cat",
            "PULL",
            "-b",
            "tcp://127.0.0.1:*",
            "-n",
            "1",
            "--curve-server",
            "--curve-secretkey",
            server_secret,
        ]
    )
    try:
        client_public, client_secret = zmq.curve_keypair()
        push = socket(
            context,
            zmq.PUSH,
            curve_serverkey=server_public.encode(),
            curve_publickey=client_public,
            curve_secretkey=client_secret,
        )
        push.connect(bound_endpoint(tool))  # type: ignore[attr-defined]
        push.send(b"boxed")  # type: ignore[attr-defined]
        assert tool.finish() == 0, tool.err
    finally:
        tool.kill()
    assert tool.out == ["boxed"]

    # zmtp cat as CURVE client with keys from certificate files, a pyzmq server.
    public_file, secret_file = zmq.auth.create_certificates(str(tmp_path), "server")
    client_public_file, client_secret_file = zmq.auth.create_certificates(str(tmp_path), "client")
    _, secret = zmq.auth.load_certificate(secret_file)
    pull = socket(context, zmq.PULL, curve_server=True, curve_secretkey=secret)
    endpoint = bind(pull)
    proc = cat(
        "PUSH",
        "-c",
        endpoint,
        "--curve-server-cert",
        public_file,
        "--curve-cert",
        client_secret_file,
        "-d",
        "via certificates",
    )
    assert proc.returncode == 0, proc.stderr
    assert recv(pull) == [b"via certificates"]
    proc = cat("PUSH", "-c", endpoint, "--curve-cert", client_public_file, "-d", "x")
    assert proc.returncode == 1 and "no secret-key" in proc.stderr


def test_plain_server(context: object) -> None:
    tool = Tool(
        [
            "cat",
            "REP",
            "-b",
            "tcp://127.0.0.1:*",
            "--echo",
            "-n",
            "1",
            "--plain-server",
            "--plain-user",
            "admin:secret",
        ]
    )
    try:
        req = socket(context, zmq.REQ, plain_username=b"admin", plain_password=b"secret")
        req.connect(bound_endpoint(tool))  # type: ignore[attr-defined]
        req.send(b"let me in")  # type: ignore[attr-defined]
        assert recv(req) == [b"let me in"]
        assert tool.finish() == 0, tool.err
    finally:
        tool.kill()


@pytest.mark.parametrize("backend", BACKENDS)
def test_messages_no_peer_took_within_linger_exit_1(backend: str) -> None:
    """Regression: ``zmtp cat PUSH -c`` to an endpoint nobody listens on exited 0 after the
    linger, its message dropped, as if it had been sent."""
    proc = cat("PUSH", "-c", "tcp://127.0.0.1:1", "-d", "x", "--linger", "0.2",
               "--backend", backend)  # fmt: skip
    assert proc.returncode == 1, proc.stderr
    assert "1 message(s) not sent: no peer took them within --linger (0.2 s)" in proc.stderr


def test_errors_and_help() -> None:
    proc = cat("PUSH")
    assert proc.returncode == 1 and "at least one --bind or --connect" in proc.stderr
    proc = cat("NOPE", "-b", "tcp://127.0.0.1:*")
    assert proc.returncode == 2 and "unknown socket type" in proc.stderr
    proc = cat("PUSH", "-c", "tcp://127.0.0.1:1", "-f", "json", stdin="not json\n")
    assert proc.returncode == 1 and "stdin line 1: not JSON" in proc.stderr
    proc = cat("PUSH", "-c", "nowhere://x", "-d", "x")
    assert proc.returncode == 1 and "zmtp cat:" in proc.stderr
    proc = cat("PUSH", "-c", "tcp://127.0.0.1:1", "--curve-serverkey", "short", "-d", "x")
    assert proc.returncode == 1 and "CURVE key" in proc.stderr
    assert "Traceback" not in proc.stderr
    # A PUSH with no peer cannot send: --timeout says so with status 2.
    proc = cat("PUSH", "-b", "tcp://127.0.0.1:*", "-d", "x", "-t", "0.5", "--linger", "0")
    assert proc.returncode == 2 and "timed out" in proc.stderr
    proc = cat("--help")
    assert proc.returncode == 0
    for option in (
        "--bind", "--connect", "--data", "--format", "--count", "--interval", "--delay",
        "--timeout", "--echo", "--subscribe", "--identity", "--send-hwm", "--max-message-size",
        "--heartbeat-ivl", "--reconnect-ivl", "--curve-server", "--curve-cert", "--plain-user",
        "--backend", "Exit status",
    ):  # fmt: skip
        assert option in proc.stdout, option
