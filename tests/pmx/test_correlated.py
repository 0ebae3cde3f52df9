"""A correlated pair of etas (``correlated=``): exact derivatives, the summary, refusals."""

import dataclasses

import numpy as np
import pytest

from synpmx_lite.pmx import _foce, population
from synpmx_lite.pmx.covariates import parse_effects
from synpmx_lite.pmx.population import ERROR_MODELS, fit_population
from synpmx_lite.pmx.study import load_dataset, pmx_roles, prepare_study
from tests.pmx.finite_differences import assert_exact_derivatives


@pytest.fixture(scope="module")
def warfarin():
    return prepare_study(*load_dataset("warfarin"))


@pytest.fixture(scope="module")
def fits(warfarin):
    return (
        fit_population(warfarin, error="additive"),
        fit_population(warfarin, error="additive", correlated=("v", "cl")),
    )


def test_exact_gradient_and_mode_sensitivity_match_central_differences(warfarin, monkeypatch):
    """Every outer coordinate, the correlation's z among them, with a covariate effect and a
    parameter without an eta beside the pair."""
    monkeypatch.setattr(_foce, "_MODE_TOLERANCE", 1e-13)
    model = warfarin.roles.model
    effects = parse_effects(("cl ~ wt/70",), warfarin.covariates, (), tuple(model.parameters))
    random = np.array([True, True, False])  # cl, v, ka
    problem = _foce._Problem(
        warfarin, model, "combined", ERROR_MODELS["combined"], effects, random, pair=(0, 1)
    )
    start = population._pooled_starts(problem, warfarin)[0]
    x = np.r_[start, np.log([0.3, 0.25, 1e-5]), np.log([0.5, 0.1]), [0.7], [0.6]]
    held = problem.p + 2  # ka's SD, held at 1e-5: its differences are ill-conditioned
    assert_exact_derivatives(problem, x, keep=np.arange(x.size) != held)


def test_a_zero_correlation_gives_the_diagonal_objective(warfarin, fits):
    diagonal, _ = fits
    model = warfarin.roles.model
    problem = _foce._Problem(warfarin, model, "additive", ERROR_MODELS["additive"], pair=(0, 1))
    x = np.r_[population._outer_point(diagonal), 0.0]
    modes = _foce._modes(problem, x[None], diagonal.eta.to_numpy()[None])
    assert _foce._ofv_and_gradient(problem, modes)[0].sum() == pytest.approx(diagonal.ofv, abs=1e-7)


def test_the_correlated_fit_reports_the_correlation_with_its_delta_method_se(fits):
    diagonal, fit = fits
    assert fit.converged and fit.correlated == ("cl", "v")
    assert fit.ofv < diagonal.ofv - 1  # warfarin's CL and V are correlated
    assert diagonal.correlation.empty and diagonal.correlated is None
    row = fit.summary().loc[("correlation", "cl,v")]
    rho = fit.correlation["cl,v"]
    z_se = np.sqrt(fit.covariance.loc[("correlation", "cl,v"), ("correlation", "cl,v")])
    assert row["estimate"] == rho and 0 < rho < 1
    assert row["se"] == pytest.approx((1 - rho**2) * z_se)
    assert row["ci_low"] == pytest.approx(np.tanh(np.arctanh(rho) - 1.959964 * z_se), abs=1e-5)
    assert -1 < row["ci_low"] < rho < row["ci_high"] < 1
    assert list(fit.omega.index) == ["cl", "v", "ka"]  # omega keeps the variances


def test_importance_sampling_agrees_with_foce_on_the_correlated_fit(warfarin, fits):
    """The exact objective at the estimates carries log(1 - rho^2) as FOCE-I's does: the two
    differ by the Laplace approximation's error only, as they do for the diagonal fit."""
    diagonal, fit = fits
    gaps = []
    for each in (diagonal, fit):
        ofv, se = population.importance_sampling_ofv(warfarin, each, draws=500, seed=2)
        gaps.append(ofv - each.ofv)
        assert se < 0.5
    assert abs(gaps[1] - gaps[0]) < 1.0


def test_the_roles_carry_correlated(warfarin, fits):
    data, roles = load_dataset("warfarin")
    given = {f.name: getattr(roles, f.name) for f in dataclasses.fields(roles)}
    chosen = pmx_roles(**(given | {"correlated": ["v", "cl"]}))
    assert chosen.correlated == ("cl", "v")
    fit = fit_population(prepare_study(data, chosen), error="additive")
    assert fit.ofv == fits[1].ofv


@pytest.mark.parametrize(
    "options, error, message",
    [
        ({"correlated": "cl"}, TypeError, "pair of parameter names"),
        ({"correlated": ("cl", "v", "ka")}, ValueError, "exactly two"),
        ({"correlated": ("cl", "cl")}, ValueError, "twice"),
        ({"correlated": ("cl", "q")}, ValueError, "not parameters of"),
        ({"correlated": ("cl", "ka"), "random": ("cl", "v")}, ValueError, "no random effect"),
    ],
)
def test_bad_correlated_is_refused(warfarin, options, error, message):
    with pytest.raises(error, match=message):
        fit_population(warfarin, **options)


def test_the_undetermined_correlation_message_quotes_the_summarys_rse_and_interval(fits):
    """The diagnostic of a correlation the data do not determine gives the RSE and interval
    the summary prints for it, not the SE of Fisher's z read as an RSE."""
    fit = fits[1]
    key = ("correlation", "cl,v")
    z_se = np.sqrt(fit.covariance.loc[key, key])
    row = fit.summary().loc[key]
    message = population._undetermined_message(
        key, "correlation cl,v", np.arctanh(fit.correlation["cl,v"]), z_se, ("additive",)
    )
    assert f"RSE {row['rse_percent']:.3g} %" in message
    assert f"({row['ci_low']:.3g}, {row['ci_high']:.3g})" in message
    assert "the correlation cl,v" in message and "fit without correlated" in message
    assert f"RSE is {100 * z_se:.3g} %" not in message and "factor 100" not in message
