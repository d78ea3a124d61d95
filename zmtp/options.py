"""Socket options: typed, with libzmq's defaults, times in seconds.

libzmq option names map one-to-one (``ZMQ_SNDHWM`` -> ``send_hwm``...); the table is in
``docs/options.md``. Times are floats in seconds instead of integer milliseconds, and "infinite"
is ``None`` instead of -1.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields, replace
from typing import Any

from .errors import OptionError, UnknownOption, WrongType
from .protocol.frames import DEFAULT_MAX_HANDSHAKE_SIZE

#: A CURVE key as a user may give it: 40-character Z85 (str or bytes) or 32 raw bytes.
CurveKey = str | bytes

#: ``ZMQ_NOTIFY_CONNECT``: a ``router_notify`` flag, ``[routing_id, b""]`` when a peer connects.
NOTIFY_CONNECT = 1
#: ``ZMQ_NOTIFY_DISCONNECT``: a ``router_notify`` flag, ``[routing_id, b""]`` when it goes.
NOTIFY_DISCONNECT = 2


@dataclass
class Options:
    """Every option a socket understands. Pass them as keyword arguments to ``Socket``."""

    #: ``ZMQ_ROUTING_ID``: sent as the ``Identity`` property (REQ, DEALER, ROUTER); 0-255 bytes
    #: (a ``str`` is taken as UTF-8), must not start with a zero byte (reserved for generated
    #: ids).
    identity: bytes = b""
    #: ``ZMQ_SNDHWM``: messages queued per peer before ``send`` blocks (or PUB drops). 0 = no limit.
    send_hwm: int = 1000
    #: ``ZMQ_RCVHWM``: messages queued per peer before we stop reading from it. 0 = no limit.
    recv_hwm: int = 1000
    #: ``ZMQ_LINGER``: on close, how long to keep flushing queued messages (None = until done).
    linger: float | None = None
    #: ``ZMQ_SNDTIMEO``: ``send`` raises ``TimeoutError`` after this long (None = block).
    send_timeout: float | None = None
    #: ``ZMQ_RCVTIMEO``: ``recv`` raises ``TimeoutError`` after this long (None = block).
    recv_timeout: float | None = None
    #: ``ZMQ_RECONNECT_IVL``: first reconnect delay; a random jitter of up to the same again
    #: is added, like libzmq. None disables reconnecting.
    reconnect_ivl: float | None = 0.1
    #: ``ZMQ_RECONNECT_IVL_MAX``: if > reconnect_ivl, the delay doubles up to this.
    reconnect_ivl_max: float = 0.0
    #: ``ZMQ_HANDSHAKE_IVL``: the whole handshake must finish in this time (None/0 = no limit).
    #: Also the time a peer has to answer the PING that ends a lent read (see
    #: zmtp/engine/stream.py) before its connection is dropped as dead.
    handshake_ivl: float | None = 30.0
    #: ``ZMQ_HEARTBEAT_IVL``: send a PING this often (0 = off). We always answer PINGs.
    heartbeat_ivl: float = 0.0
    #: ``ZMQ_HEARTBEAT_TTL``: the TTL our PINGs ask the peer to apply (0.1 s resolution).
    heartbeat_ttl: float = 0.0
    #: ``ZMQ_HEARTBEAT_TIMEOUT``: close if nothing arrives this long after a PING is written
    #: (None = heartbeat_ivl). Bytes waiting unread count as arrived, so a late event loop
    #: does not drop a peer that answered (docs/security.md, heartbeats on a late loop).
    heartbeat_timeout: float | None = None
    #: ``ZMQ_MAXMSGSIZE``: largest frame accepted, checked per frame like libzmq (-1 = no limit).
    max_message_size: int = -1
    #: Largest command frame accepted before the handshake is complete (no libzmq option):
    #: bounds what an unauthenticated peer can make us buffer; refused at the frame header.
    #: The default (64 KiB) is far above the largest legal handshake command, a CURVE
    #: INITIATE with its metadata (docs/security.md, "Limits before the handshake").
    max_handshake_size: int = DEFAULT_MAX_HANDSHAKE_SIZE
    #: ``ZMQ_IMMEDIATE``: queue messages only to completed connections (default: a connect()
    #: endpoint queues messages even before its connection is up, like libzmq).
    immediate: bool = False
    #: ``ZMQ_BACKLOG``: listen backlog: connections the kernel completes and holds for a
    #: listener before it accepts them. Beyond it a tcp connect's SYN is dropped and retried
    #: by the client after 1 s, 3 s, ... (1000 simultaneous connects take ~8 s at 100):
    #: raise it (the kernel caps it at ``net.core.somaxconn``) for connection storms.
    backlog: int = 100
    #: Connections a listener (each ``bind()``) serves at once, handshaking or established
    #: (no libzmq option; 0 = no limit). One more is accepted and closed at once, with an
    #: ``AcceptFailed`` monitor event: it bounds what many peers can make us hold (about
    #: 40 KiB per idle connection, docs/security.md) below the descriptor limit.
    max_connections: int = 10_000
    #: Bytes requested per read from a stream transport.
    read_size: int = 256 * 1024
    #: Seconds a ``recv`` that reads its only peer's connection itself, right after an
    #: eager write of ours (a ping-pong: REQ/REP, PAIR, DEALER), keeps the event loop polling
    #: before the process may sleep (no libzmq option; 0 = never). A sleeping process must
    #: be woken by the peer's send, which on a VM costs more than a round trip's work
    #: (docs/performance.md, "Round-trip latency"); a peer slower than this costs up to this
    #: much CPU per message. Off by default: it helped on an idle machine and hurt on a loaded
    #: one (more runnable processes than CPUs: the peer may not run while we spin).
    answer_spin: float = 0.0
    #: ``ZMQ_MULTICAST_HOPS``: TTL (IPv6: hop limit) of the multicast datagrams a RADIO sends
    #: over udp:// (1-255; 1 keeps them on the local network).
    multicast_hops: int = 1
    #: ``ZMQ_MULTICAST_LOOP``: a RADIO's udp:// multicast datagrams also reach DISHes on this
    #: host.
    multicast_loop: bool = True

    # --- socket-type options (docs/socket-types.md); ignored by the other types ---
    #: ``ZMQ_REQ_RELAXED``: a REQ may send a new request before the reply to the last one
    #: arrived; the pending request is abandoned and its reply, if it comes, discarded.
    req_relaxed: bool = False
    #: ``ZMQ_REQ_CORRELATE``: a REQ prefixes each request with a 4-byte id (host byte order,
    #: like libzmq) and accepts only the reply carrying it. Use with ``req_relaxed`` or
    #: ``recv_timeout``, where a late reply could otherwise answer the wrong request.
    req_correlate: bool = False
    #: ``ZMQ_ROUTER_MANDATORY``: sending to an unknown routing id raises ``HostUnreachable``
    #: instead of dropping silently, and a peer at its HWM blocks ``send`` instead of losing
    #: the message.
    router_mandatory: bool = False
    #: ``ZMQ_ROUTER_HANDOVER``: a peer announcing an Identity already in use takes it over;
    #: the old connection is closed (default: the newcomer is refused).
    router_handover: bool = False
    #: ``ZMQ_ROUTER_NOTIFY``: a ROUTER application receives ``[routing_id, b""]`` when a peer
    #: connects (``NOTIFY_CONNECT``) and/or when the peer or the network ends the connection
    #: (``NOTIFY_DISCONNECT``), so it can keep a peer table without a protocol of its own.
    #: Flags 0-3 (``NOTIFY_CONNECT | NOTIFY_DISCONNECT``).
    router_notify: int = 0
    #: ``ZMQ_PROBE_ROUTER``: a ROUTER, DEALER or REQ sends an empty message first on every new
    #: connection, so that a ROUTER peer learns our routing id before we have anything to say
    #: (it receives ``[our_id, b""]``).
    probe_router: bool = False
    #: ``ZMQ_CONNECT_ROUTING_ID``: the routing id a ROUTER gives the peer of its *next*
    #: ``connect()`` instead of the peer's Identity, so it can address that peer at once
    #: (messages are queued until the connection is up). Consumed by that ``connect()``, as in
    #: libzmq; ``connect(endpoint, routing_id=...)`` says the same per call. b"" = none.
    connect_routing_id: bytes = b""
    #: ``ZMQ_XPUB_VERBOSE``: an XPUB delivers every subscription message, not only the first
    #: for each topic.
    xpub_verbose: bool = False
    #: ``ZMQ_XPUB_VERBOSER``: as ``xpub_verbose``, and every unsubscription too.
    xpub_verboser: bool = False
    #: ``ZMQ_XPUB_MANUAL``: subscriptions are only delivered, not applied; the application
    #: applies them with ``subscribe()``/``unsubscribe()`` (to the peer it heard last).
    xpub_manual: bool = False
    #: ``ZMQ_XPUB_MANUAL_LAST_VALUE``: ``xpub_manual``, and the first message sent after a
    #: subscription was received goes only to the peer that sent it (if it matches): the
    #: last-value-cache pattern, where a newcomer gets the cached value without everyone else
    #: getting a duplicate.
    xpub_manual_last_value: bool = False
    #: ``ZMQ_XPUB_NODROP``: PUB/XPUB/RADIO ``send`` waits (honouring ``send_timeout``) while a
    #: matching subscriber is at its HWM, instead of dropping that subscriber's copy.
    xpub_nodrop: bool = False
    #: PUB/XPUB: distinct topics one peer may subscribe to (no libzmq option; 0 = no limit).
    #: A peer asking for more is disconnected ("too many subscriptions"): it bounds the
    #: memory a subscriber can make a publisher hold (about 300 bytes per topic, plus the
    #: topic). Each topic's size is bounded by ``max_message_size``.
    max_subscriptions: int = 100_000
    #: ``ZMQ_XPUB_WELCOME_MSG``: sent by a PUB/XPUB to each new connection before anything
    #: else, unfiltered (b"" = none). A SUB only sees it if subscribed to a prefix of it.
    xpub_welcome_msg: bytes = b""
    #: ``ZMQ_INVERT_MATCHING``: PUB/XPUB send each message to the peers that are *not*
    #: subscribed to a prefix of it (peers without subscriptions get everything); a SUB
    #: delivers only messages matching none of its subscriptions. Both ends must set it.
    #: XSUB does not filter, so it is unaffected (as in libzmq).
    invert_matching: bool = False
    #: ``ZMQ_CONFLATE``: keep only the newest message per peer, for state updates where an old
    #: value is worthless - received (SUB, XSUB, DEALER, PULL) or queued for sending (PUB,
    #: XPUB, DEALER, PUSH over tcp/ipc; such a send never blocks once the socket has a peer).
    conflate: bool = False
    # Security (docs/security.md). Keys are Z85 text or 32 raw bytes; stored as raw bytes.
    #: ``ZMQ_CURVE_SERVER``: be the CURVE server on every connection (needs curve_secretkey).
    curve_server: bool = False
    #: ``ZMQ_CURVE_PUBLICKEY``: our long-term public key (derived from curve_secretkey if unset).
    curve_publickey: CurveKey | None = None
    #: ``ZMQ_CURVE_SECRETKEY``: our long-term secret key (server and client).
    curve_secretkey: CurveKey | None = None
    #: ``ZMQ_CURVE_SERVERKEY``: the server's public key; setting it makes us a CURVE client.
    curve_serverkey: CurveKey | None = None
    #: ``ZMQ_PLAIN_SERVER``: be the PLAIN server (clients are authenticated, see docs).
    plain_server: bool = False
    #: ``ZMQ_PLAIN_USERNAME``: setting it (or the password) makes us a PLAIN client.
    plain_username: str | bytes | None = None
    #: ``ZMQ_PLAIN_PASSWORD``.
    plain_password: str | bytes | None = None
    #: ``ZMQ_ZAP_DOMAIN``: the domain in authentication requests; on a NULL socket, setting it
    #: turns authentication on (as in libzmq).
    zap_domain: str = ""

    def __post_init__(self) -> None:
        identity: object = self.identity  # typed bytes; a caller's kwargs may hold anything
        if isinstance(identity, str):  # as plain_username, and zmtp_qos.Worker(identity=)
            self.identity = identity.encode("utf-8")
        elif not isinstance(identity, bytes):
            raise OptionError(f"identity must be bytes or str, not {type(identity).__name__}")
        if len(self.identity) > 255:
            raise OptionError("identity must be at most 255 bytes")
        if self.identity.startswith(b"\0"):
            raise OptionError("identities starting with a zero byte are reserved")
        for name in ("send_hwm", "recv_hwm", "max_connections", "max_subscriptions"):
            if getattr(self, name) < 0:
                raise OptionError(f"{name} must be >= 0 (0 = no limit)")
        if not isinstance(self.xpub_welcome_msg, bytes):
            raise OptionError("xpub_welcome_msg must be bytes")
        if (
            not isinstance(self.router_notify, int)
            or isinstance(self.router_notify, bool)
            or not 0 <= self.router_notify <= NOTIFY_CONNECT | NOTIFY_DISCONNECT
        ):
            raise OptionError(
                "router_notify takes flags: 0, NOTIFY_CONNECT (1), NOTIFY_DISCONNECT (2) "
                f"or both (3), not {self.router_notify!r}"
            )
        if not isinstance(self.connect_routing_id, bytes):
            # Any length and any first byte, as libzmq: the id never goes on the wire, and a
            # clash with a generated id is refused when connect() uses it.
            raise OptionError("connect_routing_id must be bytes (b'' = none)")
        if (
            not isinstance(self.max_handshake_size, int)
            or isinstance(self.max_handshake_size, bool)
            or self.max_handshake_size < 512
        ):
            raise OptionError(
                "max_handshake_size must be an int of at least 512 bytes (a READY or CURVE"
                " INITIATE with its metadata must fit)"
            )
        if self.heartbeat_ttl < 0 or self.heartbeat_ttl > 6553.5:
            raise OptionError("heartbeat_ttl must be between 0 and 6553.5 seconds")
        if not 0 <= self.answer_spin <= 1.0:
            raise OptionError("answer_spin must be between 0 and 1 second")
        if not 1 <= self.multicast_hops <= 255:
            raise OptionError("multicast_hops must be between 1 and 255")
        self.security_mechanism()

    def security_mechanism(self) -> str:
        """``"NULL"``, ``"PLAIN"`` or ``"CURVE"`` from the security options, normalising keys.

        Raises ``ValueError`` for a contradictory or incomplete configuration: libzmq lets the
        last option set silently win, which turns a typo into an insecure socket.
        """
        for name in ("curve_publickey", "curve_secretkey", "curve_serverkey"):
            value = getattr(self, name)
            if value is not None:
                # Imported only with a CURVE key set: the keys module loads ``cryptography``,
                # which a NULL or PLAIN socket never needs (import time, docs/performance.md).
                from .crypto.keys import decode_key

                try:
                    setattr(self, name, decode_key(value))
                except (TypeError, ValueError) as exc:
                    raise OptionError(f"{name}: {exc}") from None
        for name in ("plain_username", "plain_password"):
            value = getattr(self, name)
            if value is not None:
                if not isinstance(value, (str, bytes)):
                    raise WrongType(f"{name} must be str or bytes")
                raw = value.encode("utf-8") if isinstance(value, str) else value
                if len(raw) > 255:
                    raise OptionError(f"{name} must be at most 255 bytes (UTF-8)")
        if not isinstance(self.zap_domain, str) or len(self.zap_domain.encode()) > 255:
            raise OptionError("zap_domain must be a str of at most 255 bytes")
        curve = self.curve_server or self.curve_serverkey is not None
        plain = (
            self.plain_server
            or self.plain_username is not None
            or (self.plain_password is not None)
        )
        if curve and plain:
            raise OptionError("both CURVE and PLAIN options are set: choose one mechanism")
        if self.curve_server and self.curve_serverkey is not None:
            raise OptionError("curve_server and curve_serverkey are exclusive (server or client)")
        if self.plain_server and (self.plain_username is not None):
            raise OptionError("plain_server and plain_username are exclusive (server or client)")
        if self.curve_publickey is not None and self.curve_secretkey is None:
            raise OptionError("curve_publickey is set without curve_secretkey")
        if self.curve_secretkey is not None:
            from .crypto.keys import curve_public, decode_key

            derived = decode_key(curve_public(self.curve_secretkey))
            if self.curve_publickey is None:
                self.curve_publickey = derived
            elif self.curve_publickey != derived:
                raise OptionError("curve_publickey does not belong to curve_secretkey")
        if curve:
            if self.curve_secretkey is None:
                role = "curve_server" if self.curve_server else "a CURVE client"
                raise OptionError(f"{role} needs curve_secretkey (see zmtp.crypto.curve_keypair)")
            return "CURVE"
        return "PLAIN" if plain else "NULL"

    @classmethod
    def from_kwargs(cls, kwargs: dict[str, Any]) -> Options:
        """Build options, rejecting unknown names with the list of valid ones."""
        known = {f.name for f in fields(cls)}
        unknown = set(kwargs) - known
        if len(unknown) == 1:
            raise UnknownOption(_unknown(unknown.pop()))
        if unknown:
            raise UnknownOption(
                f"unknown socket option(s) {sorted(unknown)}; valid options: {sorted(known)}"
            )
        for name, value in kwargs.items():
            warn_if_milliseconds(name, value)
        return cls(**kwargs)


def hwm_capacity(hwm: int) -> float:
    """A high-water mark as a queue capacity (0 means unlimited, as in libzmq)."""
    return math.inf if hwm == 0 else hwm


#: Options a socket reads at the moment it sends, receives or closes: ``set`` changes them for
#: the very next call.
IMMEDIATE = frozenset({"send_timeout", "recv_timeout", "linger", "connect_routing_id"})
#: Options the socket type copies when the socket is made (its routing behaviour): pass them
#: to the constructor; ``set`` refuses them rather than pretending.
FIXED = frozenset(
    {
        "conflate",
        "req_relaxed",
        "req_correlate",
        "router_mandatory",
        "router_handover",
        "router_notify",
        "probe_router",
        "xpub_verbose",
        "xpub_verboser",
        "xpub_manual",
        "xpub_manual_last_value",
        "xpub_nodrop",
        "xpub_welcome_msg",
        "invert_matching",
        "max_subscriptions",
    }
)
#: Every other option is read when a connection (or bind, for ``backlog``) is made, as in
#: libzmq: changing it affects later connections only (HWMs, security, heartbeats, identity,
#: reconnect intervals, handshake_ivl, max_message_size, immediate...).
OPTION_NAMES = frozenset(f.name for f in fields(Options))


def set_option(options: Options, name: str, value: Any) -> None:
    """Validate and apply one option with the constructor's checks (and errors).

    The whole set is checked again, so a contradiction (CURVE and PLAIN both set) is refused
    here too; nothing changes if the check fails.
    """
    if name not in OPTION_NAMES:
        raise UnknownOption(_unknown(name))
    if name in FIXED:
        raise OptionError(
            f"{name} is fixed when the socket is made (its type's routing reads it once): "
            f"pass {name}=... to Socket(...)"
        )
    warn_if_milliseconds(name, value)
    checked = replace(options, **{name: value})  # runs __post_init__: every check
    for f in fields(Options):
        setattr(options, f.name, getattr(checked, f.name))  # keys come back normalised


def get_option(options: Options, name: str) -> Any:
    """One option's current value."""
    if name not in OPTION_NAMES:
        raise UnknownOption(_unknown(name))
    return getattr(options, name)


