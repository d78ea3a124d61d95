"""The short CI version of the soak (tests/_soak.py; the long run is its command line): one
ROUTER in its own process serving well-behaved, slow, reconnecting and hostile peers and peer
processes SIGKILLed mid-stream, at random, on both backends and both tcp and ipc."""

from __future__ import annotations

import pytest

from tests._soak import soak


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_a_short_soak_loses_nothing_and_leaks_nothing(backend: str) -> None:
    report = soak(backend, seconds=8, connections=30, seed=14)
    assert report.lost == [], report.lost
    assert report.echoed_ok > 0 and report.kinds.get("hostile", 0) > 0, report.kinds
    assert report.killed_processes > 0, report.kinds  # peer processes SIGKILLed mid-stream
    assert report.peer_failures == []  # (the peers themselves only ever die by SIGKILL)
    base, final = report.baseline, report.final
    assert final["peers"] == 0, final
    assert final["fds"] <= base["fds"], (base, final)
    assert final["tasks"] == base["tasks"], (base, final)
    assert report.peak_peers >= 30, report.peak_peers  # the long-lived ones, at least
    assert report.peak_rss_kib - base["rss_kib"] < 64 * 1024, (base, report.peak_rss_kib)
