"""The ZMTP connection state machine: bytes in, events out; messages in, bytes out.

One :class:`Connection` per transport connection. It runs the greeting, the mechanism
handshake, the socket-type check, heartbeats (PING/PONG, TTL, timeout) and framing. It performs
no I/O and never reads a clock: the driver passes ``now`` (any monotonic float, seconds) and
asks :meth:`next_deadline` when to call :meth:`handle_timers`. That makes every rule testable with
plain byte strings.

Driver contract::

    conn = Connection(socket_type="PUSH", now=t)
    write(conn.data_to_send())              # our greeting
    events = conn.receive_data(chunk, now)  # repeat for every read
    write(conn.data_to_send())              # greeting reply, READY, PONGs...
    write(conn.encode_messages(batch))      # after HandshakeComplete
    at conn.next_deadline(): events = conn.handle_timers(now); write(conn.data_to_send())

After a :class:`ConnectionFailed` event the connection is dead: flush ``data_to_send()`` (it
may hold an ERROR for the peer) and close the transport.

On a server whose mechanism needs a decision (PLAIN, CURVE, NULL with authentication) an
:class:`AuthenticationRequested` event arrives instead at that point of the handshake: decide
(asynchronously if need be) and call ``events = conn.complete_authentication(result, now)``, then
flush ``data_to_send()``. Input fed meanwhile is held, not processed.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from enum import Enum
from itertools import compress, count, repeat

from . import commands
from .errors import MessageTooLarge, ProtocolError
from .events import (
    AuthenticationRequested,
    CommandReceived,
    CommandsReceived,
    ConnectionFailed,
    Event,
    HandshakeComplete,
    MessagesReceived,
)
from .frames import (
    COMMAND,
    DEFAULT_MAX_HANDSHAKE_SIZE,
    MORE,
    Command,
    FrameDecoder,
    Item,
    encode_command,
)
from .greeting import GREETING_SIZE, check_greeting_prefix, encode_greeting, parse_greeting
from .mechanism import AuthResult, Mechanism, NullMechanism, PeerRejected
from .properties import Properties, encode_properties
from .sockettypes import compatible


class State(Enum):
    GREETING = "greeting"
    HANDSHAKE = "handshake"
    READY = "ready"
    CLOSED = "closed"


#: The socket types that send their Identity in READY (libzmq ``add_basic_properties``).
_SENDS_IDENTITY = frozenset({"REQ", "DEALER", "ROUTER"})
#: Most input held while an authentication decision is pending. A client has nothing to send
#: then (it waits for WELCOME/READY), so this only stops a hostile peer from filling memory.
MAX_HELD_DURING_AUTH = 1 << 20


class Connection:
    """Sans-IO ZMTP 3.1 connection.

    Parameters mirror libzmq's options: ``handshake_timeout`` (``ZMQ_HANDSHAKE_IVL``, seconds,
    None/0 = none), ``heartbeat_ivl`` (send a PING this often once the handshake is done; 0 =
    off), ``heartbeat_ttl`` (the TTL we ask the peer to apply, sent in our PINGs),
    ``heartbeat_timeout`` (close if nothing arrives this long after a PING; None = same as
    ``heartbeat_ivl``), ``max_message_size`` (-1 = unlimited; checked per frame),
    ``max_handshake_size`` (largest command frame before the handshake is complete; checked
    at the header, so an unauthenticated peer costs at most that much buffered).
    ``extra_properties`` are added to our READY metadata (the extension point for e.g. QoS).
    """

    def __init__(
        self,
        socket_type: str,
        *,
        mechanism: Mechanism | None = None,
        identity: bytes = b"",
        extra_properties: Mapping[str, bytes] | None = None,
        max_message_size: int = -1,
        max_handshake_size: int = DEFAULT_MAX_HANDSHAKE_SIZE,
        handshake_timeout: float | None = 30.0,
        heartbeat_ivl: float = 0.0,
        heartbeat_ttl: float = 0.0,
        heartbeat_timeout: float | None = None,
        now: float = 0.0,
    ) -> None:
        self.socket_type = str(socket_type)
        props: dict[str, bytes] = {"Socket-Type": self.socket_type.encode("ascii")}
        if self.socket_type in _SENDS_IDENTITY:
            props["Identity"] = identity
        if extra_properties:
            for name, value in extra_properties.items():
                lowered = name.lower()
                # An extension may supply the Identity of a type that sends none (QoS anchors
                # for PUSH/PULL), never override Socket-Type or a type's own Identity.
                if lowered == "socket-type" or (lowered == "identity" and "Identity" in props):
                    raise ValueError(f"extension may not override the {name} property")
                props[name] = value
        metadata = encode_properties(props)
        self.mechanism: Mechanism = mechanism or NullMechanism(metadata, as_server=False)
        if mechanism is not None:
            mechanism.local_metadata = metadata
        self.state = State.GREETING
        self.peer: HandshakeComplete | None = None
        self.zmtp_minor = 1
        self._decoder = FrameDecoder(max_message_size, max_handshake_size)
        self._greeting_buf = b""
        self._out: list[bytes] = [encode_greeting(self.mechanism.name, self.mechanism.as_server)]
        # The one pending PONG (libzmq keeps one too): a PING arriving while a PONG is still
        # unsent replaces it, so a peer that floods PINGs and never reads costs one PONG.
        self._pong: bytes | None = None  # the context of the PONG to send
        self._ready_sent = False
        self._auth_pending = False
        self._held: list[bytes] = []
        self._held_size = 0
        self._peer_type_checked = False
        # Timers, as absolute times on the driver's clock (None = not armed).
        self._handshake_deadline = now + handshake_timeout if handshake_timeout else None
        self._hb_ivl = heartbeat_ivl
        self._hb_timeout = heartbeat_ivl if heartbeat_timeout is None else heartbeat_timeout
        self._hb_ttl_ds = min(int(heartbeat_ttl * 10), commands.MAX_TTL_DECISECONDS)
        self._next_ping: float | None = None
        self._ping_timeout: float | None = None
        self._ttl_deadline: float | None = None
        self._pong_deadline: float | None = None  # see send_ping
        #: A heartbeat PING queued and not yet taken by data_to_send: its timeout restarts
        #: when the driver takes it (see data_to_send).
        self._ping_unwritten = False
        self._batch_commands = False

    @property
    def batch_commands(self) -> bool:
        """Deliver runs of post-handshake commands as one CommandsReceived each instead of a
        CommandReceived per command, and decode short command frames on the decoder's fast
        path (the engine sets it when an extension is installed: QoS gets an ACK per
        message). Off, nothing changes for data frames."""
        return self._batch_commands

    @batch_commands.setter
    def batch_commands(self, value: bool) -> None:
        self._batch_commands = value
        self._decoder.fast_commands = value

    @property
    def bare_single_part(self) -> bool:
        """Deliver each one-part message in :class:`MessagesReceived` as its bare ``bytes``
        instead of a one-element list (multipart messages stay lists). The engine sets it for
        socket types that opted in when no extension is installed (extensions always get
        lists); ``zmtp.engine.queue.Received`` says why. Off by default."""
        return self._decoder.bare_single_part

    @bare_single_part.setter
    def bare_single_part(self, value: bool) -> None:
        self._decoder.bare_single_part = value

    def set_command_runs(self, runs: Mapping[bytes, int]) -> None:
        """With :attr:`batch_commands`: consecutive commands named in ``runs`` (name -> their
        exact data size) of one read arrive as one :class:`~zmtp.protocol.frames.CommandRun`
        (their wire bytes) in the ``CommandsReceived`` run, instead of a ``Command`` each.
        Only frames in clear (NULL, PLAIN) are taken so; under CURVE they stay commands."""
        self._decoder.set_command_runs(dict(runs))

    # ------------------------------------------------------------------ output

    @property
    def ping_unwritten(self) -> bool:
        """Whether a heartbeat PING waits for :meth:`data_to_send`: a driver passes ``now``
        to it then (and may skip reading its clock otherwise)."""
        return self._ping_unwritten

    def data_to_send(self, now: float | None = None) -> bytes:
        """Everything the connection wants written (greeting, handshake, PING/PONG, ERROR).

        ``now``: when the driver takes the bytes to write them. A heartbeat PING's timeout
        then runs from that moment, not from when :meth:`handle_timers` queued it, as
        libzmq's does (it arms its timeout when it encodes the PING for writing): on an event
        loop running late, the PING may leave a whole loop pass after it was queued, and the
        peer cannot answer what it has not received. The timeout armed at queueing stays the
        earliest it can be, so a driver that never writes still times out."""
        if self._ping_unwritten and now is not None:
            self._ping_unwritten = False
            if self._ping_timeout is not None:
                self._ping_timeout = max(self._ping_timeout, now + self._hb_timeout)
        if self._pong is not None:
            # Encoded only now: CURVE numbers each box as it is made, so a PONG made earlier
            # and sent after later commands would arrive out of nonce order.
            self._out.append(self.mechanism.encode_command(commands.pong(self._pong)))
            self._pong = None
        if not self._out:
            return b""
        data = b"".join(self._out)
        self._out.clear()
        return data

    @property
    def has_output(self) -> bool:
        return bool(self._out) or self._pong is not None

    @property
    def pong_pending(self) -> bool:
        """Whether a PONG the peer asked for is waiting for :meth:`data_to_send`: the driver
        stops reading a peer whose replies it cannot write (see zmtp/engine/stream.py)."""
        return self._pong is not None

    @property
    def pending_output(self) -> int:
        """Bytes queued for the peer and not yet taken by :meth:`data_to_send` (diagnostics,
        and the bound tests check: control replies never pile up)."""
        pong = 0 if self._pong is None else len(commands.pong(self._pong))
        return sum(len(b) for b in self._out) + pong

    @property
    def buffered(self) -> int:
        """Bytes of the peer's input held for later: a partial greeting or frame, input held
        while authentication is pending (diagnostics, and the bound the limits tests check)."""
        return len(self._greeting_buf) + self._decoder.buffered + self._held_size

    def encode_messages(self, messages: Sequence[Sequence[bytes]]) -> bytes:
        """Wire bytes for a batch of messages (only valid once the handshake is complete)."""
        return self.mechanism.encode_messages(messages)

    def encode_shared_messages(self, messages: Sequence[Sequence[bytes]]) -> bytes:
        """:meth:`encode_messages` for a batch that may hold
        :class:`~zmtp.protocol.frames.EncodedMessage` items (a publisher's message encoded
        once for every subscriber): in clear their wire bytes are copied as they are."""
        return self.mechanism.encode_shared_messages(messages)

    def send_command(self, name: bytes, data: bytes = b"") -> None:
        """Queue a post-handshake command (SUBSCRIBE, JOIN, an extension's own...)."""
        if self.state is not State.READY:
            raise ProtocolError("commands can only be sent once the handshake is complete")
        self._out.append(self.mechanism.encode_command(encode_command(name, data)))

    def send_command_frames(self, frames: Sequence[bytes]) -> None:
        """Queue several post-handshake command frames at once, each complete as
        :func:`~zmtp.protocol.frames.encode_command` builds it (an extension's batch of
        acknowledgements: docs/extensions.md). NULL and PLAIN queue them as one buffer; CURVE
        boxes each one, as :meth:`send_command` does."""
        if self.state is not State.READY:
            raise ProtocolError("commands can only be sent once the handshake is complete")
        mech = self.mechanism
        if mech.commands_in_clear:
            self._out.append(b"".join(frames))
        else:
            self._out.extend([mech.encode_command(frame) for frame in frames])

    def send_ping(self, now: float, answer_within: float | None = None) -> None:
        """Queue a PING outside the heartbeat schedule (the engine's way to make the peer send
        something). With ``answer_within``, the connection fails unless some traffic arrives
        within that many seconds: RFC 37 requires every peer to answer a PING, so silence means
        a dead or non-conforming peer."""
        if self.state is not State.READY:
            raise ProtocolError("a PING can only be sent once the handshake is complete")
        self._out.append(self.mechanism.encode_command(commands.ping()))
        if answer_within and self._pong_deadline is None:
            self._pong_deadline = now + answer_within

    # ------------------------------------------------------------------ input

    def receive_data(self, data: bytes, now: float = 0.0) -> list[Event]:
        """Feed bytes read from the transport; returns the resulting events in order."""
        state = self.state
        if state is State.READY:
            if (
                self._ping_timeout is not None
                or self._ttl_deadline is not None
                or self._pong_deadline is not None
            ):
                # Any traffic is a sign of life.
                self._ping_timeout = self._ttl_deadline = self._pong_deadline = None
            decoder = self._decoder
            items = decoder.feed(data)
            if decoder.error is not None:
                before = self._dispatch(items, now) if items else []
                if before and isinstance(before[-1], ConnectionFailed):
                    return before  # a malformed PING already failed the connection
                return self._fail(decoder.error.reason, "protocol", before)
            if not items:
                return []
            if decoder.messages_only:
                # Data only (the common read): no PING/PONG or command to pick out.
                return [MessagesReceived(items)]  # type: ignore[arg-type]  # no Command in it
            return self._dispatch(items, now)
        if state is State.CLOSED:
            return []
        events: list[Event] = []
        try:
            if state is State.GREETING:
                data = self._receive_greeting(data)
                if self.state is State.GREETING:
                    return events
            self._handshake(data, now, events)
        except PeerRejected as exc:
            return self._fail(exc.reason, "peer-error", events)
        except ProtocolError as exc:
            return self._fail(exc.reason, "protocol", events)
        return events

    def _receive_greeting(self, data: bytes) -> bytes:
        buf = self._greeting_buf + data
        check_greeting_prefix(buf[:11])
        if len(buf) < GREETING_SIZE:
            self._greeting_buf = buf
            return b""
        greeting = parse_greeting(buf[:GREETING_SIZE], self.mechanism.name)
        self._greeting_buf = b""
        self.zmtp_minor = greeting.minor
        self.state = State.HANDSHAKE
        self._out.extend(self.mechanism.start())
        return buf[GREETING_SIZE:]

    def _handshake(self, data: bytes, now: float, events: list[Event]) -> None:
        decoder = self._decoder
        mech = self.mechanism
        while self.state is State.HANDSHAKE:
            if self._auth_pending:
                self._hold(data)
                return
            if mech.auth_request is not None:
                self._auth_pending = True
                events.append(AuthenticationRequested(mech.auth_request))
                continue
            frame = decoder.next_frame(data)
            data = b""
            if frame is None:
                return
            flags, body = frame
            if not flags & COMMAND:
                raise ProtocolError("message frame received before the handshake completed")
            if flags & MORE:
                raise ProtocolError("command frame with the MORE flag set")
            command = mech.parse_command(body)
            frames = mech.handle_command(command)
            if not self._peer_type_checked and mech.peer_properties is not None:
                self._check_peer_type()  # before our answer: no READY to a wrong peer type
            self._out.extend(frames)
            if mech.complete:
                self._complete_handshake(now, events)
        # Data pipelined behind the handshake in the same read (libzmq sends READY then data),
        # or held during authentication when that completed the handshake (``data`` unread).
        if self.state is State.READY and (data or decoder.buffered):
            items = decoder.feed(data)
            if items:
                events.extend(self._dispatch(items, now))
            if decoder.error is not None and not (
                events and isinstance(events[-1], ConnectionFailed)
            ):
                raise decoder.error

    def _hold(self, data: bytes) -> None:
        """Keep input that arrives while authentication is pending (bounded)."""
        if not data:
            return
        self._held_size += len(data)
        if self._held_size > MAX_HELD_DURING_AUTH:
            raise ProtocolError(
                f"peer sent over {MAX_HELD_DURING_AUTH} bytes while authentication was pending"
            )
        self._held.append(data)

    def _check_peer_type(self) -> None:
        """The Socket-Type check, as soon as the peer's metadata is known (as libzmq does:
        for CURVE that is before authentication and before our READY)."""
        props = self.mechanism.peer_properties
        assert props is not None
        self._peer_type_checked = True
        peer_type = props.text("Socket-Type")
        if not peer_type:
            raise ProtocolError("peer did not announce its Socket-Type")
        if not compatible(self.socket_type, peer_type):
            # RFC 37 asks for an ERROR before closing; libzmq just closes. ERROR is harmless.
            self._out.append(commands.error("Invalid socket type"))
            raise ProtocolError(
                f"incompatible socket types: {self.socket_type} cannot talk to {peer_type}"
            )

    def complete_authentication(self, result: AuthResult, now: float = 0.0) -> list[Event]:
        """Hand the decision on the pending :class:`AuthenticationRequested` to the mechanism.

        Accepted: the handshake continues (WELCOME or READY is queued) and input held since
        the request is processed; refused: ERROR is queued where the RFCs say (not for status
        300) and a :class:`ConnectionFailed` of kind ``"rejected"`` is returned. A decision
        arriving after the connection failed (e.g. the handshake timed out) is ignored.
        """
        if self.state is State.CLOSED:
            return []
        if not self._auth_pending:
            raise RuntimeError("no authentication is pending")
        self._auth_pending = False
        events: list[Event] = []
        mech = self.mechanism
        self._out.extend(mech.complete_authentication(result))
        if not result.accepted:
            return self._fail(result.describe(), "rejected", events)
        held = b"".join(self._held)
        self._held.clear()
        self._held_size = 0
        try:
            if mech.complete:
                self._complete_handshake(now, events)
            self._handshake(held, now, events)
        except PeerRejected as exc:
            return self._fail(exc.reason, "peer-error", events)
        except ProtocolError as exc:
            return self._fail(exc.reason, "protocol", events)
        return events

    def _complete_handshake(self, now: float, events: list[Event]) -> None:
        mech = self.mechanism
        props = mech.peer_properties
        assert props is not None
        if not self._peer_type_checked:
            self._check_peer_type()
        peer_type = props.text("Socket-Type")
        if mech.auth_metadata:
            # The authenticator's metadata wins over same-named peer properties (libzmq's order),
            # so a peer cannot spoof what authentication attached to it.
            props = Properties({**props, **mech.auth_metadata})
        self.state = State.READY
        self._decoder.transform = mech.decode_transform
        self._handshake_deadline = None
        if self._hb_ivl > 0:
            self._next_ping = now + self._hb_ivl
        self.peer = HandshakeComplete(
            socket_type=peer_type,
            identity=props.get("Identity", b""),
            properties=props,
            zmtp_minor=self.zmtp_minor,
            mechanism=mech.name.decode(),
            user_id=mech.user_id,
            curve_public_key=mech.peer_curve_key,
        )
        events.append(self.peer)

    def _dispatch(self, items: list[Item], now: float) -> list[Event]:
        """Turn decoded items into events; PING/PONG are handled here and never surface.

        The commands' positions are found first, in C (``compress`` over ``isinstance``
        mapped on the items), and the messages between them are taken as slices: a read of
        a socket with an extension mixes a command per message it sent (QoS CLRs) with the
        messages it receives, and a Python test and append per message cost more than the
        rest of its decode."""
        events: list[Event] = []
        batch: list[bytes | list[bytes]] = []
        run: list[Command] | None = None  # the commands of the current CommandsReceived
        start = 0  # the first item not looked at yet
        for at in compress(count(), map(isinstance, items, repeat(Command))):
            if at > start:  # messages (parts, or bare with bare_single_part) before it
                if batch:
                    batch += items[start:at]  # type: ignore[arg-type]  # no Command in them
                else:
                    batch = items[start:at]  # type: ignore[assignment]
            start = at + 1
            item: Command = items[at]  # type: ignore[assignment]  # a Command: see above
            name = item.name
            if name == commands.PING:
                try:
                    ttl, context = commands.parse_ping(item.data)
                except ProtocolError as exc:
                    if batch:
                        events.append(MessagesReceived(batch))
                    return self._fail(exc.reason, "protocol", events)
                self._pong = context
                if ttl and self._ttl_deadline is None:
                    self._ttl_deadline = now + ttl / 10.0
            elif name == commands.PONG:
                pass
            else:
                if batch:
                    events.append(MessagesReceived(batch))
                    batch = []
                    run = None
                if not self._batch_commands:
                    events.append(CommandReceived(name, item.data))
                elif run is not None:
                    run.append(item)
                else:
                    run = [item]
                    events.append(CommandsReceived(run))
        if start < len(items):
            if batch:
                batch += items[start:]  # type: ignore[arg-type]
            else:
                batch = items[start:]  # type: ignore[assignment]
        if batch:
            events.append(MessagesReceived(batch))
        return events

    # ------------------------------------------------------------------ timers

    def next_deadline(self) -> float | None:
        """When :meth:`handle_timers` must next be called (None = no timer armed)."""
        best: float | None = None
        for t in (
            self._handshake_deadline,
            self._next_ping,
            self._ping_timeout,
            self._ttl_deadline,
            self._pong_deadline,
        ):
            if t is not None and (best is None or t < best):
                best = t
        return best

    def handle_timers(self, now: float) -> list[Event]:
        """Fire every timer that is due: send PINGs, enforce handshake/heartbeat deadlines."""
        if self.state is State.CLOSED:
            return []
        if self._handshake_deadline is not None and now >= self._handshake_deadline:
            waiting = " (waiting for the authentication decision)" if self._auth_pending else ""
            return self._fail(f"handshake timed out{waiting}", "timeout", [])
        if self._ttl_deadline is not None and now >= self._ttl_deadline:
            return self._fail("heartbeat TTL expired: peer went silent", "timeout", [])
        if self._ping_timeout is not None and now >= self._ping_timeout:
            return self._fail("heartbeat timeout: no traffic after PING", "timeout", [])
        if self._pong_deadline is not None and now >= self._pong_deadline:
            return self._fail("no answer to PING: peer dead or not following RFC 37", "timeout", [])
        if self._next_ping is not None and now >= self._next_ping:
            self._out.append(self.mechanism.encode_command(commands.ping(self._hb_ttl_ds)))
            self._next_ping = now + self._hb_ivl
            if self._ping_timeout is None and self._hb_timeout > 0:
                self._ping_timeout = now + self._hb_timeout
                self._ping_unwritten = True
        return []

    def silence_due(self, now: float) -> bool:
        """Whether :meth:`handle_timers` at ``now`` would drop the peer for silence (heartbeat
        timeout, TTL, unanswered PING): the driver's cue to check first whether input from
        the peer is waiting unread (:meth:`input_waiting`)."""
        for deadline in (self._ping_timeout, self._ttl_deadline, self._pong_deadline):
            if deadline is not None and now >= deadline:
                return self.state is State.READY
        return False

    def input_waiting(self) -> None:
        """The driver found bytes from the peer waiting unread in the transport (its event
        loop ran late, or its reader waits for room in the inbox): the peer is not silent,
        so the silence deadlines end as if those bytes had been read (:meth:`receive_data`
        ends them on any input). The handshake deadline is not affected."""
        self._ping_timeout = self._ttl_deadline = self._pong_deadline = None

    # ------------------------------------------------------------------ failure

    def fail(self, reason: str, kind: str = "protocol") -> list[Event]:
        """Close on the driver's initiative (e.g. an extension rejected the peer)."""
        return self._fail(reason, kind, [])

    def _fail(self, reason: str, kind: str, events: list[Event]) -> list[Event]:
        during = self.state is not State.READY
        self.state = State.CLOSED
        self._handshake_deadline = self._next_ping = self._ping_timeout = None
        self._ttl_deadline = self._pong_deadline = None
        self._ping_unwritten = False
        events.append(ConnectionFailed(reason, kind, during))
        return events


__all__ = ["Connection", "MessageTooLarge", "State"]
