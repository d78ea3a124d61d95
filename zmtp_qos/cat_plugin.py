"""``zmtp cat --qos LEVEL``: the delivery guarantees on the command line, as a plugin of
``zmtp cat`` (:mod:`zmtp.cli.cat_plugins`, registered in ``pyproject.toml`` under the
entry-point group ``zmtp.cli.cat``): ``zmtp`` itself never imports this package.

On PUSH, PULL, SCATTER, GATHER, REQ and REP (docs/qos.md). A sender keeps each message's
receipt; with ``--timeout`` it waits that long for all of them (exit 2 if some are still
unsettled), else the socket's close waits within ``--linger`` and dead-letters the rest. Each
dead letter is printed on stderr (reason, peer, NACK, the parts in the output format) and makes
the exit status 1. A REQ reports a request dead-lettered or NACKed the same way and goes on
with the next input. A level-3 PULL/GATHER completes (COMP) each message once it is written
to stdout; a level-3 REP's answer is its reply. A peer refused for QoS (a level mismatch) is
shown on stderr without ``-v``.
"""

from __future__ import annotations

import argparse
from typing import Any

import anyio

from zmtp.cli.cat_plugins import CatError, CatHooks, CatIO, CatPlugin
from zmtp.cli.common import number_option

from .config import QoSConfig
from .results import DeadLetter, DeadLetterError, NackError, Receipt
from .socket import Handle, Socket

#: A sender forgets settled receipts once it holds twice this many (a long stream from a pipe
#: keeps only the pending ones).
KEEP_RECEIPTS = 1024


_seconds = number_option(float, "a number of seconds", minimum=0, exclusive=True)


class QoSCatPlugin(CatPlugin):
    """Adds ``--qos LEVEL`` and ``--dead-letter-timeout SECS`` to ``zmtp cat``."""

    options = ("--qos", "--dead-letter-timeout")

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        group = parser.add_argument_group("delivery guarantees (docs/qos.md)")
        group.add_argument(
            "--qos",
            type=int,
            choices=(0, 1, 2, 3),
            default=0,
            metavar="LEVEL",
            help="QoS level 0-3 (PUSH, PULL, SCATTER, GATHER, REQ, REP; both ends the same "
            "level): a sender prints dead letters on stderr and exits 1 if there were any; "
            "a level-3 receiver completes each message once printed (default: 0, plain ZMTP)",
        )
        group.add_argument(
            "--dead-letter-timeout",
            type=_seconds,
            metavar="SECS",
            help="dead-letter a message no peer took for this long (every level), and at "
            "levels 2-3 the messages of a peer gone this long (default: 60)",
        )

    def activate(self, args: argparse.Namespace, kind: str, io: CatIO) -> CatHooks | None:
        level: int = args.qos
        if not level:
            if args.dead_letter_timeout is not None:
                raise CatError("--dead-letter-timeout needs --qos 1, 2 or 3")
            return None
        config = QoSConfig()
        if args.dead_letter_timeout is not None:
            try:
                config = QoSConfig(dead_letter_timeout=args.dead_letter_timeout)
            except ValueError as exc:
                raise CatError(f"--dead-letter-timeout: {exc}") from None
        return QoSCatHooks(level, config, kind, io)


class QoSCatHooks(CatHooks):
    """One run of ``zmtp cat`` at a QoS level."""

    show_refusals = True

    def __init__(self, level: int, config: QoSConfig, kind: str, io: CatIO) -> None:
        self.level = level
        self.config = config
        self.kind = kind
        self.io = io
        self.receipts: list[Receipt] = []
        self.handle: Handle | None = None  # level 3 PULL/GATHER: the message being written
        self.last: list[bytes] = []  # REQ: the request awaiting its reply
        self.dead_letters = 0
        self.sent_count = 0

    def make_socket(self, kind: str, options: dict[str, Any]) -> Socket:
        try:
            return Socket(kind, qos=self.level, config=self.config, **options)
        except ValueError as exc:  # a type without QoS: the message says which have it
            raise CatError(str(exc)) from None

    def zmtp_socket(self, sock: Any) -> Any:
        assert isinstance(sock, Socket)
        return sock.raw

    def sent(self, message: list[bytes], result: object) -> None:
        self.last = message
        self.sent_count += 1
        if isinstance(result, Receipt):
            result.observed = True  # reported here: no need to log it as a warning too
            self.receipts.append(result)
            if len(self.receipts) >= 2 * KEEP_RECEIPTS:
                self.report_settled(done_only=True)

    async def receive(self, sock: Any) -> list[bytes] | None:
        assert isinstance(sock, Socket)
        if self.level == 3 and self.kind in ("PULL", "GATHER"):
            self.handle = await sock.recv_handle()
            return list(self.handle.parts)
        if self.level == 3 and self.kind == "REP":
            return list((await sock.recv_handle()).parts)  # answered by the reply
        if self.kind != "REQ":
            return await sock.recv_multipart()
        try:
            return await sock.recv_multipart()
        except DeadLetterError as exc:  # its parts hold REQ's envelope: show the request
            letter = exc.letter
            self.report(DeadLetter(self.last, letter.reason, letter.peer, letter.error))
        except NackError as exc:
            self.report(DeadLetter(self.last, "nack", "", exc))
        return None

    def written(self, message: list[bytes]) -> None:
        if self.handle is not None:
            self.handle.complete()
            self.handle = None

    async def settle(self, timeout: float) -> str | None:
        if not self.receipts:
            return None
        with anyio.move_on_after(timeout):
            for receipt in self.receipts:
                await receipt
        pending = sum(1 for receipt in self.receipts if not receipt.done)
        if not pending:
            return None
        return (
            f"timed out after {timeout:g}s: {pending} of {self.sent_count} messages not "
            "acknowledged"
        )

    def closed(self) -> int:
        # within --linger every receipt resolved (what was left: socket_closed)
        self.report_settled()
        return self.dead_letters

    def report_settled(self, done_only: bool = False) -> None:
        """Report the dead letters among the settled receipts and forget those."""
        kept = []
        for receipt in self.receipts:
            if done_only and not receipt.done:
                kept.append(receipt)
            elif isinstance(receipt.outcome, DeadLetter):
                self.report(receipt.outcome)
        self.receipts = kept

    def report(self, letter: DeadLetter) -> None:
        self.dead_letters += 1
        error = f", {letter.error}" if letter.error is not None else ""
        parts = self.io.format(letter.parts)
        self.io.warn(f"dead letter ({letter.reason}, peer {letter.peer or '-'}{error}): {parts}")


__all__ = ["KEEP_RECEIPTS", "QoSCatHooks", "QoSCatPlugin"]
