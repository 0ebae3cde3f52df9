"""Tests of synpmx_lite.dp_noise: the appendix table by hand, and OpenDP's privacy map against the
formula."""

import re

import numpy as np
import pytest
from scipy import stats

from synpmx_lite.dp_noise import (
    CLIPPING_SPAN,
    dp_noise_table,
    epsilon_at_sampling_error,
    laplace_scale,
    median_fold_error,
    noise_over_sampling_error,
    opendp_certificate,
    opendp_clipped_mean,
)


@pytest.fixture(scope="module")
def table():
    return dp_noise_table().set_index(["released_numbers", "patients"])


def test_cell_30_patients_11_numbers_by_hand(table):
    # b = 11 ln 16 / 30 = 44 ln 2 / 30, so the median fold error is 2 ** b.
    b = 44 * np.log(2) / 30
    row = table.loc[(11, 30)]
    assert row.per_patient_scale == pytest.approx(b)
    assert row.per_patient_median_fold_error == pytest.approx(2**b)
    assert round(row.per_patient_median_fold_error, 2) == 2.02
    # SD of Laplace(b) is b sqrt 2; the sampling error is 0.3 / sqrt 30.
    assert row.noise_over_sampling_error == pytest.approx(np.sqrt(2) * b * np.sqrt(30) / 0.3)
    assert round(row.noise_over_sampling_error) == 26


def test_cell_200_patients_subsample_and_1000_patients_30_numbers_by_hand(table):
    # Ten groups of twenty: b = 11 ln 16 / 10 = 44 ln 2 / 10, and the fold error is 2 ** b.
    assert table.loc[(11, 200)].subsample_median_fold_error == pytest.approx(
        2 ** (11 * 4 * np.log(2) / 10), rel=1e-12
    )
    assert round(table.loc[(11, 200)].subsample_median_fold_error, 2) == 8.28
    b = 30 * 4 * np.log(2) / 1000
    assert table.loc[(30, 1000)].per_patient_median_fold_error == pytest.approx(2**b)
    assert round(table.loc[(30, 1000)].noise_over_sampling_error) == 12


def test_noise_falls_with_patients_and_grows_with_numbers(table):
    for count in (11, 30):
        folds = table.loc[count].per_patient_median_fold_error.to_numpy()
        assert np.all(np.diff(folds) < 0)
    assert np.all(
        table.loc[30].per_patient_scale.to_numpy() > table.loc[11].per_patient_scale.to_numpy()
    )


def test_opendp_certifies_the_formula_at_every_cell_of_the_table(table):
    for released, patients in table.index:
        certificate = opendp_certificate(patients, released)
        assert certificate.budget == pytest.approx(1 / released)
        assert certificate.formula_scale == pytest.approx(
            table.loc[(released, patients)].per_patient_scale
        )
        # OpenDP rounds its map conservatively: at most a hair above the budget, never a factor.
        assert certificate.largest_gap() < 1e-9


def test_the_privacy_map_catches_a_scale_set_for_the_wrong_cohort():
    # Noise calibrated for 120 patients on a mean over 60 spends twice the budget.
    spent = opendp_clipped_mean(60, laplace_scale(120, 11)).map(2)
    assert spent == pytest.approx(2 / 11, rel=1e-9)
    assert opendp_certificate(60, 11).opendp_scale == pytest.approx(2 * laplace_scale(120, 11))


@pytest.mark.parametrize("epsilon", [1e-300, 1e-12, 1e-3, 1e3, 1e12, 1e300])
@pytest.mark.parametrize(("contributors", "released"), [(2, 1), (60, 11), (10**6, 1000)])
def test_the_certificates_bracket_holds_the_scale_for_any_budget(contributors, released, epsilon):
    # The search is bracketed a hundredfold around the formula: the smallest scale OpenDP
    # certifies must lie inside it for tiny and huge budgets alike (found: the search failed
    # below epsilon 1e-12 before it was bracketed, and a bracket past the largest float asked
    # OpenDP for an infinite scale).
    certificate = opendp_certificate(contributors, released, epsilon=epsilon)
    assert certificate.largest_gap() < 1e-7


