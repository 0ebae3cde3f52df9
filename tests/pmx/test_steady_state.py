"""Steady-state doses (NONMEM's SS=1) against the explicit doses that lead to them."""

import dataclasses

import numpy as np
import pandas as pd
import pytest

from synpmx_lite.generator.estimate import release_refusal
from synpmx_lite.pmx import _foce
from synpmx_lite.pmx.pk import PkModel, _sensitivities, predict_concentrations
from synpmx_lite.pmx.population import ERROR_MODELS
from synpmx_lite.pmx.study import pmx_roles, prepare_study

_INTERVAL = 24.0
_EXPLICIT = 60  # doses before the steady-state one: their tail is below 1e-16 here
_START = _EXPLICIT * _INTERVAL
_SAMPLES = (0.5, 1.0, 2.0, 4.0, 8.0, 12.0, 23.0, 30.0, 47.0, 60.0)
_MODELS = {
    "oral": (PkModel(route="oral"), [2.0, 20.0, 1.0]),
    "iv, two compartments": (PkModel(compartments=2, route="iv"), [5.0, 20.0, 3.0, 30.0]),
    "oral, two compartments": (PkModel(compartments=2, route="oral"), [5.0, 20.0, 3.0, 30.0, 0.8]),
}
_MODEL_NAMES = [model for model, _ in _MODELS.values()]


def _table(model, *, steady: bool, addl: int = 0, n: int = 6) -> pd.DataFrame:
    """Doses of 100 every 24 h and samples after the last of them, written either as one
    steady-state dose (with ``addl`` more) or as the 60 doses before it and it; the values
    drawn about the typical curve (the modes stay near it, where the explicit doses' tail is
    below 1e-16)."""
    rng = np.random.default_rng(4)
    typical = dict(zip(_MODEL_NAMES, (v for _, v in _MODELS.values()), strict=True))[model]
    times = _START + np.array(_SAMPLES + tuple(24.0 * k + 6.0 for k in range(1, addl + 1)))
    doses = np.arange(_EXPLICIT + 1 + addl)[None] * _INTERVAL
    curve = predict_concentrations(
        model, [typical], doses, np.full(doses.shape, 100.0), 0 * doses, times[None]
    )[0]
    rows = []
    for patient in range(1, n + 1):
        if steady:
            rows.append((patient, _START, 0.0, 100.0, 1, 1, addl, _INTERVAL))
        else:
            rows += [(patient, t, 0.0, 100.0, 1, 0, 0, 0.0) for t in doses[0]]
        values = curve * rng.lognormal(0.0, 0.2, curve.size)
        rows += [(patient, t, dv, 0.0, 0, 0, 0, 0.0) for t, dv in zip(times, values, strict=True)]
    table = pd.DataFrame(rows, columns=["ID", "TIME", "DV", "AMT", "EVID", "SS", "ADDL", "II"])
    return table.sort_values(["ID", "TIME", "EVID"], ascending=[True, True, False], kind="stable")


def _study(model, **kwargs):
    roles = pmx_roles(
        id="ID", time="TIME", dv="DV", amt="AMT", evid="EVID", ss="SS", addl="ADDL", ii="II",
        model=model,
    )  # fmt: skip
    return prepare_study(_table(model, **kwargs).reset_index(drop=True), roles)


@pytest.mark.parametrize("name", list(_MODELS))
@pytest.mark.parametrize("addl", [0, 2])
def test_a_steady_state_dose_equals_the_doses_that_lead_to_it(name, addl, monkeypatch):
    """The modes, the OFV and its exact gradient: SS=1 against 60 explicit doses before it
    (modes solved to 1e-13, so that they differ by the doses' arithmetic alone)."""
    monkeypatch.setattr(_foce, "_MODE_TOLERANCE", 1e-13)
    model, typical = _MODELS[name]
    steady, explicit = (_study(model, steady=s, addl=addl) for s in (True, False))
    assert steady.dose_interval is not None and explicit.dose_interval is None
    problems = [
        _foce._Problem(s, model, "combined", ERROR_MODELS["combined"]) for s in (steady, explicit)
    ]
    x = np.r_[np.log(typical), np.full(len(typical), np.log(0.3)), np.log([0.1, 0.2])]
    x = x + 0.05 * np.random.default_rng(1).standard_normal(x.size)
    results = []
    for problem in problems:
        evaluation = _foce._modes(problem, x[None], np.zeros((1, 6, len(typical))))
        assert evaluation.converged.all()
        results.append((evaluation.eta, *_foce._ofv_and_gradient(problem, evaluation)))
    (eta_ss, ofv_ss, grad_ss), (eta_ex, ofv_ex, grad_ex) = results
    np.testing.assert_allclose(ofv_ss, ofv_ex, rtol=1e-8)
    np.testing.assert_allclose(grad_ss, grad_ex, rtol=1e-7, atol=1e-7)
    np.testing.assert_allclose(eta_ss, eta_ex, rtol=1e-7, atol=1e-9)


