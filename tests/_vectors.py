"""Locate and load the shared known-answer vectors (``../shared/vectors`` beside the repo)."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

VECTORS_DIR = Path(__file__).resolve().parent.parent.parent / "shared" / "vectors"


@cache
def load(name: str) -> Any:
    """Load ``name`` (e.g. ``"crypto.json"``) from the shared vectors directory."""
    path = VECTORS_DIR / name
    if not path.exists():  # fail loudly: a missing vector file must never skip tests silently
        raise FileNotFoundError(f"shared test vectors not found at {path}")
    return json.loads(path.read_text())
