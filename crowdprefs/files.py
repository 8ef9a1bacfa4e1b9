"""Writing files: atomically, and never over what a command must not destroy.

Every file crowdprefs writes goes through a temporary sibling that is renamed onto the target
only once it is complete, so a crash never leaves half a file and no reader ever sees one.

A file a user names as a command's output is an :class:`Output`, checked before the command does
any work: it refuses, in one line, a project's own files, the command's inputs (the same path,
a symbolic link or a hard link to one), the files the project's settings name (the prior's
scores, the simulated truth), special files and folders, and a missing folder. A
symbolic link is followed (its target is rewritten, the link kept).
"""

from __future__ import annotations

import codecs
import itertools
import os
import re
import stat
import tempfile
import tomllib
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

from crowdprefs.errors import InputError, os_cause

_UMASK = os.umask(0)
os.umask(_UMASK)

PROJECT_MARKER = "crowdprefs.toml"
"""The file that makes a folder a project (``crowdprefs.campaign.settings.CONFIG_NAME``)."""
PROJECT_FILES = ("crowdprefs.toml", "state.", "mturk-fake.sqlite", "prolific-fake.sqlite")
"""What crowdprefs owns beside a project's marker: files named so or starting so (the state,
its SQLite companions ``-wal``, ``-shm``, ``-journal``, its lock and a moved state; the local
fakes' stores)."""
SETTINGS_FILES = (("prior", "scores"), ("simulated", "truth"))
"""The settings of a project's ``crowdprefs.toml`` that name a file the project reads (a path
relative to the project folder): the machine prior's scores, the simulated crowd's truth. An
output never replaces one, wherever it lies (``tests/test_outputs.py`` checks this list against
the settings schema)."""
PROJECT_FOLDERS = ("clips",)
"""Folders of a project whose every file crowdprefs owns (the prepared clips)."""
PLOT_SUFFIXES = (".png", ".pdf", ".svg")
"""The figure formats a ``--plot`` file may have."""


def _owned(root: Path, target: Path) -> bool:
    """Whether ``target`` (resolved) is a file crowdprefs owns in the project folder ``root``."""
    parts = target.relative_to(root).parts
    if len(parts) == 1:
        return parts[0].startswith(PROJECT_FILES)
    return parts[0] in PROJECT_FOLDERS


def project_file(target: Path) -> Path | None:
    """The project folder that owns ``target`` (a resolved path), or ``None``."""
    for root in target.parents:
        if (root / PROJECT_MARKER).is_file() and _owned(root, target):
            return root
    return None


