"""``zmtp trace --pcap FILE``: what the relay saw as a pcapng file, read back block by block
(structure, both checksums, TCP sequence numbers, the bytes of each direction), from a live
relay between pyzmq peers on both backends and from a capture converted with ``--read``; and,
where Debian's ``tshark`` is installed, opened by Wireshark itself."""

from __future__ import annotations

import base64
import json
import shutil
import subprocess
from pathlib import Path

import pytest

from tests import _cli
from tests._cli import ROOT, Tool, zmtp_command
from zmtp.cli.pcapng import ACK, FIN, MAX_SEGMENT, PSH, SYN, Packet, PcapngWriter, read_packets

pytestmark = pytest.mark.interop
zmq = pytest.importorskip("zmq")
#: The pyzmq context fixture of tests/_cli.py, under the name these tests take it by.
context = _cli.context

BACKENDS = ["asyncio", "trio"]


def streams(packets: list[Packet], client_port: int) -> tuple[bytes, bytes]:
    """The bytes each way of the connection from ``client_port``, checking that every
    segment starts where the previous one of its direction ended."""
    out = {True: b"", False: b""}
    expected: dict[bool, int] = {}
    for p in packets:
        if client_port not in (p.sport, p.dport):
            continue
        up = p.sport == client_port
        if p.flags & SYN:
            expected[up] = p.seq + 1
            continue
        assert p.seq == expected[up], (p, expected)
        out[up] += p.payload
        expected[up] = p.seq + len(p.payload) + (1 if p.flags & FIN else 0)
    return out[True], out[False]


def test_the_writer_round_trip(tmp_path: Path) -> None:
    """Handshake, data (a chunk bigger than one segment is split), FIN both ways; a second
    connection gets its own client port; acks follow the other side's bytes."""
    path = tmp_path / "t.pcapng"
    with path.open("wb") as out:
        writer = PcapngWriter(out, 6000)
        writer.data(10.0, 1, True, b"hello")
        writer.data(10.5, 1, False, b"W" * (MAX_SEGMENT + 10))
        writer.data(11.0, 2, True, b"second")
        writer.close(12.0, 1)
        writer.close(12.0, 2)
        writer.data(13.0, 1, True, b"after close: dropped")
    packets = read_packets(path.read_bytes())
    first = [p for p in packets if 40001 in (p.sport, p.dport)]
    assert [p.flags for p in first] == [
        SYN, SYN | ACK, ACK, PSH | ACK, PSH | ACK, PSH | ACK, FIN | ACK, FIN | ACK, ACK,
    ]  # fmt: skip
    assert {(p.src, p.dst) for p in first} == {
        ("127.0.0.1", "127.0.0.2"),
        ("127.0.0.2", "127.0.0.1"),
    }
    assert {p.dport for p in first if p.src == "127.0.0.1"} == {6000}
    assert [len(p.payload) for p in first if p.payload] == [5, MAX_SEGMENT, 10]
    assert first[3].time == 10.0 and first[4].time == 10.5
    up, down = streams(packets, 40001)
    assert (up, down) == (b"hello", b"W" * (MAX_SEGMENT + 10))
    assert first[-1].ack == first[-2].seq + 1  # the last ACK acknowledges the server's FIN
    assert streams(packets, 40002) == (b"second", b"")


def test_a_damaged_file_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "t.pcapng"
    with path.open("wb") as out:
        PcapngWriter(out).data(1.0, 1, True, b"payload")
    data = bytearray(path.read_bytes())
    data[-20] ^= 0xFF  # inside the last packet's payload: the TCP checksum no longer holds
    with pytest.raises(ValueError, match="checksum"):
        read_packets(bytes(data))
    with pytest.raises(ValueError, match="pcapng"):
        read_packets(b"\xd4\xc3\xb2\xa1" + bytes(20))  # a classic pcap header


