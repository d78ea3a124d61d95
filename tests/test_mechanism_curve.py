"""CURVE at the byte level: layouts, nonces, framing and hostile input (docs/libzmq-notes.md#curve).

The peers driving our mechanisms here (:class:`RefClient`, :class:`RefServer`) are written from
the byte layouts in the spec, independently of ``zmtp.protocol.curve``: they only share the box
primitives, which ``test_crypto_box.py`` checks against the NaCl vectors. So a layout mistake
in the implementation cannot cancel out against the same mistake in the test.
"""

from __future__ import annotations

import itertools
import os
import struct
from collections.abc import Callable

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.test_mechanism_helpers import (
    BACKENDS,
    CLIENT_PUBLIC,
    CLIENT_SECRET,
    SERVER_PUBLIC,
    SERVER_SECRET,
    curve_client,
    curve_pair,
    curve_server,
    keypair,
    pump_auth,
)
from tests.test_protocol_helpers import failure, peer_greeting, split_frames
from zmtp.crypto import NaclBackend, get_backend
from zmtp.crypto import box as box_module
from zmtp.protocol import (
    CommandReceived,
    Connection,
    HandshakeComplete,
    MessagesReceived,
    State,
    commands,
    encode_properties,
    parse_properties,
)
from zmtp.protocol.curve import NONCE_MESSAGE_C, NONCE_MESSAGE_S, CurveClient, CurveServer
from zmtp.protocol.errors import ProtocolError
from zmtp.protocol.events import AuthenticationRequested
from zmtp.protocol.frames import FrameDecoder, encode_command, encode_frame
from zmtp.protocol.greeting import GREETING_SIZE
from zmtp.protocol.mechanism import AuthResult

BOX = get_backend("pure")
U64 = struct.Struct(">Q")
CURVE_GREETING = peer_greeting(mechanism=b"CURVE")
DEALER_META = encode_properties({"Socket-Type": b"DEALER", "Identity": b""})
ROUTER_META = encode_properties({"Socket-Type": b"ROUTER", "Identity": b""})


def frame_bodies(wire: bytes) -> list[tuple[int, bytes]]:
    return split_frames(wire)


class RefClient:
    """A CurveZMQ client from the spec's offsets: what a libzmq client puts on the wire."""

    def __init__(
        self,
        server_public: bytes = SERVER_PUBLIC,
        public: bytes = CLIENT_PUBLIC,
        secret: bytes = CLIENT_SECRET,
    ) -> None:
        self.server_public, self.public, self.secret = server_public, public, secret
        self.cn_secret = os.urandom(32)
        self.cn_public = BOX.scalarmult_base(self.cn_secret)
        self.nonce = 0
        self.session = b""
        self.server_transient = b""
        self.cookie = b""

    def next_nonce(self) -> bytes:
        self.nonce += 1
        return U64.pack(self.nonce)

    def hello(self, version: bytes = b"\x01\x00", extra: bytes = b"") -> bytes:
        tail = self.next_nonce()
        key = BOX.beforenm(self.server_public, self.cn_secret)
        signature = BOX.seal(bytes(64), b"CurveZMQHELLO---" + tail, key)
        body = b"\x05HELLO" + version + bytes(72) + self.cn_public + tail + signature + extra
        return encode_frame(body, 0x04)

    def read_welcome(self, body: bytes) -> None:
        assert len(body) == 168 and body[:8] == b"\x07WELCOME"
        key = BOX.beforenm(self.server_public, self.cn_secret)
        plain = BOX.open(body[24:], b"WELCOME-" + body[8:24], key)
        self.server_transient, self.cookie = plain[:32], plain[32:]
        assert len(self.cookie) == 96
        self.session = BOX.beforenm(self.server_transient, self.cn_secret)

    def initiate(
        self,
        metadata: bytes = DEALER_META,
        *,
        cookie: bytes | None = None,
        vouch_transient: bytes | None = None,
        vouch_server: bytes | None = None,
        vouch_secret: bytes | None = None,
        nonce: int | None = None,
    ) -> bytes:
        vouch_nonce = os.urandom(16)
        vouch_key = BOX.beforenm(self.server_transient, vouch_secret or self.secret)
        vouch = BOX.seal(
            (vouch_transient or self.cn_public) + (vouch_server or self.server_public),
            b"VOUCH---" + vouch_nonce,
            vouch_key,
        )
        tail = self.next_nonce() if nonce is None else U64.pack(nonce)
        box = BOX.seal(
            self.public + vouch_nonce + vouch + metadata,
            b"CurveZMQINITIATE" + tail,
            self.session,
        )
        body = b"\x08INITIATE" + (self.cookie if cookie is None else cookie) + tail + box
        return encode_frame(body, 0x04)

    def read_ready(self, body: bytes) -> tuple[int, bytes]:
        assert body[:6] == b"\x05READY"
        nonce = U64.unpack_from(body, 6)[0]
        return nonce, BOX.open(body[14:], b"CurveZMQREADY---" + body[6:14], self.session)

    def message(
        self, payload: bytes, inner: int = 0, outer: int = 0, nonce: int | None = None
    ) -> bytes:
        tail = self.next_nonce() if nonce is None else U64.pack(nonce)
        box = BOX.seal(bytes((inner,)) + payload, b"CurveZMQMESSAGEC" + tail, self.session)
        return encode_frame(b"\x07MESSAGE" + tail + box, outer)

    def read_message(self, body: bytes) -> tuple[int, int, bytes]:
        """``(nonce, inner flags, payload)`` of a server MESSAGE."""
        assert body[:8] == b"\x07MESSAGE"
        plain = BOX.open(body[16:], b"CurveZMQMESSAGES" + body[8:16], self.session)
        return U64.unpack_from(body, 8)[0], plain[0], plain[1:]


