"""Chosen random effects (``random=``): parameters without an eta are typical values only."""

import dataclasses
import warnings

import numpy as np
import pytest

from synpmx_lite.pmx.population import FitWarning, fit_population
from synpmx_lite.pmx.study import load_dataset, pmx_roles, prepare_study
from tests.pmx.test_population import fit_additive_iv_study


@pytest.fixture(scope="module")
def theo():
    return prepare_study(*load_dataset("theo_sd"))


@pytest.fixture(scope="module")
def nimo():
    return prepare_study(*load_dataset("nimoData"))


@pytest.fixture(scope="module")
def nimo_without_q(nimo):
    with pytest.warns(FitWarning) as caught:
        fit = fit_population(nimo, random=("cl", "v", "vp"))
    assert len(caught) == 1
    return fit


def test_nimo_without_an_eta_on_q_is_flagged_only_for_the_width_of_vp(nimo_without_q):
    """With an eta on Q nimoData's omega_Q sits at its floor; without one nothing sits at a
    bound, but the between-subject SD of Vp (3.3 on the log scale, a factor 28 per SD) is no
    population model: that alone is flagged, naming Vp."""
    fit = nimo_without_q
    assert fit.omega_sd["vp"] > 3
    [message] = fit.diagnostics
    assert not fit.converged
    assert message.startswith(
        "implausible variance: the between-subject SD of vp is 3.32 on the log scale, above 2"
    )
    # Beside it, a figure of every patient (the SD of their EBEs), never the extremes' span:
    # the diagnostics reach the privacy checks' report.
    spread = np.std(fit.eta["vp"].to_numpy())
    assert f"the SD of the patients' random effects, their EBEs, is {spread:.3g}" in message
    extremes = fit.eta["vp"].agg(["min", "max"])
    assert not any(f"{value:.3g}" in message for value in (*extremes, np.ptp(extremes)))
    assert f"{np.exp(np.ptp(extremes)):.3g}" not in message
    assert "remove the random effect (eta) on vp" in message
    assert fit.random == ("cl", "v", "vp")
    assert list(fit.omega.index) == ["cl", "v", "vp"]
    assert list(fit.eta.columns) == ["cl", "v", "vp"]
    assert ("omega_sd", "q") not in fit.summary().index
    assert ("typical", "q") in fit.jackknife.columns
    q = fit.individual["q"].to_numpy()
    np.testing.assert_allclose(q, fit.typical["q"], rtol=1e-12)  # shared by every patient


@pytest.mark.parametrize("sd, flagged", [(1.5, ()), (2.6, ("cl", "v"))])
def test_a_between_subject_sd_above_2_is_flagged_by_name(sd, flagged):
    """Simulated with SD 2.6 on CL and V, both estimates pass 2 and are named; at 1.5 the fit
    converges."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FitWarning)
        fit = fit_additive_iv_study(sd, n=40, seed=5)
    wide = tuple(n for n in fit.omega_sd.index if f"SD of {n} is" in " ".join(fit.diagnostics))
    assert wide == flagged == tuple(fit.omega_sd.index[fit.omega_sd > 2])
    assert fit.converged == (not flagged)


def test_nimo_without_q_reaches_the_full_models_point(nimo, nimo_without_q):
    """Every pooled start leads the reduced search to a local optimum (OFV 128.8); the full
    model's estimates with Q's SD held give 116.6, so the reduced optimum is at most that,
    and the run from there is in ``starts``."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FitWarning)  # omega_Q at its floor: flagged
        full = fit_population(nimo)
    assert full.ofv == pytest.approx(116.626, abs=1e-3)
    assert nimo_without_q.ofv <= full.ofv + 0.01
    runs = nimo_without_q.starts
    assert len(runs) == 4 and runs["ofv"].iloc[:3].min() > nimo_without_q.ofv + 10
    start = runs.iloc[3][["start cl", "start v"]].to_numpy(dtype=float)
    np.testing.assert_allclose(start, full.typical[["cl", "v"]])


def test_every_parameter_named_fits_as_the_default(theo):
    default = fit_population(theo)
    named = fit_population(theo, random=("ka", "cl", "v"))
    assert named.ofv == default.ofv
    assert named.omega.equals(default.omega)


def test_the_roles_carry_random(theo):
    data, roles = load_dataset("theo_sd")
    given = {field.name: getattr(roles, field.name) for field in dataclasses.fields(roles)}
    chosen = pmx_roles(**(given | {"random": ["cl", "v"]}))
    fit = fit_population(prepare_study(data, chosen))
    assert fit.random == ("cl", "v")
    assert fit.ofv == fit_population(theo, random=("cl", "v")).ofv


@pytest.mark.parametrize(
    "random, error, message",
    [
        ("cl", TypeError, "sequence of parameter names"),
        ((), ValueError, "at least one"),
        (("cl", "cl"), ValueError, "once each"),
        (("cl", "q"), ValueError, "parameters of"),
    ],
)
def test_bad_random_is_refused(theo, random, error, message):
    with pytest.raises(error, match=message):
        fit_population(theo, random=random)


def test_the_limit_of_a_vanishing_variance_is_the_fit_without_eta(theo):
    """The engine holds a parameter without eta at an SD of 1e-5: its OFV equals the OFV of
    the full model with that SD fixed smaller still, to well below 1e-6."""
    from synpmx_lite.pmx._foce import _modes, _ofv_and_gradient, _Problem
    from synpmx_lite.pmx.population import ERROR_MODELS

    fit = fit_population(theo, random=("cl", "v"))
    names = list(fit.model.parameters)
    problem = _Problem(theo, fit.model, fit.error, ERROR_MODELS[fit.error])
    log_sd = 0.5 * np.log(fit.omega.reindex(names, fill_value=1e-14).to_numpy())  # SD 1e-7
    x = np.r_[np.log(fit.typical[names]), log_sd, np.log(fit.residual)]
    modes = _modes(problem, x[None], np.zeros((1, theo.n_patients, len(names))))
    assert abs(_ofv_and_gradient(problem, modes)[0].sum() - fit.ofv) < 1e-6


def test_typical_value_without_eta_is_read_by_the_jackknife_as_exact_refits_move_it(theo):
    """ka without an eta on theo_sd (12 patients): each patient's one-step Newton reading of
    log ka agrees with the exact leave-one-out refit's move."""
    from synpmx_lite.generator.influence import jackknife_moves

    fit = fit_population(theo, random=("cl", "v"))
    read = jackknife_moves(theo, fit, pk_label="cp", exact_from=np.inf, kinds=("typical",)).moves
    assert list(read.columns) == ["cp: ka typical value"]  # cl and v are read from their etas
    exact = []
    for i in range(theo.n_patients):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FitWarning)
            refit = fit_population(theo.subset(np.arange(theo.n_patients) != i), random=fit.random)
        exact.append(100 * abs(np.log(refit.typical["ka"] / fit.typical["ka"])))
    exact = np.array(exact)
    reading = read.iloc[:, 0].to_numpy()
    # The largest move is 18 %; one Newton step is within 1.8 points of every exact move.
    np.testing.assert_allclose(reading, exact, atol=0.1 * exact.max())
    assert exact.max() > 10
