"""NACK codes (docs/qos-protocol.md §4.1) and the exceptions a level-3 handler raises to choose one.

Bit 7 (0x80) marks a retryable failure; a sender goes by that bit for codes it does not know.
"""

from __future__ import annotations

TIMEOUT = 0x81
BAD_INPUT = 0x02
INTERNAL = 0x83
OVERLOADED = 0x84
REJECTED = 0x05

RETRYABLE_BIT = 0x80
MAX_NACK_TEXT = 65535

CODE_NAMES = {
    TIMEOUT: "TIMEOUT",
    BAD_INPUT: "BAD_INPUT",
    INTERNAL: "INTERNAL",
    OVERLOADED: "OVERLOADED",
    REJECTED: "REJECTED",
}


def is_retryable(code: int) -> bool:
    """Whether a NACK with ``code`` may be retried (bit 7), known code or not."""
    return bool(code & RETRYABLE_BIT)


def code_name(code: int) -> str:
    """A readable name, e.g. ``"OVERLOADED"`` or ``"0x9f (retryable)"``."""
    if code in CODE_NAMES:
        return CODE_NAMES[code]
    return f"0x{code:02x} ({'retryable' if is_retryable(code) else 'terminal'})"


def cut_text(text: str, limit: int = MAX_NACK_TEXT) -> bytes:
    """``text`` as UTF-8, cut to at most ``limit`` bytes on a character boundary."""
    data = text.encode("utf-8", errors="replace")
    if len(data) <= limit:
        return data
    return data[:limit].decode("utf-8", errors="ignore").encode("utf-8")


class ProcessingError(Exception):
    """Base of the errors a level-3 handler raises to fail a message with a given code.

    Any other exception maps to INTERNAL (0x83, retryable).
    """

    code = INTERNAL


class ProcessingTimeout(ProcessingError):
    """Processing took too long (0x81, retryable); also sent when ``processing_timeout`` ends."""

    code = TIMEOUT


class BadInput(ProcessingError):
    """The message itself is wrong; retrying cannot help (0x02, terminal)."""

    code = BAD_INPUT


class InternalError(ProcessingError):
    """The handler failed for a reason of its own (0x83, retryable)."""

    code = INTERNAL


class Overloaded(ProcessingError):
    """The receiver is busy; try again later (0x84, retryable)."""

    code = OVERLOADED


class Rejected(ProcessingError):
    """The receiver refuses the message by policy (0x05, terminal)."""

    code = REJECTED


def code_for_exception(exc: BaseException) -> int:
    """The NACK code for a handler's exception (docs/qos-protocol.md §4.1)."""
    if isinstance(exc, ProcessingError):
        return exc.code
    if isinstance(exc, TimeoutError):
        return TIMEOUT
    return INTERNAL
