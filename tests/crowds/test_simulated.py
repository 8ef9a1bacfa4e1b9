"""The simulated crowd's stored answers: the same for the same seed, however they are collected."""

from __future__ import annotations

import dataclasses
import hashlib
from datetime import UTC, datetime, timedelta, timezone

import numpy as np
import pandas as pd
import pytest
from sqlalchemy import text

from crowdprefs.campaign import driver
from crowdprefs.campaign.project import Project, init_project
from crowdprefs.crowds.simulated import SimulatedCrowd
from crowdprefs.demo import create_demo_project, make_collection
from crowdprefs.quality import crowd_model
from crowdprefs.quality.crowd_model import simulate_answers
from crowdprefs.quality.review import Reviewer

DIGEST = "7f88acfe6afee2e7ca6dc536bac1573aa52a77d4bd41836d2e7e878081000674"
"""The digest of :func:`answer_table` for the campaign of :func:`campaign`, as the crowd gave
it before its answers were streamed to the store in chunks: the same seed gives the same
answers."""


@pytest.fixture
def demo(tmp_path, engine) -> Project:
    """The demo project, on each engine (its state in PostgreSQL: made as the demo's)."""
    project = create_demo_project(tmp_path / "demo")
    if engine is not None:
        settings = project.settings
        project.close()
        project = init_project(
            tmp_path / "demo" / "on-postgresql",
            tmp_path / "demo" / "candidates.csv",
            seed=project.seed,
            settings=dataclasses.replace(
                settings, sections={"simulated": {"truth": "../truth.qrel"}}
            ),
            database=engine,
        )
    yield project
    project.close()


def campaign(project: Project) -> None:
    """A whole campaign that meets every path of the crowd: attention checks (x is the query),
    clips of known and unknown length, workers blocked and answers dropped then replaced."""
    sections = dict(project.settings.sections)
    sections["review"] = {"flag_each_round": True}
    sections["checks"] = {"share": 0.1}
    project.save_settings(dataclasses.replace(project.settings, sections=sections))
    with project.store.transaction() as conn:  # some clips' lengths are known
        conn.execute(text("UPDATE queries SET seconds = 4.0"))
        conn.execute(text("UPDATE candidates SET seconds = 6.5 WHERE document LIKE '%1'"))
    driver.run(project, SimulatedCrowd.for_project(project), review=Reviewer())


def answer_table(project: Project) -> pd.DataFrame:
    """Every stored answer (rejected ones too), its times as milliseconds after its HIT was
    published (the crowd's clock starts there)."""
    answers = project.store.answers(include_rejected=True)
    published = project.store.hits("simulated").set_index("pair_id")["created_at"]
    start = answers["pair_id"].map(published).map(datetime.fromisoformat)

    def after(column: str) -> pd.Series:
        times = answers[column].map(datetime.fromisoformat)
        return ((times - start).dt.total_seconds() * 1000).round().astype(np.int64)

    columns = ["pair_id", "assignment_id", "worker_id", "choice", "score", "seconds", "status"]
    return (
        answers[columns]
        .assign(accepted_ms=after("accepted_at"), submitted_ms=after("submitted_at"))
        .sort_values("assignment_id", ignore_index=True)
    )


def digest(table: pd.DataFrame) -> str:
    return hashlib.sha256(table.to_csv(index=False).encode()).hexdigest()


@pytest.mark.parametrize("chunk", [crowd_model.PAIRS_PER_CHUNK, 7])
def test_the_same_seed_gives_the_same_answers(demo, monkeypatch, chunk):
    monkeypatch.setattr(crowd_model, "PAIRS_PER_CHUNK", chunk)
    campaign(demo)
    table = answer_table(demo)
    assert len(table) > 1000 and table["status"].eq("rejected").any()
    assert demo.store.pairs()["kind"].eq("check").any()
    assert digest(table) == DIGEST


def test_streamed_answers_are_the_model_s_answers(demo, monkeypatch):
    """The answers stored chunk by chunk are :func:`simulate_answers`' frame for all pairs at
    once, whatever the chunk size."""
    monkeypatch.setattr(crowd_model, "PAIRS_PER_CHUNK", 7)
    crowd = SimulatedCrowd.for_project(demo)
    iteration = driver.next_batch(demo)
    driver.publish(demo, crowd)
    driver.collect(demo, crowd)
    pairs = demo.store.pairs(iteration)
    published = demo.store.hits("simulated")["created_at"].iloc[0]
    expected = simulate_answers(
        pairs.assign(listen_seconds=np.nan),
        crowd.similarity,
        crowd.pool,
        crowd.model,
        crowd.seed,
        published_at=datetime.fromisoformat(published),
    )
    stored = demo.store.answers()
    columns = [*expected.columns.drop("crowd")]
    key = "assignment_id"
    assert (
        stored[columns]
        .sort_values(key, ignore_index=True)
        .equals(expected[columns].sort_values(key, ignore_index=True))
    )


def test_random_truth_draws_the_groups_query_by_query_in_order_of_appearance():
    """The vectorised truth equals drawing each query's groups in turn (as it was drawn before,
    a frame per query), so a project's simulated truth is unchanged."""
    candidates = make_collection()[0].sample(frac=1.0, random_state=3)  # queries interleaved
    rng = np.random.default_rng([11, 0x7207])
    expected = pd.concat(
        [
            pd.DataFrame(
                {
                    "query": query,
                    "document": frame["document"].to_numpy(),
                    "group": rng.integers(1, max(1, round(len(frame) / 3)) + 1, len(frame)),
                }
            )
            for query, frame in candidates.groupby("query", sort=False)
        ],
        ignore_index=True,
    )
    assert crowd_model.random_truth(candidates, 11).equals(expected)


def test_times_are_rounded_as_python_rounds_them():
    rng = np.random.default_rng(8)
    hours = np.concatenate([rng.random(20_000) * 3.0, [0.5, 1.0, 2.5 / 3.6e9, 3.5 / 3.6e9]])
    seconds = np.concatenate([rng.lognormal(3.0, 1.0, 20_000), [8.0, 0.5e-6, 1.5e-6, 2.5e-6]])
    micro = crowd_model.whole_microseconds(hours, 3_600_000_000)
    assert micro.tolist() == [timedelta(hours=h) // timedelta(microseconds=1) for h in hours]
    micro = crowd_model.whole_microseconds(seconds, 1_000_000)
    assert micro.tolist() == [timedelta(seconds=s) // timedelta(microseconds=1) for s in seconds]
    for start in (datetime(2026, 5, 1, 9, 30, 0, 123000, tzinfo=UTC),
                  datetime(2026, 5, 1, 9, 30, tzinfo=timezone(timedelta(hours=-5))),
                  datetime(2026, 12, 31, 23, 59, 59, 999000)):  # fmt: skip
        expected = [
            (start + timedelta(microseconds=m)).isoformat(timespec="milliseconds")
            for m in micro.tolist()
        ]
        assert crowd_model.iso_times(start, micro).tolist() == expected
