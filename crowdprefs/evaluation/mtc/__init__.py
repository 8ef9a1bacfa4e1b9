"""Minimal Test Collections (MTC) for AG@k: rank systems with few level judgments.

The MTC paper (Urbano & Schedl, "Minimal test collections for low-cost
evaluation of Audio Music Similarity and Retrieval systems"); its lost equations and the
coefficients of its models are restated in ``shared/MTC.md``. Notation: S systems, Q queries,
k documents per run, maximum gain M (100 Fine, 2 Broad). Every retrieved (query, document) is a
*pair* ``d`` with gain G_d, estimated by its expectation E_d and variance V_d (judged: E = gain,
V = 0).

The package, by concern:

* :mod:`~.collection`: the runs as one S×P incidence matrix (P = distinct pairs), judged
  gains, metadata, query folds;
* :mod:`~.statistics`: AG@k and differences as random variables (§3.1–3.2), confidence in
  signs and in the ranking (§3.3–3.4), accuracy, τ and calibration against the truth;
* :mod:`~.ordinal`: the cumulative logit of the MTC paper's §4.1;
* :mod:`~.estimators`: uniform, L_output and L_judge (§4.2.3, reference coefficients), and a
  model refitted from the judgments at hand, cross-fitted by query folds;
* :mod:`~.effects`: correlated per-system errors, which enter every variance;
* :mod:`~.trained`: a model trained on a judged collection and used on another;
* :mod:`~.selection`: the reference tool's static weight and an adaptive weight (§3.4);
* :mod:`~.simulation`: MTC against complete judgments (§5);
* :mod:`~.workflow`: the commands as library calls (next, estimate, simulate, train).
* :mod:`~.transfer`: every estimator on new systems and new queries, over random splits.

Everything is vectorised over the incidence matrix, so a simulation is a loop over judgment
batches only.
"""

from crowdprefs.evaluation.mtc.collection import (
    MAX_GAIN,
    Collection,
    PairMetadata,
    Scale,
    build_collection,
    gains_vector,
    pair_metadata,
    query_folds,
    query_groups,
    read_metadata,
    transfer_split,
    validate_metadata,
    validate_runs,
)
from crowdprefs.evaluation.mtc.effects import (
    HeldOut,
    SystemEffects,
    fit_system_errors,
    fit_transfer_errors,
    quality_direction,
    system_error_covariance,
    update_system_errors,
    with_system_errors,
)
from crowdprefs.evaluation.mtc.estimators import (
    FINE_LABELS,
    JUDGE_ALPHA,
    JUDGE_BETA,
    OUTPUT_ALPHA,
    OUTPUT_BETA,
    FittedEstimator,
    GainEstimator,
    JudgeEstimator,
    OutputEstimator,
    UniformEstimator,
    fitted_features,
    judge_features,
    output_features,
    uniform_moments,
)
from crowdprefs.evaluation.mtc.ordinal import (
    cumulative_logit_probabilities,
    fit_cumulative_logit,
    fit_level_model,
    gain_levels,
    level_moments,
    ordinal_moments,
)
from crowdprefs.evaluation.mtc.selection import (
    SELECTIONS,
    Selector,
    adaptive_weights,
    make_selector,
    reference_weights,
    take_batch,
)
from crowdprefs.evaluation.mtc.simulation import Estimator, Simulation, simulate
from crowdprefs.evaluation.mtc.statistics import (
    Estimates,
    PairStatistics,
    calibration_table,
    pair_statistics,
    pair_table,
    ranking_confidence,
    sign_accuracy,
    sign_agreement,
    system_table,
    unjudged_counts,
    upper_pairs,
    with_judgments,
)
from crowdprefs.evaluation.mtc.trained import (
    GAIN_MODEL_FORMAT,
    GAIN_MODEL_VERSION,
    TRAINED_FEATURES,
    GainModel,
    TrainedEstimator,
    held_out_residuals,
    system_profiles,
    train_gain_model,
    trained_features,
)
from crowdprefs.evaluation.mtc.transfer import (
    DEFAULT_ESTIMATORS,
    TRANSFER_ESTIMATORS,
    check_estimators,
    transfer_study,
    transfer_summary,
)
from crowdprefs.evaluation.mtc.workflow import (
    ESTIMATORS,
    Choice,
    Inputs,
    MissingInput,
    NextBatch,
    Ranking,
    Setup,
    SimulationReport,
    check_clip_pattern,
    check_hit_scale,
    check_rule,
    check_scale,
    choose_estimator,
    clipped_note,
    clips_of,
    estimate_ranking,
    load_inputs,
    make_estimator,
    next_batch,
    plot_simulation,
    read_gain_model,
    run_simulation,
    set_up,
    train_model,
)

__all__ = [
    "ESTIMATORS",
    "Choice",
    "FINE_LABELS",
    "GAIN_MODEL_FORMAT",
    "GAIN_MODEL_VERSION",
    "JUDGE_ALPHA",
    "JUDGE_BETA",
    "MAX_GAIN",
    "OUTPUT_ALPHA",
    "OUTPUT_BETA",
    "SELECTIONS",
    "TRAINED_FEATURES",
    "adaptive_weights",
    "build_collection",
    "calibration_table",
    "check_clip_pattern",
    "clips_of",
    "check_hit_scale",
    "check_rule",
    "clipped_note",
    "check_scale",
    "choose_estimator",
    "Collection",
    "cumulative_logit_probabilities",
    "estimate_ranking",
    "Estimates",
    "Estimator",
    "fit_cumulative_logit",
    "fit_level_model",
    "fit_system_errors",
    "fit_transfer_errors",
    "fitted_features",
    "FittedEstimator",
    "gain_levels",
    "GainEstimator",
    "GainModel",
    "held_out_residuals",
    "gains_vector",
    "Inputs",
    "judge_features",
    "JudgeEstimator",
    "level_moments",
    "load_inputs",
    "make_estimator",
    "make_selector",
    "MissingInput",
    "next_batch",
    "NextBatch",
    "ordinal_moments",
    "output_features",
    "OutputEstimator",
    "pair_metadata",
    "pair_statistics",
    "pair_table",
    "PairMetadata",
    "PairStatistics",
    "plot_simulation",
    "quality_direction",
    "query_folds",
    "query_groups",
    "Ranking",
    "ranking_confidence",
    "read_gain_model",
    "read_metadata",
    "reference_weights",
    "run_simulation",
    "set_up",
    "Scale",
    "Selector",
    "sign_accuracy",
    "sign_agreement",
    "simulate",
    "Simulation",
    "SimulationReport",
    "Setup",
    "system_error_covariance",
    "update_system_errors",
    "system_profiles",
    "system_table",
    "SystemEffects",
    "HeldOut",
    "take_batch",
    "train_gain_model",
    "transfer_split",
    "DEFAULT_ESTIMATORS",
    "TRANSFER_ESTIMATORS",
    "check_estimators",
    "transfer_study",
    "transfer_summary",
    "train_model",
    "trained_features",
    "TrainedEstimator",
    "uniform_moments",
    "UniformEstimator",
    "unjudged_counts",
    "upper_pairs",
    "validate_metadata",
    "validate_runs",
    "with_judgments",
    "with_system_errors",
]
