"""PD endpoints: the model, its fit, the leave-one-out refits, the second bar and the release."""

import dataclasses
import json
import re
import sys
from functools import partial

import numpy as np
import pandas as pd
import pytest

from synpmx_lite.generator.cases import constructed_warfarin_cases
from synpmx_lite.generator.estimate import (
    model_fingerprint,
    model_privacy_checks,
    privacy_checks_across_studies,
    synpmx_model_estimate,
)
from synpmx_lite.generator.generate import synpmx_model_generate
from synpmx_lite.generator.influence import pd_influence_moves, pd_shape_moves
from synpmx_lite.generator.release import Fingerprint
from synpmx_lite.pmx import pd as pd_module
from synpmx_lite.pmx.pd import PD_SHAPES, PdFit, fit_pd_endpoint, pd_loo_refits, pd_response
from synpmx_lite.pmx.population import FitWarning
from synpmx_lite.pmx.study import load_dataset, pmx_roles, prepare_study
from tests.simulated import WARFARIN_LEFT_OUT

ROLES = pmx_roles(
    id="id", time="time", dv="dv", amt="amt", evid="evid", dvid="dvid", pk_endpoint="cp"
)
TIMES = np.array([0.0, 12.0, 24.0, 48.0, 72.0, 96.0, 144.0, 192.0])
TRUE = {
    "slope": {"slope": -0.004},
    "plateau": {"plateau": -0.6, "rate": 0.05},
    "transient": {"plateau": -1.2, "rate": 0.04, "recovery": 0.01},
    "nadir": {"depth": -0.7, "nadir_time": 40.0},
}
BASELINE, SPREAD, RESIDUAL = 80.0, 8.0, 3.0


def simulated_pd_study(shape, n=60, seed=7):
    """An event table: one dose, one PK sample (unused) and a PD endpoint ``effect``."""
    rng = np.random.default_rng(seed)
    baseline = BASELINE + SPREAD * rng.standard_normal((n, 1))
    effect = baseline * pd_response(shape, TRUE[shape], TIMES) + RESIDUAL * rng.standard_normal(
        (n, TIMES.size)
    )
    ids = np.repeat(np.arange(1, n + 1), TIMES.size)
    rows = pd.DataFrame(
        {"id": ids, "time": np.tile(TIMES, n), "amt": 0.0, "dv": effect.ravel(), "evid": 0}
    ).assign(dvid="effect")
    doses = pd.DataFrame({"id": np.arange(1, n + 1), "time": 0.0, "amt": 100.0, "dv": 0.0})
    doses = doses.assign(evid=1, dvid="cp")
    pk = doses.assign(time=1.0, amt=0.0, dv=1.0, evid=0)
    table = pd.concat([doses, pk, rows], ignore_index=True)
    return table.sort_values(["id", "time", "evid"], ascending=[1, 1, 0], kind="stable")


@pytest.mark.parametrize("shape", list(PD_SHAPES))
def test_each_shape_is_recovered_by_re_estimation(shape):
    study = prepare_study(simulated_pd_study(shape), ROLES)
    fit = fit_pd_endpoint(study, "effect", shapes=(shape,))
    assert fit.converged
    assert fit.baseline == pytest.approx(BASELINE, rel=0.05)
    assert fit.baseline_sd == pytest.approx(SPREAD, rel=0.35)
    assert fit.residual == pytest.approx(RESIDUAL, rel=0.15)
    for name, value in TRUE[shape].items():
        assert fit.parameters[name] == pytest.approx(value, rel=0.25), name


def test_the_criterion_picks_the_simulated_shape_over_a_simpler_one():
    for shape in ("plateau", "transient", "nadir"):
        fit = fit_pd_endpoint(prepare_study(simulated_pd_study(shape), ROLES), "effect")
        assert fit.shape == shape
        aic = fit.candidates.set_index("shape")["aic"]
        assert aic[shape] == aic.min()


