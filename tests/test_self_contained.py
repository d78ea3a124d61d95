"""A clone stands on its own: no tracked file names anything outside the repository, and the
links between the documents resolve.

"Outside" means any of:

* a relative path that climbs out of the repository from the file naming it (``../`` more
  times than the file is deep), or that names a file the repository does not have (a dangling
  ``../`` path: the material it meant is somewhere else);
* an absolute path into a machine's own directories (a home directory, a ``file:`` URL...):
  nobody who clones the repository has them. Scratch paths (``/tmp/...``) in examples are fine;
* the development reference notes that live beside the checkout, by name or by their section
  numbers (the design notes, the notes on libzmq interoperability, the QoS spec). What the
  project needs from them is written into ``docs/`` (``docs/libzmq-notes.md``,
  ``docs/architecture.md``...), and ``tests/vectors/`` holds the known-answer data. Cite those
  instead.

Relative links that stay inside (``[udp](socket-types.md#radio-and-dish-over-udp)``, or
``../README.md`` from ``docs/``) are fine; they must point at a tracked file and, with an
anchor, at one of its headings.

The files checked are ``git ls-files`` when the repository is a git checkout of its own, else
every file of the tree minus what ``.gitignore`` excludes (CI runs the suite in a copy without
``.git``).
"""

from __future__ import annotations

import os
import re
from functools import cache
from pathlib import Path, PurePosixPath

import pytest

from tests._repo_files import ROOT, git_files, tracked_files, walked_files

