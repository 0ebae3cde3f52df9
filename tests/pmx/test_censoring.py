"""Beal's M3 for observations below the limit of quantification (issue 23, section 4)."""

import warnings

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from synpmx_lite.generator.estimate import release_refusal, synpmx_model_estimate
from synpmx_lite.pmx import _censored, _foce, population
from synpmx_lite.pmx.blq import compare_blq_methods, simulate_blq_study
from synpmx_lite.pmx.diagnostics import visual_predictive_check
from synpmx_lite.pmx.population import ERROR_MODELS, fit_population, importance_sampling_ofv
from synpmx_lite.pmx.study import load_dataset, pmx_roles, prepare_study
from tests.pmx.finite_differences import assert_exact_derivatives


def _censored_study(error, *, n=12, lloq=1.0, seed=3):
    data, roles = simulate_blq_study(n=n, lloq=lloq, error=error, rng=seed)
    return prepare_study(data, pmx_roles(**roles))


def test_the_m3_term_and_its_derivatives_are_minus_twice_the_log_probability():
    z = np.array([-30.0, -5.0, -1.0, 0.0, 0.7, 4.0, 30.0])
    g, g1, g2, g3 = _censored._z_derivatives(z)
    np.testing.assert_allclose(g, -2 * stats.norm.logcdf(z), rtol=1e-12)
    assert g[3] == pytest.approx(2 * np.log(2))
    step = 1e-5
    for value, derivative in ((g, g1), (g1, g2), (g2, g3)):
        index = [0, 1, 2, 3, 4, 5, 6] if value is g else [1, 2, 3, 4, 5]
        shifted = _censored._z_derivatives(z[index] + step), _censored._z_derivatives(
            z[index] - step
        )
        order = [g is value, g1 is value, g2 is value].index(True)
        numeric = (shifted[0][order] - shifted[1][order]) / (2 * step)
        np.testing.assert_allclose(derivative[index], numeric, rtol=1e-5, atol=1e-9)
    # The weight of the information is positive: log Phi is concave.
    assert (g2 > 0).all()


@pytest.mark.parametrize("error", ["additive", "proportional", "combined", "log"])
def test_m3_gradient_and_mode_sensitivity_match_central_differences(error, monkeypatch):
    """The OFV's exact gradient and d eta_hat / dx with a third of the observations censored,
    against central differences, under every error model."""
    monkeypatch.setattr(_foce, "_MODE_TOLERANCE", 1e-13)
    study = _censored_study(error)
    fitted = "additive" if error == "log" else error
    problem = _foce._Problem(study, study.roles.model, fitted, ERROR_MODELS[fitted])
    assert 0.25 < problem.censored.mean() < 0.45
    start = population._pooled_starts(problem, study)[0]
    residual = {"combined": [0.1, 0.2], "proportional": [0.2], "additive": [0.2]}[fitted]
    x = np.r_[start, np.full(problem.p, np.log(0.3)), np.log(residual)]
    x = x + 0.05 * np.random.default_rng(2).standard_normal(x.size)
    assert_exact_derivatives(problem, x, rtol=1e-6, atol=1e-5, eta_atol=1e-6)


def test_m3_objective_replaces_the_density_by_the_probability_below_the_limit():
    """At eta = 0, a censored row adds -2 log Phi((L - f)/sd) where the density was."""
    study = _censored_study("combined")
    problem = _foce._Problem(study, study.roles.model, "combined", ERROR_MODELS["combined"])
    mu = np.log([[2.0, 20.0, 1.2]])[:, None, :]
    residual = np.array([[0.1, 0.25]])
    eta = np.zeros((1, study.n_patients, 3))
    objective = _foce._joint(problem, mu, np.zeros((1, 3)), residual, eta, 0)["objective"]
    f = problem.predictions(mu + eta, 0)[0][0]
    sd = np.hypot(0.1, 0.25 * f)
    censored = problem.censored
    data = np.where(
        censored,
        -2 * stats.norm.logcdf((problem.y - f) / sd),
        2 * np.log(sd) + ((problem.y - f) / sd) ** 2,
    )
    np.testing.assert_allclose(objective[0], problem.per_patient(data, axis=-1), rtol=1e-12)


def test_m3_laplace_objective_agrees_with_importance_sampling():
    """The FOCE-I OFV with censored terms against the marginal likelihood by importance
    sampling (the additive case, where the censored weight is the exact Laplace one)."""
    data, roles = simulate_blq_study(n=20, lloq=1.5, error="additive", rng=5)
    study = prepare_study(data, pmx_roles(**roles))
    fit = fit_population(study, error="additive")
    assert fit.converged and fit.n_censored > 0
    ofv, error = importance_sampling_ofv(study, fit, draws=3000, seed=1)
    assert error < 0.2
    assert abs(ofv - fit.ofv) < 3.0


