"""pytest fixtures to import explicitly, without turning the plugin on
(``from zmtp.testing.fixtures import libzmq_env  # noqa: F401`` in a test module).

* ``lz`` (the function ``libzmq_env``): a :class:`zmtp.interop.Libzmq` whose every pyzmq
  operation raises ``TimeoutError`` after :data:`OP_TIMEOUT`; all its sockets closed with
  linger 0 after the test.

:data:`TEST_TIMEOUT` is a bound for a whole interop test body (``anyio.fail_after``).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from ..interop import Libzmq

#: Seconds one pyzmq operation may take before it raises TimeoutError.
OP_TIMEOUT = 5.0
#: Upper bound, in seconds, for a whole interop test body.
TEST_TIMEOUT = 15.0


@pytest.fixture(name="lz")
def libzmq_env() -> Iterator[Libzmq]:
    """A pyzmq context for one test; every socket closed with linger 0 afterwards."""
    with Libzmq(timeout=OP_TIMEOUT) as env:
        yield env


__all__ = ["OP_TIMEOUT", "TEST_TIMEOUT", "libzmq_env"]
