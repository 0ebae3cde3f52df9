"""The attack on released dose and visit times: figures past two that carry a patient's time.

A time that two figures would merge with a neighbour of its period is released with more
figures. The attacker reads, for every such time, the source times within one unit of its last
figure (and in its two-figure rounding cell): where one to ``k - 1`` patients' times lie there,
the release may pin their times down finer than the two-figure grid. Whether it does is read
directly: every patient's time is moved within its two-figure cell, keeping the schedule's
order, and a release whose figures past two carry the patients' times changes. The release's
time rule reads only the study's schedule and thresholds, so the studies are prepared, not
fitted.
"""

import copy
import dataclasses
import json
import warnings

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from synpmx_lite.generator import checks, estimate
from synpmx_lite.generator.estimate import (
    ModelFit,
    _arms_kept,
    _ordered_times,
    _timed_release,
    model_fingerprint,
    model_privacy_checks,
    synpmx_model_estimate,
)
from synpmx_lite.pmx.population import FitWarning
from synpmx_lite.pmx.study import load_dataset, prepare_study
from synpmx_lite.rounding import round_significant

#: The shipped studies whose schedules two figures merge (found by releasing every study).
CROWDED_STUDIES = ("theo_md", "pheno_sd", "nimoData", "mad_sim", "onc_sim")
K = 3


def _squeezed(times: pd.Series) -> pd.Series:
    """Each time halfway to its two-figure value: it stays in its cell, and the order of all
    times stays (the cells are ordered intervals, the map within each increasing)."""
    return (times + pd.Series(round_significant(times.to_numpy(float), 2), times.index)) / 2


def _timed(name: str, squeeze: bool = False) -> tuple[ModelFit, list, dict]:
    data, roles = load_dataset(name)
    study = prepare_study(data, roles)
    if squeeze:
        doses, observations = study.doses.copy(), study.observations.copy()
        doses["time"] = _squeezed(doses["time"])
        # A nominal time (the protocol's) is a time of the schedule too.
        for column in ("time", "visit") if roles.nominal_time else ("time",):
            observations[column] = _squeezed(observations[column])
        study = dataclasses.replace(study, doses=doses, observations=observations)
    fit = ModelFit(study, np.ones(study.n_patients, bool), None, {}, None, 1, K, K)
    arms = _arms_kept(fit)
    cohort = np.flatnonzero(study.arms.isin(arms).to_numpy())
    return fit, *_timed_release(fit, arms, cohort)


@pytest.fixture(scope="module", params=CROWDED_STUDIES)
def timed(request):
    return request.param, *_timed(request.param)


def _figures(value: float) -> int:
    """Significant figures of a released time as written (0 and integers' trailing zeros
    count as the fewest)."""
    for figures in range(1, 16):
        if np.isclose(round_significant(value, figures), value, rtol=1e-12, atol=0):
            return figures
    return 16


def pinned_patients(fit: ModelFit, arms: list, endpoints: dict) -> tuple[int, int]:
    """The released times past two figures, and the patients one of them pins down: one to
    ``k - 1`` patients whose dose or observation time lies within one unit of the time's last
    figure, inside its two-figure cell."""
    study = fit.study
    sources = [(study.doses["time"].to_numpy(float), study.doses["patient"].to_numpy())]
    sources += [
        (rows["time"].to_numpy(float), rows["patient"].to_numpy())
        for _, rows in study.observations.groupby("endpoint")
    ]
    released = [d["time"] for arm in arms for d in arm["doses"]]
    released += [t for endpoint in endpoints.values() for _, t in endpoint["visits"]]
    finer, pinned = 0, set()
    for value in released:
        figures = _figures(value)
        if figures <= 2 or value == 0:
            continue
        finer += 1
        unit = 10.0 ** (np.floor(np.log10(value)) - figures + 1)
        cell = round_significant(value, 2)
        for times, owners in sources:
            near = (np.abs(times - value) <= unit * (1 + 1e-9)) & np.isclose(
                round_significant(times, 2), cell
            )
            holders = set(np.unique(owners[near]).tolist())
            if 0 < len(holders) < K:
                pinned |= holders
    return finer, len(pinned)


def _times(arms: list, endpoints: dict) -> list:
    return [d["time"] for arm in arms for d in arm["doses"]] + [
        t for endpoint in endpoints.values() for _, t in endpoint["visits"]
    ]


def test_released_times_carry_only_the_two_figure_grid_and_the_order(timed):
    name, fit, arms, endpoints = timed
    finer, pinned = pinned_patients(fit, arms, endpoints)
    _, *squeezed = _timed(name, squeeze=True)
    assert _times(*squeezed) == _times(arms, endpoints), (
        f"the release follows the patients' times within their two-figure cells: {finer} "
        f"time(s) past two figures, {pinned} patient(s) within one unit of their last figure"
    )