class RefServer:
    """A CurveZMQ server from the spec's offsets: what a libzmq server puts on the wire."""

    def __init__(self) -> None:
        self.cn_secret = os.urandom(32)
        self.cn_public = BOX.scalarmult_base(self.cn_secret)
        self.cookie_key = os.urandom(32)
        self.client_transient = b""
        self.client_public = b""
        self.session = b""
        self.nonce = 0

    def read_hello(self, body: bytes) -> int:
        assert len(body) == 200 and body[:6] == b"\x05HELLO"
        assert body[6:8] == b"\x01\x00"
        assert body[8:80] == bytes(72)
        self.client_transient = body[80:112]
        key = BOX.beforenm(self.client_transient, SERVER_SECRET)
        assert BOX.open(body[120:200], b"CurveZMQHELLO---" + body[112:120], key) == bytes(64)
        return U64.unpack_from(body, 112)[0]

    def welcome(self, size_delta: int = 0) -> bytes:
        cookie_nonce = os.urandom(16)
        cookie = cookie_nonce + BOX.seal(
            self.client_transient + self.cn_secret, b"COOKIE--" + cookie_nonce, self.cookie_key
        )
        w = os.urandom(16)
        key = BOX.beforenm(self.client_transient, SERVER_SECRET)
        box = BOX.seal(self.cn_public + cookie, b"WELCOME-" + w, key)
        body = b"\x07WELCOME" + w + box
        body = body + bytes(size_delta) if size_delta >= 0 else body[:size_delta]
        return encode_frame(body, 0x04)

    def read_initiate(self, body: bytes) -> tuple[int, bytes]:
        """``(nonce, metadata)``; checks cookie and vouch like libzmq (plus S)."""
        assert body[:9] == b"\x08INITIATE" and len(body) >= 257
        cookie = body[9:105]
        assert BOX.open(cookie[16:], b"COOKIE--" + cookie[:16], self.cookie_key) == (
            self.client_transient + self.cn_secret
        )
        self.session = BOX.beforenm(self.client_transient, self.cn_secret)
        plain = BOX.open(body[113:], b"CurveZMQINITIATE" + body[105:113], self.session)
        self.client_public = plain[:32]
        vouch_key = BOX.beforenm(self.client_public, self.cn_secret)
        vouch = BOX.open(plain[48:128], b"VOUCH---" + plain[32:48], vouch_key)
        assert vouch == self.client_transient + SERVER_PUBLIC
        return U64.unpack_from(body, 105)[0], plain[128:]

    def ready(self, metadata: bytes = ROUTER_META, nonce: int | None = None) -> bytes:
        self.nonce = self.nonce + 1 if nonce is None else nonce
        tail = U64.pack(self.nonce)
        box = BOX.seal(metadata, b"CurveZMQREADY---" + tail, self.session)
        return encode_frame(b"\x05READY" + tail + box, 0x04)

    def message(
        self, payload: bytes, inner: int = 0, outer: int = 0, nonce: int | None = None
    ) -> bytes:
        self.nonce = self.nonce + 1 if nonce is None else nonce
        tail = U64.pack(self.nonce)
        box = BOX.seal(bytes((inner,)) + payload, b"CurveZMQMESSAGES" + tail, self.session)
        return encode_frame(b"\x07MESSAGE" + tail + box, outer)

    def read_message(self, body: bytes) -> tuple[int, int, bytes]:
        assert body[:8] == b"\x07MESSAGE"
        plain = BOX.open(body[16:], b"CurveZMQMESSAGEC" + body[8:16], self.session)
        return U64.unpack_from(body, 8)[0], plain[0], plain[1:]


def served(backend: str = "pure", socket_type: str = "ROUTER", **kwargs: object) -> Connection:
    """Our server, greeting exchanged, HELLO not yet received (output drained)."""
    conn = curve_server(socket_type, backend=get_backend(backend), **kwargs)
    conn.data_to_send()
    return conn


def welcomed(ref: RefClient, backend: str = "pure", **kwargs: object) -> Connection:
    """Our server after HELLO: the RefClient has read its WELCOME."""
    conn = served(backend, **kwargs)
    assert conn.receive_data(CURVE_GREETING + ref.hello()) == []
    ((flags, body),) = frame_bodies(conn.data_to_send())
    assert flags == 0x04
    ref.read_welcome(body)
    return conn


def accepted(ref: RefClient, backend: str = "pure", **kwargs: object) -> Connection:
    """Our server with a completed handshake against the RefClient (READY read)."""
    conn = welcomed(ref, backend, **kwargs)
    events = conn.receive_data(ref.initiate())
    assert [type(e) for e in events] == [AuthenticationRequested]
    assert [type(e) for e in conn.complete_authentication(AuthResult.allow("u"))] == [
        HandshakeComplete
    ]
    ((_, body),) = frame_bodies(conn.data_to_send())
    nonce, _metadata = ref.read_ready(body)
    assert nonce == 1
    return conn


def our_client(
    backend: str = "pure", socket_type: str = "DEALER", **kwargs: object
) -> tuple[Connection, RefServer]:
    """Our client after its greeting; the RefServer has read its HELLO."""
    conn = curve_client(socket_type, backend=get_backend(backend), **kwargs)
    wire = conn.data_to_send()
    assert wire[:GREETING_SIZE][12:17] == b"CURVE"
    ref = RefServer()
    assert conn.receive_data(CURVE_GREETING) == []
    ((flags, body),) = frame_bodies(conn.data_to_send())
    assert flags == 0x04
    assert ref.read_hello(body) == 1
    return conn, ref


def client_ready(backend: str = "pure", **kwargs: object) -> tuple[Connection, RefServer]:
    """Our client with a completed handshake against the RefServer."""
    conn, ref = our_client(backend, **kwargs)
    assert conn.receive_data(ref.welcome()) == []
    ((flags, body),) = frame_bodies(conn.data_to_send())
    assert flags == 0x06  # INITIATE is always a long command frame
    nonce, _metadata = ref.read_initiate(body)
    assert nonce == 2
    events = conn.receive_data(ref.ready())
    assert [type(e) for e in events] == [HandshakeComplete]
    return conn, ref


# ================================================================== handshake layouts


@pytest.mark.parametrize("backend", BACKENDS)
def test_server_handshake_with_a_spec_client(backend: str) -> None:
    ref = RefClient()
    conn = welcomed(ref, backend)
    events = conn.receive_data(ref.initiate(DEALER_META))
    (requested,) = events
    assert isinstance(requested, AuthenticationRequested)
    request = requested.request
    assert request.mechanism == "CURVE"
    assert request.credentials == (CLIENT_PUBLIC,)
    assert request.client_key == CLIENT_PUBLIC
    assert conn.data_to_send() == b""  # nothing until the decision
    (done,) = conn.complete_authentication(AuthResult.allow("alice", {"X-Tier": b"gold"}))
    assert isinstance(done, HandshakeComplete)
    assert done.mechanism == "CURVE"
    assert done.user_id == "alice"
    assert done.curve_public_key == CLIENT_PUBLIC
    assert done.socket_type == "DEALER"
    assert done.properties["X-Tier"] == b"gold"
    ((flags, body),) = frame_bodies(conn.data_to_send())
    assert flags == 0x04 and len(body) >= 30
    nonce, metadata = ref.read_ready(body)
    assert nonce == 1
    assert dict(parse_properties(metadata)) == {"Socket-Type": b"ROUTER", "Identity": b""}


@pytest.mark.parametrize("backend", BACKENDS)
def test_client_handshake_with_a_spec_server(backend: str) -> None:
    conn, ref = our_client(backend)
    assert conn.receive_data(ref.welcome()) == []
    ((flags, body),) = frame_bodies(conn.data_to_send())
    assert flags == 0x06
    nonce, metadata = ref.read_initiate(body)
    assert nonce == 2
    assert ref.client_public == CLIENT_PUBLIC
    assert dict(parse_properties(metadata)) == {"Socket-Type": b"DEALER", "Identity": b""}
    (done,) = conn.receive_data(ref.ready(ROUTER_META))
    assert isinstance(done, HandshakeComplete)
    assert done.socket_type == "ROUTER"
    assert done.curve_public_key == SERVER_PUBLIC  # the peer's long-term key


