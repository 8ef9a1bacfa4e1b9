"""A project's machine prior: given at ``init --prior`` or by ``[prior] scores``, fixed in the
state from the first batch on.

The scores live in the state (``candidates.prior``), like the seed and the candidates, so every
process and every replay of the sort sees the same pivots (:func:`crowdprefs.campaign.sorting.
arranged`). ``[prior] scores = "file.csv"`` (relative to the project folder) gives a prior to a
project before its first batch; after that the file must hold the state's scores: a changed or
missing file is refused in one line, never silently used or ignored.
"""

from __future__ import annotations

import json
import zlib
from pathlib import Path
from typing import TYPE_CHECKING

import lazy_loader

from crowdprefs.campaign.project import Project
from crowdprefs.campaign.project_state import prior_scores
from crowdprefs.errors import InputError, StateError
from crowdprefs.machine.scores import fingerprint, read_prior

if TYPE_CHECKING:  # scipy's statistics load only when a prior is used beyond its pivots
    from crowdprefs.machine.overturn import SkipRule
    from crowdprefs.machine.policy import PriorPolicy

np = lazy_loader.load("numpy")  # imported on first use
pd = lazy_loader.load("pandas")  # imported on first use


def prior_path(project: Project) -> Path | None:
    """The file ``[prior] scores`` names (relative to the project folder), or ``None``."""
    name = project.section("prior").get("scores")
    return None if name is None else project.root / name


def fix_prior(project: Project) -> None:
    """Fix the prior the next batch is built with: with ``[prior] scores``, the file's scores
    are stored now when the campaign has no batch yet, and checked against the state's after.
    Raises :class:`StateError` when the setting names a file whose scores differ from the
    state's, or is set once the campaign has started without one."""
    path = prior_path(project)
    if path is None:
        return
    store = project.store
    stored = store.prior()
    if stored is not None and not path.exists():
        raise StateError(
            f"{path}: not found; the state keeps the prior fixed when the campaign started: "
            "restore the file, or remove [prior] scores"
        )
    given = read_prior(path, store.candidates())
    if stored is None:
        last = store.last_batch()
        if last is not None:
            written = project.section("prior")["scores"]
            raise StateError(
                f"[prior] scores = {written!r} was set after batch {last['iteration']} was "
                "built; a prior is fixed before the first batch: remove the setting, or start a "
                "new project with the prior"
            )
        store.set_prior(given)
    elif fingerprint(given) != fingerprint(stored):
        raise StateError(
            f"{path}: the scores differ from the prior fixed in the state when the campaign "
            "started; restore the file (or remove [prior] scores: the state keeps its prior)"
        )


def prior_policy(project: Project) -> PriorPolicy:
    """The project's ``[prior]`` policy (skipping, weight); refused in one line when it asks
    for more than pivots of a project without a prior, or with the bradley-terry rule."""
    from crowdprefs.machine.policy import PriorPolicy

    policy = PriorPolicy.from_section(project.section("prior"))
    if policy.active and prior_path(project) is None and project.store.prior_map() is None:
        raise InputError(
            "[prior] skip and weight need a machine prior: set [prior] scores to a file of a "
            "model's scores (before the first batch)"
        )
    if policy.weight and project.section("adaptive").get("method", "off") == "off":
        raise InputError(
            "[prior] weight weighs the adaptive stopping rule: set [adaptive] method, or remove "
            "weight"
        )
    aggregation = project.settings.aggregation
    if policy.active and aggregation.decider.whole_query:
        raise InputError(
            f"[prior] skip and weight judge each pair on its own answers; the {aggregation.rule} "
            "rule decides pairs from every answer of the query: turn one of them off"
        )
    return policy


def pair_keys(query, x, y) -> np.ndarray:
    """A stable integer per pair (CRC-32 of ``query, x, y``): the key of its audit and
    calibration draws, whatever the batch or the process."""
    return np.array(
        [zlib.crc32(f"{q}\t{a}\t{b}".encode()) for q, a, b in zip(query, x, y, strict=True)],
        dtype=np.int64,
    )


def _normal_scores(project: Project) -> pd.Series:
    """The prior's normal scores (:func:`~crowdprefs.machine.link.normal_scores` within each
    query), indexed by ``(query, document)``."""
    from crowdprefs.machine.link import normal_scores

    prior = project.store.prior()
    codes, _ = pd.factorize(prior["query"])
    index = pd.MultiIndex.from_frame(prior[["query", "document"]])
    return pd.Series(normal_scores(codes, prior["score"].to_numpy(float)), index=index)


