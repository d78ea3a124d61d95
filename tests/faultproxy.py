"""The fault-injecting proxy lives in :mod:`zmtp.testing` now; this keeps the old import path
(``from tests.faultproxy import FaultProxy``) working for tests written against it."""

from __future__ import annotations

from zmtp.testing.faultproxy import FaultProxy

__all__ = ["FaultProxy"]
