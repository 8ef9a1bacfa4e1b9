"""The demo: collections shaped like seed 002's, and synthetic systems to evaluate against them.

Both collections have 11 queries with 4 to 23 candidates each, 118 in all (the Eval05 lists of
seed 002 §5), and a hidden truth of ordered groups:

* :func:`make_collection` draws the truth directly (no files): groups of one to five equally
  similar candidates. Tests and benchmarks use it.
* :func:`create_demo_project` with ``melodies=True`` (what ``crowdprefs demo`` runs) writes real
  MIDI melodies and their variations (:func:`examples.melodies.make_example`); the truth groups
  are the dense ranks of each variation's melodic edit distance to its query.

:func:`example_runs` makes the retrieval systems that the demo scores against the lists.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from crowdprefs.campaign.project import Project, Settings, init_project
from crowdprefs.io import write_lists
from crowdprefs.quality.crowd_model import CrowdModel
from examples.melodies import QUERY_SIZES, make_example


def make_collection(
    seed: int = 2010, sizes: tuple[int, ...] = QUERY_SIZES
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Candidates ``query, document`` and their hidden truth ``query, document, group``.

    Each query's candidates are cut into consecutive groups of 1 to 5 members (mostly 2–3), so
    group sizes resemble the crowdsourced lists of seed 002.
    """
    rng = np.random.default_rng([seed, 0xDE30])
    rows = []
    for q, size in enumerate(sizes, start=1):
        query = f"q{q:02d}"
        group, left = 1, size
        documents = [f"{query}-v{i:02d}" for i in range(1, size + 1)]
        rng.shuffle(documents)
        position = 0
        while left:
            members = min(left, int(rng.choice([1, 2, 2, 3, 3, 4, 5])))
            rows.extend((query, documents[position + i], group) for i in range(members))
            position += members
            left -= members
            group += 1
    truth = pd.DataFrame(rows, columns=["query", "document", "group"])
    candidates = truth[["query", "document"]].sort_values(["query", "document"], ignore_index=True)
    return candidates, truth


def create_demo_project(
    root: Path,
    seed: int = 2010,
    answers_per_pair: int = 10,
    *,
    melodies: bool = False,
    crowd_model: CrowdModel | None = None,
) -> Project:
    """Write ``candidates.csv`` and ``truth.qrel`` in ``root`` and initialise ``root/project``.

    With ``melodies``, the candidates are MIDI files under ``root/midi`` (the CSV's ``audio`` and
    ``query_audio`` columns), ready for ``crowdprefs prepare``; otherwise they have no audio.
    The simulated crowd of the project reads its truth from ``truth.qrel``, and its parameters
    from ``crowd_model`` (the defaults when ``None``).
    """
    root = Path(root)
    root.mkdir(parents=True, exist_ok=True)
    if melodies:
        truth = make_example(root, seed)[["query", "document", "group"]]
    else:
        candidates, truth = make_collection(seed)
        candidates.to_csv(root / "candidates.csv", index=False)
    write_lists(truth, root / "truth.qrel", tag="truth")
    simulated = {"truth": "../truth.qrel", **(crowd_model.to_dict() if crowd_model else {})}
    settings = Settings(answers_per_pair=answers_per_pair, sections={"simulated": simulated})
    return init_project(root / "project", root / "candidates.csv", seed=seed, settings=settings)


#: Noise of each synthetic system's similarity estimate, in units of the gap between groups.
SYSTEM_NOISE = {"sys-A": 0.25, "sys-B": 0.5, "sys-C": 0.8, "sys-D": 1.2, "sys-E": 2.5}


def example_runs(
    truth: pd.DataFrame, seed: int = 2010, depth: int = 5, noise: dict[str, float] | None = None
) -> pd.DataFrame:
    """Runs ``system, query, document, rank`` of synthetic systems of decreasing quality.

    Each system ranks a query's candidates by ``−group + noise·z`` (z standard normal, drawn per
    system and candidate) and returns its top ``depth``; the less noise, the better the system,
    so the expected ranking of the systems is known.
    """
    noise = noise or SYSTEM_NOISE
    rng = np.random.default_rng([seed, 0x5E5])
    parts = []
    for system, sigma in noise.items():
        estimate = -truth["group"].to_numpy() + sigma * rng.standard_normal(len(truth))
        ranked = truth.assign(system=system, estimate=estimate).sort_values(
            ["query", "estimate"], ascending=[True, False], kind="stable"
        )
        ranked["rank"] = ranked.groupby("query").cumcount() + 1
        parts.append(ranked[ranked["rank"] <= depth])
    return pd.concat(parts, ignore_index=True)[["system", "query", "document", "rank"]]
