"""A libzmq (pyzmq) peer of any socket type and mechanism, in a subprocess or a thread.

    with libzmq_peer("REP", echo=True) as peer:           # binds tcp://127.0.0.1:* by default
        await sock.connect(peer.endpoint)                  # talk to it from zmtp

    with libzmq_peer("PULL", curve_secretkey=secret, curve_server=True, process=True) as peer:
        ...
        assert peer.received == [[b"hello"]]               # what it got (after exit)

The peer binds (default) or connects (``connect=ENDPOINT``); ``echo=True`` sends each message
back as it came (REP, ROUTER, DEALER, PAIR...), otherwise it only receives; everything it
received is in :attr:`LibzmqPeer.received` once it stopped. Socket options are pyzmq's, in lower
case (``curve_server=True``, ``plain_username=b"u"``, ``routing_id=b"x"``). ``process=True``
runs it in a separate Python process (a real second process: SIGKILL it with :meth:`kill`),
else in a thread of this one. Both need pyzmq (``pip install 'zmtp[test]'``).
"""

from __future__ import annotations

import base64
import json
import subprocess
import sys
import threading
from types import TracebackType
from typing import Any

#: The worker, run as ``python -c`` in a subprocess or called in a thread.
_WORKER = r"""
import base64, json, sys, zmq

def serve(spec, out=None, stop=None):
    ctx = zmq.Context()
    sock = ctx.socket(getattr(zmq, spec["type"]))
    sock.linger = 0
    for name, value in spec["options"].items():
        if isinstance(value, dict):
            value = base64.b64decode(value["base64"])
        sock.setsockopt(getattr(zmq, name.upper()), value)
    if spec["type"] == "SUB" and "subscribe" not in spec["options"]:
        sock.setsockopt(zmq.SUBSCRIBE, b"")
    if spec["connect"]:
        sock.connect(spec["connect"])
        endpoint = spec["connect"]
    else:
        sock.bind(spec["bind"])
        endpoint = sock.last_endpoint.decode()
    received = []
    if out is not None:
        out(endpoint)
    else:
        print(json.dumps({"endpoint": endpoint}), flush=True)
    poller = zmq.Poller()
    poller.register(sock, zmq.POLLIN)
    if stop is None:
        poller.register(sys.stdin, zmq.POLLIN)  # stdin closed: stop
    while True:
        events = dict(poller.poll(50))
        if stop is not None and stop.is_set():
            break
        if stop is None and sys.stdin.fileno() in events:
            if not sys.stdin.readline():
                while sock.poll(0):  # what already arrived counts
                    received.append(sock.recv_multipart())
                break
        if sock in events:
            message = sock.recv_multipart()
            received.append(message)
            if spec["echo"]:
                sock.send_multipart(message)
    sock.close(0)
    ctx.term()
    return received

if __name__ == "__main__":
    received = serve(json.loads(sys.argv[1]))
    print(json.dumps({"received": [[base64.b64encode(p).decode() for p in m] for m in received]}),
          flush=True)
"""


def _jsonable(value: Any) -> Any:
    if isinstance(value, (bytes, bytearray)):
        return {"base64": base64.b64encode(bytes(value)).decode()}
    if isinstance(value, bool):
        return int(value)
    return value


class LibzmqPeer:
    """A running libzmq peer (see :func:`libzmq_peer`)."""

    def __init__(self, spec: dict[str, Any], process: bool) -> None:
        self.spec = spec
        self.endpoint = ""
        self.received: list[list[bytes]] = []
        self._proc: subprocess.Popen[str] | None = None
        self._thread: threading.Thread | None = None
        self._stop = threading.Event()
        ready = threading.Event()
        if process:
            self._proc = subprocess.Popen(
                [sys.executable, "-c", _WORKER, json.dumps(spec)],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                text=True,
            )
            assert self._proc.stdout is not None
            line = self._proc.stdout.readline()
            if not line:
                raise RuntimeError("the libzmq peer process did not start (is pyzmq installed?)")
            self.endpoint = json.loads(line)["endpoint"]
        else:
            namespace: dict[str, Any] = {"__name__": "zmtp_libzmq_peer"}
            exec(_WORKER, namespace)  # the same worker, in this process
            errors: list[BaseException] = []

            def run() -> None:
                def started(endpoint: str) -> None:
                    self.endpoint = endpoint
                    ready.set()

                try:
                    self.received = namespace["serve"](spec, started, self._stop)
                except BaseException as exc:  # reported by the constructor or stop()
                    errors.append(exc)
                    ready.set()

            self._thread = threading.Thread(target=run, daemon=True)
            self._thread.start()
            ready.wait(30)
            if errors:
                raise errors[0]

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc is not None else None

    def stop(self, timeout: float = 30) -> list[list[bytes]]:
        """Stop it; returns (and keeps in :attr:`received`) every message it received."""
        if self._proc is not None:
            if self._proc.poll() is None:
                out, _ = self._proc.communicate("", timeout=timeout)
                for line in out.splitlines():
                    record = json.loads(line)
                    if "received" in record:
                        self.received = [
                            [base64.b64decode(p) for p in m] for m in record["received"]
                        ]
        elif self._thread is not None:
            self._stop.set()
            self._thread.join(timeout)
        return self.received

    def kill(self) -> None:
        """SIGKILL the process (a subprocess peer only): it dies mid-whatever, like a crash."""
        if self._proc is None:
            raise RuntimeError("only a process=True peer can be killed")
        self._proc.kill()
        self._proc.wait(30)

    def __enter__(self) -> LibzmqPeer:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._proc is not None and self._proc.poll() is not None:
            return
        self.stop()


def libzmq_peer(
    socket_type: str,
    *,
    bind: str = "tcp://127.0.0.1:*",
    connect: str | None = None,
    echo: bool = False,
    process: bool = False,
    **options: Any,
) -> LibzmqPeer:
    """Start a libzmq peer; use it as a context manager (it stops on exit)."""
    spec = {
        "type": socket_type.upper(),
        "bind": bind,
        "connect": connect,
        "echo": echo,
        "options": {name: _jsonable(value) for name, value in options.items()},
    }
    return LibzmqPeer(spec, process)