def test_hello_is_exactly_the_libzmq_layout() -> None:
    conn = curve_client(backend=BOX)
    conn.data_to_send()
    conn.receive_data(CURVE_GREETING)
    wire = conn.data_to_send()
    assert wire[:2] == b"\x04\xc8"  # short command frame of 200 bytes
    assert len(wire) == 202
    assert wire[2:10] == b"\x05HELLO\x01\x00"
    assert wire[10:82] == bytes(72)  # RFC prose says 70: libzmq and the ABNF say 72


def test_welcome_is_168_bytes_in_a_short_command_frame() -> None:
    ref = RefClient()
    conn = served()
    conn.receive_data(CURVE_GREETING + ref.hello())
    wire = conn.data_to_send()
    assert wire[:2] == b"\x04\xa8" and len(wire) == 170


def test_metadata_travels_inside_initiate_and_ready() -> None:
    _client, _server, events_c, events_s = curve_pair(
        client_kwargs={"identity": b"alice", "extra_properties": {"X-QoS": b"2"}},
        server_kwargs={"extra_properties": {"X-Hello": b"world"}},
    )
    peer_of_server = events_s[-1]
    peer_of_client = events_c[-1]
    assert isinstance(peer_of_server, HandshakeComplete)
    assert isinstance(peer_of_client, HandshakeComplete)
    assert peer_of_server.identity == b"alice"
    assert peer_of_server.properties["x-qos"] == b"2"
    assert peer_of_client.properties["X-Hello"] == b"world"


def test_the_socket_type_is_checked_before_authentication() -> None:
    _client, _server, _, events_s = curve_pair("PUSH", "ROUTER")
    assert not any(isinstance(e, AuthenticationRequested) for e in events_s)
    assert "incompatible socket types" in failure(events_s).reason


# ================================================================== nonces and framing


def test_nonce_sequences_match_libzmq() -> None:
    """Client HELLO=1, INITIATE=2, MESSAGE=3...; server READY=1, MESSAGE=2...; commands too."""
    conn, ref = client_ready()
    conn.send_command(b"SUBSCRIBE", b"news")
    wire = conn.data_to_send() + conn.encode_messages([[b"a", b"b"], [b"c"]])
    seen = [ref.read_message(body) for _, body in frame_bodies(wire)]
    assert seen == [(3, 0x02, b"\x09SUBSCRIBEnews"), (4, 0x01, b"a"), (5, 0x00, b"b"), (6, 0, b"c")]

    client_ref = RefClient()
    server = accepted(client_ref)
    wire = server.encode_messages([[b"x"]]) + server.encode_messages([[b"y"]])
    assert [client_ref.read_message(b)[0] for _, b in frame_bodies(wire)] == [2, 3]


def test_messages_use_non_command_outer_frames() -> None:
    """libzmq drops a MESSAGE that arrives in a command frame: outer flags are 0x00 / 0x02."""
    client, _server, _, _ = curve_pair()
    wire = client.encode_messages([[b"a", b"b" * 300], [b"c"]])
    client.send_command(b"PING", b"\x00\x00")
    wire += client.data_to_send()
    flags = [f for f, _ in frame_bodies(wire)]
    assert flags == [0x00, 0x02, 0x00, 0x00]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("outer", [0x00, 0x02, 0x04, 0x06])
def test_every_outer_flag_libzmq_may_use_is_accepted(backend: str, outer: int) -> None:
    ref = RefClient()
    conn = accepted(ref, backend)
    payload = b"z" * 10
    frame = ref.message(payload, outer=0)
    body = frame[2:]
    wire = (
        bytes((outer,)) + U64.pack(len(body)) + body
        if outer & 0x02
        else bytes((outer, len(body))) + body
    )
    assert conn.receive_data(wire) == [MessagesReceived([[payload]])]


@pytest.mark.parametrize("backend", BACKENDS)
def test_round_trip_in_both_directions(backend: str) -> None:
    client, server, _, _ = curve_pair(backend=backend)
    messages = [[b""], [b"a", b"b", b"c"], [os.urandom(70_000)], [b"x" * 255, b"y" * 256]]
    assert server.receive_data(client.encode_messages(messages)) == [MessagesReceived(messages)]
    assert client.receive_data(server.encode_messages(messages)) == [MessagesReceived(messages)]


def test_commands_travel_inside_messages() -> None:
    client, server, _, _ = curve_pair()
    client.send_command(b"SUBSCRIBE", b"topic")
    assert server.receive_data(client.data_to_send()) == [CommandReceived(b"SUBSCRIBE", b"topic")]


@pytest.mark.parametrize("backend", BACKENDS)
def test_ping_inside_curve_is_answered_with_an_encrypted_pong(backend: str) -> None:
    ref = RefClient()
    conn = accepted(ref, backend)
    assert conn.receive_data(ref.message(b"\x04PING\x00\x00ctx", inner=0x02)) == []
    ((flags, body),) = frame_bodies(conn.data_to_send())
    assert flags == 0x00
    assert ref.read_message(body) == (2, 0x02, b"\x04PONGctx")


def test_heartbeat_ping_goes_out_encrypted() -> None:
    client, server, _, _ = curve_pair(client_kwargs={"heartbeat_ivl": 1.0})
    client.handle_timers(5.0)
    wire = client.data_to_send()
    assert wire[:1] == b"\x00"
    assert server.receive_data(wire, 5.0) == []  # PING consumed; PONG queued
    assert client.receive_data(server.data_to_send(), 5.0) == []


@pytest.mark.parametrize("backend", BACKENDS)
def test_one_byte_at_a_time_equals_all_at_once(backend: str) -> None:
    client = curve_client(backend=get_backend(backend))
    server = curve_server(backend=get_backend(backend))
    events_c: list[object] = []
    events_s: list[object] = []
    for _ in range(10):
        for src, dst, events in ((client, server, events_s), (server, client, events_c)):
            for byte in src.data_to_send():
                events += dst.receive_data(bytes((byte,)))
        for e in list(events_s):
            if isinstance(e, AuthenticationRequested):
                events_s.remove(e)
                events_s += server.complete_authentication(AuthResult.allow())
    assert client.state is server.state is State.READY
    wire = client.encode_messages([[b"a", b"b"], [b"q" * 400]])
    got: list[object] = []
    for byte in wire:
        got += server.receive_data(bytes((byte,)))
    assert got == [MessagesReceived([[b"a", b"b"]]), MessagesReceived([[b"q" * 400]])]


# ================================================================== authentication outcomes


@pytest.mark.parametrize(("code", "sends_error"), [(300, False), (400, True), (500, True)])
def test_refusals_send_error_except_for_300(code: int, sends_error: bool) -> None:
    ref = RefClient()
    conn = welcomed(ref)
    conn.receive_data(ref.initiate())
    events = conn.complete_authentication(AuthResult(code, "no"))
    fail = failure(events)
    assert fail.kind == "rejected" and f"{code}" in fail.reason and "no" in fail.reason
    wire = conn.data_to_send()
    if sends_error:
        assert wire == commands.error(str(code))  # in clear, reason = the status code
    else:
        assert wire == b""


