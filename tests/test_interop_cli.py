"""``python -m zmtp interop``: the live check against libzmq, its table, and its failure modes
(failing, raising, hanging and uncancellable cases; pyzmq missing; bad arguments); and
``zmtp keygen``."""

from __future__ import annotations

import io
import itertools
import json
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import anyio
import pytest

from tests._cli import run_zmtp
from zmtp import cli, interop
from zmtp.crypto import curve_public, z85_decode
from zmtp.interop import CaseContext, CaseFailed, Registry

pytestmark = pytest.mark.interop

ROW = re.compile(
    r"^(?P<backend>asyncio|trio)\s+(?P<case>\S+)\s+(?P<transport>tcp|ipc)\s+"
    r"(?P<flow>zmtp->libzmq|libzmq->zmtp|both)\s+(?P<binds>zmtp|libzmq)\s+"
    r"(?P<result>PASS|FAIL|SKIP)\s+(?P<time>\d+\.\d\d)s(?:\s+(?P<detail>.*))?$"
)
#: A case name: zmtp's type, an arrow, libzmq's type, and an optional [variant].
NAME = re.compile(r"^(?P<ours>[A-Z]+)(?:->|<-|<->)(?P<theirs>[A-Z]+)(?:\[(?P<variant>[^]]+)\])?$")
#: Which socket types may talk to which (RFC 23 and the pattern RFCs 28, 29, 30, 31).
COMPATIBLE = {
    "PAIR": {"PAIR"},
    "PUSH": {"PULL"},
    "PULL": {"PUSH"},
    "REQ": {"REP", "ROUTER"},
    "REP": {"REQ", "DEALER"},
    "DEALER": {"REP", "DEALER", "ROUTER"},
    "ROUTER": {"REQ", "DEALER", "ROUTER"},
    "PUB": {"SUB", "XSUB"},
    "SUB": {"PUB", "XPUB"},
    "XPUB": {"SUB", "XSUB"},
    "XSUB": {"PUB", "XPUB"},
}
#: Every standard pairing, with zmtp on either side: (zmtp's type, libzmq's type).
STANDARD_PAIRS = {(ours, theirs) for ours, peers in COMPATIBLE.items() for theirs in peers}
#: The security variants that must be there: each mechanism with zmtp in each role.
SECURITY_VARIANTS = {"CURVE-client", "CURVE-server", "PLAIN-client", "PLAIN-server"}
MATRIX = set(itertools.product(("tcp", "ipc"), ("zmtp", "libzmq")))
#: The socket-option rows (zmtp/interop/rows/options.py) and who binds in them. A connect
#: routing id needs its owner to connect, and conflation is only deterministic on messages
#: queued before the receiver binds, so those rows run in one role.
OPTION_ROWS = {
    "DEALER->ROUTER[probe_router]": ("zmtp", "libzmq"),
    "ROUTER<-DEALER[probe_router]": ("zmtp", "libzmq"),
    "ROUTER<-DEALER[router_notify]": ("zmtp", "libzmq"),
    "ROUTER->ROUTER[connect_routing_id]": ("libzmq",),
    "ROUTER<-ROUTER[connect_routing_id]": ("zmtp",),
    "PUB->SUB[invert_matching]": ("zmtp", "libzmq"),
    "PUB->XSUB[invert_matching]": ("zmtp", "libzmq"),
    "SUB<-PUB[invert_matching]": ("zmtp", "libzmq"),
    "PUSH->PULL[conflate]": ("libzmq",),
    "PULL<-PUSH[conflate]": ("zmtp",),
}


def rows(output: str) -> list[re.Match[str]]:
    return [m for line in output.splitlines() if (m := ROW.match(line))]


def test_cli_interop_passes_every_standard_pair_on_both_backends() -> None:
    proc = run_zmtp("interop")
    out = proc.stdout
    assert proc.returncode == 0, out + proc.stderr
    lines = out.splitlines()
    assert lines[0].startswith("zmtp ") and "libzmq 4." in lines[0] and "pyzmq" in lines[0]
    assert "backends asyncio, trio" in lines[0]
    header = lines[1].split()
    assert header == ["BACKEND", "CASE", "TRANSPORT", "FLOW", "BINDS", "RESULT", "TIME", "DETAIL"]
    assert set(lines[2]) <= {"-", " "}
    found = rows(out)
    assert len(lines) == 3 + len(found) + 1, out  # title, header, rule, rows, summary: no more
    for m in found:
        assert m["result"] == "PASS" and m["detail"], m.group(0)

    # Each case runs the same rows on both backends.
    matrix: dict[tuple[str, str], set[tuple[str, str]]] = {}
    for m in found:
        matrix.setdefault((m["case"], m["backend"]), set()).add((m["transport"], m["binds"]))
    names = {name for name, _ in matrix}
    for name in names:
        assert matrix.get((name, "asyncio")) == matrix.get((name, "trio")), name

    # Every standard pair, with zmtp on either side, on both transports with either side
    # binding; no other pair; the security variants.
    parsed = {name: NAME.match(name) for name in names}
    assert all(parsed.values()), [name for name, m in parsed.items() if not m]
    pairs = {name: (m["ours"], m["theirs"]) for name, m in parsed.items() if m}
    variants = {m["variant"] for m in parsed.values() if m}
    plain = {name for name, m in parsed.items() if m and not m["variant"]}
    assert {pairs[name] for name in plain} == STANDARD_PAIRS
    assert len(plain) == len(STANDARD_PAIRS)  # one row name per pair
    for name in plain:
        assert matrix[(name, "asyncio")] == MATRIX, name
    assert set(pairs.values()) <= STANDARD_PAIRS
    assert variants >= {*SECURITY_VARIANTS, "correlate"}
    for name, binders in OPTION_ROWS.items():
        expected = set(itertools.product(("tcp", "ipc"), binders))
        assert matrix.get((name, "asyncio")) == expected, name
    for m in found:  # libzmq's bound prober sends its probe only with its next message
        if m["case"] == "ROUTER<-DEALER[probe_router]" and m["binds"] == "libzmq":
            assert "with its next message" in m["detail"], m.group(0)

    # Grouped by case name: one block per case, its asyncio rows before its trio rows.
    blocks = [
        (name, [m["backend"] for m in group])
        for name, group in itertools.groupby(found, key=lambda m: m["case"])
    ]
    assert len(blocks) == len(names), [name for name, _ in blocks]
    for name, backends in blocks:
        assert backends == sorted(backends) and set(backends) == {"asyncio", "trio"}, name

    streams = {"PUSH->PULL", "PULL<-PUSH", "PAIR<->PAIR", "DEALER<->DEALER"}
    for m in found:
        if m["case"] in streams:  # sample_messages(): 1000+ messages, compared in order
            assert "in order" in m["detail"], m.group(0)
    # Aligned: every row's RESULT and DETAIL start in the header's columns.
    result_col, detail_col = lines[1].index("RESULT"), lines[1].index("DETAIL")
    for line in lines[3:-1]:
        assert line[result_col:].startswith("PASS"), line
        assert line[detail_col - 2 : detail_col] == "  " and line[detail_col] != " ", line
    summary = re.fullmatch(
        r"OK: (\d+) cases, (\d+) passed, 0 failed, 0 skipped in (\d+\.\d)s", lines[-1]
    )
    assert summary, lines[-1]
    assert int(summary[1]) == int(summary[2]) == len(found)
    assert float(summary[3]) < 60, "the whole check must stay well under a minute"


