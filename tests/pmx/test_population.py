import json
import warnings
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from synpmx_lite.pmx import _foce, population
from synpmx_lite.pmx.pk import PkModel, predict_concentrations
from synpmx_lite.pmx.population import (
    ERROR_MODELS,
    FitWarning,
    fit_population,
    importance_sampling_ofv,
)
from synpmx_lite.pmx.study import load_dataset, pmx_roles, prepare_study
from tests.pmx.finite_differences import assert_exact_derivatives

DATA = Path(__file__).parent / "data"


def simulate(
    model, typical, omega_sd, *, n, times, amount, duration=0.0, additive, proportional, seed
):
    """A simulated study from known parameters: one dose at 0, the same sampling times."""
    rng = np.random.default_rng(seed)
    typical = np.asarray(typical)
    theta = typical * np.exp(np.asarray(omega_sd) * rng.standard_normal((n, typical.size)))
    times = np.broadcast_to(np.asarray(times, dtype=float), (n, len(times)))
    f = predict_concentrations(
        model, theta, np.zeros((n, 1)), np.full((n, 1), amount), np.full((n, 1), duration), times
    )
    dv = f + np.sqrt(additive**2 + (proportional * f) ** 2) * rng.standard_normal(f.shape)
    ids = np.repeat(np.arange(101, 101 + n), times.shape[1] + 1)
    time = np.column_stack([np.zeros(n), times]).ravel()
    amt = np.column_stack([np.full(n, amount), np.zeros(times.shape)]).ravel()
    obs = np.column_stack([np.zeros(n), dv]).ravel()
    evid = np.tile(np.r_[1, np.zeros(times.shape[1], dtype=int)], n)
    data = pd.DataFrame({"ID": ids, "TIME": time, "AMT": amt, "DV": obs, "EVID": evid})
    data["RATE"] = np.where(evid == 1, amount / duration if duration else 0.0, 0.0)
    # Additive error draws some values below zero: they are measurements here.
    roles = pmx_roles(
        id="ID", time="TIME", dv="DV", amt="AMT", evid="EVID", rate="RATE", model=model,
        negative_dv=True,
    )  # fmt: skip
    return data, roles


def fit_additive_iv_study(omega_sd, *, n, seed):
    """The additive-error fit of a simulated one-compartment IV study: typical CL 1 and V 10,
    both with between-subject SD ``omega_sd``, 100 at time 0, five samples to 24 h, additive
    residual SD 0.3 and no proportional error."""
    data, roles = simulate(
        PkModel(route="iv"),
        [1.0, 10.0],
        [omega_sd, omega_sd],
        n=n,
        times=[0.5, 2, 6, 12, 24],
        amount=100.0,
        additive=0.3,
        proportional=0.0,
        seed=seed,
    )
    return fit_population(prepare_study(data, roles), error="additive")


def test_recovers_a_simulated_oral_study():
    """A 50-patient study: typical values within 10 %, between-subject SDs within 25 %."""
    model = PkModel(route="oral")
    typical, omega_sd = [2.0, 20.0, 1.2], [0.3, 0.2, 0.4]
    data, roles = simulate(
        model,
        typical,
        omega_sd,
        n=50,
        times=[0.25, 0.5, 1, 2, 4, 8, 12, 24],
        amount=100.0,
        additive=0.05,
        proportional=0.1,
        seed=7,
    )
    fit = fit_population(prepare_study(data, roles))
    assert fit.converged
    np.testing.assert_allclose(fit.typical, typical, rtol=0.10)
    np.testing.assert_allclose(fit.omega_sd, omega_sd, rtol=0.25)
    assert fit.residual["proportional"] == pytest.approx(0.1, rel=0.25)
    # Shrinkage is what its definition says, and small with rich sampling.
    np.testing.assert_allclose(fit.shrinkage, 1 - fit.eta.std(ddof=0) / fit.omega_sd)
    assert (fit.shrinkage < 0.2).all()
    assert list(fit.eta.index) == list(range(101, 151))


