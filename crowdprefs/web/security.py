"""Tokens, hashes and headers of the web crowd.

Invitation, study and researcher tokens carry 192 random bits (``secrets.token_urlsafe(24)``);
the state keeps only their SHA-256, so a copy of ``state.sqlite`` lets nobody in. Form posts
carry a per-assignment synchroniser token (CSRF) compared in constant time, and a cross-origin
``Origin`` header is refused. Clips are served only from the files the project's state lists.
"""

from __future__ import annotations

import hashlib
import hmac
import mimetypes
import secrets
from pathlib import Path

TOKEN_BYTES = 24
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
