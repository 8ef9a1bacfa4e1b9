"""User-facing errors.

Every error a user can cause (a bad file, a bad option, a fault of a remote service) is raised
as a :class:`CrowdprefsError` whose message is one self-contained line naming the problem. The
CLI prints that line and exits non-zero; it never shows a traceback for these.

A message shows the user's values as the user wrote them, whatever built it: :func:`readable`
(applied to every :class:`CrowdprefsError` and to every line the CLI prints) writes numpy scalars
as their plain values (``-3.0``, not ``np.float64(-3.0)``) and shortens a value too long to
read (a 5 MB name) to its start and end; :func:`shown` formats one value so; :func:`os_cause`
says what an operating-system error means in words (``no space left on device``), without
Python's ``[Errno 28]``.
"""

from __future__ import annotations

import errno
import os
import re
from typing import Any

VALUE_LIMIT = 80
"""The most characters of one value a message shows (:func:`shown`)."""
RUN_LIMIT = 200
"""A run of characters without a space longer than this is shortened in any message (a
value echoed whole: a path is rarely longer)."""
LINE_LIMIT = 2000
"""The most characters of a message: the middle of a longer one is left out."""

_NUMPY = re.compile(
    r"\bnp\.(?:float|int|uint|bool|complex|str_|bytes_|datetime64|timedelta64|longdouble)\w*"
    r"\((?P<value>'(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\"|[^()]*)\)"
)
"""numpy's repr of a scalar (numpy ≥ 2): ``np.float64(-3.0)``, ``np.str_('a')``."""
_RUN = re.compile(rf"\S{{{RUN_LIMIT + 1},}}")


def _elide(text: str, limit: int) -> str:
    """``text`` cut to about ``limit`` characters: its start, an ellipsis, its end, its length."""
    if len(text) <= limit:
        return text
    head = max(limit * 3 // 4, 1)
    tail = max(limit - head - 1, 0)
    return f"{text[:head]}…{text[len(text) - tail :] if tail else ''} ({len(text):,} characters)"


def shown(value: Any, limit: int = VALUE_LIMIT) -> str:
    """A value as a message shows it: ``repr`` of its plain Python value (a numpy scalar's
    ``item()``), text quoted, at most about ``limit`` characters."""
    if type(value).__module__ == "numpy" and hasattr(value, "item"):
        value = value.item()
    return _elide(repr(value), limit)


def readable(message: str) -> str:
    """``message`` with numpy scalars written plainly and overlong values shortened (see the
    module doc); idempotent."""
    message = _NUMPY.sub(lambda m: m.group("value"), message)
    message = _RUN.sub(lambda m: _elide(m.group(), VALUE_LIMIT), message)
    if len(message) > LINE_LIMIT:
        left = len(message) - LINE_LIMIT * 3 // 4
        message = (
            f"{message[: LINE_LIMIT // 2]} … ({left:,} characters left out) … "
            f"{message[len(message) - LINE_LIMIT // 4 :]}"
        )
    return message


_CAUSES = {
    errno.ENOSPC: "no space left on device; free some space and retry",
    errno.EDQUOT: "disk quota exceeded; free some space and retry",
    errno.EROFS: "the file system is read-only",
    errno.EACCES: "permission denied",
    errno.EPERM: "operation not permitted",
    errno.ENOENT: "no such file or folder",
    errno.EISDIR: "it is a folder, not a file",
    errno.ENOTDIR: "a part of the path is not a folder",
    errno.EIO: "an input/output error of the device; check the disk",
    errno.EFBIG: "the file is too large",
    errno.ENAMETOOLONG: "the file name is too long",
}
"""What an operating-system error means, by ``errno``, as a message says it."""


def os_cause(error: OSError) -> str:
    """What ``error`` means, in words (``no space left on device; …``), never ``[Errno N]``."""
    if error.errno in _CAUSES:
        return _CAUSES[error.errno]
    text = error.strerror or (os.strerror(error.errno) if error.errno else "") or str(error)
    return text[:1].lower() + text[1:]


class CrowdprefsError(Exception):
    """Base class: ``str(error)`` is one line a user can act on (made :func:`readable`)."""

    exit_code = 1

    def __init__(self, message: object = "", *args: object) -> None:
        super().__init__(readable(str(message)), *args)


class InputError(CrowdprefsError):
    """A file or an option given by the user is missing, unreadable or malformed."""

    exit_code = 2


class StateError(CrowdprefsError):
    """The project state does not allow the requested step (e.g. no open batch)."""


class BudgetError(CrowdprefsError):
    """A spending step would cross the configured budget."""


class CrowdError(CrowdprefsError):
    """A crowd backend (MTurk, web, S3) failed in a way retries did not fix."""
