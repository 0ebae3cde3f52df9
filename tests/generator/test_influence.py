import dataclasses
import math

import numpy as np
import pandas as pd
import pytest

from synpmx_lite.generator.estimate import model_privacy_checks
from synpmx_lite.generator.influence import influence_moves, pd_influence_moves, verdict
from synpmx_lite.generator.protections import trimmed_log_summary
from synpmx_lite.pmx.pd import pd_loo_refits
from synpmx_lite.pmx.pk import PkModel
from synpmx_lite.pmx.population import PopulationFit


def _fit(eta):
    return PopulationFit(
        model=PkModel(route="iv"),
        error="additive",
        typical=pd.Series({"cl": 1.0}),
        omega=pd.Series({"cl": 0.09}),
        residual=pd.Series({"additive": 0.1}),
        eta=eta,
        shrinkage=pd.Series({"cl": 0.1}),
        ofv=0.0,
        converged=True,
        iterations=1,
        n_observations=10,
    )


def test_influence_hand_worked():
    eta = pd.DataFrame({"cl": [0.3, -0.1, 0.2, -0.4, 0.0]}, index=["a", "b", "c", "d", "e"])
    pk = _fit(eta)
    covariates = pd.DataFrame({"WT": [50.0, 60.0, 70.0, 200.0, 65.0]})
    moves = influence_moves(pk, covariates, ["WT"], pk_label="DV")
    assert moves.loc["d", "DV: cl typical value"] == pytest.approx(100 * (math.exp(0.4 / 4) - 1))
    # S = 0.30; leaving out d: ((0.30 - 0.16) / 4) / (0.30 / 5) = 0.5833 of the variance.
    expected = 100 * 0.3 * (1 - math.sqrt(0.035 / 0.06))
    assert moves.loc["d", "DV: cl between-subject SD"] == pytest.approx(expected)
    # Covariates are recomputed exactly without the patient.
    values = covariates["WT"].to_numpy()
    mean, sd = trimmed_log_summary(values)
    for i, patient in enumerate(moves.index):
        loo_mean, loo_sd = trimmed_log_summary(np.delete(values, i))
        assert moves.loc[patient, "WT mean on the log scale"] == pytest.approx(
            100 * abs(loo_mean - mean) / sd
        )
        assert moves.loc[patient, "WT SD on the log scale"] == pytest.approx(
            100 * abs(loo_sd - sd) / sd
        )


@pytest.mark.parametrize(
    ("covariates", "continuous", "error", "message"),
    [
        (pd.DataFrame({"WT": [50.0, 60, 70]}), ["HT"], ValueError, "continuous names columns"),
        (pd.DataFrame({"WT": [50.0, 60, 70]}), "WT", TypeError, "continuous must be a list"),
        (pd.DataFrame({"WT": [50.0, -60, 70]}), ["WT"], ValueError, "'WT' must be positive"),
        (pd.DataFrame({"WT": ["a", "b", "c"]}), ["WT"], ValueError, "'WT' must be numeric"),
        (pd.DataFrame({"WT": [50.0, 60]}), ["WT"], ValueError, "one row per fitted patient"),
        ({"WT": [50.0, 60, 70]}, ["WT"], TypeError, "covariates must be a pandas DataFrame"),
    ],
)
def test_influence_moves_bad_input(covariates, continuous, error, message):
    pk = _fit(pd.DataFrame({"cl": [0.1, -0.1, 0.0]}, index=["a", "b", "c"]))
    with pytest.raises(error, match=message):
        influence_moves(pk, covariates, continuous, pk_label="DV")
    with pytest.raises(TypeError, match="pk must be a PopulationFit"):
        influence_moves("fit", pd.DataFrame({"WT": [1.0]}), [], pk_label="DV")


def test_verdicts():
    assert [verdict(m, 15, 30) for m in (14.9, 15, 29.9, 30)] == [
        "pass",
        "review",
        "review",
        "FAIL",
    ]


def test_a_pd_models_residual_error_is_read_and_p5_judges_it(warfarin_fit):
    # Found in review: a PD model's released residual SD had no reading at all.
    model = warfarin_fit.pd["pca"]
    refits = pd_loo_refits(model)
    column = "pca: residual error"
    moves = pd_influence_moves(model, refits)[column]
    unbarred = 100 * np.abs(np.log(refits["residual"] / model.residual))
    assert (moves <= unbarred + 1e-9).all() and moves.max() > 0
    # One refit whose residual SD doubles: 69 points and many standard errors, a FAIL.
    doubled = refits.copy()
    doubled.loc[doubled.index[0], "residual"] *= 2
    assert pd_influence_moves(model, doubled)[column].iloc[0] >= 30
    # The builder reads it, and P5 fails a release where it is that large.
    assert column in warfarin_fit.privacy.moves
    edited = warfarin_fit.privacy.moves.copy()
    edited.loc[edited.index[0], column] = 40.0
    privacy = dataclasses.replace(warfarin_fit.privacy, moves=edited)
    p5 = model_privacy_checks(dataclasses.replace(warfarin_fit, privacy=privacy))
    p5 = p5.set_index("check").loc["P5"]
    assert p5["verdict"] == "FAIL" and "largest: pca: residual error" in p5["result"]


def test_p5_counts_an_unconverged_refit_by_the_estimates_the_release_holds(warfarin_fit):
    # Found in review: a refit that did not converge was let off when its patient's reading
    # passed the fail bar in a column the release does not hold.
    patient = warfarin_fit.privacy.moves.index[0]
    moves = warfarin_fit.privacy.moves.assign(**{"withheld summary": 0.0})
    moves.loc[patient, "withheld summary"] = 100.0
    privacy = dataclasses.replace(
        warfarin_fit.privacy, moves=moves, unconverged_pk_refits=(patient,)
    )
    p5 = model_privacy_checks(dataclasses.replace(warfarin_fit, privacy=privacy))
    p5 = p5.set_index("check").loc["P5"]
    assert p5["verdict"] == "review"
    assert "PK (1 exact leave-one-out refits not converged)" in p5["result"]