def test_client_reports_a_zap_refusal_clearly() -> None:
    conn, ref = our_client()
    conn.receive_data(ref.welcome())
    conn.data_to_send()
    fail = failure(conn.receive_data(commands.error("400")))
    assert fail.kind == "peer-error"
    assert fail.reason == "peer refused us: 400 (authentication failure)"


def test_client_rejects_a_malformed_error() -> None:
    conn, _ = our_client()
    fail = failure(conn.receive_data(encode_command(b"ERROR", b"\x09400")))
    assert fail.kind == "protocol" and "ERROR" in fail.reason


def test_authentication_decision_after_a_timeout_is_ignored() -> None:
    ref = RefClient()
    conn = welcomed(ref, handshake_timeout=5.0)
    conn.receive_data(ref.initiate())
    fail = failure(conn.handle_timers(10.0))
    assert fail.kind == "timeout" and "authentication" in fail.reason
    assert conn.complete_authentication(AuthResult.allow()) == []


# ================================================================== hostile input: server side


@pytest.mark.parametrize("delta", [-1, 1, 56])
def test_hello_of_the_wrong_size_is_fatal(delta: int) -> None:
    ref = RefClient()
    hello = ref.hello(extra=b"\0" * max(delta, 0))
    if delta < 0:
        body = parse_frame_body(hello)[:delta]
        hello = encode_frame(body, 0x04)
    conn = served()
    fail = failure(conn.receive_data(CURVE_GREETING + hello))
    assert fail.kind == "protocol" and "HELLO must be 200 bytes" in fail.reason


def parse_frame_body(frame: bytes) -> bytes:
    ((_, body),) = frame_bodies(frame)
    return body


@pytest.mark.parametrize("version", [b"\x02\x00", b"\x01\x01", b"\x00\x00"])
def test_hello_of_another_version_is_fatal(version: bytes) -> None:
    conn = served()
    fail = failure(conn.receive_data(CURVE_GREETING + RefClient().hello(version=version)))
    assert "version" in fail.reason and "1.0" in fail.reason


@pytest.mark.parametrize("offset", [120, 150, 199])
def test_tampered_hello_box_is_fatal(offset: int) -> None:
    body = bytearray(parse_frame_body(RefClient().hello()))
    body[offset] ^= 0x01
    fail = failure(served().receive_data(CURVE_GREETING + encode_frame(bytes(body), 0x04)))
    assert "HELLO: box failed to open" in fail.reason


def test_hello_for_another_server_key_is_fatal() -> None:
    other_public, _ = keypair()
    fail = failure(served().receive_data(CURVE_GREETING + RefClient(other_public).hello()))
    assert "HELLO: box failed to open" in fail.reason


def test_hello_with_a_small_order_transient_key_is_fatal() -> None:
    body = bytearray(parse_frame_body(RefClient().hello()))
    body[80:112] = bytes(32)
    fail = failure(served().receive_data(CURVE_GREETING + encode_frame(bytes(body), 0x04)))
    assert fail.kind == "protocol" and "small order" in fail.reason


def test_cookie_from_another_connection_is_refused() -> None:
    """The cookie key is fresh per WELCOME: a cookie is worth nothing on another connection."""
    ref_a, ref_b = RefClient(), RefClient()
    welcomed(ref_a)
    conn_b = welcomed(ref_b)
    stolen = ref_a.cookie
    fail = failure(conn_b.receive_data(ref_b.initiate(cookie=stolen)))
    assert "cookie: box failed to open" in fail.reason


def test_replayed_initiate_from_another_connection_is_refused() -> None:
    ref_a, ref_b = RefClient(), RefClient()
    welcomed(ref_a)
    conn_b = welcomed(ref_b)
    fail = failure(conn_b.receive_data(ref_a.initiate()))
    assert fail.kind == "protocol" and "cookie" in fail.reason


def test_cookie_key_is_forgotten_after_initiate() -> None:
    ref = RefClient()
    conn = accepted(ref)
    assert conn.mechanism._cookie_key is None  # type: ignore[attr-defined]


def test_tampered_cookie_is_refused() -> None:
    ref = RefClient()
    conn = welcomed(ref)
    cookie = bytearray(ref.cookie)
    cookie[40] ^= 0x80
    fail = failure(conn.receive_data(ref.initiate(cookie=bytes(cookie))))
    assert "cookie" in fail.reason


def test_tampered_initiate_box_is_refused() -> None:
    ref = RefClient()
    conn = welcomed(ref)
    frame = bytearray(ref.initiate())
    frame[-1] ^= 0x01
    fail = failure(conn.receive_data(bytes(frame)))
    assert "INITIATE: box failed to open" in fail.reason


def test_initiate_too_short_is_refused() -> None:
    ref = RefClient()
    conn = welcomed(ref)
    body = parse_frame_body(ref.initiate(b""))[:256]
    fail = failure(conn.receive_data(encode_frame(body, 0x06 if len(body) > 255 else 0x04)))
    assert "INITIATE too short" in fail.reason


def test_vouch_for_another_server_is_refused() -> None:
    other_public, _ = keypair()
    ref = RefClient()
    conn = welcomed(ref)
    fail = failure(conn.receive_data(ref.initiate(vouch_server=other_public)))
    assert "vouch does not match" in fail.reason


def test_vouch_for_another_transient_key_is_refused() -> None:
    ref = RefClient()
    conn = welcomed(ref)
    fail = failure(conn.receive_data(ref.initiate(vouch_transient=os.urandom(32))))
    assert "vouch does not match" in fail.reason


def test_vouch_signed_by_another_long_term_key_is_refused() -> None:
    _, other_secret = keypair()
    ref = RefClient()
    conn = welcomed(ref)
    fail = failure(conn.receive_data(ref.initiate(vouch_secret=other_secret)))
    assert "vouch: box failed to open" in fail.reason


def test_hello_with_nonce_zero_is_refused() -> None:
    """A deliberate difference (docs/security.md): libzmq 4.3.5 accepts a HELLO whose short
    nonce is 0; RFC 26 numbers the client's boxes from 1, and we refuse it."""
    ref = RefClient()
    ref.nonce = -1  # the HELLO then carries nonce 0
    conn = served("pure")
    fail = failure(conn.receive_data(CURVE_GREETING + ref.hello()))
    assert "HELLO nonce 0 is not above" in fail.reason, fail.reason


def test_initiate_reusing_the_hello_nonce_is_refused() -> None:
    ref = RefClient()
    conn = welcomed(ref)
    fail = failure(conn.receive_data(ref.initiate(nonce=1)))
    assert "INITIATE nonce 1 is not above the previous one (1)" in fail.reason


def test_bad_metadata_in_initiate_is_refused() -> None:
    ref = RefClient()
    conn = welcomed(ref)
    fail = failure(conn.receive_data(ref.initiate(DEALER_META + b"\x01")))
    assert "malformed metadata" in fail.reason


