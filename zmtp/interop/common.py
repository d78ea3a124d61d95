"""What every part of the interop check shares: the matrix's dimensions and defaults, the
message type, the two exceptions a row can end with, and one-line failure reasons."""

from __future__ import annotations

from types import ModuleType

BACKENDS = ("asyncio", "trio")
TRANSPORTS = ("tcp", "ipc")
BINDERS = ("zmtp", "libzmq")
FLOWS = ("zmtp->libzmq", "libzmq->zmtp", "both")
#: Default per-row timeout (seconds); one libzmq or zmtp operation gets half of it.
DEFAULT_TIMEOUT = 10.0
#: Numbered messages sent after the fixed samples to check ordering.
DEFAULT_COUNT = 1000
ONE_MIB = 1 << 20
#: Topic of the numbered probes of :func:`probe_until_received`.
PROBE = b"probe"

Message = list[bytes]


class InteropUnavailable(RuntimeError):
    """The check cannot run here (pyzmq or a backend missing)."""


class CaseFailed(AssertionError):
    """A check in a case failed; the message is the row's one-line reason."""


def import_zmq() -> ModuleType:
    """pyzmq, imported on first use so that ``zmtp`` itself never needs it."""
    try:
        import zmq
    except ImportError:
        raise InteropUnavailable(
            "pyzmq is required for the interop check: pip install 'zmtp[test]'"
        ) from None
    return zmq


def one_line(text: str, limit: int = 160) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def leaf_exception(exc: BaseException) -> BaseException:
    """The first meaningful exception inside (nested) exception groups."""
    while True:
        inner = getattr(exc, "exceptions", None)
        if not inner:
            return exc
        # Cancellation exceptions (asyncio's, trio's) are BaseExceptions: prefer a real error.
        exc = next((e for e in inner if isinstance(e, Exception)), inner[0])


def describe_exception(exc: BaseException) -> str:
    exc = leaf_exception(exc)
    if isinstance(exc, CaseFailed):
        return one_line(str(exc))
    text = str(exc)
    return one_line(f"{type(exc).__name__}: {text}" if text else type(exc).__name__)
