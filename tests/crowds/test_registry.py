"""One registry of crowds: the command line offers exactly its names, each builds its adapter
and prices its HITs with its own fee model (the store chooses none)."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest
from console_script import crowdprefs

import crowdprefs as crowdprefs_package
from crowdprefs.campaign import driver
from crowdprefs.campaign.budget import FeeModel
from crowdprefs.crowds import CROWDS, REGISTRY, get_crowd
from crowdprefs.crowds.web import WebCrowd
from crowdprefs.demo import create_demo_project
from crowdprefs.errors import InputError


def test_every_registered_crowd_names_an_adapter_that_builds_itself():
    for name, address in REGISTRY.items():
        module, _, adapter = address.partition(":")
        cls = getattr(importlib.import_module(module), adapter)
        assert callable(cls.for_crowd), name


def test_the_command_line_offers_the_registrys_names(tmp_path):
    done = crowdprefs("run", tmp_path / "nowhere", "--crowd", "bogus")
    assert done.returncode != 0 and "Traceback" not in done.stderr
    assert f"is not one of {', '.join(CROWDS)}" in done.stderr.replace("\n", " ")


def test_get_crowd_builds_the_registered_adapters_and_refuses_others(tmp_path):
    with create_demo_project(tmp_path / "demo") as project:
        for name in ("simulated", "web"):
            crowd = get_crowd(name, project)
            assert crowd.name == name and callable(crowd.publish) and callable(crowd.collect)
        with pytest.raises(InputError, match="unknown crowd 'bogus': choose one of simulated"):
            get_crowd("bogus", project)
        with pytest.raises(InputError, match="needs the study terms"):
            get_crowd("prolific", project)


class DearerWeb(WebCrowd):
    """A web crowd charging its own fee terms (as a new platform would)."""

    def fees(self, project):
        return FeeModel(rate=0.5, rate_10_or_more=0.6, minimum=0.03)


def test_each_crowd_prices_its_hits_with_its_own_fee_model(tmp_path):
    with create_demo_project(tmp_path / "demo") as project:
        for name in CROWDS:
            module, _, adapter = REGISTRY[name].partition(":")
            assert callable(getattr(importlib.import_module(module), adapter).fees), name
        driver.next_batch(project)
        pairs = project.store.pairs(1)
        DearerWeb().publish(project, pairs)
        hits = project.store.hits("web")
        assert len(hits) == len(pairs)
        terms = hits[["fee_rate", "fee_rate_10_or_more", "fee_minimum"]].drop_duplicates()
        assert terms.values.tolist() == [[0.5, 0.6, 0.03]]
        assert (hits["reward"] == project.settings.reward).all()


def test_the_store_imports_no_crowds_fee_model():
    store = Path(crowdprefs_package.__file__).parent / "campaign" / "store"
    for path in store.glob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        imports = [n for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)]
        imported = {alias.name for node in imports for alias in node.names}
        assert "FeeModel" not in imported, path.name


@pytest.mark.parametrize(
    ("old", "name", "new"),
    [
        ("crowdprefs.campaign.store.web", "WebStore", "crowdprefs.crowds.web.store"),
        ("crowdprefs.campaign.store.web_records", "WebJudge", "crowdprefs.crowds.web.records"),
        ("crowdprefs.campaign.store.web_sql", "SQL", "crowdprefs.crowds.web.sql"),
        ("crowdprefs.campaign.store.prolific", "ProlificStore", "crowdprefs.crowds.prolific.store"),
        ("crowdprefs.crowds.prolific.crowd", "MIN_HOURLY", "crowdprefs.crowds.prolific.study"),
        ("crowdprefs.campaign.store.tables", "web_judges", "crowdprefs.crowds.web.tables"),
        (
            "crowdprefs.campaign.store.tables",
            "prolific_events",
            "crowdprefs.crowds.prolific.tables",
        ),
    ],
)
def test_a_moved_name_answers_at_its_old_address_with_a_warning(old, name, new):
    with pytest.warns(DeprecationWarning, match=f"{old}.{name} moved to {new}.{name}"):
        found = getattr(importlib.import_module(old), name)
    assert found is getattr(importlib.import_module(new), name)
