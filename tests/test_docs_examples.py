"""Every Python code block in README.md and docs/*.md runs as printed, on asyncio and on trio.

The convention for documentation examples (contributors: this is what this test holds you to):

* Each ```` ```python ```` block is a complete program: its own imports, an ``async def main()``
  ended by ``anyio.run(main)`` with no backend argument (this test runs the block once on asyncio
  and once on trio), ephemeral endpoints (``tcp://127.0.0.1:*``, a bind's return value for the
  connect, ipc paths in a fresh temporary directory) and it ends by itself within a few seconds.
  Blocking examples without anyio are fine too. No names from an earlier block.
* A trailing comment on a ``print(...)`` line is the exact text that print writes; those prints
  are checked, in order (each must run, in the order of the block). A comment that starts with
  ``e.g.`` or contains ``...`` is a description, not checked.
* A block that is deliberately a fragment has the line ``<!-- fragment -->`` right before its
  opening fence. It is reported as a skipped test naming its file and line; keep those rare.
* Every fenced block names its language. ```` ```sh ```` (and any other non-Python language)
  is not run.

Each block is written to a file and run in a subprocess by ``tests/_doc_example_runner.py``,
which makes ``anyio.run`` use the backend under test and records what each ``print`` of the
block wrote. Test ids name the document and the line of the opening fence
(``README.md:28-trio``), so a failure points at the text to fix; the message carries the block's
stderr.
"""

from __future__ import annotations

import ast
import io
import json
import re
import subprocess
import sys
import tokenize
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
RUNNER = Path(__file__).resolve().parent / "_doc_example_runner.py"
DOCUMENTS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
PYTHON_LANGUAGES = {"python", "py", "python3"}
FRAGMENT_MARKER = "<!-- fragment -->"
BACKENDS = ("asyncio", "trio")
#: Generous: the examples end within a few seconds, but the machine may be busy.
RUN_TIMEOUT = 60.0

_FENCE = re.compile(r"^(?P<indent>[ \t]*)(?P<fence>`{3,}|~{3,})(?P<info>.*)$")
_FIXED_PORT = re.compile(r"\b(?:tcp|udp)://[^\s'\"]*:(?P<port>\d+)\b")


@dataclass(frozen=True)
class Block:
    """One fenced code block of a document."""

    document: Path
    line: int  # 1-based line of the opening fence
    language: str
    source: str
    fragment: bool

    @property
    def where(self) -> str:
        return f"{self.document.relative_to(ROOT).as_posix()}:{self.line}"


def fenced_blocks(document: Path) -> list[Block]:
    """Every fenced block of ``document`` (indented fences too, e.g. inside a list)."""
    lines = document.read_text(encoding="utf-8").splitlines()
    blocks: list[Block] = []
    index = 0
    while index < len(lines):
        opening = _FENCE.match(lines[index])
        if opening is None:
            index += 1
            continue
        indent, fence = opening["indent"], opening["fence"]
        language = opening["info"].strip().split(" ")[0].lower()
        before = [line.strip() for line in lines[:index] if line.strip()]
        start = index
        body: list[str] = []
        index += 1
        while index < len(lines) and not (
            lines[index].strip().startswith(fence) and lines[index].strip().strip(fence[0]) == ""
        ):
            line = lines[index]
            body.append(line[len(indent) :] if line.startswith(indent) else line.lstrip())
            index += 1
        blocks.append(
            Block(
                document=document,
                line=start + 1,
                language=language,
                source="\n".join(body) + "\n",
                fragment=bool(before) and before[-1] == FRAGMENT_MARKER,
            )
        )
        index += 1  # past the closing fence
    return blocks


ALL_BLOCKS = [block for document in DOCUMENTS for block in fenced_blocks(document)]
PYTHON_BLOCKS = [block for block in ALL_BLOCKS if block.language in PYTHON_LANGUAGES]
RUNNABLE = [block for block in PYTHON_BLOCKS if not block.fragment]
FRAGMENTS = [block for block in PYTHON_BLOCKS if block.fragment]


def expected_prints(source: str) -> list[tuple[range, str]]:
    """The checked ``print(...)  # text`` statements: their line range and the text."""
    comments: dict[int, str] = {}
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type == tokenize.COMMENT:
            comments[token.start[0]] = token.string[1:].strip()
    checked: list[tuple[range, str]] = []
    for node in ast.walk(ast.parse(source)):
        if not (
            isinstance(node, ast.Expr)
            and isinstance(node.value, ast.Call)
            and isinstance(node.value.func, ast.Name)
            and node.value.func.id == "print"
        ):
            continue
        last = node.end_lineno or node.lineno
        comment = comments.get(last)
        if comment is None or comment.startswith("e.g.") or "..." in comment:
            continue
        checked.append((range(node.lineno, last + 1), comment))
    return sorted(checked, key=lambda item: item[0].start)


