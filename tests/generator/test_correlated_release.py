"""A release with a correlated pair of etas: the correlation released, read, checked, drawn."""

import dataclasses
import json
import warnings

import numpy as np
import pandas as pd
import pytest

from synpmx_lite.generator import generate
from synpmx_lite.generator.checks import release_checks
from synpmx_lite.generator.estimate import model_fingerprint, synpmx_model_estimate
from synpmx_lite.generator.influence import jackknife_moves
from synpmx_lite.generator.release import Fingerprint
from synpmx_lite.generator.utility import fingerprint_at
from synpmx_lite.pmx.population import FitWarning, fit_population
from synpmx_lite.pmx.study import load_dataset, prepare_study
from synpmx_lite.rounding import round_significant

PAIR = "cl,v"


@pytest.fixture(scope="module")
def fit():
    return synpmx_model_estimate(*load_dataset("warfarin"), correlated=("cl", "v"))


@pytest.fixture(scope="module")
def fingerprint(fit):
    return model_fingerprint(fit)


def _p5(fit, text, privacy=None):
    table = release_checks(text, fit.study, pk=fit.pk, privacy=privacy or fit.privacy)
    row = table.set_index("check").loc["P5"]
    return row["verdict"], " ".join(map(str, row.to_numpy()))


def test_the_correlation_is_released_rounded_and_read_back(fit, fingerprint):
    rho = fit.pk.correlation[PAIR]
    assert fingerprint.correlation == {PAIR: float(round_significant(rho, 1))}
    assert Fingerprint.from_json(fingerprint.to_json()).correlation == fingerprint.correlation
    assert f"cp: {PAIR} correlation" in fit.privacy.moves.columns
    assert fingerprint.checks["P5"] != "FAIL"
    table = release_checks(fingerprint.to_json(), fit.study, pk=fit.pk, privacy=fit.privacy)
    verdicts = table.set_index("check")["verdict"]
    assert verdicts["P2"] == verdicts["P3"] == "pass"  # its key is vocabulary, its figure one


def test_p3_fails_a_correlation_with_too_many_figures(fit, fingerprint):
    released = json.loads(fingerprint.to_json())
    exact = released | {"correlation": {PAIR: round(fit.pk.correlation[PAIR], 4)}}
    table = release_checks(json.dumps(exact), fit.study, pk=fit.pk, privacy=fit.privacy)
    assert table.set_index("check").loc["P3", "verdict"] == "FAIL"


def test_p5_fails_an_edited_an_unknown_or_an_unread_correlation(fit, fingerprint):
    released = json.loads(fingerprint.to_json())
    edited = released | {"correlation": {PAIR: -0.9}}
    verdict, text = _p5(fit, json.dumps(edited))
    assert verdict == "FAIL" and "is not the estimate whose influence was read" in text
    unknown = released | {"correlation": {"cl,ka": 0.4}}
    verdict, text = _p5(fit, json.dumps(unknown))
    assert verdict == "FAIL" and "no correlated pair behind it" in text
    unread = dataclasses.replace(
        fit.privacy, moves=fit.privacy.moves.drop(columns=f"cp: {PAIR} correlation")
    )
    verdict, text = _p5(fit, fingerprint.to_json(), unread)
    assert verdict == "FAIL" and f"cp: {PAIR} correlation has no reading" in text


def test_a_correlation_outside_minus_one_to_one_is_not_a_fingerprint(fingerprint):
    released = json.loads(fingerprint.to_json())
    for bad in (1.0, -1.5, "0.4"):
        with pytest.raises((TypeError, ValueError), match="correlation"):
            Fingerprint.from_json(json.dumps(released | {"correlation": {PAIR: bad}}))


def test_synthetic_etas_carry_the_released_correlation(fit, fingerprint):
    """Drawn for many patients, log CL and log V correlate as released, within the Monte
    Carlo error (1 - rho^2) / sqrt(n); the released figure is within the source fit's SE."""
    model = fingerprint.pk_model
    n = 20_000
    eta = generate._random_effects(fingerprint, model, n, np.random.default_rng(5))
    cl, v = model.parameters.index("cl"), model.parameters.index("v")
    drawn = np.corrcoef(eta[:, cl], eta[:, v])[0, 1]
    released = fingerprint.correlation[PAIR]
    assert abs(drawn - released) < 3 * (1 - released**2) / np.sqrt(n)
    np.testing.assert_allclose(eta[:, cl].var(), fingerprint.omega["cl"], rtol=0.05)
    source = fit.pk.summary().loc[("correlation", PAIR)]
    assert abs(released - source["estimate"]) < source["se"]


def test_the_jackknife_reads_each_patients_move_of_the_correlation_as_exact_refits_do():
    """Sixteen warfarin patients, CL and V correlated (about 0.5): one Newton step per
    patient agrees with the exact leave-one-out refit's move of the correlation within a third
    of the move and a point (it understates the largest, as it does for the other estimates:
    those past ``exact_from`` are refitted), and refitting from ``exact_from`` gives the
    exact moves."""
    study = prepare_study(*load_dataset("warfarin"))
    small = study.subset(np.arange(study.n_patients) < 16)
    pk = fit_population(small, correlated=("cl", "v"))
    assert pk.converged and 0.3 < pk.correlation[PAIR] < 0.7
    read = jackknife_moves(
        small, pk, pk_label="cp", exact_from=np.inf, kinds=("correlation",)
    ).moves
    assert list(read.columns) == [f"cp: {PAIR} correlation"]
    exact = []
    for i in range(small.n_patients):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FitWarning)
            without = small.subset(np.arange(small.n_patients) != i)
            refit = fit_population(without, correlated=("cl", "v"))
        exact.append(100 * abs(refit.correlation[PAIR] - pk.correlation[PAIR]))
    exact = np.array(exact)
    reading = read.iloc[:, 0].to_numpy()
    assert np.all(np.abs(reading - exact) <= 0.35 * exact + 1.0)
    assert exact.max() > 15
    large = exact > 10
    refitted = jackknife_moves(
        small, pk, pk_label="cp", exact_from=10.0, kinds=("correlation",)
    ).moves
    np.testing.assert_allclose(refitted.iloc[:, 0].to_numpy()[large], exact[large], rtol=1e-6)


def test_a_correlated_parameter_without_an_eta_is_refused():
    with pytest.raises(ValueError, match="no random effect"):
        synpmx_model_estimate(*load_dataset("theo_sd"), random=("cl", "v"), correlated=("cl", "ka"))


@pytest.mark.parametrize("rho", [0.97, -0.951, 0.9999])
def test_a_correlation_one_figure_rounds_to_one_is_refused_by_name(fit, rho):
    near_one = dataclasses.replace(fit.pk, correlation=pd.Series({PAIR: rho}))
    with pytest.raises(
        ValueError, match=r"correlation of cl,v .*correlated=\('cl', 'v'\).* rounds to"
    ):
        model_fingerprint(dataclasses.replace(fit, pk=near_one))


def test_a_correlation_just_inside_is_released_below_one(fit):
    inside = dataclasses.replace(fit.pk, correlation=pd.Series({PAIR: 0.94}))
    released = model_fingerprint(dataclasses.replace(fit, pk=inside))
    assert released.correlation == {PAIR: 0.9}


def test_an_unrounded_release_leaves_the_correlation_unrounded(fit, fingerprint):
    rho = float(fit.pk.correlation[PAIR])
    assert fingerprint_at(fit, None).correlation == {PAIR: rho}
    assert fingerprint_at(fit, 2).correlation == {PAIR: float(round_significant(rho, 2))}
    assert fingerprint_at(fit, 1) == fingerprint
