"""The opt-in pytest plugin of ``zmtp.testing`` (entry point ``zmtp``), in a separate pytest run
on a project of its own: off by default; turned on, the marker runs a test on both backends
and the fixtures give a running FaultProxy and a libzmq context."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

TESTS = textwrap.dedent(
    """
    import anyio
    import pytest
    import zmtp

    seen = []

    @pytest.mark.zmtp_both_backends
    async def test_runs_on_each_backend(anyio_backend):
        seen.append(anyio_backend)
        await anyio.sleep(0)

    def test_both_ran():
        assert sorted(seen) == ["asyncio", "trio"]

    @pytest.mark.zmtp_both_backends
    async def test_fault_proxy_and_libzmq(fault_proxy, libzmq):
        theirs = libzmq.socket("PULL")
        endpoint = theirs.bind("tcp://127.0.0.1:*")
        port = int(endpoint.rsplit(":", 1)[1])
        async with fault_proxy("127.0.0.1", port) as proxy:
            async with zmtp.Socket(zmtp.PUSH, linger=0) as push:
                await push.connect(proxy.endpoint)
                await push.send(b"through the proxy")
                assert await theirs.recv_many(1) == [[b"through the proxy"]]
            assert proxy.accepted == 1
    """
)


def run_pytest(project: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *args],
        cwd=project,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_plugin_is_opt_in_and_works_when_on(tmp_path: Path) -> None:
    (tmp_path / "test_user.py").write_text(TESTS)
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    off = run_pytest(tmp_path)
    assert off.returncode != 0 and "fixture 'fault_proxy' not found" in off.stdout, off.stdout
    on = run_pytest(tmp_path, "--zmtp-testing")
    assert on.returncode == 0, on.stdout + on.stderr
    assert "5 passed" in on.stdout, on.stdout
    (tmp_path / "pytest.ini").write_text("[pytest]\nzmtp_testing = true\n")
    ini = run_pytest(tmp_path)
    assert ini.returncode == 0 and "5 passed" in ini.stdout, ini.stdout + ini.stderr