def test_the_ofv_is_the_exact_marginal_likelihood():
    study = prepare_study(simulated_pd_study("plateau", n=5), ROLES)
    fit = fit_pd_endpoint(study, "effect", shapes=("plateau",))
    h = pd_response("plateau", fit.parameters, TIMES)
    data = simulated_pd_study("plateau", n=5)
    y = data[data["dvid"] == "effect"]["dv"].to_numpy().reshape(5, -1)
    covariance = fit.residual**2 * np.eye(TIMES.size) + fit.baseline_sd**2 * np.outer(h, h)
    r = y - fit.baseline * h
    _, log_det = np.linalg.slogdet(covariance)
    by_hand = sum(log_det + row @ np.linalg.solve(covariance, row) for row in r)
    assert fit.ofv == pytest.approx(by_hand, rel=1e-9)


def _unbalanced_endpoint(shape, n=8, seed=3):
    """An endpoint whose patients have from one to all of the visits (drawn at random), and
    its observations as the objective reads them."""
    table = simulated_pd_study(shape, n=n)
    rng = np.random.default_rng(seed)
    pd_rows = table.index[table["dvid"] == "effect"]
    kept = rng.uniform(size=pd_rows.size) < 0.6
    kept[:: TIMES.size] = True  # every patient keeps its first visit
    table = table.drop(pd_rows[~kept])
    data, _ = pd_module._endpoint_data(prepare_study(table, ROLES), "effect")
    assert np.unique(data.counts).size > 2  # patients differ in h'h, so 1 / L matters
    return data


@pytest.mark.parametrize("shape", PD_SHAPES)
def test_the_profiled_ofv_is_the_full_ofv_at_its_baseline_and_residual(shape):
    # The Newton iteration runs on the OFV profiled over the baseline and the residual
    # variance at a fixed ratio omega / sigma: at the closed-form optimum of those two, it
    # equals the full OFV, whose gradient along them (the log baseline; log omega and log
    # sigma together) vanishes there, for any weights (random ones, and the leave-one-out
    # refits' rows of 1 - I) and any point of the rest. The patients' visits differ in number,
    # so a baseline that dropped the 1 / L weighting would not be the optimum.
    data = _unbalanced_endpoint(shape)
    rng = np.random.default_rng(3)
    starts = pd_module._to_profiled(pd_module._starts(shape, data))
    loo = 1.0 - np.eye(data.n_patients)
    weights = np.vstack([rng.uniform(0.5, 1.5, (len(starts), data.n_patients)), loo])
    profiled = np.vstack([starts, np.repeat(starts[:1], data.n_patients, axis=0)])
    profiled = profiled + 0.1 * rng.standard_normal(profiled.shape)
    value, baseline, sigma2 = pd_module._profile(shape, data, profiled, weights)
    x = pd_module._from_profiled(profiled, baseline, sigma2)
    full = pd_module._objective(shape, data, x, weights)
    np.testing.assert_allclose(value, full, rtol=1e-10)
    _, gradient, _ = pd_module._derivatives(partial(pd_module._objective, shape, data), x, weights)
    along = np.column_stack([gradient[:, 0], gradient[:, -2] + gradient[:, -1]])
    np.testing.assert_allclose(along, 0.0, atol=1e-6 * np.abs(full).max())
    for step in (
        np.r_[0.05, np.zeros(x.shape[1] - 1)],
        np.r_[np.zeros(x.shape[1] - 2), 0.05, 0.05],
    ):
        assert (pd_module._objective(shape, data, x + step, weights) > full).all()
        assert (pd_module._objective(shape, data, x - step, weights) > full).all()


@pytest.mark.parametrize("shape", PD_SHAPES)
def test_a_fits_ofv_is_the_profiled_ofv_at_its_optimum(shape):
    # _fit_batch reports the full OFV at the point mapped back from the profiled optimum: the
    # same number as the profiled OFV there, for the fit and for its leave-one-out refits.
    data = _unbalanced_endpoint(shape)
    starts = pd_module._starts(shape, data)
    weights = np.vstack([np.ones((len(starts), data.n_patients)), 1.0 - np.eye(data.n_patients)])
    starts = np.vstack([starts, np.repeat(starts[:1], data.n_patients, axis=0)])
    x, value, _, _ = pd_module._fit_batch(shape, data, starts, weights)
    profiled, _, _ = pd_module._profile(shape, data, pd_module._to_profiled(x), weights)
    assert np.isfinite(value).all()
    np.testing.assert_allclose(value, profiled, rtol=1e-10)


