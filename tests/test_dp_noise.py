"""Tests of synpmx_lite.dp_noise: the appendix table by hand, and OpenDP against the formula."""

import numpy as np
import pytest

from synpmx_lite.dp_noise import (
    CLIPPING_SPAN,
    dp_noise_table,
    laplace_scale,
    median_fold_error,
    noise_over_sampling_error,
    opendp_typical_value_release,
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


def test_opendp_scale_is_certified_and_agrees_with_the_formula():
    release = opendp_typical_value_release(60, 11, rng=1)
    assert release.certified_epsilon <= 1 / 11
    assert release.scale == pytest.approx(laplace_scale(60, 11), rel=1e-9)


def test_opendp_fold_errors_agree_with_the_formula():
    release = opendp_typical_value_release(30, 11, releases=20_000, rng=2)
    # |Laplace(b)| is exponential with mean b; its sample median has SE about b / sqrt(N).
    log_median = np.log(np.median(release.fold_errors()))
    expected = np.log(median_fold_error(release.scale))
    assert abs(log_median - expected) < 4 * release.scale / np.sqrt(20_000)
    # Clipping keeps the released mean's true value inside the public range.
    assert abs(release.true_value) <= CLIPPING_SPAN / 2


def test_the_patients_values_are_reproducible_and_the_noise_is_not_numpy():
    one = opendp_typical_value_release(20, 11, releases=10, rng=3)
    two = opendp_typical_value_release(20, 11, releases=10, rng=3)
    assert one.true_value == two.true_value
    # OpenDP draws its own noise, from the operating system's randomness.
    assert not np.array_equal(one.released, two.released)


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
        (lambda: opendp_typical_value_release(1, 11), ValueError, "patients"),
        (lambda: opendp_typical_value_release(30, 11, epsilon=-1), ValueError, "epsilon"),
    ],
)
def test_bad_input(call, error, message):
    with pytest.raises(error, match=message):
        call()
