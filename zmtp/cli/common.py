"""What several subcommands share: the ``--backend`` option, running a coroutine on it, numeric
options with a lower bound (:func:`number_option`), and opening a raw byte stream to an
endpoint (the tools that speak the wire themselves)."""

from __future__ import annotations

import argparse
import signal
from collections.abc import Awaitable, Callable
from typing import TypeVar

import anyio
from anyio.abc import ByteStream

from ..transport.endpoint import IpcEndpoint, TcpEndpoint, parse_endpoint
from ..transport.streams import dial

BACKENDS = ("asyncio", "trio")

Number = TypeVar("Number", int, float)


def number_option(
    convert: Callable[[str], Number], what: str, *, minimum: float, exclusive: bool = False
) -> Callable[[str], Number]:
    """An argparse ``type=`` for a number: ``convert(text)`` (``int``, ``float``), at least
    ``minimum`` (above it if ``exclusive``). Anything else is a usage error that says why:
    ``not WHAT: 'text'`` or ``must be >= MINIMUM`` (NaN is never in range)."""
    bound = f"must be {'>' if exclusive else '>='} {minimum:g}"

    def parse(text: str) -> Number:
        try:
            value = convert(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not {what}: {text!r}") from None
        if not (value > minimum if exclusive else value >= minimum):
            raise argparse.ArgumentTypeError(bound)
        return value

    return parse


def add_backend_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--backend",
        choices=BACKENDS,
        default="asyncio",
        help="anyio backend to run on (default: asyncio; trio needs: pip install trio)",
    )


def run_on(backend: str, func: Callable[[], Awaitable[int]]) -> int:
    """Run ``func`` on ``backend``; its result is the exit status."""

    async def main() -> int:
        return await func()

    status: int = anyio.run(main, backend=backend)
    return status


def stream_endpoint(text: str) -> TcpEndpoint | IpcEndpoint:
    """A tcp:// or ipc:// endpoint (ValueError for anything else: the raw tools need a
    stream)."""
    endpoint = parse_endpoint(text)
    if not isinstance(endpoint, (TcpEndpoint, IpcEndpoint)):
        raise ValueError(f"{text}: only tcp:// and ipc:// endpoints carry a ZMTP stream")
    return endpoint


async def open_stream(endpoint: TcpEndpoint | IpcEndpoint) -> ByteStream:
    return await dial(endpoint)


async def until_interrupted(scope: anyio.CancelScope) -> None:
    """Cancel ``scope`` on SIGINT or SIGTERM (Ctrl-C): long-running commands stop cleanly,
    closing what they opened, instead of dying mid-write."""
    with anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
        async for _ in signals:
            scope.cancel()
            return
