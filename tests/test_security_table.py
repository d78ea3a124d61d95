"""docs/security.md's table of hostile inputs names, for each row, the tests that cover it:
each named test file and test function must exist (a renamed test would leave the table lying)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "security.md"


def table_rows() -> list[tuple[str, str]]:
    """(input, test cell) of each row of the "Hostile inputs tried" table."""
    text = DOC.read_text()
    section = text.split("### Hostile inputs tried", 1)[1].split("\n### ", 1)[0]
    rows = []
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 4 and cells[0] not in ("Input", "---"):
            rows.append((cells[0], cells[3]))
    return rows


def named_tests(cell: str) -> list[tuple[str, str | None]]:
    """(file, test or None) for every code span of a test cell; ``::name`` reuses the file."""
    out: list[tuple[str, str | None]] = []
    current = ""
    for span in re.findall(r"`([^`]+)`", cell):
        if span.startswith("::"):
            out.append((current, span[2:]))
            continue
        path, _, test = span.partition("::")
        if not path.endswith(".py") and not path.endswith("/"):
            continue
        current = path if "/" in path else f"tests/{path}"
        out.append((current, test or None))
    return out


def defined_functions(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    return {
        node.name
        for node in ast.walk(tree)
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
    }


def test_every_row_names_a_test_that_exists() -> None:
    rows = table_rows()
    assert len(rows) >= 20, rows
    missing = []
    for what, cell in rows:
        names = named_tests(cell)
        if not names:
            assert "kernel" in cell, f"row {what!r} names no test"  # the one row of the OS's
            continue
        for file, test in names:
            path = ROOT / file
            if not path.exists():
                missing.append(f"{what}: {file}")
            elif test is not None and path.is_file() and test not in defined_functions(path):
                missing.append(f"{what}: {file}::{test}")
    assert missing == []
    assert sum(len(named_tests(cell)) for _, cell in rows) >= 30  # the parsing found them


def test_the_libzmq_column_says_which_rows_were_measured() -> None:
    """Measured against libzmq only for issue 14's six findings; the header says so and each
    finding is marked in its rows."""
    section = DOC.read_text().split("### Hostile inputs tried", 1)[1]
    header = section.split("\n|---", 1)[0].rsplit("\n", 1)[1]
    assert 'measured only in the rows marked "(finding N)"' in header, header
    assert "source" in header
    marked = " ".join(what for what, _ in table_rows())
    assert all(f"(finding {n})" in marked for n in range(1, 7)), marked
