"""``python -m zmtp interop``: the live check against libzmq, its table, and its failure modes
(failing, raising, hanging and uncancellable cases; pyzmq missing; bad arguments)."""

from __future__ import annotations

import io
import itertools
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import anyio
import pytest

from zmtp import __main__ as cli
from zmtp import interop
from zmtp.interop import CaseContext, CaseFailed, Registry

pytestmark = pytest.mark.interop

ROOT = Path(__file__).resolve().parent.parent
ROW = re.compile(
    r"^(?P<backend>asyncio|trio)\s+(?P<case>\S+)\s+(?P<transport>tcp|ipc)\s+"
    r"(?P<flow>zmtp->libzmq|libzmq->zmtp|both)\s+(?P<binds>zmtp|libzmq)\s+"
    r"(?P<result>PASS|FAIL|SKIP)\s+(?P<time>\d+\.\d\d)s(?:\s+(?P<detail>.*))?$"
)
BUILTIN = {
    ("PUSH->PULL", "zmtp->libzmq"),
    ("PULL<-PUSH", "libzmq->zmtp"),
    ("PAIR<->PAIR", "both"),
}


def run_cli(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "zmtp", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=ROOT,
        check=False,
    )


def rows(output: str) -> list[re.Match[str]]:
    return [m for line in output.splitlines() if (m := ROW.match(line))]


def test_cli_interop_asyncio_passes_with_a_full_table() -> None:
    proc = run_cli("interop", "--backend", "asyncio")
    out = proc.stdout
    assert proc.returncode == 0, out + proc.stderr
    lines = out.splitlines()
    assert lines[0].startswith("zmtp ") and "libzmq 4." in lines[0] and "pyzmq" in lines[0]
    header = lines[1].split()
    assert header == ["BACKEND", "CASE", "TRANSPORT", "FLOW", "BINDS", "RESULT", "TIME", "DETAIL"]
    assert set(lines[2]) <= {"-", " "}
    found = rows(out)
    assert len(found) == 12, out
    assert len(lines) == 3 + 12 + 1  # title, header, rule, rows, summary: nothing else
    expected = {
        (name, transport, flow, binds)
        for (name, flow), transport, binds in itertools.product(
            BUILTIN, ("tcp", "ipc"), ("zmtp", "libzmq")
        )
    }
    assert {(m["case"], m["transport"], m["flow"], m["binds"]) for m in found} == expected
    for m in found:
        assert m["backend"] == "asyncio" and m["result"] == "PASS", m.group(0)
        assert m["detail"] and "in order" in m["detail"], m.group(0)
    # Aligned: every row's RESULT and DETAIL start in the header's columns.
    result_col, detail_col = lines[1].index("RESULT"), lines[1].index("DETAIL")
    for line in lines[3:-1]:
        assert line[result_col:].startswith("PASS"), line
        assert line[detail_col - 2 : detail_col] == "  " and line[detail_col] != " ", line
    assert re.fullmatch(r"OK: 12 cases, 12 passed, 0 failed, 0 skipped in \d+\.\ds", lines[-1])


def test_cli_filters_transport_and_pattern() -> None:
    proc = run_cli("interop", "--backend", "trio", "--transport", "ipc", "-k", "PAIR")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    found = rows(proc.stdout)
    assert [(m["backend"], m["case"], m["transport"]) for m in found] == [
        ("trio", "PAIR<->PAIR", "ipc")
    ] * 2
    assert {m["binds"] for m in found} == {"zmtp", "libzmq"}


def test_cli_rejects_bad_arguments() -> None:
    proc = run_cli("interop", "--transport", "tcp,udp")
    assert proc.returncode == 2
    assert "unknown transport(s) udp" in proc.stderr
    proc = run_cli("interop", "--backend", "curio")
    assert proc.returncode == 2 and "invalid choice" in proc.stderr
    proc = run_cli()
    assert proc.returncode == 2 and "interop" in proc.stderr


# ---------------------------------------------------------------------- failing cases


def deliberate_registry() -> Registry:
    """One passing, one failing, one raising, one hanging and one skipped row (tcp only)."""
    registry = Registry()

    @registry.register("OK", flow="both", transports=("tcp",), binds=("zmtp",))
    async def passes(c: CaseContext) -> str:
        return f"fine on {c.backend}/{c.transport}"

    @registry.register("DELIBERATE-FAIL", flow="zmtp->libzmq", transports=("tcp",))
    async def fails(c: CaseContext) -> str:
        c.step("comparing")
        raise CaseFailed("message #3 differs: sent 1 part(s), received nothing\nsecond line")

    @registry.register(
        "DELIBERATE-RAISE", flow="libzmq->zmtp", transports=("tcp",), binds=("zmtp",)
    )
    async def raises(c: CaseContext) -> str:
        raise KeyError("boom")

    @registry.register(
        "DELIBERATE-HANG", flow="both", transports=("tcp",), binds=("libzmq",), timeout=0.3
    )
    async def hangs(c: CaseContext) -> str:
        c.step("waiting for a message that never comes")
        await anyio.sleep_forever()
        return "unreachable"

    @registry.register("NEEDS-X", flow="both", transports=("tcp",), requires=("NOSUCHTYPE",))
    async def skipped(c: CaseContext) -> str:
        raise AssertionError("must not run")

    return registry