def settings_files(root: Path) -> Iterator[tuple[Path, str]]:
    """The files the settings of the project folder ``root`` name (:data:`SETTINGS_FILES`),
    each with how a message names it. Settings that cannot be read name none: opening the
    project refuses them."""
    try:
        data = tomllib.loads((root / PROJECT_MARKER).read_text(encoding="utf-8-sig"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        return
    for section, key in SETTINGS_FILES:
        table = data.get(section)
        value = table.get(key) if isinstance(table, dict) else None
        if isinstance(value, str) and value.strip():
            yield root / value, f"the file [{section}] {key} of the project {root} names"


def _identity(path: Path) -> tuple[int, int] | None:
    """``(device, inode)`` of an existing file (symbolic links followed), else ``None``."""
    try:
        info = path.stat()
    except OSError:
        return None
    return info.st_dev, info.st_ino


def _protected(name: str, path: Path) -> Iterator[tuple[Path, str]]:
    """The files an input protects, each with how a message names it: a file itself; the files a
    project folder's crowdprefs owns; the files directly inside any other folder."""
    if not path.is_dir():
        yield path, f"the command's input {name} {path}"
    elif (path / PROJECT_MARKER).is_file():
        for child in path.iterdir():
            if child.name.startswith(PROJECT_FILES):
                yield child, f"a file of the project {path} ({child.name})"
        yield from settings_files(path)
    else:
        for child in path.iterdir():
            if child.is_file():
                yield child, f"{child.name}, read from the command's input {name} {path}"


class Output:
    """A file a command writes, named by the user: checked when made (before the command does
    any work) and again when written.

    ``inputs`` maps how each input is named to the user (``"--runs"``) to its path (``None``: not
    given); an input folder protects what it holds (a project's own files, any other folder's
    files). ``suffixes`` are the allowed extensions (e.g. :data:`PLOT_SUFFIXES`).
    """

    def __init__(
        self,
        path: str | os.PathLike,
        *,
        inputs: Mapping[str, str | os.PathLike | None] | None = None,
        suffixes: tuple[str, ...] = (),
    ) -> None:
        self.path = Path(path)
        self.inputs = {name: Path(p) for name, p in (inputs or {}).items() if p is not None}
        self.suffixes = suffixes
        self.check()

    def __fspath__(self) -> str:
        return os.fspath(self.path)

    def __str__(self) -> str:
        return str(self.path)

    def __repr__(self) -> str:
        return f"Output({str(self.path)!r})"

    @property
    def target(self) -> Path:
        """The file written: the path with every symbolic link followed."""
        return Path(os.path.realpath(self.path))

    def _refuse(self, why: str) -> InputError:
        return InputError(f"cannot write {self.path}: {why}")

    def check(self) -> None:
        """Raise :class:`InputError` (one line) when the file must not or cannot be written."""
        target = self.target
        folder = target.parent
        if not folder.is_dir():
            raise self._refuse(f"the folder {self.path.parent} does not exist")
        if not os.access(folder, os.W_OK | os.X_OK):
            raise self._refuse(f"the folder {self.path.parent} is not writable")
        try:
            info = target.stat()
        except FileNotFoundError:
            info = None
        except OSError as error:
            raise self._refuse(os_cause(error)) from None
        if info is not None and stat.S_ISDIR(info.st_mode):
            raise self._refuse("it is a folder, not a file")
        if info is not None and not stat.S_ISREG(info.st_mode):
            raise self._refuse("it is a special file (a device, FIFO or socket), not a file")
        root = project_file(target)
        if root is not None:
            raise self._refuse(f"it is a file of the project {root}; choose another path")
        identity = None if info is None else (info.st_dev, info.st_ino)
        around = [settings_files(r) for r in target.parents if (r / PROJECT_MARKER).is_file()]
        inputs = [_protected(name, given) for name, given in self.inputs.items()]
        for path, label in itertools.chain(*around, *inputs):
            if Path(os.path.realpath(path)) == target or (
                identity is not None and _identity(path) == identity
            ):
                raise self._refuse(f"it is {label}; choose another path")
        if self.suffixes and self.path.suffix.lower() not in self.suffixes:
            allowed = ", ".join(s.lstrip(".").upper() for s in self.suffixes)
            raise self._refuse(
                f"unknown extension {self.path.suffix or '(none)'!r}; use one of {allowed} "
                f"({', '.join(self.suffixes)})"
            )

    @contextmanager
    def temporary(self) -> Iterator[Path]:
        """A temporary sibling of the target (same suffix) to write; renamed onto the target
        when the block succeeds, removed when it fails (see :func:`atomic_path`)."""
        self.check()
        with atomic_path(self.target, shown=self.path) as temporary:
            yield temporary

    def write(self, data: str | bytes) -> None:
        """Write text (UTF-8, newlines as given) or bytes, atomically."""
        with self.temporary() as temporary:
            _write(temporary, data)


class OutputFolder:
    """A folder a command writes files into, named by the user: checked when made (not a file,
    not a project folder nor one crowdprefs owns in it, not an input folder), and each file it
    will hold checked as an :class:`Output` with the same ``inputs`` before any is written
    (:meth:`files`)."""

    def __init__(
        self,
        path: str | os.PathLike,
        *,
        inputs: Mapping[str, str | os.PathLike | None] | None = None,
    ) -> None:
        self.path = Path(path)
        self.inputs = {name: Path(p) for name, p in (inputs or {}).items() if p is not None}
        self.check()

    def __fspath__(self) -> str:
        return os.fspath(self.path)

    def __str__(self) -> str:
        return str(self.path)

    def check(self) -> None:
        """Raise :class:`InputError` (one line) when files must not be written into the folder."""
        target = Path(os.path.realpath(self.path))
        if target.exists() and not target.is_dir():
            raise InputError(f"cannot write into {self.path}: it is a file, not a folder")
        if (target / PROJECT_MARKER).is_file():
            raise InputError(
                f"cannot write into {self.path}: it is a project folder; choose another folder"
            )
        for root in (target, *target.parents):
            inside = target.relative_to(root).parts
            if inside and inside[0] in PROJECT_FOLDERS and (root / PROJECT_MARKER).is_file():
                raise InputError(
                    f"cannot write into {self.path}: crowdprefs keeps the project {root}'s "
                    f"{inside[0]} there; choose another folder"
                )
        for name, given in self.inputs.items():
            if Path(os.path.realpath(given)) == target:
                raise InputError(
                    f"cannot write into {self.path}: it is the command's input {name}; "
                    "choose another folder"
                )

    def files(self, names: Iterable[str]) -> list[Output]:
        """The :class:`Output` of each file ``names`` in the folder, every one checked (the
        folder is made first when missing)."""
        self.check()
        self.path.mkdir(parents=True, exist_ok=True)
        return [Output(self.path / name, inputs=self.inputs) for name in names]


def output(
    path: str | os.PathLike | None,
    inputs: Mapping[str, str | os.PathLike | None] | None = None,
    *,
    plot: bool = False,
) -> Output | None:
    """The :class:`Output` of a path a user gave (``None`` when none was): what every command
    that writes a file calls first, naming its inputs once; ``plot``: a figure (PNG, PDF, SVG)."""
    if path is None:
        return None
    return Output(path, inputs=inputs, suffixes=PLOT_SUFFIXES if plot else ())


def _write(path: Path, data: str | bytes) -> None:
    if isinstance(data, bytes):
        path.write_bytes(data)
    else:
        path.write_text(data, encoding="utf-8", newline="")


@contextmanager
def atomic_path(path: str | os.PathLike | Output, *, shown: Path | None = None) -> Iterator[Path]:
    """A temporary sibling of ``path`` (same suffix) to write; renamed onto ``path`` when the
    block succeeds, removed when it fails. An :class:`Output` is checked first and its target
    written. The file gets an existing file's permissions, else a new file's. A failure to
    write names ``path`` (``shown`` when given), never the temporary file."""
    if isinstance(path, Output):
        with path.temporary() as temporary:
            yield temporary
        return
    path = Path(path)
    shown = shown or path
    try:
        mode = path.stat().st_mode & 0o7777
    except OSError:
        mode = 0o666 & ~_UMASK
    try:
        handle, temporary = tempfile.mkstemp(
            dir=path.parent, prefix=f".{path.stem}.", suffix=path.suffix
        )
    except OSError as error:
        raise InputError(f"cannot write {shown}: {os_cause(error)}") from None
    os.close(handle)
    try:
        os.chmod(temporary, mode)
        yield Path(temporary)
        os.replace(temporary, path)
    except OSError as error:
        Path(temporary).unlink(missing_ok=True)
        raise InputError(f"cannot write {shown}: {os_cause(error)}") from None
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def write_atomic(path: str | os.PathLike | Output, data: str | bytes) -> None:
    """Write text (UTF-8, newlines as given) or bytes to ``path`` atomically (an
    :class:`Output` is checked first)."""
    with atomic_path(path) as temporary:
        _write(temporary, data)


def save_figure(figure, path: str | os.PathLike | Output, **options) -> None:
    """Save a matplotlib figure atomically in the format its extension names (PNG, PDF, SVG)."""
    if not isinstance(path, Output):
        path = Output(path, suffixes=PLOT_SUFFIXES)
    with atomic_path(path) as temporary:
        figure.savefig(temporary, format=path.path.suffix.lower().lstrip("."), **options)


ENCODINGS = ("utf-8-sig", "cp1252", "latin-1")
"""The encodings :func:`read_text` tries, in order (Latin-1 decodes any byte), for a file
without another byte-order mark (:data:`BOMS`)."""
BOMS = (
    (codecs.BOM_UTF32_LE, "utf-32"),
    (codecs.BOM_UTF32_BE, "utf-32"),
    (codecs.BOM_UTF16_LE, "utf-16"),
    (codecs.BOM_UTF16_BE, "utf-16"),
)
"""Byte-order marks of the UTF encodings a spreadsheet's "Unicode text" may be saved in (UTF-32
first: its little-endian mark starts with UTF-16's)."""
BINARY = (
    (b"PK\x03\x04", "a ZIP archive (an Excel or OpenDocument workbook is one): save it as CSV"),
    (b"\xd0\xcf\x11\xe0", "an old Excel (.xls) or Word document: save it as CSV"),
    (b"%PDF", "a PDF document"),
    (b"\x1f\x8b", "gzip-compressed: decompress it first"),
    (b"SQLite format 3\x00", "a SQLite database"),
    (b"\x89PNG", "a PNG image"),
)
"""What a binary file is, by its first bytes, as a message names it."""


_CONTROL = re.compile(r"[\x00-\x08\x0b\x0e-\x1f\x7f\ufffe\uffff]")


def _plausible(data: bytes, encoding: str) -> str | None:
    """``data`` decoded as ``encoding`` when that gives text a table could hold: no control
    character but tabs and line breaks, and some ASCII (every format read here has ASCII
    separators); else ``None``."""
    try:
        text = data.decode(encoding)
    except UnicodeDecodeError:
        return None
    if _CONTROL.search(text) or not any(" " <= c <= "~" for c in text):
        return None
    return text


def _unicode(data: bytes) -> tuple[str, str] | None:
    """``(text, encoding)`` of UTF-32 or UTF-16 text: with its byte-order mark, or UTF-16
    without one (a zero byte in every other place, as mostly-ASCII UTF-16 text has)."""
    tried = [encoding for mark, encoding in BOMS if data.startswith(mark)]
    if not tried and b"\x00" in data and len(data) % 2 == 0:
        odd, even = data[1::2].count(0), data[0::2].count(0)
        tried = ["utf-16-le"] if even == 0 and odd else ["utf-16-be"] if odd == 0 and even else []
    for encoding in tried:
        text = _plausible(data, encoding)
        if text is not None:
            return text, encoding.upper()
    return None


def decode(data: bytes, source: str = "the file") -> tuple[str, str]:
    """``(text, encoding)``: UTF-32 or UTF-16 when a byte-order mark (or UTF-16's zero bytes)
    says so and the text is plausible, else the first of UTF-8, Windows-1252 and Latin-1 that
    decodes. Binary data raises :class:`InputError` saying what the file seems to be (``source``
    names it)."""
    found = _unicode(data)
    if found is not None:
        return found
    if b"\x00" in data:
        kind = next((what for magic, what in BINARY if data.startswith(magic)), None)
        raise InputError(
            f"{source} is not a text file (it holds binary data"
            + (f": {kind})" if kind else "); save it as UTF-8 text")
        )
    for encoding in ENCODINGS:
        try:
            return data.decode(encoding), encoding
        except UnicodeDecodeError:
            continue
    raise AssertionError("latin-1 decodes every byte")  # pragma: no cover


def read_text(path: str | os.PathLike, what: str = "file") -> tuple[str, str]:
    """``(text, encoding)`` of a text file that may not be UTF-8 (files from spreadsheets and
    older platforms often are Windows-1252, Latin-1 or UTF-16): see :func:`decode`; a UTF-8
    byte-order mark is dropped, and a note on stderr says which other encoding was read. A
    missing, unreadable or special file (a named pipe, which would wait for a writer; a device)
    raises :class:`~crowdprefs.errors.InputError` naming it as ``what``, before it is opened."""
    from crowdprefs.progress import note

    path = Path(path)
    try:
        info = path.stat()
        if stat.S_ISDIR(info.st_mode):
            raise InputError(f"{what} {path} is a folder, not a file")
        if not stat.S_ISREG(info.st_mode):
            raise InputError(f"{what} {path} is {_special(info.st_mode)}, not a regular file")
        data = path.read_bytes()
    except FileNotFoundError:
        raise InputError(f"{what} not found: {path}") from None
    except OSError as error:
        raise InputError(f"cannot read {what} {path}: {os_cause(error)}") from None
    text, encoding = decode(data, f"{what} {path}")
    if encoding == "utf-8-sig":
        return text, "utf-8"
    note(f"read {path} as {encoding} (it is not UTF-8)")
    return text, encoding


def _special(mode: int) -> str:
    """What a file that is neither a regular file nor a folder is, in words."""
    if stat.S_ISFIFO(mode):
        return "a named pipe (FIFO)"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "a device" if stat.S_ISCHR(mode) or stat.S_ISBLK(mode) else "a special file"
