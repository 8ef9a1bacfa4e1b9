"""The ``margin`` rule: x wins when at least *m* more workers preferred it than preferred y
(and vice versa), otherwise "equal"; a margin of 2 reproduces the lists published with the
preference-judgments paper."""

from __future__ import annotations

import numpy as np

from crowdprefs.campaign.rules.base import PairRule, RuleSettings, Verdicts, counts_of


class Margin(PairRule):
    """The vote margin ``[aggregation] margin``; no p-value (NaN)."""

    name = "margin"
    keys = ("margin",)

    def title(self, settings: RuleSettings) -> str:
        """``margin <m>``."""
        return f"margin {settings.margin}"

    strength = title

    def verdicts(self, more, equal, less, settings: RuleSettings) -> Verdicts:
        """+1 when more − less ≥ m, −1 when less − more ≥ m, else 0."""
        more, equal, less = counts_of(more, equal, less)
        lead = more - less
        verdict = np.where(lead >= settings.margin, 1, np.where(-lead >= settings.margin, -1, 0))
        return verdict.astype(np.int8), np.full(lead.shape, np.nan)


RULE = Margin()
