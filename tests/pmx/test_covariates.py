"""Covariate effects: parsing, exact gradients, recovery on simulated data, the summary."""

import numpy as np
import pandas as pd
import pytest

from synpmx_lite.pmx import _foce, population
from synpmx_lite.pmx.covariates import parse_effects
from synpmx_lite.pmx.population import ERROR_MODELS, fit_population
from synpmx_lite.pmx.study import load_dataset, pmx_roles, prepare_study
from tests.pmx.finite_differences import assert_exact_derivatives
from tests.simulated import weight_data


def weight_study(n=60, seed=3):
    return prepare_study(*weight_data(n=n, seed=seed))


@pytest.fixture(scope="module")
def weight_fit():
    study = weight_study()
    return study, fit_population(
        study, error="proportional", effects=("cl ~ WT/70", "v ~ WT/70", "cl ~ SEX")
    )


def test_simulated_exponents_and_factor_are_recovered_within_their_standard_errors(weight_fit):
    _, fit = weight_fit
    assert fit.converged
    table = fit.summary().loc["effect"]
    truth = {"cl ~ WT/70": 0.75, "v ~ WT/70": 1.0, "cl ~ SEX": 0.8}
    for label, value in truth.items():
        estimate, se = table.loc[label, ["estimate", "se"]]
        assert abs(estimate - value) < 3 * se, label
    assert 0 < table.loc["v ~ WT/70", "se"] < 0.2  # a rich study determines the exponent
    np.testing.assert_allclose(fit.typical, [1.0, 10.0], rtol=0.1)


def test_the_summary_reads_an_exponent_on_its_own_scale(weight_fit):
    _, fit = weight_fit
    table = fit.summary()
    row = table.loc[("effect", "v ~ WT/70")]
    se = np.sqrt(fit.covariance.loc[("effect", "v ~ WT/70"), ("effect", "v ~ WT/70")])
    assert row["estimate"] == fit.effects["v ~ WT/70"]
    assert row["se"] == pytest.approx(se)
    assert row["rse_percent"] == pytest.approx(100 * se / abs(row["estimate"]))
    assert row["ci_low"] == pytest.approx(row["estimate"] - 1.959964 * se, rel=1e-6)
    # A level's factor is read on the log scale, as the typical values are.
    factor = table.loc[("effect", "cl ~ SEX")]
    assert factor["ci_low"] * factor["ci_high"] == pytest.approx(factor["estimate"] ** 2)


def test_individual_parameters_carry_the_covariates_through_the_effects(weight_fit):
    study, fit = weight_fit
    log_weight = np.log(study.covariates["WT"].to_numpy(float) / 70)
    shift = fit.covariate_shift["v"].to_numpy()
    np.testing.assert_allclose(shift, fit.effects["v ~ WT/70"] * log_weight)
    np.testing.assert_allclose(
        np.log(fit.individual["v"]), np.log(fit.typical["v"]) + shift + fit.eta["v"]
    )


def test_effects_lower_the_objective_of_warfarin():
    study = prepare_study(*load_dataset("warfarin"))
    without = fit_population(study, error="additive")
    with_weight = fit_population(study, error="additive", effects=("cl ~ wt/70", "v ~ wt/70"))
    assert with_weight.converged
    assert with_weight.ofv < without.ofv - 20  # weight explains much of V's variability
    assert with_weight.omega["v"] < without.omega["v"]
    assert without.effects.empty and without.covariate_shift is None


def test_exact_gradient_in_the_effects_matches_central_differences(monkeypatch):
    monkeypatch.setattr(_foce, "_MODE_TOLERANCE", 1e-13)
    study = prepare_study(*load_dataset("warfarin"))
    model = study.roles.model
    effects = parse_effects(
        ("cl ~ wt/70", "v ~ wt", "cl ~ sex"), study.covariates, (), tuple(model.parameters)
    )
    problem = _foce._Problem(study, model, "combined", ERROR_MODELS["combined"], effects)
    start = population._pooled_starts(problem, study)[0]
    x = np.r_[start, np.full(problem.p, np.log(0.3)), np.log([0.5, 0.1]), [0.7, 0.9, -0.2]]
    assert_exact_derivatives(problem, x, rtol=1e-5, atol=1e-4, eta_atol=1e-5)


def test_the_reference_defaults_to_the_median_and_the_most_common_level():
    study = prepare_study(*load_dataset("warfarin"))
    covariates = study.covariates
    weight, sex = parse_effects(("cl ~ wt", "cl ~ sex"), covariates, (), ("cl", "v", "ka"))
    assert weight.reference == pytest.approx(np.median(covariates["wt"]))
    assert sex.level != covariates["sex"].mode()[0]


