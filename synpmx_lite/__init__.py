"""synpmx_lite: the computations behind the book on membership inference and PMX model releases.

Modules
-------
study, pk, estimation
    A PMX study's event table and roles, closed-form PK models, and the FOCE-I population fit.
fingerprint, generate, cases
    The model generator: estimation with influence rounds, the released fingerprint and its
    protections, checks P1-P5, synthetic data from the fingerprint alone, and the constructed
    warfarin cases that exercise the protections.
membership
    Membership inference against simplified models of a PMX fingerprint (attendance shares and
    population-model estimates), the AUC and its Monte Carlo error.
rounding
    Rounding to significant figures.
dp_noise
    The noise a differential-privacy guarantee needs on a small study's population model.
tracing
    The tracing attack of Dwork et al. on released means, and OpenDP's Laplace mean query.
tables
    Captioned, numbered tables for the book (MyST in the book, HTML in a notebook).
fisher, fisher_data
    Per-example Fisher information loss, IRFIL and attribute inversion; the scikit-learn
    datasets they are shown on.
"""

from .cases import ConstructedCases, constructed_warfarin_cases
from .estimation import (
    ERROR_MODELS,
    FitWarning,
    PopulationFit,
    fit_population,
    importance_sampling_ofv,
)
from .fingerprint import (
    FINGERPRINT_FIELDS,
    Fingerprint,
    LeftOut,
    ModelFit,
    PrivacyReport,
    fold_categories,
    influence_moves,
    loq_floor,
    model_fingerprint,
    model_privacy_checks,
    privacy_checks_across_studies,
    synpmx_model_estimate,
    trimmed_log_summary,
)
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
from .generate import synpmx_model_generate
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
from .pk import PkModel, predict_concentrations
from .rounding import round_significant
from .study import DATASETS, PmxRoles, StudyEvents, load_dataset, pmx_roles, prepare_study
from .tables import BookTable, book_table
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
    "DATASETS",
    "ERROR_MODELS",
    "FINGERPRINT_FIELDS",
    "AttendanceAttack",
    "AttributeInversion",
    "BookTable",
    "ConstructedCases",
    "DpMeanQuery",
    "Fingerprint",
    "FitWarning",
    "LeftOut",
    "MembershipTables",
    "ModelFit",
    "PkModel",
    "PmxRoles",
    "PopulationAttack",
    "PopulationFit",
    "PrivacyReport",
    "Reweighting",
    "ScorePiles",
    "StudyEvents",
    "TracingSimulation",
    "TracingTest",
    "attendance_attack",
    "attendance_score",
    "attendance_scores",
    "attribute_inversion",
    "auc",
    "auc_standard_error",
    "book_table",
    "calibrated_threshold",
    "constructed_warfarin_cases",
    "dp_mean_query",
    "draw_attendance",
    "exact_means",
    "fit_population",
    "fold_categories",
    "importance_sampling_ofv",
    "influence_moves",
    "irfil",
    "load_dataset",
    "load_pums",
    "loq_floor",
    "mean_release_fil",
    "membership_tables",
    "model_fingerprint",
    "model_privacy_checks",
    "per_example_fil",
    "per_example_heuristics",
    "pmx_roles",
    "population_attack",
    "predict_concentrations",
    "prepare_study",
    "privacy_checks_across_studies",
    "random_predicates",
    "reference_sample_test",
    "release_shares",
    "roc_curve",
    "round_significant",
    "simulate_tracing",
    "single_reference_test",
    "subset_fil",
    "synpmx_model_estimate",
    "synpmx_model_generate",
    "trimmed_log_summary",
    "true_positive_rate_at",
]