def test_recovers_a_simulated_two_compartment_infusion_study():
    model = PkModel(compartments=2, route="iv")
    typical, omega_sd = [5.0, 10.0, 4.0, 30.0], [0.3, 0.25, 0.3, 0.3]
    data, roles = simulate(
        model,
        typical,
        omega_sd,
        n=40,
        times=[0.5, 1, 1.5, 2, 3, 4, 6, 8, 12, 24, 36, 48],
        amount=100.0,
        duration=1.0,
        additive=0.01,
        proportional=0.1,
        seed=11,
    )
    fit = fit_population(prepare_study(data, roles))
    np.testing.assert_allclose(fit.typical, typical, rtol=0.10)
    np.testing.assert_allclose(fit.omega_sd, omega_sd, rtol=0.25)


def test_additive_error_model_on_a_simulated_study():
    fit = fit_additive_iv_study(0.25, n=40, seed=3)
    assert list(fit.residual.index) == ["additive"]
    assert fit.residual["additive"] == pytest.approx(0.3, rel=0.15)
    np.testing.assert_allclose(fit.typical, [1.0, 10.0], rtol=0.10)


def test_theophylline_estimates_a_pharmacometrician_accepts():
    """Published one-compartment estimates: CL about 2.8 L/h, V about 32 L, ka about 1.5 /h."""
    fit = fit_population(prepare_study(*load_dataset("theo_sd")))
    assert fit.converged
    assert 2.4 < fit.typical["cl"] < 3.2
    assert 28 < fit.typical["v"] < 36
    assert 1.1 < fit.typical["ka"] < 2.0
    assert 0.15 < fit.omega_sd["cl"] < 0.4 and 0.4 < fit.omega_sd["ka"] < 0.9
    assert "12 patients" in str(fit)


def test_a_better_model_lowers_the_objective():
    """The combined error model nests the additive one: its OFV is lower."""
    study = prepare_study(*load_dataset("theo_sd"))
    base = fit_population(study, error="additive")
    combined = fit_population(study, error="combined")
    assert combined.ofv < base.ofv


def test_bad_input():
    study = prepare_study(*load_dataset("theo_sd"))
    with pytest.raises(ValueError, match="max_iterations"):
        fit_population(study, max_iterations=-1)
    with pytest.raises(TypeError, match="max_iterations"):
        fit_population(study, max_iterations=2.5)
    with pytest.raises(ValueError, match="error"):
        fit_population(study, error="exponential")
    with pytest.raises(TypeError, match="study"):
        fit_population(load_dataset("theo_sd")[0])
    with pytest.raises(TypeError, match="model"):
        fit_population(study, model="oral")
    with pytest.raises(ValueError, match="error must be one of"):
        fit_population(study, error=["additive"])
    nimo = prepare_study(*load_dataset("nimoData"))
    with pytest.raises(ValueError, match="additive"):
        fit_population(nimo, error="proportional")
    mavoglurant = prepare_study(*load_dataset("mavoglurant"))
    with pytest.raises(ValueError, match="infusions"):
        fit_population(mavoglurant, model=PkModel(route="oral"))


# --- The exact gradient ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "model", "error"),
    [
        ("theo_sd", PkModel(route="oral"), "combined"),
        ("theo_sd", PkModel(route="oral"), "proportional"),
        ("theo_sd", PkModel(route="oral", lag=True), "combined"),
        ("pheno_sd", PkModel(route="iv"), "additive"),
        ("nimoData", PkModel(compartments=2, route="iv"), "additive"),
    ],
)
def test_exact_gradient_and_mode_sensitivity_match_central_differences(
    name, model, error, monkeypatch
):
    """The OFV's gradient (envelope and implicit-function terms) and d eta_hat / dx, away from
    the optimum, against central differences with the modes solved to 1e-13."""
    monkeypatch.setattr(_foce, "_MODE_TOLERANCE", 1e-13)
    study = prepare_study(*load_dataset(name))
    problem = _foce._Problem(study, model, error, ERROR_MODELS[error])
    start = population._pooled_starts(problem, study)[0]
    residual = {"combined": [0.5, 0.1], "proportional": [0.1], "additive": [0.5]}[error]
    rng = np.random.default_rng(2)
    x = np.r_[start, np.full(problem.p, np.log(0.3)), np.log(residual)]
    x = x + 0.05 * rng.standard_normal(x.size)
    assert_exact_derivatives(problem, x, rtol=1e-5, atol=1e-4, eta_atol=1e-5)


