"""Shared fixtures: every async test runs on both anyio backends (asyncio and trio).

Every module of ``zmtp`` and ``zmtp_qos`` is imported here, when pytest loads this file, on a
shallow stack. zmtp is a pytest plugin (its ``pytest11`` entry point), so pytest rewrites the
asserts of every module of its distribution as the module is first imported, and the library
imports many modules lazily (a socket type's routing strategy on its first socket, the CLI's
subcommands, ...). A first import deep inside a test's coroutine stack made CPython 3.11's AST
constructor fail now and then with ``SystemError: AST constructor recursion depth mismatch``
(CPython gh-106905: the rewrite hit the recursion limit, and an error path forgot to restore the
depth), failing whichever test happened to import the module first. Imported here, each module
is rewritten once, at the top of the stack. Lazy imports themselves are tested in fresh
interpreters (tests/test_import_lazy.py), which this does not touch.
"""

from __future__ import annotations

import importlib
import pkgutil

import pytest

import zmtp
import zmtp_qos


def _import_every_module() -> None:
    for package in (zmtp, zmtp_qos):
        prefix = package.__name__ + "."
        for module in pkgutil.walk_packages(package.__path__, prefix):
            if not module.name.endswith(".__main__"):  # running it would start the CLI
                importlib.import_module(module.name)


_import_every_module()


@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend(request: pytest.FixtureRequest) -> str:
    """Parametrize every ``@pytest.mark.anyio`` test over asyncio and trio."""
    return str(request.param)
