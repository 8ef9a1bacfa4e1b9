"""Reports of ``status`` and ``next`` shown again without opening the store, while nothing they
were made from has changed.

``crowdprefs status`` (and ``next`` on the open batch, which builds nothing) is what a researcher
runs again and again while a campaign waits on its crowd. Their reports need the store
(SQLAlchemy, the sort states, the budget), which costs about three times the start of a bare
command. So each report is kept in the user's cache folder with what it was made from, and
reused only while all of it is unchanged:

- the state's revision (:attr:`~crowdprefs.campaign.store.base.StoreBase.revision`: a new
  random token in the same commit as every change to the state; read here with the standard
  library's ``sqlite3``);
- the size and modification time of the state's file (a change made without crowdprefs, a
  damaged file), the bytes of ``crowdprefs.toml``, and the size and modification time of every
  file its settings name (a prior's scores, the systems' runs), or that there is none;
- the ``CROWDPREFS_*`` environment, crowdprefs' version, the command and the folder as typed
  (a report's next step quotes it).

Only SQLite states are kept (a PostgreSQL state is read through its server anyway), and only
reports of commands that changed nothing. A report that cannot be kept (no cache folder, a
read-only disk) is simply made again next time; a kept one that cannot be read, or lacks a part,
is ignored. This module imports nothing beyond the standard library.
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import tempfile
from collections.abc import Iterable, Mapping
from contextlib import closing, suppress
from pathlib import Path
from typing import Any

from crowdprefs import __version__

FORMAT = 1
"""The layout of a kept report; a new layout ignores the old ones."""
CONFIG_NAME = "crowdprefs.toml"
STATE_NAME = "state.sqlite"
REVISION_QUERY = "SELECT value FROM meta WHERE key = 'revision'"
NOTE_STYLES = ("yellow",)
"""The styles of the notes a kept report may say again (:func:`crowdprefs.progress.note`)."""


def cache_folder() -> Path | None:
    """Where reports are kept: ``$XDG_CACHE_HOME/crowdprefs/reports`` (``~/.cache`` by
    default); ``None``, and nothing kept, when neither is an absolute folder (a relative
    ``XDG_CACHE_HOME`` is ignored, as the XDG specification says; an empty or unknown home
    would put the cache in the current folder)."""
    base = os.environ.get("XDG_CACHE_HOME", "")
    if not os.path.isabs(base):
        try:
            base = os.path.join(Path.home(), ".cache")
        except RuntimeError:  # no home folder known for this user
            return None
    return Path(base, "crowdprefs", "reports") if os.path.isabs(base) else None


def _entry(directory: Path) -> Path | None:
    """The file keeping ``directory``'s reports (one per command and spelling of the folder)."""
    key = hashlib.sha256(os.fsencode(os.path.realpath(directory))).hexdigest()
    folder = cache_folder()
    return None if folder is None else folder / f"{key}.json"


def _environment() -> str:
    """A digest of the ``CROWDPREFS_*`` variables."""
    items = sorted((k, v) for k, v in os.environ.items() if k.startswith("CROWDPREFS_"))
    return hashlib.sha256(json.dumps(items).encode()).hexdigest()


def _stamp(path: Path) -> list[int] | None:
    """Size and modification time (ns) of a file; ``None`` when there is none (or ``path`` can
    name none: a setting's text that is no path)."""
    try:
        info = path.stat()
    except (OSError, ValueError):
        return None
    return [info.st_size, info.st_mtime_ns]


def _named_paths(root: Path, sections: Mapping[str, Any]) -> Iterable[Path]:
    """Every path the settings' sections may name: each text value, as a path from the project
    folder, whether a file is there or not (one that appears later changes the report too)."""
    for values in sections.values():
        if not isinstance(values, Mapping):
            continue
        for value in values.values():
            if isinstance(value, str) and value:
                yield root / value


def _inputs(directory: Path, revision: str, files: Iterable[str]) -> dict[str, Any] | None:
    """What a report of ``directory`` is made from, as of now (``None``: unreadable)."""
    try:
        config = (directory / CONFIG_NAME).read_bytes()
    except OSError:
        return None
    return {
        "format": FORMAT,
        "version": __version__,
        "environment": _environment(),
        "config": hashlib.sha256(config).hexdigest(),
        "revision": revision,
        "files": {name: _stamp(Path(name)) for name in files},
    }


def _revision(directory: Path) -> str | None:
    """The state's revision, through the standard library (``None``: none). The connection
    only reads (``query_only``), but may write, so that on closing it removes SQLite's
    shared-memory and log files like the store's own connections do (a read-only connection
    would leave them behind); it never creates a missing state (``mode=rw``)."""
    uri = f"{(directory / STATE_NAME).absolute().as_uri()}?mode=rw"
    try:
        with closing(sqlite3.connect(uri, uri=True)) as db:
            db.execute("PRAGMA query_only = 1")
            row = db.execute(REVISION_QUERY).fetchone()
    except sqlite3.Error:
        return None
    return None if row is None else str(row[0])


def _whole(report: Any, parts: Mapping[str, type | tuple[type, ...]]) -> bool:
    """Whether a kept report has every part, of its type, and notes of the styles said (a file
    edited by hand may not)."""
    return (
        isinstance(report, dict)
        and all(isinstance(report.get(key), kind) for key, kind in parts.items())
        and isinstance(report.get("notes"), list)
        and all(
            isinstance(n, list) and len(n) == 2 and n[1] in NOTE_STYLES for n in report["notes"]
        )
    )


def cached(
    directory: Path, command: str, parts: Mapping[str, type | tuple[type, ...]]
) -> dict[str, Any] | None:
    """The report of ``command`` kept for ``directory`` as typed, if nothing it was made from
    changed and it has its ``parts`` (name → type) and its ``notes``: the ``(message, style)``
    said while it was made."""
    entry = _entry(directory)
    if entry is None:
        return None
    try:
        kept = json.loads(entry.read_text(encoding="utf-8"))
        inputs, report = kept["inputs"], kept["reports"][f"{command} {directory}"]
        revision = _revision(directory)
        if revision is None or _inputs(directory, revision, inputs["files"]) != inputs:
            return None
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return report if _whole(report, parts) else None


def keep(
    directory: Path,
    command: str,
    revision: str | None,
    sections: Mapping[str, Any],
    report: dict[str, Any],
) -> None:
    """Keep the report of ``command`` on ``directory`` made at ``revision`` (read before the
    report was made, so a change committed meanwhile leaves it unused), once the project is
    closed (closing may fold SQLite's log into the file); ``sections`` are the project's
    settings."""
    if revision is None:
        return
    named = [directory / STATE_NAME, *_named_paths(directory, sections)]
    files = sorted(str(p.absolute()) for p in named)
    inputs = _inputs(directory, revision, files)
    if inputs is None:
        return
    entry = _entry(directory)
    if entry is None:
        return
    reports: dict[str, Any] = {}
    with suppress(OSError, ValueError, KeyError, TypeError):
        kept = json.loads(entry.read_text(encoding="utf-8"))
        if kept["inputs"] == inputs:
            reports = kept["reports"]
    reports[f"{command} {directory}"] = report
    text = json.dumps({"inputs": inputs, "reports": reports}, allow_nan=True)
    with suppress(OSError):
        entry.parent.mkdir(parents=True, exist_ok=True)
        handle, temporary = tempfile.mkstemp(dir=entry.parent, suffix=".tmp")
        try:
            with open(handle, "w", encoding="utf-8") as out:
                out.write(text)
            os.replace(temporary, entry)
        finally:
            with suppress(OSError):
                os.unlink(temporary)  # left only when the replace failed
