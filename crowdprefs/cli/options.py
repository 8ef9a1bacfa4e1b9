"""Options shared by the commands, and the library defaults their help shows.

Only typer and the standard library are imported here: the library's modules (pandas, scipy...)
load inside the commands that use them, so that ``crowdprefs --help`` starts at once. The
defaults below are the library's own, restated because importing them would load the library;
``tests/cli/test_options.py`` checks that each still equals the value it restates.
"""

from __future__ import annotations

#: ``crowdprefs.campaign.project.DEFAULT_SEED``
DEFAULT_SEED = 2010
#: ``crowdprefs.crowds.CROWDS``
CROWDS = ("simulated", "web", "mturk-sandbox", "mturk-fake")
#: ``crowdprefs.campaign.adaptive.StoppingRule``: ``alpha`` and ``futility``
SEQUENTIAL_ALPHA = 0.3
SEQUENTIAL_FUTILITY = 0.2
#: ``crowdprefs.crowds.results.Columns``
COLUMNS = {
    "query": "Input.query",
    "a": "Input.docA",
    "b": "Input.docB",
    "answer": "Answer.choice",
    "a_value": "A",
    "b_value": "B",
    "equal_value": "equal",
    "pivot": "Input.pivot",
}
#: ``crowdprefs.evaluation.power.PROCEDURES``: name → description
PROCEDURES = {
    "FT": "Friedman + Tukey HSD, α = 0.05",
    "W1": "1-tailed Wilcoxon signed-rank, α = 0.01",
    "W2": "2-tailed Wilcoxon signed-rank, α = 0.05",
    "T1": "1-tailed paired t-test, α = 0.01",
    "S1": "1-tailed sign test, α = 0.01",
}
#: ``crowdprefs.evaluation.gawm.MEANS``
MEANS = ("min", "harmonic", "geometric", "arithmetic", "max")
#: ``crowdprefs.evaluation.stats.PAIRWISE_TESTS``
PAIRWISE_TESTS = ("wilcoxon", "t", "sign", "mann-whitney")
