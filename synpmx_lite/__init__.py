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
    allowlist, the protection rules, checks P1-P6 on the released JSON, synthetic data and the
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
are the public API: every function and class the book, the README and the benchmarks use
(``tests/test_public_api.py`` keeps it so). Most constants (a chapter's thresholds, a stored
result's settings) stay with the module they configure.
"""

from .attacks.audit import (
    audit_shadows,
    exposed_rates,
    fault_kinds,
    paired_change,
    pk_width,
    release_epsilon_bound,
    resampled_epsilon,
    residual_faults_only,
)
from .attacks.audit_results import audit_results
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
from .attacks.public_releases import public_releases
from .attacks.shadow_releases import shadow_releases, shadow_settings
from .attacks.tracing import (
    DpMeanQuery,
    OpenDpRecord,
    TracingSimulation,
    TracingTest,
    calibrated_threshold,
    dp_mean_query,
    exact_means,
    half_way_budget,
    load_opendp_record,
    load_pums,
    random_predicates,
    reference_sample_test,
    simulate_tracing,
    single_reference_test,
)
from .attacks.tracing_sweep import sweep_rates
from .attacks.walkthrough import WorkedExample, r_worked_example
from .dp_noise import (
    dp_noise_table,
    epsilon_at_sampling_error,
    laplace_scale,
    median_fold_error,
    noise_over_sampling_error,
    opendp_certificate,
)
from .fisher.bounds import biased_cramer_rao, mean_release_fil
from .fisher.datasets import breast_cancer_data, diabetes_data, digits_data
from .fisher.inversion import AttributeInversion, attribute_inversion, inversion_sweep
from .fisher.leakage import (
    Reweighting,
    accuracy,
    fit_model,
    irfil,
    logistic_l2_path,
    matched_logistic_l2,
    per_example_fil,
    per_example_heuristics,
    per_example_jacobians,
    subset_fil,
)
from .generator.cases import ConstructedCases, constructed_warfarin_cases
from .generator.checks import figures_in, release_checks
from .generator.differencing import differencing_bounds, differencing_tightness, exact_log_summary
from .generator.estimate import (
    ModelFit,
    fit_status,
    model_fingerprint,
    model_privacy_checks,
    privacy_checks_across_studies,
    release_refusal,
    synpmx_model_estimate,
)
from .generator.frontier import frontier_figure, frontier_table, recovered_share, usefulness_results
from .generator.generate import synpmx_model_generate
from .generator.influence import (
    LeftOut,
    PrivacyReport,
    influence_moves,
    jackknife_moves,
    pd_influence_moves,
    pd_shape_moves,
)
from .generator.private_release import noise_free_estimates
from .generator.protections import (
    fold_categories,
    loq_floor,
    trimmed_core_size,
    trimmed_log_summary,
)
from .generator.release import FINGERPRINT_FIELDS, Fingerprint, release_problems
from .generator.utility import (
    covariate_summaries,
    design_rates,
    fingerprint_at,
    model_estimates,
    pd_bands,
    refit_summary,
    rounding_against_rse,
    synthetic_studies,
    vpc_bands,
    vpc_bands_by_arm,
)
from .plotting import theme_book
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
    "accuracy",
    "and_list",
    "attendance_attack",
    "attendance_score",
    "attendance_scores",
    "attribute_inversion",
    "auc",
    "auc_difference",
    "auc_standard_error",
    "audit_results",
    "audit_shadows",
    "biased_cramer_rao",
    "book_table",
    "breast_cancer_data",
    "calibrated_threshold",
    "compare_blq_methods",
    "constructed_warfarin_cases",
    "covariate_summaries",
    "design_rates",
    "diabetes_data",
    "differencing_bounds",
    "differencing_tightness",
    "digits_data",
    "dp_mean_query",
    "dp_noise_table",
    "draw_attendance",
    "empirical_bayes_estimates",
    "epsilon_at_sampling_error",
    "epsilon_shrinkage",
    "equivalent_patients",
    "exact_log_summary",
    "exact_means",
    "exposed_rates",
    "fault_kinds",
    "figures_in",
    "fingerprint_at",
    "fit_model",
    "fit_pd_endpoint",
    "fit_population",
    "fit_residuals",
    "fit_status",
    "fold_categories",
    "frontier_figure",
    "frontier_table",
    "generator_membership_attack",
    "goodness_of_fit_plot",
    "half_way_budget",
    "importance_sampling_ofv",
    "influence_moves",
    "inversion_sweep",
    "irfil",
    "jackknife_moves",
    "laplace_scale",
    "load_dataset",
    "load_opendp_record",
    "load_pums",
    "logistic_l2_path",
    "loq_floor",
    "matched_logistic_l2",
    "mean_release_fil",
    "median_fold_error",
    "membership_tables",
    "model_estimates",
    "model_fingerprint",
    "model_privacy_checks",
    "noise_free_estimates",
    "noise_over_sampling_error",
    "opendp_certificate",
    "paired_change",
    "parse_effects",
    "pd_bands",
    "pd_influence_moves",
    "pd_loo_refits",
    "pd_response",
    "pd_shape_moves",
    "per_example_fil",
    "per_example_heuristics",
    "per_example_jacobians",
    "percentile_name",
    "pk_width",
    "pmx_roles",
    "population_attack",
    "predict_concentrations",
    "prepare_study",
    "privacy_checks_across_studies",
    "public_releases",
    "r_reference_tables",
    "r_worked_example",
    "random_predicates",
    "recovered_share",
    "reference_sample_test",
    "refit_summary",
    "refuse_unauditable",
    "release_checks",
    "release_epsilon_bound",
    "release_problems",
    "release_refusal",
    "release_shares",
    "resampled_epsilon",
    "residual_faults_only",
    "roc_curve",
    "round_significant",
    "rounding_against_rse",
    "shadow_releases",
    "shadow_settings",
    "simplified_prediction",
    "simulate_blq_study",
    "simulate_tracing",
    "single_reference_test",
    "subset_fil",
    "sweep_rates",
    "synpmx_model_estimate",
    "synpmx_model_generate",
    "synthetic_studies",
    "theme_book",
    "trimmed_core_size",
    "trimmed_log_summary",
    "true_positive_rate_at",
    "usefulness_results",
    "visual_predictive_check",
    "vpc_bands",
    "vpc_bands_by_arm",
    "vpc_plot",
]