def fixed_ports(source: str) -> list[str]:
    """String literals in the code (not comments) naming a tcp/udp endpoint with a fixed port."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            for match in _FIXED_PORT.finditer(node.value):
                if match["port"] != "0":
                    found.append(match[0])
    return found


def _text(output: bytes | str | None) -> str:
    if isinstance(output, bytes):
        return output.decode(errors="replace")
    return output or ""


def test_the_documents_have_examples() -> None:
    """Guards the extraction itself: the README's usage example is found and runnable."""
    assert any(block.document.name == "README.md" for block in RUNNABLE)
    assert len(RUNNABLE) >= 5, [block.where for block in RUNNABLE]


@pytest.mark.parametrize("block", ALL_BLOCKS, ids=[block.where for block in ALL_BLOCKS])
def test_every_fenced_block_names_its_language(block: Block) -> None:
    """An unlabelled block would escape this test, so every fence says what it holds
    (```` ```python ````, ```` ```sh ````, ```` ```text ````...)."""
    assert block.language, f"{block.where}: say the block's language after the fence"


def test_fragments_are_rare_and_reported() -> None:
    """Fragments are not run, so they are few (at most one Python block in five) and each run
    of the suite says which ones there are: as a skip naming them, never silently."""
    assert len(FRAGMENTS) <= len(PYTHON_BLOCKS) // 5, (
        f"{len(FRAGMENTS)} of {len(PYTHON_BLOCKS)} Python blocks are fragments: "
        f"{[block.where for block in FRAGMENTS]}; make them complete programs"
    )
    if FRAGMENTS:
        pytest.skip(
            f"{len(FRAGMENTS)} block(s) marked {FRAGMENT_MARKER}, not run: "
            + ", ".join(block.where for block in FRAGMENTS)
        )


@pytest.mark.parametrize("block", RUNNABLE, ids=[block.where for block in RUNNABLE])
def test_example_uses_ephemeral_ports(block: Block) -> None:
    """Fixed ports collide with other programs and parallel runs: bind ``:*`` and use the
    endpoint ``bind`` returns."""
    assert fixed_ports(block.source) == [], f"{block.where}: bind to port * instead"


@pytest.mark.timeout(RUN_TIMEOUT * 2)
@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("block", RUNNABLE, ids=[block.where for block in RUNNABLE])
def test_example_runs_as_printed(block: Block, backend: str, tmp_path: Path) -> None:
    checked = expected_prints(block.source)
    name = re.sub(r"\W", "_", block.where)
    script = tmp_path / f"{name}.py"
    script.write_text(block.source, encoding="utf-8")
    record = tmp_path / "record.jsonl"
    try:
        result = subprocess.run(
            [sys.executable, str(RUNNER), backend, str(script), str(record)],
            capture_output=True,
            text=True,
            timeout=RUN_TIMEOUT,
            cwd=tmp_path,
        )
    except subprocess.TimeoutExpired as timeout:  # its output is bytes, whatever text= says
        pytest.fail(
            f"{block.where} on {backend} did not end within {RUN_TIMEOUT:.0f} s "
            f"(an example must end by itself)\n--- stdout ---\n{_text(timeout.stdout)}"
            f"--- stderr ---\n{_text(timeout.stderr)}",
            pytrace=False,
        )
    shown = (
        f"(line N of {script.name} is line {block.line}+N of the document)\n"
        f"--- stdout ---\n{result.stdout}--- stderr ---\n{result.stderr}"
    )
    if result.returncode != 0:
        pytest.fail(
            f"{block.where} on {backend} exited {result.returncode}\n{shown}", pytrace=False
        )

    entries = (
        [json.loads(line) for line in record.read_text().splitlines()] if record.exists() else []
    )
    if "async def" in block.source and not any("anyio_run" in entry for entry in entries):
        pytest.fail(f"{block.where}: an async example ends with anyio.run(main)", pytrace=False)
    printed = []
    for entry in entries:
        if "print" in entry:
            lineno, text = entry["print"]
            if any(lineno in lines for lines, _ in checked):
                printed.append(text)
    expected = [text for _, text in checked]
    if printed != expected:
        pytest.fail(
            f"{block.where} on {backend}: the checked prints wrote {printed}, "
            f"their comments say {expected}\n{shown}",
            pytrace=False,
        )