@pytest.mark.parametrize(
    "garbage",
    [
        b"\x00\x03abc",  # a data frame during the handshake
        encode_command(b"INITIATE", bytes(300)),  # INITIATE before HELLO
        encode_command(b"ERROR", b"\x03400"),  # a client may not send ERROR
        b"\x04\x00",  # an empty command frame
        b"\x04\x05\x09HELL",  # a bad name length
        b"\xff" * 20,  # reserved flag bits
    ],
)
def test_garbage_after_the_greeting_is_fatal(garbage: bytes) -> None:
    fail = failure(served().receive_data(CURVE_GREETING + garbage))
    assert fail.kind == "protocol" and fail.during_handshake and fail.reason


def test_second_hello_is_fatal() -> None:
    ref = RefClient()
    conn = welcomed(ref)
    fail = failure(conn.receive_data(ref.hello()))
    assert "unexpected HELLO" in fail.reason


# ================================================================== hostile input: MESSAGE


@pytest.mark.parametrize("backend", BACKENDS)
def test_replayed_message_nonce_is_fatal(backend: str) -> None:
    ref = RefClient()
    conn = accepted(ref, backend)
    frame = ref.message(b"once")
    assert conn.receive_data(frame) == [MessagesReceived([[b"once"]])]
    fail = failure(conn.receive_data(frame))
    assert fail.kind == "protocol" and not fail.during_handshake
    assert "replayed or reordered" in fail.reason


@pytest.mark.parametrize("backend", BACKENDS)
def test_out_of_order_message_nonce_is_fatal(backend: str) -> None:
    ref = RefClient()
    conn = accepted(ref, backend)
    first, second = ref.message(b"1"), ref.message(b"2")
    assert conn.receive_data(second) == [MessagesReceived([[b"2"]])]
    assert "replayed or reordered" in failure(conn.receive_data(first)).reason


@pytest.mark.parametrize("backend", BACKENDS)
def test_gaps_in_message_nonces_are_allowed(backend: str) -> None:
    ref = RefClient()
    conn = accepted(ref, backend)
    assert conn.receive_data(ref.message(b"a", nonce=10)) == [MessagesReceived([[b"a"]])]
    assert conn.receive_data(ref.message(b"b", nonce=1000)) == [MessagesReceived([[b"b"]])]


@pytest.mark.parametrize("backend", BACKENDS)
def test_messages_before_a_bad_one_are_still_delivered(backend: str) -> None:
    ref = RefClient()
    conn = accepted(ref, backend)
    good = ref.message(b"good")
    bad = bytearray(ref.message(b"bad"))
    bad[-1] ^= 1
    events = conn.receive_data(good + bytes(bad))
    assert events[0] == MessagesReceived([[b"good"]])
    assert "MESSAGE: box failed to open" in failure(events).reason


@pytest.mark.parametrize("index", [2, 10, 17, 30, -1])
@pytest.mark.parametrize("backend", BACKENDS)
def test_tampered_message_is_fatal(backend: str, index: int) -> None:
    ref = RefClient()
    conn = accepted(ref, backend)
    frame = bytearray(ref.message(b"payload!" * 3))
    frame[index] ^= 0x04
    fail = failure(conn.receive_data(bytes(frame)))
    assert fail.kind == "protocol"


@pytest.mark.parametrize("backend", BACKENDS)
def test_message_sealed_in_the_wrong_direction_is_fatal(backend: str) -> None:
    """A MESSAGE reflected back at its sender uses the other nonce prefix: it cannot open."""
    ref = RefClient()
    conn = accepted(ref, backend)
    frames = frame_bodies(conn.encode_messages([[b"mirror"], [b"mirror"]]))
    reflected = encode_frame(frames[1][1])  # nonce 3: above the client's INITIATE nonce
    assert "box failed to open" in failure(conn.receive_data(reflected)).reason


@pytest.mark.parametrize("backend", BACKENDS)
def test_short_message_is_fatal(backend: str) -> None:
    ref = RefClient()
    conn = accepted(ref, backend)
    body = parse_frame_body(ref.message(b""))[:32]
    assert "MESSAGE too short" in failure(conn.receive_data(encode_frame(body))).reason


@pytest.mark.parametrize("backend", BACKENDS)
def test_clear_text_after_the_handshake_is_fatal(backend: str) -> None:
    ref = RefClient()
    conn = accepted(ref, backend)
    assert "unencrypted data frame" in failure(conn.receive_data(encode_frame(b"hi"))).reason
    conn = accepted(RefClient(), backend)
    fail = failure(conn.receive_data(commands.ping()))
    assert "expected a CURVE MESSAGE" in fail.reason


@pytest.mark.parametrize("backend", BACKENDS)
def test_outer_more_flag_is_fatal(backend: str) -> None:
    ref = RefClient()
    conn = accepted(ref, backend)
    frame = bytearray(ref.message(b"x"))
    frame[0] = 0x01
    assert "MORE flag" in failure(conn.receive_data(bytes(frame))).reason


@pytest.mark.parametrize("inner", [0x04, 0x80, 0xFF])
@pytest.mark.parametrize("backend", BACKENDS)
def test_reserved_inner_flags_are_fatal(backend: str, inner: int) -> None:
    ref = RefClient()
    conn = accepted(ref, backend)
    assert "reserved flag bits" in failure(conn.receive_data(ref.message(b"x", inner=inner))).reason


@pytest.mark.parametrize("backend", BACKENDS)
def test_inner_command_with_more_is_fatal(backend: str) -> None:
    ref = RefClient()
    conn = accepted(ref, backend)
    fail = failure(conn.receive_data(ref.message(b"\x04PING\x00\x00", inner=0x03)))
    assert "MORE" in fail.reason


# ================================================================== hostile input: client side


@pytest.mark.parametrize("delta", [-1, 1])
def test_welcome_of_the_wrong_size_is_fatal(delta: int) -> None:
    conn, ref = our_client()
    fail = failure(conn.receive_data(ref.welcome(size_delta=delta)))
    assert "WELCOME must be 168 bytes" in fail.reason


def test_tampered_welcome_is_fatal() -> None:
    conn, ref = our_client()
    frame = bytearray(ref.welcome())
    frame[50] ^= 1
    assert "WELCOME: box failed to open" in failure(conn.receive_data(bytes(frame))).reason


def test_welcome_from_a_server_without_the_secret_key_is_fatal() -> None:
    """A man in the middle without s cannot produce a WELCOME that opens."""
    conn, ref = our_client()
    _impostor_public, impostor_secret = keypair()
    w = os.urandom(16)
    key = BOX.beforenm(ref.client_transient, impostor_secret)
    box = BOX.seal(os.urandom(32 + 96), b"WELCOME-" + w, key)
    frame = encode_frame(b"\x07WELCOME" + w + box, 0x04)
    assert "WELCOME: box failed to open" in failure(conn.receive_data(frame)).reason


