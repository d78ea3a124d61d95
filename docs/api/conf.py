"""Sphinx configuration of the API reference (built by .ci/docs; fails on broken references).

Only the public API is documented; its docstrings are reStructuredText (``code``,
:class:`refs`). ``nitpicky`` turns every reference that does not resolve into a warning and
``-W`` (in .ci/docs) into an error. Types from outside the package (anyio, the standard
library) cannot be linked without fetching other projects' inventories, which the build must
not need, so they are listed in ``nitpick_ignore_regex``.
"""

from __future__ import annotations

project = "zmtp"
extensions = ["sphinx.ext.autodoc"]
autodoc_member_order = "bysource"
autodoc_typehints = "description"
autodoc_default_options = {"members": True, "show-inheritance": True}
nitpicky = True
nitpick_ignore_regex = [
    # The standard library, anyio and builtins: no inventory (no network in the build).
    (r"py:.*", r"(anyio|asyncio|collections|contextlib|enum|os|pickle|threading|types|typing)\..*"),
    (r"py:.*", r"(Any|Callable|Iterable|Iterator|AsyncIterator|Mapping|Sequence|Awaitable)"),
    (r"py:class", r"(bytes|bytearray|memoryview|str|int|float|bool|list|tuple|dict|set|object)"),
    (r"py:class", r"(Exception|ValueError|TypeError|TimeoutError|RuntimeError|OSError)"),
    (r"py:class", r"(os\.PathLike|PathLike|Path|pathlib\.Path)"),
    (r"py:.*", r"(None|NoneType|optional|default|TracebackType|BaseException)"),
    (r"py:class", r"(_\w+|.*\._\w+)"),  # private helper types in signatures
    # Aliases in signatures: zmtp.sync imports zmtp.Monitor as AsyncMonitor (its own Monitor
    # is the blocking twin); AuthCallback is a typing alias of an async callable.
    (r"py:class", r"(AsyncMonitor|AuthCallback)"),
    # Engine internals named in Pipe's fields: Message is list[bytes]; the others are not API.
    (r"py:class", r"(Message|StreamConnection|PipeClosed)"),
    (r"py:meth", r"StreamConnection\..*"),
    # Wire-level types and engine contracts named by the extension hooks and the engine core's
    # docstrings (docs/extensions.md describes them); not part of the reference.
    (r"py:class", r"zmtp\.protocol\.frames\.(Command|EncodedMessage)"),
    (r"py:meth", r"(Pipe\.send_command_frames|zmtp\.routing\.base\.RoutingHost\..*)"),
    # anyio's task group in the engine core's fields (anyio has no inventory here either).
    (r"py:class", r"TaskGroup"),
    # Type variables of generic classes (``Registrations[S]``) have no page of their own.
    (r"py:(class|obj)", r"(.*\.)?[A-Z]"),
]
html_theme = "alabaster"
