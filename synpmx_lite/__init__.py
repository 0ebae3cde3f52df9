"""synpmx_lite: the computations behind the book on membership inference and PMX model releases.

The package has four subpackages over a few shared helpers; imports only go down this list
(``tests/test_layers.py`` keeps it so):

attacks
    Membership inference against the fingerprint (simplified models, then the real generator)
    and the tracing attack of Dwork et al. on released means with OpenDP's Laplace mechanism.
fisher
    Per-example Fisher information loss and IRFIL, attribute inversion, the FIL of a
    differentially private mean and the bound for biased adversaries.
generator
    The model generator: estimation with influence rounds, the released fingerprint and its
    allowlist, the protection rules, checks P1-P5 on the released JSON, synthetic data and the
    constructed warfarin cases.
pmx
    The PMX engine: event table and roles, closed-form PK models, the FOCE-I population fit
    and the PD endpoints' population models.
dp_noise, rounding, stored, tables, plotting, _validation, data/
    Shared helpers (the noise a DP guarantee needs, rounding to significant figures, stored
    results of long computations keyed by their settings and sources, the book's captioned
    tables and plot theme, argument checks) and the shipped datasets.

``attacks`` may import ``generator`` and ``pmx``; ``generator`` may import ``pmx``; ``fisher``
and ``pmx`` import only the shared helpers, which import nothing above them. The names below
are the public API the book, the README and the benchmarks use.
"""

from .attacks.membership import (
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
from .attacks.membership_generator import (
    GeneratorAttack,
    equivalent_patients,
    generator_membership_attack,
    refuse_unauditable,
    simplified_prediction,
)
from .attacks.tracing import (
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
from .attacks.walkthrough import WorkedExample, r_worked_example
from .fisher.bounds import biased_cramer_rao, mean_release_fil
from .fisher.inversion import AttributeInversion, attribute_inversion, inversion_sweep
from .fisher.leakage import (
    Reweighting,
    irfil,
    logistic_l2_path,
    matched_logistic_l2,
    per_example_fil,
    per_example_heuristics,
    subset_fil,
)
from .generator.cases import ConstructedCases, constructed_warfarin_cases
from .generator.checks import release_checks
from .generator.estimate import (
    ModelFit,
    fit_status,
    model_fingerprint,
    model_privacy_checks,
    privacy_checks_across_studies,
    synpmx_model_estimate,
)
from .generator.generate import synpmx_model_generate
from .generator.influence import (
    LeftOut,
    PrivacyReport,
    influence_moves,
    jackknife_moves,
    pd_influence_moves,
    pd_shape_moves,
)
from .generator.protections import fold_categories, loq_floor, trimmed_log_summary
from .generator.release import FINGERPRINT_FIELDS, Fingerprint, release_problems
from .pmx.blq import BlqComparison, compare_blq_methods, simulate_blq_study
from .pmx.covariates import CovariateEffect, parse_effects
from .pmx.diagnostics import (
    epsilon_shrinkage,
    fit_residuals,
    goodness_of_fit_plot,
    visual_predictive_check,
    vpc_plot,
)
from .pmx.pd import PD_SHAPES, PdFit, fit_pd_endpoint, pd_loo_refits, pd_response
from .pmx.pk import PkModel, predict_concentrations
from .pmx.population import (
    ERROR_MODELS,
    FitWarning,
    PopulationFit,
    empirical_bayes_estimates,
    fit_population,
    importance_sampling_ofv,
)
from .pmx.study import DATASETS, PmxRoles, StudyEvents, load_dataset, pmx_roles, prepare_study
from .rounding import round_significant
from .tables import BookTable, and_list, book_table, percentile_name

__version__ = "0.1.0"

__all__ = [
    "DATASETS",
    "ERROR_MODELS",
    "FINGERPRINT_FIELDS",
    "PD_SHAPES",
    "AttendanceAttack",
    "AttributeInversion",
    "BlqComparison",
    "BookTable",
    "ConstructedCases",
    "CovariateEffect",
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
    "WorkedExample",
    "and_list",
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
    "compare_blq_methods",
    "constructed_warfarin_cases",
    "dp_mean_query",
    "draw_attendance",
    "empirical_bayes_estimates",
    "epsilon_shrinkage",
    "equivalent_patients",
    "exact_means",
    "fit_pd_endpoint",
    "fit_population",
    "fit_residuals",
    "fit_status",
    "fold_categories",
    "generator_membership_attack",
    "goodness_of_fit_plot",
    "importance_sampling_ofv",
    "influence_moves",
    "inversion_sweep",
    "irfil",
    "jackknife_moves",
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
    "parse_effects",
    "pd_influence_moves",
    "pd_loo_refits",
    "pd_response",
    "pd_shape_moves",
    "per_example_fil",
    "per_example_heuristics",
    "percentile_name",
    "pmx_roles",
    "population_attack",
    "predict_concentrations",
    "prepare_study",
    "privacy_checks_across_studies",
    "r_reference_tables",
    "r_worked_example",
    "random_predicates",
    "reference_sample_test",
    "refuse_unauditable",
    "release_checks",
    "release_problems",
    "release_shares",
    "roc_curve",
    "round_significant",
    "simplified_prediction",
    "simulate_blq_study",
    "simulate_tracing",
    "single_reference_test",
    "subset_fil",
    "synpmx_model_estimate",
    "synpmx_model_generate",
    "trimmed_log_summary",
    "true_positive_rate_at",
    "visual_predictive_check",
    "vpc_plot",
]
