"""Package attributes resolved on first use (PEP 562), so importing a package stays cheap.

``import zmtp`` must not pay for what a plain async socket never touches (CURVE crypto and the
``cryptography`` package, certificate files, the authenticator, Context, Poller, the blocking
API, the CLI, the test helpers): docs/performance.md keeps the import-time row. A package's
``__init__`` lists its lazy names in a table (name -> submodule); the first ``pkg.Name`` or
``from pkg import Name`` imports that submodule and caches the value in the package namespace,
so later lookups are plain attribute reads. ``dir(pkg)`` lists the lazy names too. The type
checker sees them through ``if TYPE_CHECKING:`` imports beside the table.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any


def lazy_attributes(
    package: str,
    namespace: dict[str, Any],
    table: Mapping[str, str],
    submodules: tuple[str, ...] = (),
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """``(__getattr__, __dir__)`` for ``package`` whose lazy names map to submodules.

    ``table`` maps each lazy attribute to the module that defines it, relative to ``package``
    (``".auth"``) or absolute; the attribute has the same name there. ``submodules`` are
    subpackages that an eager ``__init__`` used to import as a side effect: ``pkg.sub`` keeps
    working after a bare ``import pkg``, importing ``pkg.sub`` on first use.
    """

    def __getattr__(name: str) -> Any:
        if name in submodules:
            return importlib.import_module(f"{package}.{name}")  # binds namespace[name] too
        module_name = table.get(name)
        if module_name is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module_name, package), name)
        namespace[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted({*namespace, *table, *submodules})

    return __getattr__, __dir__
