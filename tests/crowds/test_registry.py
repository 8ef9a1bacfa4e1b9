"""One registry of crowds: the command line offers exactly its names, each builds its adapter."""

from __future__ import annotations

import importlib

import pytest
from console_script import crowdprefs

from crowdprefs.crowds import CROWDS, REGISTRY, get_crowd
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
