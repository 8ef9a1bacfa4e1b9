"""How a campaign uses its machine prior beyond the pivots: the ``[prior]`` settings, and which
pairs of a batch the calibrated model decides (:func:`triage`: a selection whose share of wrong
machine verdicts is bounded over the campaign, :mod:`crowdprefs.machine.conformal`).

Both the driver and the planner call :func:`triage` with the verdict link fitted on the human
verdicts known so far (:func:`verdict_link`), so a simulated campaign skips exactly as a real
one would.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields
from typing import TYPE_CHECKING, Any

import lazy_loader

from crowdprefs.campaign.settings import CONFIG_NAME, SCHEMA, check_section
from crowdprefs.errors import InputError
from crowdprefs.machine.overturn import SkipRule, audit_sample
from crowdprefs.rng import counter_uniform

if TYPE_CHECKING:  # scipy loads only when a link is fitted, not when a project's policy is read
    from crowdprefs.machine.link import Link

np = lazy_loader.load("numpy")  # imported on first use


@dataclass(frozen=True)
class PriorPolicy:
    """``skip``: the rule deciding sure pairs without humans (``None``: every pair is asked);
    ``weight``: pseudo-answers the calibrated answer link adds to each pair's Pólya urn in the
    adaptive stopping rule (0: none; :func:`crowdprefs.machine.stopping.decide_with_prior`)."""

    skip: SkipRule | None = None
    weight: float = 0.0

    def __post_init__(self) -> None:
        key = SCHEMA["prior"]["weight"]
        if not key.accepts(float(self.weight)):
            raise InputError(f"[prior] weight must be {key.expected()}, got {self.weight}")

    @property
    def active(self) -> bool:
        """Whether the prior does more than choose pivots."""
        return self.skip is not None or self.weight > 0

    @classmethod
    def from_section(cls, section: dict[str, Any]) -> PriorPolicy:
        """The policy of a ``[prior]`` TOML section (``skip = true`` with the
        :class:`~crowdprefs.machine.overturn.SkipRule` keys; ``weight``)."""
        check_section("prior", section, CONFIG_NAME)
        names = {f.name for f in fields(SkipRule)}
        skip = None
        if section.get("skip", False):
            skip = SkipRule(**{k: v for k, v in section.items() if k in names})
        return cls(skip, float(section.get("weight", 0.0)))


def pseudo_answers(link: Link, weight: float, d: np.ndarray, s: np.ndarray) -> np.ndarray | None:
    """The pairs' pseudo-answers (more, equal, less) for the stopping rule: ``weight`` times the
    answer ``link``'s probabilities, or ``None`` (the rule's own urn) unless the link's slope
    interval lies above 0. A model the human answers have not shown to help would only move the
    urn to the base rates, which keep pairs open longer where "equal" is rare."""
    if weight <= 0 or link.slope_interval()[0] <= 0:
        return None
    return weight * link.probabilities(d, s)


def verdict_link(d: np.ndarray, s: np.ndarray, verdict: np.ndarray) -> Link:
    """The verdict link: :class:`~crowdprefs.machine.link.Link` fitted on one-hot human
    verdicts (+1 more, 0 equal, −1 less) of pairs with differences ``d`` and sides ``s``."""
    from crowdprefs.machine.link import Link

    onehot = np.zeros((len(verdict), 3))
    onehot[np.arange(len(verdict)), 1 - np.asarray(verdict, dtype=np.int64)] = 1
    return Link.fit(d, s, onehot)


def worth_calibrating(d: np.ndarray, s: np.ndarray, verdict: np.ndarray, level: float) -> bool:
    """Whether a round should ask calibration pairs first: only when the verdict link fitted on
    the human verdicts so far has its slope's interval above 0. Before any verdict, or with a
    model the verdicts have not shown to help, no selection could take a pair, so the extra
    batch would be spent for nothing."""
    return len(verdict) > 0 and verdict_link(d, s, verdict).slope_interval(level)[0] > 0


CALIBRATION_STREAM = 0xCA11B
"""The counter-based stream of :func:`calibration_pairs`."""


def calibration_pairs(keys: np.ndarray, count: int, seed: int) -> np.ndarray:
    """The positions of the ``count`` pairs of a round of the sort asked first, in a batch of
    their own: those with the smallest counter-based draws of (``seed``, their ``keys``), so
    the choice is random but replayable. Their human verdicts calibrate the triage of the rest
    of the round (:func:`triage`), which they are exchangeable with."""
    draws = counter_uniform(seed, CALIBRATION_STREAM, np.asarray(keys))
    return np.sort(np.argsort(draws, kind="stable")[:count])


@dataclass(frozen=True)
class Triage:
    """Per pair of a batch: ``selected`` (chosen by
    :func:`~crowdprefs.machine.conformal.select`), ``skip`` (selected and decided by the
    machine), ``audit`` (selected, but asked anyway: the audit
    sample, whose human verdicts check the machine's), and the machine's ``verdict`` (+1, 0,
    −1) with its ``probability`` under the verdict link. ``calibration``: (calibration pairs,
    wrong machine verdicts among them)."""

    selected: np.ndarray
    skip: np.ndarray
    audit: np.ndarray
    verdict: np.ndarray
    probability: np.ndarray
    calibration: tuple[int, int] = (0, 0)
    evidence: tuple[int, int, int] = (0, 0, 0)
    """What the selection adds to the campaign's pooled evidence (calibration pairs below its
    threshold, wrong ones among them, pairs selected; zeros when nothing is selected)."""
    slope: tuple[float, float] = (math.nan, math.nan)
    """The interval of the link's slope: below 0, the model ranks against the human verdicts
    (e.g. distances given as scores) and decides nothing."""


def triage(
    known: tuple[np.ndarray, np.ndarray, np.ndarray],
    calibration: np.ndarray,
    d: np.ndarray,
    s: np.ndarray,
    keys: np.ndarray,
    rule: SkipRule,
    seed: int,
    earlier: tuple[int, int, int] = (0, 0, 0),
) -> Triage:
    """Which pairs of a batch (differences ``d``, sides ``s``, ``keys``: one integer per pair
    for :func:`~crowdprefs.machine.overturn.audit_sample`) the machine decides, given the human
    verdicts ``known`` so far (differences, sides, verdicts) and which of them are the
    ``calibration`` pairs: a random draw of the same round of the sort as the batch, asked
    first (:func:`calibration_pairs`), so the two are exchangeable.

    The verdict link is fitted on the ``known`` verdicts other than the calibration pairs
    (:func:`verdict_link`; split conformal: the uncertainty must not have seen the calibration
    verdicts, or it flatters them); its most probable verdict is the machine's and 1 − its
    probability the uncertainty. The selection (:func:`crowdprefs.machine.conformal.select`)
    takes the most certain pairs only when the calibration shows, at confidence
    ``rule.level``, that at most ``rule.max_wrong`` of the machine verdicts the campaign takes
    differ from the human verdict, pooled with the ``earlier`` rounds' evidence
    (:attr:`Triage.evidence` summed); the selected pairs outside the audit sample are
    skipped. Nothing is selected with fewer than ``rule.min_verdicts``
    calibration pairs, nor while the slope's interval lies below 0 (a model ranking against
    the humans: the link would learn to read it backwards, but a model that contradicts its
    own researcher is more likely a sign error, and decides nothing)."""
    from crowdprefs.machine.conformal import select

    n = len(d)
    calibration = np.asarray(calibration, dtype=bool)
    empty = np.zeros(n, dtype=bool)
    if calibration.sum() < rule.min_verdicts:
        return Triage(empty, empty, empty, np.zeros(n, np.int8), np.zeros(n))
    link = verdict_link(*(np.asarray(column)[~calibration] for column in known))
    slope = link.slope_interval(rule.level)
    probabilities = link.probabilities(d, s)
    verdict = (1 - probabilities.argmax(axis=1)).astype(np.int8)
    top = probabilities.max(axis=1)
    fitted = link.probabilities(known[0][calibration], known[1][calibration])
    wrong = (1 - fitted.argmax(axis=1)) != np.asarray(known[2])[calibration]
    selected, evidence = empty, (0, 0, 0)
    if slope[1] >= 0:
        uncertain = 1 - fitted.max(axis=1)
        selected, _, evidence = select(
            1 - top, uncertain, wrong, rule.max_wrong, 1 - rule.level, earlier
        )
    audit = selected & audit_sample(keys, rule.audit_share, seed)
    record = (int(calibration.sum()), int(wrong.sum()))
    return Triage(selected, selected & ~audit, audit, verdict, top, record, evidence, slope)
