import numpy as np
import pandas as pd
import pytest

from synpmx_lite.estimation import fit_population
from synpmx_lite.pk import PkModel, predict_concentrations
from synpmx_lite.study import load_dataset, pmx_roles, prepare_study


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
    roles = pmx_roles(
        id="ID", time="TIME", dv="DV", amt="AMT", evid="EVID", rate="RATE", model=model
    )
    return data, roles


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
    model = PkModel(route="iv")
    data, roles = simulate(
        model,
        [1.0, 10.0],
        [0.25, 0.25],
        n=40,
        times=[0.5, 2, 6, 12, 24],
        amount=100.0,
        additive=0.3,
        proportional=0.0,
        seed=3,
    )
    fit = fit_population(prepare_study(data, roles), error="additive")
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
    with pytest.raises(ValueError, match="error"):
        fit_population(study, error="exponential")
    with pytest.raises(TypeError, match="study"):
        fit_population(load_dataset("theo_sd")[0])
    with pytest.raises(TypeError, match="model"):
        fit_population(study, model="oral")
    nimo = prepare_study(*load_dataset("nimoData"))
    with pytest.raises(ValueError, match="additive"):
        fit_population(nimo, error="proportional")