# --- Uncertainty -------------------------------------------------------------------------------


def test_standard_errors_agree_with_nlme_on_theophylline():
    """theo_sd, additive error: each log-scale SE within 20 % of nlme's (summary() for the
    typical values, intervals() for the SDs and the residual error)."""
    reference = pd.read_csv(DATA / "nlme_theo_sd_additive.csv").set_index(["kind", "parameter"])
    fit = fit_population(prepare_study(*load_dataset("theo_sd")), error="additive")
    assert fit.converged
    summary = fit.summary()
    log_se = summary["rse_percent"] / 100
    np.testing.assert_allclose(log_se.loc[reference.index], reference["log_se"], rtol=0.2)
    # The same optimum (FOCE-I and nlme's Lindstrom-Bates approximation agree closely).
    np.testing.assert_allclose(
        np.log(summary["estimate"].loc[reference.index]), reference["log_estimate"], atol=0.03
    )
    assert fit.ofv == pytest.approx(reference["ofv"].iloc[0], abs=0.5)


def test_standard_errors_agree_with_the_spread_over_replicates():
    """Simulation and re-estimation: 120 studies of 30 patients from known parameters; the
    root-mean-square SE (Hessian and sandwich) of each log estimate is within 20 % of the SD
    of the estimates over the replicates."""
    estimates, hessian, sandwich = [], [], []
    for replicate in range(120):
        fit = fit_additive_iv_study(0.3, n=30, seed=1000 + replicate)
        assert fit.converged
        estimates.append(np.log(fit.summary()["estimate"]))
        hessian.append(fit.summary()["rse_percent"] / 100)
        sandwich.append(fit.summary("sandwich")["rse_percent"] / 100)
    spread = np.std(estimates, axis=0, ddof=1)
    for standard_errors in (hessian, sandwich):
        rms = np.sqrt(np.mean(np.square(standard_errors), axis=0))
        np.testing.assert_allclose(rms, spread, rtol=0.2)


def test_the_summary_is_a_pmx_parameter_table():
    fit = fit_population(prepare_study(*load_dataset("theo_sd")))
    summary = fit.summary()
    assert list(summary.columns) == [
        "estimate", "se", "rse_percent", "ci_low", "ci_high", "shrinkage_percent"
    ]  # fmt: skip
    assert summary.index.tolist() == [
        *(("typical", n) for n in ("cl", "v", "ka")),
        *(("omega_sd", n) for n in ("cl", "v", "ka")),
        ("residual", "additive"),
        ("residual", "proportional"),
    ]
    np.testing.assert_allclose(summary["rse_percent"], 100 * summary["se"] / summary["estimate"])
    # SE of a typical value by the delta method from the log scale's covariance.
    log_var = fit.covariance.loc[("typical", "cl"), ("typical", "cl")]
    assert summary.loc[("typical", "cl"), "se"] == pytest.approx(
        fit.typical["cl"] * np.sqrt(log_var)
    )
    # The 95 % interval is symmetric on the log scale: 1.96 SEs of the log estimate.
    np.testing.assert_allclose(
        np.log(summary[["ci_low", "ci_high"]]).sub(np.log(summary["estimate"]), axis=0),
        np.outer(summary["rse_percent"] / 100, [-1.959964, 1.959964]),
        rtol=1e-6,
    )
    np.testing.assert_allclose(
        summary.loc["omega_sd", "shrinkage_percent"], 100 * fit.shrinkage.to_numpy()
    )
    assert summary.loc["typical", "shrinkage_percent"].isna().all()
    # Epsilon-shrinkage beside eta-shrinkage, on each residual error row.
    np.testing.assert_array_equal(
        summary.loc["residual", "shrinkage_percent"], [100 * fit.epsilon_shrinkage] * 2
    )
    assert 0 < fit.epsilon_shrinkage < 1
    without_study = replace(fit, study=None).summary()
    assert without_study.loc["residual", "shrinkage_percent"].isna().all()
    assert np.all(np.linalg.eigvalsh(fit.covariance.to_numpy()) > 0)
    text = str(fit)
    assert "RSE %" in text and f"OFV {fit.ofv:.2f} (converged)" in text
    with pytest.raises(ValueError, match="method"):
        fit.summary("bootstrap")


