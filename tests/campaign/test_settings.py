"""The typed schema of crowdprefs.toml: one line naming the file, the key and what it expects;
nothing coerced; misspellings get a suggestion; the schema lists exactly the keys each section's
reader takes."""

from __future__ import annotations

import math
from dataclasses import fields

import pytest

from crowdprefs.campaign.aggregate import AggregationRule
from crowdprefs.campaign.budget import FeeModel
from crowdprefs.campaign.checks import CheckSettings
from crowdprefs.campaign.settings import SCHEMA, check_settings
from crowdprefs.errors import InputError


@pytest.mark.parametrize(
    ("data", "says"),
    [
        ({"project": {"seed": "x"}}, "[project] seed must be a whole number in [0, "),
        ({"crowd": 5}, "[crowd] must be a table of settings, got 5"),
        ({"crowd": {"answers_per_pair": 2.5}}, "answers_per_pair must be a whole number"),
        ({"crowd": {"reward": True}}, "[crowd] reward must be a number in [0, 1000], got True"),
        ({"crowd": {"reward": math.inf}}, "got inf"),
        ({"crowd": {"budget": math.nan}}, "[crowd] budget must be a number in [0, "),
        ({"crowd": {"budjet": 3}}, "unknown [crowd] setting budjet (did you mean 'budget'?)"),
        ({"adaptiv": {"maximum": 3}}, "unknown section [adaptiv] (did you mean 'adaptive'?)"),
        ({"budjet": 3}, "unknown top-level setting budjet (did you mean [crowd] budget?)"),
        ({"adaptive": {"maximum": "x"}}, "[adaptive] maximum must be a whole number in [1, 40]"),
        ({"web": {"base_url": 5}}, "[web] base_url must be a text starting with http://"),
        ({"web": {"base_url": "ftp://x"}}, "got 'ftp://x'"),
        ({"review": {"bot_min_answers": "x"}}, "[review] bot_min_answers must be a whole number"),
        ({"aggregation": {"rule": "vote"}}, "one of 'mann-whitney', 'margin'"),
        ({"mturk": {"locales": ["US", 3]}}, "[mturk] locales must be a list of texts"),
        ({"hit": {"show_reward": 1}}, "[hit] show_reward must be true or false, got 1"),
    ],
)
def test_a_bad_setting_is_refused_in_one_line_naming_file_key_and_expectation(data, says):
    with pytest.raises(InputError) as refused:
        check_settings(data, "p/crowdprefs.toml")
    message = str(refused.value)
    assert message.startswith("p/crowdprefs.toml: ") and says in message
    assert "\n" not in message


def test_valid_settings_pass():
    check_settings(
        {
            "project": {"seed": 3},
            "crowd": {"answers_per_pair": 5, "reward": 0, "budget": 12.5},
            "adaptive": {"method": "sequential", "maximum": 10},
            "mturk": {"locales": ["US"]},
            "web": {"base_url": "https://example.org"},
        },
        "crowdprefs.toml",
    )


def test_the_schema_lists_exactly_the_keys_each_section_reader_takes():
    from crowdprefs.crowds.mturk.crowd import MTurkSettings
    from crowdprefs.crowds.prolific.study import ProlificSettings
    from crowdprefs.hits.render import HitSettings
    from crowdprefs.quality.crowd_model import CrowdModel
    from crowdprefs.quality.review import ReviewRules
    from crowdprefs.web.assign import WebSettings

    readers = {
        "aggregation": AggregationRule,
        "fees": FeeModel,
        "checks": CheckSettings,
        "mturk": MTurkSettings,
        "hit": HitSettings,
        "review": ReviewRules,
        "web": WebSettings,
        "prolific": ProlificSettings,
    }
    for section, reader in readers.items():
        assert set(SCHEMA[section]) == {f.name for f in fields(reader)}, section
    assert set(SCHEMA["simulated"]) == {f.name for f in fields(CrowdModel)} | {"truth", "seed"}
    from crowdprefs.campaign.adaptive import StoppingRule

    assert set(SCHEMA["adaptive"]) == {f.name for f in fields(StoppingRule)} - {"aggregation"}


def section_classes() -> dict[str, type]:
    from crowdprefs.campaign.adaptive import StoppingRule
    from crowdprefs.crowds.mturk.crowd import MTurkSettings
    from crowdprefs.crowds.prolific.study import ProlificSettings
    from crowdprefs.hits.render import HitSettings
    from crowdprefs.quality.crowd_model import CrowdModel
    from crowdprefs.quality.review import ReviewRules
    from crowdprefs.web.assign import WebSettings

    return {
        "aggregation": AggregationRule,
        "fees": FeeModel,
        "checks": CheckSettings,
        "adaptive": StoppingRule,
        "mturk": MTurkSettings,
        "hit": HitSettings,
        "review": ReviewRules,
        "web": WebSettings,
        "prolific": ProlificSettings,
        "simulated": CrowdModel,
    }


def out_of_range(key) -> object:
    """A value the schema's ``key`` refuses (of its kind when it has a range or choices)."""
    if key.choices:
        return "nonsense"
    if key.prefixes:
        return "ftp://example.org"
    if key.kind in ("int", "float") and key.low is not None:
        return int(key.low) - 1 if key.kind == "int" else key.low - 0.5
    if key.kind in ("int", "float") and key.high is not None:
        return key.high + 1
    return {"bool": "yes", "str": 5, "list[str]": "text"}.get(key.kind, "text")


def test_every_section_class_refuses_what_the_schema_refuses_in_the_schemas_words():
    for section, cls in section_classes().items():
        names = {f.name for f in fields(cls)}
        for name, key in SCHEMA[section].items():
            if name not in names:
                continue
            bad = out_of_range(key)
            with pytest.raises(InputError) as refused:
                cls(**{name: bad})
            message = str(refused.value)
            assert message.startswith(f"[{section}] {name} must be {key.expected()}, got "), message
            assert "crowdprefs.toml" not in message and "\n" not in message


def test_section_classes_take_numpy_numbers_and_tuples_as_a_call_gives_them():
    import numpy as np

    from crowdprefs.campaign.adaptive import StoppingRule
    from crowdprefs.crowds.prolific.study import ProlificSettings

    rule = StoppingRule(initial=np.int64(4), maximum=np.int64(8), alpha=np.float32(0.25))
    assert rule.looks == (4, 6, 8)
    assert AggregationRule(margin=np.int64(3)).margin == 3
    assert ProlificSettings(devices=("desktop", "tablet")).devices == ("desktop", "tablet")


def test_the_classes_keep_the_checks_that_relate_several_keys():
    from crowdprefs.campaign.adaptive import StoppingRule
    from crowdprefs.crowds.prolific.study import ProlificSettings
    from crowdprefs.web.assign import WebSettings

    with pytest.raises(InputError, match=r"initial \(6\) must not exceed maximum \(5\)"):
        StoppingRule(initial=6, maximum=5)
    with pytest.raises(InputError, match=r"headphone_pass \(3\) must not exceed headphone_trials"):
        WebSettings(headphone_trials=2)
    with pytest.raises(InputError, match="below Prolific's minimum of 8.00 USD"):
        ProlificSettings(currency="USD", reward_per_hour=7.0)
