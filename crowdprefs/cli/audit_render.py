"""How the audit command shows an audit: the per-iteration tables (Table 2 of the
preference-judgments paper), the workers, the sureness of the verdicts and the rates."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.table import Table

from crowdprefs.cli.console import console, escape

if TYPE_CHECKING:
    import pandas as pd

    from crowdprefs.quality.audit import Audit, Sureness


#: Headings of the cells of :func:`crowdprefs.quality.iterations.table_2_cells`, in their order.
ITERATION_HEADS = (
    "iter.",
    "pairs",
    "answers",
    "workers",
    "earlier workers",
    "med. s",
    "crowd time",
    "since created",
    "agreement",
    "Krippendorff α",
    "Fleiss κ",
    "cost $",
)
#: The columns shown without --wide (they fit 80 columns).
NARROW = ("iter.", "pairs", "answers", "workers", "med. s", "crowd time", "agreement", "cost $")


def _iteration_table(result: Audit, title: str, heads: tuple[str, ...]) -> Table:
    """The iteration table with the columns ``heads`` (of :data:`ITERATION_HEADS`)."""
    from crowdprefs.quality.iterations import table_2_cells

    shown = [ITERATION_HEADS.index(head) for head in heads]
    table = Table(title=title)
    for i in shown:
        table.add_column(ITERATION_HEADS[i], justify="right")
    rows = result.iterations.to_dict(orient="records")
    for number, row in enumerate(rows, start=1):
        cells = table_2_cells(row)
        table.add_row(*(cells[i] for i in shown), end_section=number == len(rows) - 1)
    return table


def _natural_width(table: Table) -> int:
    """The width ``table`` takes when nothing is cut or wrapped."""
    from rich.measure import Measurement

    return Measurement.get(console, console.options.update_width(10_000), table).maximum


def _iteration_tables(result: Audit, title: str, wide: bool) -> list[Table]:
    """The iteration table: the columns that fit 80 columns; with ``wide`` every column, in a
    second table when one does not fit the terminal."""
    title = f"{escape(title)}: each iteration and the campaign in total"
    tables = [_iteration_table(result, title, ITERATION_HEADS if wide else NARROW)]
    if wide and _natural_width(tables[0]) > console.width:
        rest = ("iter.", *(head for head in ITERATION_HEADS if head not in NARROW))
        tables = [
            _iteration_table(result, title, NARROW),
            _iteration_table(result, "the other columns", rest),
        ]
    tables[-1].caption = (
        "med. s: median work time per answer; agreement: among each pair's answers; crowd time: "
        "first accept to last submit; since created: from the HITs' creation, waiting included"
        + ("" if wide else " (--wide: every column)")
    )
    return tables


#: Rows of the worker table shown (the lowest agreements); --json and --csv-dir give all.
WORKER_ROWS = 10


def _worker_table(workers: pd.DataFrame) -> Table:
    """The workers whose answers agree least with the pairs' verdicts: answers, agreement,
    share of "equal", position bias and median work time."""
    shown = workers.sort_values(
        ["verdict_agreement", "answers"], ascending=[True, False], na_position="last"
    ).head(WORKER_ROWS)
    table = Table(
        title=f"workers ({len(workers)})"
        + (f": the {WORKER_ROWS} lowest agreements" if len(workers) > WORKER_ROWS else ""),
        caption="agree.: with the pairs' verdicts (1 = always, ½ for 'equal' against a side); "
        "equal: share of 'equal' answers; bias: share of A − share of B (all workers: --json "
        "or --csv-dir)",
    )
    table.add_column("worker", overflow="fold")
    for head in ("answers", "agree.", "equal", "bias", "med. s"):
        table.add_column(head, justify="right", no_wrap=True)

    def cell(value: float, text: str) -> str:
        return "–" if value != value else text  # NaN: unknown

    for worker, row in shown.iterrows():
        table.add_row(
            escape(str(worker)),
            str(int(row["answers"])),
            cell(row["verdict_agreement"], f"{row['verdict_agreement']:.3f}"),
            cell(row["share_equal"], f"{row['share_equal']:.0%}"),
            cell(row["position_bias"], f"{row['position_bias']:+.2f}"),
            cell(row["median_seconds"], f"{row['median_seconds']:.1f}"),
        )
    return table


def render_audit(result: Audit, title: str, wide: bool) -> None:
    from crowdprefs.quality.agreement import agreement_summary
    from crowdprefs.quality.iterations import duration, money

    for table in _iteration_tables(result, title, wide):
        console.print(table)
    console.print(_worker_table(result.workers))
    flags = Table(title=f"flagged workers ({result.flags['worker_id'].nunique()})")
    flags.add_column("worker", overflow="fold")
    flags.add_column("flag", no_wrap=True)
    flags.add_column("evidence")
    for worker, flag, evidence in result.flags.itertuples(index=False):
        flags.add_row(escape(worker), flag, escape(evidence))
    console.print(flags)
    for name, confusion in result.reference.items():
        summary = agreement_summary(confusion)
        matrix = Table(
            title=f"reference (rows) vs workers (columns): {escape(name)}",
            caption="less: ranked before the other (more similar); greater: ranked after",
        )
        matrix.add_column("reference")
        totals = confusion.sum(axis=1)
        for column in confusion.columns:
            matrix.add_column(f"{column} ({int(confusion[column].sum())})", justify="right")
        for label, values in confusion.iterrows():
            matrix.add_row(
                f"{label} ({int(totals[label])})",
                *(f"{int(v)} ({v / totals[label]:.0%})" if totals[label] else "0" for v in values),
            )
        console.print(matrix)
        console.print(
            f"  complete {summary['complete']}, partial {summary['partial']}, none "
            f"{summary['none']}: agreement {summary['score']:.3f}"
        )
    for name, rates in result.transitivity.items():
        _render_rates(name, rates)
    if result.sureness is not None:
        _render_sureness(result.sureness)
    facts = result.facts
    if "machine" in facts:
        from crowdprefs.campaign.prior import audit_line

        console.print(escape(audit_line(facts["machine"])), highlight=False, soft_wrap=True)
    median = facts["overall_median_seconds"]
    total = result.iterations.iloc[-1]
    cost = money(total["cost"])
    console.print(
        (
            "cost: unknown (the file has no reward: give --reward)"
            if cost == "unknown"
            else f"cost: ${cost} in total"
        )
        + f"; crowd time {duration(total['crowd_seconds'])}, time since the HITs were "
        f"created {duration(total['completion_seconds'])}"
    )
    console.print(
        f"{facts['answers']} answers ({facts['empty_answers']} empty, {facts['rejected_answers']}"
        f" rejected) by {facts['workers']} workers; {len(result.contradictions)} non-transitive "
        "verdict triples; median work time "
        + ("unknown" if median != median else f"{median:.1f} s")  # NaN: no work times
    )


#: Rows of each transitivity table shown (the highest rates); --json and --csv-dir give all.
TRANSITIVITY_ROWS = 10
#: Rows of the fragile verdicts and of the lists shown; --json, --csv-dir and --html give all.
SURENESS_ROWS = 10
VERDICT_WORDS = {1: "x more similar", 0: "equal", -1: "y more similar"}


def _count(value) -> str:
    import pandas as pd

    return "–" if pd.isna(value) else str(int(value))


def _render_sureness(sureness: Sureness) -> None:
    """The most fragile lists and verdicts, and how many one to three answers can change."""
    summary = sureness.summary
    within = summary["pairs_flips_within"]
    console.print(
        (
            "fragility"
            if summary["exact"]
            else "fragility (approximate: refits confirm an upper bound)"
        )
        + f": of {summary['pairs']} sorting verdicts, changing 1 / 2 / 3 answers can "
        f"change {within['1']} / {within['2']} / {within['3']} (removing them: "
        + " / ".join(str(v) for v in summary["pairs_removals_within"].values())
        + f"); {summary['lists_flips_within']['1']} of {summary['lists']} lists change with one "
        "changed answer",
        highlight=False,
    )
    lists = sureness.lists
    if not len(lists):
        console.print("no closed list to judge (a file's lists are replayed from its pivots)")
    else:
        stable = "expected_adr" in lists
        table = Table(
            title="how sure the lists are: the fewest answers that change a group boundary "
            "(the top group)"
            + (f", and {summary['resamples']} resampled crowds" if stable else ""),
            caption="list, top: answers removed / changed (–: no change of one pair reaches it)"
            + (
                "; kept: boundaries that reappear; same: whole lists rebuilt; ADR: mean "
                "(middle 90%)"
                if stable
                else ""
            )
            + ("" if summary["exact"] else "; approximate (bradley-terry)"),
        )
        heads = ["query", "groups", "list", "top"]
        heads += ["kept", "same", "expected ADR"] if stable else []
        for head in heads:
            table.add_column(head, justify="left" if head == "query" else "right")
        ordered = lists.sort_values(["flips", "removals"], kind="stable", na_position="last")
        for row in ordered.head(SURENESS_ROWS).itertuples(index=False):
            cells = [
                escape(str(row.query)),
                str(row.groups),
                f"{_count(row.removals)} / {_count(row.flips)}",
                f"{_count(row.top_removals)} / {_count(row.top_flips)}",
            ]
            if stable:
                adr = f"{row.expected_adr:.2f} ({row.adr_low:.2f}–{row.adr_high:.2f})"
                cells += [f"{row.boundaries_kept:.0%}", f"{row.same_list:.0%}", adr]
            table.add_row(*cells)
        console.print(table)
    fragile = sureness.pairs.head(SURENESS_ROWS)
    table = Table(title="the most fragile verdicts", caption="answers: more / equal / less")
    for head in ("query", "x", "y", "verdict", "answers", "changed", "removed"):
        table.add_column(head, justify="right" if head in ("changed", "removed") else "left")
    for row in fragile.itertuples(index=False):
        table.add_row(
            escape(str(row.query)), escape(str(row.x)), escape(str(row.y)),
            VERDICT_WORDS[int(row.verdict)], f"{row.more} / {row.equal} / {row.less}",
            _count(row.flips), _count(row.removals),
        )  # fmt: skip
    console.print(table)


def _render_rates(name: str, rates: pd.DataFrame) -> None:
    """One transitivity table (per query or per worker): the highest violation rates."""
    from crowdprefs.quality.transitivity import overall_rate

    judged = rates[rates["triples"] > 0].sort_values(
        ["rate", "triples"], ascending=False, kind="stable"
    )
    each, whose = ("query", "verdicts") if name == "queries" else ("worker", "own answers")
    rate = overall_rate(rates)
    table = Table(
        title=f"transitivity per {each} ({whose}): "
        + (f"{rate:.1%} of {int(judged['triples'].sum())} complete triples violated"
           if judged.size else "no complete triple"),
        caption=None
        if len(judged) <= TRANSITIVITY_ROWS
        else f"the {TRANSITIVITY_ROWS} highest rates of {len(judged)} (all: --json or --csv-dir)",
    )  # fmt: skip
    if judged.empty:
        console.print(table.title)
        return
    table.add_column(rates.index.name, overflow="fold")
    for column in ("triples", "violations", "rate"):
        table.add_column(column, justify="right")
    for key, row in judged.head(TRANSITIVITY_ROWS).iterrows():
        table.add_row(
            escape(str(key)), str(int(row["triples"])), str(int(row["violations"])),
            f"{row['rate']:.3f}",
        )  # fmt: skip
    console.print(table)
