"""Machine-readable reports of an interop run: JSON (one record per row and backend) and a
markdown table, written by ``zmtp interop --json PATH`` / ``--markdown PATH``.

A record names the row (``case``, ``variant``), where it ran (``backend``, ``transport``), the
roles (which zmtp and libzmq socket types, who bound and who connected, the way the checks look:
``flow``), the ``outcome`` (``PASS``, ``FAIL``, ``SKIP``), the ``seconds`` it took, and its
``detail``: what a passing row checked, or why a row failed or was skipped (``reason`` repeats
it for rows that did not pass, so a consumer can filter on it).
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .registry import Case
from .runner import Result, RunInfo

#: A row name: zmtp's type, an arrow, libzmq's type, an optional ``[variant]``.
_NAME = re.compile(r"^(?P<ours>[A-Z]+)(?:->|<-|<->)(?P<theirs>[A-Z]+)(?:\[(?P<variant>[^]]+)\])?$")


def roles(case: Case) -> dict[str, str | None]:
    """The socket types on each side (from the row's name) and who bound and who connected."""
    match = _NAME.match(case.name)
    other = "libzmq" if case.binds == "zmtp" else "zmtp"
    return {
        "zmtp": match["ours"] if match else None,
        "libzmq": match["theirs"] if match else None,
        "binds": case.binds,
        "connects": other,
    }


def record(result: Result) -> dict[str, Any]:
    """One row on one backend, as a JSON-ready dict."""
    case = result.case
    match = _NAME.match(case.name)
    return {
        "case": case.name,
        "variant": match["variant"] if match else None,
        "backend": result.backend,
        "transport": case.transport,
        "flow": case.flow,
        "binds": case.binds,
        "roles": roles(case),
        "outcome": result.status,
        "seconds": round(result.seconds, 4),
        "detail": result.detail,
        "reason": None if result.status == "PASS" else result.detail,
    }


def totals(results: Sequence[Result]) -> dict[str, int]:
    return {
        "rows": len(results),
        "passed": sum(r.status == "PASS" for r in results),
        "failed": sum(r.status == "FAIL" for r in results),
        "skipped": sum(r.status == "SKIP" for r in results),
    }


def json_report(info: RunInfo, results: Sequence[Result]) -> str:
    document = {
        "zmtp": info.zmtp,
        "libzmq": info.libzmq,
        "pyzmq": info.pyzmq,
        "backends": info.backends,
        "transports": info.transports,
        "pattern": info.pattern,
        "started": info.started,
        "seconds": round(info.seconds, 3),
        "complete": info.complete,
        "interrupted": info.interrupted,
        "totals": totals(results),
        "rows": [record(r) for r in results],
    }
    return json.dumps(document, indent=2) + "\n"


def _cell(text: str) -> str:
    """Markdown table cell: pipes escaped, one line."""
    return " ".join(text.split()).replace("|", "\\|")


def markdown_report(info: RunInfo, results: Sequence[Result]) -> str:
    count = totals(results)
    verdict = "FAILED" if count["failed"] or not info.complete else "OK"
    lines = [
        f"# zmtp {info.zmtp} interop check against libzmq {info.libzmq}",
        "",
        f"pyzmq {info.pyzmq}; backends {', '.join(info.backends)}; transports "
        f"{', '.join(info.transports)}"
        + (f"; rows matching `{info.pattern}`" if info.pattern else "")
        + f"; started {info.started}.",
        "",
        f"**{verdict}**: {count['rows']} rows, {count['passed']} passed, {count['failed']} "
        f"failed, {count['skipped']} skipped in {info.seconds:.1f}s"
        + (
            ""
            if info.complete
            else " (interrupted: Ctrl-C)"
            if info.interrupted
            else " (ended by the watchdog: a row hung)"
        )
        + ".",
        "",
        "| case | backend | transport | zmtp | libzmq | binds | flow | outcome | time | detail |",
        "|---|---|---|---|---|---|---|---|---:|---|",
    ]
    for result in results:
        r = record(result)
        role = r["roles"]
        cells = [
            f"`{r['case']}`",
            r["backend"],
            r["transport"],
            role["zmtp"] or "",
            role["libzmq"] or "",
            r["binds"],
            r["flow"],
            r["outcome"],
            f"{result.seconds:.2f}s",
            result.detail,
        ]
        lines.append("| " + " | ".join(_cell(c) for c in cells) + " |")
    return "\n".join(lines) + "\n"


def write(path: str | Path, text: str) -> None:
    """Write a report whole (to ``PATH.tmp`` then renamed): a reader never sees half of one."""
    target = Path(path)
    temporary = target.with_name(target.name + ".tmp")
    temporary.write_text(text)
    temporary.replace(target)
