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


CORPUS = FUZZ / "corpus"


@pytest.mark.parametrize("name", sorted(TARGETS))
def test_every_file_of_a_target_s_tracked_corpus_replays_through_it(name: str) -> None:
    """The corpus fuzz/run.sh grew (issue 14) runs on each CI run, naming a failing file."""
    files = sorted((CORPUS / name).iterdir())
    assert files, f"no tracked corpus for {name} in {CORPUS / name}"
    for path in files:
        try:
            TARGETS[name](path.read_bytes())
        except BaseException as exc:
            raise AssertionError(f"{path.relative_to(FUZZ.parent)}: {exc!r}") from exc


@pytest.mark.parametrize("name", sorted(load("fuzz_protocol").CONNECTION_TARGETS))
def test_a_connection_target_s_corpus_holds_a_completed_handshake(name: str) -> None:
    """A corpus of only early failures would fuzz nothing past HELLO: at least one input of
    each mechanism's corpus must take the connection to READY (fixed keys, replayable
    randomness: fuzz_protocol.DeterministicRandom)."""
    module = load("fuzz_protocol")
    target = module.CONNECTION_TARGETS[name]
    states = {target.run(path.read_bytes()).state for path in (CORPUS / name).iterdir()}
    assert module.State.READY in states, (name, states)