def test_importance_sampling_checks_the_laplace_approximation():
    """With rich sampling the exact likelihood is close to FOCE-I's; the estimate is
    reproducible and its Monte Carlo error small."""
    study = prepare_study(*load_dataset("theo_sd"))
    fit = fit_population(study, error="additive")
    ofv, error = importance_sampling_ofv(study, fit, draws=3000, seed=1)
    assert error < 0.2
    assert abs(ofv - fit.ofv) < 3.0
    assert importance_sampling_ofv(study, fit, draws=3000, seed=1) == (ofv, error)
    # Moving the estimates away from the optimum raises the exact OFV.
    moved = replace(fit, typical=fit.typical * [1.3, 1.0, 1.0])
    assert importance_sampling_ofv(study, moved, draws=3000, seed=1)[0] > ofv + 10
    with pytest.raises(TypeError, match="fit"):
        importance_sampling_ofv(study, "fit")
    with pytest.raises(ValueError, match="draws"):
        importance_sampling_ofv(study, fit, draws=1)
    with pytest.raises(ValueError, match="not made on this study"):
        importance_sampling_ofv(study.subset(np.arange(study.n_patients) < 6), fit)
    with pytest.raises(ValueError, match="positive"):
        importance_sampling_ofv(study, replace(fit, omega=0 * fit.omega))


# --- Two-compartment searches ------------------------------------------------------------------


def test_two_compartment_search_reports_the_best_of_dispersed_starts():
    """nimoData has several optima: the runs from different starts end apart, and the fit
    reports the lowest (here with the SD of Q at its floor, which the fit says)."""
    with pytest.warns(FitWarning, match="between-subject SD of q"):
        fit = fit_population(prepare_study(*load_dataset("nimoData")))
    starts = fit.starts
    assert len(starts) == 3 and len(starts[["start q", "start vp"]].drop_duplicates()) == 3
    assert fit.ofv == pytest.approx(starts["ofv"].min(), abs=1e-6)
    assert starts["ofv"].max() - starts["ofv"].min() > 1.0
    assert not fit.converged


# --- Diagnostics that do not lie ---------------------------------------------------------------


def test_three_patients_do_not_determine_the_random_effects():
    study = prepare_study(*load_dataset("theo_sd"))
    with pytest.warns(FitWarning, match="SD of v collapsed to its floor"):
        fit = fit_population(study.subset(np.arange(study.n_patients) < 3))
    assert not fit.converged
    assert any("ka collapsed" in message for message in fit.diagnostics)


def test_noise_is_not_reported_as_a_converged_fit():
    data, roles = load_dataset("theo_sd")
    noise = data.copy()
    observed = noise["EVID"] == 0
    noise.loc[observed, "DV"] = np.random.default_rng(5).lognormal(np.log(5), 0.5, observed.sum())
    with pytest.warns(FitWarning) as caught:
        fit = fit_population(prepare_study(noise, roles))
    assert not fit.converged
    message = str(caught[0].message)
    assert "sits at a bound" in message and "covariance step failed" in message
    assert fit.covariance is None and fit.summary()["se"].isna().all()


def test_two_compartments_on_one_compartment_data_are_flagged():
    study = prepare_study(*load_dataset("theo_sd"))
    with pytest.warns(FitWarning, match="SD of q collapsed"):
        fit = fit_population(study, model=PkModel(compartments=2, route="oral"))
    assert not fit.converged
    assert fit.shrinkage["q"] > 0.9


def test_concentrations_none_of_which_is_positive_are_refused():
    data, roles = load_dataset("theo_sd")
    roles = replace(roles, negative_dv=True)
    negative = data.copy()
    observed = negative["EVID"] == 0
    negative.loc[observed, "DV"] = -negative.loc[observed, "DV"].abs()
    with pytest.raises(ValueError, match="no positive concentration"):
        fit_population(prepare_study(negative, roles))
    negative.loc[observed, "DV"] = 0.0
    with pytest.raises(ValueError, match="no positive concentration"):
        fit_population(prepare_study(negative, roles))


