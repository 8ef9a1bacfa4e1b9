"""The aggregation rules by name: the one place a rule's name is looked up.

A rule is an object (:class:`crowdprefs.campaign.rules.base.Rule`) that says whether it decides
each pair from its own answers or a whole query from every answer, gives the verdicts, the
fewest answers that can decide a pair and the costs of changing a verdict, and names the
``[aggregation]`` keys it reads. ``[aggregation] rule`` and ``--rule`` accept the names of
:data:`NAMES`; the rest of the package asks the rule object
(:attr:`crowdprefs.campaign.aggregate.AggregationRule.decider`), never its name.

A new rule that decides each pair from its own answer counts is one file (a
:class:`~crowdprefs.campaign.rules.base.PairRule` with its ``verdicts``) and one line of
``_MODULES`` below; a rule that decides a whole query (a
:class:`~crowdprefs.campaign.rules.base.QueryRule`) is those two and its model. A rule made
elsewhere (a plug-in, a test) joins with :func:`register`.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

from crowdprefs.errors import InputError

if TYPE_CHECKING:
    from crowdprefs.campaign.rules.base import Rule

_MODULES = {
    "mann-whitney": "mann_whitney",
    "margin": "margin",
    "bradley-terry": "bradley_terry",
}
"""Each rule's name and the module of this package that holds it (as ``RULE``), imported on
first use: reading the names never loads numpy or scipy."""

NAMES: list[str] = list(_MODULES)
"""The names of the rules, in the order ``--help`` and the settings' messages list them (the
default first); :func:`register` adds to it, and the settings' schema reads it."""

_LOADED: dict[str, Rule] = {}


def rule_of(name: str) -> Rule:
    """The rule called ``name``; :class:`~crowdprefs.errors.InputError` for an unknown name."""
    if name not in _LOADED:
        if name not in _MODULES:
            raise InputError(
                f"[aggregation] rule must be one of {', '.join(map(repr, NAMES))}, got {name!r}"
            )
        module = importlib.import_module(f"{__name__}.{_MODULES[name]}")
        _LOADED[name] = module.RULE
    return _LOADED[name]


def register(rule: Rule) -> None:
    """Make ``rule`` known by its ``name`` (to the settings, ``--rule`` and every caller);
    refused for a name already taken."""
    if rule.name in NAMES:
        raise InputError(f"a rule called {rule.name!r} is already registered")
    _LOADED[rule.name] = rule
    NAMES.append(rule.name)
