"""Residual diagnostics: NONMEM's PRED, IPRED, WRES, CWRES and IWRES, and epsilon-shrinkage."""

import types
import warnings

import numpy as np
import pandas as pd
import pytest
from scipy.linalg import fractional_matrix_power

from synpmx_lite.pmx import diagnostics, population
from synpmx_lite.pmx.blq import simulate_blq_study
from synpmx_lite.pmx.diagnostics import (
    epsilon_shrinkage,
    fit_residuals,
    visual_predictive_check,
    vpc_plot,
)
from synpmx_lite.pmx.pk import PkModel, predict_concentrations
from synpmx_lite.pmx.population import FitWarning, fit_population
from synpmx_lite.pmx.study import load_dataset, pmx_roles, prepare_study
from tests.pmx.test_population import simulate


def inverse_root(covariance):
    """The symmetric inverse square root NONMEM weights residuals with."""
    return np.real(fractional_matrix_power(covariance, -0.5))


@pytest.fixture(scope="module")
def simulated_fit():
    """A combined-error one-compartment oral study simulated from known parameters, fitted."""
    data, roles = simulate(
        PkModel(route="oral"),
        [2.0, 20.0, 1.0],
        [0.3, 0.2, 0.3],
        n=80,
        times=[0.5, 1, 2, 4, 8, 12, 24],
        amount=100.0,
        additive=0.1,
        proportional=0.1,
        seed=23,
    )
    study = prepare_study(data, roles)
    return fit_population(study, error="combined"), study


def test_residuals_are_standard_normal_on_data_simulated_from_the_model(simulated_fit):
    fit, _ = simulated_fit
    table = fit.residuals()
    assert len(table) == fit.n_observations == 80 * 7
    for column in ("cwres", "wres"):
        assert abs(table[column].mean()) < 0.15
        assert table[column].std() == pytest.approx(1.0, abs=0.12)
    assert abs(table["iwres"].mean()) < 0.15
    # Seven observations a patient and three random effects: the IWRES shrink a little.
    assert 0 < fit.epsilon_shrinkage == epsilon_shrinkage(table) < 0.3


def _by_hand(fit, study, i):
    """Patient ``i``'s residual rows, its prediction as a function of the log parameters, and
    the fit's log typical values, Omega and residual error, to recompute the residuals with."""
    table = fit_residuals(fit, study)
    rows = table[table["id"] == study.ids[i]]
    names = list(fit.model.parameters)
    dose = (study.dose_time[i : i + 1], study.dose_amount[i : i + 1],
            study.dose_duration[i : i + 1])  # fmt: skip
    times = rows["time"].to_numpy()[None]

    def f(log_theta):
        return predict_concentrations(fit.model, np.exp(log_theta)[None], *dose, times)[0]

    mu, omega = np.log(fit.typical[names].to_numpy()), np.diag(fit.omega[names].to_numpy())
    return rows, f, mu, omega, fit.residual["additive"], fit.residual["proportional"]


def _slopes(f, at, step=1e-6):
    """Central differences of ``f`` in each log parameter at ``at``."""
    return np.column_stack([(f(at + step * e) - f(at - step * e)) / (2 * step)
                            for e in np.eye(at.size)])  # fmt: skip


def test_the_residuals_follow_nonmems_definitions_patient_by_patient(simulated_fit):
    fit, study = simulated_fit
    for i in (0, 41):
        rows, f, mu, omega, a, b = _by_hand(fit, study, i)
        eta = fit.eta.iloc[i][list(fit.model.parameters)].to_numpy()
        g = _slopes(f, mu + eta)
        ipred = f(mu + eta)
        covariance = g @ omega @ g.T + np.diag(a**2 + b**2 * ipred**2)
        expected = inverse_root(covariance) @ (rows["dv"].to_numpy() - ipred + g @ eta)
        np.testing.assert_allclose(rows["cwres"], expected, rtol=1e-5, atol=1e-7)
        np.testing.assert_allclose(rows["pred"], f(mu), rtol=1e-12)
        np.testing.assert_allclose(
            rows["iwres"], (rows["dv"] - ipred) / np.sqrt(a**2 + b**2 * ipred**2), rtol=1e-10
        )


def test_residuals_refuse_another_study(simulated_fit):
    fit, study = simulated_fit
    with pytest.raises(ValueError, match="study must hold the fit's patients"):
        fit_residuals(fit, study.subset(np.arange(study.n_patients) > 0))


