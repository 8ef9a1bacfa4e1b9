"""The demo tells each stage as it ends, not all of them at the end (issue 33, a newcomer's
snag): :func:`crowdprefs.demo.run_demo` calls ``stage`` in order, the campaign's progress
falling between the collection and the campaign's report (and the campaign that knows the
systems' before the evaluation's), and ``crowdprefs demo`` prints them."""

from __future__ import annotations

from crowdprefs.demo import STAGES, DemoOptions, run_demo


def test_each_stage_is_reported_when_it_ends_with_what_it_made(tmp_path):
    events: list[str] = []
    produced: dict[str, dict] = {}

    def stage(name: str, made: dict) -> None:
        events.append(name)
        produced[name] = made

    result = run_demo(
        tmp_path / "d",
        DemoOptions(audio=False),
        lambda what, done, total: events.append("progress"),
        stage,
    )
    names = [e for e in events if e != "progress"]
    assert names == list(STAGES)
    at = {name: events.index(name) for name in names}
    ticks = [i for i, event in enumerate(events) if event == "progress"]
    assert at["clips"] < ticks[0] < at["campaign"]  # the campaign's, as it runs
    assert all(
        at["clips"] < i < at["campaign"] or at["audit"] < i < at["evaluation"] for i in ticks
    )
    for name, fields in STAGES.items():
        assert set(produced[name]) == set(fields), name
        for field in fields:
            assert getattr(result, field) is produced[name][field], field


def test_the_console_script_prints_every_stage_in_order(cli, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code, out, err = cli("demo", "d", "--no-audio", columns=100)
    assert code == 0, err
    heads = ["1. collection", "3. campaign", "4. HIT previews", "5. worker audit", "6. evaluation"]
    assert [out.index(head) for head in heads] == sorted(out.index(head) for head in heads)
    assert out.rstrip().splitlines()[-1].startswith("demo finished in")
    code, out, err = cli("demo", "d", "--no-audio", columns=100)
    assert code == 0 and "resuming the demo in d" in err and "1. collection" in out