def test_ready_too_short_is_fatal() -> None:
    conn, ref = our_client()
    conn.receive_data(ref.welcome())
    ref.read_initiate(parse_frame_body(conn.data_to_send()))
    body = parse_frame_body(ref.ready(b""))[:29]
    assert "READY too short" in failure(conn.receive_data(encode_frame(body, 0x04))).reason


def test_tampered_ready_is_fatal() -> None:
    conn, ref = our_client()
    conn.receive_data(ref.welcome())
    ref.read_initiate(parse_frame_body(conn.data_to_send()))
    frame = bytearray(ref.ready())
    frame[-3] ^= 1
    assert "READY: box failed to open" in failure(conn.receive_data(bytes(frame))).reason


def test_ready_with_nonce_zero_is_fatal() -> None:
    conn, ref = our_client()
    conn.receive_data(ref.welcome())
    ref.read_initiate(parse_frame_body(conn.data_to_send()))
    fail = failure(conn.receive_data(ref.ready(nonce=0)))
    assert "READY nonce 0 is not above" in fail.reason


@pytest.mark.parametrize("backend", BACKENDS)
def test_server_message_replay_is_fatal_for_the_client(backend: str) -> None:
    conn, ref = client_ready(backend)
    frame = ref.message(b"hello")
    assert conn.receive_data(frame) == [MessagesReceived([[b"hello"]])]
    assert "replayed" in failure(conn.receive_data(frame)).reason


@pytest.mark.parametrize("backend", BACKENDS)
def test_server_message_nonce_must_exceed_the_ready_nonce(backend: str) -> None:
    conn, ref = client_ready(backend)
    assert "replayed" in failure(conn.receive_data(ref.message(b"x", nonce=1))).reason


def test_unexpected_command_before_welcome_is_fatal() -> None:
    conn, _ = our_client()
    fail = failure(conn.receive_data(encode_command(b"READY", bytes(40))))
    assert "unexpected READY" in fail.reason and "WELCOME" in fail.reason


# ================================================================== mechanism construction


def test_server_refuses_a_public_key_that_is_not_its_own() -> None:
    from zmtp.protocol.curve import CurveServer

    with pytest.raises(ValueError, match="does not belong"):
        CurveServer(b"", SERVER_SECRET, CLIENT_PUBLIC)


@pytest.mark.parametrize("size", [0, 31, 33])
def test_keys_must_be_32_bytes(size: int) -> None:
    from zmtp.protocol.curve import CurveClient, CurveServer

    with pytest.raises(ValueError):
        CurveClient(b"", bytes(size), CLIENT_PUBLIC, CLIENT_SECRET)
    with pytest.raises(ValueError):
        CurveServer(b"", bytes(size))


def test_the_decision_user_id_reaches_the_handshake_event() -> None:
    _, _, _, events_s = curve_pair()
    done = events_s[-1]
    assert isinstance(done, HandshakeComplete) and done.user_id == "user-curve"


@settings(max_examples=40, deadline=None)
@given(
    messages=st.lists(st.lists(st.binary(max_size=600), min_size=1, max_size=4), max_size=6),
    cuts=st.lists(st.integers(min_value=0, max_value=10_000), max_size=8),
)
def test_any_chunking_delivers_the_same_messages(
    messages: list[list[bytes]], cuts: list[int]
) -> None:
    client, server, _, _ = curve_pair(backend=BACKENDS[-1])
    wire = client.encode_messages(messages)
    points = sorted({c % (len(wire) + 1) for c in cuts} | {0, len(wire)})
    got: list[list[bytes]] = []
    for start, stop in itertools.pairwise(points):
        for event in server.receive_data(wire[start:stop]):
            assert isinstance(event, MessagesReceived)
            got += event.messages
    assert got == messages


@pytest.mark.parametrize("backend", BACKENDS)
def test_messages_pipelined_behind_initiate_are_delivered_after_the_decision(
    backend: str,
) -> None:
    """A client may send MESSAGEs right after INITIATE (it has the keys): held, then delivered."""
    ref = RefClient()
    conn = welcomed(ref, backend)
    events = conn.receive_data(ref.initiate() + ref.message(b"early"))
    assert [type(e) for e in events] == [AuthenticationRequested]
    assert conn.receive_data(ref.message(b"later")) == []  # held
    events = conn.complete_authentication(AuthResult.allow())
    assert [type(e) for e in events] == [HandshakeComplete, MessagesReceived]
    assert events[1] == MessagesReceived([[b"early"], [b"later"]])


# ================================================================== batched MESSAGE framing
#
# With libsodium the decoder opens every MESSAGE of a read in one pass
# (``_SodiumMessageDecoder.decode_batch``) and the encoder seals a batch with libsodium called
# inline; the pure back-end keeps the per-frame paths. Both must behave identically, byte for
# byte and error for error, which is what these tests pin down.

#: Payload sizes around every boundary of the batched paths: short/long outer frame (a body of
#: 255 vs 256 bytes: payloads 222/223), the 4 KiB scratch buffer (plaintext 4096 = payload 4095),
#: and the decoder's large-body mode (bodies over 8 KiB; 70 000 spans two 64 KiB reads).
BOUNDARY_SIZES = [0, 1, 64, 222, 223, 255, 4095, 4096, 5000, 9000, 70_000]


def batch_frames(ref: RefClient) -> tuple[bytes, list[object]]:
    """One wire of many MESSAGEs (singles, multipart, commands, a PING) and the events due."""
    wire: list[bytes] = []
    singles = [[bytes([i % 251]) * size] for i, size in enumerate(BOUNDARY_SIZES * 3)]
    singles += [[os.urandom(64)] for _ in range(200)]
    wire += [ref.message(parts[0]) for parts in singles]
    wire.append(ref.message(b"\x09SUBSCRIBEtopic", inner=0x02))
    multipart = [b"a", b"b" * 300, b""]
    wire.append(ref.message(multipart[0], inner=0x01))
    wire.append(ref.message(b"\x04PING\x00\x00", inner=0x02))  # between two frames: allowed
    wire.append(ref.message(multipart[1], inner=0x01))
    wire.append(ref.message(multipart[2]))
    wire.append(ref.message(b"tail"))
    events: list[object] = [
        MessagesReceived(singles),
        CommandReceived(b"SUBSCRIBE", b"topic"),
        MessagesReceived([multipart, [b"tail"]]),
    ]
    return b"".join(wire), events


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_read_of_many_messages_is_decoded_in_one_call(backend: str) -> None:
    ref = RefClient()
    conn = accepted(ref, backend)
    wire, expected = batch_frames(ref)
    assert conn.receive_data(wire) == expected
    assert conn.state is State.READY
    ((_, body),) = frame_bodies(conn.data_to_send())  # the PING was answered
    assert ref.read_message(body)[1:] == (0x02, b"\x04PONG")


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("chunk", [1, 7, 100, 4097, 9000, 65_536, 1 << 20])
def test_batched_decoding_survives_any_read_size(backend: str, chunk: int) -> None:
    ref = RefClient()
    conn = accepted(ref, backend)
    wire, expected = batch_frames(ref)
    events: list[object] = []
    for start in range(0, len(wire), chunk):
        events += conn.receive_data(wire[start : start + chunk])
    singles = [e for e in events if isinstance(e, MessagesReceived)]
    assert [m for e in singles for m in e.messages] == [
        m for e in expected if isinstance(e, MessagesReceived) for m in e.messages
    ]
    assert [e for e in events if isinstance(e, CommandReceived)] == [expected[1]]
    assert conn.state is State.READY