def test_cli_filters_transport_and_pattern() -> None:
    proc = run_zmtp("interop", "--backend", "trio", "--transport", "ipc", "-k", "PAIR")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    found = rows(proc.stdout)
    assert [(m["backend"], m["case"], m["transport"]) for m in found] == [
        ("trio", "PAIR<->PAIR", "ipc")
    ] * 2
    assert {m["binds"] for m in found} == {"zmtp", "libzmq"}
    proc = run_zmtp("interop", "--backend", "asyncio", "--transport", "tcp", "-k", "CURVE-server")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    found = rows(proc.stdout)
    assert found and all(m["case"].endswith("[CURVE-server]") for m in found)
    assert {m["transport"] for m in found} == {"tcp"}


def test_cli_rejects_bad_arguments() -> None:
    proc = run_zmtp("interop", "--transport", "tcp,udp")
    assert proc.returncode == 2
    assert "unknown transport(s) udp" in proc.stderr
    proc = run_zmtp("interop", "--backend", "curio")
    assert proc.returncode == 2 and "invalid choice" in proc.stderr
    proc = run_zmtp()
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

            interop.runner.WATCHDOG_GRACE = 0.5
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


# ---------------------------------------------------------------------- zmtp keygen


def keygen_pair(*args: str) -> tuple[str, str]:
    proc = run_zmtp("keygen", *args)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert [line.split(": ", 1)[0] for line in lines] == ["public", "secret"], proc.stdout
    public, secret = (line.split(": ", 1)[1] for line in lines)
    return public, secret


def test_keygen_prints_a_new_consistent_z85_pair() -> None:
    public, secret = keygen_pair()
    assert len(public) == len(secret) == 40
    assert len(z85_decode(public)) == len(z85_decode(secret)) == 32
    assert curve_public(secret) == public
    zmq = pytest.importorskip("zmq")
    assert zmq.curve_public(secret.encode()) == public.encode()  # libzmq agrees
    assert keygen_pair()[1] != secret  # a fresh pair each time


def test_keygen_json() -> None:
    proc = run_zmtp("keygen", "--json")
    assert proc.returncode == 0, proc.stderr
    keys = json.loads(proc.stdout)
    assert set(keys) == {"public", "secret"}
    assert len(z85_decode(keys["public"])) == len(z85_decode(keys["secret"])) == 32
    assert curve_public(keys["secret"]) == keys["public"]


# libzmq's example keys (zmq_curve(7)).
KNOWN_SECRET = "D:)Q[IlAW!ahhC2ac:9*A}h:p?([4%wOTJ%JR%cs"
KNOWN_PUBLIC = "Yne@$w-vo<fVvi]a<NY6T1ed:M$fCG*[IaLV{hID"


def test_keygen_public_of_a_secret() -> None:
    # "--public-of=KEY": a Z85 key may start with "-", which argparse would take for an option.
    proc = run_zmtp("keygen", f"--public-of={KNOWN_SECRET}")
    assert (proc.returncode, proc.stdout) == (0, f"public: {KNOWN_PUBLIC}\n"), proc.stderr
    public, secret = keygen_pair()
    proc = run_zmtp("keygen", f"--public-of={secret}", "--json")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout) == {"public": public}
    proc = run_zmtp("keygen", "--public-of", "-", stdin=secret + "\n")  # kept off the command line
    assert (proc.returncode, proc.stdout) == (0, f"public: {public}\n"), proc.stderr


def test_keygen_rejects_a_bad_secret() -> None:
    for bad in ("short", KNOWN_SECRET[:-1] + "~"):  # wrong length; "~" is not Z85
        proc = run_zmtp("keygen", f"--public-of={bad}")
        assert proc.returncode == 2 and proc.stdout == "", proc.stdout
        assert "not a CURVE secret key" in proc.stderr
