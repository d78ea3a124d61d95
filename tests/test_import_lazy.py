"""The lazy package attributes (zmtp/lazyload.py): every public name resolves, and a plain
``import zmtp`` / ``import zmtp_qos`` leaves the costly modules unloaded.

Not a timing test (timings live in benchmarks/bench_import.py and docs/performance.md): it
checks *what* is imported, in a fresh interpreter, so the laziness cannot silently regress.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

#: Modules a plain async socket never needs; ``import zmtp`` must not load any of them.
NOT_AT_IMPORT_ZMTP = [
    "cryptography",
    "zmtp.auth.authenticator",
    "zmtp.auth.certs",
    "zmtp.auth.policy",
    "zmtp.auth.zap",
    "zmtp.cli",
    "zmtp.context",
    "zmtp.crypto",
    "zmtp.engine.udp",
    "zmtp.interop",
    "zmtp.poller",
    "zmtp.protocol.curve",
    "zmtp.protocol.plain",
    "zmtp.proxy",
    "zmtp.sync",
    "zmtp.sync_loop",
    "zmtp.testing",
    "zmtp_qos",
    "json",
    "pickle",
    "tempfile",
    "uuid",
]
#: ... and ``import zmtp_qos`` must not load the CLI or the Producer/Worker machinery either.
NOT_AT_IMPORT_QOS = [
    *(m for m in NOT_AT_IMPORT_ZMTP if m != "zmtp_qos"),
    "zmtp_qos.cli",
    "zmtp_qos.cli_worker",
    "zmtp_qos.cat_plugin",
    "zmtp_qos.producer",
    "zmtp_qos.worker",
]


def loaded_after(statement: str, candidates: list[str]) -> list[str]:
    """Which of ``candidates`` are in ``sys.modules`` after ``statement``, in a new interpreter."""
    # The probe's own json import comes after the snapshot, so json is checked honestly.
    probe = (
        f"import sys\n{statement}\nloaded = sorted(sys.modules)\n"
        "import json\nprint(json.dumps(loaded))"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=60
    )
    loaded = set(json.loads(out.stdout))
    return [m for m in candidates if m in loaded]


def test_import_zmtp_leaves_costly_modules_unloaded() -> None:
    assert loaded_after("import zmtp", NOT_AT_IMPORT_ZMTP) == []


def test_import_zmtp_qos_leaves_costly_modules_unloaded() -> None:
    assert loaded_after("import zmtp_qos", NOT_AT_IMPORT_QOS) == []


def test_a_plain_socket_still_needs_no_crypto() -> None:
    """Making a NULL socket (options validated, strategy loaded) keeps CURVE unloaded."""
    statement = "import zmtp\nzmtp.Socket(zmtp.PUSH)\nzmtp.Socket(zmtp.SUB)"
    assert loaded_after(statement, ["cryptography", "zmtp.protocol.curve", "zmtp.crypto"]) == []


@pytest.mark.parametrize("package", ["zmtp", "zmtp_qos"])
def test_every_public_name_resolves(package: str) -> None:
    """``pkg.X`` and ``from pkg import X`` work for every name in ``__all__``, and ``dir``
    lists them: checked in a fresh interpreter, where nothing has been loaded on the side."""
    probe = f"""
import importlib, json
pkg = importlib.import_module({package!r})
missing = [n for n in pkg.__all__ if n not in dir(pkg)]
for name in pkg.__all__:
    value = getattr(pkg, name)
    exec(f"from {package} import {{name}} as imported")
    assert imported is value, name
print(json.dumps(missing))
"""
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout) == []


def test_lazy_names_are_the_defining_modules_objects() -> None:
    import zmtp
    import zmtp.auth
    import zmtp.auth.authenticator
    import zmtp.crypto
    import zmtp.poller
    import zmtp_qos
    import zmtp_qos.worker

    assert zmtp.Authenticator is zmtp.auth.Authenticator is zmtp.auth.authenticator.Authenticator
    assert zmtp.curve_keypair is zmtp.crypto.curve_keypair
    assert zmtp.Poller is zmtp.poller.Poller
    assert zmtp_qos.Worker is zmtp_qos.worker.Worker
    assert "Worker" in dir(zmtp_qos)


def test_unknown_name_is_an_attribute_error() -> None:
    import zmtp
    import zmtp.routing

    with pytest.raises(AttributeError, match="no_such_name"):
        zmtp.no_such_name  # noqa: B018
    with pytest.raises(ImportError):
        exec("from zmtp import no_such_name")
    with pytest.raises(AttributeError, match="Nope"):
        zmtp.routing.Nope  # noqa: B018


def test_routing_strategies_resolve_lazily() -> None:
    from zmtp.routing import STRATEGIES, RoutingStrategy

    assert len(STRATEGIES) == 19
    for name in STRATEGIES:
        cls = STRATEGIES[name]
        assert issubclass(cls, RoutingStrategy) and cls.socket_type == name
    assert "NOPE" not in STRATEGIES and STRATEGIES.get("NOPE") is None


def test_subpackages_the_eager_init_loaded_stay_reachable() -> None:
    """``zmtp.crypto.X`` after a bare ``import zmtp`` worked when ``__init__`` imported it as a
    side effect; it still does (loaded on first use), in a fresh interpreter."""
    probe = """
import zmtp, zmtp_qos
assert "crypto" in dir(zmtp) and "worker" in dir(zmtp_qos)
assert zmtp.crypto.curve_keypair is zmtp.curve_keypair
assert zmtp.auth.certs.load_certificate is zmtp.auth.load_certificate
assert zmtp.context.Context is zmtp.Context and zmtp.poller.Poller is zmtp.Poller
assert zmtp_qos.worker.Worker is zmtp_qos.Worker and zmtp_qos.producer.Producer is zmtp_qos.Producer
"""
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