def test_failing_cases_give_fail_rows_and_nonzero_exit() -> None:
    out = io.StringIO()
    status = interop.run_check(deliberate_registry(), backends=["asyncio"], timeout=5, out=out)
    text = out.getvalue()
    assert status == 1, text
    by_case: dict[str, list[re.Match[str]]] = {}
    for m in rows(text):
        by_case.setdefault(m["case"], []).append(m)
    assert [m["result"] for m in by_case["OK"]] == ["PASS"]
    assert by_case["OK"][0]["detail"] == "fine on asyncio/tcp"
    assert [m["result"] for m in by_case["DELIBERATE-FAIL"]] == ["FAIL", "FAIL"]
    # The reason is one line, whatever the exception said.
    assert by_case["DELIBERATE-FAIL"][0]["detail"] == (
        "message #3 differs: sent 1 part(s), received nothing second line"
    )
    assert by_case["DELIBERATE-RAISE"][0]["result"] == "FAIL"
    assert by_case["DELIBERATE-RAISE"][0]["detail"] == "KeyError: 'boom'"
    hang = by_case["DELIBERATE-HANG"][0]
    assert hang["result"] == "FAIL"
    assert hang["detail"] == "timed out after 0.3s while: waiting for a message that never comes"
    assert 0.3 <= float(hang["time"]) < 2
    assert [m["result"] for m in by_case["NEEDS-X"]] == ["SKIP", "SKIP"]
    assert "NOSUCHTYPE" in by_case["NEEDS-X"][0]["detail"]
    assert text.splitlines()[-1].startswith("FAILED: 7 cases, 1 passed, 4 failed, 2 skipped in ")


def test_failing_case_injected_into_the_cli(capsys: pytest.CaptureFixture[str]) -> None:
    """Through the real command line and the default registry (then removed again)."""

    @interop.register("INJECTED-FAIL", flow="both", transports=("tcp",), binds=("zmtp",))
    async def injected(c: CaseContext) -> str:
        async with c.zmtp_socket("PUSH") as ours:
            theirs = c.libzmq_socket("PULL")
            await c.link(ours, theirs)
            await ours.send(b"actual")
            [message] = await theirs.recv_many(1)
            if message != [b"expected"]:
                raise CaseFailed(f"libzmq received {message!r}, expected [b'expected']")
        return "unreachable"

    try:
        status = cli.main(["interop", "--backend", "both", "-k", "INJECTED"])
    finally:
        assert interop.REGISTRY.unregister("INJECTED-FAIL") == 1
    out = capsys.readouterr().out
    assert status == 1, out
    found = rows(out)
    assert [(m["backend"], m["result"]) for m in found] == [("asyncio", "FAIL"), ("trio", "FAIL")]
    assert found[0]["detail"] == "libzmq received [b'actual'], expected [b'expected']"
    assert out.splitlines()[-1].startswith("FAILED: 2 cases, 0 passed, 2 failed, 0 skipped")
    assert not interop.REGISTRY.select(pattern="INJECTED")


def test_uncancellable_hang_is_a_fail_row_not_a_hung_command(tmp_path: Path) -> None:
    """A case stuck in a shielded scope ignores its timeout; the watchdog still ends the run
    with a FAIL row, the summary and exit status 1."""
    script = tmp_path / "hang.py"
    script.write_text(
        textwrap.dedent(
            """
            import sys
            import anyio
            from zmtp import interop

            interop.WATCHDOG_GRACE = 0.5
            registry = interop.Registry()

            @registry.register("STUCK", flow="both", transports=("tcp",), binds=("zmtp",),
                               timeout=0.2)
            async def stuck(c):
                with anyio.CancelScope(shield=True):
                    await anyio.sleep(60)

            sys.exit(interop.run_check(registry, backends=["asyncio"]))
            """
        )
    )
    proc = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=30, check=False
    )
    assert proc.returncode == 1, proc.stdout + proc.stderr
    [row] = rows(proc.stdout)
    assert row["case"] == "STUCK" and row["result"] == "FAIL"
    assert "could not be cancelled" in (row["detail"] or "")
    assert proc.stdout.splitlines()[-1].startswith("FAILED: 1 cases, 0 passed, 1 failed")


def test_missing_pyzmq_is_a_clear_error(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setitem(sys.modules, "zmq", None)  # makes `import zmq` raise ImportError
    assert cli.main(["interop", "--backend", "asyncio"]) == 2
    err = capsys.readouterr().err
    assert "pyzmq is required" in err and "pip install 'zmtp[test]'" in err


def test_registry_rejects_duplicates_and_bad_rows() -> None:
    registry = Registry()

    async def case(c: CaseContext) -> str:
        return ""

    registry.register("X", flow="both")(case)
    assert len(registry) == 4  # 2 transports x 2 binders
    with pytest.raises(ValueError, match="already registered"):
        registry.register("X", flow="both", transports=("tcp",))(case)
    with pytest.raises(ValueError, match="flow"):
        registry.register("Y", flow="sideways")(case)
    with pytest.raises(ValueError, match="transport"):
        registry.register("Z", flow="both", transports=("udp",))(case)
    assert [c.transport for c in registry.select(["ipc"])] == ["ipc", "ipc"]
    assert registry.unregister("X") == 4 and len(registry) == 0
