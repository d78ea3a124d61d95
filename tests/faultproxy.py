"""Deprecated shim: the fault-injecting proxy is public as :class:`zmtp.testing.FaultProxy`
(docs/testing.md). This keeps the old import path (``from tests.faultproxy import
FaultProxy``) working for tests written against it; new tests import from ``zmtp.testing``."""

from __future__ import annotations

from zmtp.testing.faultproxy import FaultProxy

__all__ = ["FaultProxy"]
