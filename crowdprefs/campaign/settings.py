"""The typed schema of ``crowdprefs.toml``: every section, every key, its type and range.

A project's settings file is checked against :data:`SCHEMA` when the project opens (so before
any publish): a wrong type, a value out of range, a non-finite number or an unknown key or
section is refused in one line naming the file, the key and what is expected, with a "did you
mean" suggestion for a misspelt name. Every number has a finite lower and upper bound (a
simulated crowd of 1e300 bots or a margin of 10**30 votes is a typing error, not a setting); the
crowd-model files of ``crowd-model fit`` are checked against the same ``[simulated]`` keys.
Nothing is coerced: ``answers_per_pair = 2.5`` or ``reward = true`` are refused, not rounded or
read as 1.0.

The section dataclasses (``ReviewRules``, ``WebSettings``, ``MTurkSettings``…) check their own
fields against this schema with :func:`check_values` (values may come from a file, an option or
a call) and keep only the checks that relate several keys (e.g. ``initial <= maximum``) or that
the schema cannot express (e.g. the shape of a participant id); single-key types and ranges live
here.
"""

from __future__ import annotations

import dataclasses
import difflib
import math
import numbers
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from crowdprefs.campaign import rules
from crowdprefs.errors import InputError, shown
from crowdprefs.moved import moved_names

CONFIG_NAME = "crowdprefs.toml"


@dataclass(frozen=True)
class Key:
    """One setting: its ``kind`` (``int``, ``float``, ``bool``, ``str``, ``path``: a file name,
    relative to the settings' folder, ``list[str]``), an
    optional range ``low``–``high`` (``open_low``: strictly above ``low``; ``open_high``:
    strictly below ``high``) or a set of ``choices`` for strings."""

    kind: str
    low: float | None = None
    high: float | None = None
    choices: Sequence[str] = ()
    prefixes: tuple[str, ...] = ()
    open_low: bool = False
    open_high: bool = False
    names_file: bool = False
    """A path, relative to the project folder, of a file the project reads
    (:data:`crowdprefs.files.SETTINGS_FILES`: no output replaces it)."""

    def expected(self) -> str:
        """What the key accepts, in words (e.g. ``a number in (0, 1)``)."""
        noun = {
            "int": "a whole number",
            "float": "a number",
            "bool": "true or false",
            "str": "a text",
            "path": "a file name (a text that is not empty)",
            "list[str]": "a list of texts",
        }[self.kind]
        if self.prefixes:
            return "a text starting with " + " or ".join(self.prefixes)
        if self.choices:
            return "one of " + ", ".join(repr(c) for c in self.choices)
        if self.low is not None and self.high is not None:
            left, right = "(" if self.open_low else "[", ")" if self.open_high else "]"
            return f"{noun} in {left}{_num(self.low)}, {_num(self.high)}{right}"
        if self.low is not None:
            return f"{noun} {'>' if self.open_low else '≥'} {_num(self.low)}"
        if self.high is not None:
            return f"{noun} {'<' if self.open_high else '≤'} {_num(self.high)}"
        return noun

    def accepts(self, value: Any) -> bool:
        """Whether ``value`` (as TOML parsed it) has this key's type and lies in its range."""
        if self.kind == "bool":
            return isinstance(value, bool)
        if self.kind == "str":
            return (
                isinstance(value, str)
                and (not self.choices or value in self.choices)
                and (not self.prefixes or value.startswith(self.prefixes))
            )
        if self.kind == "path":
            return isinstance(value, str) and bool(value.strip()) and "\x00" not in value
        if self.kind == "list[str]":
            return isinstance(value, list) and all(isinstance(v, str) for v in value)
        if isinstance(value, bool) or not isinstance(value, int | float):
            return False
        if self.kind == "int" and not isinstance(value, int):
            return False
        if not math.isfinite(value):
            return False
        if self.low is not None and (value <= self.low if self.open_low else value < self.low):
            return False
        return self.high is None or (value < self.high if self.open_high else value <= self.high)