# A warfarin shadow cohort (24 of 32 patients, by position) whose fit lands on the flip-flop
# optimum: V a thirtieth of the drug's, once reported converged.
FLIP_FLOP_COHORT = [2, 3, 4, 7, 8, 10, 11, 12, 13, 15, 16, 17, 18, 19, 20, 21, 22, 25, 26, 27,
                    28, 29, 30, 31]  # fmt: skip


def test_the_degenerate_flip_flop_fit_of_a_warfarin_shadow_cohort_is_flagged():
    study = prepare_study(*load_dataset("warfarin"))
    cohort = study.subset(np.isin(np.arange(study.n_patients), FLIP_FLOP_COHORT))
    with pytest.warns(FitWarning, match="not identified: ka .* below the elimination rate"):
        fit = fit_population(cohort)
    assert not fit.converged
    assert fit.typical["v"] < fit.typical["cl"] / fit.typical["ka"] * 1.001  # V is CL/ka'
    assert fit.typical["v"] < 7.0 / 20
    [message] = [m for m in fit.diagnostics if "flip-flop" in m]
    mirror_v = float(message.split("against ")[1].split(" ")[0])
    assert 6 < mirror_v < 10  # the mirror is the drug's volume


def test_a_fit_on_the_usual_side_runs_no_mirror_and_stays_converged():
    fit = fit_population(prepare_study(*load_dataset("warfarin")))
    assert fit.converged and fit.typical["ka"] > fit.typical["cl"] / fit.typical["v"]


def test_a_search_stuck_on_the_flip_flop_side_is_flagged_as_a_local_optimum(monkeypatch):
    # The only start is the flip-flop mirror of warfarin's optimum (ka and CL/V swapped): the
    # search stays on that side, and the mirror search finds the usual optimum, lower.
    study = prepare_study(*load_dataset("warfarin"))
    usual = fit_population(study)
    cl, v, ka = usual.typical[["cl", "v", "ka"]]
    monkeypatch.setattr(population, "_pooled_starts", lambda *_: [np.log([cl, cl / ka, cl / v])])
    with pytest.warns(FitWarning, match="a local optimum: another start, the flip-flop mirror"):
        stuck = fit_population(study)
    assert not stuck.converged and stuck.typical["ka"] < stuck.typical["cl"] / stuck.typical["v"]
    [message] = [m for m in stuck.diagnostics if "local optimum" in m]
    lower_by = float(message.split("lower by ")[1].split(";")[0])
    assert lower_by == pytest.approx(stuck.ofv - usual.ofv, rel=0.01)
    assert float(message.split("against ")[1].split(" ")[0]) == pytest.approx(v, rel=0.01)


@pytest.mark.parametrize("corrected", [False, True])
def test_the_vpc_of_data_simulated_from_the_fit_covers_the_observed_percentiles(
    simulated_fit, corrected
):
    fit, _ = simulated_fit
    observed, percentiles = visual_predictive_check(
        fit, replicates=100, seed=4, prediction_corrected=corrected
    )
    assert len(percentiles) == 3 * 7 and len(observed) == fit.n_observations
    inside = (percentiles["observed"] >= percentiles["low"]) & (
        percentiles["observed"] <= percentiles["high"]
    )
    assert inside.mean() >= 0.8  # 95 % intervals, 21 of them, from one simulated study
    again = visual_predictive_check(fit, replicates=100, seed=4, prediction_corrected=corrected)
    pd.testing.assert_frame_equal(again[1], percentiles)
    assert (percentiles["low"] <= percentiles["median"]).all()


def test_the_vpc_legend_lists_the_percentiles_low_to_high(simulated_fit):
    # Named as strings, "50th" sorts before "5th": the legend must follow the numbers instead,
    # with the median alone in its colour.
    observed, percentiles = visual_predictive_check(simulated_fit[0], replicates=20, seed=4)
    plot = vpc_plot(observed, percentiles, ylabel="concentration")
    shown = plot.data["percentile"]
    assert list(shown.cat.categories) == ["5th", "50th", "95th"]
    fill = next(s for s in plot.scales if "fill" in s.aesthetics)
    colours = fill.palette(3)
    assert colours["50th"] != colours["5th"] == colours["95th"]


def test_the_vpc_refuses_a_fit_without_its_study(simulated_fit):
    from dataclasses import replace

    with pytest.raises(TypeError, match="holds its study"):
        visual_predictive_check(replace(simulated_fit[0], study=None), seed=1)