#: pyzmq's (libzmq's) option names, lower case, whose zmtp name is not a close spelling of them:
#: a ported ``routing_id=`` or ``sndhwm=`` is answered with the zmtp name, not a near miss.
PYZMQ_NAMES: dict[str, str] = {
    "routing_id": "identity",
    "sndhwm": "send_hwm",
    "rcvhwm": "recv_hwm",
    "hwm": "send_hwm and recv_hwm",
    "sndtimeo": "send_timeout (in seconds)",
    "rcvtimeo": "recv_timeout (in seconds)",
    "maxmsgsize": "max_message_size",
    "rcvbuf": "read_size",
    "subscribe": "sock.subscribe(topic)",
    "unsubscribe": "sock.unsubscribe(topic)",
}


def _unknown(name: str) -> str:
    import difflib

    pyzmq = PYZMQ_NAMES.get(name.lower())
    close = [pyzmq] if pyzmq else difflib.get_close_matches(name, sorted(OPTION_NAMES), n=3)
    hint = f" (did you mean {', '.join(close)}?)" if close else ""
    return f"unknown socket option {name!r}{hint}; valid options: {sorted(OPTION_NAMES)}"


#: Options in seconds that pyzmq (libzmq) gives in integer milliseconds.
TIME_OPTIONS = frozenset(
    {
        "linger",
        "send_timeout",
        "recv_timeout",
        "reconnect_ivl",
        "reconnect_ivl_max",
        "handshake_ivl",
        "heartbeat_ivl",
        "heartbeat_ttl",
        "heartbeat_timeout",
    }
)
#: A time option at or above this many seconds (16 min 40 s) that is a whole number most
#: likely is milliseconds copied from pyzmq: ``recv_timeout=1000`` meant 1 s.
MILLISECONDS_LOOK = 1000
_warned: set[tuple[str, float]] = set()


