"""Bounds on the patients added between two releases (differencing continuous summaries)."""

import json
import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st

from synpmx_lite.generator.differencing import (
    ATTACKERS,
    _released,
    _trimming_assumed,
    differencing_bounds,
    differencing_tightness,
    exact_log_summary,
    rounding_interval,
)
from synpmx_lite.generator.estimate import model_fingerprint
from synpmx_lite.generator.protections import TRIM, protected_value, trimmed_moments
from synpmx_lite.rounding import round_significant


def _release(cohort, covariates=None, typical=None, omega=None):
    """A hand-made release holding only what differencing reads."""
    return json.dumps(
        {
            "cohort_size": cohort,
            "covariates": covariates or {},
            "typical": typical or {},
            "omega": omega or {},
        }
    )


def _wt(geometric_mean, sdlog):
    return {"wt": {"geometric_mean": geometric_mean, "sdlog": sdlog}}


def test_rounding_intervals_are_half_a_unit_with_the_finer_unit_below_a_power_of_ten():
    low, high = rounding_interval([67.0, 10.0, 0.1, 0.35], 2)
    assert low == pytest.approx([66.5, 9.95, 0.0995, 0.345])
    assert high == pytest.approx([67.5, 10.5, 0.105, 0.355])
    low, high = rounding_interval([0.1, 7.0], 1)
    assert low == pytest.approx([0.095, 6.5]) and high == pytest.approx([0.15, 7.5])


@given(st.floats(1e-3, 1e4), st.integers(1, 3))
def test_every_value_lies_in_the_interval_of_its_rounding(value, figures):
    low, high = rounding_interval(round_significant(value, figures), figures)
    assert low[()] * (1 - 1e-12) <= value <= high[()] * (1 + 1e-12)


def test_a_hand_made_pair_gives_the_bounds_worked_by_hand():
    # 3 patients at geometric mean 60, then 4 at 70, no SD released (0): from the means alone
    # the new patient's value lies between 69.5^4 / 60.5^3 and 70.5^4 / 59.5^3.
    earlier, later = _release(3, _wt(60.0, 0.0)), _release(4, _wt(70.0, 0.0))
    bounds = differencing_bounds(later, earlier)
    assert bounds.summaries == ("wt",) and bounds.new_patients == 1
    assert bounds.low[0] == pytest.approx(69.5**4 / 60.5**3)
    assert bounds.high[0] == pytest.approx(70.5**4 / 59.5**3)
    # holding the first three patients (geometric mean exactly 60), only the later rounding
    known = differencing_bounds(later, earlier, known_earlier={"wt": (math.log(60.0), 0.0)})
    assert known.low[0] == pytest.approx(69.5**4 / 60**3)
    assert known.high[0] == pytest.approx(70.5**4 / 60**3)
    assert known.factor[0] == pytest.approx((70.5 / 69.5) ** 4)


def test_the_sd_tells_how_far_one_new_patient_is_from_the_interim_mean():
    # interim logs 0, 0, 0 held exactly; the new patient at log 0.4 makes the SD 0.2, and
    # 3 s^2 = (3/4) mu^2 puts the patient at 2 s from the interim mean, 0.39 to 0.41 on the log
    # scale, inside what the mean alone allows (4 log G, G from 1.05 to 1.15)
    logs = np.array([0.0, 0.0, 0.0, 0.4])
    gm = float(round_significant(math.exp(logs.mean()), 2))
    sdlog = float(round_significant(logs.std(ddof=1), 2))
    assert (gm, sdlog) == (1.1, 0.2)
    earlier, known = _release(3, _wt(1.0, 0.0)), {"wt": (0.0, 0.0)}
    without = differencing_bounds(_release(4, _wt(gm, 0.0)), earlier, known_earlier=known)
    with_sd = differencing_bounds(_release(4, _wt(gm, sdlog)), earlier, known_earlier=known)
    assert with_sd.low[0] == pytest.approx(math.exp(2 * 0.195))
    assert with_sd.high[0] == pytest.approx(math.exp(2 * 0.205))
    assert (without.low[0], without.high[0]) == pytest.approx((1.05**4, 1.15**4))
    assert with_sd.low[0] <= math.exp(0.4) <= with_sd.high[0]