def test_an_optimizer_stopped_early_is_not_converged():
    study = prepare_study(*load_dataset("theo_sd"))
    with pytest.warns(FitWarning, match="not a stationary point"):
        fit = fit_population(study, max_iterations=2)
    assert not fit.converged and fit.iterations == 2


def test_modes_that_do_not_converge_are_reported(monkeypatch):
    """With no Newton step allowed, the modes stay where the warm start puts them."""
    monkeypatch.setattr(_foce, "_MODE_ITERATIONS", 0)
    study = prepare_study(*load_dataset("theo_sd"))
    with pytest.warns(FitWarning, match="modes of 12 patients did not converge"):
        fit = fit_population(study)
    assert not fit.converged


def test_a_sound_fit_raises_no_warning():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        fit = fit_population(prepare_study(*load_dataset("warfarin")))
    assert fit.converged and fit.diagnostics == ()


# --- Proportional error where the prediction or the observation is 0 ---------------------------


def test_proportional_error_at_a_zero_prediction():
    """theo_sd has non-zero pre-dose samples, where an oral model predicts exactly 0. Their
    variance is 1 (nlmixr2's rule): the OFV stays finite and the fit reaches the estimates of
    the combined model instead of stopping at its start."""
    study = prepare_study(*load_dataset("theo_sd"))
    pre_dose = study.obs_mask & (study.obs_time == 0) & (study.obs_dv != 0)
    assert pre_dose.sum() == 3
    fit = fit_population(study, error="proportional")
    assert fit.converged and fit.iterations > 5
    assert fit.ofv < 200
    combined = fit_population(study)
    np.testing.assert_allclose(fit.typical, combined.typical, rtol=0.05)
    # Each such sample adds y^2 to the OFV: doubling one adds 3 y^2.
    data, roles = load_dataset("theo_sd")
    doubled = data.copy()
    row = doubled.index[(doubled["EVID"] == 0) & (doubled["TIME"] == 0) & (doubled["DV"] > 0)][0]
    doubled.loc[row, "DV"] *= 2
    refit = fit_population(prepare_study(doubled, roles), error="proportional")
    assert refit.ofv - fit.ofv == pytest.approx(3 * data.loc[row, "DV"] ** 2, abs=1e-3)


def test_proportional_error_at_a_zero_observation():
    """An observed 0 would let a proportional fit gain without bound by moving a patient's
    lag to just before that sample (the floored variance gave an OFV of 173 against the
    combined model's 223); such observations are left out (M1), and the fit says so."""
    data, roles = load_dataset("warfarin")
    lag = PkModel(route="oral", lag=True)
    proportional = fit_population(prepare_study(data, roles), model=lag, error="proportional")
    assert proportional.converged
    zero = (data["evid"] == 0) & (data["dvid"] == "cp") & (data["dv"] == 0)
    assert proportional.n_left_out == zero.sum() > 0
    assert f"{proportional.n_left_out} observations of 0 left out" in str(proportional)
    # The zero observations add nothing: removing them leaves the OFV as it was.
    without_zeros = prepare_study(data[~zero], roles)
    without = fit_population(without_zeros, model=lag, error="proportional")
    assert without.ofv == pytest.approx(proportional.ofv, abs=1e-3)
    assert without.n_observations == proportional.n_observations and without.n_left_out == 0
    # On the same observations, the combined model nests the proportional one.
    combined = fit_population(without_zeros, model=lag, error="combined")
    assert combined.converged and combined.ofv < proportional.ofv


