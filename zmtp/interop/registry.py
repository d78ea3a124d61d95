"""Rows and the registry they are chosen from: a case function becomes one row per transport x
binder; :data:`REGISTRY` holds the built-in rows (:mod:`zmtp.interop.rows`)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..routing import STRATEGIES
from .common import BINDERS, FLOWS, TRANSPORTS

if TYPE_CHECKING:
    from .context import CaseContext


CaseFunc = Callable[["CaseContext"], Awaitable[str | None]]


@dataclass(frozen=True)
class Case:
    """One row of the matrix (run once per backend)."""

    name: str  #: the socket pair, ours first: "PUSH->PULL" is a zmtp PUSH and a libzmq PULL
    transport: str
    binds: str  #: "zmtp" or "libzmq"
    flow: str  #: "zmtp->libzmq", "libzmq->zmtp" or "both"
    func: CaseFunc
    requires: tuple[str, ...] = ()
    timeout: float | None = None

    @property
    def label(self) -> str:
        return f"{self.name} {self.transport} {self.flow} {self.binds}-binds"

    def missing(self) -> list[str]:
        return [t for t in self.requires if t.upper() not in STRATEGIES]


class Registry:
    """The cases a run chooses from, in registration order."""

    def __init__(self) -> None:
        self._cases: list[Case] = []

    def add(self, case: Case) -> Case:
        if case.transport not in TRANSPORTS:
            raise ValueError(f"unknown transport {case.transport!r}")
        if case.binds not in BINDERS:
            raise ValueError(f"binds must be one of {BINDERS}")
        if case.flow not in FLOWS:
            raise ValueError(f"flow must be one of {FLOWS}")
        if any(c.label == case.label for c in self._cases):
            raise ValueError(f"case {case.label!r} is already registered")
        self._cases.append(case)
        return case

    def register(
        self,
        name: str,
        *,
        flow: str,
        transports: Sequence[str] = TRANSPORTS,
        binds: Sequence[str] = BINDERS,
        requires: Sequence[str] = (),
        timeout: float | None = None,
    ) -> Callable[[CaseFunc], CaseFunc]:
        """Decorator: one row per transport x binder for ``func``."""

        def decorator(func: CaseFunc) -> CaseFunc:
            for transport in transports:
                for binder in binds:
                    self.add(Case(name, transport, binder, flow, func, tuple(requires), timeout))
            return func

        return decorator

    def unregister(self, name: str) -> int:
        """Remove every row named ``name``; returns how many."""
        before = len(self._cases)
        self._cases = [c for c in self._cases if c.name != name]
        return before - len(self._cases)

    def select(self, transports: Sequence[str] = TRANSPORTS, pattern: str = "") -> list[Case]:
        """Rows for these transports whose label contains ``pattern`` (case-insensitive)."""
        needle = pattern.lower()
        return [c for c in self._cases if c.transport in transports and needle in c.label.lower()]

    def __iter__(self) -> Iterator[Case]:
        return iter(list(self._cases))

    def __len__(self) -> int:
        return len(self._cases)


#: The built-in rows.
REGISTRY = Registry()
register = REGISTRY.register
