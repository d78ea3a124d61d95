"""Shared fixtures: every async test runs on both anyio backends (asyncio and trio)."""

from __future__ import annotations

import pytest


@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend(request: pytest.FixtureRequest) -> str:
    """Parametrize every ``@pytest.mark.anyio`` test over asyncio and trio."""
    return str(request.param)