def test_a_collapsed_spread_fails_the_fit_and_its_refits(monkeypatch):
    # Patients who share one baseline: the fitted spread heads to zero, and neither the fit nor
    # any refit is trusted.
    monkeypatch.setattr(sys.modules[__name__], "SPREAD", 0.0)
    study = prepare_study(simulated_pd_study("plateau", n=20), ROLES)
    with pytest.warns(FitWarning, match="not to be trusted"):
        fit = fit_pd_endpoint(study, "effect", shapes=("plateau",))
    assert not fit.converged
    assert not pd_loo_refits(fit)["converged"].any()


@pytest.fixture(scope="module")
def unbalanced_plateau():
    """A trusted plateau fit (a batch of one) of an endpoint whose patients differ in visits."""
    data = _unbalanced_endpoint("plateau", n=20)
    starts = pd_module._starts("plateau", data)
    fitted = pd_module._fit_batch("plateau", data, starts, np.ones((len(starts), 20)))
    best = int(np.argmin(fitted[1]))
    fitted = tuple(part[best : best + 1] for part in fitted)
    assert pd_module._trusted("plateau", data, fitted, np.ones((1, 20)))[0]
    return data, fitted


def _beside(fitted, *, x=None, hessian=None):
    """A batch of two fits: ``fitted`` (a batch of one) and a copy with ``x`` or ``hessian``."""
    point, value, gradient, curvature = fitted
    return (
        np.vstack([point, point if x is None else x]),
        np.repeat(value, 2),
        np.repeat(gradient, 2),
        np.stack([curvature[0], curvature[0] if hessian is None else hessian]),
    )


def test_the_spread_collapses_when_no_counted_patient_carries_its_share(unbalanced_plateau):
    # The spread set so that the least-observed patient carries two thirds of the bound and the
    # most-observed more than it: not collapsed with every patient counted, collapsed with only
    # the least-observed one (weights 0 leave the others out), as a trusted fit's verdict.
    data, fitted = unbalanced_plateau
    x = fitted[0]
    h = pd_module._shape_batch("plateau", x[:, 1:-2], data.times)[:, data.time_index]
    hh = pd_module._per_patient(data, h * h)[0]
    assert hh.max() > 1.6 * hh.min()
    share = pd_module._SPREAD_SHARE / 1.5
    rho = share / (1 - share) / hh.min()
    small = x.copy()
    small[:, -2] = x[:, -1] + 0.5 * np.log(rho)
    alone = (np.arange(data.n_patients) == np.argmin(hh))[None].astype(float)
    assert not pd_module._collapsed("plateau", data, small, np.ones((1, data.n_patients)))[0]
    assert pd_module._collapsed("plateau", data, small, alone)[0]
    both = _beside(fitted, x=small)
    verdicts = pd_module._verdicts("plateau", data, both, np.vstack([alone, alone]))
    assert verdicts[0] == "" and "spread between subjects collapsed" in verdicts[1]


def test_an_estimate_the_hessian_leaves_undetermined_is_not_trusted(unbalanced_plateau):
    # A minimum (curvature well above rounding) so shallow along the log rate that its standard
    # error passes the PK fit's bound: the fit, or a refit, with it is not trusted.
    data, fitted = unbalanced_plateau
    shallow = np.diag(np.diag(fitted[3][0]))
    shallow[2, 2] = 0.01  # SE of the log rate sqrt(2 / 0.01) = 14, against 2.35
    both = _beside(fitted, hessian=shallow)
    verdicts = pd_module._verdicts("plateau", data, both, np.ones((2, data.n_patients)))
    assert verdicts[0] == "" and "do not determine" in verdicts[1]


