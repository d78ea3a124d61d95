"""``zmtp.cli.run_subcommands``: the dispatcher the ``zmtp`` tool is made of, driven with a table
of a test package's own (``tests/_subcommand_echo.py``), as another program would use it."""

from __future__ import annotations

import argparse
import os
import subprocess
import sys

import pytest

from tests._cli import ROOT
from zmtp.cli import run_subcommands

TABLE = [("echo", "_subcommand_echo")]


def python(*args: str) -> subprocess.CompletedProcess[str]:
    """This interpreter in a child process, from the repository root (``tests`` importable)."""
    return subprocess.run(
        [sys.executable, *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        check=False,
    )


def run(*argv: str) -> int:
    return run_subcommands(argparse.ArgumentParser(prog="demo"), "tests", TABLE, list(argv))


def test_runs_the_chosen_subcommand_and_returns_its_status(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert run("echo", "hello", "world") == 0
    assert capsys.readouterr().out == "hello world\n"
    assert run("echo", "--status", "1") == 1


def test_no_subcommand_prints_the_help_and_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert run() == 2
    err = capsys.readouterr().err
    assert "usage: demo" in err and "echo" in err and "print the words given" in err


def test_a_bad_option_is_argparse_usage_error_2(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        run("echo", "--no-such-option")
    assert exit_.value.code == 2
    assert "unrecognized arguments: --no-such-option" in capsys.readouterr().err


def test_ctrl_c_in_a_subcommand_exits_130() -> None:
    assert run("echo", "--raise", "interrupt") == 130


def test_a_reader_gone_away_exits_0_quietly() -> None:
    """In a child process: the dispatcher points stdout at /dev/null, so it must not be ours."""
    script = (
        "import argparse, sys\n"
        "from zmtp.cli import run_subcommands\n"
        "sys.exit(run_subcommands(argparse.ArgumentParser(prog='demo'), 'tests',\n"
        f"    {TABLE!r}, ['echo', '--raise', 'broken-pipe']))\n"
    )
    proc = python("-c", script)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""


def test_the_zmtp_tool_and_another_program_share_the_help_layout() -> None:
    """Both command lines come out of the same helper: same usage line shape, same exit 2."""
    for module, prog in (("zmtp", "zmtp"), ("zmtp_qos", "python -m zmtp_qos")):
        proc = python("-m", module)
        assert proc.returncode == 2, proc.stderr
        assert proc.stderr.startswith(f"usage: {prog} ") and "COMMAND ..." in proc.stderr
