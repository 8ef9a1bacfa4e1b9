"""Clips as values: probe them, map prepared clips back to their sources, time the listening.

:func:`~crowdprefs.campaign.project_state.prepare_project` prepares a project's query and
candidate clips with these helpers and records each clip's duration in its store.

The preference-judgments paper §4.1: the trimmed MP3s are what the HITs play, and a HIT's
listening time (the query and two variations, each heard once) bounds how fast an honest worker
can answer (13 s on average there, from 4 to 24 s).

The store keeps one ``audio`` path per clip: after preparation it names the prepared clip in
``PROJECT/clips`` (sub-folders of the sources mirrored), and its ``seconds``. A later run maps a
prepared clip back to its source through ``clips/manifest.csv``, so it can prepare again with
other settings or after a source changed; URLs are left alone.

At ``init`` every local clip is probed (:func:`check_clip_files`): a file that is missing or is
not audio is refused there, so nothing else is ever copied, hosted or uploaded as a clip.

:mod:`audio_prep` stands alone; this module maps its errors to crowdprefs' one-line errors and
shows its progress through :mod:`crowdprefs.progress`. It is imported inside the functions that
use it, so that a project without local clips never loads it.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import pandas as pd

from crowdprefs.errors import InputError
from crowdprefs.moved import moved_names
from crowdprefs.progress import make_progress, track

CLIPS_FOLDER = "clips"
#: The candidates' columns that name clips, as the messages call them.
AUDIO_COLUMNS = {"audio": "audio", "query_audio": "query audio"}


@contextmanager
def audio_errors() -> Iterator[None]:
    """Raise :mod:`audio_prep`'s errors (options out of range, sources not found) as the
    one-line :class:`InputError` they are."""
    from audio_prep import AudioError

    try:
        yield
    except AudioError as error:
        raise InputError(str(error)) from None


@contextmanager
def progress_callback(
    description: str, *, visible: bool = True
) -> Iterator[Callable[[int, int], None] | None]:
    """A ``progress(done, total)`` callback for :mod:`audio_prep` drawing a bar on stderr
    (``None`` when not ``visible``). The bar starts at the first report, so after audio_prep
    has started its worker processes, and is gone at the end."""
    if not visible:
        yield None
        return
    bar = make_progress()
    task = None

    def report(done: int, total: int) -> None:
        nonlocal task
        if task is None:
            bar.start()
            task = bar.add_task(description, total=total)
        bar.update(task, completed=done, total=total)

    try:
        yield report
    finally:
        bar.stop()


def is_local(audio: object) -> bool:
    """Whether a stored or read ``audio`` value names a local file (a path, not a URL)."""
    return isinstance(audio, str) and audio != "" and "://" not in audio


def clip_refusals(files: Iterable[str]) -> dict[str, str]:
    """Why each of ``files`` (local paths) is not a clip, for those that are not: each distinct
    file is probed once (:func:`audio_prep.probe`: ffmpeg must decode its audio, or it is a
    MIDI file with events), in threads, with a progress bar on stderr."""
    from audio_prep import ClipError, probe

    def refusal(path: str) -> str | None:
        try:
            probe(path)
        except ClipError as error:
            return str(error)
        return None

    files = list(dict.fromkeys(files))
    with ThreadPoolExecutor(os.cpu_count() or 1) as pool:
        found = track(pool.map(refusal, files), "checking the clips", total=len(files))
        return {file: reason for file, reason in zip(files, found, strict=True) if reason}


def check_clip_files(frame: pd.DataFrame, csv: Path | None = None) -> None:
    """Refuse, in one line naming the row and the file, a candidates frame whose ``audio`` or
    ``query_audio`` names a local file that is missing or is not audio (:func:`clip_refusals`).

    Paths are as :func:`read_candidates` made them (relative ones resolved from the CSV's
    folder); one outside that folder is fine when it is audio. URLs are left alone. Rows are
    named by their line in ``csv``, else by their position in ``frame`` (from 1).
    """
    cells = pd.DataFrame(
        [
            (row, column, file)
            for column in AUDIO_COLUMNS
            if column in frame.columns
            for row, file in enumerate(frame[column])
            if is_local(file)
        ],
        columns=["row", "column", "file"],
    )
    if cells.empty:
        return
    cells["reason"] = cells["file"].map(clip_refusals(cells["file"]))
    refused = cells[cells["reason"].notna()].sort_values(["row", "column"], kind="stable")
    if refused.empty:
        return
    first = refused.iloc[0]
    row = frame.iloc[int(first["row"])]
    where = f"{csv}:{first['row'] + 2}" if csv is not None else f"row {first['row'] + 1}"
    more = refused["file"].nunique() - 1
    raise InputError(
        f"{where}: query {row['query']!r}, document {row['document']!r}: "
        f"{AUDIO_COLUMNS[first['column']]} {first['file']!r} is not a clip: {first['reason']}"
        + (f" (and {more} more file{'s' if more > 1 else ''})" if more else "")
    )


def source_paths(audio: pd.Series, dst: Path) -> pd.Series:
    """The local source file of each stored ``audio`` (``None`` for URLs and missing clips);
    a clip prepared earlier into ``dst`` maps back to its source through the manifest."""
    from audio_prep import MANIFEST_NAME, read_manifest

    manifest = read_manifest(dst / MANIFEST_NAME)
    absolute = np.array([Path(s).is_absolute() for s in manifest["source"]], dtype=bool)
    done = manifest[(manifest["output"] != "").to_numpy() & absolute]
    back = {
        str((dst / out).resolve()): src
        for out, src in zip(done["output"], done["source"], strict=True)
    }

    def source(value: str | None) -> str | None:
        if not is_local(value):
            return None
        path = str(Path(value).resolve())
        return back.get(path, path)

    return audio.map(source)


def listening_seconds(queries: pd.DataFrame, candidates: pd.DataFrame) -> pd.DataFrame:
    """Per query, the minimum listening time of its HITs: the query clip and two of its candidates
    heard once each (the preference-judgments paper §4.1). ``pairs`` HITs, the ``shortest``, the
    ``mean`` over all pairs (the query plus twice the candidates' mean: each candidate is in
    ``n - 1`` of the ``n(n - 1)/2`` pairs) and the ``longest``; NaN while a duration is unknown."""
    clips = candidates[["query", "seconds"]].sort_values(["query", "seconds"])
    seconds = clips.groupby("query", sort=True)["seconds"]
    rank, rank_from_end = seconds.cumcount(), seconds.cumcount(ascending=False)
    n = seconds.size()
    table = pd.DataFrame(
        {
            "pairs": n * (n - 1) // 2,
            "shortest": clips["seconds"].where(rank < 2).groupby(clips["query"]).sum(min_count=2),
            "mean": 2 * seconds.mean(),
            "longest": clips["seconds"].where(rank_from_end < 2).groupby(clips["query"]).sum(),
        }
    )
    timed = ["shortest", "mean", "longest"]
    table.loc[seconds.count() < n, timed] = np.nan  # a candidate's duration is unknown
    query_seconds = queries.set_index("query")["seconds"].reindex(table.index)
    table[timed] = table[timed].add(query_seconds, axis=0)
    return table.rename_axis("query").reset_index()


MOVED = dict.fromkeys(("project_clips", "prepare_project"), "crowdprefs.campaign.project_state")
"""Functions that take a project, moved to :mod:`crowdprefs.campaign.project_state` (a value
module imports no project): name → its module."""
__getattr__ = moved_names(__name__, MOVED)
