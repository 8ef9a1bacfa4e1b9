"""A project folder: ``crowdprefs.toml`` (settings a user may edit) and ``state.sqlite``.

The seed and the candidates are fixed at ``init`` (they live in the state); the other settings
(answers per pair, reward, budget, aggregation rule, fees, crowd sections) are read from the TOML
file by every command, so a user can change them between iterations.

One process writes a project at a time: its first change takes the project lock
(``state.lock``, :mod:`crowdprefs.campaign.store.lock`), held until the project is closed; a
second writer stops with one line naming the holder's process and command.
"""

from __future__ import annotations

import csv
import io
import os
import shutil
import tempfile
import tomllib
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import lazy_loader
import tomli_w

from crowdprefs.campaign.aggregate import AggregationRule
from crowdprefs.campaign.budget import FeeModel
from crowdprefs.campaign.settings import CONFIG_NAME, SCHEMA, check_settings, check_values
from crowdprefs.campaign.store import Store
from crowdprefs.errors import InputError, StateError
from crowdprefs.files import read_text, write_atomic

pd = lazy_loader.load("pandas")  # imported on first use

STATE_NAME = "state.sqlite"
DEFAULT_SEED = 2010


@dataclass(frozen=True)
class Settings:
    """The editable settings of a project (``crowdprefs.toml``)."""

    answers_per_pair: int = 10
    reward: float = 0.02
    budget: float | None = None
    aggregation: AggregationRule = field(default_factory=AggregationRule)
    fees: FeeModel = field(default_factory=FeeModel)
    sections: dict[str, Any] = field(default_factory=dict)
    """Every other TOML section (``simulated``, ``mturk``, ``hit``, ``web``...), as parsed."""

    def __post_init__(self) -> None:
        check_values("crowd", self)
        check_settings(self.sections, CONFIG_NAME)

    def to_toml(self, seed: int) -> dict[str, Any]:
        crowd: dict[str, Any] = {"answers_per_pair": self.answers_per_pair, "reward": self.reward}
        if self.budget is not None:
            crowd["budget"] = self.budget
        return {
            "project": {"seed": seed},
            "crowd": crowd,
            "aggregation": asdict(self.aggregation),
            "fees": asdict(self.fees),
            **self.sections,
        }

    @classmethod
    def from_toml(cls, data: dict[str, Any], source: Path) -> Settings:
        """The settings of a parsed ``crowdprefs.toml``, checked against the typed schema
        (:mod:`crowdprefs.campaign.settings`) first: one line naming the file and the key."""
        check_settings(data, source)
        known = {"project", "crowd", "aggregation", "fees"}
        crowd = data.get("crowd", {})
        return cls(
            answers_per_pair=crowd.get("answers_per_pair", 10),
            reward=crowd.get("reward", 0.02),
            budget=crowd.get("budget"),
            aggregation=AggregationRule(**data.get("aggregation", {})),
            fees=FeeModel(**data.get("fees", {})),
            sections={k: v for k, v in data.items() if k not in known},
        )


def read_candidates(path: Path) -> pd.DataFrame:
    """Read and validate a candidates CSV: ``query,document[,audio][,query_audio]``.

    ``audio`` and ``query_audio`` are paths relative to the CSV (made absolute here) or URLs.
    Raises :class:`InputError` naming the file (and line) for: an unreadable file, missing
    columns, empty values, duplicate (query, document) rows, or a query with fewer than two
    candidates.
    """
    path = Path(path)
    text, _ = read_text(path, "candidates file")
    try:
        frame = pd.read_csv(
            io.StringIO(text), dtype=str, keep_default_na=False, skipinitialspace=True
        )
    except (pd.errors.ParserError, pd.errors.EmptyDataError, csv.Error) as error:
        raise InputError(f"{path}: not a valid CSV: {str(error).strip().splitlines()[0]}") from None
    frame.columns = [c.strip() for c in frame.columns]
    missing = [c for c in ("query", "document") if c not in frame.columns]
    if missing:
        raise InputError(
            f"{path}: missing column(s) {', '.join(missing)} (need query,document[,audio])"
        )
    for column in ("audio", "query_audio"):
        if column not in frame.columns:
            frame[column] = ""
    frame = frame[["query", "document", "audio", "query_audio"]].apply(lambda c: c.str.strip())
    empty = (frame["query"] == "") | (frame["document"] == "")
    if empty.any():
        line = int(empty.to_numpy().argmax()) + 2
        raise InputError(f"{path}:{line}: empty query or document")
    if frame.empty:
        raise InputError(f"{path}: no candidates, only a header (need query,document rows)")
    spaced = (frame["query"] + frame["document"]).str.contains(r"\s")
    if spaced.any():
        row = frame[spaced].iloc[0]
        line = int(spaced.to_numpy().argmax()) + 2
        raise InputError(
            f"{path}:{line}: query {row['query']!r}, document {row['document']!r}: a name must "
            "not contain spaces (qrels and run files separate their fields by spaces)"
        )
    duplicated = frame.duplicated(["query", "document"])
    if duplicated.any():
        row = frame[duplicated].iloc[0]
        line = int(duplicated.to_numpy().argmax()) + 2
        raise InputError(
            f"{path}:{line}: duplicate row for query {row['query']!r}, document {row['document']!r}"
        )
    sizes = frame.groupby("query", sort=False).size()
    small = sizes[sizes < 2]
    if len(small):
        raise InputError(
            f"{path}: query {small.index[0]!r} has {small.iloc[0]} candidate(s); "
            "each query needs at least 2"
        )

    def resolve(value: str) -> str | None:
        if not value:
            return None
        if "://" in value:
            return value
        return str((path.parent / value).resolve())

    for column in ("audio", "query_audio"):  # object columns: None, not NaN, when absent
        frame[column] = pd.Series(
            [resolve(v) for v in frame[column]], index=frame.index, dtype=object
        )
    return frame