def test_a_lag_placed_past_a_sample_under_proportional_error_is_flagged():
    """A prediction of 0 after a dose (before the lag) gives the sample variance 1: it adds
    y^2 whatever the fit, so that in mg/L a theo_sd patient's lag moves past a small early
    sample; in ug/L (y^2 a million times larger) it does not, and the estimates differ."""
    study = prepare_study(*load_dataset("theo_sd"))
    lag = PkModel(route="oral", lag=True)
    with pytest.warns(FitWarning, match="1 non-zero observations taken after a dose"):
        fit = fit_population(study, model=lag, error="proportional")
    assert not fit.converged and fit.n_unit_variance == 4  # 3 pre-dose samples and this one
    micrograms = replace(study, obs_dv=1000 * study.obs_dv)
    rescaled = fit_population(micrograms, model=lag, error="proportional")
    assert rescaled.converged and rescaled.n_unit_variance == 3
    assert abs(rescaled.omega_sd["tlag"] / fit.omega_sd["tlag"] - 1) > 0.1


def test_parameters_the_data_do_not_determine_are_flagged():
    """Noise fitted with proportional error: the optimizer stops at a true optimum and the
    covariance step succeeds, but absorption is not determined (ka's SE thousands of %)."""
    data, roles = load_dataset("theo_sd")
    noise = data.copy()
    observed = noise["EVID"] == 0
    level = np.log(noise.loc[observed, "DV"].median())
    noise.loc[observed, "DV"] = np.random.default_rng(1).lognormal(level, 0.5, observed.sum())
    with pytest.warns(FitWarning, match="the data do not determine typical ka"):
        fit = fit_population(prepare_study(noise, roles), error="proportional")
    assert not fit.converged and fit.covariance is not None
    summary = fit.summary()
    assert summary.loc[("typical", "ka"), "rse_percent"] > 235
    # The twelve predose rows (PRED 0, no residual variance) have no weighted residuals; the
    # others give WRES (once a Cholesky factor failed on them) and an epsilon-shrinkage.
    table = fit.residuals()
    predose = table["pred"] == 0
    assert predose.sum() == 12 and table.loc[predose, "wres"].isna().all()
    assert np.isfinite(table.loc[~predose, "wres"]).all()
    shrinkage = summary.loc["residual", "shrinkage_percent"]
    assert np.isfinite(shrinkage).all()
    np.testing.assert_allclose(shrinkage, 100 * fit.epsilon_shrinkage, rtol=1e-12)


def test_standard_errors_stay_out_of_the_released_fingerprint():
    """The fit carries its covariance step; the fingerprint built from it releases none of it."""
    from synpmx_lite import model_fingerprint, synpmx_model_estimate

    fit = synpmx_model_estimate(*load_dataset("theo_sd"), seed=1)
    assert fit.pk.covariance is not None
    released = json.loads(model_fingerprint(fit).to_json())

    def keys(value):
        if isinstance(value, dict):
            for key, inner in value.items():
                yield str(key).lower()
                yield from keys(inner)
        elif isinstance(value, list):
            for inner in value:
                yield from keys(inner)

    words = ("covariance", "sandwich", "se", "rse", "standard_error", "rse_percent")
    assert not set(keys(released)) & set(words)
    assert set(released["typical"]) == set(fit.pk.typical.index)


def test_a_refit_from_the_full_fit_reaches_the_pooled_starts_optimum():
    """fit_population(start=): one search from the full fit's estimates, as the exact
    jackknife refits run, reaches the optimum a search from the pooled starts reaches."""
    study = prepare_study(*load_dataset("theo_sd"))
    full = fit_population(study, error="proportional")
    without = study.subset(np.arange(study.n_patients) != 0)
    cold = fit_population(without, error="proportional")
    warm = fit_population(without, error="proportional", start=full)
    assert warm.ofv == pytest.approx(cold.ofv, abs=1e-5)
    np.testing.assert_allclose(warm.typical, cold.typical, rtol=1e-4)
    np.testing.assert_allclose(warm.residual, cold.residual, rtol=1e-4)
    assert warm.converged and len(warm.starts) == 1
    with pytest.raises(TypeError, match="start must be a PopulationFit"):
        fit_population(without, error="proportional", start=full.typical)
    with pytest.raises(ValueError, match="same model, error"):
        fit_population(without, error="additive", start=full)
    with pytest.raises(ValueError, match="lacks patients"):
        fit_population(study, error="proportional", start=warm)
