import pandas as pd

from crowdprefs import exchange
from crowdprefs.quality import preferences as cp

# One row per answer: which variation, left or right, is more similar to the query?
pairs = [("a", "b"), ("a", "c"), ("b", "c"), ("a", "d"), ("b", "d"), ("c", "d")]
labels = {  # each worker's answers to the six pairs, in that order
    "w1": ["equal", "left", "left", "left", "left", "left"],
    "w2": ["equal", "left", "left", "left", "left", "equal"],
    "w3": ["left", "left", "equal", "left", "left", "left"],
    "w4": ["equal", "left", "left", "left", "left", "left"],
    "w5": ["equal", "left", "left", "left", "left", "left"],
    "w6": ["right", "right", "right", "equal", "right", "right"],
}
answers = pd.DataFrame(
    [
        (worker, "q1", left, right, label)
        for worker, answered in labels.items()
        for (left, right), label in zip(pairs, answered, strict=True)
    ],
    columns=["worker", "query", "left", "right", "label"],
)

verdicts = cp.verdicts(answers)  # one verdict per pair (Mann-Whitney U test)
print(verdicts)
lists = cp.sort_lists(answers)  # groups of equally similar candidates, group 1 most similar
print(lists)

model = cp.TieBradleyTerry().fit(answers)  # scores, ties and worker reliabilities, all pairs
print(model.lists_, model.reliabilities_.round(2), sep="\n")

print(cp.agreement(answers))  # inter-agreement, Krippendorff's alpha, Fleiss' kappa
print(cp.worker_flags(answers))  # workers who look careless or automatic
print(cp.transitivity_violations(answers, by="worker"))

crowdkit = exchange.to_crowdkit(answers, ties="drop")  # for crowdkit's NoisyBradleyTerry
