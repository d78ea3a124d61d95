"""Routing strategies: one per socket type, built from shared mixins."""

from __future__ import annotations

import importlib
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING

from .base import RoutingStrategy

if TYPE_CHECKING:
    from .channel import Channel as Channel
    from .client_server import Client as Client
    from .client_server import Server as Server
    from .dealer_router import Dealer as Dealer
    from .dealer_router import Router as Router
    from .pair import Pair as Pair
    from .peer import Peer as Peer
    from .pubsub import Pub as Pub
    from .pubsub import Sub as Sub
    from .push_pull import Pull as Pull
    from .push_pull import Push as Push
    from .radio_dish import Dish as Dish
    from .radio_dish import Radio as Radio
    from .req_rep import Rep as Rep
    from .req_rep import Req as Req
    from .scatter_gather import Gather as Gather
    from .scatter_gather import Scatter as Scatter
    from .xpubsub import XPub as XPub
    from .xpubsub import XSub as XSub

#: socket type -> (module, class). A socket imports only its own strategy's module: loading all
#: nineteen costs ~15 ms of ``import zmtp`` (docs/performance.md, import row).
_WHERE: dict[str, tuple[str, str]] = {
    "PUSH": (".push_pull", "Push"),
    "PULL": (".push_pull", "Pull"),
    "PAIR": (".pair", "Pair"),
    "REQ": (".req_rep", "Req"),
    "REP": (".req_rep", "Rep"),
    "DEALER": (".dealer_router", "Dealer"),
    "ROUTER": (".dealer_router", "Router"),
    "PUB": (".pubsub", "Pub"),
    "SUB": (".pubsub", "Sub"),
    "XPUB": (".xpubsub", "XPub"),
    "XSUB": (".xpubsub", "XSub"),
    "CLIENT": (".client_server", "Client"),
    "SERVER": (".client_server", "Server"),
    "RADIO": (".radio_dish", "Radio"),
    "DISH": (".radio_dish", "Dish"),
    "SCATTER": (".scatter_gather", "Scatter"),
    "GATHER": (".scatter_gather", "Gather"),
    "PEER": (".peer", "Peer"),
    "CHANNEL": (".channel", "Channel"),
}


class LazyStrategies(Mapping[str, "type[RoutingStrategy]"]):
    """Socket type name -> strategy class, importing a strategy's module on first lookup."""

    def __init__(self, where: Mapping[str, tuple[str, str]]) -> None:
        self._where = dict(where)
        self._loaded: dict[str, type[RoutingStrategy]] = {}

    def __getitem__(self, socket_type: str) -> type[RoutingStrategy]:
        cls = self._loaded.get(socket_type)
        if cls is None:
            module, name = self._where[socket_type]  # KeyError: not a socket type
            cls = getattr(importlib.import_module(module, __name__), name)
            assert isinstance(cls, type) and issubclass(cls, RoutingStrategy)
            self._loaded[socket_type] = cls
        return cls

    def __iter__(self) -> Iterator[str]:
        return iter(self._where)

    def __len__(self) -> int:
        return len(self._where)

    def __contains__(self, socket_type: object) -> bool:
        return socket_type in self._where


STRATEGIES: Mapping[str, type[RoutingStrategy]] = LazyStrategies(_WHERE)


def strategy_named(name: str) -> type[RoutingStrategy]:
    """The strategy class called ``name`` (``"Push"``), imported on first use."""
    for socket_type, (_, class_name) in _WHERE.items():
        if class_name == name:
            return STRATEGIES[socket_type]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


if not TYPE_CHECKING:  # hidden from mypy: a module __getattr__ would make every typo "Any"
    __getattr__ = strategy_named  # zmtp.routing.Push, as when this module imported them all


__all__ = ["STRATEGIES", "RoutingStrategy"]
