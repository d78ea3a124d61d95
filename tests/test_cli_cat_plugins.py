"""The ``zmtp cat`` plugin mechanism (``zmtp/cli/cat_plugins.py``, entry-point group
``zmtp.cli.cat``) end to end in subprocesses: a third-party plugin found through a real
``.dist-info`` on the path, the clear error for ``--qos`` when no plugin provides it (none
registered, or the one registered fails to load), two plugins in one run refused; and that
zmtp's code never names the QoS package (it reaches it only through the entry point)."""

from __future__ import annotations

import ast
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests import _cli
from tests._cli import ROOT

pytestmark = pytest.mark.interop
zmq = pytest.importorskip("zmq")
#: The pyzmq context fixture of tests/_cli.py, under the name these tests take it by.
context = _cli.context

BACKENDS = ["asyncio", "trio"]

#: ``zmtp`` with the entry points of the group replaced: ``sys.argv[1]`` is a JSON list of
#: (name, value) pairs, the rest the command line. Patched before zmtp.cli is imported, as
#: an environment without the QoS registration (or with a broken one) would be.
PATCHED = textwrap.dedent(
    """
    import importlib.metadata as metadata, json, sys
    points = [metadata.EntryPoint(name, value, "zmtp.cli.cat")
              for name, value in json.loads(sys.argv[1])]
    real = metadata.entry_points
    def entry_points(**selection):
        if selection.get("group") == "zmtp.cli.cat":
            return points
        return real(**selection)
    metadata.entry_points = entry_points
    from zmtp.cli import main
    sys.exit(main(sys.argv[2:]))
    """
)

SHOUT = textwrap.dedent(
    '''
    """A third-party zmtp cat plugin: --shout upper-cases what arrives."""
    from zmtp.cli.cat_plugins import CatError, CatHooks, CatPlugin

    class Shout(CatHooks):
        def __init__(self, io):
            self.io = io
            self.written_count = 0

        async def receive(self, sock):
            return [part.upper() for part in await sock.recv_multipart()]

        def written(self, message):
            self.written_count += 1

        def closed(self):
            self.io.warn(f"shouted {self.written_count}")
            return 0

    class ShoutPlugin(CatPlugin):
        options = ("--shout",)

        def add_arguments(self, parser):
            parser.add_argument_group("shouting").add_argument("--shout", action="store_true")

        def activate(self, args, kind, io):
            if not args.shout:
                return None
            if kind not in ("PULL", "SUB"):
                raise CatError(f"--shout is for PULL and SUB, not {kind}")
            return Shout(io)
    '''
)


@pytest.fixture
def shout_path(tmp_path: Path) -> str:
    """A directory holding the ``shoutplug`` module and its distribution's metadata, with
    its entry point in ``zmtp.cli.cat``: what ``pip install`` of such a package leaves."""
    (tmp_path / "shoutplug.py").write_text(SHOUT)
    info = tmp_path / "shoutplug-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: shoutplug\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text("[zmtp.cli.cat]\nshout = shoutplug:ShoutPlugin\n")
    return str(tmp_path)


def run(args: list[str], pythonpath: str = "", stdin: str = "") -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    if pythonpath:
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [pythonpath, env.get("PYTHONPATH")]))
    return subprocess.run(
        args, input=stdin, capture_output=True, text=True, timeout=90, cwd=ROOT, env=env,
        check=False,
    )  # fmt: skip


def patched(points: list[tuple[str, str]], *args: str) -> subprocess.CompletedProcess[str]:
    import json

    return run([sys.executable, "-c", PATCHED, json.dumps(points), *args])