def warn_if_milliseconds(name: str, value: Any, stacklevel: int = 4) -> None:
    """Warn (once per option and value) when a time option looks like pyzmq milliseconds.

    The rule: an ``int`` (not a float: ``1000.0`` says "I mean seconds") of at least
    :data:`MILLISECONDS_LOOK`. The value is still used as seconds.
    """
    if name in TIME_OPTIONS:
        warn_if_milliseconds_argument(name, value, stacklevel + 1)


def warn_if_milliseconds_argument(name: str, value: Any, stacklevel: int = 3) -> None:
    """:func:`warn_if_milliseconds` for a time argument that is no option (``Poller.poll``'s
    ``timeout``: pyzmq's ``poll(1000)`` is one second, zmtp's would wait 1000)."""
    if type(value) is int and value >= MILLISECONDS_LOOK and (name, value) not in _warned:
        _warned.add((name, value))
        import warnings

        warnings.warn(
            f"{name}={value} is {value} seconds in zmtp (times are seconds, not pyzmq's "
            f"milliseconds): did you mean {name}={value / 1000:g}? Write {float(value)} to "
            "keep the long time without this warning.",
            UserWarning,
            stacklevel=stacklevel,
        )


def option_attribute(name: str) -> property:
    """``sock.<option>``: reads the option; assigning raises with the way to set it (pyzmq's
    ``sock.linger = 0`` habit, where zmtp's units and validation differ)."""

    def read(sock: Any) -> Any:
        return getattr(sock.options, name)

    def refuse(sock: Any, value: Any) -> None:
        raise AttributeError(
            f"options are not attributes: use sock.set({name!r}, {value!r}) (checked like the "
            f"constructor; times are seconds, not pyzmq's milliseconds)"
        )

    return property(read, refuse, doc=f"The ``{name}`` option (read-only; see ``set``).")
