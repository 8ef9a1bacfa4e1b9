"""Atomic file writes: a crash never leaves half a file, and no reader ever sees one.

Every file crowdprefs writes (lists, runs, reports, plots, settings) goes through a temporary
sibling that is renamed onto the target only once it is complete.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

_UMASK = os.umask(0)
os.umask(_UMASK)


@contextmanager
def atomic_path(path: str | os.PathLike) -> Iterator[Path]:
    """A temporary sibling of ``path`` (same suffix) to write; renamed onto ``path`` when the
    block succeeds, removed when it fails. The file gets a normally created file's permissions."""
    path = Path(path)
    handle, temporary = tempfile.mkstemp(
        dir=path.parent, prefix=f".{path.stem}.", suffix=path.suffix
    )
    os.close(handle)
    try:
        os.chmod(temporary, 0o666 & ~_UMASK)
        yield Path(temporary)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def write_atomic(path: str | os.PathLike, data: str | bytes) -> None:
    """Write text (UTF-8, newlines as given) or bytes to ``path`` atomically."""
    with atomic_path(path) as temporary:
        if isinstance(data, bytes):
            temporary.write_bytes(data)
        else:
            temporary.write_text(data, encoding="utf-8", newline="")


ENCODINGS = ("utf-8-sig", "cp1252", "latin-1")
"""The encodings :func:`read_text` tries, in order (Latin-1 decodes any byte)."""


def decode(data: bytes) -> tuple[str, str]:
    """``(text, encoding)``: the first of UTF-8, Windows-1252 and Latin-1 that decodes."""
    for encoding in ENCODINGS:
        try:
            return data.decode(encoding), encoding
        except UnicodeDecodeError:
            continue
    raise AssertionError("latin-1 decodes every byte")  # pragma: no cover


def read_text(path: str | os.PathLike, what: str = "file") -> tuple[str, str]:
    """``(text, encoding)`` of a text file that may not be UTF-8 (files from spreadsheets and
    older platforms often are Windows-1252 or Latin-1): UTF-8 (a byte-order mark is dropped),
    else Windows-1252, else Latin-1, with a note on stderr saying which. A missing or
    unreadable file raises :class:`~crowdprefs.errors.InputError` naming it as ``what``."""
    from crowdprefs.errors import InputError
    from crowdprefs.progress import note

    path = Path(path)
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise InputError(f"{what} not found: {path}") from None
    except IsADirectoryError:
        raise InputError(f"{what} {path} is a folder, not a file") from None
    except OSError as error:
        raise InputError(f"cannot read {what} {path}: {error.strerror}") from None
    if b"\x00" in data:
        raise InputError(f"{what} {path} is not a text file (it holds binary data)")
    text, encoding = decode(data)
    if encoding == "utf-8-sig":
        return text, "utf-8"
    note(f"read {path} as {encoding} (it is not UTF-8)")
    return text, encoding
