"""The QoS configuration (docs/qos-protocol.md §5.5 defaults)."""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass

from zmtp.options import MILLISECONDS_LOOK

#: The knobs in seconds (checked for pyzmq-style milliseconds).
TIME_KNOBS = (
    "dead_letter_timeout",
    "dedup_ttl",
    "backoff_base",
    "backoff_max",
    "processing_timeout",
)


@dataclass(frozen=True)
class QoSConfig:
    """Knobs of the QoS layer; the defaults are the spec's.

    The in-flight cap is the socket's ``send_hwm`` and the dedup capacity its ``recv_hwm``.
    """

    #: Level 2/3 sender: a disconnected peer's messages are dead-lettered after this (s).
    dead_letter_timeout: float = 60.0
    #: Receiver: how long a digest stays in the dedup set (s); should exceed the sender's
    #: ``dead_letter_timeout``.
    dedup_ttl: float = 60.0
    #: Level 3 sender: retries after the first attempt for a retryable NACK (the reference
    #: counts total attempts instead: its 2 is our 1).
    max_retries: int = 3
    #: Level 3 back-off: ``min(backoff_base * 2**k, backoff_max)`` before retry k+1.
    backoff_base: float = 0.1
    backoff_max: float = 10.0
    #: Level 3 receiver: no verdict within this (s) -> NACK 0x81. None: wait for ever.
    processing_timeout: float | None = None

    def __post_init__(self) -> None:
        for name in ("dead_letter_timeout", "dedup_ttl", "backoff_base", "backoff_max"):
            value = getattr(self, name)
            if not (value > 0 and math.isfinite(value)):
                raise ValueError(f"{name} must be a positive number of seconds, not {value!r}")
        if self.backoff_max < self.backoff_base:
            raise ValueError("backoff_max must be at least backoff_base")
        if not isinstance(self.max_retries, int) or self.max_retries < 0:
            raise ValueError(f"max_retries must be a non-negative int, not {self.max_retries!r}")
        pt = self.processing_timeout
        if pt is not None and not (pt > 0 and math.isfinite(pt)):
            raise ValueError(f"processing_timeout must be positive seconds or None, not {pt!r}")
        for name in TIME_KNOBS:
            _warn_if_milliseconds(name, getattr(self, name))


def _warn_if_milliseconds(name: str, value: object) -> None:
    """Warn when a knob looks like pyzmq's milliseconds (an int of 1000 or more), as zmtp does
    for its time options (docs/from-pyzmq.md, Units): ``dead_letter_timeout=60000`` is 16.7
    hours here, not a minute. The value is still used as seconds; a float says "I mean it"."""
    if type(value) is int and value >= MILLISECONDS_LOOK:
        warnings.warn(
            f"QoSConfig({name}={value}) is {value} seconds (times are seconds, not pyzmq's "
            f"milliseconds): did you mean {name}={value / 1000:g}? Write {float(value)} to "
            "keep the long time without this warning.",
            UserWarning,
            stacklevel=4,
        )


def backoff_delay(retries_made: int, base: float, maximum: float) -> float:
    """The delay before the next retry of a retryable NACK: ``min(base * 2**k, maximum)``."""
    if retries_made < 0:
        raise ValueError("retries_made must be >= 0")
    if retries_made > 64:  # 2**k overflows nothing in Python, but keep the float finite
        return maximum
    delay: float = base * float(2**retries_made)
    return min(delay, maximum)