def _num(value: float) -> str:
    """``value`` as written in a message: whole bounds exactly (``2**63 - 1``, not 9.22e+18)."""
    return str(int(value)) if float(value).is_integer() else f"{value:g}"


def _strings(*names: str) -> dict[str, Key]:
    return {name: Key("str") for name in names}


SHARE = Key("float", 0, 1)
OPEN_SHARE = Key("float", 0, 1, open_low=True, open_high=True)
COUNT = Key("int", 0, 1_000_000)
SECONDS = Key("float", 0, 24 * 3600)
HOURS = Key("float", 0, 24 * 365)
SPREAD = Key("float", 0, 10)
"""The standard deviation of a logarithm: 10 already spreads values over e^±20."""
SCALE = Key("float", 0, 100, open_low=True)
"""A similarity scale of the crowd model, in units of the gap between two true groups."""
URL = Key("str", prefixes=("http://", "https://"))

SCHEMA: dict[str, dict[str, Key]] = {
    "project": {"seed": Key("int", 0, 2**63 - 1)},
    "crowd": {
        "answers_per_pair": Key("int", 1, 1000),
        "reward": Key("float", 0, 1000),
        "budget": Key("float", 0, 1e9),
    },
    "aggregation": {
        "rule": Key("str", choices=rules.NAMES),  # the registry's list: a new rule joins it
        "alpha": OPEN_SHARE,
        "sided": Key("str", choices=("two-sided", "one-sided")),
        "method": Key("str", choices=("asymptotic", "exact", "auto")),
        "continuity": Key("bool"),
        "margin": Key("int", 1, 1000),
        "ties": Key("str", choices=("davidson", "rao-kupper")),
    },
    "fees": {"rate": SHARE, "rate_10_or_more": SHARE, "minimum": Key("float", 0, 1000)},
    "adaptive": {
        "method": Key("str", choices=("off", "curtail", "sequential")),
        "initial": Key("int", 1, 40),
        "step": Key("int", 1, 40),
        "maximum": Key("int", 1, 40),
        "alpha": OPEN_SHARE,
        "equal_share": Key("float", 0, 1, open_high=True),
        "futility": Key("float", 0, 1, open_high=True),
        "prior": Key("float", 0, 1000, open_low=True),
        "epsilon": Key("float", 0, 0.5, open_high=True),
    },
    "fragility": {
        "min_flips": Key("int", 0, 1000),
        "step": Key("int", 1, 1000),
        "maximum": Key("int", 1, 2000),
    },
    "prior": {
        "scores": Key("path", names_file=True),
        "skip": Key("bool"),
        "max_wrong": Key("float", 0, 0.5, open_low=True),
        "audit_share": Key("float", 0, 1, open_low=True),
        "min_verdicts": Key("int", 1, 1_000_000),
        "level": OPEN_SHARE,
        "weight": Key("float", 0, 100),
    },
    "systems": {
        "runs": Key("str"),
        "measure": Key("str"),
        "confidence": Key("float", 0.5, 1, open_low=True, open_high=True),
        "samples": Key("int", 10, 100_000),
        "max_pairs": Key("int", 1, 100_000_000),
    },
    "checks": {"share": SHARE, "max_per_batch": COUNT},
    "simulated": {
        "truth": Key("path", names_file=True),
        "seed": Key("int", 0, 2**63 - 1),
        "workers": Key("int", 1, 100_000),
        "careless_share": SHARE,
        "bots": Key("int", 0, 100_000),
        "bot_seconds": SECONDS,
        "noise": SCALE,
        "noise_spread": SPREAD,
        "equal_band": SCALE,
        "equal_spread": SPREAD,
        "position_bias": Key("float", -100, 100),
        "bias_spread": SPREAD,
        "median_seconds": SECONDS,
        "worker_seconds_spread": SPREAD,
        "answer_seconds_spread": SPREAD,
        "careless_seconds": SECONDS,
        "think_seconds": SECONDS,
        "activity": SPREAD,
        "completion_hours": HOURS,
        "round_hours": HOURS,
        "answers_per_hour": Key("float", 0, 1e6, open_low=True),
        "round_spread": SPREAD,
    },
    "mturk": {
        "lifetime_hours": Key("float", 1 / 60, 24 * 365),
        "duration_minutes": Key("float", 0.5, 24 * 60 * 365),
        "auto_approval_days": Key("float", 0, 30),
        "min_approval_rate": Key("int", 0, 100),
        "min_approved_hits": Key("int", 0, 100_000_000),
        "locales": Key("list[str]"),
        "region": Key("str"),
        "page_size": Key("int", 1, 100),
        "max_attempts": Key("int", 1, 100),
    },
    "hit": {
        **_strings(
            "title",
            "description",
            "keywords",
            "language",
            "instructions",
            "original_text",
            "original_warning",
            "original_label",
            "variations_text",
            "a_label",
            "b_label",
            "question",
            "choice_a",
            "choice_b",
            "choice_equal",
            "note",
            "optional_text",
            "background_question",
            "comment_question",
            "play_all_text",
            "ready_text",
            "preview_text",
            "played_text",
            "not_played_text",
            "submit_text",
            "reward_text",
        ),
        "show_reward": Key("bool"),
        "frame_height": Key("int", 100, 4000),
        "min_coverage": Key("float", 0, 1, open_low=True),
    },
    "web": {
        "timeout_minutes": Key("float", 0, 24 * 60 * 365, open_low=True),
        "questions_per_judge": COUNT,
        "completion_code": Key("str"),
        "completion_url": Key("str"),
        "participant_param": Key("str"),
        "base_url": URL,
        "advance": Key("bool"),
        "max_text": Key("int", 1, 1_000_000),
        "questions_per_batch": COUNT,
        "headphone_screen": Key("str", choices=("platform", "all", "off")),
        "headphone_trials": Key("int", 1, 10),
        "headphone_pass": Key("int", 1, 10),
        "randomise_sides": Key("bool"),
        "trusted_proxies": Key("list[str]"),
        "max_in_flight": Key("int", 1, 100_000),
    },
    "prolific": {
        "reward_per_hour": Key("float", 0, 1000, open_low=True),
        "currency": Key("str", choices=("GBP", "USD")),
        "seconds_per_question": SECONDS,
        "setup_minutes": Key("float", 0, 24 * 60),
        "fee_rate": SHARE,
        "name": Key("str"),
        "description": Key("str"),
        "devices": Key("list[str]"),
        "allowlist": Key("list[str]"),
        "blocklist": Key("list[str]"),
    },
    "review": {
        "reject_failed_checks": Key("bool"),
        "bot_min_answers": Key("int", 2, 1_000_000),
        "min_checks": Key("int", 1, 1_000_000),
        "max_failed_check_share": SHARE,
        "block": Key("list[str]"),
        "replace_rejected": Key("bool"),
        "approve": Key("bool"),
        "concurrency": Key("int", 1, 32),
        "check_feedback": Key("str"),
        "flag_each_round": Key("bool"),
        "max_unheard_share": Key("float", 0, 1),
    },
    "store": {"url": Key("str", prefixes=("postgresql://", "postgres://"))},
    "hosting": {
        "s3_bucket": Key("str"),
        "s3_prefix": Key("str"),
        "region": Key("str"),
        "url_expires_days": Key("float", 0, 7, open_low=True),
        "base_url": URL,
        "root": Key("str"),
    },
}
"""Every section of ``crowdprefs.toml`` and the keys each accepts."""