@pytest.fixture(scope="module")
def correlated_fit():
    """A one-compartment IV study whose CL and V etas are simulated with correlation 0.9,
    fitted with the pair correlated."""
    rng = np.random.default_rng(31)
    n, times = 60, np.array([0.5, 2, 6, 12, 24])
    sd = np.array([0.4, 0.3])
    covariance = sd[:, None] * np.array([[1.0, 0.9], [0.9, 1.0]]) * sd[None, :]
    theta = np.array([1.0, 10.0]) * np.exp(rng.multivariate_normal([0, 0], covariance, n))
    model = PkModel(route="iv")
    f = predict_concentrations(
        model, theta, np.zeros((n, 1)), np.full((n, 1), 100.0), np.zeros((n, 1)),
        np.broadcast_to(times, (n, times.size)),
    )  # fmt: skip
    dv = f * (1 + 0.1 * rng.standard_normal(f.shape))
    data = pd.DataFrame({
        "ID": np.repeat(np.arange(1, n + 1), times.size + 1),
        "TIME": np.column_stack([np.zeros(n), np.broadcast_to(times, f.shape)]).ravel(),
        "AMT": np.column_stack([np.full(n, 100.0), np.zeros(f.shape)]).ravel(),
        "DV": np.column_stack([np.zeros(n), dv]).ravel(),
        "EVID": np.tile(np.r_[1, np.zeros(times.size, dtype=int)], n),
    })  # fmt: skip
    roles = pmx_roles(id="ID", time="TIME", dv="DV", amt="AMT", evid="EVID", model=model)
    study = prepare_study(data, roles)
    return fit_population(study, error="proportional", correlated=("cl", "v")), study


def test_the_cwres_of_a_correlated_fit_use_the_full_omega(correlated_fit):
    """CWRES by the definition, written densely for one patient with Omega's off-diagonal
    covariance rho sd_cl sd_v: the diagonal Omega once used here gives other values."""
    fit, study = correlated_fit
    rho = fit.correlation["cl,v"]
    assert fit.converged and rho > 0.8
    sd = np.sqrt(fit.omega[["cl", "v"]].to_numpy())
    omega = np.diag(sd**2)
    omega[0, 1] = omega[1, 0] = rho * sd[0] * sd[1]
    mu, b = np.log(fit.typical[["cl", "v"]].to_numpy()), fit.residual["proportional"]
    table = fit_residuals(fit, study)
    i = 7
    rows = table[table["id"] == study.ids[i]]
    times = rows["time"].to_numpy()[None]

    def f(log_theta):
        dose = (np.zeros((1, 1)), np.full((1, 1), 100.0), np.zeros((1, 1)))
        return predict_concentrations(fit.model, np.exp(log_theta)[None], *dose, times)[0]

    eta = fit.eta.iloc[i][["cl", "v"]].to_numpy()
    step = 1e-6
    g = np.column_stack([(f(mu + eta + step * e) - f(mu + eta - step * e)) / (2 * step)
                         for e in np.eye(2)])  # fmt: skip
    ipred = f(mu + eta)
    r = rows["dv"].to_numpy() - ipred + g @ eta
    dense = inverse_root(g @ omega @ g.T + np.diag((b * ipred) ** 2)) @ r
    np.testing.assert_allclose(rows["cwres"], dense, rtol=1e-5, atol=1e-7)
    diagonal = inverse_root(g @ np.diag(sd**2) @ g.T + np.diag((b * ipred) ** 2)) @ r
    assert np.abs(diagonal - dense).max() > 0.05


def test_the_vpc_draws_the_etas_with_the_fitted_correlation(correlated_fit, monkeypatch):
    fit, _ = correlated_fit
    drawn = []
    draw = diagnostics._random_effects
    monkeypatch.setattr(
        diagnostics, "_random_effects", lambda *a: drawn.append(draw(*a)) or drawn[-1]
    )
    visual_predictive_check(fit, replicates=100, seed=3)
    eta = drawn[0].reshape(-1, 2)  # 6,000 draws of (cl, v)
    rho = fit.correlation["cl,v"]
    # The SE of a sample correlation is about (1 - rho^2) / sqrt(n): 0.0025 here.
    assert np.corrcoef(eta.T)[0, 1] == pytest.approx(rho, abs=0.01)
    np.testing.assert_allclose(eta.std(axis=0), np.sqrt(fit.omega[["cl", "v"]]), rtol=0.03)