def test_typical_values_are_differenced_with_their_omegas_and_bound_almost_nothing():
    earlier = _release(20, typical={"cl": 0.1}, omega={"cl": 0.09})
    later = _release(21, typical={"cl": 0.1}, omega={"cl": 0.09})
    bounds = differencing_bounds(later, earlier)
    assert bounds.summaries == ("typical cl",)
    # one figure: 0.1 stands for 0.095 to 0.15, and 21 times that log-width is left to one
    # patient by the means; the omegas keep the patient within about 0.55 of the interim's
    # log typical value, which says less than the omega's own 95 % range of patients
    log_low, log_high = math.log(0.095), math.log(0.15)
    far = math.sqrt(21 / 20 * (20 * 0.095 - 19 * 0.085))
    assert bounds.factor[0] == pytest.approx(math.exp(log_high - log_low + 2 * far))
    assert bounds.factor[0] > math.exp(2 * 1.96 * math.sqrt(0.09))


@given(
    st.lists(st.floats(-1.0, 1.0), min_size=5, max_size=30),
    st.integers(1, 4),
    st.floats(3.0, 5.0),
)
def test_the_bound_holds_the_truth_where_the_summaries_are_untrimmed_means(offsets, added, level):
    # summaries that are what the attacker takes them for (plain mean and SD of the logs,
    # at two figures): both attackers' bounds contain the new patients' geometric mean
    logs = level + np.asarray(offsets)
    small = len(logs) - added
    if small < 2:
        return

    def release(part):
        gm = float(round_significant(math.exp(part.mean()), 2))
        return _release(part.size, _wt(gm, float(round_significant(part.std(ddof=1), 2))))

    truth = math.exp(logs[small:].mean())
    earlier, later = release(logs[:small]), release(logs)
    known = {"wt": (float(logs[:small].mean()), float(logs[:small].std(ddof=1)))}
    for bounds in (
        differencing_bounds(later, earlier),
        differencing_bounds(later, earlier, known_earlier=known),
    ):
        assert bounds.low[0] * (1 - 1e-9) <= truth <= bounds.high[0] * (1 + 1e-9)


def test_the_measured_releases_are_the_builders(warfarin_fit):
    # on the patients the screen kept, the measurement's covariate rule must give the
    # fingerprint's numbers
    released = model_fingerprint(warfarin_fit).covariates
    kept = warfarin_fit.study.covariates[["wt", "age"]][warfarin_fit.kept]
    assert len(kept) == warfarin_fit.n_source - 2
    covariates = kept.to_numpy(dtype=float)
    centre, sdlog = _released(covariates.T, warfarin_fit.min_arm_patients)
    assert centre.tolist() == [released["wt"]["geometric_mean"], released["age"]["geometric_mean"]]
    assert sdlog.tolist() == [released["wt"]["sdlog"], released["age"]["sdlog"]]


def test_the_measurement_is_reproducible_and_reads_as_a_table():
    rng = np.random.default_rng(3)
    values = pd.DataFrame({"wt": rng.lognormal(4.2, 0.2, 14), "age": rng.lognormal(3.4, 0.3, 14)})
    first = differencing_tightness(values, starts=[8], added=[1, 3], repeats=30, seed=5)
    again = differencing_tightness(values, starts=[8], added=[1, 3], repeats=30, seed=5)
    pd.testing.assert_frame_equal(first, again)
    assert len(first) == 2 * (4 + 3)  # covariates x (attackers of one added, of three)
    assert (first["coverage low"] <= first["coverage"]).all()
    assert (first["coverage"] <= first["coverage high"]).all()
    assert first["coverage"].between(0, 1).all() and (first["median factor"] >= 1).all()
    # the attacker who inverts the builder's own rule always keeps the truth among the values
    # it cannot tell apart (to within its grid)
    inverted = first[first["attacker"] == ATTACKERS[2]]
    assert (inverted["added"] == 1).all() and (inverted["coverage"] == 1).all()


def test_the_vectorised_protection_walks_as_protected_value_does():
    # weights at two figures held by one or two patients of twenty: many means move
    rng = np.random.default_rng(11)
    cuts = np.round(rng.lognormal(4.2, 0.15, (300, 20)), 0)
    centre, _ = _released(cuts, 3)
    meanlog, _ = trimmed_moments(np.sort(np.log(cuts), axis=1), TRIM)
    expected = [
        protected_value(math.exp(m), row, np.arange(20), figures=2, min_patients=3, positive=True)
        for m, row in zip(meanlog, cuts, strict=True)
    ]
    moved = centre != round_significant(np.exp(meanlog), 2)
    assert moved.sum() > 30
    assert centre.tolist() == expected


