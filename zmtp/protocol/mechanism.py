"""The security-mechanism interface, the authentication hand-off, and the NULL mechanism.

A mechanism runs the command exchange that follows the greeting and, for CURVE, transforms
every frame afterwards. The :class:`~zmtp.protocol.connection.Connection` owns greeting, framing,
heartbeats and the socket-type check; a mechanism only sees handshake commands and answers with
frames to send. This keeps each mechanism (NULL here, PLAIN and CURVE in their own modules) a
small state machine testable with byte strings.

Authentication is not decided by a mechanism. Deciding may need I/O (a ZAP round trip, a
database behind a callback), which the sans-IO core must not do. So a server-side mechanism that
holds the client's credentials publishes an :class:`AuthRequest` in :attr:`Mechanism.auth_request`
and waits; the connection surfaces it as an event, the driver decides asynchronously and hands
back an :class:`AuthResult` through :meth:`Mechanism.complete_authentication`.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import ClassVar

from . import commands
from .errors import ProtocolError
from .frames import (
    Command,
    FrameTransform,
    encode_messages,
    encode_shared_messages,
    parse_command,
)
from .properties import Properties, parse_properties


class PeerRejected(ProtocolError):
    """The peer sent ERROR during the handshake (``reason`` carries its text)."""


#: ZAP status codes (RFC 27) and what each means for the connection.
ZAP_STATUS_TEXT = {
    200: "OK",
    300: "temporary failure",
    400: "authentication failure",
    500: "internal error",
}


@dataclass(frozen=True)
class AuthRequest:
    """What a server mechanism asks the application to decide (the fields of a ZAP request).

    ``credentials`` are the mechanism's: none for NULL, ``(username, password)`` for PLAIN,
    ``(client_long_term_public_key,)`` (32 raw bytes) for CURVE. ``address`` (the peer's
    transport address) and ``identity`` (our own routing id, which is what libzmq puts in a
    ZAP request) are filled in by the engine, which knows them; the mechanism does not.
    """

    mechanism: str
    domain: str = ""
    address: str = ""
    identity: bytes = b""
    credentials: tuple[bytes, ...] = ()

    @property
    def username(self) -> str:
        """PLAIN user name (UTF-8, undecodable bytes replaced); "" for other mechanisms."""
        if self.mechanism != "PLAIN" or not self.credentials:
            return ""
        return self.credentials[0].decode("utf-8", "replace")

    @property
    def password(self) -> str:
        """PLAIN password (UTF-8, undecodable bytes replaced); "" for other mechanisms."""
        if self.mechanism != "PLAIN" or len(self.credentials) < 2:
            return ""
        return self.credentials[1].decode("utf-8", "replace")

    @property
    def client_key(self) -> bytes:
        """CURVE client long-term public key (32 raw bytes); b"" for other mechanisms."""
        if self.mechanism != "CURVE" or not self.credentials:
            return b""
        return self.credentials[0]


@dataclass(frozen=True)
class AuthResult:
    """The decision on an :class:`AuthRequest` (the fields of a ZAP reply).

    ``status_code``: 200 accepts; 300 (temporary failure) closes the connection without a word;
    400 (authentication failure) and 500 (internal error) send ERROR with the code as reason,
    which is what libzmq does and what libzmq peers parse. ``user_id`` and ``metadata`` are
    attached to the accepted peer (``PeerInfo.user_id``, ``PeerInfo.properties``).
    """

    status_code: int = 200
    status_text: str = "OK"
    user_id: str = ""
    metadata: Mapping[str, bytes] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.status_code not in ZAP_STATUS_TEXT:
            raise ValueError(
                f"status_code must be one of {sorted(ZAP_STATUS_TEXT)}, got {self.status_code}"
            )

    @property
    def accepted(self) -> bool:
        return self.status_code == 200

    @classmethod
    def allow(cls, user_id: str = "", metadata: Mapping[str, bytes] | None = None) -> AuthResult:
        return cls(200, "OK", user_id, dict(metadata or {}))

    @classmethod
    def deny(cls, text: str = "access denied", status_code: int = 400) -> AuthResult:
        return cls(status_code, text)

    def describe(self) -> str:
        """A reason for monitor events, e.g. ``authentication failed (400): bad password``."""
        meaning = ZAP_STATUS_TEXT[self.status_code]
        text = f": {self.status_text}" if self.status_text else ""
        return f"authentication refused ({self.status_code} {meaning}){text}"


class Mechanism(ABC):
    """One side of a security handshake.

    ``local_metadata`` is our encoded property list (Socket-Type, Identity, extension
    properties); mechanisms send it in READY (NULL), INITIATE/READY (PLAIN) or inside boxes
    (CURVE). The connection sets it before :meth:`start`.
    """

    #: Wire name in the greeting, e.g. ``b"NULL"``.
    name: ClassVar[bytes]

    def __init__(self, local_metadata: bytes, as_server: bool) -> None:
        self.local_metadata = local_metadata
        self.as_server = as_server
        self.peer_properties: Properties | None = None
        self.complete = False
        self.user_id = ""
        self.peer_curve_key = b""
        #: Set while the mechanism waits for the driver's decision (see the module docstring).
        self.auth_request: AuthRequest | None = None
        #: The metadata of the accepted :class:`AuthResult` (overlaid on the peer's properties).
        self.auth_metadata: Mapping[str, bytes] = {}

    @abstractmethod
    def start(self) -> list[bytes]:
        """Frames to send as soon as both greetings are exchanged."""

    @abstractmethod
    def handle_command(self, command: Command) -> list[bytes]:
        """Process one handshake command; return frames to send. Raise ProtocolError if bad."""

    def parse_command(self, body: bytes) -> Command:
        """Split a handshake command frame; PLAIN overrides it to recognise libzmq's bad ERROR."""
        return parse_command(body)

    # ------------------------------------------------------------------ authentication

    def _request_authentication(self, domain: str, credentials: tuple[bytes, ...] = ()) -> None:
        self.auth_request = AuthRequest(
            mechanism=self.name.decode("ascii"), domain=domain, credentials=credentials
        )

    def complete_authentication(self, result: AuthResult) -> list[bytes]:
        """Apply the driver's decision on :attr:`auth_request`; return frames to send.

        Accepted: records ``user_id``/``metadata`` and continues the handshake
        (:meth:`_authenticated`). Refused: the frames are the ERROR RFC 27 asks for (none for
        300); the connection then fails with ``result.describe()``.
        """
        if self.auth_request is None:
            raise RuntimeError("no authentication is pending")
        self.auth_request = None
        if not result.accepted:
            if result.status_code == 300:
                return []  # RFC 27: temporary failure, close without ERROR
            return [commands.error(str(result.status_code))]
        self.user_id = result.user_id
        self.auth_metadata = dict(result.metadata)
        return self._authenticated()

    def _authenticated(self) -> list[bytes]:
        """Continue the handshake after an accepted authentication (server mechanisms)."""
        raise RuntimeError(f"{self.name.decode()} mechanism did not request authentication")

    # ------------------------------------------------------------------ post-handshake framing
    # NULL and PLAIN send frames as they are; CURVE overrides these.

    #: Applied by the decoder to every post-handshake frame (None = frames pass unchanged).
    decode_transform: FrameTransform | None = None
    #: :meth:`encode_command` returns its frame unchanged (NULL, PLAIN), so a batch of
    #: command frames can be queued as one joined buffer (Connection.send_command_frames).
    commands_in_clear = True

    #: Wire bytes for a batch of messages: in clear, the frames module's encoder itself (a
    #: static method, so that a call through a mechanism is not two Python calls: every
    #: batch written and every eager answer of a round trip goes through it).
    encode_messages = staticmethod(encode_messages)

    def encode_shared_messages(self, messages: Sequence[Sequence[bytes]]) -> bytes:
        """:meth:`encode_messages` for a batch that may hold
        :class:`~zmtp.protocol.frames.EncodedMessage` items (a publisher's messages, encoded
        once for all its subscribers). In clear their wire bytes are the frames; a mechanism
        that transforms frames (CURVE) must override this to ignore them."""
        return encode_shared_messages(messages)

    def encode_command(self, frame: bytes) -> bytes:
        """Wire bytes for a post-handshake command frame (already encoded in clear)."""
        return frame


