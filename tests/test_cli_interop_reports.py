"""``zmtp interop --list``, ``--json PATH``, ``--markdown PATH`` and the progress line (on a
terminal only), end to end in subprocesses against libzmq."""

from __future__ import annotations

import io
import json
import os
import pty
import re
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from tests._cli import ROOT, run_zmtp
from zmtp import cli, interop
from zmtp.interop import CaseContext, CaseFailed, Registry, report

pytestmark = pytest.mark.interop

ROW = re.compile(
    r"^(?P<backend>asyncio|trio)\s+(?P<case>\S+)\s+(?P<transport>tcp|ipc)\s+"
    r"(?P<flow>\S+)\s+(?P<binds>zmtp|libzmq)\s+(?P<result>PASS|FAIL|SKIP)\s+"
)


def test_list_prints_the_selected_rows_without_running_them(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setitem(sys.modules, "zmq", None)  # listing needs no libzmq
    assert cli.main(["interop", "--list", "-k", "PAIR", "--transport", "ipc"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split() == ["CASE", "TRANSPORT", "FLOW", "BINDS"]
    assert [line.split() for line in lines[1:-1]] == [
        ["PAIR<->PAIR", "ipc", "both", "zmtp"],
        ["PAIR<->PAIR", "ipc", "both", "libzmq"],
    ]
    assert lines[-1] == "2 rows x 2 backend(s) (asyncio, trio) = 4 runs"
    assert cli.main(["interop", "--list"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 1 + len(interop.REGISTRY) + 1
    assert lines[-1].endswith(f"= {len(interop.REGISTRY) * 2} runs")
    assert cli.main(["interop", "--list", "-k", "NO-SUCH-ROW"]) == 1


def test_json_and_markdown_reports_match_the_table(tmp_path: Path) -> None:
    json_path, md_path = tmp_path / "report.json", tmp_path / "report.md"
    proc = run_zmtp("interop", "-k", "REQ->", "--json", str(json_path), "--markdown", str(md_path))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stderr == ""  # a pipe: no progress line
    table = [m for line in proc.stdout.splitlines() if (m := ROW.match(line))]
    document = json.loads(json_path.read_text())
    assert document["backends"] == ["asyncio", "trio"]
    assert document["libzmq"].startswith("4.") and document["complete"] is True
    records = document["rows"]
    assert [
        (r["backend"], r["case"], r["transport"], r["binds"], r["outcome"]) for r in records
    ] == [(m["backend"], m["case"], m["transport"], m["binds"], m["result"]) for m in table]
    assert document["totals"] == {
        "rows": len(table),
        "passed": len(table),
        "failed": 0,
        "skipped": 0,
    }
    first = records[0]
    assert first["roles"]["zmtp"] == "REQ" and first["roles"]["libzmq"] in {"REP", "ROUTER"}
    assert {first["roles"]["binds"], first["roles"]["connects"]} == {"zmtp", "libzmq"}
    assert all(r["reason"] is None and r["detail"] and r["seconds"] >= 0 for r in records)
    assert {r["variant"] for r in records} >= {None, "correlate"}
    lines = md_path.read_text().splitlines()
    assert lines[0].startswith("# zmtp ") and "libzmq 4." in lines[0]
    assert f"**OK**: {len(table)} rows, {len(table)} passed, 0 failed" in md_path.read_text()
    body = [line for line in lines if line.startswith("| `")]
    assert len(body) == len(table)
    assert body[0].split(" | ")[1:3] == [records[0]["backend"], records[0]["transport"]]


def failing_registry() -> Registry:
    registry = Registry()

    @registry.register("OK", flow="both", transports=("tcp",), binds=("zmtp",))
    async def passes(c: CaseContext) -> str:
        return "fine"

    @registry.register("PUSH->PULL[broken]", flow="zmtp->libzmq", transports=("tcp",))
    async def fails(c: CaseContext) -> str:
        raise CaseFailed("message #3 differs | a pipe in the reason")

    @registry.register("NEEDS-X", flow="both", transports=("tcp",), requires=("NOSUCHTYPE",))
    async def skipped(c: CaseContext) -> str:
        raise AssertionError("must not run")

    return registry


def test_reports_carry_failure_reasons() -> None:
    documents: list[str] = []
    markdown: list[str] = []

    def keep(info: interop.runner.RunInfo, results: object) -> None:
        assert isinstance(results, list)
        documents.append(report.json_report(info, results))
        markdown.append(report.markdown_report(info, results))

    status = interop.run_check(
        failing_registry(), backends=["asyncio"], out=io.StringIO(), on_finish=[keep]
    )
    assert status == 1
    [document] = [json.loads(d) for d in documents]
    outcomes = {(r["case"], r["binds"]): (r["outcome"], r["reason"]) for r in document["rows"]}
    assert outcomes[("OK", "zmtp")] == ("PASS", None)
    assert outcomes[("PUSH->PULL[broken]", "libzmq")] == (
        "FAIL",
        "message #3 differs | a pipe in the reason",
    )
    assert outcomes[("NEEDS-X", "zmtp")][0] == "SKIP"
    assert "NOSUCHTYPE" in outcomes[("NEEDS-X", "zmtp")][1]
    assert document["totals"] == {"rows": 5, "passed": 1, "failed": 2, "skipped": 2}
    broken = next(r for r in document["rows"] if r["case"] == "PUSH->PULL[broken]")
    assert broken["variant"] == "broken" and broken["roles"]["zmtp"] == "PUSH"
    assert "**FAILED**: 5 rows, 1 passed, 2 failed, 2 skipped" in markdown[0]
    assert "message #3 differs \\| a pipe in the reason" in markdown[0]  # escaped for markdown


def test_a_hung_row_still_gets_its_report(tmp_path: Path) -> None:
    """The watchdog ends the process after an uncancellable row; the report is written first,
    marked incomplete."""
    path = tmp_path / "hang.json"
    script = tmp_path / "hang.py"
    script.write_text(
        textwrap.dedent(
            f"""
            import sys
            from functools import partial
            import anyio
            from zmtp import interop
            from zmtp.interop import report

            interop.runner.WATCHDOG_GRACE = 0.5
            registry = interop.Registry()

            @registry.register("STUCK", flow="both", transports=("tcp",), binds=("zmtp",),
                               timeout=0.2)
            async def stuck(c):
                with anyio.CancelScope(shield=True):
                    await anyio.sleep(60)

            def write(info, results):
                report.write({str(path)!r}, report.json_report(info, results))

            sys.exit(interop.run_check(registry, backends=["asyncio"], on_finish=[write]))
            """
        )
    )
    proc = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=60, check=False
    )
    assert proc.returncode == 1, proc.stdout + proc.stderr
    document = json.loads(path.read_text())
    assert document["complete"] is False
    [row] = document["rows"]
    assert row["outcome"] == "FAIL" and "could not be cancelled" in row["reason"]


def test_progress_line_on_a_terminal_only() -> None:
    """stderr a terminal: "[n/N] backend label" lines, rewritten in place; the table on
    stdout is the same as without."""
    controller, terminal = pty.openpty()
    try:
        proc = subprocess.Popen(
            [sys.executable, "-m", "zmtp", "interop", "-k", "PAIR", "--backend", "asyncio"],
            stdout=subprocess.PIPE,
            stderr=terminal,
            cwd=ROOT,
        )
        os.close(terminal)
        terminal = -1
        seen = b""
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            try:
                chunk = os.read(controller, 4096)
            except OSError:  # the terminal's other end closed: the process is done
                break
            if not chunk:
                break
            seen += chunk
        out, _ = proc.communicate(timeout=60)
    finally:
        os.close(controller)
        if terminal >= 0:
            os.close(terminal)
    assert proc.returncode == 0, out
    text = seen.decode()
    assert "[1/4] asyncio PAIR<->PAIR tcp both zmtp-binds" in text
    assert "[4/4] asyncio PAIR<->PAIR ipc both libzmq-binds" in text
    assert text.endswith("\r\x1b[K")  # cleared at the end
    assert b"\x1b" not in out  # the table itself has no control sequences
    assert out.decode().splitlines()[-1].startswith("OK: 4 cases, 4 passed")
