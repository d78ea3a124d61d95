"""Plugins for ``zmtp cat``: installed packages that add options to it and change how it
makes its socket and what it does around each send and receive.

``zmtp`` knows no plugin by name. A package registers one in the entry-point group
:data:`GROUP` (``zmtp.cli.cat``), in its ``pyproject.toml``::

    [project.entry-points."zmtp.cli.cat"]
    myplugin = "mypackage.cat_plugin:MyPlugin"

The entry point names a :class:`CatPlugin` subclass (or an instance of one). ``zmtp cat``
loads every plugin of the group when it builds its parser: each adds its options
(:meth:`CatPlugin.add_arguments`) and, once the command line is parsed, may take part in the
run (:meth:`CatPlugin.activate` returns :class:`CatHooks`, or None to stay out). At most one
plugin takes part in a run. A plugin that fails to load is left out; its error is shown when
an option it was expected to provide is used (:data:`EXPECTED`). docs/extensions.md describes
the contract; the delivery-guarantee layer's ``--qos`` is the plugin this distribution ships.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from importlib.metadata import entry_points
from typing import Any

#: The entry-point group ``zmtp cat`` loads its plugins from.
GROUP = "zmtp.cli.cat"

#: Options that ``zmtp cat`` documents but that come from a plugin: when no loaded plugin
#: provides one, ``zmtp cat`` accepts it anyway and stops with a clear error if it is used
#: (instead of argparse's "unrecognized arguments").
EXPECTED: dict[str, str] = {
    "--qos": "per-hop delivery guarantees (docs/qos.md)",
}


class CatError(Exception):
    """A problem to report on stderr with exit status 1 (bad key file, bad input line, a
    plugin's refusal of its options...). Plugins raise it too."""


@dataclass(frozen=True)
class CatIO:
    """What ``zmtp cat`` lends a plugin to report with: ``format`` renders a message's parts
    in the output format (one line, no newline), ``warn`` prints ``zmtp cat: TEXT`` on stderr."""

    format: Callable[[list[bytes]], str]
    warn: Callable[[str], None]


class CatHooks:
    """What an active plugin changes in one run of ``zmtp cat``. Every method has the plain
    behaviour as its default, so a plugin overrides only what it needs.

    The order, for one run: :meth:`make_socket`, then (the socket entered, bound, connected)
    for each message sent ``send_multipart`` and :meth:`sent`; for each message received
    :meth:`receive`, the message written to stdout, :meth:`written`; the input done,
    :meth:`settle` (only with ``--timeout``); the socket closed, :meth:`closed`.
    """

    #: Show refused handshakes on stderr even without ``-v`` (a refusal the plugin causes,
    #: as a QoS level mismatch, would otherwise go unseen).
    show_refusals: bool = False

    def make_socket(self, kind: str, options: dict[str, Any]) -> Any:
        """The socket to use: an async context manager with ``bind``, ``connect``,
        ``send_multipart``, ``recv_multipart`` and ``monitor`` as :class:`zmtp.Socket` has.
        ``options`` are :class:`zmtp.Options` keywords. Raise :class:`CatError` to refuse."""
        from ..socket import Socket

        return Socket(kind, **options)

    def zmtp_socket(self, sock: Any) -> Any:
        """The :class:`zmtp.Socket` inside ``sock`` (for the authenticator, subscriptions and
        groups): ``sock`` itself unless the plugin wraps one."""
        return sock

    async def receive(self, sock: Any) -> list[bytes] | None:
        """The next message; None if the plugin dealt with what came instead (a REQ's request
        that failed, reported): nothing is printed and the run goes on."""
        message: list[bytes] = await sock.recv_multipart()
        return message

    def sent(self, message: list[bytes], result: object) -> None:
        """``message`` was sent; ``result`` is what ``send_multipart`` returned."""

    def written(self, message: list[bytes]) -> None:
        """``message``, the one :meth:`receive` just gave, is written to stdout."""

    async def settle(self, timeout: float) -> str | None:
        """The input is sent and ``--timeout`` was given: wait up to ``timeout`` for what the
        plugin still waits for; a text if it timed out (exit status 2), else None."""
        return None

    def closed(self) -> int:
        """The socket is closed: report what failed (with :class:`CatIO`) and return how many
        failures there were; any makes the exit status 1."""
        return 0


class CatPlugin:
    """An entry point of :data:`GROUP`: the options a package adds to ``zmtp cat``."""

    #: The option strings :meth:`add_arguments` adds (so ``zmtp cat`` knows which of
    #: :data:`EXPECTED` are provided).
    options: tuple[str, ...] = ()

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        """Add the plugin's options (an argument group of its own is clearest in ``--help``)."""

    def activate(self, args: argparse.Namespace, kind: str, io: CatIO) -> CatHooks | None:
        """The parsed command line (``kind`` is the socket type, upper case): the hooks for
        this run if the plugin's options ask for it, else None. Raise :class:`CatError` for
        options that do not fit (a type the plugin does not support...)."""
        return None


@dataclass
class Loaded:
    """The plugins of :data:`GROUP` that loaded, and why the others did not."""

    plugins: dict[str, CatPlugin] = field(default_factory=dict)
    failures: dict[str, str] = field(default_factory=dict)


def load_plugins(group: str = GROUP) -> Loaded:
    """Load every entry point of ``group``. A failure (an import error, not a CatPlugin) is
    recorded, not raised: a broken plugin must not break ``zmtp cat`` itself."""
    loaded = Loaded()
    for point in sorted(entry_points(group=group), key=lambda p: p.name):
        try:
            obj = point.load()
            plugin = obj() if isinstance(obj, type) else obj
            if not isinstance(plugin, CatPlugin):
                raise TypeError(f"{point.value} is not a zmtp.cli.cat_plugins.CatPlugin")
        except Exception as exc:
            loaded.failures[point.name] = f"{type(exc).__name__}: {exc}"
            continue
        loaded.plugins[point.name] = plugin
    return loaded


def add_plugin_arguments(parser: argparse.ArgumentParser, loaded: Loaded) -> None:
    """Let each plugin add its options; then a placeholder for each :data:`EXPECTED` option
    no plugin provides (see :func:`check_missing`)."""
    provided: set[str] = set()
    for name, plugin in list(loaded.plugins.items()):
        try:
            plugin.add_arguments(parser)
        except (argparse.ArgumentError, ValueError, TypeError) as exc:
            loaded.failures[name] = f"its options: {exc}"
            del loaded.plugins[name]
            continue
        provided.update(plugin.options)
    missing = [option for option in EXPECTED if option not in provided]
    if not missing:
        return
    group = parser.add_argument_group("from plugins (none installed provides these)")
    for option in missing:
        group.add_argument(
            option,
            dest=_placeholder(option),
            metavar="VALUE",
            help=f"{EXPECTED[option]}: needs a plugin (docs/cli.md); not available here",
        )


def _placeholder(option: str) -> str:
    return "plugin_missing_" + option.lstrip("-").replace("-", "_")


def check_missing(args: argparse.Namespace, loaded: Loaded) -> None:
    """A :class:`CatError` if the command line used an :data:`EXPECTED` option that no
    plugin provides: what it is, where it comes from, and why it is absent."""
    for option, what in EXPECTED.items():
        if getattr(args, _placeholder(option), None) is None:
            continue
        why = (
            "; ".join(
                f"plugin {name!r} failed to load: {err}" for name, err in loaded.failures.items()
            )
            or f"no installed package registers a plugin in the entry-point group {GROUP!r}"
        )
        raise CatError(
            f"{option} ({what}) is provided by a plugin, and none is available: {why}. The "
            "zmtp distribution registers it when installed (in a source checkout, re-run "
            "pip install -e .)"
        )


def activate(loaded: Loaded, args: argparse.Namespace, kind: str, io: CatIO) -> CatHooks:
    """The hooks of the one plugin that takes part in this run, or the plain defaults."""
    check_missing(args, loaded)
    active = [
        (name, hooks)
        for name, plugin in loaded.plugins.items()
        if (hooks := plugin.activate(args, kind, io)) is not None
    ]
    if len(active) > 1:
        names = ", ".join(name for name, _ in active)
        raise CatError(f"options of several plugins cannot be combined in one run: {names}")
    return active[0][1] if active else CatHooks()


def warn(text: str) -> None:
    print(f"zmtp cat: {text}", file=sys.stderr, flush=True)


__all__ = [
    "EXPECTED",
    "GROUP",
    "CatError",
    "CatHooks",
    "CatIO",
    "CatPlugin",
    "Loaded",
    "activate",
    "add_plugin_arguments",
    "check_missing",
    "load_plugins",
]