def describe_peer_error(reason: str) -> str:
    """A readable reason for an ERROR we received; ZAP codes get their meaning spelled out."""
    code = int(reason) if len(reason) == 3 and reason.isdigit() else 0
    if code in ZAP_STATUS_TEXT and code != 200:
        return f"peer refused us: {reason} ({ZAP_STATUS_TEXT[code]})"
    return f"peer sent ERROR: {reason or '(no reason)'}"


def raise_peer_error(command: Command) -> None:
    """Turn an ERROR command into :class:`PeerRejected`."""
    raise PeerRejected(describe_peer_error(commands.parse_error(command.data)))


def unexpected(command: Command, mechanism: str, expecting: str) -> ProtocolError:
    """The error for a handshake command that does not belong where it arrived."""
    name = command.name.decode("ascii", "replace")
    return ProtocolError(f"unexpected {name} in {mechanism} handshake (expecting {expecting})")


class NullMechanism(Mechanism):
    """RFC 37 NULL: both sides send READY with their metadata right after the greeting.

    libzmq sends READY immediately in both roles instead of the RFC's client-first order, so we
    do the same and accept READY whenever it comes. With ``authenticate`` (a ZAP domain or an
    authenticator is configured), READY waits for the decision and a refusal sends ERROR, as
    libzmq's NULL mechanism does when a ZAP domain is set.
    """

    name = b"NULL"

    def __init__(
        self,
        local_metadata: bytes,
        as_server: bool,
        *,
        authenticate: bool = False,
        zap_domain: str = "",
    ) -> None:
        super().__init__(local_metadata, as_server)
        self._authenticate = authenticate
        self._zap_domain = zap_domain
        self._ready_sent = False

    def start(self) -> list[bytes]:
        if self._authenticate:
            self._request_authentication(self._zap_domain)
            return []
        self._ready_sent = True
        return [commands.ready(self.local_metadata)]

    def _authenticated(self) -> list[bytes]:
        self._ready_sent = True
        self.complete = self.peer_properties is not None
        return [commands.ready(self.local_metadata)]

    def handle_command(self, command: Command) -> list[bytes]:
        if command.name == commands.READY:
            if self.peer_properties is not None:
                raise ProtocolError("duplicate READY")
            self.peer_properties = parse_properties(command.data)
            # Done, unless our own READY still waits for an authentication decision.
            self.complete = self._ready_sent
            return []
        if command.name == commands.ERROR:
            raise_peer_error(command)
        raise unexpected(command, "NULL", "READY")
