"""Socket-type compatibility (RFC 37 table, docs/libzmq-notes.md#socket-type-check): every type
against one peer it must refuse, on tcp and inproc; the refusal shows in the monitor with the
reason."""

from __future__ import annotations

import pytest

import zmtp
from zmtp.protocol.sockettypes import SocketType, compatible
from zmtp.testing import bindable, wait_event

pytestmark = pytest.mark.anyio

ALL = [t.value for t in SocketType]
#: Every type, with the first type in the table it must refuse.
REFUSED = [(t, next(p for p in ALL if not compatible(t, p))) for t in ALL]


@pytest.mark.parametrize("transport", ["tcp", "inproc"])
@pytest.mark.parametrize(("ours", "peer"), REFUSED, ids=[f"{a}-{b}" for a, b in REFUSED])
async def test_incompatible_pair_is_refused_with_the_reason(
    ours: str, peer: str, transport: str
) -> None:
    async with (
        zmtp.Socket(ours, linger=0) as bound,
        zmtp.Socket(peer, linger=0, reconnect_ivl=None) as connecting,
    ):
        async with bound.monitor() as bmon, connecting.monitor() as cmon:
            endpoint = await bound.bind(bindable(transport))
            await connecting.connect(endpoint)
            failed = await wait_event(bmon, zmtp.HandshakeFailed)
            other = await wait_event(cmon, zmtp.HandshakeFailed)
        # The side that read the peer's READY names both types; the other side may instead
        # have received our ERROR first ("Invalid socket type", RFC 37).
        reasons = (failed.reason, other.reason)
        assert f"incompatible socket types: {ours} cannot talk to {peer}" in reasons or (
            f"incompatible socket types: {peer} cannot talk to {ours}" in reasons
        ), reasons
        assert all("socket type" in r for r in reasons), reasons


def test_the_table_is_symmetric_and_matches_rfc_37() -> None:
    for a in ALL:
        for b in ALL:
            assert compatible(a, b) == compatible(b, a), (a, b)
    assert {p for p in ALL if compatible("DEALER", p)} == {"REP", "DEALER", "ROUTER"}
    assert {p for p in ALL if compatible("PEER", p)} == {"PEER"}
