"""Draw the documentation's figures into docs/img/ (committed; rerun after a benchmark changes).

    python docs/figures.py              # all figures into docs/img/
    python docs/figures.py --out DIR    # elsewhere (the tests draw into a temporary folder)

- ``quicksort-table1.svg``: the modified QuickSort on the preference-judgments paper's Table 1
  example (seven candidates C, D, E, A, G, B, F), replayed batch by batch with the project's own
  :func:`crowdprefs.campaign.sorting.replay` against consistent answers;
- ``designs.svg``, ``mtc.svg``, ``speedups.svg``: figures kept in ``benchmarks/results/`` by
  ``benchmarks/readme_numbers.py`` (answers against list quality per campaign design, MTC
  judgments against accuracy per estimator, speed-ups against the reference implementations).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from crowdprefs.campaign.sorting import SortState, replay  # noqa: E402

RESULTS = ROOT / "benchmarks" / "results"
IMG = ROOT / "docs" / "img"
#: the paper's Table 1: the initial order and the groups its answers give (group 1 most similar)
TABLE1_ORDER = list("CDEAGBF")
TABLE1_GROUPS = {"A": 1, "B": 1, "C": 1, "D": 2, "E": 2, "F": 3, "G": 3}
COLOURS = {"pivot": "#f4a261", "done": "#bfc7d5", "todo": "#ffffff", "closed": "#2a9d8f"}

plt.rcParams.update({"svg.hashsalt": "crowdprefs", "svg.fonttype": "none", "font.size": 10})


def table1_states() -> list[SortState]:
    """The sort's state at each iteration (the pairs it asks, then the segments they give), the
    last one closed; the answers are consistent with :data:`TABLE1_GROUPS`."""
    verdicts: dict[tuple[str, str], int] = {}
    states = [replay(TABLE1_ORDER, verdicts)]
    while not states[-1].closed:
        for x, y in states[-1].needed:
            verdicts[(x, y)] = (TABLE1_GROUPS[x] < TABLE1_GROUPS[y]) - (
                TABLE1_GROUPS[x] > TABLE1_GROUPS[y]
            )
        states.append(replay(TABLE1_ORDER, verdicts))
    return states


def draw_table1(path: Path) -> None:
    """One row per iteration: each segment a run of boxes (former pivots shaded, the pivot orange),
    a closed segment framed in green; the pairs the batch asks on the right."""
    states = table1_states()
    fig, ax = plt.subplots(figsize=(8.4, 0.75 * len(states) + 0.6))
    for row, state in enumerate(states):
        y = -row
        x = 0.0
        ax.text(-0.3, y, f"iteration {row + 1}", ha="right", va="center")
        for segment in state.segments:
            members = [*segment.done, *segment.todo]
            for i, member in enumerate(members):
                kind = (
                    "done"
                    if member in segment.done
                    else "pivot"
                    if not segment.closed and member == segment.pivot
                    else "todo"
                )
                ax.add_patch(
                    plt.Rectangle(
                        (x + i, y - 0.35), 0.9, 0.7, facecolor=COLOURS[kind], edgecolor="#444"
                    )
                )
                ax.text(x + i + 0.45, y, member, ha="center", va="center", weight="bold")
            if segment.closed:
                ax.add_patch(
                    plt.Rectangle(
                        (x - 0.08, y - 0.43),
                        len(members) - 0.1 + 0.16,
                        0.86,
                        fill=False,
                        edgecolor=COLOURS["closed"],
                        linewidth=2,
                    )
                )
            x += len(members) + 0.5
        asked = ", ".join(f"{a}–{b}" for a, b in state.needed)
        ax.text(10.6, y, f"asks {len(state.needed)}: {asked}" if asked else "every list closed",
                va="center")  # fmt: skip
    handles = [
        plt.Rectangle((0, 0), 1, 1, facecolor=COLOURS[k], edgecolor="#444")
        for k in ("pivot", "done", "todo")
    ] + [plt.Rectangle((0, 0), 1, 1, fill=False, edgecolor=COLOURS["closed"], linewidth=2)]
    ax.legend(
        handles,
        ["pivot", "former pivot", "still to place", "closed segment"],
        loc="upper center",
        bbox_to_anchor=(0.5, 0.02),
        ncol=4,
        frameon=False,
    )
    ax.set_xlim(-2.2, 19)
    ax.set_ylim(-len(states) + 0.4, 0.6)
    ax.axis("off")
    save(fig, path)


def figures(name: str) -> dict:
    return json.loads((RESULTS / f"{name}.json").read_text(encoding="utf-8"))["figures"]


#: the designs of benchmarks/fewer_answers.py as its table names them, and where each label
#: goes (offset in points, alignment) so that the close ones stay readable
DESIGNS = {
    "published": ("published: 10 answers, margin 2", (6, 6), "left"),
    "mann_whitney": ("10 answers, Mann-Whitney 0.05", (-6, 6), "right"),
    "curtail10": ("curtail, margin 2, 4+2…10", (-6, -14), "right"),
    "curtail8": ("curtail, margin 2, 4+2…8", (6, 4), "left"),
    "sequential": ("sequential (defaults)", (6, 4), "left"),
    "eps15": ("curtail ε=0.15, margin 2, 3+1…10", (8, -10), "left"),
    "eps10": ("curtail ε=0.10, margin 1, 3+1…9", (-6, -16), "right"),
    "eps25": ("curtail ε=0.25, margin 2, 3+1…14", (-8, 8), "right"),
    "eps30": ("curtail ε=0.30, margin 2, 3+2…14", (8, -1), "left"),
    "eps30_flag": ("ε=0.30, careless workers flagged", (8, 2), "left"),
}


def draw_designs(path: Path) -> None:
    """Answers against ΔADR (paired 95% interval) for each design of fewer_answers.py."""
    got = figures("fewer_answers__campaigns_300")
    fig, ax = plt.subplots(figsize=(8, 4.6))
    for key, (label, offset, align) in DESIGNS.items():
        answers = got[f"fitted_{key}_answers"]
        delta = got.get(f"fitted_{key}_delta", 0.0)
        low = got.get(f"fitted_{key}_delta_low", delta)
        high = got.get(f"fitted_{key}_delta_high", delta)
        best = key == "eps30"
        ax.errorbar(answers, delta, yerr=[[delta - low], [high - delta]], fmt="o",
                    color="#e76f51" if best else "#264653", capsize=3)  # fmt: skip
        ax.annotate(label, (answers, delta), xytext=offset, textcoords="offset points",
                    fontsize=8, ha=align)  # fmt: skip
    ax.axhline(0, color="#999", linewidth=0.8)
    ax.set_xlabel("answers per campaign (mean of 300 simulated campaigns)")
    ax.set_ylabel("ΔADR against the published design")
    ax.set_title("Fewer answers for lists as good: campaign designs on the fitted crowd")
    ax.set_xlim(1000, 3100)
    save(fig, path)


MTC_ESTIMATORS = ["trained", "judge", "compat", "fitted", "output", "uniform"]


def draw_mtc(path: Path) -> None:
    """Judgments to the stop against accuracy there (mean and worst of 48 held-out splits)."""
    got = figures("mtc_transfer")
    fig, ax = plt.subplots(figsize=(7, 4.2))
    for name in MTC_ESTIMATORS:
        judgments, accuracy = got[f"{name}_judgments"], got[f"{name}_accuracy"]
        worst = got[f"{name}_worst"]
        ax.plot([judgments, judgments], [worst, accuracy], color="#bbb", zorder=1)
        ax.scatter([judgments], [accuracy], color="#264653", zorder=2)
        ax.scatter([judgments], [worst], marker="v", color="#e76f51", zorder=2)
        ax.annotate(name, (judgments, accuracy), xytext=(6, 4), textcoords="offset points")
    ax.axhline(0.95, color="#999", linewidth=0.8, linestyle="--")
    ax.set_ylim(top=0.99)
    ax.set_xlabel("judgments to the stop (stated confidence 0.95), mean of 48 splits")
    ax.set_ylabel("accuracy at the stop")
    ax.set_title("Minimal Test Collections on new systems and new queries (MIREX 2011)")
    ax.legend(["worst split … mean", "mean accuracy", "worst split"], loc="lower right",
              frameon=False)  # fmt: skip
    save(fig, path)


#: (label, benchmark results file, how its figures give the speed-up)
SPEEDUPS: list[tuple[str, str, Callable[[dict], float]]] = [
    ("Mann-Whitney on 1 M pairs\nvs a scipy loop (CPU)", "aggregate_speed",
     lambda f: f["cpu_speedup"]),
    ("power study\nvs a per-subset scipy loop (CPU)", "power_study", lambda f: f["speedup"]),
    ("5 measures on 4 M run lines\nvs ir_measures (wall)", "measures_vs_reference",
     lambda f: 1 / f["ratio"]),
    ("ordinal α on 100,000 pairs\nvs krippendorff", "audit_flags", lambda f: f["alpha_ratio"]),
]  # fmt: skip


def draw_speedups(path: Path) -> None:
    """How many times faster than the reference implementation, on a log scale."""
    labels = [label for label, _, _ in SPEEDUPS]
    values = [speedup(figures(name)) for _, name, speedup in SPEEDUPS]
    fig, ax = plt.subplots(figsize=(7, 3.4))
    bars = ax.barh(labels, values, color="#2a9d8f")
    ax.bar_label(bars, [f"{v:,.0f}×" for v in values], padding=4)
    ax.set_xscale("log")
    ax.set_xlim(1, max(values) * 8)
    ax.invert_yaxis()
    ax.set_xlabel("times faster (log scale), equal results")
    ax.set_title("Vectorised against the reference implementations")
    save(fig, path)


def save(fig, path: Path) -> None:
    fig.tight_layout()
    fig.savefig(path, metadata={"Date": None})
    plt.close(fig)


DRAWINGS = {
    "quicksort-table1.svg": draw_table1,
    "designs.svg": draw_designs,
    "mtc.svg": draw_mtc,
    "speedups.svg": draw_speedups,
}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=IMG, help="folder to draw into")
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    for name, draw in DRAWINGS.items():
        draw(args.out / name)
        print(f"wrote {args.out / name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
