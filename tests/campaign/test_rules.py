"""The aggregation rules as objects: a new per-pair rule is one file and one registry line, and
no module outside the registry tests a rule's name."""

from __future__ import annotations

import ast
import importlib.util
import itertools
import json
import subprocess
import sys
from pathlib import Path

import pytest

import crowdprefs
from crowdprefs.campaign import rules
from crowdprefs.campaign.aggregate import VERDICTS, AggregationRule
from crowdprefs.errors import InputError

PACKAGE = Path(crowdprefs.__file__).parent

# The whole of a new rule: x wins when at least ``margin`` workers answered and every one of
# them preferred it (an "equal" answer or one for y leaves the pair equal).
UNANIMOUS = """
import numpy as np

from crowdprefs.campaign.rules.base import PairRule, counts_of


class Unanimous(PairRule):
    name = "unanimous"
    keys = ("margin",)

    def verdicts(self, more, equal, less, settings):
        more, equal, less = counts_of(more, equal, less)
        clean = equal == 0
        wins = clean & (less == 0) & (more >= settings.margin)
        loses = clean & (more == 0) & (less >= settings.margin)
        verdict = np.where(wins, 1, np.where(loses, -1, 0)).astype(np.int8)
        return verdict, np.full(verdict.shape, np.nan)


RULE = Unanimous()
"""

# What a user runs with it: the registry line, then the library as for any rule.
RUN = """
import json

import numpy as np
import pandas as pd

from crowdprefs.campaign import rules
from crowdprefs.campaign.aggregate import AggregationRule, change_costs, fewest_deciding
from crowdprefs.quality import preferences

import unanimous

rules.register(unanimous.RULE)
rule = AggregationRule("unanimous", margin=2)
table = [("C", "F", 1), ("D", "F", 1), ("E", "F", 1), ("A", "F", 1), ("G", "F", 0),
         ("B", "F", 1), ("C", "B", 0), ("D", "B", -1), ("E", "B", -1), ("A", "B", 0),
         ("C", "A", 0), ("D", "E", 0)]
label = {1: "left", 0: "equal", -1: "right"}
answers = pd.DataFrame(
    [(f"w{k}", "q", x, y, label[v]) for x, y, v in table for k in range(3)],
    columns=["worker", "query", "left", "right", "label"],
)
lists = preferences.sort_lists(answers, rule)
dissent = pd.concat([answers, answers.iloc[[0]].assign(worker="w9", label="equal")])
rows = np.array([c for c in np.ndindex(7, 7, 7) if 0 < sum(c) <= 6])
removal, flip = change_costs(*rows.T, rule)
print(json.dumps({
    "groups": [sorted(g["document"]) for _, g in lists.groupby("group")],
    "verdicts": preferences.verdicts(dissent, rule)["verdict"].tolist(),
    "margin": preferences.verdicts(dissent, AggregationRule("margin"))["verdict"].tolist(),
    "fewest": fewest_deciding(rule),
    "rows": rows.tolist(), "removal": removal.tolist(), "flip": flip.tolist(),
}))
"""


def brute_costs(decide, row) -> tuple[list[int], list[int]]:
    """The change costs of one count row by deciding every reachable row (−1: own or none)."""
    more, equal, less = row
    n = more + equal + less
    removal, flip = {}, {}
    for a, b, c in itertools.product(range(n + 1), repeat=3):
        verdict = int(decide([a], [b], [c])[0][0]) if a + b + c else None
        if a <= more and b <= equal and c <= less and a + b + c:
            removal[verdict] = min(removal.get(verdict, n), n - a - b - c)
        if a + b + c == n:
            cost = max(0, a - more) + max(0, b - equal) + max(0, c - less)
            flip[verdict] = min(flip.get(verdict, n + 1), cost)
    own = int(decide([more], [equal], [less])[0][0])
    return tuple(
        [-1 if v == own else found.get(v, -1) for v in VERDICTS] for found in (removal, flip)
    )


def test_a_new_pair_rule_is_one_file_and_a_registry_line_and_sorts_like_any_rule(tmp_path):
    (tmp_path / "unanimous.py").write_text(UNANIMOUS, encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-c", RUN], cwd=tmp_path, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr
    got = json.loads(done.stdout)
    # the paper's Table 1, answered alike by three workers: its three groups
    assert got["groups"] == [["A", "B", "C"], ["D", "E"], ["F", "G"]]
    # one "equal" answer on (C, F) leaves it undecided by this rule, decided by the margin
    assert got["verdicts"][0] == 0 and got["margin"][0] == 1
    assert got["verdicts"][1:] == got["margin"][1:]
    assert got["fewest"] == 2
    # the change costs come from the shared search, exact for this rule too
    spec = importlib.util.spec_from_file_location("unanimous_here", tmp_path / "unanimous.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    settings = AggregationRule(margin=2)

    def decide(more, equal, less):
        return module.RULE.verdicts(more, equal, less, settings)

    for row, removal, flip in zip(got["rows"], got["removal"], got["flip"], strict=True):
        assert (removal, flip) == brute_costs(decide, row), row


def test_the_registry_names_each_rule_once_and_refuses_an_unknown_or_taken_name():
    assert rules.NAMES[:3] == ["mann-whitney", "margin", "bradley-terry"]
    assert [rules.rule_of(name).name for name in rules.NAMES] == rules.NAMES
    assert [rules.rule_of(name).whole_query for name in rules.NAMES[:3]] == [False, False, True]
    with pytest.raises(InputError, match="rule must be one of 'mann-whitney'.*got 'tiny'"):
        rules.rule_of("tiny")
    before = list(rules.NAMES)
    with pytest.raises(InputError, match="'margin' is already registered"):
        rules.register(rules.rule_of("margin"))
    assert before == rules.NAMES
    for settings in (AggregationRule(), AggregationRule("margin", margin=3)):
        assert settings.decider is rules.rule_of(settings.rule)
        assert set(settings.decider.keys) <= set(vars(settings))


def test_no_module_outside_the_registry_tests_a_rule_by_its_name():
    """A rule's name compared with ``rule`` (``x.rule == "margin"``, ``rule in (...)``) outside
    ``campaign/rules/``: the branch belongs in the rule object."""
    names = set(rules.NAMES)
    found = []
    for path in PACKAGE.rglob("*.py"):
        if path.is_relative_to(PACKAGE / "campaign" / "rules"):
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.Compare):
                continue
            sides = [node.left, *node.comparators]
            about_rule = any(
                isinstance(side, ast.Attribute)
                and side.attr == "rule"
                or isinstance(side, ast.Name)
                and side.id == "rule"
                for side in sides
            )
            constants = {
                c.value for side in sides for c in ast.walk(side) if isinstance(c, ast.Constant)
            }
            if about_rule and constants & names:
                found.append(f"{path.relative_to(PACKAGE)}:{node.lineno}")
    assert found == []