def _suggestion(name: str, known: list[str]) -> str:
    close = difflib.get_close_matches(name, known, n=1, cutoff=0.6)
    return f" (did you mean {close[0]!r}?)" if close else ""


REMOVED = {
    ("prior", "confidence"): "[prior] max_wrong now chooses the pairs the machine decides",
    ("prior", "max_overturn"): "[prior] max_wrong now bounds the share of wrong machine verdicts",
}
"""Settings that no longer exist, refused in one line naming what replaced them."""


def check_section(name: str, data: Any, source: str | Path) -> None:
    """Check one section's table against its schema; one line naming the first problem.

    ``source`` names the file in the message (``crowdprefs.toml``, a crowd-model file…).
    """
    keys = SCHEMA[name]
    if not isinstance(data, dict):
        raise InputError(f"{source}: [{name}] must be a table of settings, got {shown(data)}")
    for key, value in data.items():
        if (name, key) in REMOVED:
            raise InputError(f"{source}: [{name}] {key} was removed: {REMOVED[name, key]}")
        if key not in keys:
            raise InputError(
                f"{source}: unknown [{name}] setting {key}{_suggestion(key, list(keys))}"
            )
        if not keys[key].accepts(value):
            raise InputError(
                f"{source}: [{name}] {key} must be {keys[key].expected()}, got {shown(value)}"
            )


