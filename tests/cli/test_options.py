"""The defaults the command line shows are the library's own (restated there to start fast)."""

from __future__ import annotations

from dataclasses import asdict

from crowdprefs.campaign.adaptive import StoppingRule
from crowdprefs.campaign.project import DEFAULT_SEED
from crowdprefs.cli import options
from crowdprefs.evaluation.gawm import MEANS
from crowdprefs.evaluation.measures import MAX_CUTOFF
from crowdprefs.evaluation.power import PROCEDURES
from crowdprefs.evaluation.stats import PAIRWISE_TESTS
from crowdprefs.machine.overturn import SkipRule
from crowdprefs.quality.planning import MAX_CAMPAIGNS
from crowdprefs.quality.stability import MAX_RESAMPLES
from crowdprefs.results_file import COLUMN_OPTIONS, Columns
from crowdprefs.web.assign import MAX_JUDGES


def test_the_restated_defaults_equal_the_librarys():
    assert options.DEFAULT_SEED == DEFAULT_SEED
    assert StoppingRule.alpha == options.SEQUENTIAL_ALPHA
    skip = (SkipRule.max_wrong, SkipRule.audit_share, SkipRule.min_verdicts)
    assert skip == (options.MAX_WRONG, options.AUDIT_SHARE, options.MIN_VERDICTS)
    assert StoppingRule.futility == options.SEQUENTIAL_FUTILITY
    assert {field: default for field, (_, default, _) in options.COLUMNS.items()} == asdict(
        Columns()
    )
    assert {field: option for field, (option, _, _) in options.COLUMNS.items()} == COLUMN_OPTIONS
    assert {name: p.description for name, p in PROCEDURES.items()} == options.PROCEDURES
    assert options.MEANS == MEANS
    assert options.PAIRWISE_TESTS == PAIRWISE_TESTS
    assert options.MAX_CAMPAIGNS == MAX_CAMPAIGNS
    assert options.MAX_RESAMPLES == MAX_RESAMPLES
    assert options.MAX_CUTOFF == MAX_CUTOFF
    assert options.MAX_JUDGES == MAX_JUDGES


def command_options() -> dict[str, dict[str, str]]:
    """``{"stats power": {"--seed": help, "-o": help, ...}}`` for every command."""
    import typer.main

    from crowdprefs.cli.app import app

    found: dict[str, dict[str, str]] = {}

    def walk(group, prefix: str) -> None:
        for name, command in group.commands.items():
            if hasattr(command, "commands"):
                walk(command, f"{prefix}{name} ")
                continue
            found[prefix + name] = {
                spelling: param.help or ""
                for param in command.params
                for spelling in (*param.opts, *param.secondary_opts)
                if spelling.startswith("-")
            }

    walk(typer.main.get_command(app), "")
    return found


def test_one_spelling_per_meaning_across_commands():
    options = command_options()
    significance = ["init", "audit", "replay", "plan", "evaluate", "stats test"]
    assert len({options[c]["--alpha"] for c in significance}) == 1
    assert "--level" not in options["plan"] and "--false-different-rate" in options["plan"]
    for command in ("export", "replay", "plan", "crowd-model fit", "preview", "stats power"):
        assert {"--output", "-o"} <= set(options[command]), command
    for command in ("audit", "import-answers", "replay", "crowd-model fit"):
        assert set(COLUMN_OPTIONS.values()) | {"--columns"} <= set(options[command]), command
    for command in ("status", "audit", "replay"):
        assert options[command]["--json"] == options["status"]["--json"]
    seeds = {c: o["--seed"] for c, o in options.items() if "--seed" in o}
    assert {"init", "demo", "plan", "compare-lists", "stats power"} <= set(seeds)
    assert len(set(seeds.values())) == 1
    assert {"--jobs", "-j"} <= set(options["demo"])
    assert "--step" not in options["stats power"] and "--size-step" in options["stats power"]


def test_rule_format_and_scale_each_mean_one_thing():
    options = command_options()
    rules = {c: o["--rule"] for c, o in options.items() if "--rule" in o}
    assert {"init", "plan", "audit", "replay", "crowd-model fit"} <= set(rules)
    assert all("verdict" in text for text in rules.values()), rules
    formats = {c for c, o in options.items() if "--format" in o}
    assert {"evaluate", "compare-lists", "stats test", "stats gawm"} <= formats
    assert not formats & {"audio prepare", "prepare"}
    assert {"--audio-format"} <= set(options["audio prepare"]) & set(options["prepare"])
    scales = {c: o["--scale"] for c, o in options.items() if "--scale" in o}
    assert set(scales) == {"mtc next", "mtc estimate", "mtc simulate", "mtc train", "mtc transfer"}
    assert len(set(scales.values())) == 1 and "fine" in next(iter(scales.values()))
    assert "--combine" in options["mtc estimate"] and "--combine" in options["mtc simulate"]
    assert "--divide-by" in options["stats gawm"]


def test_a_renamed_option_names_its_new_spelling(cli, tmp_path):
    for args, new in (
        (("mtc", "estimate", "--runs", tmp_path, "--rule", "min"), "--combine"),
        (("stats", "gawm", "--scores", tmp_path, "--scale", "100"), "--divide-by"),
        (("audio", "prepare", tmp_path, tmp_path / "out", "--format=ogg"), "--audio-format"),
        (("prepare", tmp_path, "--format", "ogg"), "--audio-format"),
    ):
        code, _, err = cli(*args)
        assert code == 2 and err.strip().endswith(f"it is now {new}"), (args, err)
        assert len(err.strip().splitlines()) == 1