def test_the_certificates_bracket_stops_at_the_largest_float():
    # The formula's scale is 1.5e307, a hundred times it is no float.
    assert opendp_certificate(2, 11, epsilon=1e-306).largest_gap() < 1e-9


@pytest.mark.parametrize(
    ("contributors", "epsilon", "scale"),
    [(2, 1e-310, "inf"), (2, 1.7e308, "0"), (10**9, 1e300, "0")],
)
def test_a_scale_beyond_the_floats_is_refused_naming_the_budget(contributors, epsilon, scale):
    named = re.escape(f"epsilon={epsilon:g}")
    with pytest.raises(ValueError, match=rf"{named}.* is {scale}: beyond what a float holds"):
        laplace_scale(contributors, 1, epsilon=epsilon)
    with pytest.raises(ValueError, match=named):
        opendp_certificate(contributors, 1, epsilon=epsilon)


def test_the_clipped_mean_sensitivity_is_the_span_over_the_contributors():
    # One contributor replaced moves the mean by at most S/m, so scale S/m spends epsilon 1,
    # wherever the public range is centred.
    for prior in (-2.0, 0.0, 3.5):
        assert opendp_clipped_mean(20, CLIPPING_SPAN / 20, prior=prior).map(2) == pytest.approx(1.0)


def test_median_fold_error_is_the_median_of_the_laplace_magnitude():
    # |Laplace(b)| has median b ln 2: the 75th percentile of the signed noise.
    scales = np.array([0.03, 0.5, 2.8])
    expected = np.exp(stats.laplace.ppf(0.75, scale=scales))
    np.testing.assert_allclose(median_fold_error(scales), expected, rtol=1e-12)


def test_at_the_sampling_error_epsilon_the_noise_equals_the_sampling_error():
    # Warfarin-sized: 32 patients. OpenDP's composed map against the closed form
    # sqrt(2) d S / (omega sqrt n), and the scale it implies back through the table's ratio.
    for patients, released, omega in ((32, 11, 0.3), (32, 53, 0.3), (200, 30, 0.5)):
        epsilon = epsilon_at_sampling_error(patients, released, between_subject_sd=omega)
        by_hand = np.sqrt(2) * released * CLIPPING_SPAN / (omega * np.sqrt(patients))
        assert epsilon == pytest.approx(by_hand, rel=1e-9)
        scale = laplace_scale(patients, released, epsilon=epsilon)
        ratio = noise_over_sampling_error(patients, scale, between_subject_sd=omega)
        assert float(ratio) == pytest.approx(1.0, rel=1e-9)
    # The table's ratio at epsilon 1 is the break-even epsilon itself (noise falls as 1/eps).
    table = dp_noise_table(patients=(60,), released=(11,)).iloc[0]
    assert epsilon_at_sampling_error(60, 11) == pytest.approx(table.noise_over_sampling_error)


@pytest.mark.parametrize(
    ("call", "error", "message"),
    [
        (lambda: laplace_scale(0, 11), ValueError, "contributors"),
        (lambda: laplace_scale(30, 0), ValueError, "released"),
        (lambda: laplace_scale(30, 11, epsilon=0), ValueError, "epsilon"),
        (lambda: laplace_scale(30, 11.5), TypeError, "released"),
        (lambda: median_fold_error([0.0]), ValueError, "scale"),
        (
            lambda: noise_over_sampling_error([30], [0.5], between_subject_sd=0),
            ValueError,
            "between",
        ),
        (lambda: dp_noise_table(patients=(0,)), ValueError, "patients"),
        (lambda: opendp_clipped_mean(1, 1.0), ValueError, "contributors"),
        (lambda: opendp_clipped_mean(30, 0.0), ValueError, "scale"),
        (lambda: opendp_clipped_mean(30, 1.0, prior=float("nan")), ValueError, "prior"),
        (lambda: opendp_certificate(30, 11, epsilon=-1), ValueError, "epsilon"),
        (lambda: opendp_certificate(30, 0), ValueError, "released"),
        (lambda: epsilon_at_sampling_error(1, 11), ValueError, "patients"),
        (lambda: epsilon_at_sampling_error(30, 11, between_subject_sd=0), ValueError, "between"),
    ],
)
def test_bad_input(call, error, message):
    with pytest.raises(error, match=message):
        call()
