"""PLAIN (RFC 24): user name and password in clear text, then metadata.

::

    C: HELLO    ulen(1) username plen(1) password     (each 0..255 bytes)
    S: WELCOME                                        (no data; libzmq wants exactly 8 bytes)
    C: INITIATE metadata
    S: READY    metadata          ... or ERROR at either step

PLAIN authenticates but does not encrypt: anyone on the path reads the password. Use it on
trusted networks, or with CURVE's big brother (TLS) in front.

libzmq quirks handled here (see docs/libzmq-notes.md#plain):

* libzmq 4.3.x sends its ERROR malformed: ``5e 'RROR' len reason`` (``"\\x05ERROR"`` in C is
  ``\\x5E`` followed by ``RROR``). As a command body that has a name length of 94 and does not
  parse, so :meth:`PlainClient.parse_command` recognises the pattern and reports the reason it
  carries. Anything else unexpected during the client handshake is fatal too, with the bytes in
  the reason.
* We send a well-formed ERROR. A libzmq client treats it as an unexpected command, which ends its
  handshake exactly as an ERROR would (protocol error, no reconnect).
"""

from __future__ import annotations

from . import commands
from .errors import ProtocolError
from .frames import Command, encode_command, parse_command
from .mechanism import Mechanism, PeerRejected, describe_peer_error, raise_peer_error, unexpected
from .properties import parse_properties

HELLO = b"HELLO"
WELCOME = b"WELCOME"
INITIATE = b"INITIATE"

#: libzmq's ERROR: name-length 0x5E (``^``) swallowed the 5, leaving ``RROR``.
_LIBZMQ_BROKEN_ERROR = b"^RROR"


def hello(username: bytes, password: bytes) -> bytes:
    """HELLO command frame; each credential is at most 255 bytes."""
    if len(username) > 255 or len(password) > 255:
        raise ValueError("PLAIN user name and password are at most 255 bytes each")
    return encode_command(
        HELLO, bytes((len(username),)) + username + bytes((len(password),)) + password
    )


def parse_hello(data: bytes) -> tuple[bytes, bytes]:
    """``(username, password)`` from HELLO data; the lengths must account for every byte."""
    if not data:
        raise ProtocolError("malformed PLAIN HELLO: no user name length")
    ulen = data[0]
    if len(data) < 1 + ulen + 1:
        raise ProtocolError("malformed PLAIN HELLO: user name truncated")
    username = bytes(data[1 : 1 + ulen])
    plen = data[1 + ulen]
    password = bytes(data[2 + ulen :])
    if len(password) != plen:
        raise ProtocolError(
            f"malformed PLAIN HELLO: password length {plen} but {len(password)} bytes follow"
        )
    return username, password


class PlainClient(Mechanism):
    """The PLAIN client: HELLO, then INITIATE once WELCOME arrives, done on READY."""

    name = b"PLAIN"

    def __init__(self, local_metadata: bytes, username: bytes, password: bytes) -> None:
        super().__init__(local_metadata, as_server=False)
        self._hello = hello(username, password)
        self._welcomed = False

    def start(self) -> list[bytes]:
        return [self._hello]

    def parse_command(self, body: bytes) -> Command:
        if body[:5] == _LIBZMQ_BROKEN_ERROR:  # libzmq's ERROR: 5e 'RROR' reason-len reason
            raise PeerRejected(describe_peer_error(commands.parse_error(body[5:])))
        try:
            return parse_command(body)
        except ProtocolError:
            raise ProtocolError(
                f"unparseable command in PLAIN handshake: {bytes(body[:24])!r}"
            ) from None

    def handle_command(self, command: Command) -> list[bytes]:
        name = command.name
        if name == commands.ERROR:
            raise_peer_error(command)
        if not self._welcomed:
            if name != WELCOME:
                raise unexpected(command, "PLAIN", "WELCOME")
            if command.data:
                raise ProtocolError("malformed PLAIN WELCOME: it carries no data")
            self._welcomed = True
            return [encode_command(INITIATE, self.local_metadata)]
        if name != commands.READY:
            raise unexpected(command, "PLAIN", "READY")
        self.peer_properties = parse_properties(command.data)
        self.complete = True
        return []


class PlainServer(Mechanism):
    """The PLAIN server: HELLO -> authentication decision -> WELCOME; INITIATE -> READY.

    The decision is always requested (RFC 24 servers authenticate); the engine applies
    libzmq's policy when nothing is configured to decide (refuse, since libzmq needs a ZAP
    handler for PLAIN).
    """

    name = b"PLAIN"

    def __init__(self, local_metadata: bytes, zap_domain: str = "") -> None:
        super().__init__(local_metadata, as_server=True)
        self._zap_domain = zap_domain
        self._state = "hello"

    def start(self) -> list[bytes]:
        return []

    def handle_command(self, command: Command) -> list[bytes]:
        name = command.name
        if self._state == "hello":
            if name != HELLO:
                raise unexpected(command, "PLAIN", "HELLO")
            self._request_authentication(self._zap_domain, parse_hello(command.data))
            self._state = "auth"
            return []
        if self._state == "initiate" and name == INITIATE:
            self.peer_properties = parse_properties(command.data)
            self.complete = True
            self._state = "done"
            return [commands.ready(self.local_metadata)]
        if name == commands.ERROR:
            raise ProtocolError("PLAIN client sent ERROR, which only a server may send")
        raise unexpected(command, "PLAIN", "INITIATE")

    def _authenticated(self) -> list[bytes]:
        self._state = "initiate"
        return [encode_command(WELCOME)]