def check_settings(data: dict[str, Any], source: str | Path) -> None:
    """Check a whole parsed ``crowdprefs.toml`` against :data:`SCHEMA` (see the module doc)."""
    for name, table in data.items():
        if name not in SCHEMA:
            hint = _suggestion(name, list(SCHEMA))
            if not isinstance(table, dict):
                where = {key: section for section, keys in SCHEMA.items() for key in keys}
                close = difflib.get_close_matches(name, list(where), n=1, cutoff=0.6)
                hint = f" (did you mean [{where[close[0]]}] {close[0]}?)" if close else hint
                raise InputError(f"{source}: unknown top-level setting {name}{hint}")
            raise InputError(f"{source}: unknown section [{name}]{hint}")
        check_section(name, table, source)


def _plain(value: Any) -> Any:
    """``value`` as TOML would give it: numpy numbers as Python's, a tuple as a list."""
    if isinstance(value, numbers.Integral) and not isinstance(value, bool):
        return int(value)
    if isinstance(value, numbers.Real) and not isinstance(value, bool):
        return float(value)
    return list(value) if isinstance(value, tuple) else value


def check_values(section: str, settings: Any) -> None:
    """Check the fields of a section dataclass instance (``settings``) against
    ``SCHEMA[section]``; fields the schema does not declare are left to the class, and so is
    ``None`` in a field whose default is ``None`` (not set). One line
    naming the section, the key and what it expects, as :func:`check_section` words it but
    without a file: the values may come from ``crowdprefs.toml``, an option or a call."""
    keys = SCHEMA[section]
    for field in dataclasses.fields(settings):
        key = keys.get(field.name)
        value = getattr(settings, field.name)
        if value is None and field.default is None:
            continue
        if key is not None and not key.accepts(_plain(value)):
            raise InputError(
                f"[{section}] {field.name} must be {key.expected()}, got {shown(value)}"
            )


SETTINGS_KEY = "settings_at_next"
"""The state's ``meta`` key holding the settings the open batch was built under (JSON)."""


def settings_changes(before: dict[str, Any], after: dict[str, Any]) -> list[str]:
    """The settings whose value differs between two parsed settings files (sections of keys),
    each as ``[section] key old → new`` (``unset`` where a key is absent), sorted."""

    def flat(data: dict[str, Any]) -> dict[tuple[str, str], Any]:
        return {
            (section, key): value
            for section, table in data.items()
            if isinstance(table, dict)
            for key, value in table.items()
        }

    old, new = flat(before), flat(after)
    return [
        f"[{section}] {key} {shown(old.get((section, key), 'unset'))} → "
        f"{shown(new.get((section, key), 'unset'))}"
        for section, key in sorted(old.keys() | new.keys())
        if old.get((section, key)) != new.get((section, key))
    ]


MOVED = dict.fromkeys(
    ("remember_settings", "note_settings_changes"), "crowdprefs.campaign.project_state"
)
"""Functions that take a project, moved to :mod:`crowdprefs.campaign.project_state` (a value
module imports no project): name → its module."""
__getattr__ = moved_names(__name__, MOVED)
