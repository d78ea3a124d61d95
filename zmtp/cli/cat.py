"""``zmtp cat TYPE``: a socket of any type on the command line, like ``nc`` for ZeroMQ.

It binds and/or connects (``-b``/``-c``, repeatable), sends what comes in on stdin (one message
per line, or ``--data``) and prints what arrives on stdout, one message per line, in the
format of :mod:`zmtp.cli.formats`. What it does follows the type:

* send only (PUSH, PUB, RADIO, SCATTER): send the input, then exit (after ``--linger``);
* receive only (PULL, SUB, XSUB without input, DISH, GATHER): print what arrives;
* REQ: for each input message, send it, print the reply;
* REP: print each request and answer it with ``--echo`` (the request itself), ``--data``, or
  the next input message;
* everything else (PAIR, DEALER, ROUTER, XPUB, XSUB, SERVER, CLIENT, PEER, CHANNEL): send the
  input and print what arrives, at the same time; ``--echo`` sends each message back as it came
  (a ROUTER's or SERVER's reply goes to the peer it came from: the routing id is its first part).

It stops after ``--count`` messages (received, or sent for send-only types), when the input ends
(for types that only send or ask), on ``--timeout`` (exit 2) or on Ctrl-C (exit 0).

Installed plugins (:mod:`zmtp.cli.cat_plugins`, entry-point group ``zmtp.cli.cat``) add
options and may make the socket and act around each send and receive: ``--qos LEVEL`` comes
so from the delivery-guarantee layer, which ``zmtp`` itself never imports.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import AsyncIterator
from typing import Any

import anyio

from ..interop.common import leaf_exception
from ..protocol.sockettypes import SocketType
from .cat_plugins import (
    CatError,
    CatHooks,
    CatIO,
    Loaded,
    activate,
    add_plugin_arguments,
    load_plugins,
    warn,
)
from .common import add_backend_argument, number_option, run_on, until_interrupted
from .formats import FORMATS, FormatError, decode, encode

HELP = "a socket of any type on the command line: stdin to messages, messages to stdout"

OK, ERROR, TIMED_OUT = 0, 1, 2
SEND_ONLY = frozenset({"PUSH", "PUB", "RADIO", "SCATTER"})
RECEIVE_ONLY = frozenset({"PULL", "SUB", "DISH", "GATHER"})


def _socket_type(text: str) -> str:
    name = text.upper()
    if name not in SocketType.__members__:
        raise argparse.ArgumentTypeError(
            f"unknown socket type {text!r}; one of {', '.join(SocketType.__members__)}"
        )
    return name


_seconds = number_option(float, "a number of seconds", minimum=0)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("type", type=_socket_type, metavar="TYPE", help="socket type (any case)")
    where = parser.add_argument_group("endpoints (at least one)")
    where.add_argument("-b", "--bind", action="append", default=[], metavar="ENDPOINT")
    where.add_argument("-c", "--connect", action="append", default=[], metavar="ENDPOINT")

    data = parser.add_argument_group("messages")
    data.add_argument(
        "-d",
        "--data",
        action="append",
        metavar="MESSAGE",
        help="send this (in the input format) instead of reading stdin; repeatable; with "
        "--count, repeated until COUNT are sent",
    )
    data.add_argument(
        "-f",
        "--format",
        choices=FORMATS,
        default="text",
        help="input and output format (default: text; see --in-format/--out-format)",
    )
    data.add_argument("--in-format", choices=FORMATS, help="format of stdin and --data")
    data.add_argument("--out-format", choices=FORMATS, help="format of what is printed")
    data.add_argument(
        "-n", "--count", type=int, metavar="N", help="stop after N messages (see above)"
    )
    data.add_argument(
        "-i", "--interval", type=_seconds, default=0.0, metavar="SECS", help="pause between sends"
    )
    data.add_argument(
        "--delay",
        type=_seconds,
        default=0.0,
        metavar="SECS",
        help="wait this long before the first send (a PUB's subscribers need a moment)",
    )
    data.add_argument(
        "-t",
        "--timeout",
        type=_seconds,
        metavar="SECS",
        help="exit with status 2 if nothing arrives, or a send cannot go out, for SECS",
    )
    data.add_argument(
        "-e", "--echo", action="store_true", help="send every received message back as it came"
    )
    data.add_argument(
        "-s",
        "--subscribe",
        action="append",
        metavar="TOPIC",
        help="SUB/XSUB: subscribe to TOPIC (repeatable; SUB default: everything)",
    )
    data.add_argument("--join", action="append", metavar="GROUP", help="DISH: join GROUP")

    opts = parser.add_argument_group("socket options (libzmq's meaning; times in seconds)")
    opts.add_argument("--identity", metavar="ID", help="routing id announced to peers")
    opts.add_argument("--send-hwm", type=int, metavar="N")
    opts.add_argument("--recv-hwm", type=int, metavar="N")
    opts.add_argument("--max-message-size", type=int, metavar="BYTES")
    opts.add_argument("--heartbeat-ivl", type=_seconds, metavar="SECS")
    opts.add_argument("--heartbeat-ttl", type=_seconds, metavar="SECS")
    opts.add_argument("--heartbeat-timeout", type=_seconds, metavar="SECS")
    opts.add_argument("--reconnect-ivl", type=_seconds, metavar="SECS")
    opts.add_argument("--reconnect-ivl-max", type=_seconds, metavar="SECS")
    opts.add_argument(
        "--linger",
        type=_seconds,
        default=5.0,
        metavar="SECS",
        help="at exit, wait this long for queued messages to go out (default: 5)",
    )

    sec = parser.add_argument_group("security (keys: Z85 text, or --*-cert certificate files)")
    sec.add_argument("--curve-server", action="store_true", help="be a CURVE server")
    sec.add_argument("--curve-secretkey", metavar="Z85", help="our CURVE secret key")
    sec.add_argument(
        "--curve-publickey", metavar="Z85", help="our CURVE public key (default: from secret)"
    )
    sec.add_argument(
        "--curve-serverkey", metavar="Z85", help="be a CURVE client of the server with this key"
    )
    sec.add_argument(
        "--curve-cert",
        metavar="FILE",
        help="our keys from a certificate file (czmq/pyzmq format: public-key, secret-key)",
    )
    sec.add_argument(
        "--curve-server-cert", metavar="FILE", help="the server's public key from its certificate"
    )
    sec.add_argument(
        "--curve-allow",
        action="append",
        metavar="Z85",
        help="CURVE server: accept only these client keys (default: any client)",
    )
    sec.add_argument("--plain-server", action="store_true", help="be a PLAIN server")
    sec.add_argument(
        "--plain-user",
        action="append",
        metavar="NAME:PASSWORD",
        help="PLAIN server: an accepted user (repeatable)",
    )
    sec.add_argument("--plain-username", metavar="NAME", help="be a PLAIN client with this name")
    sec.add_argument("--plain-password", metavar="PASSWORD", default="")
    parser.add_argument("-v", "--verbose", action="store_true", help="monitor events on stderr")
    add_backend_argument(parser)
    loaded = load_plugins()
    add_plugin_arguments(parser, loaded)
    parser.set_defaults(cat_plugins=loaded)
    parser.epilog = (
        "Exit status: 0 done (also on Ctrl-C), 1 an error (bad endpoint, key, input line; "
        "refused handshake under -v), 2 --timeout passed (argparse also exits 2 for bad "
        "usage). Installed plugins (entry-point group zmtp.cli.cat, docs/extensions.md) add "
        "options, each in its own group above. Example: seq 5 | zmtp cat PUSH -c "
        "tcp://127.0.0.1:5555"
    )


def read_certificate(path: str) -> dict[str, str]:
    """The keys of a czmq/pyzmq certificate file: ``public-key = "..."`` and, in a secret
    certificate, ``secret-key = "..."``."""
    try:
        text = open(path).read()  # noqa: SIM115
    except OSError as exc:
        raise CatError(f"cannot read certificate {path}: {exc.strerror or exc}") from None
    keys: dict[str, str] = {}
    for line in text.splitlines():
        name, sep, value = line.strip().partition("=")
        if sep and name.strip() in ("public-key", "secret-key"):
            keys[name.strip()] = value.strip().strip('"')
    if "public-key" not in keys:
        raise CatError(f"{path}: no public-key in this certificate")
    return keys


def socket_options(args: argparse.Namespace) -> dict[str, Any]:
    """The :class:`zmtp.Socket` options the command line asks for."""
    options: dict[str, Any] = {"linger": args.linger}
    if args.identity is not None:
        options["identity"] = args.identity.encode()
    for name in (
        "send_hwm",
        "recv_hwm",
        "max_message_size",
        "heartbeat_ivl",
        "heartbeat_ttl",
        "heartbeat_timeout",
        "reconnect_ivl",
        "reconnect_ivl_max",
    ):
        value = getattr(args, name)
        if value is not None:
            options[name] = value
    secret, public = args.curve_secretkey, args.curve_publickey
    if args.curve_cert:
        keys = read_certificate(args.curve_cert)
        public = keys["public-key"]
        if "secret-key" not in keys:
            raise CatError(f"{args.curve_cert}: no secret-key (use the _secret certificate)")
        secret = keys["secret-key"]
    server_key = args.curve_serverkey
    if args.curve_server_cert:
        server_key = read_certificate(args.curve_server_cert)["public-key"]
    from ..crypto import curve_keypair, curve_public

    try:
        if args.curve_server:
            if secret is None:
                raise CatError("--curve-server needs --curve-secretkey or --curve-cert")
            options.update(curve_server=True, curve_secretkey=secret)
            options["curve_publickey"] = public or curve_public(secret)
        elif server_key is not None:
            if secret is None:
                public, secret = curve_keypair()  # a throw-away client key pair
            options.update(
                curve_serverkey=server_key,
                curve_secretkey=secret,
                curve_publickey=public or curve_public(secret),
            )
    except (ValueError, TypeError) as exc:
        raise CatError(f"bad CURVE key: {exc}") from None
    if args.plain_server:
        options["plain_server"] = True
    elif args.plain_username is not None:
        options.update(plain_username=args.plain_username, plain_password=args.plain_password)
    return options


def authenticator(args: argparse.Namespace) -> Any:
    """The authenticator a PLAIN or CURVE server needs (None for a client or NULL)."""
    if not (args.plain_server or args.curve_server):
        return None
    from ..auth import Authenticator

    auth = Authenticator()
    if args.plain_server:
        users = {}
        for entry in args.plain_user or []:
            name, sep, password = entry.partition(":")
            if not sep:
                raise CatError(f"--plain-user {entry!r}: expected NAME:PASSWORD")
            users[name] = password
        if not users:
            raise CatError("--plain-server needs at least one --plain-user NAME:PASSWORD")
        auth.configure_plain(users)
    if args.curve_server:
        if args.curve_allow:
            auth.configure_curve(keys=list(args.curve_allow))
        else:
            auth.configure_curve(allow_any=True)
    return auth


class Cat:
    """One run of ``zmtp cat``."""

    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.kind: str = args.type
        self.in_format: str = args.in_format or args.format
        self.out_format: str = args.out_format or args.format
        self.count: int | None = args.count
        self.received = 0
        self.sent = 0
        self.timed_out = False
        self.out = sys.stdout.buffer
        loaded: Loaded = getattr(args, "cat_plugins", None) or Loaded()
        self.hooks: CatHooks = activate(loaded, args, self.kind, CatIO(self.render, warn))

    # input

    async def inputs(self) -> AsyncIterator[list[bytes]]:
        """The messages to send: --data (repeated up to --count) or stdin, in the in-format."""
        if self.args.data:
            try:
                messages = [decode(item.encode(), self.in_format) for item in self.args.data]
            except FormatError as exc:
                raise CatError(f"--data: {exc}") from None
            while True:
                for message in messages:
                    yield message
                if self.count is None or self.kind not in SEND_ONLY:
                    return
        if self.in_format == "raw":
            data = await anyio.to_thread.run_sync(sys.stdin.buffer.read, abandon_on_cancel=True)
            yield [data]
            return
        number = 0
        while True:
            line = await anyio.to_thread.run_sync(sys.stdin.buffer.readline, abandon_on_cancel=True)
            if not line:
                return
            number += 1
            try:
                yield decode(line, self.in_format)
            except FormatError as exc:
                raise CatError(f"stdin line {number}: {exc}") from None

    # output

    def show(self, message: list[bytes]) -> None:
        self.out.write(encode(message, self.out_format))
        self.out.flush()
        self.hooks.written(message)

    def render(self, message: list[bytes]) -> str:
        """``message`` in the output format as one line of text (for reports on stderr)."""
        return encode(message, self.out_format).decode(errors="replace").rstrip("\n")

    # the socket's side

    async def send(self, sock: Any, message: list[bytes]) -> None:
        with anyio.fail_after(self.args.timeout) if self.args.timeout else _nothing():
            result = await sock.send_multipart(message)
        self.sent += 1
        self.hooks.sent(message, result)

    async def recv(self, sock: Any) -> list[bytes] | None:
        """The next message, or None when a plugin dealt with what came instead."""
        with anyio.fail_after(self.args.timeout) if self.args.timeout else _nothing():
            message = await self.hooks.receive(sock)
        if message is not None:
            self.received += 1
        return message

    def enough(self, done: int) -> bool:
        return self.count is not None and done >= self.count

    async def sending(self, sock: Any) -> None:
        if self.args.delay:
            await anyio.sleep(self.args.delay)  # asked for by the user
        first = True
        async for message in self.inputs():
            if self.enough(self.sent):
                return
            if not first and self.args.interval:
                await anyio.sleep(self.args.interval)
            first = False
            await self.send(sock, message)
            if self.kind == "REQ":
                reply = await self.recv(sock)
                if reply is not None:
                    self.show(reply)
                if self.enough(self.received):
                    return

    async def receiving(self, sock: Any) -> None:
        replies = None if self.args.echo or self.kind != "REP" else self.inputs().__aiter__()
        while not self.enough(self.received):
            message = await self.recv(sock)
            if message is None:
                continue
            self.show(message)
            if self.args.echo:
                await self.send(sock, message)
            elif replies is not None:
                try:
                    await self.send(sock, await replies.__anext__())
                except StopAsyncIteration:
                    return

    async def run(self) -> int:
        args = self.args
        hooks = self.hooks
        options = socket_options(args)
        auth = authenticator(args)
        try:
            socket = hooks.make_socket(self.kind, options)
        except (ValueError, TypeError) as exc:
            raise CatError(f"bad socket option: {exc}") from None
        async with socket as sock:
            raw = hooks.zmtp_socket(sock)
            if auth is not None:
                raw.authenticator = auth
            if self.kind in ("SUB", "XSUB"):
                topics = args.subscribe if args.subscribe else ([""] if self.kind == "SUB" else [])
                for topic in topics:
                    if self.kind == "SUB":
                        raw.subscribe(topic.encode())
                    else:
                        await sock.send_multipart([b"\x01" + topic.encode()])
            for group in args.join or []:
                raw.join(group.encode())
            monitor = sock.monitor() if args.verbose or hooks.show_refusals else None
            try:
                for endpoint in args.bind:
                    bound = await sock.bind(endpoint)
                    print(f"zmtp cat: bound {bound}", file=sys.stderr, flush=True)
                for endpoint in args.connect:
                    await sock.connect(endpoint)
            except (OSError, ValueError) as exc:
                raise CatError(str(exc)) from None
            try:
                async with anyio.create_task_group() as tg:
                    if monitor is not None:
                        tg.start_soon(_print_events, monitor, not args.verbose)
                    status = await self.exchange(sock)
                    tg.cancel_scope.cancel()
            except Exception as exc:  # a CatError from a task arrives in an exception group
                raise leaf_exception(exc) from None
        # closed (within --linger): the plugin reports what failed
        if hooks.closed() and status == OK:
            status = ERROR
        if status == OK and raw.unsent_at_close:
            # Sent into a queue no peer emptied: not a success (a QoS plugin reports its own).
            print(
                f"zmtp cat: {raw.unsent_at_close} message(s) not sent: no peer took them "
                f"within --linger ({args.linger:g} s)",
                file=sys.stderr,
            )
            status = ERROR
        return status

    async def exchange(self, sock: Any) -> int:
        kind = self.kind
        try:
            if kind in SEND_ONLY or kind == "REQ":
                await self.sending(sock)
                if self.args.timeout:
                    late = await self.hooks.settle(self.args.timeout)
                    if late is not None:
                        warn(late)
                        return TIMED_OUT
            elif kind in RECEIVE_ONLY or kind == "REP" or self.args.echo:
                await self.receiving(sock)
            else:
                async with anyio.create_task_group() as tg:
                    tg.start_soon(self.sending, sock)
                    await self.receiving(sock)
                    tg.cancel_scope.cancel()
        except TimeoutError:
            print(
                f"zmtp cat: timed out after {self.args.timeout:g}s "
                f"({self.sent} sent, {self.received} received)",
                file=sys.stderr,
            )
            return TIMED_OUT
        return OK


class _nothing:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        return None


async def _print_events(monitor: Any, refusals_only: bool = False) -> None:
    """Monitor events on stderr: all of them (-v), or only refused handshakes, each once (a
    plugin's :attr:`~zmtp.cli.cat_plugins.CatHooks.show_refusals`: the dialer retries them on
    every reconnect)."""
    from ..monitor import HandshakeFailed

    seen: set[tuple[str, str]] = set()
    async for event in monitor:
        if refusals_only:
            if not isinstance(event, HandshakeFailed) or (event.endpoint, event.reason) in seen:
                continue
            seen.add((event.endpoint, event.reason))
        print(f"zmtp cat: {event}", file=sys.stderr, flush=True)


def run(args: argparse.Namespace) -> int:
    if not args.bind and not args.connect:
        print("zmtp cat: give at least one --bind or --connect endpoint", file=sys.stderr)
        return ERROR
    try:
        cat = Cat(args)  # the plugins' verdict on their options
    except CatError as exc:
        print(f"zmtp cat: {exc}", file=sys.stderr)
        return ERROR

    async def main() -> int:
        status = OK
        with anyio.CancelScope() as scope:
            async with anyio.create_task_group() as tg:
                tg.start_soon(until_interrupted, scope)
                try:
                    status = await cat.run()
                except Exception as exc:  # the socket's task group may wrap it in a group
                    leaf = leaf_exception(exc)
                    if not isinstance(leaf, CatError):
                        raise
                    print(f"zmtp cat: {leaf}", file=sys.stderr)
                    status = ERROR
                tg.cancel_scope.cancel()
        return status

    return run_on(args.backend, main)


__all__: list[str] = ["Cat", "CatError", "add_arguments", "read_certificate", "run"]
