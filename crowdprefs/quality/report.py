"""The audit as an HTML page (no scripts) and, beside it, its long tables as CSV files.

Tables come from :class:`crowdprefs.quality.audit.Audit`; plots (agreement per iteration, each
worker's median work time against their agreement with the verdicts, option shares per iteration)
are drawn with matplotlib and embedded as base64 PNG. The template is rendered by jinja2 with
autoescaping on, so worker text (background, comments, ids) is always escaped.

Tables that grow with the campaign (workers, flags, comments, transitivity per query and per
worker, non-transitive triples) show their first :data:`TOP_ROWS` rows (the busiest workers, the
most violated queries and workers first); each is written whole as ``STEM.NAME.csv`` beside the
page (:func:`table_files`, :data:`LINKED_TABLES`) and linked with a relative link, so a campaign
of 100,000 answers gives a page of a few hundred kilobytes.
"""

from __future__ import annotations

import base64
import io
from collections.abc import Mapping
from urllib.parse import quote

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from jinja2 import Environment  # noqa: E402

from crowdprefs.campaign.aggregate import usable  # noqa: E402
from crowdprefs.files import Output  # noqa: E402
from crowdprefs.io import csv_text  # noqa: E402
from crowdprefs.quality.agreement import agreement_summary  # noqa: E402
from crowdprefs.quality.audit import Audit  # noqa: E402
from crowdprefs.quality.frames import CHOICES  # noqa: E402
from crowdprefs.quality.iterations import ITERATION_CELLS, table_2_cells  # noqa: E402
from crowdprefs.quality.transitivity import overall_rate  # noqa: E402

TOP_ROWS = 200
"""Rows a long table shows on the page; the whole table is in its CSV file beside it."""

LINKED_TABLES = (
    "workers",
    "flags",
    "comments",
    "transitivity-queries",
    "transitivity-workers",
    "triples",
    "fragile-pairs",
    "lists",
    "list-boundaries",
)
"""The tables written whole beside the page, each as ``STEM.NAME.csv``."""