def _differences(z: pd.Series, pairs: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """Each pair's (``query, x, y, a_is_x``) difference z_x − z_y of normal scores ``z`` (0 for
    a document the prior does not score, e.g. an attention check's) and side (+1: x shown as
    A)."""

    def of(column: str) -> np.ndarray:
        keys = pd.MultiIndex.from_arrays([pairs["query"], pairs[column]])
        return z.reindex(keys).fillna(0.0).to_numpy()

    side = np.where(pairs["a_is_x"].to_numpy(dtype=bool), 1.0, -1.0)
    return of("x") - of("y"), side


def _human(project: Project) -> pd.DataFrame:
    """The aggregated sorting pairs: ``iteration, query, x, y, a_is_x, verdict`` and their
    answer counts ``more, equal, less``."""
    store = project.store
    columns = ("pair_id", "iteration", "query", "x", "y", "a_is_x", "kind", "verdict")
    pairs = store.pairs(columns=columns)
    pairs = pairs[(pairs["kind"] == "sort") & pairs["verdict"].notna()].set_index("pair_id")
    counts = store.answer_counts(None).reindex(pairs.index).fillna(0).astype(np.int64)
    return pairs.join(counts)


CALIBRATION_KEY = "prior_calibration_batch"
"""State key: the iteration of the latest calibration batch (a round's random pairs asked
first, :func:`~crowdprefs.machine.policy.calibration_pairs`)."""


EVIDENCE_KEY = "prior_evidence"
"""State key: per triaged batch's iteration, what its selection added to the campaign's pooled
evidence (calibration pairs below its threshold, wrong ones, pairs selected:
:attr:`~crowdprefs.machine.policy.Triage.evidence`)."""


def _evidence(store, latest: int | None) -> dict[str, list[int]]:
    """The pooled evidence of the batches built so far (iteration ≤ ``latest``); an entry of a
    batch that a refused step never built is dropped from the state."""
    stored = json.loads(store.meta(EVIDENCE_KEY) or "{}")
    kept = {k: v for k, v in stored.items() if latest is not None and int(k) <= latest}
    if kept != stored:
        store.set_meta(EVIDENCE_KEY, json.dumps(kept))
    return kept


def triage_needed(
    project: Project, rule: SkipRule, needed: pd.DataFrame
) -> tuple[np.ndarray, pd.DataFrame]:
    """Which of the ``needed`` pairs (``query, x, y, a_is_x``) the next batch asks, and the
    machine verdicts of the selected ones (``query, x, y, verdict, probability, asked``:
    ``asked`` for the audit sample) (:func:`crowdprefs.machine.policy.triage`, as the planner
    runs it).

    A round of the sort (the pairs needed when the last batch was aggregated) first asks
    ``rule.min_verdicts`` of its pairs drawn at random, in a batch of their own, and remembers
    that batch (:data:`CALIBRATION_KEY`); once it is aggregated, the rest of the round is
    triaged against it, pooled with the evidence of the campaign's earlier selections
    (:data:`EVIDENCE_KEY`). A round of at most that many pairs is asked whole, and so is one whose
    calibration batch was followed by machine verdicts (the round it calibrated is over), and
    one before the human verdicts show the model helps
    (:func:`~crowdprefs.machine.policy.worth_calibrating`: the first, and every round of a
    useless model)."""
    from crowdprefs.machine.policy import calibration_pairs, triage, worth_calibrating

    store = project.store
    keys = pair_keys(needed["query"], needed["x"], needed["y"])
    none = pd.DataFrame(columns=["query", "x", "y", "verdict", "probability", "asked"])
    everything = np.ones(len(needed), dtype=bool)
    if not rule.calibrates(len(needed)):
        return everything, none
    last = store.last_batch()
    latest = None if last is None else int(last["iteration"])
    calibrated = store.meta(CALIBRATION_KEY)
    evidence = _evidence(store, latest)
    decided = store.machine_verdicts()["iteration"] if store.machine_verdict_count() else []
    human = _human(project)
    z = _normal_scores(project)
    known = (*_differences(z, human), human["verdict"].to_numpy(np.int64))
    if calibrated is None or int(calibrated) != latest or any(i > latest for i in decided):
        if not worth_calibrating(*known, rule.level):
            return everything, none
        asked = np.zeros(len(needed), dtype=bool)
        asked[calibration_pairs(keys, rule.min_verdicts, project.seed)] = True
        # the same iteration on a retry of a refused step: nothing else changes
        store.set_meta(CALIBRATION_KEY, str(1 if latest is None else latest + 1))
        return asked, none
    calibration = (human["iteration"] == latest).to_numpy()
    d, s = _differences(z, needed)
    earlier = tuple(int(sum(column)) for column in zip(*evidence.values(), strict=True))
    sure = triage(known, calibration, d, s, keys, rule, project.seed, earlier or (0, 0, 0))
    if any(sure.evidence):
        evidence[str(latest + 1)] = list(sure.evidence)
        store.set_meta(EVIDENCE_KEY, json.dumps(evidence))
    if sure.slope[1] < 0:
        from crowdprefs.progress import note

        note(
            f"the machine prior ranks against the human verdicts (slope {sure.slope[0]:.2f} to "
            f"{sure.slope[1]:.2f}): it decides no pair; check that a higher score means more "
            "similar (a distance must be negated)"
        )
    chosen = sure.selected
    machine = needed.loc[chosen, ["query", "x", "y"]].assign(
        verdict=sure.verdict[chosen].astype(int),
        probability=sure.probability[chosen],
        asked=sure.audit[chosen].astype(int),
    )
    return ~sure.skip, machine


def pseudo_answers(project: Project, weight: float, pairs: pd.DataFrame) -> np.ndarray | None:
    """The prior's pseudo-answers (more, equal, less) for ``pairs`` (``query, x, y,
    a_is_x``) in the stopping rule, from the answer link fitted on every human answer of the
    aggregated sorting pairs so far (:func:`crowdprefs.machine.policy.pseudo_answers`;
    ``None`` while the answers do not show the model helps)."""
    from crowdprefs.machine.link import Link
    from crowdprefs.machine.policy import pseudo_answers as urn

    human = _human(project)
    z = _normal_scores(project)
    link = Link.fit(*_differences(z, human), human[["more", "equal", "less"]].to_numpy())
    return urn(link, weight, *_differences(z, pairs))


LOSS_REPLICATES = 40
"""Replays of the lists with audited flips behind :func:`machine_audit`'s ADR loss."""


def machine_audit(project: Project) -> dict | None:
    """What the machine decided and how its audit stands (``None`` without machine verdicts
    nor ``[prior] skip``):
    pairs ``skipped``, the level ``max_wrong``, the calibration pairs a round asks
    (``min_verdicts``) and the fewest that can show ``max_wrong`` (``needed``), the audited
    machine verdicts (``audited``) and
    the ``wrong`` ones among them, their share with its interval
    (:func:`~crowdprefs.machine.overturn.overturn_interval`), and ``adr_loss``, the lists'
    expected ADR loss from the machine verdicts (:func:`~crowdprefs.machine.loss.
    expected_adr_loss`, at the audit's wrong share, or ``max_wrong`` before any audit)."""
    store = project.store
    machine = store.machine_verdict_count()
    if not machine and not project.section("prior").get("skip", False):
        return None  # nothing more loaded: status of a project without a prior stays quick
    from crowdprefs.machine.policy import PriorPolicy

    if not machine:  # no pandas
        skip = PriorPolicy.from_section(project.section("prior")).skip
        return {"skipped": 0, "max_wrong": skip.max_wrong, "audited": 0, "wrong": 0,
                "share": float("nan"), "low": 0.0, "high": 1.0, "level": skip.level,
                "adr_loss": 0.0, "min_verdicts": skip.min_verdicts,
                "needed": skip.calibration_needed()}  # fmt: skip
    from crowdprefs.campaign.project_state import lists
    from crowdprefs.campaign.sorting import initial_orders
    from crowdprefs.machine.loss import expected_adr_loss, flip_shares
    from crowdprefs.machine.overturn import SkipRule

    verdicts = store.machine_verdicts()
    rule = PriorPolicy.from_section(project.section("prior")).skip or SkipRule()
    audited = verdicts[(verdicts["asked"] == 1) & verdicts["human"].notna()]
    wrong = int((audited["verdict"] != audited["human"]).sum())
    estimate, low, high = rule.interval(wrong, len(audited))
    skipped = verdicts[verdicts["asked"] == 0]
    share = rule.max_wrong if len(audited) == 0 else estimate
    flips = flip_shares(audited["verdict"].to_numpy(int), audited["human"].to_numpy(int), share)
    loss = expected_adr_loss(
        lists(project),
        initial_orders(store.candidate_orders(), project.seed),
        store.verdict_maps(),
        prior_scores(project),
        skipped[["query", "x", "y", "verdict"]],
        flips,
        LOSS_REPLICATES,
        project.seed,
    )
    return {
        "skipped": len(skipped),
        "max_wrong": rule.max_wrong,
        "audited": len(audited),
        "wrong": wrong,
        "share": estimate,
        "low": low,
        "high": high,
        "level": rule.level,
        "adr_loss": loss,
        "min_verdicts": rule.min_verdicts,
        "needed": rule.calibration_needed(),
    }


def audit_line(summary: dict) -> str:
    """The machine's part of the lists in one line (for status, export and the audit)."""
    line = (
        f"machine prior: {summary['skipped']} pair(s) decided without humans at max_wrong "
        f"{summary['max_wrong']:g} (promised: at most that share of the campaign's machine "
        f"verdicts differ from the human verdict, at {summary['level']:.0%} confidence)"
    )
    if summary["audited"]:
        line += (
            f"; audit: {summary['wrong']} of {summary['audited']} machine verdicts differ from "
            f"the human verdict, {summary['share']:.0%} ({summary['level']:.0%} interval "
            f"{summary['low']:.0%}–{summary['high']:.0%})"
        )
    else:
        line += "; no audited machine verdict decided yet"
    if summary["min_verdicts"] < summary["needed"]:
        line += (
            f"; {summary['min_verdicts']} calibration pairs a round cannot show max_wrong "
            f"{summary['max_wrong']:g} at {summary['level']:.0%} confidence (at least "
            f"{summary['needed']} are needed: [prior] min_verdicts), so the prior can decide no "
            "pair"
        )
    if summary["skipped"] and summary["adr_loss"] == summary["adr_loss"]:  # NaN: no list yet
        basis = "audited flips" if summary["audited"] else f"flips at {summary['max_wrong']:g}"
        line += f"; expected ADR loss {summary['adr_loss']:.4f} (lists replayed with {basis})"
    return line