UP = ".." + "/"  # spelled in two pieces so that this file does not name what it forbids
#: Names of the reference material kept beside the checkout during development, and the
#: machine paths it lives under. Each pattern is written so that it does not match itself.
OUTSIDE_MATERIAL = [
    (re.compile("(?:" + re.escape(UP) + r")+shared\b"), "the reference notes beside the checkout"),
    (re.compile(r"\bshared/(?:vectors|spec|DESIGN)"), "the reference notes beside the checkout"),
    (re.compile(r"\bDESIGN\.md\b"), "the design notes (not in the repository)"),
    (
        re.compile(r"libzmq-inter[o]p\b(?:\.md)?|libzmq inter[o]p\s*§"),
        "the notes on libzmq interoperability",
    ),
    (re.compile(r"\bspec/[\w-]+\.md"), "a spec file outside the repository"),
    (re.compile(r"\bspec\s*§"), "a section of a spec outside the repository"),
]
#: Absolute paths into a machine's own directories. Not preceded by a word character, a dot,
#: a colon or a slash, so URLs (``https://host/home/...``) and relative paths do not count.
MACHINE_PATH = re.compile(r"(?<![\w.:/~])(?:/(?:work|home|Users|root|mnt|srv)/|file:/{2}|[~]/)")
CLIMB = re.compile(r"(?<![\w./])((?:\.\./)+)([\w.\-/]*)")
MARKDOWN_LINK = re.compile(r"\]\(\s*<?([^()\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
#: ``Path(__file__).parent.parent...`` and ``Path(__file__).parents[N]``: code finding its way
#: from its own file to a directory, which is outside when it climbs above the repository.
FILE_PARENTS = re.compile(
    r"__file__\)(?:\.resolve\(\))?(?P<chain>(?:\.parent\b)+|\.parents\[(?P<n>\d+)\])"
)
DOC_MENTION = re.compile(r"(?<![\w/.-])((?:docs/)?[\w-]+\.md)#([\w-]+)")


@cache
def text_of(path: Path) -> str | None:
    data = path.read_bytes()
    if b"\0" in data:
        return None  # binary (the captured byte streams in tests/vectors)
    return data.decode("utf-8", errors="replace")


def _text_files() -> list[Path]:
    return [path for path in tracked_files() if text_of(path) is not None]


def _rel(path: Path) -> str:
    return path.relative_to(ROOT).as_posix()


def outside_references(path: Path, text: str) -> list[str]:
    """Every way ``text`` (the content of tracked file ``path``) names something outside."""
    found = []
    for number, line in enumerate(text.splitlines(), start=1):
        where = f"{_rel(path)}:{number}"
        for pattern, what in OUTSIDE_MATERIAL:
            for match in pattern.finditer(line):
                found.append(f"{where}: {match[0]!r} names {what}")
        for match in MACHINE_PATH.finditer(line):
            found.append(f"{where}: {match[0]!r} is a path on somebody's machine")
        for match in CLIMB.finditer(line):
            target = PurePosixPath(os.path.normpath(PurePosixPath(_rel(path)).parent / match[0]))
            if target.parts[:1] == ("..",):
                found.append(f"{where}: {match[0]!r} leads out of the repository")
            elif not (ROOT / target).exists():
                found.append(f"{where}: {match[0]!r} names nothing in the repository")
        for match in FILE_PARENTS.finditer(line):
            # the k-th parent of a file k levels deep is the root; one more is outside
            levels = int(match["n"]) + 1 if match["n"] else match["chain"].count(".parent")
            if levels > len(PurePosixPath(_rel(path)).parts):
                found.append(f"{where}: {match[0]!r} leads out of the repository")
    return found


def test_the_file_list_is_complete() -> None:
    """The fallback used without git sees every tracked file and none of what ``.gitignore``
    excludes, so the checks below are the same in a copy without ``.git`` as in a checkout."""
    walked = walked_files()
    assert ROOT / "README.md" in walked
    generated = {".git", ".venv", "__pycache__", ".pytest_cache"}
    assert [path for path in walked if generated & set(path.relative_to(ROOT).parts)] == []
    listed = git_files()
    if listed is not None:  # a git checkout: the fallback lists at least what git tracks
        assert set(listed) <= set(walked)


def test_no_tracked_file_names_anything_outside_the_repository() -> None:
    problems = [p for path in _text_files() for p in outside_references(path, text_of(path) or "")]
    assert problems == [], "\n".join(problems)


@pytest.mark.parametrize(
    ("line", "outside"),
    [
        (UP + "shar" + "ed/DES" + "IGN.md", True),
        (UP + UP + "shar" + "ed/vectors/crypto.json", True),
        ("see /wor" + "k/shar" + "ed/spec", True),
        ("the libzmq-inter" + "op.md notes, §2.6", True),
        ("(libzmq inter" + "op §1.2)", True),
        ("DESIGN" + ".md", True),
        ("(spec" + " §1.1)", True),
        ("spec" + "/qos.md §6", True),
        ("/home" + "/alice/zmtp", True),
        (UP + UP + "elsewhere", True),
        (UP + "nothing-here.md", True),
        ("[udp](socket-types.md#radio-and-dish-over-udp)", False),
        ("[README](" + UP + "README.md)", False),
        ("ipc:///tmp/zmtp-example.sock", False),
        ("https://github.com/home/" + "work/", False),
        ("shared mixins, the shared secret", False),
        ("live libzmq interop tests", False),
        ("RFC 37 §SUBSCRIBE/CANCEL", False),
    ],
)
def test_what_counts_as_outside(line: str, outside: bool) -> None:
    """The rules themselves, on a file in ``docs/`` (one level deep)."""
    assert bool(outside_references(ROOT / "docs" / "example.md", line)) is outside


@pytest.mark.parametrize(
    ("line", "outside"),
    [
        ("ROOT = Path(__file__).resolve().parent.parent", False),
        ("HERE = Path(__file__).parent", False),
        ("Path(__file" + "__).resolve().parent.parent.parent / 'x'", True),
        ("Path(__file__).parents[1]", False),
        ("Path(__file" + "__).parents[2]", True),
    ],
)
def test_code_climbing_from_its_file(line: str, outside: bool) -> None:
    """The same for code in ``tests/`` (two levels: its ``parent.parent`` is the root)."""
    assert bool(outside_references(ROOT / "tests" / "example.py", line)) is outside


def github_anchors(markdown: str) -> set[str]:
    """The heading anchors GitHub generates for a document (fenced code is not headings)."""
    anchors: set[str] = set()
    seen: dict[str, int] = {}
    fence = ""
    for line in markdown.splitlines():
        stripped = line.strip()
        if stripped.startswith(("```", "~~~")):
            marker = stripped[:3]
            fence = "" if fence == marker else (fence or marker)
            continue
        if fence or not re.match(r"#{1,6} ", line):
            continue
        title = line.lstrip("#").strip().lower()
        slug = re.sub(r"[^\w\- ]", "", title).replace(" ", "-")
        count = seen.get(slug, 0)
        seen[slug] = count + 1
        anchors.add(slug if count == 0 else f"{slug}-{count}")
    return anchors


def _resolve_link(source: Path, target: str) -> tuple[Path | None, str]:
    path_part, _, anchor = target.partition("#")
    if not path_part:
        return source, anchor
    return (source.parent / path_part).resolve(), anchor


def _dangling_links() -> list[str]:
    files = set(tracked_files())
    problems = []
    for path in _text_files():
        text = text_of(path) or ""
        links: list[tuple[Path | None, str, str]] = []
        if path.suffix == ".md":
            # Code in fenced blocks is not a link (``stream[tuple[str, bytes]](10)``).
            prose = re.sub(r"^```.*?^```", "", text, flags=re.MULTILINE | re.DOTALL)
            for match in MARKDOWN_LINK.finditer(prose):
                target = match[1]
                if re.match(r"[a-z][\w+.-]*:", target):  # https:, mailto:...
                    continue
                resolved, anchor = _resolve_link(path, target)
                links.append((resolved, anchor, target))
        for match in DOC_MENTION.finditer(text):
            candidates = [ROOT / match[1], ROOT / "docs" / match[1], path.parent / match[1]]
            resolved = next((c.resolve() for c in candidates if c.resolve() in files), None)
            links.append((resolved, match[2], match[0]))
        for resolved, anchor, shown in links:
            if resolved is None or resolved not in files:
                problems.append(f"{_rel(path)}: {shown!r} is not a tracked file")
            elif (
                anchor
                and resolved.suffix == ".md"
                and anchor not in github_anchors(text_of(resolved) or "")
            ):
                problems.append(f"{_rel(path)}: {shown!r}: no heading with that anchor")
    return problems


def test_links_between_documents_resolve() -> None:
    """Markdown links to repository files, and ``docs/<page>.md#anchor`` citations in code and
    tests, point at a tracked file and an existing heading."""
    problems = _dangling_links()
    assert problems == [], "\n".join(problems)
