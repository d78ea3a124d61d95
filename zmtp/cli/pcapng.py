"""pcapng output for ``zmtp trace --pcap FILE``: what the relay saw, as TCP that Wireshark opens.

The relay sees byte streams, not packets, so each connection is written as a made-up TCP
conversation carrying exactly those bytes: a handshake (SYN, SYN-ACK, ACK), one segment per
chunk read (PSH|ACK, split at 65,000 bytes), and FIN both ways when the connection ends. The
addresses are 127.0.0.1 (client) to 127.0.0.2 (server), the server's port that of ``--to``
when it is tcp (else 5555), the client's port 40000 + the connection number: a filter like
``tcp.stream == 0`` picks one connection, ``Follow TCP Stream`` shows its bytes, and a ZMTP
dissector (a Lua plugin for Debian's Wireshark 4.0, which has none built in) decodes it with
``Decode As... zmtp`` on that port.

Only the minimal pcapng blocks are written (a section header, one interface of link type
RAW = raw IPv4, enhanced packet blocks with microsecond timestamps): about a hundred lines,
against a dependency. Checksums are correct, so Wireshark shows no errors.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field
from typing import BinaryIO

#: pcapng block types and the one link type used (LINKTYPE_RAW: each packet is an IP packet).
SECTION_HEADER, INTERFACE_DESCRIPTION, ENHANCED_PACKET = 0x0A0D0D0A, 0x00000001, 0x00000006
BYTE_ORDER_MAGIC = 0x1A2B3C4D
LINKTYPE_RAW = 101
SNAPLEN = 0  # no limit
#: Largest payload per TCP segment (an IPv4 packet holds at most 65,535 bytes).
MAX_SEGMENT = 65000

CLIENT_IP, SERVER_IP = bytes((127, 0, 0, 1)), bytes((127, 0, 0, 2))
DEFAULT_SERVER_PORT = 5555
CLIENT_PORT_BASE = 40000

FIN, SYN, PSH, ACK = 0x01, 0x02, 0x08, 0x10


def _block(kind: int, body: bytes) -> bytes:
    """A pcapng block: type, total length, body padded to 32 bits, total length again."""
    padded = body + b"\0" * (-len(body) % 4)
    length = 12 + len(padded)
    return struct.pack("<II", kind, length) + padded + struct.pack("<I", length)


def _checksum(data: bytes) -> int:
    """The Internet checksum (RFC 1071): one's complement of the one's complement sum of the
    16-bit big-endian words (0 over data that holds its own valid checksum)."""
    if len(data) % 2:
        data += b"\0"
    total: int = sum(struct.unpack(f">{len(data) // 2}H", data))
    while total >> 16:
        total = (total & 0xFFFF) + (total >> 16)
    return ~total & 0xFFFF


def tcp_packet(
    src: bytes, dst: bytes, sport: int, dport: int, seq: int, ack: int, flags: int, payload: bytes
) -> bytes:
    """One IPv4 packet carrying one TCP segment, both checksums filled in."""
    tcp = struct.pack(
        ">HHIIBBHHH", sport, dport, seq & 0xFFFFFFFF, ack & 0xFFFFFFFF, 5 << 4, flags, 65535, 0, 0
    )
    pseudo = src + dst + struct.pack(">BBH", 0, 6, len(tcp) + len(payload))
    check = _checksum(pseudo + tcp + payload)
    tcp = tcp[:16] + struct.pack(">H", check) + tcp[18:]
    total = 20 + len(tcp) + len(payload)
    ip = struct.pack(">BBHHHBBH4s4s", 0x45, 0, total, 0, 0x4000, 64, 6, 0, src, dst)
    ip = ip[:10] + struct.pack(">H", _checksum(ip)) + ip[12:]
    return ip + tcp + payload


@dataclass
class _Flow:
    """One connection's TCP state: the next sequence number of each side."""

    client_port: int
    next_seq: dict[bool, int] = field(default_factory=lambda: {True: 1000, False: 5000})
    closed: bool = False


