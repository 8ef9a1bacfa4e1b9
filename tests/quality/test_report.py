"""The audit's HTML page at scale: long tables capped on the page, written whole as CSV files
beside it (linked relatively, checked like the page), worker text escaped."""

from __future__ import annotations

import itertools
import sys

import numpy as np
import pandas as pd
import pytest

from crowdprefs.cli import main
from crowdprefs.files import Output
from crowdprefs.quality import audit as A
from crowdprefs.quality.report import LINKED_TABLES, render, table_files, write_report
from crowdprefs.results_file import FRAME_COLUMNS, write_results

T0 = pd.Timestamp("2010-04-14 10:00", tz="UTC")
HOSTILE = "<script>alert('x')</script>"


def intransitive(queries: int = 30, workers: int = 300) -> pd.DataFrame:
    """Queries of 6 candidates whose 15 pairs are each answered by 3 random workers (many
    non-transitive verdicts); one worker's id and one comment are hostile HTML."""
    rng = np.random.default_rng(5)
    pairs = list(itertools.combinations(range(6), 2))
    rows = []
    for q, (i, (x, y)), k in itertools.product(range(queries), enumerate(pairs), range(3)):
        pair = q * len(pairs) + i
        rows.append(
            {
                "pair_id": pair, "hit_id": f"H{pair}", "query": f"q{q}", "x": f"d{x}",
                "y": f"d{y}", "worker_id": f"w{(pair * 7 + k * 131) % workers}",
                "choice": rng.choice(["A", "B", "equal"], p=[0.45, 0.45, 0.1]),
            }
        )  # fmt: skip
    out = pd.DataFrame(rows)
    out.loc[0, "worker_id"] = "<b>w</b>"
    out["comment"] = ""
    out.loc[1, "comment"] = HOSTILE
    out = out.assign(
        iteration=pd.array(np.ones(len(out), dtype=int), dtype="Int64"), created_at=T0,
        max_assignments=3, reward=0.02, a_is_x=1, kind="sort", expected=np.nan,
        pivot_known=True, assignment_id=[f"as{i}" for i in range(len(out))],
        status="submitted", seconds=20.0, listen_seconds=np.nan, background="",
        accepted_at=T0, submitted_at=T0 + pd.Timedelta(minutes=1),
        score=out["choice"].map({"A": 1.0, "B": -1.0, "equal": 0.0}),
    )  # fmt: skip
    return out[list(FRAME_COLUMNS)]


@pytest.fixture(scope="module")
def result() -> A.Audit:
    return A.audit(intransitive())


def test_long_tables_show_their_first_rows_and_link_the_whole_csv(result):
    assert len(result.workers) > 20 and len(result.contradictions) > 20
    links = {name: f"r {name}.csv" for name in LINKED_TABLES}
    html = render(result, "t", top=10, links=links)
    assert html.count('<td class="text">q') <= 10 + 10  # triples and per-query rows, capped
    assert f"The first 10 of {len(result.workers)} rows." in html
    assert f"The first 10 of {len(result.contradictions)} rows." in html
    assert f"{len(result.contradictions)} non-transitive verdict triples" in html
    assert 'href="r%20workers.csv"' in html and 'href="r%20triples.csv"' in html
    whole = render(result, "t", top=10**6)
    assert "The first" not in whole and "href=" not in whole  # no cap, no files: as before
    assert len(html) < len(whole)


def test_report_and_its_tables_are_written_beside_it(result, tmp_path):
    report = Output(tmp_path / "report.html")
    files = table_files(report)
    assert {out.path.name for out in files.values()} == {
        f"report.{name}.csv" for name in LINKED_TABLES
    }
    write_report(result, "<i>campaign</i>", report, files)
    html = report.path.read_text()
    assert "<script>" not in html and "<b>w</b>" not in html and "<i>campaign" not in html
    assert 'href="report.workers.csv"' in html and 'href="report.triples.csv"' in html
    workers = pd.read_csv(tmp_path / "report.workers.csv")
    assert len(workers) == len(result.workers) and "<b>w</b>" in set(workers["worker_id"])
    triples = pd.read_csv(tmp_path / "report.triples.csv")
    assert len(triples) == len(result.contradictions)
    comments = pd.read_csv(tmp_path / "report.comments.csv")
    assert comments["comment"].tolist() == [HOSTILE]
    per_worker = pd.read_csv(tmp_path / "report.transitivity-workers.csv")
    assert per_worker["violations"].is_monotonic_decreasing


def run_cli(capsys, monkeypatch, *args: str) -> tuple[int, str, str]:
    monkeypatch.setattr(sys, "argv", ["crowdprefs", *map(str, args)])
    with pytest.raises(SystemExit) as stop:
        main()
    out = capsys.readouterr()
    return stop.value.code, out.out, out.err


def test_cli_html_writes_the_tables_and_never_over_an_input(tmp_path, capsys, monkeypatch):
    write_results(intransitive(queries=3, workers=20), tmp_path / "r.workers.csv")
    answers = tmp_path / "r.workers.csv"
    before = answers.read_bytes()
    code, _, err = run_cli(capsys, monkeypatch, "audit", "--answers", answers, "--html",
                           tmp_path / "r.html")  # fmt: skip
    assert code != 0 and "r.workers.csv" in err and "input" in err
    assert answers.read_bytes() == before and not (tmp_path / "r.html").exists()
    code, _, err = run_cli(capsys, monkeypatch, "audit", "--answers", answers, "--html",
                           tmp_path / "page.html")  # fmt: skip
    assert code == 0, err
    assert {p.name for p in tmp_path.iterdir()} == {
        "r.workers.csv", "page.html", *(f"page.{name}.csv" for name in LINKED_TABLES)
    }  # fmt: skip