def test_nacl_decoder_takes_whole_reads() -> None:
    """The libsodium transform offers ``decode_batch`` and the frame decoder picks it up."""
    if "nacl" not in BACKENDS:
        pytest.skip("PyNaCl not installed")
    conn = accepted(RefClient(), "nacl")
    transform = conn.mechanism.decode_transform
    assert transform is not None and hasattr(transform, "decode_batch")
    decoder = conn._decoder
    assert decoder._batch is not None
    decoder.transform = None
    assert decoder._batch is None
    pure = accepted(RefClient(), "pure")
    assert not hasattr(pure.mechanism.decode_transform, "decode_batch")


def _replay(ref: RefClient) -> bytes:
    return ref.message(b"again", nonce=ref.nonce - 2)


def _tampered(ref: RefClient) -> bytes:
    frame = bytearray(ref.message(b"tampered" * 10))
    frame[40] ^= 0x20
    return bytes(frame)


def _flip_last(frame: bytes) -> bytes:
    return frame[:-1] + bytes((frame[-1] ^ 1,))


def _too_short(ref: RefClient) -> bytes:
    return encode_frame(parse_frame_body(ref.message(b""))[:32])


def _outer_flags(flags: int) -> Callable[[RefClient], bytes]:
    def make(ref: RefClient) -> bytes:
        frame = bytearray(ref.message(b"x"))
        frame[0] = flags
        return bytes(frame)

    return make


#: A bad frame for the middle of a batch, and what the failure must say.
BAD_FRAMES: list[tuple[str, Callable[[RefClient], bytes], str]] = [
    ("replayed nonce", _replay, "replayed or reordered"),
    ("nonce of the frame before", lambda r: r.message(b"x", nonce=r.nonce), "replayed"),
    ("tampered box", _tampered, "MESSAGE: box failed to open"),
    ("too short", _too_short, "MESSAGE too short"),
    ("outer MORE", _outer_flags(0x01), "MORE flag"),
    ("reserved outer bits", _outer_flags(0x10), "reserved frame flag bits set (flags=0x10)"),
    ("clear text", lambda r: encode_frame(b"plain text"), "unencrypted data frame"),
    ("clear command", lambda r: commands.ping(), "expected a CURVE MESSAGE"),
    ("reserved inner flags", lambda r: r.message(b"x", inner=0x10), "reserved flag bits"),
    ("inner command with MORE", lambda r: r.message(b"\x04PING\x00\x00", inner=3), "MORE"),
    ("malformed inner command", lambda r: r.message(b"\x09SUB", inner=2), "bad name length"),
    ("long frame, bad tag", lambda r: _flip_last(r.message(b"L" * 300, nonce=1 << 40)), "open"),
]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize(("what", "bad", "reason"), BAD_FRAMES, ids=[b[0] for b in BAD_FRAMES])
def test_a_bad_frame_mid_batch_fails_after_the_messages_before_it(
    backend: str, what: str, bad: Callable[[RefClient], bytes], reason: str
) -> None:
    """Frames before the bad one are delivered, then the connection fails; none after."""
    ref = RefClient()
    conn = accepted(ref, backend)
    before = [[b"m%d" % i] for i in range(5)]
    wire = b"".join(ref.message(parts[0]) for parts in before)
    wire += ref.message(b"first", inner=0x01)  # an unfinished multipart is not delivered
    wire += bad(ref)
    wire += b"".join(ref.message(b"after %d" % i) for i in range(3))
    events = conn.receive_data(wire)
    assert events[0] == MessagesReceived(before)
    assert len(events) == 2
    fail = failure(events)
    assert fail.kind == "protocol" and not fail.during_handshake
    assert reason in fail.reason, what
    assert conn.state is State.CLOSED
    assert conn.receive_data(ref.message(b"later")) == []


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_replay_in_a_later_read_is_caught_too(backend: str) -> None:
    """The batch path and the per-frame path share the last nonce across reads."""
    ref = RefClient()
    conn = accepted(ref, backend)
    big = ref.message(b"B" * 70_000)  # over 64 KiB: split reads go through the per-frame path
    small = ref.message(b"s")
    assert conn.receive_data(big[:1000]) == []
    assert conn.receive_data(big[1000:] + small) == [MessagesReceived([[b"B" * 70_000], [b"s"]])]
    assert "replayed" in failure(conn.receive_data(big)).reason


@pytest.mark.parametrize("backend", BACKENDS)
def test_replayed_large_frame_is_fatal_on_the_per_frame_path(backend: str) -> None:
    ref = RefClient()
    conn = accepted(ref, backend)
    first = ref.message(b"x")
    big = ref.message(b"B" * 70_000, nonce=ref.nonce)  # the nonce of ``first`` again
    assert conn.receive_data(first) == [MessagesReceived([[b"x"]])]
    assert conn.receive_data(big[:10]) == []
    assert "replayed" in failure(conn.receive_data(big[10:])).reason


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("limit", [40, 97, 300])
def test_max_message_size_is_enforced_on_batched_frames(backend: str, limit: int) -> None:
    """The limit applies to the outer frame, as libzmq checks it: body = payload + 33."""
    ref = RefClient()
    conn = accepted(ref, backend)
    conn._decoder.max_message_size = (
        limit  # set after the handshake, whose frames are up to ~300 bytes
    )
    fits = b"f" * (limit - 33)
    wire = ref.message(fits) + ref.message(fits + b"!") + ref.message(b"after")
    events = conn.receive_data(wire)
    assert events[0] == MessagesReceived([[fits]])
    assert f"exceeds max_message_size {limit}" in failure(events).reason


@pytest.mark.parametrize("backend", BACKENDS)
def test_max_message_size_is_checked_before_a_large_body_arrives(backend: str) -> None:
    ref = RefClient()
    conn = accepted(ref, backend, max_message_size=1000)  # the handshake fits in 1000 bytes
    wire = ref.message(b"ok") + ref.message(b"x" * 5000)
    events = conn.receive_data(wire[: len(ref.message(b"ok")) + 20])
    assert events[0] == MessagesReceived([[b"ok"]])
    assert "exceeds max_message_size 1000" in failure(events).reason


def _session_mechanism(backend: str, key: bytes) -> tuple[CurveClient, CurveServer]:
    """A client and a server mechanism sharing session ``key``, without a handshake."""
    box = get_backend(backend)
    client = CurveClient(b"", SERVER_PUBLIC, CLIENT_PUBLIC, CLIENT_SECRET, backend=box)
    server = CurveServer(b"", SERVER_SECRET, backend=box)
    client._session_key = server._session_key = key
    client._next_nonce, server._peer_nonce = 3, 2
    client._start_session(NONCE_MESSAGE_C, NONCE_MESSAGE_S)
    server._start_session(NONCE_MESSAGE_S, NONCE_MESSAGE_C)
    return client, server


