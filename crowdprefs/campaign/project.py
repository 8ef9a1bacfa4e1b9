"""A project folder: ``crowdprefs.toml`` (settings a user may edit) and its state: the file
``state.sqlite`` by default, or the PostgreSQL database that ``[store] url`` names (for a study
served by several processes or hosts; the password comes from the environment, never the file).

The seed and the candidates are fixed at ``init`` (they live in the state); the other settings
(answers per pair, reward, budget, aggregation rule, fees, crowd sections) are read from the TOML
file by every command, so a user can change them between iterations.

One command writes a project at a time: its first change takes the project lock
(:mod:`crowdprefs.campaign.store.lock`: ``state.lock`` on SQLite, an advisory lock on
PostgreSQL), held until the project is closed; a second command stops with one line naming the
holder's process and command. The web server's changes are single transactions that do not take
it, so the researcher's commands run beside a live server.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import tomllib
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

import lazy_loader
import tomli_w

from crowdprefs.campaign.aggregate import AggregationRule
from crowdprefs.campaign.budget import BUDGET_KEY, FeeModel
from crowdprefs.campaign.settings import CONFIG_NAME, SCHEMA, check_settings, check_values
from crowdprefs.campaign.store import Location, Store, copy_state
from crowdprefs.campaign.store.location import database_url
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
    from crowdprefs.io import check_audio_urls, check_names, csv_frame  # pandas: not always

    path = Path(path)
    text, _ = read_text(path, "candidates file")
    frame = csv_frame(text, path, skipinitialspace=True)
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
    for column in ("query", "document"):
        check_names(frame[column], path, column, lambda i: f"line {i + 2}")
    check_audio_urls(frame, path)
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


def state_location(root: Path, settings: Settings) -> Location:
    """Where the project's state lives: ``[store] url`` when set, else ``state.sqlite``."""
    url = settings.sections.get("store", {}).get("url")
    if not url:
        return Location(path=Path(root) / STATE_NAME)
    try:
        return Location(url=database_url(url))
    except InputError as error:
        raise InputError(f"{Path(root) / CONFIG_NAME}: [store] url: {error}") from None


class Project:
    """An opened project folder (``lock=False``: for a web server process, whose changes never
    take the project lock; see the module doc)."""

    def __init__(self, root: Path, *, lock: bool = True) -> None:
        root = Path(root)
        config = root / CONFIG_NAME
        if not config.exists():
            raise StateError(
                f"{root} is not a crowdprefs project (no {CONFIG_NAME}): run 'crowdprefs init'"
            )
        text, _ = read_text(config, "settings file")  # a byte-order mark is dropped
        try:
            data = tomllib.loads(text)
        except tomllib.TOMLDecodeError as error:
            raise InputError(f"{config}: invalid TOML: {error}") from None
        self.root = root
        self.settings = Settings.from_toml(data, config)
        self.store = Store(state_location(root, self.settings), lock=lock)
        stored = self.store.meta("seed")
        if stored is None or not stored.isdecimal():
            raise StateError(
                f"{self.store.location}: the seed fixed at init is "
                f"{'missing' if stored is None else f'not a whole number ({stored!r})'}; "
                "the state is damaged: restore it from a backup"
            )
        self.seed = int(stored)
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
    database: str | None = None,
    prior: Path | None = None,
    runs: Path | None = None,
    measure: str = "ADR@5",
    confidence: float = 0.95,
) -> Project:
    """Create a project folder from a candidates CSV (or an already validated frame).

    Everything is validated first and built in a temporary sibling folder that is renamed into
    place, so a failure writes nothing and an existing project is never overwritten. With
    ``database`` (``postgresql://user@host/name``, no password) the state lives in that empty
    PostgreSQL database, written into ``crowdprefs.toml`` as ``[store] url``. With ``prior``
    (a ``query,document,score`` CSV covering every candidate: :mod:`crowdprefs.machine.scores`)
    the scores are fixed in the state and the file is remembered as ``[prior] scores``. With
    ``runs`` (the systems to rank, by ``measure``, until every pair holds at ``confidence``:
    :mod:`crowdprefs.campaign.ranking`) the runs are copied into the project and ``[systems]``
    is set.
    """
    root = Path(root)
    if not SCHEMA["project"]["seed"].accepts(seed):
        raise InputError(f"the seed must be {SCHEMA['project']['seed'].expected()}, got {seed!r}")
    frame = candidates if isinstance(candidates, pd.DataFrame) else read_candidates(candidates)
    settings = settings or Settings()
    if database is not None:
        database_url(database)  # checked before anything is written
        settings = replace(settings, sections={**settings.sections, "store": {"url": database}})
    if (root / CONFIG_NAME).exists() or (root / STATE_NAME).exists():
        raise StateError(f"{root} already holds a crowdprefs project; choose another folder")
    if root.exists() and (not root.is_dir() or any(root.iterdir())):
        raise StateError(f"{root} exists and is not an empty folder; choose another folder")
    from crowdprefs.campaign.clips import check_clip_files  # loads audio_prep only for clips

    check_clip_files(frame, None if isinstance(candidates, pd.DataFrame) else Path(candidates))
    scores = None
    if prior is not None:
        from crowdprefs.machine.scores import read_prior

        scores = read_prior(prior, frame)
        section = {**settings.sections.get("prior", {}), "scores": str(Path(prior).resolve())}
        settings = replace(settings, sections={**settings.sections, "prior": section})
    system_runs = None
    if runs is not None:
        from crowdprefs.campaign.ranking import RUNS_NAME, SECTION, checked_runs

        system_runs, name = checked_runs(runs, measure, frame)
        section = {**settings.sections.get(SECTION, {}), "runs": RUNS_NAME, "measure": name}
        if confidence != 0.95:
            section["confidence"] = confidence
        settings = replace(settings, sections={**settings.sections, SECTION: section})
    root.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(dir=root.parent, prefix=f".{root.name}.init-"))
    try:
        _write_toml(staging / CONFIG_NAME, settings.to_toml(seed))
        if system_runs is not None:
            from crowdprefs.campaign.ranking import RUNS_NAME
            from crowdprefs.io import write_runs

            write_runs(system_runs, staging / RUNS_NAME)
        store = Store(state_location(staging, settings), create=True)
        try:
            store.initialise(seed, frame)
            if scores is not None:
                store.set_prior(scores)
            if system_runs is not None:  # the first pivots at the systems' consensus k-th place
                from crowdprefs.campaign.ranking import consensus_orders

                orders = consensus_orders(store.candidate_orders(), system_runs, name, seed)
                store.set_candidate_orders(orders)
            if settings.budget is not None:  # remembered: see campaign.project_state.project_budget
                store.set_meta(BUDGET_KEY, repr(settings.budget))
        except BaseException:
            store.discard()
            raise
        finally:
            store.close()
        if root.exists():
            root.rmdir()
        os.rename(staging, root)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return Project(root)


