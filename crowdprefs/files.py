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