def test_a_start_with_no_positive_baseline_is_reported_finite_and_not_converged():
    # An endpoint whose values are all negative: no positive baseline minimises the OFV, the
    # iteration cannot leave its start, and the start is what is reported (not NaN), with an
    # infinite OFV, so that it is never chosen over a fit that has an optimum.
    study = prepare_study(simulated_pd_study("slope", n=8), ROLES)
    data, _ = pd_module._endpoint_data(study, "effect")
    negative = dataclasses.replace(data, y=-np.abs(data.y))
    start = pd_module._starts("slope", data)
    fitted = pd_module._fit_batch("slope", negative, start, np.ones((1, data.n_patients)))
    np.testing.assert_array_equal(fitted[0], start)
    assert np.isinf(fitted[1]).all()
    verdict = pd_module._verdicts("slope", negative, fitted, np.ones((1, data.n_patients)))[0]
    assert verdict == "no positive baseline minimises the OFV there"


def test_a_fit_beyond_the_objectives_bounds_is_not_trusted(unbalanced_plateau):
    # The objective clips log coordinates at its bound: a point past it is not the one the OFV
    # was read at, and cannot be trusted however flat the (clipped) OFV is there.
    data, fitted = unbalanced_plateau
    beyond = fitted[0].copy()
    beyond[:, 2] = pd_module._LOG_BOUND + 1.0  # the log rate, all else the trusted fit's
    weights = np.ones((2, data.n_patients))
    both = _beside(fitted, x=beyond)
    assert pd_module._trusted("plateau", data, both, weights).tolist() == [True, False]


def test_batched_leave_one_out_refits_equal_refits_one_by_one():
    data = simulated_pd_study("plateau", n=12)
    study = prepare_study(data, ROLES)
    fit = fit_pd_endpoint(study, "effect", shapes=("plateau",))
    refits = pd_loo_refits(fit)
    assert refits["converged"].all()
    for position in (0, 7):
        keep = np.ones(study.n_patients, dtype=bool)
        keep[position] = False
        alone = fit_pd_endpoint(study.subset(keep), "effect", shapes=("plateau",))
        for name, value in alone.estimates().items():
            assert refits.iloc[position][name] == pytest.approx(value, rel=1e-4), name


def _fake_fit(values, estimate):
    """A PdFit whose slope refits are ``values`` (everything else unmoved)."""
    n = len(values)
    fit = PdFit(
        endpoint="e", shape="slope", baseline=10.0, baseline_sd=1.0,
        parameters={"slope": estimate}, residual=1.0, ofv=0.0, converged=True,
        n_patients=n, n_observations=n, candidates=pd.DataFrame(), ids=np.arange(n),
        x=np.zeros(4), data=None,
    )  # fmt: skip
    refits = pd.DataFrame({"baseline": 10.0, "baseline_sd": 1.0, "slope": values, "residual": 1.0})
    return fit, refits


def test_the_second_bar_counts_a_move_only_past_one_and_two_standard_errors():
    rng = np.random.default_rng(3)
    # A slope near zero: patient 0 moves it by 100 %, but the others' refits spread as widely.
    noisy = 0.01 + 0.02 * rng.standard_normal(40)
    noisy[0] = 0.02
    fit, refits = _fake_fit(noisy, 0.01)
    moves = pd_influence_moves(fit, refits)["e: slope shape parameter"]
    assert 100 * abs(noisy[0] - 0.01) / 0.01 >= 30
    assert moves.iloc[0] < 15
    # The same percent move against a tight spread of the others: two SEs and more, a FAIL.
    tight = 0.01 + 1e-5 * rng.standard_normal(40)
    tight[0] = 0.02
    fit, refits = _fake_fit(tight, 0.01)
    moves = pd_influence_moves(fit, refits)["e: slope shape parameter"]
    assert moves.iloc[0] == pytest.approx(100.0)
    # Between one and two jackknife SEs of the others' refits, far past 30 %: a review only.
    others = 0.01 + 5e-4 * rng.standard_normal(40)
    m = others.size - 1
    se = np.sqrt((m - 1) / m * ((others[1:] - others[1:].mean()) ** 2).sum())
    others[0] = 0.01 + 1.5 * se
    fit, refits = _fake_fit(others, 0.01)
    assert 100 * 1.5 * se / 0.01 >= 30
    move = pd_influence_moves(fit, refits)["e: slope shape parameter"].iloc[0]
    assert move == pytest.approx(22.5)


@pytest.fixture(scope="module")
def cases():
    return constructed_warfarin_cases()