@dataclass(frozen=True)
class Moved:
    """What :func:`migrate_state` did: rows of how many tables went from where to where, and
    what became of the old state (``kept``, in words)."""

    source: str
    target: str
    tables: int
    rows: int
    kept: str


def migrate_state(root: Path, to: str) -> Moved:
    """Copy the project's state to ``to`` (a PostgreSQL address, or ``sqlite`` for the
    project's own ``state.sqlite``) and point ``crowdprefs.toml`` at it.

    The copy holds the project lock, is one transaction of the target, and is counted table by
    table on both sides before the settings change; on any failure the target is left as empty
    as it was given and the project unchanged. The old state is kept: a SQLite file is renamed
    to ``state.sqlite.moved``; a database is left as it is.
    """
    root = Path(root)
    target_location = (  # an address checked whole before anything is opened or written
        Location(path=root / STATE_NAME) if to == "sqlite" else Location(url=database_url(to))
    )
    with Project(root) as project:
        source = project.store
        if str(target_location) == str(source.location):
            raise StateError(f"the project's state already is {source.location}")
        if target_location.path is not None and target_location.path.exists():
            raise StateError(f"{target_location.path} exists; move it away first")
        source.lock.acquire()  # no other command changes the state while it is copied
        target = Store(target_location, create=True)
        try:
            copied = copy_state(source, target)
            counted = target.table_counts()
            if counted != source.table_counts():
                raise StateError(f"the copy in {target_location} does not match; nothing changed")
        except BaseException:
            target.discard()
            target.close()
            if target_location.path is not None:
                for suffix in ("", "-wal", "-shm"):
                    Path(f"{target_location.path}{suffix}").unlink(missing_ok=True)
            raise
        target.close()
        sections = dict(project.settings.sections)
        if target_location.url is None:
            sections.pop("store", None)
        else:
            sections["store"] = {"url": to}
        project.save_settings(replace(project.settings, sections=sections))
        moved_file = source.location.path
    kept = f"the old database {source.location} is left as it was"
    if moved_file is not None:
        moved_file.rename(moved_file.with_name(moved_file.name + ".moved"))
        kept = f"the old state is kept as {moved_file.name}.moved"
    return Moved(
        str(source.location), str(target_location), len(copied), sum(copied.values()), kept
    )
