"""A project's clips: prepare every query and candidate clip and record each clip's duration.

Seed ``002_b9503f18ee81843c.txt`` §4.1: the trimmed MP3s are what the HITs play, and a HIT's
listening time (the query and two variations, each heard once) bounds how fast an honest worker
can answer (13 s on average there, from 4 to 24 s).

The store keeps one ``audio`` path per clip: after preparation it names the prepared clip in
``PROJECT/clips`` (sub-folders of the sources mirrored), and its ``seconds``. A later run maps a
prepared clip back to its source through ``clips/manifest.csv``, so it can prepare again with
other settings or after a source changed; URLs are left alone.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from audio_prep.prepare import MANIFEST_NAME, PrepareOptions, prepare_clips, read_manifest
from crowdprefs.campaign.project import Project
from crowdprefs.errors import StateError

CLIPS_FOLDER = "clips"


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
    manifest = prepare_clips(
        sorted(set(clips.loc[local, "source"])), dst, options, jobs, progress=progress
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