def test_censored_rows_do_not_move_the_measured_rows_residuals():
    """CWRES and WRES of a censored fit's measured rows equal those of the same fit on the
    study without its censored rows; the censored rows have NaN residuals."""
    data, roles = simulate_blq_study(n=12, lloq=1.5, error="proportional", rng=3)
    observed = data[data["EVID"] == 0]
    # A censored row before a measured one in some patient: it must not enter its block.
    assert (observed.groupby("ID")["CENS"].cummax().astype(bool) & (observed["CENS"] == 0)).any()
    study = prepare_study(data, pmx_roles(**roles))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FitWarning)
        fit = fit_population(study, error="proportional")
    table = fit_residuals(fit, study)
    censored = study.obs_censored[study.obs_mask]
    assert table.loc[censored, ["res", "wres", "cwres", "iwres"]].isna().all().all()
    measured = fit_residuals(fit, prepare_study(data[data["CENS"] == 0], pmx_roles(**roles)))
    for column in ("res", "wres", "cwres", "iwres"):
        np.testing.assert_allclose(
            table.loc[~censored, column], measured[column], rtol=1e-10, atol=1e-12
        )


def test_wres_take_the_symmetric_inverse_square_root_not_a_cholesky_factor(simulated_fit):
    """One patient's WRES by NONMEM's definition; a Cholesky factor gives other values."""
    fit, study = simulated_fit
    rows, f, mu, omega, a, b = _by_hand(fit, study, 5)
    g0 = _slopes(f, mu)
    covariance = g0 @ omega @ g0.T + np.diag(a**2 + b**2 * f(mu) ** 2)
    r = rows["dv"].to_numpy() - f(mu)
    np.testing.assert_allclose(rows["wres"], inverse_root(covariance) @ r, rtol=1e-5, atol=1e-7)
    cholesky = np.linalg.solve(np.linalg.cholesky(covariance), r)
    assert np.abs(cholesky - rows["wres"].to_numpy()).max() > 0.05


def test_rows_of_no_residual_variance_have_no_weighted_residuals():
    """theo_sd under proportional error: the predose rows (PRED 0 before the oral dose is
    absorbed, DV not 0) have no residual variance, so no WRES, CWRES or IWRES, and every
    other row's residuals are finite."""
    study = prepare_study(*load_dataset("theo_sd"))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FitWarning)
        fit = fit_population(study, error="proportional")
    table = fit_residuals(fit, study)
    silent = (table["pred"] == 0) & (table["dv"] != 0)
    assert silent.sum() >= 1
    weighted = ["wres", "cwres", "iwres"]
    assert table.loc[silent, weighted].isna().all().all()
    assert np.isfinite(table.loc[~silent & (table["ipred"] > 0), weighted]).all().all()


def test_a_patient_whose_covariance_has_no_inverse_root_gets_no_weighted_residuals():
    """Three patients of two rows each: one well posed, one with a non-finite slope, one whose
    covariance is singular to working precision (a tiny residual variance under a slope of
    rank one). Only the first has weighted residuals, and they are its inverse root's."""
    problem = types.SimpleNamespace(patient=np.repeat([0, 1, 2], 2), n_patients=3)
    r = np.array([0.5, -1.0, 0.3, 0.2, 1.0, 2.0])
    g = np.array([[1.0], [2.0], [np.nan], [1.0], [1.0], [1.0]])
    omega = np.array([[0.09]])
    variance = np.array([0.04, 0.04, 0.04, 0.04, 1e-40, 1e-40])
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # degenerate blocks are handled, not warned about
        weighted = diagnostics._weighted(problem, r, g, omega, variance, np.ones(6, bool))
    well_posed = g[:2] @ omega @ g[:2].T + np.diag(variance[:2])
    np.testing.assert_allclose(weighted[:2], inverse_root(well_posed) @ r[:2], rtol=1e-12)
    assert np.isnan(weighted[2:]).all()


def test_a_combined_error_component_the_data_do_not_determine_names_the_simpler_error_model():
    # pheno_sd under combined error: the proportional part's RSE is about 300 %. The fit is
    # flagged, and the diagnostic says which one-component model keeps what the data determine.
    with pytest.warns(FitWarning, match="residual proportional"):
        fit = fit_population(prepare_study(*load_dataset("pheno_sd")), error="combined")
    assert not fit.converged
    [message] = [m for m in fit.diagnostics if "residual proportional" in m]
    assert message.endswith(
        "not identified: fit error='additive', the combined error's other component alone"
    )
    simpler = fit_population(prepare_study(*load_dataset("pheno_sd")), error="additive")
    assert simpler.converged
