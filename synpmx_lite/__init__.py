"""synpmx_lite: the computations behind the book on membership inference and PMX model releases.

Modules
-------
study, pk, estimation, pd
    A PMX study's event table and roles, closed-form PK models, the FOCE-I population fit, and
    the population models of continuous PD endpoints with their leave-one-out refits.
fingerprint, release, protections, influence, checks, generate, cases
    The model generator: estimation with influence rounds and the building of the release
    (fingerprint), the released artefact and its allowlist (release), the protection rules
    (protections), leave-one-out influence (influence), checks P1-P5 that judge the released
    JSON against the source (checks), synthetic data from the fingerprint alone (generate),
    and the constructed warfarin cases that exercise the protections (cases).
membership
    Membership inference against simplified models of a PMX fingerprint (attendance shares and
    population-model estimates), the AUC and its Monte Carlo error.
membership_real
    Membership inference against the real generator's releases of shadow cohorts of the public
    studies.
rounding
    Rounding to significant figures.
dp_noise
    The noise a differential-privacy guarantee needs on a small study's population model.
tracing
    The tracing attack of Dwork et al. on released means, and OpenDP's Laplace mean query.
tables
    Captioned, numbered tables for the book (MyST in the book, HTML in a notebook).
fisher, fisher_attacks, fisher_bounds, fisher_data
    Per-example Fisher information loss and IRFIL; white-box and black-box attribute inversion;
    the FIL of a differentially private mean and the bound for biased adversaries; the
    scikit-learn datasets they are shown on.
"""

from .cases import ConstructedCases, constructed_warfarin_cases
from .checks import release_checks
from .estimation import (
    ERROR_MODELS,
    FitWarning,
    PopulationFit,
    empirical_bayes_estimates,
    fit_population,
    importance_sampling_ofv,
)
from .fingerprint import (
    ModelFit,
    model_fingerprint,
    model_privacy_checks,
    privacy_checks_across_studies,
    synpmx_model_estimate,
)
from .fisher import (
    Reweighting,
    irfil,
    logistic_l2_path,
    matched_logistic_l2,
    per_example_fil,
    per_example_heuristics,
    subset_fil,
)
from .fisher_attacks import AttributeInversion, attribute_inversion, inversion_sweep
from .fisher_bounds import biased_cramer_rao, mean_release_fil
from .generate import synpmx_model_generate
from .influence import LeftOut, PrivacyReport, influence_moves, pd_influence_moves, pd_shape_moves
from .membership import (
    AttendanceAttack,
    MembershipTables,
    PopulationAttack,
    ScorePiles,
    attendance_attack,
    attendance_score,
    attendance_scores,
    auc,
    auc_difference,
    auc_standard_error,
    draw_attendance,
    membership_tables,
    population_attack,
    r_reference_tables,
    release_shares,
    roc_curve,
    true_positive_rate_at,
)
from .membership_real import (
    GeneratorAttack,
    equivalent_patients,
    generator_membership_attack,
    simplified_prediction,
)
from .pd import PD_SHAPES, PdFit, fit_pd_endpoint, pd_loo_refits, pd_response
from .pk import PkModel, predict_concentrations
from .protections import fold_categories, loq_floor, trimmed_log_summary
from .release import FINGERPRINT_FIELDS, Fingerprint, release_problems
from .rounding import round_significant
from .study import DATASETS, PmxRoles, StudyEvents, load_dataset, pmx_roles, prepare_study
from .tables import BookTable, book_table
from .tracing import (
    DpMeanQuery,
    OpenDpRecord,
    TracingSimulation,
    TracingTest,
    calibrated_threshold,
    dp_mean_query,
    exact_means,
    load_opendp_record,
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
    "PD_SHAPES",
    "AttendanceAttack",
    "AttributeInversion",
    "BookTable",
    "ConstructedCases",
    "DpMeanQuery",
    "Fingerprint",
    "FitWarning",
    "GeneratorAttack",
    "LeftOut",
    "MembershipTables",
    "ModelFit",
    "OpenDpRecord",
    "PdFit",
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
    "auc_difference",
    "auc_standard_error",
    "biased_cramer_rao",
    "book_table",
    "calibrated_threshold",
    "constructed_warfarin_cases",
    "dp_mean_query",
    "draw_attendance",
    "empirical_bayes_estimates",
    "equivalent_patients",
    "exact_means",
    "fit_pd_endpoint",
    "fit_population",
    "fold_categories",
    "generator_membership_attack",
    "importance_sampling_ofv",
    "influence_moves",
    "inversion_sweep",
    "irfil",
    "load_dataset",
    "load_opendp_record",
    "load_pums",
    "logistic_l2_path",
    "loq_floor",
    "matched_logistic_l2",
    "mean_release_fil",
    "membership_tables",
    "model_fingerprint",
    "model_privacy_checks",
    "pd_influence_moves",
    "pd_loo_refits",
    "pd_response",
    "pd_shape_moves",
    "per_example_fil",
    "per_example_heuristics",
    "pmx_roles",
    "population_attack",
    "predict_concentrations",
    "prepare_study",
    "privacy_checks_across_studies",
    "r_reference_tables",
    "random_predicates",
    "reference_sample_test",
    "release_checks",
    "release_problems",
    "release_shares",
    "roc_curve",
    "round_significant",
    "simplified_prediction",
    "simulate_tracing",
    "single_reference_test",
    "subset_fil",
    "synpmx_model_estimate",
    "synpmx_model_generate",
    "trimmed_log_summary",
    "true_positive_rate_at",
]