@pytest.fixture(scope="module")
def pheno():
    """pheno_sd's fit and release: a visit (median 142.2 h) and two doses (143.3 and 144.5 h)
    meet at 140 h at two figures."""
    data, roles = load_dataset("pheno_sd")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FitWarning)
        fit = synpmx_model_estimate(data, roles, seed=1)
    return fit, json.loads(model_fingerprint(fit).to_json())


def _p3(fit: ModelFit, release: dict) -> tuple[str, str]:
    checks = model_privacy_checks(fit, released=json.dumps(release)).set_index("check")
    return checks.loc["P3", "verdict"], checks.loc["P3", "result"]


def test_the_release_of_a_crowded_study_passes_p3(pheno):
    fit, release = pheno
    visits = [t for _, t in release["endpoints"]["DV"]["visits"]]
    doses = [d["time"] for d in release["arms"][0]["doses"]]
    assert 139.0 in visits and {140.0, 141.0} <= set(doses)  # the run at 140 h
    assert _p3(fit, release) == ("pass", "none")


def test_p3_fails_a_time_given_a_figure_the_order_does_not_need(pheno):
    fit, release = pheno
    edited = copy.deepcopy(release)
    # The visit's median time at four figures: one patient's observation time.
    position = [t for _, t in edited["endpoints"]["DV"]["visits"]].index(139.0)
    edited["endpoints"]["DV"]["visits"][position][1] = 142.2
    verdict, result = _p3(fit, edited)
    assert verdict == "FAIL"
    assert f"DV visit {position + 1} of period 0: time 142.2 is not the time rule's 139" in result
    assert "carries figures the order does not need" in result


def test_p3_fails_an_uncrowded_time_given_figures(pheno):
    fit, release = pheno
    edited = copy.deepcopy(release)
    assert edited["endpoints"]["DV"]["visits"][1] == [0, 74.0]
    # The visit's median, 73.8 h, at four figures under the single-value rule: the checks
    # before the time rule was recomputed judged it at its own figures and passed it.
    edited["endpoints"]["DV"]["visits"][1][1] = 73.79
    verdict, result = _p3(fit, edited)
    assert verdict == "FAIL"
    assert "DV visit 2 of period 0: time 73.79 is not the time rule's 74 (it carries" in result


def test_p3_fails_a_dose_time_off_the_rule(pheno):
    fit, release = pheno
    edited = copy.deepcopy(release)
    dose = next(d for d in edited["arms"][0]["doses"] if d["time"] == 141.0)
    dose["time"] = 142.0  # in the cell and in order, but not the rule's place
    verdict, result = _p3(fit, edited)
    assert verdict == "FAIL"
    assert (
        f"arm 1 dose {dose['index']} of period 0: time 142.0 is not the time rule's 141" in result
    )


def test_a_schedule_that_five_figures_cannot_order_is_refused():
    # The single-value rule moved the third time's two-figure value below the fourth's: the
    # run of the first three takes 99.9 to 101 h, and nothing reading 60 lies above it.
    points = [(0, 1.0, 100.0), (0, 2.0, 100.0), (0, 3.0, 50.0), (0, 4.0, 60.0)]
    with pytest.raises(ValueError, match=r"times from 4 of period 0 .*MAX_TIME_FIGURES"):
        _ordered_times(points)
    assert _ordered_times(points[:3]) == [99.9, 100.0, 101.0]


def test_the_builder_and_the_checks_allow_a_time_the_same_figures():
    """The checks keep their own bound (they judge the release independently of the builder),
    so the two must agree: a builder allowed more figures would write releases that fail P3,
    checks allowing more would pass times the builder never writes."""
    assert estimate.MAX_TIME_FIGURES == checks.MOST_TIME_FIGURES == 5


@settings(max_examples=25, deadline=None)
@given(
    anchor=st.floats(0.1, 9999.0).map(lambda x: float(round_significant(x, 2))),
    count=st.integers(1, 40),
    below=st.one_of(st.just(None), st.floats(0.8, 1.0, exclude_max=True)),
)
def test_the_builder_and_the_checks_spread_a_crowded_run_alike(anchor, count, below):
    """A run of ``count`` times in one two-figure cell above an earlier time (or none): the
    builder's spread and the checks' own recomputation give the same values, or both refuse."""
    above = 0.0 if below is None else anchor * below
    try:
        built = estimate._spread(anchor, count, above, 0, anchor)
    except ValueError:
        built = None
    recomputed = checks._run_values(anchor, count, above)
    assert (built is None) == (recomputed is None)
    if built is not None:
        np.testing.assert_allclose(built, recomputed, rtol=1e-12)
        assert len(built) == count and all(np.diff([above, *built]) > 0)
