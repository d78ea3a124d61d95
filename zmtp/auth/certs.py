"""CURVE certificate files in pyzmq's (czmq's ZPL) format: ``name.key`` holds the public key,
``name.key_secret`` the public and secret keys. Files written here load in pyzmq
(``zmq.auth.load_certificate``) and the other way round, so a key directory can be shared with
libzmq programs.

    public_file, secret_file = create_certificates(directory, "server")
    public, secret = load_certificate(secret_file)  # Z85 bytes, as pyzmq returns them
    authenticator.configure_curve(location=directory)  # every client *.key in it

Unlike pyzmq, the secret file is created readable by its owner only (mode 0600).
"""

from __future__ import annotations

import datetime
import os
from pathlib import Path

from ..crypto import curve_keypair
from ..protocol.errors import ZMTPError

_SECRET_BANNER = """#   ****  Generated on {0} by zmtp  ****
#   ZeroMQ CURVE **Secret** Certificate
#   DO NOT PROVIDE THIS FILE TO OTHER USERS nor change its permissions.

"""
_PUBLIC_BANNER = """#   ****  Generated on {0} by zmtp  ****
#   ZeroMQ CURVE Public Certificate
#   Exchange securely, or use a secure mechanism to verify the contents
#   of this file after exchange. Store public certificates in your home
#   directory, in the .curve subdirectory.

"""


class CertificateError(ZMTPError, OSError):
    """A certificate file or directory that is missing or holds no public key (also an
    ``OSError``, as pyzmq raises for a missing file)."""


def _write(
    path: Path, banner: str, public: str, secret: str | None, metadata: dict[str, str] | None
) -> None:
    lines = [banner.format(datetime.datetime.now()), "metadata\n"]
    for key, value in (metadata or {}).items():
        lines.append(f"    {key} = {value}\n")
    lines.append("curve\n")
    lines.append(f'    public-key = "{public}"\n')
    if secret is not None:
        lines.append(f'    secret-key = "{secret}"\n')
    mode = 0o600 if secret is not None else 0o644
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write("".join(lines))
    os.chmod(path, mode)  # an existing file keeps its old mode through O_CREAT


def create_certificates(
    key_dir: str | os.PathLike[str], name: str, metadata: dict[str, str] | None = None
) -> tuple[str, str]:
    """A new key pair written as ``key_dir/name.key`` (public) and ``name.key_secret``
    (both keys, owner-only); returns the two paths, public first, as pyzmq does."""
    public, secret = curve_keypair()
    base = Path(key_dir) / name
    public_file, secret_file = base.with_name(name + ".key"), base.with_name(name + ".key_secret")
    _write(public_file, _PUBLIC_BANNER, public, None, None)
    _write(secret_file, _SECRET_BANNER, public, secret, metadata)
    return str(public_file), str(secret_file)


def load_certificate(filename: str | os.PathLike[str]) -> tuple[bytes, bytes | None]:
    """``(public_key, secret_key)`` as Z85 bytes from a certificate file (secret None for a
    public certificate); CertificateError if the file is missing or has no public key."""
    path = Path(filename)
    try:
        text = path.read_bytes()
    except OSError as exc:
        raise CertificateError(f"cannot read certificate file {path}: {exc.strerror}") from None
    public: bytes | None = None
    secret: bytes | None = None
    for raw in text.splitlines():
        line = raw.strip()
        if line.startswith(b"#"):
            continue
        if line.startswith(b"public-key"):
            public = line.split(b"=", 1)[1].strip(b" \t'\"")
        elif line.startswith(b"secret-key"):
            secret = line.split(b"=", 1)[1].strip(b" \t'\"")
    if public is None:
        raise CertificateError(
            f"no public key in {path}: not a ZeroMQ certificate (expected a curve section "
            'with public-key = "...")'
        )
    return public, secret


def load_certificates(directory: str | os.PathLike[str] = ".") -> dict[bytes, bool]:
    """Every public key of the ``*.key`` files in ``directory`` (pyzmq's shape:
    ``{public_key: True}``)."""
    path = Path(directory)
    if not path.is_dir():
        raise CertificateError(f"certificate directory {path} does not exist")
    keys: dict[bytes, bool] = {}
    for cert in sorted(path.glob("*.key")):
        public, _ = load_certificate(cert)
        keys[public] = True
    return keys


#: pyzmq's ``zmq.auth.CURVE_ALLOW_ANY``: ``configure_curve(location=CURVE_ALLOW_ANY)`` accepts
#: any client key.
CURVE_ALLOW_ANY = "*"

__all__ = [
    "CURVE_ALLOW_ANY",
    "CertificateError",
    "create_certificates",
    "load_certificate",
    "load_certificates",
]