TEMPLATE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<title>crowdprefs audit: {{ title }}</title>
<style>
body { font-family: system-ui, sans-serif; margin: 2em auto; max-width: 72em; color: #222; }
table { border-collapse: collapse; margin: 1em 0; font-size: 0.9em; }
th, td { border: 1px solid #ccc; padding: 0.25em 0.6em; text-align: right; }
th { background: #f0f0f0; } td.text { text-align: left; max-width: 30em; }
tr.total td { font-weight: bold; border-top: 2px solid #888; }
.flag { color: #a00; } figure { display: inline-block; margin: 0.5em; }
</style></head><body>
{% macro shown(table, count) %}{% if count > top or links.get(table) %}<p>
{%- if count > top %}The first {{ top }} of {{ count }} rows. {% endif %}
{%- if links.get(table) %}<a href="{{ links[table] }}">All {{ count }} rows as CSV</a>.
{%- endif %}</p>{% endif %}{% endmacro %}
<h1>Audit of {{ title }}</h1>
<p>{{ facts.answers }} answers ({{ facts.empty_answers }} empty, {{ facts.rejected_answers }}
rejected) by {{ facts.workers }} workers; {{ flagged }} workers flagged;
{{ triples_total }} non-transitive verdict triples.</p>

<h2>Iterations</h2>
<p>The total row sums pairs, answers, completion times and costs, counts unique workers, and
averages the iterations' previous-worker shares, median times and agreements.
α: Krippendorff (ordinal, A &lt; equal &lt; B as shown); κ: Fleiss.</p>
<table><tr>{% for h in iteration_heads %}<th>{{ h }}</th>{% endfor %}</tr>
{% for row in iterations %}<tr{% if row[0] == 'total' %} class="total"{% endif %}>
{% for cell in row %}<td>{{ cell }}</td>{% endfor %}</tr>{% endfor %}</table>
{% for name, png in plots %}<figure><img alt="{{ name }}" src="data:image/png;base64,{{ png }}">
<figcaption>{{ name }}</figcaption></figure>{% endfor %}

<h2>Flagged workers</h2>
{{ shown('flags', flags_total) }}
{% if flags %}<table><tr><th>worker</th><th>flag</th><th>evidence</th></tr>
{% for w, f, e in flags %}<tr><td class="text">{{ w }}</td><td class="text flag">{{ f }}</td>
<td class="text">{{ e }}</td></tr>{% endfor %}</table>{% else %}<p>None.</p>{% endif %}

{% if reference %}<h2>Agreement with the reference lists</h2>
{% for name, rows, columns, summary in reference %}<h3>{{ name }}</h3>
<table><tr><th>reference \\ workers</th>{% for c in columns %}<th>{{ c }}</th>{% endfor %}</tr>
{% for row in rows %}<tr>{% for cell in row %}<td>{{ cell }}</td>{% endfor %}</tr>{% endfor %}
</table><p>complete {{ summary.complete }}, partial {{ summary.partial }}, none
{{ summary.none }}: agreement {{ '%.3f'|format(summary.score) }}</p>{% endfor %}{% endif %}

<h2>Workers</h2>
{{ shown('workers', workers_total) }}
<table><tr>{% for h in worker_heads %}<th>{{ h }}</th>{% endfor %}</tr>
{% for row in workers %}<tr>{% for cell in row[:-1] %}<td>{{ cell }}</td>{% endfor %}
<td class="text">{{ row[-1] }}</td></tr>{% endfor %}</table>

{% if comments %}<h2>Worker comments</h2>
{{ shown('comments', comments_total) }}<table><tr><th>worker</th><th>comment</th></tr>
{% for w, c in comments %}<tr><td class="text">{{ w }}</td><td class="text">{{ c }}</td></tr>
{% endfor %}</table>{% endif %}

<h2>Transitivity</h2>
<p>Three candidates whose three pairs were all judged form a complete triple; it violates
transitivity when no weak order fits the judgments (a &gt; b and b &gt; c but a ≤ c; a = b and
b = c but a ≠ c). Per query over its verdicts, per worker over their own answers.</p>
{% for name, heads, rows, total, table, count in transitivity %}<h3>{{ name }}: {{ total }}</h3>
{{ shown(table, count) }}
{% if rows %}<table><tr>{% for h in heads %}<th>{{ h }}</th>{% endfor %}</tr>
{% for row in rows %}<tr><td class="text">{{ row[0] }}</td>{% for cell in row[1:] %}
<td>{{ cell }}</td>{% endfor %}</tr>{% endfor %}</table>{% endif %}{% endfor %}

{% if sure %}<h2>How sure the lists are</h2>
<p>Of {{ sure.summary.pairs }} sorting verdicts, changing 1 / 2 / 3 answers can change
{{ sure.summary.pairs_flips_within['1'] }} / {{ sure.summary.pairs_flips_within['2'] }} /
{{ sure.summary.pairs_flips_within['3'] }}; removing them,
{{ sure.summary.pairs_removals_within['1'] }} / {{ sure.summary.pairs_removals_within['2'] }} /
{{ sure.summary.pairs_removals_within['3'] }}.
{% if sure.summary.resamples %}Over {{ sure.summary.resamples }} bootstrap crowds (workers
resampled with their answers, the sort replayed)
{{ '%.0f'|format(100 * sure.summary.boundaries_kept) }}% of the group boundaries reappear and
the expected ADR of a resampled list against the published one is
{{ '%.3f'|format(sure.summary.expected_adr) }}.{% endif %}</p>
<h3>Lists</h3>
<p>The fewest answers whose removal (change) moves a group boundary, or the top group; – when no
change of one pair's answers does.</p>
{{ shown('lists', sure.lists_total) }}
<table><tr>{% for h in sure.list_heads %}<th>{{ h }}</th>{% endfor %}</tr>
{% for row in sure.lists %}<tr><td class="text">{{ row[0] }}</td>{% for cell in row[1:] %}
<td>{{ cell }}</td>{% endfor %}</tr>{% endfor %}</table>
<h3>The most fragile verdicts</h3>
{{ shown('fragile-pairs', sure.pairs_total) }}
<table><tr>{% for h in sure.pair_heads %}<th>{{ h }}</th>{% endfor %}</tr>
{% for row in sure.pairs %}<tr>{% for cell in row[:3] %}<td class="text">{{ cell }}</td>
{% endfor %}{% for cell in row[3:] %}<td>{{ cell }}</td>{% endfor %}</tr>{% endfor %}</table>
{% endif %}

{% if contradictions %}<h2>Non-transitive verdicts</h2>
{{ shown('triples', triples_total) }}
<table><tr><th>query</th><th>a</th><th>b</th><th>c</th></tr>
{% for row in contradictions %}<tr>{% for cell in row %}<td class="text">{{ cell }}</td>
{% endfor %}</tr>{% endfor %}</table>{% endif %}
</body></html>
"""


def _png(figure) -> str:
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=90, bbox_inches="tight")
    plt.close(figure)
    return base64.b64encode(buffer.getvalue()).decode("ascii")


def _fmt(value) -> str:
    if value is None or (isinstance(value, float | np.floating) and np.isnan(value)):
        return "–"
    if isinstance(value, float | np.floating):
        return f"{value:.3f}".rstrip("0").rstrip(".") if value != int(value) else f"{value:g}"
    return str(value)


def plots(result: Audit) -> list[tuple[str, str]]:
    """``(caption, base64 PNG)`` of the report's figures."""
    answers = result.answers
    rows = result.iterations[result.iterations["iteration"] != "total"]
    figures = []
    fig, ax = plt.subplots(figsize=(5, 3))
    ax.plot(rows["iteration"].astype(int), rows["agreement"].astype(float), "o-", label="§5.3")
    ax.plot(rows["iteration"].astype(int), rows["alpha"].astype(float), "s--", label="α")
    ax.plot(rows["iteration"].astype(int), rows["kappa"].astype(float), "^:", label="κ")
    ax.set(xlabel="iteration", ylabel="agreement", ylim=(min(0, ax.get_ylim()[0]), 1))
    ax.legend()
    figures.append(("agreement per iteration", _png(fig)))

    workers = result.workers
    flagged = workers.index.isin(result.flags["worker_id"])
    fig, ax = plt.subplots(figsize=(5, 3))
    size = 10 + 40 * np.sqrt(workers["answers"] / max(1, workers["answers"].max()))
    ax.scatter(
        workers.loc[~flagged, "median_seconds"],
        workers.loc[~flagged, "verdict_agreement"],
        s=size[~flagged],
        alpha=0.6,
        label="not flagged",
    )
    ax.scatter(
        workers.loc[flagged, "median_seconds"],
        workers.loc[flagged, "verdict_agreement"],
        s=size[flagged],
        c="red",
        marker="x",
        label="flagged",
    )
    ax.set(xlabel="median work time (s)", ylabel="agreement with verdicts")
    ax.legend()
    figures.append(("worker time vs agreement (size: answers)", _png(fig)))

    if answers is not None:
        good = usable(answers)
        shares = pd.crosstab(good["iteration"], good["choice"], normalize="index").reindex(
            columns=CHOICES, fill_value=0.0
        )
        fig, ax = plt.subplots(figsize=(5, 3))
        bottom = np.zeros(len(shares))
        for choice in CHOICES:
            ax.bar(shares.index.astype(int), shares[choice], bottom=bottom, label=choice)
            bottom += shares[choice].to_numpy()
        ax.set(xlabel="iteration", ylabel="share of answers")
        ax.legend()
        figures.append(("option shares per iteration", _png(fig)))
    return figures


def table_files(report: Output) -> dict[str, Output]:
    """The CSV file of each of :data:`LINKED_TABLES` beside ``report`` (``STEM.NAME.csv``), each
    checked like the report (with its inputs) before any work."""
    path = report.path
    return {
        name: Output(path.with_name(f"{path.stem}.{name}.csv"), inputs=report.inputs)
        for name in LINKED_TABLES
    }


def linked_tables(result: Audit) -> dict[str, pd.DataFrame]:
    """The whole tables the page caps, by :data:`LINKED_TABLES` name."""
    comments = pd.DataFrame(columns=["worker_id", "comment"])
    if result.answers is not None:
        given = result.answers[result.answers["comment"].fillna("") != ""]
        comments = given[["worker_id", "comment"]]
    return {
        "workers": result.workers.reset_index(),
        "flags": result.flags,
        "comments": comments,
        "transitivity-queries": _by_violations(result.transitivity.get("queries")).reset_index(),
        "transitivity-workers": _by_violations(result.transitivity.get("workers")).reset_index(),
        "triples": result.contradictions,
        **_sureness_tables(result),
    }


def _sureness_tables(result: Audit) -> dict[str, pd.DataFrame]:
    """The fragility and stability tables (empty when the audit has none)."""
    sure = result.sureness
    if sure is None:
        return {name: pd.DataFrame() for name in ("fragile-pairs", "lists", "list-boundaries")}
    return {"fragile-pairs": sure.pairs, "lists": sure.lists, "list-boundaries": sure.boundaries}


def _sureness(result: Audit, top: int) -> dict | None:
    """What the page shows of how sure the lists are (:func:`crowdprefs.quality.audit.how_sure`)."""
    sure = result.sureness
    if sure is None:
        return None
    lists = sure.lists.sort_values(["flips", "removals"], kind="stable", na_position="last")
    pairs = sure.pairs[["query", "x", "y", "verdict", "more", "equal", "less", "flips", "removals"]]
    return {
        "summary": sure.summary,
        "list_heads": list(lists.columns),
        "lists": [[_fmt(v) for v in row] for row in lists.head(top).itertuples(index=False)],
        "lists_total": len(lists),
        "pair_heads": ["query", "x", "y", "verdict", "more", "equal", "less", "changed", "removed"],
        "pairs": [[_fmt(v) for v in row] for row in pairs.head(top).itertuples(index=False)],
        "pairs_total": len(pairs),
    }


def _by_violations(rates: pd.DataFrame | None) -> pd.DataFrame:
    """A transitivity table's judged rows, the most violations first."""
    if rates is None:
        return pd.DataFrame()
    judged = rates[rates["triples"] > 0]
    return judged.sort_values(["violations", "triples"], ascending=False, kind="stable")


def write_report(result: Audit, title: str, report: Output, files: Mapping[str, Output]) -> None:
    """Write the page to ``report`` and each table of ``files`` (:func:`table_files`) whole as
    CSV, the page linking them by their names (relative links)."""
    tables = linked_tables(result)
    for name, out in files.items():
        out.write(csv_text(tables[name]))
    report.write(render(result, title, links={name: out.path.name for name, out in files.items()}))


def render(
    result: Audit, title: str, top: int = TOP_ROWS, links: Mapping[str, str] | None = None
) -> str:
    """The HTML report of an audit: long tables show their first ``top`` rows and link to
    ``links[name]`` (a file name beside the page, :data:`LINKED_TABLES`) when given."""
    answers = result.answers
    environment = Environment(autoescape=True)
    worker_columns = [
        "answers",
        "empty",
        "rejected",
        "share_A",
        "share_equal",
        "share_B",
        "position_bias",
        "median_seconds",
        "min_seconds",
        "listen_ratio",
        "listen_coverage",
        "unheard",
        "verdict_agreement",
        "checks",
        "check_failures",
        "iterations",
        "background_class",
        "background",
    ]
    workers = result.workers[worker_columns]
    reference = []
    for name, table in result.reference.items():
        totals = table.sum(axis=1)
        rows = [
            [f"{label} ({int(totals[label])})"]
            + [f"{int(v)} ({v / totals[label]:.0%})" if totals[label] else "0" for v in values]
            for label, values in table.iterrows()
        ]
        columns = [f"{c} ({int(table[c].sum())})" for c in table.columns]
        reference.append((name, rows, columns, agreement_summary(table)))
    transitivity = []
    for name, rates in result.transitivity.items():
        judged = _by_violations(rates)
        rate = overall_rate(rates)
        total = (
            f"{_fmt(rate)} of {int(judged['triples'].sum())} complete triples violated"
            if len(judged)
            else "no complete triple"
        )
        shown = judged.head(top)
        rows = [[key, *(_fmt(v) for v in row)] for key, row in zip(
            shown.index, shown.itertuples(index=False), strict=True
        )]  # fmt: skip
        heads = [rates.index.name, *rates.columns]
        table = f"transitivity-{name}"
        transitivity.append(
            (f"per {'query' if name == 'queries' else 'worker'}", heads, rows, total, table,
             len(judged))
        )  # fmt: skip
    comments = []
    if answers is not None:
        given = answers[answers["comment"].fillna("") != ""]
        comments = list(given[["worker_id", "comment"]].itertuples(index=False, name=None))
    shown_workers = workers.head(top)
    return environment.from_string(TEMPLATE).render(
        title=title,
        top=top,
        links={name: quote(file) for name, file in (links or {}).items()},
        facts=result.facts,
        flagged=result.flags["worker_id"].nunique(),
        iteration_heads=ITERATION_CELLS,
        iterations=[table_2_cells(row) for row in result.iterations.to_dict(orient="records")],
        plots=plots(result),
        flags=list(result.flags.head(top).itertuples(index=False, name=None)),
        flags_total=len(result.flags),
        reference=reference,
        worker_heads=["worker", *worker_columns],
        workers=[
            [worker, *(_fmt(v) for v in row)]
            for worker, row in zip(
                shown_workers.index, shown_workers.itertuples(index=False), strict=True
            )
        ],
        workers_total=len(workers),
        comments=comments[:top],
        comments_total=len(comments),
        transitivity=transitivity,
        contradictions=list(result.contradictions.head(top).itertuples(index=False, name=None)),
        triples_total=len(result.contradictions),
        sure=_sureness(result, top),
    )