def test_warfarin_pca_model_and_its_release(warfarin_fit):
    model = warfarin_fit.pd["pca"]
    assert model.converged and model.shape == "transient"
    fingerprint = model_fingerprint(warfarin_fit)
    assert fingerprint.pd["pca"]["baseline"] == 100
    assert set(fingerprint.pd["pca"]["parameters"]) == set(PD_SHAPES["transient"])
    assert Fingerprint.from_json(fingerprint.to_json()) == fingerprint
    checks = model_privacy_checks(warfarin_fit).set_index("check")
    assert (checks["verdict"] == "pass").all(), checks["result"]


def test_synthetic_pd_observations_sit_at_the_released_visits(warfarin_fit):
    fingerprint = model_fingerprint(warfarin_fit)
    synthetic = synpmx_model_generate(warfarin_fit, seed=5)
    pca = synthetic[(synthetic["evid"] == 0) & (synthetic["dvid"] == "pca")]
    visits = {time for _, time in fingerprint.endpoints["pca"]["visits"]}
    assert set(pca["time"]) <= visits and len(pca) > 0
    before = pca.loc[pca["time"] == 0, "dv"].mean()
    assert before == pytest.approx(fingerprint.pd["pca"]["baseline"], rel=0.15)
    assert pca.loc[pca["time"] == 48, "dv"].mean() < 0.7 * before
    same = synpmx_model_generate(Fingerprint.from_json(fingerprint.to_json()), seed=5)
    pd.testing.assert_series_equal(
        same["dv"].reset_index(drop=True),
        synthetic["dv"].reset_index(drop=True),
    )


def test_a_patient_flagged_on_a_pd_shape_is_left_out_of_every_model(cases):
    kept = synpmx_model_estimate(cases.pd_misrecorded, cases.roles, drop_influential=False)
    influence = kept.privacy.influence.set_index("estimate")
    assert influence.loc["pca: rate shape parameter", "verdict"] == "review"
    top = kept.privacy.moves["pca: rate shape parameter"].idxmax()
    assert top == cases.pd_misrecorded_id
    fit = synpmx_model_estimate(cases.pd_misrecorded, cases.roles)
    assert fit.privacy.left_out.ids == tuple(sorted((cases.pd_misrecorded_id, *WARFARIN_LEFT_OUT)))
    assert cases.pd_misrecorded_id not in fit.pk.eta.index
    assert cases.pd_misrecorded_id not in set(fit.pd["pca"].ids)
    assert fit.kept.sum() == fit.n_source - 1 - len(WARFARIN_LEFT_OUT)
    # The patient stays in the arm and visit models: the cohort keeps its size.
    assert model_fingerprint(fit).cohort_size == fit.n_source
    assert (model_privacy_checks(fit)["verdict"] == "pass").all()


# --- Attacks on the PD release ----------------------------------------------------------------


def _judged(fit, release):
    return model_privacy_checks(fit, released=json.dumps(release)).set_index("check")


def test_a_pd_baseline_equal_to_one_patients_value_fails(warfarin_fit):
    release = json.loads(model_fingerprint(warfarin_fit).to_json())
    first = warfarin_fit.study.observations.query("endpoint == 'pca'").groupby("patient")["dv"]
    release["pd"]["pca"]["baseline"] = float(first.first().iloc[0])
    checks = _judged(warfarin_fit, release)
    assert checks.loc["P3", "verdict"] == "FAIL"
    assert checks.loc["P5", "verdict"] == "FAIL"


@pytest.mark.parametrize(
    "edit, check, words",
    [
        (lambda r: r["pd"]["pca"].update(ids=[1, 2]), "P1", ["pd.pca", "ids"]),
        (lambda r: r["pd"]["pca"]["parameters"].update(rate=0.0312), "P3", ["rate"]),
        (lambda r: r["pd"]["pca"].update(shape="plateau"), "P1", ["parameters"]),
        (lambda r: r["pd"].update(cp=r["pd"]["pca"]), "P1", ["PK endpoint"]),
        (lambda r: r["pd"]["pca"].update(baseline_sd=1), "P5", ["baseline_sd"]),
    ],
)
def test_edited_pd_releases_fail(warfarin_fit, edit, check, words):
    release = json.loads(model_fingerprint(warfarin_fit).to_json())
    edit(release)
    row = _judged(warfarin_fit, release).loc[check]
    assert row["verdict"] == "FAIL", row["result"]
    for word in words:
        assert word in row["result"], row["result"]


