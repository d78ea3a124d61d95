"""One error hierarchy: everything zmtp raises on purpose is a ZMTPError, with the built-in
base callers expect as a second base, and a message that says what happened and what to do."""

from __future__ import annotations

import errno
import inspect
import socket

import anyio
import pytest

import zmtp
import zmtp.sync


def test_every_exported_exception_is_a_zmtp_error() -> None:
    exported = [
        obj
        for name in zmtp.__all__
        if inspect.isclass(obj := getattr(zmtp, name)) and issubclass(obj, BaseException)
    ]
    assert len(exported) >= 14
    for cls in exported:
        assert issubclass(cls, zmtp.ZMTPError), cls


@pytest.mark.parametrize(
    ("cls", "builtin"),
    [
        (zmtp.EndpointError, ValueError),
        (zmtp.InvalidArgument, ValueError),
        (zmtp.OptionError, ValueError),
        (zmtp.UnknownOption, TypeError),
        (zmtp.WrongType, TypeError),
        (zmtp.TimedOut, TimeoutError),
        (zmtp.UsageError, RuntimeError),
        (zmtp.BindError, OSError),
    ],
)
def test_second_bases_kept(cls: type[Exception], builtin: type[Exception]) -> None:
    assert issubclass(cls, zmtp.ZMTPError) and issubclass(cls, builtin)


def test_bad_options_and_endpoints() -> None:
    with pytest.raises(zmtp.UnknownOption, match="valid options"):
        zmtp.Socket(zmtp.PUSH, no_such=1)
    with pytest.raises(zmtp.OptionError, match="router_notify"):
        zmtp.Socket(zmtp.ROUTER, router_notify=99)
    with pytest.raises(zmtp.InvalidArgument, match="unknown socket type"):
        zmtp.Socket("NOPE")


@pytest.mark.anyio
async def test_never_opened_socket_says_so() -> None:
    sock = zmtp.Socket(zmtp.PULL)
    for call in (lambda: sock.bind("tcp://127.0.0.1:*"), sock.recv):
        with pytest.raises(zmtp.SocketClosed, match="never opened"):
            await call()
    push = zmtp.Socket(zmtp.PUSH)
    with pytest.raises(zmtp.SocketClosed, match="never opened"):
        await push.send(b"x")


@pytest.mark.anyio
async def test_closed_socket_says_so() -> None:
    async with zmtp.Socket(zmtp.PULL) as sock:
        pass
    with pytest.raises(zmtp.SocketClosed, match="closed"):
        await sock.bind("tcp://127.0.0.1:*")


@pytest.mark.anyio
async def test_timeouts_have_a_message() -> None:
    with anyio.fail_after(10):
        async with zmtp.Socket(zmtp.PULL, recv_timeout=0.05) as pull:
            await pull.bind("tcp://127.0.0.1:*")
            with pytest.raises(
                zmtp.TimedOut, match=r"recv timed out after 0.05 s \(recv_timeout\)"
            ):
                await pull.recv()
        async with zmtp.Socket(zmtp.PUSH, send_timeout=0.05, linger=0) as push:
            with pytest.raises(TimeoutError, match="send_timeout"):
                await push.send(b"nobody to take it")


@pytest.mark.anyio
async def test_endpoint_error_is_exported() -> None:
    async with zmtp.Socket(zmtp.PULL) as sock:
        with pytest.raises(zmtp.EndpointError):
            await sock.bind("nonsense://x")


@pytest.mark.anyio
async def test_bind_to_a_port_in_use_is_a_zmtp_error_naming_the_endpoint() -> None:
    """Regression: a port in use raised the bare ``OSError`` of the system, which is no
    ``ZMTPError`` and does not say which bind failed; a host that does not resolve raised
    ``socket.gaierror``."""
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        endpoint = f"tcp://127.0.0.1:{taken.getsockname()[1]}"
        async with zmtp.Socket(zmtp.PULL) as sock:
            with pytest.raises(zmtp.BindError, match=f"cannot bind {endpoint}") as info:
                await sock.bind(endpoint)
            assert info.value.errno == errno.EADDRINUSE
            with pytest.raises(zmtp.BindError, match=r"no\.such\.host\.invalid"):
                await sock.bind("tcp://no.such.host.invalid:5555")


def test_sync_bind_to_a_port_in_use_is_a_bind_error() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        endpoint = f"tcp://127.0.0.1:{taken.getsockname()[1]}"
        with zmtp.sync.Socket(zmtp.PULL) as blocking, pytest.raises(zmtp.BindError):
            blocking.bind(endpoint)


def test_sync_timeouts_have_a_message() -> None:
    with (
        zmtp.sync.Socket(zmtp.PULL, recv_timeout=0.05) as pull,
        pytest.raises(zmtp.TimedOut, match="recv_timeout"),
    ):
        pull.recv()
