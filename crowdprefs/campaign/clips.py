"""A project's clips: prepare every query and candidate clip and record each clip's duration.

Seed ``002_b9503f18ee81843c.txt`` §4.1: the trimmed MP3s are what the HITs play, and a HIT's
listening time (the query and two variations, each heard once) bounds how fast an honest worker
can answer (13 s on average there, from 4 to 24 s).

The store keeps one ``audio`` path per clip: after preparation it names the prepared clip in
``PROJECT/clips`` (sub-folders of the sources mirrored), and its ``seconds``. A later run maps a
prepared clip back to its source through ``clips/manifest.csv``, so it can prepare again with
other settings or after a source changed; URLs are left alone.

:mod:`audio_prep` stands alone; this module maps its errors to crowdprefs' one-line errors and
shows its progress through :mod:`crowdprefs.progress`. It is imported inside the functions that
use it, so that a project without local clips never loads it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from crowdprefs.errors import InputError, StateError
from crowdprefs.progress import make_progress

if TYPE_CHECKING:
    from audio_prep import PrepareOptions
    from crowdprefs.campaign.project import Project

CLIPS_FOLDER = "clips"


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


def project_clips(project: Project) -> pd.DataFrame:
    """Every clip of the project: ``query``, ``document`` (``None`` for the query's own clip),
    ``audio`` and ``seconds`` as stored."""
    store = project.store
    columns = ["query", "document", "audio", "seconds"]
    queries = store.queries().assign(document=None)[columns]
    clips = pd.concat([queries, store.candidates()[columns]], ignore_index=True)
    text = ["query", "document", "audio"]
    clips[text] = clips[text].astype(object).where(clips[text].notna(), None)
    return clips


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
        if not value or "://" in value:
            return None
        path = str(Path(value).resolve())
        return back.get(path, path)

    return audio.map(source)


def prepare_project(
    project: Project,
    options: PrepareOptions | None = None,
    jobs: int = 1,
    *,
    dst: Path | None = None,
    progress: bool = True,
) -> pd.DataFrame:
    """Prepare the project's clips into ``dst`` (default ``PROJECT/clips``) and store each
    prepared clip's path and duration; sources used by several clips are prepared once.

    Returns one row per clip: ``query, document, source`` (``None`` for URLs and missing
    audio), ``audio`` and ``seconds`` as now stored, and ``error`` (empty when prepared or
    skipped). :class:`StateError` when no clip has a local file.
    """
    dst = Path(dst) if dst is not None else project.root / CLIPS_FOLDER
    clips = project_clips(project)
    clips["source"] = source_paths(clips["audio"], dst)
    local = clips["source"].notna()
    if not local.any():
        raise StateError(f"{project.root}: no query or candidate has a local audio file to prepare")
    from audio_prep import prepare_clips

    with audio_errors(), progress_callback("preparing clips", visible=progress) as report:
        manifest = prepare_clips(
            sorted(set(clips.loc[local, "source"])), dst, options, jobs, progress=report
        )
    by_source = manifest.set_index("source")
    result = by_source.reindex(clips["source"].where(local, ""))
    clips["error"] = np.where(local, result["error"].fillna("").to_numpy(), "")
    ready = local & (clips["error"] == "").to_numpy()
    seconds = np.where(ready, result["seconds_after"].to_numpy(), clips["seconds"])
    prepared = [str(dst.resolve() / out) for out in result["output"].fillna("")]
    audio = np.where(ready, prepared, clips["audio"])
    changed = ready & ((audio != clips["audio"]) | (seconds != clips["seconds"]))
    clips["audio"], clips["seconds"] = audio, seconds.astype(float)
    clips["source"] = clips["source"].astype(object).where(local, None)
    for row in clips[changed].itertuples(index=False):
        project.store.set_clip(row.query, row.document, row.audio, float(row.seconds))
    return clips[["query", "document", "source", "audio", "seconds", "error"]]


def listening_seconds(queries: pd.DataFrame, candidates: pd.DataFrame) -> pd.DataFrame:
    """Per query, the minimum listening time of its HITs: the query clip and two of its
    candidates heard once each (seed 002 §4.1). ``pairs`` HITs, the ``shortest``, the ``mean``
    over all pairs (the query plus twice the candidates' mean: each candidate is in ``n - 1``
    of the ``n(n - 1)/2`` pairs) and the ``longest``; NaN while a duration is unknown."""
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