def test_a_pd_model_of_a_patient_identifier_is_caught(warfarin_fit):
    release = json.loads(model_fingerprint(warfarin_fit).to_json())
    release["pd"]["17"] = release["pd"].pop("pca")
    checks = _judged(warfarin_fit, release)
    assert checks.loc["P2", "verdict"] == "FAIL"


def test_wbcsim_is_read_fitted_and_released_without_a_pk_model():
    data, roles = load_dataset("wbcSim")
    fit = synpmx_model_estimate(data, roles)
    assert fit.pk is None and set(fit.pd) == {"DV"}
    assert fit.pd["DV"].converged
    fingerprint = model_fingerprint(fit)
    assert fingerprint.model is None and not fingerprint.typical and "DV" in fingerprint.pd
    assert Fingerprint.from_json(fingerprint.to_json()) == fingerprint
    checks = model_privacy_checks(fit).set_index("check")
    assert (checks.loc[["P1", "P2", "P3", "P4"], "verdict"] == "pass").all()
    synthetic = synpmx_model_generate(fit, seed=2)
    assert prepare_study(synthetic, roles).n_patients == fingerprint.cohort_size
    # A release claiming PK estimates for this study has no fit behind them.
    release = json.loads(fingerprint.to_json())
    release["typical"] = {"cl": 0.1}
    assert _judged(fit, release).loc["P1", "verdict"] == "FAIL"


def test_a_study_without_a_pk_fit_takes_no_pk_endpoint():
    with pytest.raises(ValueError, match="fit_pk"):
        pmx_roles(id="i", time="t", dv="y", amt="a", evid="e", fit_pk=False, pk_endpoint="cp")
    with pytest.raises(TypeError, match="fit_pk"):
        pmx_roles(id="i", time="t", dv="y", amt="a", evid="e", fit_pk="no")


def test_the_across_studies_table_holds_the_pd_models():
    table = privacy_checks_across_studies(["warfarin", "wbcSim"]).set_index("study")
    assert table.loc["warfarin", "pd_models"] == "pca: transient"
    assert table.loc["wbcSim", "pd_models"].startswith("DV: ")
    # Warfarin: three PK variances and the pca baseline's; wbcSim: its baseline's alone.
    assert list(table["random_effects"]) == [4, 1]
    assert (table[["P1", "P2", "P3", "P4"]] == "pass").all().all()


def test_p4_fails_on_a_pd_model_of_an_endpoint_two_patients_have():
    data, roles = load_dataset("warfarin")
    ids = data["id"].unique()[:2]
    rare = data[data["id"].isin(ids) & (data["dvid"] == "pca") & (data["evid"] == 0)]
    with_rare = pd.concat([data, rare.assign(dvid="rare")]).sort_values(
        ["id", "time"], kind="stable"
    )
    fit = synpmx_model_estimate(with_rare.reset_index(drop=True), roles)
    assert "rare" not in fit.pd  # under the threshold: never fitted
    release = json.loads(model_fingerprint(fit).to_json())
    release["pd"]["rare"] = release["pd"]["pca"]
    row = _judged(fit, release).loc["P4"]
    assert row["verdict"] == "FAIL", row["result"]
    assert "rare: patients behind its PD model: 2" in row["result"]


@pytest.mark.parametrize(
    "shape, parameters, time, error, words",
    [
        ("slope", None, [1.0], TypeError, "parameters"),
        ("slope", {"slope": "0.1"}, [1.0], TypeError, "parameters['slope']"),
        ("nadir", {"depth": -0.5, "nadir_time": 0.0}, [1.0], ValueError, "nadir_time"),
        ("slope", {"slope": 0.1}, ["1"], TypeError, "time"),
        ("slope", {"slope": 0.1}, [np.nan], ValueError, "time"),
    ],
)
def test_pd_response_names_the_bad_argument(shape, parameters, time, error, words):
    with pytest.raises(error, match=re.escape(words)):
        pd_response(shape, parameters, time)


