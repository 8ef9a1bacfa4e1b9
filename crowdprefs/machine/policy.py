"""How a campaign uses its machine prior beyond the pivots: the ``[prior]`` settings, and which
pairs of a batch the calibrated model decides (:func:`triage`).

Both the driver and the planner call :func:`triage` with the verdict link fitted on the human
verdicts known so far (:func:`verdict_link`), so a simulated campaign skips exactly as a real
one would.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import TYPE_CHECKING, Any

import numpy as np

from crowdprefs.campaign.settings import CONFIG_NAME, SCHEMA, check_section
from crowdprefs.errors import InputError
from crowdprefs.machine.overturn import SkipRule, audit_sample
from crowdprefs.rng import counter_uniform

if TYPE_CHECKING:  # scipy loads only when a link is fitted, not when a project's policy is read
    from crowdprefs.machine.link import Link


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


def verdict_link(d: np.ndarray, s: np.ndarray, verdict: np.ndarray) -> Link:
    """The verdict link: :class:`~crowdprefs.machine.link.Link` fitted on one-hot human
    verdicts (+1 more, 0 equal, −1 less) of pairs with differences ``d`` and sides ``s``."""
    from crowdprefs.machine.link import Link

    onehot = np.zeros((len(verdict), 3))
    onehot[np.arange(len(verdict)), 1 - np.asarray(verdict, dtype=np.int64)] = 1
    return Link.fit(d, s, onehot)


CALIBRATION_STREAM = 0xCA11B
"""The counter-based stream of :func:`calibration_pairs`."""


def calibration_pairs(keys: np.ndarray, count: int, seed: int) -> np.ndarray:
    """The positions of the ``count`` pairs asked first while the verdict link is not yet
    calibrated: those with the smallest counter-based draws of (``seed``, their ``keys``), so
    the choice is random but replayable. Asking them in a batch of their own lets the rest of
    the batch (the first batch of a campaign: the widest comparisons) be triaged."""
    draws = counter_uniform(seed, CALIBRATION_STREAM, np.asarray(keys))
    return np.sort(np.argsort(draws, kind="stable")[:count])


@dataclass(frozen=True)
class Triage:
    """Per pair of a batch: ``skip`` (decided by the machine), ``audit`` (sure, but asked: the
    audit sample), and the machine's ``verdict`` (+1, 0, −1) with its ``probability`` where
    sure (``skip | audit``); ``record``: the model's track record, ``(sure, overturned,
    upper bound)`` over the human verdicts known (:func:`track_record`)."""

    skip: np.ndarray
    audit: np.ndarray
    verdict: np.ndarray
    probability: np.ndarray
    record: tuple[int, int, float] = (0, 0, 1.0)
    slope: tuple[float, float] = (np.nan, np.nan)
    """The interval of the link's slope: skipping needs it above 0 (the model ranks with the
    human verdicts); below 0, the model ranks against them (e.g. distances given as scores)."""


def track_record(
    link: Link, known: tuple[np.ndarray, np.ndarray, np.ndarray], rule: SkipRule
) -> tuple[int, int, float]:
    """How the calibrated ``link`` would have done on the pairs humans decided so far
    (``known``: their differences, sides and verdicts): how many it is sure about, how many of
    those the human verdict overturns, and the upper end of that share's Clopper–Pearson
    interval at ``rule.level``. Skipping waits until this bound is at most
    ``rule.max_overturn``: a model earns the right to skip by the human verdicts it would have
    got right, and loses it when later ones go against it (the interval is recomputed on every
    batch with the refitted link)."""
    sure, verdict = rule.skippable(link.probabilities(known[0], known[1]))
    overturned = int((sure & (verdict != known[2])).sum())
    return int(sure.sum()), overturned, rule.interval(overturned, int(sure.sum()))[2]


def triage(
    known: tuple[np.ndarray, np.ndarray, np.ndarray],
    d: np.ndarray,
    s: np.ndarray,
    keys: np.ndarray,
    rule: SkipRule,
    seed: int,
    *,
    stopped: bool = False,
) -> Triage:
    """Which pairs of a batch (differences ``d``, sides ``s``, ``keys``: one integer per pair
    for :func:`~crowdprefs.machine.overturn.audit_sample`) the machine decides, given the human
    verdicts ``known`` so far (differences, sides, verdicts).

    The verdict link is fitted on ``known`` (:func:`verdict_link`); a pair is *sure* when its
    most probable verdict has probability ≥ ``rule.confidence``; the audit sample of the sure
    pairs is asked anyway; the others are skipped, unless fewer than ``rule.min_verdicts``
    verdicts are known, the model's :func:`track_record` bound exceeds ``rule.max_overturn``,
    the slope's interval (:meth:`~crowdprefs.machine.link.Link.slope_interval`) is not above 0
    (a useless model, or one ranking against the humans: the link would learn to read it
    backwards, but a model that contradicts its own researcher decides nothing), or skipping
    ``stopped`` (the audit showed the machine worse than allowed:
    :meth:`~crowdprefs.machine.overturn.SkipRule.stopped`)."""
    n = len(d)
    if not rule.ready(len(known[2])):
        empty = np.zeros(n, dtype=bool)
        return Triage(empty, empty, np.zeros(n, np.int8), np.zeros(n))
    link = verdict_link(*known)
    record = track_record(link, known, rule)
    probabilities = link.probabilities(d, s)
    sure, verdict = rule.skippable(probabilities)
    audit = sure & audit_sample(keys, rule.audit_share, seed)
    slope = link.slope_interval(rule.level)
    trusted = record[2] <= rule.max_overturn and slope[0] > 0 and not stopped
    skip = sure & ~audit & trusted
    return Triage(skip, audit, verdict, probabilities.max(axis=1), record, slope)