class PcapngWriter:
    """Writes the section header and the interface at once, then packets as they are given.

    ``data(when, conn, from_client, payload)`` records bytes one side sent; ``close(when,
    conn)`` ends that connection (FIN both ways). A connection's handshake is written before
    its first bytes.
    """

    def __init__(self, out: BinaryIO, server_port: int = DEFAULT_SERVER_PORT) -> None:
        self.out = out
        self.server_port = server_port
        self.flows: dict[int, _Flow] = {}
        section = struct.pack("<IHHq", BYTE_ORDER_MAGIC, 1, 0, -1)  # version 1.0, length unknown
        out.write(_block(SECTION_HEADER, section))
        interface = struct.pack("<HHI", LINKTYPE_RAW, 0, SNAPLEN)
        out.write(_block(INTERFACE_DESCRIPTION, interface))
        out.flush()

    def _packet(self, when: float, packet: bytes) -> None:
        micros = round(when * 1_000_000)
        header = struct.pack(
            "<IIIII", 0, micros >> 32, micros & 0xFFFFFFFF, len(packet), len(packet)
        )
        self.out.write(_block(ENHANCED_PACKET, header + packet))

    def _segment(
        self, when: float, flow: _Flow, from_client: bool, flags: int, payload: bytes
    ) -> None:
        src, dst = (CLIENT_IP, SERVER_IP) if from_client else (SERVER_IP, CLIENT_IP)
        sport, dport = (
            (flow.client_port, self.server_port)
            if from_client
            else (self.server_port, flow.client_port)
        )
        seq = flow.next_seq[from_client]
        ack = flow.next_seq[not from_client] if flags & ACK else 0
        self._packet(when, tcp_packet(src, dst, sport, dport, seq, ack, flags, payload))
        flow.next_seq[from_client] = seq + len(payload) + (1 if flags & (SYN | FIN) else 0)

    def _flow(self, when: float, conn: int) -> _Flow:
        flow = self.flows.get(conn)
        if flow is None:
            flow = self.flows[conn] = _Flow(CLIENT_PORT_BASE + conn % 25000)
            self._segment(when, flow, True, SYN, b"")
            self._segment(when, flow, False, SYN | ACK, b"")
            self._segment(when, flow, True, ACK, b"")
        return flow

    def data(self, when: float, conn: int, from_client: bool, payload: bytes) -> None:
        flow = self._flow(when, conn)
        if flow.closed:
            return
        for start in range(0, len(payload), MAX_SEGMENT):
            self._segment(when, flow, from_client, PSH | ACK, payload[start : start + MAX_SEGMENT])
        self.out.flush()

    def close(self, when: float, conn: int) -> None:
        flow = self.flows.get(conn)
        if flow is None or flow.closed:
            return
        self._segment(when, flow, True, FIN | ACK, b"")
        self._segment(when, flow, False, FIN | ACK, b"")
        self._segment(when, flow, True, ACK, b"")
        flow.closed = True
        self.out.flush()


@dataclass(frozen=True)
class Packet:
    """One packet read back by :func:`read_packets`: its time and the TCP segment's fields."""

    time: float
    src: str
    dst: str
    sport: int
    dport: int
    seq: int
    ack: int
    flags: int
    payload: bytes


def read_packets(data: bytes) -> list[Packet]:
    """The packets of a pcapng file as :class:`PcapngWriter` writes them (little-endian, one
    RAW interface, IPv4/TCP): for tests and for checking a file without Wireshark. Checks the
    block structure and both checksums; ValueError on anything else."""
    packets: list[Packet] = []
    pos = 0
    while pos < len(data):
        if len(data) - pos < 12:
            raise ValueError(f"truncated block at {pos}")
        kind, length = struct.unpack_from("<II", data, pos)
        if pos == 0 and kind != SECTION_HEADER:
            raise ValueError("not a pcapng file (no section header block first)")
        if length < 12 or length % 4 or pos + length > len(data):
            raise ValueError(f"bad block length {length} at {pos}")
        (trailer,) = struct.unpack_from("<I", data, pos + length - 4)
        if trailer != length:
            raise ValueError(f"block at {pos}: trailing length {trailer} != {length}")
        body = data[pos + 8 : pos + length - 4]
        if pos == 0 and body[:4] != struct.pack("<I", BYTE_ORDER_MAGIC):
            raise ValueError("not a little-endian pcapng file")
        if kind == INTERFACE_DESCRIPTION and struct.unpack_from("<H", body)[0] != LINKTYPE_RAW:
            raise ValueError("not a RAW (IP) interface")
        if kind == ENHANCED_PACKET:
            _, high, low, captured, _ = struct.unpack_from("<IIIII", body)
            packets.append(_parse_packet(((high << 32) | low) / 1e6, body[20 : 20 + captured]))
        pos += length
    return packets


def _parse_packet(when: float, packet: bytes) -> Packet:
    if packet[0] != 0x45 or packet[9] != 6 or _checksum(packet[:20]) != 0:
        raise ValueError("not an IPv4/TCP packet with a valid header checksum")
    total = struct.unpack_from(">H", packet, 2)[0]
    src, dst = packet[12:16], packet[16:20]
    segment = packet[20:total]
    pseudo = src + dst + struct.pack(">BBH", 0, 6, len(segment))
    if _checksum(pseudo + segment) != 0:
        raise ValueError("bad TCP checksum")
    sport, dport, seq, ack, offset, flags = struct.unpack_from(">HHIIBB", segment)
    return Packet(
        when,
        ".".join(map(str, src)),
        ".".join(map(str, dst)),
        sport,
        dport,
        seq,
        ack,
        flags,
        bytes(segment[(offset >> 4) * 4 :]),
    )


__all__ = ["Packet", "PcapngWriter", "read_packets", "tcp_packet"]
