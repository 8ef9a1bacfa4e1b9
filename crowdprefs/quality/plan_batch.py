"""One batch of a planned campaign: answers asked round after round until every pair is decided
(and, with a fragility rule, none fragile below its maximum), as the driver asks them (see
:mod:`crowdprefs.quality.planning`)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from crowdprefs.campaign.adaptive import decide, wanted_next
from crowdprefs.campaign.aggregate import verdicts
from crowdprefs.machine.stopping import decide_with_prior
from crowdprefs.quality.plan_crowd import PlanCrowd, _Fitted, _Flagger
from crowdprefs.quality.plan_designs import Design


@dataclass
class _Batch:
    """What one iteration asked and got (for the per-iteration table and the answer log)."""

    verdict: np.ndarray
    answers: np.ndarray
    rounds: int
    hours: float
    shown: np.ndarray  # (pairs, 3): A, equal, B answers
    per_round: np.ndarray  # (rounds, pairs): answers asked of each pair in each round
    log: list[dict[str, np.ndarray]]


TRUE_OVERTURN_DRAWS = 16
"""Human verdicts drawn per skipped pair for its true overturn chance (never paid for)."""


def _overturn_chance(
    key, gap, machine_verdict, crowd: PlanCrowd, design: Design, keys: int, pseudo=None
) -> float:
    """The expected number of ``machine_verdict`` s a human verdict of the design would
    overturn: for each pair, the share of :data:`TRUE_OVERTURN_DRAWS` fresh human verdicts
    (answers keyed beyond every pair's ``key``; with the prior's ``pseudo``-answers, as the
    campaign would have asked them) that differ, summed over the pairs."""
    draws = [
        decide_batch(
            key + (r + 1) * keys, gap, crowd, design, (0, 0.0), False, pseudo=pseudo
        ).verdict
        for r in range(TRUE_OVERTURN_DRAWS)
    ]
    return float((np.array(draws) != machine_verdict).mean(axis=0).sum())


def _log_round(crowd: PlanCrowd, key, row, slot, worker, choice, rounds: int, took: float) -> dict:
    """A round's answers for the answer log (``row``: the pairs' rows), each accepted at a
    uniform time between the round's start and its end less the answer's work time (hours
    from the round's start)."""
    seconds = crowd.work_seconds(key[row], slot, worker)
    latest = np.maximum(took - seconds / 3600, 0.0)
    return {
        "row": row,
        "slot": slot,
        "round": np.full(len(row), rounds),
        "worker": worker,
        "choice": choice,
        "seconds": seconds,
        "accepted_hours": latest * crowd.rng.random(len(row)),
    }


def decide_batch(
    key: np.ndarray,
    gap: np.ndarray,
    crowd: PlanCrowd,
    design: Design,
    clock: tuple[int, float],
    record: bool,
    fitted: tuple[_Fitted, np.ndarray, np.ndarray] | None = None,
    flagger: tuple[_Flagger, int, np.ndarray, np.ndarray] | None = None,
    pseudo: np.ndarray | None = None,
) -> _Batch:
    """Collect answers for a batch of pairs (``key`` identifies each pair, ``gap`` = s_x − s_y
    in whole groups, y the pivot) round after round until decided (and, with a fragility rule,
    until no verdict is fragile below its maximum); ``clock`` gives the rounds
    and hours the campaign took before the batch; ``fitted``, for the ``bradley-terry`` rule,
    the campaign's answers so far and the pairs' x and y. With a ``flagger`` (the campaign's
    :class:`_Flagger`, the iteration and the pairs' ``x, y``), workers are flagged after each
    round, their answers dropped and the pairs left short asked again before any decision.
    ``pseudo``: the machine prior's pseudo-answers per pair for the stopping rule
    (:func:`crowdprefs.machine.stopping.decide_with_prior`)."""
    pairs = len(gap)
    a_is_x = crowd.uniform(11, key) < design.pivot_b_share  # the pivot y is shown as B
    gap_a = np.where(a_is_x, gap, -gap)
    workers = np.full((pairs, design.most_answers), -1, dtype=np.int64)
    shown = np.zeros((pairs, 3), dtype=np.int64)
    have = np.zeros(pairs, dtype=np.int64)  # answers that count
    used = np.zeros(pairs, dtype=np.int64)  # answers asked (dropped ones included)
    asked_rows: list[np.ndarray] = []
    rule = design.adaptive
    wanted = np.full(pairs, design.answers_per_pair if rule is None else rule.initial)
    rounds, hours, log, load = 0, 0.0, [], []
    if flagger is not None:
        flagger[0].start()
    while True:
        end = used + np.maximum(wanted - have, 0)
        if (end > used).any():
            if end.max() > workers.shape[1]:
                more = np.full((pairs, int(end.max()) - workers.shape[1]), -1, dtype=np.int64)
                workers = np.concatenate([workers, more], axis=1)
            for slot in range(int(used.min()), int(end.max())):
                rows = np.flatnonzero((used <= slot) & (slot < end))
                workers[rows, slot] = crowd.workers(key[rows], workers[rows, :slot], slot)
            slots = np.arange(workers.shape[1])
            row, slot = np.nonzero((slots >= used[:, None]) & (slots < end[:, None]))
            worker = workers[row, slot]
            choice = crowd.answer(key[row], slot, worker, gap_a[row])
            if fitted is not None:
                fitted[0].add(fitted[1][row], fitted[2][row], a_is_x[row], worker, choice)
            shown += np.bincount(row * 3 + choice, minlength=3 * pairs).reshape(pairs, 3)
            load.append(np.bincount(row, minlength=pairs))
            took = float(crowd.round_hours(clock[0] + rounds, len(row)))
            if record:
                log.append(_log_round(crowd, key, row, slot, worker, choice, rounds, took))
                log[-1]["accepted_hours"] += clock[1] + hours
            rounds += 1
            hours += took
            have, used = have + end - used, end
            if flagger is not None:
                flags, iteration, x, y = flagger
                seconds = crowd.work_seconds(key[row], slot, worker)
                flags.add(iteration, key[row], x[row], y[row], a_is_x[row], worker, choice, seconds)
                asked_rows.append(row)
                index, dropped = flags.flag()
                if len(index):
                    gone = np.concatenate(asked_rows)[index]
                    shown -= np.bincount(gone * 3 + dropped, minlength=3 * pairs).reshape(pairs, 3)
                    have -= np.bincount(gone, minlength=pairs)
                    continue  # ask the replacements before deciding
        counts = np.where(a_is_x[:, None], shown, shown[:, ::-1])  # more, equal, less
        if rule is None:
            if fitted is None:
                verdict = verdicts(*counts.T, design.aggregation)[0]
            else:
                verdict = fitted[0].verdicts(fitted[1], fitted[2])
            if design.fragility is None:
                break
            decided = None
        elif pseudo is None:
            decided, verdict = decide(*counts.T, rule)
        else:
            decided, verdict = decide_with_prior(*counts.T, pseudo, rule)
        wanted = wanted_next(*counts.T, rule, design.fragility, decided)
        if (wanted <= have).all():  # every pair decided and none fragile below its maximum
            break
    for entry in log:
        entry["a_is_x"] = a_is_x[entry["row"]]
    if flagger is not None:
        flagger[0].decide(key, verdict)
    per_round = np.array(load) if load else np.zeros((0, pairs), dtype=np.int64)
    return _Batch(verdict, used, rounds, hours, shown, per_round, log)
