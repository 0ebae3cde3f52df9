"""Tests of synpmx_lite.fisher.inversion: the white-box attack against its exact two-candidate
accuracy, the black-box attack against a direct implementation, FIL's predictions against their
closed forms and against both attacks on the diabetes data, the sweep, bad input.

Every test that draws random numbers seeds its own generator, so no test's data depend on
which tests ran before it."""

import numpy as np
import pytest
from scipy import stats

from synpmx_lite.fisher.datasets import diabetes_data
from synpmx_lite.fisher.inversion import attribute_inversion, inversion_sweep
from synpmx_lite.fisher.leakage import fit_model


def _tiny_problem() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """9 examples, 3 features; a regression and a classification label."""
    rng = np.random.default_rng(7)
    X = rng.normal(size=(9, 3))
    y_real = X @ np.array([0.5, -1.0, 0.3]) + rng.normal(scale=0.5, size=9)
    y_binary = (X[:, 0] + rng.normal(size=9) > 0).astype(float)
    return X, y_real, y_binary


# Constants, the same whatever runs first: each test that needs more draws seeds its own.
X_TINY, Y_REAL, Y_BINARY = _tiny_problem()


def test_attack_beats_the_baseline_where_eta_is_large():
    data = diabetes_data()
    result = attribute_inversion(
        data.X_train, data.y_train, 1, l2=1e-2, sigma=3e-3, releases=400, rng=3
    )
    top = result.eta >= np.quantile(result.eta, 0.9)
    bottom = result.eta <= np.quantile(result.eta, 0.1)
    assert result.whitebox[top].mean() > result.baseline[top].mean() + 0.2
    assert result.whitebox[top].mean() > result.whitebox[bottom].mean() + 0.2
    # The baseline guesses the commoner code.
    truth = data.X_train[:, 1]
    assert result.baseline.mean() == pytest.approx(max(truth.mean(), 1 - truth.mean()))


@pytest.mark.parametrize("model", ["linear", "logistic"])
def test_attack_accuracy_agrees_with_its_exact_value(model):
    # Two candidates: the guess is right when the noise keeps w' nearer the true model, with
    # probability Phi(||w_other - w*|| / (2 sigma)). The other model is refitted directly.
    X = np.column_stack([X_TINY, np.random.default_rng(13).integers(0, 2, 9)])
    y = Y_REAL if model == "linear" else Y_BINARY
    sigma, releases = 0.05, 4000
    result = attribute_inversion(
        X, y, 3, model=model, l2=0.1, sigma=sigma, releases=releases, rng=11
    )
    coef = fit_model(X, y, model=model, l2=0.1)
    flipped = []
    for i in range(9):
        other = X.copy()
        other[i, 3] = 1 - other[i, 3]
        flipped.append(fit_model(other, y, model=model, l2=0.1))
    expected = stats.norm.cdf(np.linalg.norm(np.array(flipped) - coef, axis=1) / (2 * sigma))
    error = np.sqrt(expected * (1 - expected) / releases)
    assert np.all(np.abs(result.whitebox - expected) <= 4 * error + 1e-12)


def test_attack_is_reproducible():
    runs = [
        attribute_inversion(
            np.column_stack([X_TINY, np.arange(9) % 2]), Y_REAL, 3, sigma=0.1, rng=5
        ).to_frame()
        for _ in range(2)
    ]
    assert runs[0].equals(runs[1])


def _blackbox_by_hand(X, y, attribute, values, released, model):
    """The black-box guesses, one release and one example at a time."""
    n, d = X.shape
    prior = np.array([np.mean(X[:, attribute] == v) for v in values])
    guesses = np.empty((len(released), n), dtype=int)
    for r, w in enumerate(released):
        margin = X @ w
        if model == "linear":
            variance = np.sum((margin - y) ** 2) / (n - d)
        else:
            counts = np.ones((2, 2))
            for label, guess in zip(y.astype(int), (margin > 0).astype(int), strict=True):
                counts[label, guess] += 1
        for i in range(n):
            scores = []
            for v, p in zip(values, prior, strict=True):
                x = X[i].copy()
                x[attribute] = v
                if model == "linear":
                    score = -((x @ w - y[i]) ** 2) / (2 * variance)
                else:
                    guess = int(x @ w > 0)
                    score = np.log(counts[int(y[i]), guess] / counts[:, guess].sum())
                scores.append(score + np.log(p))
            guesses[r, i] = int(np.argmax(scores))
    return guesses


@pytest.mark.parametrize("model", ["linear", "logistic"])
def test_blackbox_attack_matches_a_direct_implementation(model):
    rng = np.random.default_rng(17)
    X = np.column_stack([X_TINY, rng.integers(0, 3, 9).astype(float)])
    y = Y_REAL if model == "linear" else Y_BINARY
    sigma, releases, seed = 0.2, 40, 23
    result = attribute_inversion(
        X, y, 3, model=model, l2=0.1, sigma=sigma, releases=releases, rng=seed
    )
    # The releases the function attacked: its noise is the first draw of its generator.
    noise = sigma * np.random.default_rng(seed).standard_normal((releases, 4))
    released = fit_model(X, y, model=model, l2=0.1) + noise
    values = np.array([0.0, 1.0, 2.0])
    guesses = _blackbox_by_hand(X, y, 3, values, released, model)
    expected = np.mean(values[guesses] == X[None, :, 3], axis=0)
    np.testing.assert_array_equal(result.blackbox, expected)