def test_influence_of_refits_that_did_not_converge_is_flagged():
    fit, refits = _fake_fit(np.linspace(0.009, 0.011, 10), 0.01)
    with pytest.raises(ValueError, match="refits lacks"):
        pd_influence_moves(fit, refits.drop(columns="slope"))
    with pytest.raises(ValueError, match="fail"):
        pd_influence_moves(fit, refits, review=15.0, fail=10.0)
    with pytest.warns(FitWarning, match="1 leave-one-out refit"):
        pd_influence_moves(fit, refits.assign(converged=np.arange(10) > 0))


def test_shape_moves_refuse_refits_without_a_parameter_or_with_nan():
    fit, refits = _fake_fit(np.linspace(0.009, 0.011, 10), 0.01)
    with pytest.raises(ValueError, match="refits lacks"):
        pd_shape_moves(fit, refits.drop(columns="slope"))
    with pytest.raises(ValueError, match="finite"):
        pd_influence_moves(fit, refits.assign(slope=np.r_[np.nan, refits["slope"][1:]]))


@pytest.mark.parametrize("sign, minimum", [(1.0, True), (-1.0, False)])
def test_a_saddle_point_is_not_taken_for_a_minimum(sign, minimum):
    # x0^2 + sign * x1^2: a minimum at the origin, or a saddle whose gradient vanishes there.
    def objective(x, weights):
        return x[:, 0] ** 2 + sign * x[:, 1] ** 2

    start = np.array([[1.0, 0.0], [0.0, 0.0]])
    x, value, gradient, hessian = pd_module._newton(objective, start, np.ones((2, 1)))
    np.testing.assert_allclose(x, 0.0, atol=1e-6)
    assert (gradient < 1e-3).all()
    assert (pd_module._at_minimum(value, hessian) == minimum).all()


def test_a_direction_flat_to_rounding_error_is_not_taken_for_a_minimum():
    # An OFV near 1000 whose curvature along x1 (2e-9) lies far below the rounding error of a
    # second difference (about 2e-5): the sign read there is noise, and must not count as a
    # minimum, while a curvature well above it does.
    rng = np.random.default_rng(5)
    start = np.column_stack([0.5 + 0.01 * rng.standard_normal(20), rng.standard_normal(20)])
    for curvature, minimum in ((1e-9, False), (1.0, True)):

        def objective(x, weights, c=curvature):
            return 1000 + x[:, 0] ** 2 + c * x[:, 1] ** 2

        _, value, gradient, hessian = pd_module._newton(objective, start, np.ones((20, 1)))
        assert (gradient < 1e-3).all()
        assert (pd_module._at_minimum(value, hessian) == minimum).all()


def test_a_fit_or_refit_at_no_minimum_does_not_count_as_converged(monkeypatch):
    study = prepare_study(simulated_pd_study("plateau", n=12), ROLES)
    fit = fit_pd_endpoint(study, "effect", shapes=("plateau",))
    assert fit.converged and pd_loo_refits(fit)["converged"].all()
    monkeypatch.setattr(pd_module, "_at_minimum", lambda value, hessian: np.zeros(len(value), bool))
    with pytest.warns(FitWarning, match="not to be trusted"):
        assert not fit_pd_endpoint(study, "effect", shapes=("plateau",)).converged
    assert not pd_loo_refits(fit)["converged"].any()


def test_a_rate_the_data_do_not_determine_is_not_converged(monkeypatch):
    # An endpoint that does not change: a plateau near 0 leaves its rate free, so the fit sits
    # at a minimum whose log rate has a standard error far past the PK fit's bound. The slope
    # (near 0, signed, judged by no RSE) describes the same data and is chosen.
    monkeypatch.setitem(TRUE["slope"], "slope", 0.0)
    study = prepare_study(simulated_pd_study("slope", n=40, seed=1), ROLES)
    with pytest.warns(FitWarning, match="do not determine"):
        plateau = fit_pd_endpoint(study, "effect", shapes=("plateau",))
    assert not plateau.converged
    chosen = fit_pd_endpoint(study, "effect")
    assert chosen.converged and chosen.shape == "slope"
    assert abs(chosen.parameters["slope"]) < 1e-3