def _decode(server: CurveServer, wire: bytes, chunk: int) -> list[object]:
    decoder = FrameDecoder()
    decoder.transform = server.decode_transform
    items: list[object] = []
    for start in range(0, len(wire), chunk):
        items += decoder.feed(wire[start : start + chunk])
        assert decoder.error is None
    return items


@settings(max_examples=30, deadline=None)
@given(
    messages=st.lists(
        st.lists(
            st.one_of(st.binary(max_size=300), st.sampled_from(BOUNDARY_SIZES).map(bytes)),
            min_size=1,
            max_size=3,
        ),
        min_size=1,
        max_size=12,
    ),
    key=st.binary(min_size=32, max_size=32),
    chunk=st.sampled_from([3, 1000, 1 << 20]),
)
def test_batched_encode_is_byte_identical_on_both_backends(
    messages: list[list[bytes]], key: bytes, chunk: int
) -> None:
    if "nacl" not in BACKENDS:
        pytest.skip("PyNaCl not installed")
    nacl_client, nacl_server = _session_mechanism("nacl", key)
    pure_client, pure_server = _session_mechanism("pure", key)
    wire = nacl_client.encode_messages(messages)
    assert wire == pure_client.encode_messages(messages)
    assert nacl_client._next_nonce == pure_client._next_nonce == 3 + sum(map(len, messages))
    # Each back-end decodes what the other encoded (the frames are the same bytes anyway).
    assert _decode(nacl_server, wire, chunk) == _decode(pure_server, wire, chunk) == messages


@pytest.mark.parametrize("backend", BACKENDS)
def test_batched_encode_reads_back_with_the_spec_client(backend: str) -> None:
    """Frame layout from the spec: short/long outer header, MESSAGE name, nonce, box."""
    ref = RefClient()
    conn = accepted(ref, backend)
    messages = [[b"x" * size] for size in BOUNDARY_SIZES] + [[b"a", b"b" * 4096, b""]]
    frames = frame_bodies(conn.encode_messages(messages))
    inner_and_payload = [ref.read_message(body)[1:] for _, body in frames]
    flat = [(0x01 if i < len(m) - 1 else 0x00, p) for m in messages for i, p in enumerate(m)]
    assert inner_and_payload == flat
    assert [ref.read_message(body)[0] for _, body in frames] == list(range(2, 2 + len(flat)))
    assert [flags for flags, _ in frames] == [0x02 if len(b) > 255 else 0x00 for _, b in frames]


#: One step of a peer's traffic for the differential test.
Step = tuple[str, bytes, int]


@settings(max_examples=25, deadline=None)
@given(
    steps=st.lists(
        st.tuples(
            st.sampled_from(["msg"] * 6 + ["replay", "tamper", "clear", "short", "gap"]),
            st.one_of(st.binary(max_size=80), st.sampled_from([b"\x04PING\x00\x00", b"\x03SUB"])),
            st.sampled_from([0, 0, 0, 1, 1, 2, 3, 0x40]),
        ),
        max_size=14,
    ),
    cuts=st.lists(st.integers(min_value=0, max_value=5_000), max_size=5),
)
def test_nacl_batch_path_behaves_like_the_pure_per_frame_path(
    steps: list[Step], cuts: list[int]
) -> None:
    """Differential: any mix of good and bad frames, any chunking, same events on both."""
    if "nacl" not in BACKENDS:
        pytest.skip("PyNaCl not installed")
    outcomes = []
    for backend in ("pure", "nacl"):
        ref = RefClient()
        conn = accepted(ref, backend)
        wire = b""
        for kind, payload, inner in steps:
            if kind == "msg":
                wire += ref.message(payload, inner=inner)
            elif kind == "replay":
                wire += ref.message(payload, inner=inner, nonce=max(ref.nonce - 1, 0))
            elif kind == "gap":
                wire += ref.message(payload, inner=inner, nonce=ref.nonce + 1000)
                ref.nonce += 1000
            elif kind == "tamper":
                frame = bytearray(ref.message(payload, inner=inner))
                frame[-1] ^= 1
                wire += bytes(frame)
            elif kind == "clear":
                wire += encode_frame(payload)
            else:
                wire += encode_frame(parse_frame_body(ref.message(b""))[:32])
        points = sorted({c % (len(wire) + 1) for c in cuts} | {0, len(wire)})
        events: list[object] = []
        for start, stop in itertools.pairwise(points):
            events += conn.receive_data(wire[start:stop])
        # Batches may be split differently by the chunking, so compare the flattened stream.
        flat: list[object] = []
        for event in events:
            flat += event.messages if isinstance(event, MessagesReceived) else [event]
        outcomes.append((flat, conn.state))
    assert outcomes[0] == outcomes[1]


def test_nacl_without_its_cffi_module_uses_the_generic_paths(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """PyNaCl's public bindings alone (no ``nacl._sodium``): per-frame paths, same bytes."""
    if "nacl" not in BACKENDS:
        pytest.skip("PyNaCl not installed")
    monkeypatch.setattr(box_module, "_load_sodium", lambda: None)
    backend = NaclBackend()
    client, server = curve_client(backend=backend), curve_server(backend=backend)
    pump_auth(client, server)
    assert server.state is State.READY
    assert not hasattr(server.mechanism.decode_transform, "decode_batch")
    messages = [[b"x" * size] for size in BOUNDARY_SIZES] + [[b"a", b"b"]]
    assert server.receive_data(client.encode_messages(messages)) == [MessagesReceived(messages)]
    key = os.urandom(32)
    plain_client, _ = _session_mechanism("pure", key)
    nacl_client = CurveClient(b"", SERVER_PUBLIC, CLIENT_PUBLIC, CLIENT_SECRET, backend=backend)
    nacl_client._session_key, nacl_client._next_nonce = key, 3
    nacl_client._start_session(NONCE_MESSAGE_C, NONCE_MESSAGE_S)
    assert nacl_client.encode_messages(messages) == plain_client.encode_messages(messages)


def test_nonce_space_is_checked_for_the_whole_batch() -> None:
    """Near 2**64 the exact frame count of the batch decides; nothing is sealed on failure."""
    for backend in BACKENDS:
        client, _ = _session_mechanism(backend, bytes(32))
        client._next_nonce = 2**64 - 3
        with pytest.raises(ProtocolError, match="nonce space exhausted"):
            client.encode_messages([[b"a"], [b"b", b"c"], [b"d"]])  # 4 frames, 3 nonces left
        assert client._next_nonce == 2**64 - 3
        wire = client.encode_messages([[b"a"], [b"b", b"c"]])  # exactly the last 3
        assert len(frame_bodies(wire)) == 3
        assert client._next_nonce == 2**64
        with pytest.raises(ProtocolError, match="nonce space exhausted"):
            client.encode_messages([[b"e"]])