def test_predictions_have_their_closed_forms():
    # Two values: the nearest-model attack is right with probability Phi(eta / 2); the Bayes
    # rule with prior (p0, p1) with Phi(eta / 2 +- log(p0 / p1) / eta).
    rng = np.random.default_rng(29)
    X = np.column_stack([X_TINY, (rng.random(9) < 0.3).astype(float)])
    result = attribute_inversion(X, Y_REAL, 3, l2=0.1, sigma=0.05, releases=10, rng=1)
    eta, truth = result.eta, result.truth
    p1 = truth.mean()
    ratio = np.log((1 - p1) / p1)
    np.testing.assert_allclose(result.predicted, stats.norm.cdf(eta / 2))
    expected = np.where(
        truth == 0, stats.norm.cdf(eta / 2 + ratio / eta), stats.norm.cdf(eta / 2 - ratio / eta)
    )
    np.testing.assert_allclose(result.predicted_best, expected)
    # Three values one apart: the middle one is right when the noise moves the release by
    # less than half a gap either way.
    X[:, 3] = np.arange(9) % 3
    result = attribute_inversion(X, Y_REAL, 3, l2=0.1, sigma=0.05, releases=10, rng=1)
    middle = result.truth == 1
    np.testing.assert_allclose(
        result.predicted[middle], 2 * stats.norm.cdf(result.eta[middle] / 2) - 1
    )
    np.testing.assert_allclose(result.predicted[~middle], stats.norm.cdf(result.eta[~middle] / 2))


def test_fil_predicts_the_attacks_on_the_diabetes_data():
    data = diabetes_data()
    releases = 2000
    result = attribute_inversion(
        data.X_train, data.y_train, 1, l2=1e-2, sigma=3e-3, releases=releases, rng=41
    )
    # The white-box attack follows the first-order prediction: closely on average, loosely
    # example by example (a unit change of a 0/1 attribute is not a small one)...
    assert abs(result.whitebox.mean() - result.predicted.mean()) < 0.02
    assert np.mean(np.abs(result.whitebox - result.predicted)) < 0.05
    assert np.corrcoef(result.whitebox, result.predicted)[0, 1] > 0.9
    # ...and the black-box attack stays below the best the release allows.
    pooled = np.sqrt(0.25 / (releases * result.eta.size))
    assert result.blackbox.mean() <= result.predicted_best.mean() + 4 * pooled
    assert result.predicted_best.mean() >= result.baseline.mean()


def test_sweep_reproduces_the_single_attack_and_sets_the_mean_eta():
    data = diabetes_data()
    targets = np.array([0.3, 3.0, 30.0])
    sweep = inversion_sweep(
        data.X_train,
        data.y_train,
        1,
        X_test=data.X_test,
        y_test=data.y_test,
        l2_values=[1e-2, 1.0],
        mean_etas=targets,
        releases=50,
        rng=8,
    )
    assert sweep.shape[0] == 6
    np.testing.assert_allclose(sweep["eta_mean"], np.tile(targets, 2))
    # Each row is the attack of attribute_inversion on the same draws.
    row = sweep.iloc[4]
    single = attribute_inversion(
        data.X_train, data.y_train, 1, l2=1.0, sigma=row["sigma"], releases=50, rng=8
    )
    assert row["whitebox"] == pytest.approx(single.whitebox.mean())
    assert row["blackbox"] == pytest.approx(single.blackbox.mean())
    assert row["predicted"] == pytest.approx(single.predicted.mean())
    # More information, better attacks; more noise, worse predictions.
    for _, group in sweep.groupby("l2"):
        assert np.all(np.diff(group["whitebox"]) > 0)
        assert group["test_error"].iloc[0] > group["test_error"].iloc[-1]


# --- Bad input -----------------------------------------------------------------------------------


def test_bad_input_is_named():
    with pytest.raises(ValueError, match="values must include"):
        attribute_inversion(np.column_stack([X_TINY, np.arange(9) % 3]), Y_REAL, 3, values=[0, 1])
    with pytest.raises(TypeError, match="attribute"):
        attribute_inversion(X_TINY, Y_REAL, 1.0)
    binary = np.column_stack([X_TINY, np.arange(9) % 2])
    sweep = dict(X_test=binary, y_test=Y_REAL, l2_values=[0.1], mean_etas=[1.0])
    with pytest.raises(ValueError, match="mean_etas"):
        inversion_sweep(binary, Y_REAL, 3, **{**sweep, "mean_etas": [0.0]})
    with pytest.raises(ValueError, match="l2_values"):
        inversion_sweep(binary, Y_REAL, 3, **{**sweep, "l2_values": [-1.0]})
    with pytest.raises(ValueError, match="X_test and y_test"):
        inversion_sweep(binary, Y_REAL, 3, **{**sweep, "X_test": X_TINY})
