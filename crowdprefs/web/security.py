"""Tokens, hashes and headers of the web crowd.

Invitation, study and researcher tokens carry 192 random bits (``secrets.token_urlsafe(24)``);
the state keeps only their SHA-256, so a copy of ``state.sqlite`` lets nobody in. A researcher
token chosen by hand must be as hard to guess (:func:`check_researcher_token`); it is read from
the environment or a file, never from the command line. Failed token attempts are limited per
client address (:class:`Throttle`), and files holding tokens are written 0600. Form posts carry
a per-assignment synchroniser token (CSRF) compared in constant time, and a cross-origin
``Origin`` header is refused. Clips are served only from the files the project's state lists.
The Content-Security-Policy allows no inline code but the templates' own script and styles, by
their SHA-256.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import ipaddress
import mimetypes
import os
import secrets
import stat
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from crowdprefs.errors import InputError
from crowdprefs.files import atomic_path, read_text

if TYPE_CHECKING:
    from crowdprefs.campaign.store import Store
    from crowdprefs.crowds.web.store import WebSession

TOKEN_BYTES = 24
RESEARCHER_TOKEN_ENV = "CROWDPREFS_RESEARCHER_TOKEN"
"""The environment variable that may hold the researcher token."""
CODE_ALPHABET = "ABCDEFGHJKLMNPQRSTUVWXYZ23456789"
"""Completion codes avoid look-alike characters (0/O, 1/I)."""

MIN_RESEARCHER_TOKEN = 32
"""Shortest researcher token accepted (a new token has 32 characters of 64 kinds: 192 bits)."""
MIN_TOKEN_KINDS = 8
"""Fewest different characters in a researcher token (refuses ``aaaa…``, ``abab…``)."""

INLINE_SCRIPTS = ("listening.js",)
"""Template files included verbatim as inline ``<script>`` (the HIT's listening gate)."""
INLINE_STYLES = ("preference.css", "web_page.css")
"""Template files included verbatim as inline ``<style>``."""


def _source_hash(text: str) -> str:
    digest = base64.b64encode(hashlib.sha256(text.encode("utf-8")).digest()).decode("ascii")
    return f"'sha256-{digest}'"


def security_headers(template_dir: Path) -> dict[str, str]:
    """The HTTP headers of every page: a Content-Security-Policy allowing scripts and styles
    only from this site and, inline, only the template files :data:`INLINE_SCRIPTS` and
    :data:`INLINE_STYLES` (by the SHA-256 of their text; no ``'unsafe-inline'``), and no
    framing, sniffing, referrer leaks or caching."""

    def hashes(names: tuple[str, ...]) -> str:
        return " ".join(_source_hash((template_dir / n).read_text(encoding="utf-8")) for n in names)

    return {
        "Content-Security-Policy": (
            f"default-src 'self'; script-src 'self' {hashes(INLINE_SCRIPTS)}; "
            f"style-src 'self' {hashes(INLINE_STYLES)}; media-src 'self' https:; "
            "img-src 'self' data:; form-action 'self'; frame-ancestors 'none'; base-uri 'none'; "
            "object-src 'none'"
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


def check_researcher_token(token: str) -> str:
    """``token`` when it is hard enough to guess for the researcher page: at least
    :data:`MIN_RESEARCHER_TOKEN` characters, of at least :data:`MIN_TOKEN_KINDS` kinds;
    :class:`InputError` otherwise."""
    if len(token) < MIN_RESEARCHER_TOKEN or len(set(token)) < MIN_TOKEN_KINDS:
        raise InputError(
            f"the researcher token is too weak: use at least {MIN_RESEARCHER_TOKEN} random "
            f'characters of at least {MIN_TOKEN_KINDS} kinds (python3 -c "import secrets; '
            'print(secrets.token_urlsafe(24))" makes one), or none to get a new one'
        )
    return token


def researcher_token(file: Path | None = None) -> str:
    """The researcher token: the first line of ``file`` when given (a file only its owner may
    read), else the environment variable :data:`RESEARCHER_TOKEN_ENV`, else a new random one;
    a weak one is refused (:func:`check_researcher_token`). Never a command-line value: other
    users of the machine can read those in the process list."""
    if file is not None:
        lines = read_text(file, "the researcher token file")[0].splitlines()
        if Path(file).stat().st_mode & (stat.S_IRWXG | stat.S_IRWXO):
            raise InputError(
                f"the researcher token file {file} is open to other users: chmod 600 {file}"
            )
        token = lines[0].strip() if lines else ""
        if not token:
            raise InputError(f"the researcher token file {file} is empty")
        return check_researcher_token(token)
    given = os.environ.get(RESEARCHER_TOKEN_ENV, "").strip()
    return check_researcher_token(given) if given else new_token()


class Throttle:
    """Failed token attempts per client: once a client tried ``limit`` different wrong tokens
    within ``window`` seconds, it must wait until the oldest of them is ``window`` seconds old.
    Against guessing invitation, study and researcher tokens (192 random bits each: this only
    keeps logs and the server quiet); only wrong tokens wait: the server checks the token
    first, so a valid one always passes, whatever else its address tried. The same
    wrong token again counts once, so a stale link reloaded, or shared by judges behind one
    address, never locks anyone out; the client is the forwarded address behind a trusted
    proxy (``[web] trusted_proxies``), else the peer's. The failures live in the project's
    state (:meth:`~crowdprefs.campaign.store.Store.throttle_fail`): every server process and
    host counts the same ones."""

    def __init__(
        self, limit: int = 20, window: float = 600.0, clock: Callable[[], float] = time.time
    ) -> None:
        self.limit, self.window, self.clock = limit, window, clock

    def wait(self, store: Store, who: str) -> float:
        """Seconds ``who`` must wait before trying a token again (0: now)."""
        return store.throttle_wait(who, self.clock(), self.limit, self.window)

    def session(
        self, store: Store, who: str, token: str, assignment_id: str | None = None
    ) -> WebSession:
        """The judge holding ``token`` and the seconds ``who`` must wait (as :meth:`wait`),
        with the judge's question ``assignment_id`` when given, read in one statement
        (:meth:`~crowdprefs.campaign.store.Store.web_session`): a request pays one round trip
        for its throttle, its judge and its question."""
        return store.web_session(
            token_hash(token), who, self.clock(), self.limit, self.window, assignment_id
        )

    def fail(self, store: Store, who: str, token: str) -> None:
        """Count ``who``'s attempt with the wrong ``token`` (only its hash is kept)."""
        store.throttle_fail(who, token_hash(token), self.clock(), self.window)


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
