"""Routing strategies: one per socket type, built from shared mixins."""

from __future__ import annotations

from .base import RoutingStrategy
from .channel import Channel
from .client_server import Client, Server
from .dealer_router import Dealer, Router
from .pair import Pair
from .peer import Peer
from .pubsub import Pub, Sub
from .push_pull import Pull, Push
from .radio_dish import Dish, Radio
from .req_rep import Rep, Req
from .scatter_gather import Gather, Scatter
from .xpubsub import XPub, XSub

STRATEGIES: dict[str, type[RoutingStrategy]] = {
    cls.socket_type: cls
    for cls in (
        Push,
        Pull,
        Pair,
        Req,
        Rep,
        Dealer,
        Router,
        Pub,
        Sub,
        XPub,
        XSub,
        Client,
        Server,
        Radio,
        Dish,
        Scatter,
        Gather,
        Peer,
        Channel,
    )
}

__all__ = ["STRATEGIES", "RoutingStrategy"]
