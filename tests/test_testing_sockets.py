"""``zmtp.testing.probe_path`` on scripted paths: the probes a test's path may lose or delay,
played exactly (each ``recv`` call is one brief wait; nothing here depends on timing)."""

from __future__ import annotations

import anyio
import pytest

from zmtp.testing import probe_path

pytestmark = pytest.mark.anyio


async def test_a_probe_lost_after_the_path_opened_is_probed_past() -> None:
    """The flake of test_radio_never_blocks_and_dish_back_pressure_loses_nothing_it_read: at
    ``send_hwm=1`` probe 1 still waits in the RADIO's queue when the brief wait ends, so probe
    2 is dropped, and then probe 1 comes out. Waiting for probe 2 alone never ended."""
    sent: list[bytes] = []
    in_flight: list[bytes] = []

    async def send(data: bytes) -> None:
        sent.append(data)
        if data != b"probe-2":  # dropped: the queue was full
            in_flight.append(data)

    async def recv() -> list[bytes] | None:
        await anyio.lowlevel.checkpoint()
        if in_flight and len(sent) >= 2:  # probe 1 comes out late, after probe 2 was sent
            return [in_flight.pop(0)]
        return None

    await probe_path(send, recv)
    assert sent == [b"probe-1", b"probe-2", b"probe-3"]
    assert in_flight == []  # read up to the last probe sent: nothing left for the test


async def test_a_slow_path_is_outwaited_not_chased() -> None:
    """Every probe comes out only after 5 brief waits (a loaded machine): probing again after
    each empty wait would keep the newest probe always in flight; the doubling patience
    waits it out, and every probe sent is read, in order."""
    delay = 5
    clock = 0
    sent: list[tuple[int, bytes]] = []
    read: list[bytes] = []

    async def send(data: bytes) -> None:
        sent.append((clock, data))

    async def recv() -> list[bytes] | None:
        nonlocal clock
        await anyio.lowlevel.checkpoint()
        clock += 1
        due = [data for at, data in sent[len(read) :] if clock - at > delay]
        if due:
            read.append(due[0])
            return [due[0]]
        return None

    await probe_path(send, recv)
    assert read == [data for _, data in sent]  # nothing lost, nothing left in flight
    assert len(sent) < 16