def _mean_bias(error, replicates):
    """Mean relative bias of M3 and M1 over seeded replicates at a reduced size."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", population.FitWarning)
        runs = [
            compare_blq_methods(n=40, lloq=1.5, error=error, rng=seed)
            for seed in range(replicates)
        ]
    relative = [run.estimates.loc[["M3", "M1"]] / run.estimates.loc["truth"] - 1 for run in runs]
    return sum(relative) / replicates, np.mean([run.censored_share for run in runs])


@pytest.mark.parametrize(
    ("error", "residual"), [("proportional", "proportional"), ("log", "additive")]
)
def test_m3_is_less_biased_than_discarding_the_censored_rows(error, residual):
    """A third of the concentrations below the limit: M1 (discarding them) underestimates
    clearance and overestimates the volume and shrinks the residual error; M3 does not."""
    bias, share = _mean_bias(error, replicates=4)
    assert 0.3 < share < 0.4
    for name in ("cl", "v", residual):
        assert abs(bias.loc["M3", name]) < abs(bias.loc["M1", name]), name
    assert bias.loc["M1", "cl"] < -0.15 and abs(bias.loc["M3", "cl"]) < 0.06


@pytest.fixture(scope="module")
def theophylline():
    return load_dataset("theo_sd")


def test_a_study_without_censored_rows_fits_exactly_as_before(theophylline):
    """A CENS column of zeros leaves the arithmetic untouched: the same fit, bit for bit."""
    data, roles = theophylline
    flagged = data.assign(CENS=0)
    with_role = prepare_study(flagged, pmx_roles(**{**_fields(roles), "cens": "CENS"}))
    assert with_role.obs_censored is None
    before = fit_population(prepare_study(data, roles))
    after = fit_population(with_role)
    assert after.ofv == before.ofv
    pd.testing.assert_series_equal(after.typical, before.typical, check_exact=True)
    pd.testing.assert_frame_equal(after.eta, before.eta, check_exact=True)
    assert after.n_censored == 0


def _fields(roles):
    names = ("id", "time", "dv", "amt", "evid", "cmt", "covariates", "weight", "model")
    return {name: getattr(roles, name) for name in names}


def test_censored_rows_the_engine_does_not_model_are_refused(theophylline):
    data, roles = theophylline
    fields = {**_fields(roles), "cens": "CENS"}
    observation = data.index[data["EVID"] == 0][3]
    dose = data.index[data["EVID"] != 0][0]
    cases = {  # the message, its column and the row it names
        ("values other than 0 and 1", "CENS", observation): data.assign(
            CENS=np.where(data.index == observation, -1, 0)
        ),
        ("not observations", "CENS", dose): data.assign(CENS=(data.index == dose).astype(int)),
        ("not positive", "DV", observation): data.assign(
            CENS=(data.index == observation).astype(int),
            DV=data["DV"].mask(data.index == observation, 0.0),
        ),
    }
    for (message, column, row), table in cases.items():
        with pytest.raises(ValueError, match=f"column '{column}' .*{message}.*rows {row}$"):
            prepare_study(table, pmx_roles(**fields))
    with pytest.raises(ValueError, match="'CENS' reads as NONMEM's CENS"):
        prepare_study(data.assign(CENS=0), roles)


def test_a_censored_study_fits_by_m3_and_the_generator_refuses_it():
    study = _censored_study("proportional", n=30, lloq=1.5)
    fit = fit_population(study, error="proportional")
    assert fit.n_censored == int(study.obs_censored.sum())
    assert "Beal's M3" in str(fit)
    residuals = fit.residuals()
    assert residuals["cwres"].isna().sum() == fit.n_censored
    with pytest.raises(ValueError, match=r"column 'CENS'.*predictive check of censored data"):
        visual_predictive_check(fit, replicates=20, seed=1)
    assert "column 'CENS'" in release_refusal(study)
    data, roles = simulate_blq_study(n=30, lloq=1.5, error="proportional", rng=3)
    with pytest.raises(ValueError, match=r"below the limit of quantification.*'CENS'"):
        synpmx_model_estimate(data, pmx_roles(**roles), seed=1)


def test_the_uncensored_fit_reads_the_same_drawn_values():
    """With a limit nothing falls below, M3, M1 and the uncensored fit see one study and agree
    (the uncensored fit reads the values the censored study was drawn from)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", population.FitWarning)
        tiny = compare_blq_methods(n=12, lloq=1e-6, error="proportional", rng=3, uncensored=True)
    assert tiny.censored_share == 0 and set(tiny.converged) == {"M3", "M1", "uncensored"}
    rows = tiny.estimates.loc[["M3", "M1", "uncensored"]].to_numpy()
    np.testing.assert_allclose(rows, rows[[0, 0, 0]], rtol=1e-12)
    with pytest.raises(TypeError, match="uncensored must be a bool"):
        compare_blq_methods(n=12, lloq=1.5, error="additive", rng=3, uncensored=1)


def test_m3_under_combined_error_is_refused_naming_the_column_and_the_rows():
    """Combined error's additive part is set by the low concentrations censoring hides: M3
    returned it about three times too large while reporting convergence
    (benchmarks/bench_m3.py), so such a fit is refused, by default error too; the same study
    with its censored rows discarded (its CENS column all 0) fits as before."""
    data, roles = simulate_blq_study(n=30, lloq=1.5, error="combined", rng=3)
    study = prepare_study(data, pmx_roles(**roles))
    rows = data[data["CENS"].eq(1) & data["EVID"].eq(0)]
    assert len(rows) > 0
    first = f"the first of patient {int(rows['ID'].iloc[0])!r} at time {rows['TIME'].iloc[0]:g}"
    named = rf"\(column 'CENS', {len(rows)} rows; {first}\)"
    with pytest.raises(ValueError, match=rf"error='combined' cannot .*{named}"):
        fit_population(study, error="combined")
    with pytest.raises(ValueError, match=rf"error='combined' \(the default .*{named}"):
        fit_population(study)
    uncensored = prepare_study(data[data["CENS"] == 0], pmx_roles(**roles))
    assert fit_population(uncensored, error="combined").n_censored == 0
