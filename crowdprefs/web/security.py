"""Tokens, hashes and headers of the web crowd.

Invitation, study and researcher tokens carry 192 random bits (``secrets.token_urlsafe(24)``);
the state keeps only their SHA-256, so a copy of ``state.sqlite`` lets nobody in. Form posts
carry a per-assignment synchroniser token (CSRF) compared in constant time, and a cross-origin
``Origin`` header is refused. Clips are served only from the files the project's state lists.
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
import mimetypes
import os
import secrets
from pathlib import Path

from crowdprefs.errors import InputError
from crowdprefs.files import atomic_path

TOKEN_BYTES = 24
RESEARCHER_TOKEN_ENV = "CROWDPREFS_RESEARCHER_TOKEN"
"""The environment variable that may hold the researcher token."""
CODE_ALPHABET = "ABCDEFGHJKLMNPQRSTUVWXYZ23456789"
"""Completion codes avoid look-alike characters (0/O, 1/I)."""

SECURITY_HEADERS = {
    "Content-Security-Policy": (
        "default-src 'self'; script-src 'self' 'unsafe-inline'; style-src 'self' 'unsafe-inline'; "
        "media-src 'self' https:; img-src 'self' data:; form-action 'self'; "
        "frame-ancestors 'none'; base-uri 'none'"
    ),
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "same-origin",
    "Cache-Control": "no-store",
}


def new_token() -> str:
    """An unguessable URL-safe token (192 random bits)."""
    return secrets.token_urlsafe(TOKEN_BYTES)


def token_hash(token: str) -> str:
    """What the state stores of a token: its SHA-256 in hex."""
    return hashlib.sha256(token.encode("utf-8", "surrogatepass")).hexdigest()


def same(a: str | None, b: str | None) -> bool:
    """Constant-time string comparison; ``None`` never matches."""
    if a is None or b is None:
        return False
    return hmac.compare_digest(
        a.encode("utf-8", "surrogatepass"), b.encode("utf-8", "surrogatepass")
    )


def completion_code(length: int = 8) -> str:
    """A random completion code for a study platform (``length`` characters of 32)."""
    return "".join(secrets.choice(CODE_ALPHABET) for _ in range(length))


def judge_key(token_sha: str) -> int:
    """A stable 60-bit integer per judge (orders ties between pairs differently per judge)."""
    return int(token_sha[:15], 16)


def servable_clip(path: str | None) -> Path | None:
    """The local audio file at ``path`` (a path listed in the project's state), or ``None``.

    URLs, missing files, folders and files whose type is not audio are never served.
    """
    if not path or "://" in path:
        return None
    file = Path(path)
    if not file.is_absolute() or not file.is_file():
        return None
    kind, _ = mimetypes.guess_type(file.name)
    return file if kind is not None and kind.startswith("audio/") else None


def researcher_token(file: Path | None = None) -> str:
    """The researcher token: the first line of ``file`` when given, else the environment
    variable :data:`RESEARCHER_TOKEN_ENV`, else a new random one. Never a command-line value:
    other users of the machine can read those in the process list."""
    if file is not None:
        try:
            lines = Path(file).read_text(encoding="utf-8").splitlines()
        except (OSError, UnicodeDecodeError) as error:
            raise InputError(f"cannot read the researcher token file {file}: {error}") from None
        token = lines[0].strip() if lines else ""
        if not token:
            raise InputError(f"the researcher token file {file} is empty")
        return token
    return os.environ.get(RESEARCHER_TOKEN_ENV) or new_token()


def is_loopback(host: str) -> bool:
    """Whether binding to ``host`` keeps the site on this machine."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def write_secret(path: str | os.PathLike, text: str) -> None:
    """Write ``text`` to ``path`` atomically, readable and writable by its owner only (0600):
    for files that hold tokens. The permissions are set before the text is written."""
    with atomic_path(path) as temporary:
        os.chmod(temporary, 0o600)
        temporary.write_text(text, encoding="utf-8", newline="")
