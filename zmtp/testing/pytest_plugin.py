"""The opt-in pytest plugin of :mod:`zmtp.testing`.

Installed with zmtp as the ``zmtp`` entry point, it does nothing until a project turns it on,
with ``zmtp_testing = true`` in its pytest ini options or ``--zmtp-testing`` on the command
line. Then it provides:

* the marker ``zmtp_both_backends``: the test runs once on asyncio and once on trio (it gets
  the ``anyio_backend`` fixture parametrized, and the anyio marker);
* the fixture ``fault_proxy``: :class:`~zmtp.testing.FaultProxy`, to use as
  ``async with fault_proxy(host, port) as proxy``;
* the fixture ``libzmq``: a :class:`zmtp.interop.Libzmq` (pyzmq context whose sockets are
  driven from worker threads), closed when the test ends; skipped with a reason if pyzmq is
  missing.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from .faultproxy import FaultProxy

MARKER = "zmtp_both_backends"


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--zmtp-testing", action="store_true", help="turn on zmtp.testing's fixtures and marker"
    )
    parser.addini("zmtp_testing", "turn on zmtp.testing's fixtures and marker", type="bool")


class Fixtures:
    """Registered only when the plugin is turned on."""

    @pytest.fixture
    def fault_proxy(self) -> type[FaultProxy]:
        """:class:`~zmtp.testing.FaultProxy`: ``async with fault_proxy(host, port) as proxy``
        (a plain fixture: an async one would interfere with anyio's backend parametrization)."""
        return FaultProxy

    @pytest.fixture
    def libzmq(self) -> Iterator[Any]:
        pytest.importorskip("zmq", reason="the libzmq fixture needs pyzmq")
        from ..interop import Libzmq

        with Libzmq() as context:
            yield context


def enabled(config: pytest.Config) -> bool:
    return bool(config.getoption("zmtp_testing", default=False) or config.getini("zmtp_testing"))


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", f"{MARKER}: run this test on asyncio and on trio (zmtp.testing)"
    )
    if enabled(config):
        config.pluginmanager.register(Fixtures(), "zmtp-testing-fixtures")


@pytest.hookimpl(tryfirst=True)  # before pytest parametrizes a fixture that has params itself
def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if not enabled(metafunc.config) or metafunc.definition.get_closest_marker(MARKER) is None:
        return
    if "anyio_backend" in metafunc.fixturenames:
        metafunc.parametrize("anyio_backend", ["asyncio", "trio"])
    # else the anyio marker added below makes anyio's plugin run it on each backend


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if not enabled(config):
        return
    for item in items:
        if item.get_closest_marker(MARKER) is not None:
            item.add_marker(pytest.mark.anyio)