def test_the_trimming_attacker_is_bounded_by_the_interim_extremes_on_a_hand_made_case():
    # ten patients of 50 kg and ten of 70 kg, then one of 60: the final cut of 21 sets two aside
    # each end, releases 59 (held by nobody, so not moved); the arithmetic allows 36.5 to 86.6 kg,
    # and the assumption (the newcomer is not among two extremes) cuts that to 50 to 70 kg
    ordered = np.array([[50.0] * 10 + [70.0] * 10 + [60.0]])
    assert _released(ordered, 3)[0].tolist() == [59.0]
    low, high, step = _trimming_assumed(ordered, 20, 1, 3)
    assert np.exp([low[0], high[0]]) == pytest.approx([50.0, 70.0])
    assert step == 0.0


def test_the_trimming_attacker_holds_the_truth_where_its_assumption_holds():
    rng = np.random.default_rng(8)
    interim = rng.lognormal(4.2, 0.2, (400, 20))
    ordered_interim = np.sort(interim, axis=1)
    # newcomers drawn strictly inside the interim's second lowest and second highest values
    # (two are set aside each end of 23), so none is among the final cut's extremes
    inside = rng.uniform(ordered_interim[:, [2]], ordered_interim[:, [-3]], (400, 3))
    ordered = np.hstack([interim, inside])
    low, high, _ = _trimming_assumed(ordered, 20, 3, 3)
    truth = np.log(inside).mean(axis=1)
    # and the rule moved the released mean by at most the one unit (1 kg here) allowed for
    meanlog, _ = trimmed_moments(np.sort(np.log(ordered), axis=1), TRIM)
    small_move = np.abs(_released(ordered, 3)[0] - round_significant(np.exp(meanlog), 2)) <= 1
    assert small_move.mean() > 0.8
    held = (low <= truth) & (truth <= high)
    assert held[small_move].all() and not held[~small_move].all()
    assert np.median(np.exp(high - low)) < 1.5


def test_exact_log_summary_is_the_plain_mean_and_sd_of_the_logs():
    assert exact_log_summary([math.e, math.e**3]) == pytest.approx((2.0, math.sqrt(2)))
    with pytest.raises(ValueError, match="positive"):
        exact_log_summary([1.0, -2.0])


@pytest.mark.parametrize(
    "later, earlier, known, words",
    [
        (_release(20, _wt(67.0, 0.2)), _release(20, _wt(67.0, 0.2)), None, "more patients"),
        (_release(19, _wt(67.0, 0.2)), _release(20, _wt(67.0, 0.2)), None, "more patients"),
        (_release(21, _wt(67.0, 0.2)), _release(20, _wt(67.0, 0.2)), {"age": (3.0, 0.3)}, "'age'"),
        (_release(21, _wt(67.0, 0.2)), _release(20, _wt(67.0, 0.2)), {"wt": (4.2,)}, "pair"),
        (_release(21, _wt(67.0, 0.2)), _release(20, _wt(67.0, 0.2)), {"wt": (4.2, -1)}, "SD"),
        (_release(21, _wt(67.0, 0.2)), "[1, 2]", None, "JSON object"),
    ],
)
def test_bad_releases_and_known_values_are_refused(later, earlier, known, words):
    with pytest.raises(ValueError, match=words):
        differencing_bounds(later, earlier, known_earlier=known)


def test_bad_measurement_settings_are_refused():
    values = pd.DataFrame({"wt": np.linspace(50.0, 90.0, 12)})
    with pytest.raises(ValueError, match="exceeds the 12 patients"):
        differencing_tightness(values, starts=[10], added=[3], repeats=5, seed=1)
    with pytest.raises(ValueError, match="positive"):
        differencing_tightness(-values, starts=[5], added=[1], repeats=5, seed=1)
    with pytest.raises(TypeError, match="DataFrame"):
        differencing_tightness(values["wt"], starts=[5], added=[1], repeats=5, seed=1)
    with pytest.raises(ValueError, match="positive and finite"):
        rounding_interval([0.0], 2)


@pytest.mark.parametrize(
    "settings, error, words",
    [
        ({"min_patients": "3"}, TypeError, "min_patients"),
        ({"min_patients": -1}, ValueError, "min_patients"),
        ({"seed": -1}, ValueError, "seed"),
        ({"starts": []}, ValueError, "starts"),
        ({"added": ()}, ValueError, "added"),
    ],
)
def test_bad_counts_name_their_argument(settings, error, words):
    values = pd.DataFrame({"wt": np.linspace(50.0, 90.0, 12)})
    arguments = {"starts": [5], "added": [1], "repeats": 5, "seed": 1} | settings
    with pytest.raises(error, match=words):
        differencing_tightness(values, **arguments)