class Project:
    """An opened project folder."""

    def __init__(self, root: Path) -> None:
        root = Path(root)
        config = root / CONFIG_NAME
        if not config.exists():
            raise StateError(
                f"{root} is not a crowdprefs project (no {CONFIG_NAME}): run 'crowdprefs init'"
            )
        try:
            data = tomllib.loads(config.read_text(encoding="utf-8"))
        except (tomllib.TOMLDecodeError, UnicodeDecodeError) as error:
            raise InputError(f"{config}: invalid TOML: {error}") from None
        self.root = root
        self.settings = Settings.from_toml(data, config)
        self.store = Store(root / STATE_NAME)
        self.seed = int(self.store.meta("seed"))
        configured = data.get("project", {}).get("seed", self.seed)
        if configured != self.seed:
            raise StateError(
                f"{config}: seed {configured} differs from the seed {self.seed} "
                "fixed at init; restore it"
            )

    def close(self) -> None:
        self.store.close()

    def __enter__(self) -> Project:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def section(self, name: str) -> dict[str, Any]:
        """A crowd- or feature-specific TOML section (empty when absent)."""
        return dict(self.settings.sections.get(name, {}))

    def save_settings(self, settings: Settings) -> None:
        """Rewrite ``crowdprefs.toml`` atomically."""
        _write_toml(self.root / CONFIG_NAME, settings.to_toml(self.seed))
        self.settings = settings


def _write_toml(path: Path, data: dict[str, Any]) -> None:
    write_atomic(path, tomli_w.dumps(data))


def init_project(
    root: Path,
    candidates: pd.DataFrame | Path,
    *,
    seed: int = DEFAULT_SEED,
    settings: Settings | None = None,
) -> Project:
    """Create a project folder from a candidates CSV (or an already validated frame).

    Everything is validated first and built in a temporary sibling folder that is renamed into
    place, so a failure writes nothing and an existing project is never overwritten.
    """
    root = Path(root)
    if not SCHEMA["project"]["seed"].accepts(seed):
        raise InputError(f"the seed must be {SCHEMA['project']['seed'].expected()}, got {seed!r}")
    frame = candidates if isinstance(candidates, pd.DataFrame) else read_candidates(candidates)
    settings = settings or Settings()
    if (root / CONFIG_NAME).exists() or (root / STATE_NAME).exists():
        raise StateError(f"{root} already holds a crowdprefs project; choose another folder")
    if root.exists() and (not root.is_dir() or any(root.iterdir())):
        raise StateError(f"{root} exists and is not an empty folder; choose another folder")
    from crowdprefs.campaign.clips import check_clip_files  # loads audio_prep only for clips

    check_clip_files(frame, None if isinstance(candidates, pd.DataFrame) else Path(candidates))
    root.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(dir=root.parent, prefix=f".{root.name}.init-"))
    try:
        _write_toml(staging / CONFIG_NAME, settings.to_toml(seed))
        store = Store(staging / STATE_NAME, create=True)
        try:
            store.initialise(seed, frame)
        finally:
            store.close()
        if root.exists():
            root.rmdir()
        os.rename(staging, root)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return Project(root)
