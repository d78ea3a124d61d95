"""Options after construction (set/get), attribute assignment, pyzmq-milliseconds warnings and
the warning of a close that keeps waiting."""

from __future__ import annotations

import logging
import warnings

import anyio
import pytest

import zmtp
import zmtp.options
import zmtp.socket
import zmtp.sync


def test_set_checks_like_the_constructor() -> None:
    sock = zmtp.Socket(zmtp.ROUTER)
    with pytest.raises(zmtp.OptionError, match="send_hwm"):
        sock.set("send_hwm", -1)
    assert sock.get("send_hwm") == 1000  # unchanged after a refused value
    with pytest.raises(zmtp.UnknownOption, match="did you mean recv_timeout"):
        sock.set("recv_timout", 1.0)
    with pytest.raises(zmtp.UnknownOption):
        sock.get("no_such")
    with pytest.raises(zmtp.OptionError, match="fixed when the socket is made"):
        sock.set("router_notify", zmtp.NOTIFY_CONNECT)
    sock.set("plain_server", True)
    with pytest.raises(zmtp.OptionError, match="choose one mechanism"):
        sock.set("curve_server", True)
    assert sock.get("curve_server") is False
    sock.set("identity", b"me")
    assert sock.get("identity") == b"me"


@pytest.mark.parametrize(
    ("pyzmq_name", "zmtp_name"),
    [("routing_id", "identity"), ("sndhwm", "send_hwm"), ("RCVTIMEO", "recv_timeout")],
)
def test_a_pyzmq_option_name_is_answered_with_the_zmtp_name(
    pyzmq_name: str, zmtp_name: str
) -> None:
    """Regression: ``routing_id=`` (pyzmq's ``ROUTING_ID``) suggested ``connect_routing_id``,
    a different option; ``sndhwm`` suggested nothing useful."""
    with pytest.raises(zmtp.UnknownOption, match=f"did you mean {zmtp_name}"):
        zmtp.Socket(zmtp.DEALER, **{pyzmq_name: 1})
    with pytest.raises(zmtp.UnknownOption, match=f"did you mean {zmtp_name}"):
        zmtp.Socket(zmtp.DEALER).set(pyzmq_name, 1)


@pytest.mark.parametrize("face", [zmtp.Socket, zmtp.sync.Socket])
def test_pyzmq_methods_and_attributes_answer_with_the_zmtp_spelling(face: type) -> None:
    """Regression: ``sock.setsockopt(...)``, ``sock.bind_to_random_port(...)`` or
    ``sock.sndhwm = 10`` ported from pyzmq raised a bare "no attribute"."""
    sock = face(zmtp.PUSH)
    try:
        with pytest.raises(AttributeError, match=r"no 'setsockopt': use sock\.set\("):
            sock.setsockopt(1, 10)
        with pytest.raises(AttributeError, match=r"sock\.bind\('tcp://127\.0\.0\.1:\*'\)"):
            sock.bind_to_random_port("tcp://127.0.0.1")
        with pytest.raises(AttributeError, match="the option send_hwm"):
            sock.sndhwm = 10
        with pytest.raises(AttributeError, match="the option identity"):
            print(sock.routing_id)
        assert not hasattr(sock, "poll")
        assert sock.subscribe  # a zmtp method of the same name is untouched
    finally:
        if isinstance(sock, zmtp.sync.Socket):
            sock.close()


def test_identity_takes_str_as_utf8() -> None:
    """Regression: ``identity="bob"`` was refused as "must be at most 255 bytes"."""
    assert zmtp.Socket(zmtp.DEALER, identity="bob").get("identity") == b"bob"
    sock = zmtp.Socket(zmtp.DEALER)
    sock.set("identity", "zoë")
    assert sock.get("identity") == "zoë".encode()
    with pytest.raises(zmtp.OptionError, match="bytes or str, not int"):
        zmtp.Socket(zmtp.DEALER, identity=5)
    with pytest.raises(zmtp.OptionError, match="at most 255 bytes"):
        zmtp.Socket(zmtp.DEALER, identity="x" * 256)


def test_set_normalises_keys() -> None:
    _public, secret = zmtp.curve_keypair()
    sock = zmtp.Socket(zmtp.DEALER)
    sock.set("curve_secretkey", secret)
    assert isinstance(sock.get("curve_secretkey"), bytes)
    assert len(sock.get("curve_publickey")) == 32  # derived, as by the constructor


@pytest.mark.anyio
async def test_recv_timeout_set_applies_to_the_next_recv() -> None:
    with anyio.fail_after(10):
        async with zmtp.Socket(zmtp.PULL) as pull:
            await pull.bind("tcp://127.0.0.1:*")
            pull.set("recv_timeout", 0.05)
            with pytest.raises(zmtp.TimedOut):
                await pull.recv()


def test_assigning_attributes_raises() -> None:
    for sock in (zmtp.Socket(zmtp.PUSH, linger=2.0), zmtp.sync.Socket(zmtp.PUSH, linger=2.0)):
        assert sock.linger == 2.0  # type: ignore[union-attr]  # options read as attributes
        with pytest.raises(AttributeError, match=r"sock.set\('linger', 0\)"):
            sock.linger = 0  # type: ignore[union-attr,misc]
        with pytest.raises(AttributeError):
            sock.no_such = 1  # type: ignore[union-attr]
        sock.set("linger", 0)
        assert sock.get("linger") == 0
        if isinstance(sock, zmtp.sync.Socket):
            sock.close()


def test_milliseconds_look_warns_once() -> None:
    with pytest.warns(UserWarning, match=r"did you mean recv_timeout=1\?"):
        zmtp.Socket(zmtp.PULL, recv_timeout=1000)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        zmtp.Socket(zmtp.PULL, recv_timeout=1000)  # the same value again: no second warning
        zmtp.Socket(zmtp.PULL, recv_timeout=2000.0)  # a float says "seconds, really"
        zmtp.Socket(zmtp.PULL, recv_timeout=999)
    sock = zmtp.Socket(zmtp.PUSH)
    with pytest.warns(UserWarning, match=r"linger=5000 is 5000 seconds.*linger=5\?"):
        sock.set("linger", 5000)


@pytest.mark.anyio
async def test_a_lingering_close_warns_naming_endpoint_and_count(
    caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(zmtp.engine.core, "LINGER_WARNING_AFTER", 0.05)
    caplog.set_level(logging.WARNING, logger="zmtp")
    with anyio.fail_after(10):
        async with zmtp.Socket(zmtp.PUSH, linger=0.5) as push:
            await push.connect("tcp://127.0.0.1:1")  # nobody there
            await push.send(b"one")
            await push.send(b"two")
    warning = [r.getMessage() for r in caplog.records if "close() has waited" in r.getMessage()]
    assert len(warning) == 1
    assert "2 undelivered message(s) to tcp://127.0.0.1:1" in warning[0]


def test_sync_socket_warns_in_the_calling_thread() -> None:
    with pytest.warns(UserWarning, match="did you mean send_timeout=3") as record:
        sock = zmtp.sync.Socket(zmtp.PUSH, send_timeout=3000, linger=0)
    assert record[0].filename == __file__  # points at this line, not the loop thread
    sock.close()