@pytest.mark.parametrize("ratio", [0.5, 1.0, 1.0 + 1e-6, 1.04, 3.0])
def test_steady_state_derivatives_hold_where_absorption_and_elimination_rates_meet(ratio):
    """ka at, near and away from CL/V (the divided difference by quadrature or closed form):
    the value and the first and second derivatives against the explicit doses."""
    model = PkModel(route="oral")
    steady, explicit = (_study(model, steady=s) for s in (True, False))
    log_theta = np.log([[2.0, 20.0, 0.1 * ratio]] * 6)
    log_theta[:, 0] += np.linspace(-0.2, 0.2, 6)
    outputs = []
    for study in (steady, explicit):
        problem = _foce._Problem(study, model, "combined", ERROR_MODELS["combined"])
        outputs.append(_sensitivities(model, problem.dosing, log_theta, 2))
    for ss, ex in zip(*outputs, strict=True):
        np.testing.assert_allclose(ss, ex, rtol=1e-8, atol=1e-12 * np.abs(ex).max())


def test_steady_state_doses_the_closed_forms_do_not_give_are_refused():
    model = PkModel(route="oral")
    table = _table(model, steady=True).reset_index(drop=True)
    dose = table.index[table["EVID"] == 1][2]
    at_dose = table.index == dose
    roles = dict(
        id="ID", time="TIME", dv="DV", amt="AMT", evid="EVID", ss="SS", ii="II", addl="ADDL",
        model=model,
    )  # fmt: skip
    infusion = {"rate": "RATE", "model": PkModel(route="iv")}
    cases = [
        (table.assign(SS=table["SS"].mask(at_dose, 2)), {}, "'SS' has steady-state values"),
        (
            table.assign(II=table["II"].mask(at_dose, 0.0)), {},
            "'SS' has steady-state doses .*without a positive dosing interval",
        ),
        (
            table.assign(RATE=np.where(at_dose, 50.0, 0.0)), infusion,
            "'RATE' has steady-state infusions",
        ),
        (table, {"model": PkModel(route="oral", lag=True)}, "'SS' has steady-state .*lag time"),
    ]  # fmt: skip
    for data, change, message in cases:
        with pytest.raises(ValueError, match=message + rf".*rows .*{dose}"):
            prepare_study(data, pmx_roles(**{**roles, **change}))
    observation = table.index[table["EVID"] == 0][0]
    flagged = table.assign(SS=(table.index == observation).astype(int) | table["SS"])
    not_doses = rf"'SS' has SS 1 on rows that are not doses: rows {observation}"
    with pytest.raises(ValueError, match=not_doses):
        prepare_study(flagged, pmx_roles(**roles))
    earlier = pd.concat([table.iloc[[0]].assign(TIME=_START - 24.0, SS=0, II=0.0), table])
    # Row 1 is patient 1's steady-state dose, after their dose of row 0.
    after = r"steady-state doses .*after an earlier dose .*: rows 1 \(first: patient 1\)"
    with pytest.raises(ValueError, match=after):
        prepare_study(earlier.reset_index(drop=True), pmx_roles(**roles))


def test_a_steady_state_dose_needs_ii_without_addl():
    """SS 1 with II and no ADDL column reads as the same study with ADDL 0; ADDL without II,
    and II with neither ADDL nor SS, are refused by name."""
    model = PkModel(route="oral")
    table = _table(model, steady=True).reset_index(drop=True)
    roles = dict(id="ID", time="TIME", dv="DV", amt="AMT", evid="EVID", ss="SS", model=model)
    with_addl = prepare_study(table, pmx_roles(**roles, ii="II", addl="ADDL"))
    without = prepare_study(table.drop(columns="ADDL"), pmx_roles(**roles, ii="II"))
    assert without.dose_interval is not None
    for name in ("dose_time", "dose_amount", "dose_interval", "obs_time", "obs_dv"):
        np.testing.assert_array_equal(getattr(without, name), getattr(with_addl, name))
    with pytest.raises(ValueError, match="addl needs ii"):
        pmx_roles(**roles, addl="ADDL")
    del roles["ss"]
    with pytest.raises(ValueError, match=r"ii \(column 'II'\) is read with addl .* or ss"):
        pmx_roles(**roles, ii="II")
    # Roles edited past pmx_roles are checked again when the study is prepared, each named.
    edits = {
        r"addl needs ii: .*column 'ADDL'": {"ii": None},
        r"ii \(column 'II'\) is read with addl": {"addl": None, "ss": None},
    }
    for message, edit in edits.items():
        with pytest.raises(ValueError, match=message):
            prepare_study(table, dataclasses.replace(with_addl.roles, **edit))


def test_the_generator_refuses_steady_state_doses():
    study = _study(PkModel(route="oral"), steady=True)
    assert "column 'SS'" in release_refusal(study)