def relay_req_rep(context: object, backend: str, tmp_path: Path) -> tuple[Path, Path, int]:
    """A pyzmq REQ talks to a pyzmq REP through ``zmtp trace --pcap --capture``, then Ctrl-C."""
    server = context.socket(zmq.REP)  # type: ignore[attr-defined]
    server.bind("tcp://127.0.0.1:*")
    port = int(server.last_endpoint.decode().rsplit(":", 1)[1])
    pcap, capture = tmp_path / "live.pcapng", tmp_path / "capture.jsonl"
    tool = Tool(["trace", "--listen", "tcp://127.0.0.1:*", "--to", f"tcp://127.0.0.1:{port}",
                 "--pcap", str(pcap), "--capture", str(capture), "--backend", backend])  # fmt: skip
    try:
        line = tool.wait_for(lambda text: "listening on" in text, stream="err")
        listen = line.split("listening on ", 1)[1].split(",", 1)[0]
        client = context.socket(zmq.REQ)  # type: ignore[attr-defined]
        client.connect(listen)
        client.send_multipart([b"hello", b"x" * 300])
        assert server.poll(30000) and server.recv_multipart() == [b"hello", b"x" * 300]
        server.send(b"world")
        assert client.poll(30000) and client.recv() == b"world"
        client.close(linger=0)
        tool.wait_for(lambda text: text.endswith("-- client closed"))
        assert tool.interrupt() == 0
    finally:
        tool.kill()
        server.close(linger=0)
    return pcap, capture, port


def captured(capture: Path) -> tuple[bytes, bytes]:
    records = [json.loads(line) for line in capture.read_text().splitlines()]
    data = {d: b"" for d in ("C>S", "S>C")}
    for r in records:
        if r["dir"] in data:
            data[r["dir"]] += base64.b64decode(r["data"])
    return data["C>S"], data["S>C"]


@pytest.mark.parametrize("backend", BACKENDS)
def test_live_relay_writes_what_it_relayed(context: object, backend: str, tmp_path: Path) -> None:
    pcap, capture, port = relay_req_rep(context, backend, tmp_path)
    packets = read_packets(pcap.read_bytes())
    assert packets[0].flags == SYN and packets[0].dport == port  # the port of --to
    assert [p.flags & FIN for p in packets[-3:-1]] == [FIN, FIN]
    up, down = streams(packets, packets[0].sport)
    assert (up, down) == captured(capture)  # exactly the bytes relayed, each way, in order
    assert up.startswith(b"\xff") and b"\x01\x05hello" in up and b"\x00\x05world" in down

    # The capture converts to the same bytes (the server port then defaults to 5555).
    converted = tmp_path / "converted.pcapng"
    proc = subprocess.run(
        zmtp_command("trace", "--read", str(capture), "--pcap", str(converted)),
        capture_output=True, text=True, timeout=60, cwd=ROOT, check=False,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert "greeting ZMTP 3.1" in proc.stdout  # it still prints the decoded trace
    again = read_packets(converted.read_bytes())
    assert again[0].dport == 5555
    assert streams(again, again[0].sport) == (up, down)


def test_wireshark_opens_it(context: object, tmp_path: Path) -> None:
    """tshark reads the file, finds one TCP conversation without analysis warnings, and
    follows it to exactly the bytes relayed."""
    tshark = shutil.which("tshark")
    if tshark is None:
        pytest.skip("tshark is not installed (Debian: apt-get install tshark)")
    pcap, capture, port = relay_req_rep(context, "asyncio", tmp_path)
    warnings = subprocess.run(
        [tshark, "-r", str(pcap), "-Y", "tcp.analysis.flags"],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert warnings.returncode == 0 and warnings.stdout.strip() == "", warnings
    follow = subprocess.run(
        [tshark, "-r", str(pcap), "-q", "-z", "follow,tcp,raw,0"],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert follow.returncode == 0, follow.stderr
    digits = set("0123456789abcdef\t")
    hexes = [line for line in follow.stdout.splitlines() if line and set(line) <= digits]
    up = bytes.fromhex("".join(h for h in hexes if not h.startswith("\t")))
    down = bytes.fromhex("".join(h.strip() for h in hexes if h.startswith("\t")))
    assert (up, down) == captured(capture)
    assert f"127.0.0.2:{port}" in follow.stdout
