"""Load the known-answer vectors kept in the repository (``tests/vectors/``; see its README)."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

VECTORS_DIR = Path(__file__).resolve().parent / "vectors"


@cache
def load(name: str) -> Any:
    """Load ``name`` (e.g. ``"crypto.json"``) from ``tests/vectors/``."""
    path = VECTORS_DIR / name
    if not path.exists():  # fail loudly: a missing vector file must never skip tests silently
        raise FileNotFoundError(
            f"test vectors not found at {path} (they are tracked in the repository)"
        )
    return json.loads(path.read_text())
