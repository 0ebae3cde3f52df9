"""Tests of synpmx_lite.fisher.bounds: the biased Cramer-Rao bound against a shrinking
estimator, and the FIL of one patient in a mean released with OpenDP's Laplace and Gaussian
mechanisms against the DP appendix and the simple zCDP conversion."""

import numpy as np
import pytest

from synpmx_lite.dp_noise import CLIPPING_SPAN, laplace_scale
from synpmx_lite.fisher.bounds import biased_cramer_rao, mean_release_fil


def test_biased_bound_and_a_shrinking_estimator():
    # A Gaussian release of one value z: the unbiased estimate is z + N(0, 1 / eta^2);
    # shrinking it by c toward m has slope c and bias (1 - c)(m - z), and its mean squared
    # error attains the biased bound.
    eta, z, m = 0.2, 1.5, 0.0
    assert biased_cramer_rao(eta) == pytest.approx(1 / eta**2)
    shrinkage = np.array([1.0, 0.5, 0.1, 0.0])
    bound = biased_cramer_rao(eta, slope=shrinkage, bias=(1 - shrinkage) * (m - z))
    draws = z + np.random.default_rng(3).normal(scale=1 / eta, size=200_000)
    estimates = m + shrinkage[:, None] * (draws - m)
    squared = (estimates - z) ** 2
    error = squared.std(axis=1) / np.sqrt(draws.size)
    assert np.all(np.abs(squared.mean(axis=1) - bound) <= 4 * error + 1e-12)
    # Shrinking all the way gives the bias alone, far below the unbiased bound here.
    assert bound[-1] == pytest.approx(z**2) and bound[-1] < 1 / eta**2


# --- A released mean --------------------------------------------------------------------------


def test_mean_release_laplace_matches_the_dp_appendix():
    # epsilon split evenly over d numbers, each of sensitivity S/n: b = d S / (n epsilon),
    # the appendix's scale, here found by OpenDP's own calibration.
    n, d, width = 60, 11, CLIPPING_SPAN
    table = mean_release_fil([0.5, 1.0, 2.0], patients=n, released=d)
    laplace = table[table["mechanism"] == "Laplace"]
    np.testing.assert_allclose(laplace["scale"], d * width / (n * laplace["epsilon"]), rtol=1e-9)
    np.testing.assert_allclose(
        laplace["scale"], [laplace_scale(n, d, epsilon=e) for e in laplace["epsilon"]], rtol=1e-9
    )
    # The patient's FIL no longer depends on n: epsilon / (d S).
    np.testing.assert_allclose(laplace["eta"], laplace["epsilon"] / (d * width), rtol=1e-9)
    np.testing.assert_allclose(laplace["estimator_sd"], np.sqrt(2) / laplace["eta"], rtol=1e-9)


def test_mean_release_gaussian_is_no_noisier_than_the_simple_conversion():
    # rho-zCDP implies (rho + 2 sqrt(rho ln(1/delta)), delta)-DP; OpenDP's conversion is at
    # least as tight, so its sigma is at most the one solving that equation.
    n, d, width, delta = 30, 4, 1.0, 1e-6
    table = mean_release_fil([0.5, 1.0, 4.0], patients=n, released=d, width=width, delta=delta)
    gaussian = table[table["mechanism"] == "Gaussian"]
    sensitivity = np.sqrt(d) * width / n
    eps = gaussian["epsilon"].to_numpy()
    rho = (np.sqrt(np.log(1 / delta) + eps) - np.sqrt(np.log(1 / delta))) ** 2
    simple = sensitivity / np.sqrt(2 * rho)
    assert np.all(gaussian["scale"].to_numpy() <= simple * (1 + 1e-9))
    assert np.all(gaussian["scale"].to_numpy() >= simple / 2)
    assert np.all(np.diff(gaussian["eta"].to_numpy()) > 0)
    np.testing.assert_allclose(gaussian["eta"] * gaussian["scale"] * n, 1)


def test_tiny_budgets_are_calibrated_and_impossible_ones_refused_with_the_budget_named():
    # Found in review: OpenDP's own search bracket missed the Laplace scale of a budget below
    # about 1e-13, and its zCDP conversion overflows at large budgets deep inside OpenDP.
    table = mean_release_fil([1e-100, 1e-12], patients=60, released=11)
    laplace = table[table["mechanism"] == "Laplace"]
    np.testing.assert_allclose(laplace["scale"], 11 * CLIPPING_SPAN / (60 * laplace["epsilon"]))
    with pytest.raises(ValueError, match="epsilon 1e-310 gives a Laplace scale beyond"):
        mean_release_fil(1e-310, patients=60, released=11)
    with pytest.raises(ValueError, match="OpenDP cannot calibrate the noise for epsilon 1e"):
        mean_release_fil([1.0, 1e6], patients=60, released=11)


def test_bad_input_is_named():
    with pytest.raises(ValueError, match="epsilon"):
        mean_release_fil(0.0, patients=10, released=2)
    with pytest.raises(ValueError, match="eta must be positive"):
        biased_cramer_rao(0.0)
