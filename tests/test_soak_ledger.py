"""The soak's definition of a lost message (tests/_soak_ledger.py): strict where the victim is
to blame, and a shortfall explained only by a connection that ended (or never came up)."""

from __future__ import annotations

from collections import Counter
from typing import Any

from tests._soak_ledger import PeerRecord, in_order, judge


def peer(sent: int, got: list[int], **events: int) -> PeerRecord:
    return PeerRecord(
        "good-x", [b"m%d" % i for i in range(sent)], [b"m%d" % i for i in got], Counter(events)
    )


def entry(accepted: int, delivered: int, written: int, *ends: str) -> dict[str, Any]:
    return {
        "connections": 1 + len(ends),
        "accepted": accepted,
        "delivered": delivered,
        "written": written,
        "ends": list(ends),
        "history": [],
    }


def test_what_the_victim_accepted_and_did_not_deliver_is_lost_even_with_a_reset() -> None:
    verdict = judge(peer(5, [0, 1]), entry(5, 2, 2, "connection lost: reset"))
    assert verdict.lost == 3


def test_a_shortfall_on_a_connection_that_stayed_up_is_lost() -> None:
    assert judge(peer(5, [0, 1, 2]), entry(5, 5, 5)).lost == 2  # written, never received
    assert judge(peer(5, [0, 1, 2]), entry(3, 3, 3)).lost == 2  # never accepted


def test_a_shortfall_explained_by_a_connection_that_ended() -> None:
    verdict = judge(peer(5, [0, 1]), entry(4, 4, 3, "heartbeat timeout: no traffic after PING"))
    assert verdict.lost == 0
    assert "1 never accepted, 1 echoes dropped and 1 unreceived" in verdict.explanation
    assert judge(peer(5, [0], DISCONNECTED=1), entry(1, 1, 1)).lost == 0  # the peer saw it


def test_echoes_written_on_a_connection_the_victim_still_holds_must_arrive() -> None:
    # The peer's own disconnect (an earlier connection) does not explain them.
    verdict = judge(peer(6, [], DISCONNECTED=1, HANDSHAKE_FAILED_NO_DETAIL=1), entry(6, 6, 6))
    assert verdict.lost == 6


def test_a_peer_that_never_completed_a_handshake_lost_nothing_of_the_victims() -> None:
    verdict = judge(peer(5, []), None)
    assert (verdict.lost, verdict.explanation) == (
        0,
        "never completed a handshake (5 never accepted)",
    )


def test_replies_out_of_order_or_twice_are_a_loss() -> None:
    assert judge(peer(3, [1, 0]), entry(3, 3, 3, "closed")).lost == 1
    assert not in_order([b"a", b"a"], [b"a", b"b"])
    assert in_order([b"a", b"c"], [b"a", b"b", b"c"])
