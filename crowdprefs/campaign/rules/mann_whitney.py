"""The ``mann-whitney`` rule (the default; the preference-judgments paper §3.2): a pair's two
rank samples compared with a Mann-Whitney U test (:mod:`crowdprefs.campaign.aggregate` says
what it means for groups)."""

from __future__ import annotations

from functools import lru_cache
from typing import Literal

import lazy_loader

from crowdprefs.campaign.rules.base import PairRule, RuleSettings, Verdicts, counts_of
from crowdprefs.errors import InputError

np = lazy_loader.load("numpy")  # imported on first use

Alternative = Literal["two-sided", "greater", "less"]
Method = Literal["asymptotic", "exact", "auto"]


@lru_cache(maxsize=64)
def _mwu_sf_table(n1: int, n2: int) -> np.ndarray:
    """``P(U ≥ u)`` for u = 0 … n1·n2 under H0 without ties (the exact null distribution).

    Built with the recurrence f(u; m, n) = m/(m+n)·f(u−n; m−1, n) + n/(m+n)·f(u; m, n−1).
    """
    size = n1 * n2 + 1
    # pmf[m][n] for the current m, as a table over n = 0..n2
    pmf = [np.zeros(size) for _ in range(n2 + 1)]
    for n in range(n2 + 1):
        pmf[n][0] = 1.0  # m = 0: U is always 0
    for m in range(1, n1 + 1):
        new = [np.zeros(size) for _ in range(n2 + 1)]
        new[0][0] = 1.0  # n = 0: U is always 0
        for n in range(1, n2 + 1):
            shifted = np.zeros(size)
            shifted[n:] = pmf[n][: size - n]
            new[n] = (m * shifted + n * new[n - 1]) / (m + n)
        pmf = new
    return np.cumsum(pmf[n2][::-1])[::-1]


def mann_whitney(
    more,
    equal,
    less,
    *,
    alternative: Alternative = "two-sided",
    method: Method = "asymptotic",
    continuity: bool = True,
) -> tuple[np.ndarray, np.ndarray]:
    """Mann-Whitney U of x's rank sample against y's, from the answer counts of each pair.

    Returns ``(U1, p)`` arrays equal to ``scipy.stats.mannwhitneyu(x, y, ...)`` for
    x = [+1]*more + [0]*equal + [−1]*less and y = −x. ``alternative="greater"`` tests that x
    ranks higher (is more similar). ``method="auto"`` chooses as scipy does: exact when both
    samples have at most 8 values and there are no ties, asymptotic otherwise. Without the
    continuity correction, a pair whose answers are all "equal" has p = 0/0 = NaN, as in
    scipy; :func:`crowdprefs.campaign.aggregate.verdicts` reads that as "equal".
    """
    p_, e, q = (a.astype(np.float64) for a in counts_of(more, equal, less))
    n = p_ + e + q
    if (n == 0).any():
        raise InputError("every pair needs at least one answer to be aggregated")
    u1 = p_ * p_ + 2 * p_ * e + p_ * q + e * e / 2
    u2 = n * n - u1
    if alternative == "greater":
        u, factor = u1, 1.0
    elif alternative == "less":
        u, factor = u2, 1.0
    else:
        u, factor = np.maximum(u1, u2), 2.0

    total = 2 * n
    sides, zeros = p_ + q, 2 * e
    tie_term = 2 * (sides**3 - sides) + (zeros**3 - zeros)
    if method == "auto":
        no_ties = (tie_term == 0) & (n <= 8)
        exact = no_ties
    else:
        exact = np.full(n.shape, method == "exact")

    p = np.empty(n.shape)
    asym = ~exact
    if asym.any():
        s = np.sqrt(
            n[asym] ** 2
            / 12
            * ((total[asym] + 1) - tie_term[asym] / (total[asym] * (total[asym] - 1)))
        )
        numerator = u[asym] - n[asym] ** 2 / 2 - (0.5 if continuity else 0.0)
        from scipy import special  # here: reading a project's state never waits for scipy

        with np.errstate(divide="ignore", invalid="ignore"):
            p[asym] = special.ndtr(-(numerator / s))
    for size in np.unique(n[exact]).astype(int):
        rows = exact & (n == size)
        p[rows] = _mwu_sf_table(size, size)[u[rows].astype(np.int64)]
    return u1, np.clip(p * factor, 0.0, 1.0)


class MannWhitney(PairRule):
    """A significant difference (p < α) of the two rank samples gives the side with the larger
    mean rank, otherwise "equal"; one-sided, the test is run in the observed direction."""

    name = "mann-whitney"
    keys = ("alpha", "sided", "method", "continuity")

    def title(self, settings: RuleSettings) -> str:
        """``Mann-Whitney <α>``."""
        return f"Mann-Whitney {settings.alpha:g}"

    def verdicts(self, more, equal, less, settings: RuleSettings) -> Verdicts:
        """The test's verdicts and p-values (module docstring)."""
        more, equal, less = counts_of(more, equal, less)
        lead = more - less
        test = {"method": settings.method, "continuity": settings.continuity}
        if settings.sided == "two-sided":
            _, p = mann_whitney(more, equal, less, **test)
        else:
            _, p_greater = mann_whitney(more, equal, less, alternative="greater", **test)
            _, p_less = mann_whitney(more, equal, less, alternative="less", **test)
            p = np.where(lead >= 0, p_greater, p_less)
        verdict = np.where(p < settings.alpha, np.sign(lead), 0)
        return verdict.astype(np.int8), p


RULE = MannWhitney()
