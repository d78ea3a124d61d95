"""The old private helper modules are deprecated shims over ``zmtp.testing``: each name they
still export is the public object itself, so tests written against them (some may still be
on their way in) keep working while the project's own tests import ``zmtp.testing``."""

from __future__ import annotations

import importlib

import pytest

SHIMS = ("tests._sockets_util", "tests.interop_helpers", "tests.faultproxy")


@pytest.mark.parametrize("name", SHIMS)
def test_every_name_of_a_shim_is_public_in_zmtp_testing(name: str) -> None:
    shim = importlib.import_module(name)
    for attr in shim.__all__:
        value = getattr(shim, attr)
        module = getattr(value, "__module__", None)
        if module is None:  # a constant: find it in a zmtp.testing module by name
            sources = [
                importlib.import_module(f"zmtp.testing.{m}")
                for m in ("sockets", "wire", "fixtures", "tcp_peers", "rawpeer")
            ]
            assert any(getattr(s, attr, object()) == value for s in sources), attr
        else:
            assert module.startswith("zmtp.testing"), (attr, module)
