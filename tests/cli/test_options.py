"""The defaults the command line shows are the library's own (restated there to start fast)."""

from __future__ import annotations

from dataclasses import asdict

from crowdprefs.campaign.adaptive import StoppingRule
from crowdprefs.campaign.project import DEFAULT_SEED
from crowdprefs.cli import options
from crowdprefs.crowds import CROWDS
from crowdprefs.crowds.results import Columns
from crowdprefs.evaluation.gawm import MEANS
from crowdprefs.evaluation.power import PROCEDURES
from crowdprefs.evaluation.stats import PAIRWISE_TESTS


def test_the_restated_defaults_equal_the_librarys():
    assert options.DEFAULT_SEED == DEFAULT_SEED
    assert options.CROWDS == CROWDS
    assert StoppingRule.alpha == options.SEQUENTIAL_ALPHA
    assert StoppingRule.futility == options.SEQUENTIAL_FUTILITY
    library_columns = asdict(Columns())
    assert {key: library_columns[key] for key in options.COLUMNS} == options.COLUMNS
    assert {name: p.description for name, p in PROCEDURES.items()} == options.PROCEDURES
    assert options.MEANS == MEANS
    assert options.PAIRWISE_TESTS == PAIRWISE_TESTS
