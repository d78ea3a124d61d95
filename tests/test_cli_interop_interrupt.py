"""``zmtp interop`` stops cleanly on Ctrl-C, on both backends: the row running is cut short
(not reported as a failure), the summary of the rows done is printed, the reports are still
written (marked incomplete and interrupted) and the exit status is 130."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests._cli import Tool

pytestmark = pytest.mark.interop
pytest.importorskip("zmq")


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_ctrl_c_stops_the_check_and_still_writes_the_report(backend: str, tmp_path: Path) -> None:
    report = tmp_path / "report.json"
    # Long rows (many messages each), so that the interrupt lands while one is running.
    tool = Tool(["interop", "--backend", backend, "--count", "300000", "--json", str(report)])
    try:
        tool.wait_for(lambda line: line.startswith("-------"))  # the table's header: running
        status = tool.interrupt()
    finally:
        tool.kill()
    assert status == 130, (tool.out, tool.err)
    assert "Traceback" not in "\n".join(tool.err), tool.err
    summary = tool.out[-1]
    assert summary.startswith("INTERRUPTED: ") and "not run)" in summary, (tool.out, tool.err)
    assert not any(" FAIL " in line for line in tool.out), tool.out
    document = json.loads(report.read_text())
    assert document["interrupted"] is True and document["complete"] is False
    assert document["totals"]["failed"] == 0
