"""synpmx_lite: the computations behind the book on membership inference and PMX model releases.

Modules
-------
membership
    Membership inference against simplified models of a PMX fingerprint (attendance shares and
    population-model estimates), the AUC and its Monte Carlo error.
rounding
    Rounding to significant figures.
dp_noise
    The noise a differential-privacy guarantee needs on a small study's population model.
tracing
    The tracing attack of Dwork et al. on released means, and OpenDP's Laplace mean query.
fisher, fisher_data
    Per-example Fisher information loss, IRFIL and attribute inversion; the scikit-learn
    datasets they are shown on.
"""

from .fisher import (
    AttributeInversion,
    Reweighting,
    attribute_inversion,
    irfil,
    mean_release_fil,
    per_example_fil,
    per_example_heuristics,
    subset_fil,
)
from .membership import (
    AttendanceAttack,
    MembershipTables,
    PopulationAttack,
    ScorePiles,
    attendance_attack,
    attendance_score,
    attendance_scores,
    auc,
    auc_standard_error,
    draw_attendance,
    membership_tables,
    population_attack,
    release_shares,
    roc_curve,
    true_positive_rate_at,
)
from .rounding import round_significant
from .tracing import (
    DpMeanQuery,
    TracingSimulation,
    TracingTest,
    calibrated_threshold,
    dp_mean_query,
    exact_means,
    load_pums,
    random_predicates,
    reference_sample_test,
    simulate_tracing,
    single_reference_test,
)

__version__ = "0.1.0"

__all__ = [
    "AttendanceAttack",
    "AttributeInversion",
    "DpMeanQuery",
    "MembershipTables",
    "PopulationAttack",
    "Reweighting",
    "ScorePiles",
    "TracingSimulation",
    "TracingTest",
    "attendance_attack",
    "attendance_score",
    "attendance_scores",
    "attribute_inversion",
    "auc",
    "auc_standard_error",
    "calibrated_threshold",
    "dp_mean_query",
    "draw_attendance",
    "exact_means",
    "irfil",
    "load_pums",
    "mean_release_fil",
    "membership_tables",
    "per_example_fil",
    "per_example_heuristics",
    "population_attack",
    "random_predicates",
    "reference_sample_test",
    "release_shares",
    "roc_curve",
    "round_significant",
    "simulate_tracing",
    "single_reference_test",
    "subset_fil",
    "true_positive_rate_at",
]
