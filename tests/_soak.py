"""A soak of one zmtp process serving many connections (issue 14): well-behaved DEALERs that
must get every message echoed, slow readers that never read, peer processes SIGKILLed at a
random moment while their connections stream, flood or stall (tests/_soak_peer.py, raw peers
of :mod:`zmtp.testing`), reconnecting peers and hostile raw peers (garbage, PING floods, huge
frame headers, silent half-open connections), all at random, against one ROUTER echo server in
a child process, while ``--connections`` long-lived DEALERs stay connected throughout and keep
talking.

Checked: no message the victim accepted from a well-behaved peer is lost (tests/_soak_ledger.py
defines "lost": accepted by the victim and never delivered to its application, or missing on a
connection that stayed up; what a dropped connection took with it is reported, with the
reason, apart); the victim's RSS stays bounded; once the load stops, its descriptors, tasks and
peers return to their baseline (no leak). CI runs a short version
(tests/test_hardening_soak.py); the long run:

    python -m tests._soak --minutes 10 --connections 1000 --backend trio
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import select
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import zmq
from zmq.utils.monitor import recv_monitor_message

from tests._soak_ledger import PeerRecord, Verdict, judge

ROOT = Path(__file__).resolve().parent.parent
GREETING = b"\xff" + bytes(8) + b"\x7f\x03\x01NULL" + bytes(16) + b"\x00" + bytes(31)
READY_DEALER = b"\x04\x1c\x05READY\x0bSocket-Type\x00\x00\x00\x06DEALER"
PING = b"\x04\x07\x04PING\x00\x00"
#: What a well-behaved peer's own monitor records (tests/_soak_ledger.py reads them).
PEER_EVENTS = (
    zmq.EVENT_CONNECTED
    | zmq.EVENT_DISCONNECTED
    | zmq.EVENT_CONNECT_RETRIED
    | zmq.EVENT_HANDSHAKE_SUCCEEDED
    | zmq.EVENT_HANDSHAKE_FAILED_NO_DETAIL
    | zmq.EVENT_HANDSHAKE_FAILED_PROTOCOL
)
#: How long a good peer waits for its echoes before it is set aside (still read) as late.
ECHO_WAIT_MS = 10_000


@dataclass
class Report:
    rounds: int = 0
    echoed_ok: int = 0
    #: Messages the victim lost (tests/_soak_ledger.py): must stay empty.
    lost: list[str] = field(default_factory=list)
    #: Peers short of echoes for a reason that is not the victim's loss (a connection that
    #: ended, with its reason; a handshake never completed).
    shortfalls: list[str] = field(default_factory=list)
    #: Good peers whose echoes took longer than ECHO_WAIT_MS (then kept, and read, to the end).
    late: int = 0
    #: Why the victim's connections ended (all peers, by kind), and its refused handshakes.
    ends: dict[str, dict[str, int]] = field(default_factory=dict)
    baseline: dict[str, int] = field(default_factory=dict)
    peak_rss_kib: int = 0
    peak_peers: int = 0
    #: The victim's event loop at its most starved: how late a 0.1 s sleep woke up (ms).
    peak_lag_ms: int = 0
    #: (seconds into the run, RSS in KiB) every 10 s: a plateau or a slope.
    rss_samples: list[tuple[int, int]] = field(default_factory=list)
    #: (seconds into the run, the machine's 1-minute load average) at the same moments.
    load_samples: list[tuple[int, float]] = field(default_factory=list)
    final: dict[str, int] = field(default_factory=dict)
    kinds: dict[str, int] = field(default_factory=dict)
    #: Peer processes SIGKILLed (the kernel closed their connections mid-stream).
    killed_processes: int = 0
    #: Peer processes that exited by themselves (a bug of the peer: they only die by signal).
    peer_failures: list[int] = field(default_factory=list)


@dataclass
class PeerProcess:
    proc: subprocess.Popen[bytes]
    kill_at: float
    ready: bool = False


@dataclass
class WellBehaved:
    """A well-behaved peer: its socket, its own monitor and what it sent and got."""

    dealer: zmq.Socket[bytes]
    monitor: zmq.Socket[bytes]
    record: PeerRecord

    @classmethod
    def open(cls, ctx: zmq.Context[zmq.Socket[bytes]], name: str, endpoint: str) -> WellBehaved:
        dealer = ctx.socket(zmq.DEALER)
        dealer.routing_id = name.encode()  # the victim's ledger is kept by routing id
        # Not get_monitor_socket(): libzmq's I/O thread *blocks* on a monitor pipe at its HWM
        # (and every connection of the context with it), so this end takes any number of
        # events (rcvhwm 0: an inproc pipe without limit); the driver drains them each second.
        address = f"inproc://monitor-{name}"
        dealer.monitor(address, PEER_EVENTS)
        monitor = ctx.socket(zmq.PAIR)
        monitor.rcvhwm = 0
        monitor.connect(address)
        dealer.connect(endpoint)
        record = PeerRecord(name)
        record.timeline.append(f"{time.time():.3f} opened {endpoint}")
        return cls(dealer, monitor, record)

    def send(self, body: bytes) -> None:
        self.dealer.send(body)  # (at most 50 queued: never at sndhwm, so never dropped here)
        record = self.record
        if len(record.timeline) < 20:
            record.timeline.append(f"{time.time():.3f} sent {body!r}")
        record.sent.append(body)

    def collect(self) -> None:
        while self.dealer.poll(0):
            self.record.got.append(self.dealer.recv())

    def events(self) -> None:
        while self.monitor.poll(0):
            event = recv_monitor_message(self.monitor)
            name = str(zmq.Event(event["event"]).name)
            self.record.events[name] += 1
            if len(self.record.timeline) < 20:
                self.record.timeline.append(f"{time.time():.3f} {name}")

    def close(self) -> None:
        self.dealer.close(linger=0)  # (ends its monitor too)
        self.monitor.close(linger=0)


class Victim:
    def __init__(self, backend: str) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "tests._soak_victim", backend],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            cwd=ROOT,
            env=dict(os.environ, PYTHONPATH=str(ROOT)),
        )
        self.endpoints = self._read()

    def _read(self) -> dict[str, str]:
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError(f"the victim died (exit {self.proc.wait(10)})")
        data: dict[str, str] = json.loads(line)
        return data

    def stats(self) -> dict[str, int]:
        assert self.proc.stdin is not None
        self.proc.stdin.write("stats\n")
        self.proc.stdin.flush()
        return {k: int(v) for k, v in self._read().items()}

    def ask(self, command: str) -> dict[str, object]:
        assert self.proc.stdin is not None
        self.proc.stdin.write(command + "\n")
        self.proc.stdin.flush()
        return self._read()  # type: ignore[return-value]

    def forget(self, name: str) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(f"forget {name}\n")
        self.proc.stdin.flush()

    def close(self) -> int:
        if self.proc.poll() is None and self.proc.stdin is not None:
            self.proc.stdin.write("quit\n")
            self.proc.stdin.flush()
        try:
            return self.proc.wait(20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            return self.proc.wait(10)


def raw(endpoint: str) -> socket.socket:
    if endpoint.startswith("tcp://"):
        host, port = endpoint.removeprefix("tcp://").rsplit(":", 1)
        sock = socket.create_connection((host, int(port)), timeout=5)
    else:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(5)
        for _ in range(500):  # a unix socket's full backlog says EAGAIN (tcp's retries SYNs)
            try:
                sock.connect(endpoint.removeprefix("ipc://"))
                break
            except BlockingIOError:
                time.sleep(0.01)
        else:
            raise TimeoutError(f"{endpoint}: the backlog stayed full for 5 s")
    return sock


def has_input(fd: int) -> bool:
    """Whether ``fd`` can be read now (poll: the soak's descriptors go past select's 1024)."""
    poller = select.poll()
    poller.register(fd, select.POLLIN)
    return bool(poller.poll(0))


def kill(sock: socket.socket) -> None:
    """Close with a reset (SO_LINGER 0): a peer that aborts its connection."""
    with contextlib.suppress(OSError):
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
    sock.close()


class Driver:
    """The load: a pool of peers, each doing one random thing per round."""

    def __init__(
        self, victim: Victim, connections: int, rng: random.Random, backend: str = "asyncio"
    ) -> None:
        self.victim = victim
        self.backend = backend
        self.ctx = zmq.Context()
        # (default 1023): three libzmq sockets per well-behaved peer (its monitor is two)
        self.ctx.set(zmq.MAX_SOCKETS, 3 * connections + 4000)
        self.rng = rng
        self.connections = connections
        self.report = Report()
        self.held: list[tuple[float, object]] = []  # (release time, socket) kept open a while
        #: Long-lived peers connected for the whole run, and what each sent and got back.
        self.standing: list[WellBehaved] = []
        #: Good peers still short of echoes after ECHO_WAIT_MS: read until the end.
        self.pending: list[WellBehaved] = []
        self.churn = 50  #: short-lived peers held open at once (silent, flooding, slow)
        #: Peer processes alive: each is SIGKILLed a random while after it said ``ready``.
        self.processes: list[PeerProcess] = []
        self.max_processes = 4  #: (each is a Python interpreter: the machine has 2 cores)

    def endpoint(self) -> str:
        return self.victim.endpoints[self.rng.choice(("tcp", "ipc"))]

    def count(self, kind: str) -> None:
        self.report.kinds[kind] = self.report.kinds.get(kind, 0) + 1

    def good_peer(self) -> None:
        """Sends a few messages, must get each one back, closes cleanly."""
        name = f"good-{os.urandom(6).hex()}"
        peer = WellBehaved.open(self.ctx, name, self.endpoint())
        n = self.rng.randint(1, 50)
        for i in range(n):
            peer.send(f"{name}-{i}".encode())
        deadline = time.monotonic() + ECHO_WAIT_MS / 1000
        while len(peer.record.got) < n and time.monotonic() < deadline:
            if peer.dealer.poll(max(1, int(1000 * (deadline - time.monotonic())))):
                peer.collect()
        if peer.record.whole:
            self.whole(peer)
        else:  # kept open and read until the end: late, or short (tests/_soak_ledger.py)
            self.pending.append(peer)

    def whole(self, peer: WellBehaved) -> None:
        self.report.echoed_ok += len(peer.record.sent)
        self.victim.forget(peer.record.name)
        peer.close()

    def collect_pending(self) -> None:
        keep = []
        for peer in self.pending:
            peer.collect()
            if peer.record.whole:
                self.report.late += 1
                self.whole(peer)
            else:
                keep.append(peer)
        self.pending = keep

    def slow_reader(self) -> None:
        """Sends a burst and never reads; kept open for a while, then dropped."""
        dealer = self.ctx.socket(zmq.DEALER)
        dealer.linger = 0
        dealer.sndhwm = 5000
        dealer.connect(self.endpoint())
        for i in range(self.rng.randint(100, 3000)):
            try:
                dealer.send(b"slow-%d" % i, zmq.NOBLOCK)
            except zmq.Again:
                break
        self.held.append((time.monotonic() + self.rng.uniform(0.5, 3), dealer))

    def peer_process(self) -> None:
        """Start a peer process (tests/_soak_peer.py) and schedule its SIGKILL."""
        if len(self.processes) >= self.max_processes:
            return self.aborted_mid_stream()
        seed = str(self.rng.randrange(1 << 30))
        proc = subprocess.Popen(
            [sys.executable, "-m", "tests._soak_peer", self.backend, self.endpoint(), seed],
            stdout=subprocess.PIPE,
            cwd=ROOT,
            env=dict(os.environ, PYTHONPATH=str(ROOT)),
        )
        self.processes.append(PeerProcess(proc, time.monotonic() + 30))

    def reap(self, everything: bool = False) -> None:
        """SIGKILL the peer processes whose time has come (all of them at the end)."""
        now = time.monotonic()
        keep = []
        for peer in self.processes:
            out = peer.proc.stdout
            readable = out is not None and not peer.ready and has_input(out.fileno())
            line = out.readline().split() if readable and out is not None else []
            if line[:1] == [b"ready"]:
                peer.ready = True  # its connections are open and busy
                for kind in line[1:]:
                    self.count(f"process:{kind.decode()}")
                peer.kill_at = now + self.rng.uniform(0.2, 3)
            if everything or peer.kill_at <= now:
                if peer.proc.poll() is None:
                    peer.proc.send_signal(signal.SIGKILL)
                    self.report.killed_processes += peer.ready
                if peer.proc.wait(10) != -signal.SIGKILL:
                    self.report.peer_failures.append(peer.proc.returncode)
                if out is not None:
                    out.close()
            else:
                keep.append(peer)
        self.processes = keep

    def aborted_mid_stream(self) -> None:
        """A connection reset (SO_LINGER 0) mid-stream, when enough peer processes run."""
        self.count("aborted_mid_stream")
        sock = self.connect_raw()
        if sock is None:
            return
        sock.sendall(GREETING + READY_DEALER + b"\x00\x05hello" * self.rng.randint(1, 200))
        kill(sock)

    def reconnecting(self) -> None:
        dealer = self.ctx.socket(zmq.DEALER)
        dealer.linger = 0
        endpoint = self.endpoint()
        for _ in range(self.rng.randint(2, 5)):
            dealer.connect(endpoint)
            dealer.send(b"again")
            time.sleep(0.01)
            dealer.disconnect(endpoint)
        dealer.close()

    def connect_raw(self) -> socket.socket | None:
        """A raw connection, or None if the victim's backlog stayed full for 5 s (a loaded
        victim; counted as ``connect-timeout``)."""
        try:
            return raw(self.endpoint())
        except OSError:
            self.count("connect-timeout")
            return None

    def hostile(self) -> None:
        sock = self.connect_raw()
        if sock is None:
            return
        what = self.rng.choice(["garbage", "ping-flood", "huge-frame", "silent", "huge-ready"])
        self.count(f"hostile:{what}")
        try:
            if what == "garbage":
                sock.sendall(os.urandom(self.rng.randint(1, 4096)))
            elif what == "ping-flood":
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
                sock.sendall(GREETING + READY_DEALER)
                sock.settimeout(0.2)
                with contextlib.suppress(OSError):  # (a timeout: the victim stopped reading us)
                    sock.sendall(PING * 20_000)
            elif what == "huge-frame":
                sock.sendall(GREETING + READY_DEALER + b"\x02" + (2**62).to_bytes(8, "big"))
            elif what == "huge-ready":
                sock.sendall(GREETING + b"\x06" + (2**40).to_bytes(8, "big") + b"\x05READY")
        except OSError:
            pass  # refused at once: also fine
        if what in ("silent", "ping-flood"):
            self.held.append((time.monotonic() + self.rng.uniform(0.5, 4), sock))
        else:
            kill(sock) if self.rng.random() < 0.5 else sock.close()

    def release(self, everything: bool = False) -> None:
        now = time.monotonic()
        keep = []
        for until, sock in self.held:
            if everything or until <= now:
                if isinstance(sock, zmq.Socket):
                    sock.close(linger=0)
                else:
                    assert isinstance(sock, socket.socket)
                    kill(sock)
            else:
                keep.append((until, sock))
        self.held = keep

    def open_standing(self) -> None:
        for i in range(self.connections):
            endpoint = self.victim.endpoints["tcp" if i % 2 else "ipc"]
            self.standing.append(WellBehaved.open(self.ctx, f"standing-{i}", endpoint))

    def standing_talk(self) -> None:
        """One long-lived peer sends a message; every peer collects what came back."""
        peer = self.rng.choice(self.standing)
        peer.send(b"%s-%d" % (peer.record.name.encode(), len(peer.record.sent)))
        self.collect_standing()

    def collect_standing(self) -> None:
        for peer in self.standing:
            peer.collect()

    def check_well_behaved(self) -> None:
        """Wait for the last echoes, then judge every peer still short of some with the
        victim's ledger (before closing any: an end in the ledger is then the network's or
        the victim's, never the driver's own close)."""
        peers = self.standing + self.pending
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            for peer in peers:
                peer.collect()
            if all(peer.record.whole for peer in peers):
                break
            time.sleep(0.1)
        short = [peer for peer in peers if not peer.record.whole]
        ledger = self.snapshot_ledger(short)
        for peer in peers:
            if peer.record.whole:
                self.report.echoed_ok += len(peer.record.sent)
                continue
            peer.events()
            peer.record.timeline.append(f"{time.time():.3f} judged")
            verdict: Verdict = judge(peer.record, ledger[peer.record.name])  # type: ignore[arg-type]
            self.report.echoed_ok += verdict.received
            if verdict.lost:
                self.report.lost.append(verdict.summary)
            else:
                self.report.shortfalls.append(verdict.summary)
        self.report.late += sum(1 for peer in self.pending if peer.record.whole)
        self.report.ends = self.victim.ask("ends")  # type: ignore[assignment]
        for peer in peers:
            peer.close()
        self.standing.clear()
        self.pending.clear()

    def snapshot_ledger(self, short: list[WellBehaved]) -> dict[str, object]:
        """The victim's ledger for ``short``, read so that the judgement is not racy: what the
        victim had accepted and written at a first snapshot, what it had delivered (and how
        its connections ended) at a second one 10 s later, and what the peers received after
        that (an echo written before the first snapshot has had 10 s to arrive)."""
        if not short:
            return {}
        names = " ".join(peer.record.name for peer in short)
        first = self.victim.ask(f"ledger {names}")
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and not all(peer.record.whole for peer in short):
            for peer in short:
                peer.collect()
            time.sleep(0.1)
        second = self.victim.ask(f"ledger {names}")
        for peer in short:
            peer.collect()
        merged: dict[str, object] = {}
        for name, later in second.items():
            earlier = first.get(name)
            if isinstance(later, dict):
                counts = earlier if isinstance(earlier, dict) else {"accepted": 0, "written": 0}
                later = dict(later, accepted=counts["accepted"], written=counts["written"])
            merged[name] = later
        return merged

    def round(self) -> None:
        actions = [
            (self.good_peer, 5),
            (self.slow_reader, 1),
            (self.peer_process, 2),
            (self.reconnecting, 1),
            (self.hostile, 2),
            (self.standing_talk, 3),
        ]
        action = self.rng.choices([a for a, _ in actions], [w for _, w in actions])[0]
        self.count(action.__name__)
        action()
        self.report.rounds += 1

    def saw_the_mix(self) -> bool:
        """Whether the run has had each kind of trouble it is meant to survive: a peer process
        SIGKILLed mid-stream, a hostile peer, and all the long-lived peers connected at once."""
        report = self.report
        return (
            report.killed_processes > 0
            and report.kinds.get("hostile", 0) > 0
            and report.peak_peers >= self.connections
        )

    def run(self, seconds: float) -> Report:
        victim = self.victim
        self.report.baseline = victim.stats()
        self.open_standing()
        deadline = time.monotonic() + seconds
        # A run too short for the load it meets (the 8 s CI run on a machine at load 20 once
        # had no peer process ready in time) goes on until it has seen the whole mix, within
        # a bound: what it checks must not depend on how fast the machine was.
        overtime = deadline + max(2 * seconds, 30.0)
        next_stats = 0.0
        while time.monotonic() < deadline or (
            not self.saw_the_mix() and time.monotonic() < overtime
        ):
            if len(self.held) < self.churn:
                self.round()
            else:
                time.sleep(0.01)
            self.release()
            self.reap()
            self.collect_pending()
            if time.monotonic() >= next_stats:
                stats = victim.stats()
                self.report.peak_rss_kib = max(self.report.peak_rss_kib, stats["rss_kib"])
                self.report.peak_peers = max(self.report.peak_peers, stats["peers"])
                self.report.peak_lag_ms = max(self.report.peak_lag_ms, stats["lag_ms"])
                for peer in self.standing + self.pending:
                    peer.events()
                next_stats = time.monotonic() + 1.0
                elapsed = int(time.monotonic() - (deadline - seconds))
                if not self.report.rss_samples or elapsed >= self.report.rss_samples[-1][0] + 10:
                    self.report.rss_samples.append((elapsed, stats["rss_kib"]))
                    self.report.load_samples.append((elapsed, os.getloadavg()[0]))
                    print(f"{elapsed} s: {stats}, {self.report.rounds} rounds", file=sys.stderr)
        self.release(everything=True)
        self.reap(everything=True)
        self.check_well_behaved()
        # Quiesce: every connection of ours gone (handshake_ivl 3 s bounds the half-open).
        give_up = time.monotonic() + 30
        while True:
            final = victim.stats()
            settled = final["peers"] == 0 and final["fds"] <= self.report.baseline["fds"]
            if settled or time.monotonic() > give_up:
                break
            time.sleep(0.2)
        self.report.final = final
        self.ctx.term()
        return self.report


def soak(backend: str, seconds: float, connections: int, seed: int) -> Report:
    victim = Victim(backend)
    try:
        return Driver(victim, connections, random.Random(seed), backend).run(seconds)
    finally:
        victim.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--backend", default="asyncio", choices=["asyncio", "trio"])
    length = parser.add_mutually_exclusive_group()
    length.add_argument("--minutes", type=float, help="how long the load runs (default 10)")
    length.add_argument("--seconds", type=float, help="the same, in seconds")
    parser.add_argument("--connections", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    seconds = args.seconds if args.seconds is not None else 60 * (args.minutes or 10)
    report = soak(args.backend, seconds, args.connections, args.seed)
    print(json.dumps(report.__dict__, indent=1))


if __name__ == "__main__":
    main()
