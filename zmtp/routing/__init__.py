"""Routing strategies: one per socket type, built from shared mixins."""

from __future__ import annotations

from .base import RoutingStrategy
from .pair import Pair
from .push_pull import Pull, Push

STRATEGIES: dict[str, type[RoutingStrategy]] = {cls.socket_type: cls for cls in (Push, Pull, Pair)}

__all__ = ["STRATEGIES", "RoutingStrategy"]
