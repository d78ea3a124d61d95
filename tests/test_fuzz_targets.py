"""The short CI run of the coverage-guided fuzz targets (issue 14): every target of
fuzz/fuzz_protocol.py and fuzz/fuzz_qos.py, fed hypothesis's bytes instead of atheris's (which
CI does not install), so that the targets keep running and keep their invariants (only the
protocol's own errors, bounded buffers) between long runs of fuzz/run.sh."""

from __future__ import annotations

import importlib.util
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

FUZZ = Path(__file__).resolve().parent.parent / "fuzz"


def load(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"fuzz_{name}", FUZZ / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def targets() -> dict[str, Callable[[bytes], None]]:
    found: dict[str, Callable[[bytes], None]] = dict(load("fuzz_protocol").TARGETS)
    found["qos-commands"] = load("fuzz_qos").fuzz_qos_commands
    return found


TARGETS = targets()


@pytest.mark.parametrize("name", sorted(TARGETS))
def test_a_fuzz_target_holds_its_invariants_on_random_input(name: str) -> None:
    target = TARGETS[name]

    @settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(st.binary(max_size=4096))
    def run(data: bytes) -> None:
        target(data)  # raises only if an invariant breaks (or something escapes)

    run()


def test_every_target_of_run_sh_is_run_here() -> None:
    script = (FUZZ / "run.sh").read_text()
    assert all(name in script for name in TARGETS), sorted(TARGETS)