@pytest.mark.parametrize(
    "effects, message",
    [
        ("cl ~ wt", "sequence of formulas"),
        (("cl wt",), "is not a formula"),
        (("q ~ wt",), "names parameter 'q'"),
        (("cl ~ height",), "not one of the roles' covariates"),
        (("cl ~ wt", "cl ~ wt/70"), "repeat cl ~ wt"),
        (("cl ~ wt/0",), "must be a positive number"),
        (("cl ~ wt/heavy",), "must be a positive number"),
        (("cl ~ sex/1",), "gives a reference to the categorical"),
    ],
)
def test_bad_effects_are_refused(effects, message):
    study = prepare_study(*load_dataset("warfarin"))
    with pytest.raises((TypeError, ValueError), match=message):
        fit_population(study, effects=effects)


def test_a_covariate_without_variation_is_refused():
    study = prepare_study(*load_dataset("warfarin"))
    constant = study.covariates.assign(wt=70.0, sex="m")
    for formula, message in (("cl ~ wt", "takes one value"), ("cl ~ sex", "takes one level")):
        with pytest.raises(ValueError, match=message):
            parse_effects((formula,), constant, (), ("cl", "v", "ka"))


def test_the_roles_carry_the_effects_and_name_only_their_covariates():
    data, roles = load_dataset("warfarin")
    with pytest.raises(ValueError, match="not one of the covariates"):
        pmx_roles(**_roles_columns(roles), effects=("cl ~ height",))
    named = pmx_roles(**_roles_columns(roles), effects=("v ~ wt/70",))
    fit = fit_population(prepare_study(data, named), error="additive")
    assert list(fit.effects.index) == ["v ~ wt/70"]


def _roles_columns(roles):
    return dict(
        id=roles.id, time=roles.time, dv=roles.dv, amt=roles.amt, evid=roles.evid,
        dvid=roles.dvid, covariates=roles.covariates, weight=roles.weight,
        pk_endpoint=roles.pk_endpoint, model=roles.model,
    )  # fmt: skip


def _slope(y, x):
    """Least-squares slope of y on x."""
    x = x - x.mean()
    return float((x * (y - y.mean())).sum() / (x**2).sum())


def test_empirical_bayes_estimates_read_the_effects_and_leave_no_trend_on_weight(weight_fit):
    """Under the fit's estimates with its effects, the modes are the fit's own etas: mean
    about 0 and no trend on weight, while individual CL follows weight (exponent 0.75).
    Without the effects the modes carry the weight effect themselves."""
    study, fit = weight_fit
    tables = {
        name: pd.DataFrame([values]) for name, values in
        (("typical", fit.typical), ("omega", fit.omega), ("residual", fit.residual))
    }  # fmt: skip
    eta, found = population.empirical_bayes_estimates(
        study, **tables, error=fit.error,
        effect_terms=fit.effect_terms, effects=pd.DataFrame([fit.effects]),
    )  # fmt: skip
    assert found.all()
    np.testing.assert_allclose(eta[0], fit.eta.to_numpy(), atol=1e-6)
    log_weight = np.log(study.covariates["WT"].to_numpy(float) / 70)
    cl = list(fit.model.parameters).index("cl")
    se = fit.omega_sd["cl"] / np.sqrt(study.n_patients)
    assert abs(eta[0, :, cl].mean()) < 3 * se
    assert abs(_slope(eta[0, :, cl], log_weight)) < 0.1
    # Individual CL follows weight (and sex): log CL on both recovers the exponent.
    sex = (study.covariates["SEX"] == fit.effect_terms[2].level).to_numpy(float)
    design = np.column_stack([np.ones_like(sex), log_weight, sex])
    coefficients = np.linalg.lstsq(design, np.log(fit.individual["cl"].to_numpy()), rcond=None)
    assert abs(coefficients[0][1] - 0.75) < 0.15
    plain, _ = population.empirical_bayes_estimates(study, **tables, error=fit.error)
    assert _slope(plain[0, :, cl], log_weight) > 0.4  # the effect left in the modes


def test_residuals_and_vpc_predict_each_patient_at_their_own_covariates(weight_fit):
    """PRED is the typical prediction at each patient's weight and sex: the conditional
    weighted residuals have mean about 0 and no trend on weight."""
    from synpmx_lite.pmx.diagnostics import _problem, _simulated_studies, fit_residuals

    study, fit = weight_fit
    table = fit_residuals(fit, study)
    log_weight = np.log(study.covariates["WT"].to_numpy(float) / 70)
    per_patient = table.groupby("id", sort=False)["cwres"].mean().to_numpy()
    assert abs(table["cwres"].mean()) < 0.1
    assert abs(_slope(per_patient, log_weight)) < 0.3
    _, pred = _simulated_studies(fit, _problem(fit, study), 2, np.random.default_rng(1))
    np.testing.assert_allclose(pred, table["pred"].to_numpy(), rtol=1e-10)
    typical = fit.individual / np.exp(fit.eta.reindex(columns=fit.individual.columns).to_numpy())
    first = table.groupby("id", sort=False).head(1).index[1]  # patient 2's first sample
    assert table.loc[first, "id"] == study.ids[1] and typical.iloc[1]["cl"] != fit.typical["cl"]