def pull_endpoint(context: object, kind: int) -> tuple[object, str]:
    sock = context.socket(kind)  # type: ignore[attr-defined]
    sock.linger = 0
    sock.bind("tcp://127.0.0.1:*")
    return sock, sock.last_endpoint.decode()


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_third_party_plugin_changes_what_is_received(
    context: object, backend: str, shout_path: str
) -> None:
    """``shoutplug`` is found through its dist-info alone: its option is in ``--help``, its
    receive hook changes what is printed, its written and closed hooks run."""
    helped = run([sys.executable, "-m", "zmtp", "cat", "--help"], shout_path)
    assert "shouting:" in helped.stdout and "--shout" in helped.stdout, helped.stdout
    push, endpoint = pull_endpoint(context, zmq.PUSH)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [shout_path,
               os.environ.get("PYTHONPATH")])))  # fmt: skip
    proc = subprocess.Popen(
        [sys.executable, "-m", "zmtp", "cat", "PULL", "-c", endpoint, "--shout", "-n", "2",
         "-f", "quoted", "--backend", backend],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT, env=env,
    )  # fmt: skip
    try:
        push.sndtimeo = 60000  # type: ignore[attr-defined]
        push.send_multipart([b"hello", b"world"])  # type: ignore[attr-defined]  # once it is there
        push.send(b"again")  # type: ignore[attr-defined]
        out, err = proc.communicate(timeout=90)
    finally:
        proc.kill()
    assert proc.returncode == 0, err
    assert out.splitlines() == ['"HELLO" "WORLD"', '"AGAIN"']
    assert "zmtp cat: shouted 2" in err.splitlines()


def test_a_plugin_refuses_its_options(shout_path: str) -> None:
    proc = run([sys.executable, "-m", "zmtp", "cat", "PUSH", "--shout", "-c",
                "tcp://127.0.0.1:1", "-d", "x"], shout_path)  # fmt: skip
    assert proc.returncode == 1, proc.stderr
    assert proc.stderr.strip() == "zmtp cat: --shout is for PULL and SUB, not PUSH"


def test_two_plugins_in_one_run_are_refused(shout_path: str) -> None:
    proc = run([sys.executable, "-m", "zmtp", "cat", "PULL", "--shout", "--qos", "1", "-c",
                "tcp://127.0.0.1:1"], shout_path)  # fmt: skip
    assert proc.returncode == 1, proc.stderr
    assert "options of several plugins cannot be combined in one run: qos, shout" in proc.stderr


def test_qos_without_its_plugin_is_a_clear_error() -> None:
    """No plugin registered (the QoS layer not installed, or an editable install from before
    the entry point existed): ``--qos`` is still accepted by the parser and stops with an
    error that says where it comes from and how to get it; ``--help`` says it is missing."""
    proc = patched([], "cat", "PUSH", "--qos", "1", "-c", "tcp://127.0.0.1:1", "-d", "x")
    assert proc.returncode == 1, proc.stderr
    assert "Traceback" not in proc.stderr
    message = proc.stderr.strip()
    assert message.startswith("zmtp cat: --qos (per-hop delivery guarantees (docs/qos.md)) is ")
    assert "no installed package registers a plugin in the entry-point group 'zmtp.cli.cat'" in (
        message
    )
    assert "re-run pip install -e ." in message
    helped = patched([], "cat", "--help")
    assert "from plugins (none installed provides these)" in helped.stdout, helped.stdout
    assert "--dead-letter-timeout" not in helped.stdout


def test_a_plugin_that_fails_to_load_is_named_in_the_error() -> None:
    proc = patched([("qos", "no_such_module_here:Plugin")], "cat", "PULL", "--qos", "2", "-c",
                   "tcp://127.0.0.1:1")  # fmt: skip
    assert proc.returncode == 1, proc.stderr
    assert "plugin 'qos' failed to load: ModuleNotFoundError" in proc.stderr, proc.stderr


@pytest.mark.parametrize("backend", BACKENDS)
def test_without_plugins_cat_works_as_before(context: object, backend: str) -> None:
    """A broken plugin does not break ``zmtp cat``: without its options, lines still go out."""
    pull, endpoint = pull_endpoint(context, zmq.PULL)
    proc = patched([("broken", "no_such_module_here:Plugin")], "cat", "PUSH", "-c", endpoint,
                   "--backend", backend, "-d", "one")  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert pull.poll(30000)  # type: ignore[attr-defined]
    assert pull.recv_multipart() == [b"one"]  # type: ignore[attr-defined]


def test_zmtp_never_names_the_qos_package_in_code() -> None:
    """Not in an import (tests/test_layering.py checks those), and not in any string either
    (``importlib.import_module("...")``, a help text): zmtp knows its plugins only through the
    entry-point group."""
    offenders = []
    for path in sorted((ROOT / "zmtp").rglob("*.py")):
        tree = ast.parse(path.read_text(), str(path))
        for node in ast.walk(tree):
            text = node.value if isinstance(node, ast.Constant) else None
            if isinstance(text, str) and "zmtp_qos" in text:
                offenders.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert offenders == []
