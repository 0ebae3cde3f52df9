"""Tests of synpmx_lite.fisher and synpmx_lite.fisher_data: Jacobians against finite
differences, FIL against the full Fisher information matrix, IRFIL, the attack, bad input."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from synpmx_lite import fisher
from synpmx_lite.dp_noise import CLIPPING_SPAN, laplace_scale
from synpmx_lite.fisher import (
    accuracy,
    attribute_inversion,
    fit_model,
    irfil,
    mean_release_fil,
    per_example_fil,
    per_example_heuristics,
    per_example_jacobians,
    subset_fil,
)
from synpmx_lite.fisher_data import breast_cancer_data, diabetes_data, digits_data

# Tiny problems: 9 examples, 3 features; a regression and a classification label for each.
_RNG = np.random.default_rng(7)
X_TINY = _RNG.normal(size=(9, 3))
Y_REAL = X_TINY @ np.array([0.5, -1.0, 0.3]) + _RNG.normal(scale=0.5, size=9)
Y_BINARY = (X_TINY[:, 0] + _RNG.normal(size=9) > 0).astype(float)
WEIGHTS = _RNG.uniform(0.5, 1.5, size=9)
PROBLEMS = {
    "linear": dict(y=Y_REAL, model="linear", l2=0.0, weights=None),
    "linear-weighted": dict(y=Y_REAL, model="linear", l2=0.05, weights=WEIGHTS),
    "logistic": dict(y=Y_BINARY, model="logistic", l2=0.1, weights=None),
    "logistic-weighted": dict(y=Y_BINARY, model="logistic", l2=0.1, weights=WEIGHTS),
}


def _finite_difference_jacobian(problem: dict, step: float = 1e-5) -> np.ndarray:
    """``(d, n, d + 1)`` derivative of the minimiser with respect to every entry of the data.

    Central differences of refits; the private fit takes real labels, so the logistic
    model's label derivative is differenced as well.
    """
    X, y = X_TINY, problem["y"]
    weights = np.ones(y.size) if problem["weights"] is None else problem["weights"]
    n, d = X.shape
    result = np.empty((d, n, d + 1))
    for i in range(n):
        for j in range(d + 1):
            coefs = []
            for sign in (1, -1):
                Xp, yp = X.copy(), y.copy()
                if j < d:
                    Xp[i, j] += sign * step
                else:
                    yp[i] += sign * step
                coefs.append(fisher._fit(Xp, yp, problem["model"], problem["l2"], weights).coef)
            result[:, i, j] = (coefs[0] - coefs[1]) / (2 * step)
    return result


@pytest.fixture(scope="module", params=list(PROBLEMS))
def numeric(request):
    problem = PROBLEMS[request.param]
    return problem, _finite_difference_jacobian(problem)


def _kwargs(problem: dict) -> dict:
    return {k: problem[k] for k in ("model", "l2", "weights")}


# --- Jacobians and FIL ---------------------------------------------------------------------------


def test_jacobians_match_finite_differences(numeric):
    problem, numeric_jacobian = numeric
    analytic = per_example_jacobians(X_TINY, problem["y"], **_kwargs(problem))
    expected = np.moveaxis(numeric_jacobian, 1, 0)  # (n, d, d + 1)
    relative = np.linalg.norm(analytic - expected) / np.linalg.norm(expected)
    assert relative < 1e-5


def test_eta_matches_the_full_fisher_information_matrix(numeric):
    problem, numeric_jacobian = numeric
    sigma = 0.3
    d, n = numeric_jacobian.shape[:2]
    full = numeric_jacobian.reshape(d, n * (d + 1))
    information = full.T @ full / sigma**2  # the whole dataset's FIM, n(d+1) square
    blocks = information.reshape(n, d + 1, n, d + 1)
    brute = np.sqrt([np.linalg.eigvalsh(blocks[i, :, i, :])[-1] for i in range(n)])
    eta = per_example_fil(X_TINY, problem["y"], sigma=sigma, **_kwargs(problem))
    np.testing.assert_allclose(eta, brute, rtol=1e-5)

    # A subset of examples and columns: its block of the same matrix.
    rows, columns = np.array([1, 4, 6]), np.array([0, 3])
    index = (rows[:, None] * (d + 1) + columns[None, :]).ravel()
    block = information[np.ix_(index, index)]
    subset = subset_fil(
        X_TINY, problem["y"], examples=rows, attributes=columns, sigma=sigma, **_kwargs(problem)
    )
    assert subset == pytest.approx(np.sqrt(np.linalg.eigvalsh(block)[-1]), rel=1e-5)

    # Attribute 2 over all examples.
    index = np.arange(n) * (d + 1) + 2
    block = information[np.ix_(index, index)]
    attribute = subset_fil(X_TINY, problem["y"], attributes=2, sigma=sigma, **_kwargs(problem))
    assert attribute == pytest.approx(np.sqrt(np.linalg.eigvalsh(block)[-1]), rel=1e-5)


def test_eta_hand_worked():
    # One feature, x = (1, 2), y = (1, 1): w = 3/5, residuals (-0.4, 0.2), H = 5.
    # Example 1: J_x = -(r + x w)/H = -0.04, J_y = x/H = 0.2.
    eta = per_example_fil([[1.0], [2.0]], [1.0, 1.0])
    assert eta[0] == pytest.approx(np.hypot(0.04, 0.2))
    # Example 2: J_x = -(0.2 + 1.2)/5 = -0.28, J_y = 0.4.
    assert eta[1] == pytest.approx(np.hypot(0.28, 0.4))


def test_attribute_fil_of_one_column_is_its_norm():
    jacobians = per_example_jacobians(X_TINY, Y_REAL)
    eta = per_example_fil(X_TINY, Y_REAL, sigma=2.0, attributes=1)
    np.testing.assert_allclose(eta, np.linalg.norm(jacobians[:, :, 1], axis=1) / 2)
    # The label is the last column, also reachable as -1.
    np.testing.assert_allclose(
        per_example_fil(X_TINY, Y_REAL, attributes=-1),
        per_example_fil(X_TINY, Y_REAL, attributes=3),
    )


@settings(max_examples=25, deadline=None)
@given(sigma=st.floats(1e-3, 1e3), shift=st.integers(0, 8))
def test_eta_scales_with_one_over_sigma_and_follows_the_examples(sigma, shift):
    order = np.roll(np.arange(9), shift)
    reference = per_example_fil(X_TINY, Y_BINARY, "logistic", 0.1)
    eta = per_example_fil(X_TINY[order], Y_BINARY[order], "logistic", 0.1, sigma)
    np.testing.assert_allclose(eta, reference[order] / sigma, rtol=1e-7)


def test_fit_solves_the_normal_equations():
    coef = fit_model(X_TINY, Y_REAL, l2=0.2)
    expected = np.linalg.solve(X_TINY.T @ X_TINY + 9 * 0.2 * np.eye(3), X_TINY.T @ Y_REAL)
    np.testing.assert_allclose(coef, expected)
    # The logistic fit zeroes the gradient of the mean log-loss plus (l2/2)||w||^2.
    coef = fit_model(X_TINY, Y_BINARY, model="logistic", l2=0.1)
    prob = 1 / (1 + np.exp(-X_TINY @ coef))
    np.testing.assert_allclose(X_TINY.T @ (prob - Y_BINARY) / 9 + 0.1 * coef, 0, atol=1e-12)


def test_heuristics_are_loss_and_gradient_norm():
    table = per_example_heuristics(X_TINY, Y_REAL, l2=0.1)
    coef = fit_model(X_TINY, Y_REAL, l2=0.1)
    residual = X_TINY @ coef - Y_REAL
    np.testing.assert_allclose(table["loss"], residual**2 / 2)
    np.testing.assert_allclose(
        table["gradient_norm"], np.linalg.norm(residual[:, None] * X_TINY, axis=1)
    )
    np.testing.assert_allclose(table["eta"], per_example_fil(X_TINY, Y_REAL, l2=0.1))


def test_accuracy_hand_worked():
    X = np.array([[1.0], [-2.0], [3.0], [-0.5]])
    assert accuracy(X, [1, -1, -1, -1], [1.0]) == 0.75
    assert accuracy(X, [1, 0, 1, 1], [1.0], model="logistic") == 0.75


# --- IRFIL -----------------------------------------------------------------------------------


@pytest.mark.parametrize("model", ["linear", "logistic"])
def test_irfil_equalises_eta(model):
    data = digits_data(components=10)
    y = data.y_train if model == "logistic" else 2 * data.y_train - 1
    result = irfil(data.X_train, y, model=model, l2=1e-3, iterations=6)
    spread = result.summary()["eta_sd"].to_numpy()
    assert spread[-1] < 0.1 * spread[0]
    assert np.all(np.diff(spread) < 0)
    np.testing.assert_allclose(result.weights.sum(axis=1), y.size)
    np.testing.assert_allclose(result.weights[0], 1)
    # The recorded eta are those of the model trained with the recorded weights.
    np.testing.assert_allclose(
        result.eta[3],
        per_example_fil(data.X_train, y, model, 1e-3, weights=result.weights[3]),
    )
    assert (
        result.accuracy(data.X_test, data.y_test if model == "logistic" else 2 * data.y_test - 1)[
            -1
        ]
        > 0.9
    )


# --- Attribute inversion -----------------------------------------------------------------------


def test_attack_beats_the_baseline_where_eta_is_large():
    data = diabetes_data()
    result = attribute_inversion(
        data.X_train, data.y_train, 1, l2=1e-2, sigma=3e-3, releases=400, rng=3
    )
    top = result.eta >= np.quantile(result.eta, 0.9)
    bottom = result.eta <= np.quantile(result.eta, 0.1)
    assert result.accuracy[top].mean() > result.baseline[top].mean() + 0.2
    assert result.accuracy[top].mean() > result.accuracy[bottom].mean() + 0.2
    # The baseline guesses the commoner code.
    truth = data.X_train[:, 1]
    assert result.baseline.mean() == pytest.approx(max(truth.mean(), 1 - truth.mean()))


@pytest.mark.parametrize("model", ["linear", "logistic"])
def test_attack_accuracy_agrees_with_its_exact_value(model):
    # Two candidates: the guess is right when the noise keeps w' nearer the true model, with
    # probability Phi(||w_other - w*|| / (2 sigma)). The other model is refitted directly.
    X = np.column_stack([X_TINY, _RNG.integers(0, 2, 9)])
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
    assert np.all(np.abs(result.accuracy - expected) <= 4 * error + 1e-12)


def test_attack_is_reproducible():
    runs = [
        attribute_inversion(
            np.column_stack([X_TINY, np.arange(9) % 2]), Y_REAL, 3, sigma=0.1, rng=5
        ).to_frame()
        for _ in range(2)
    ]
    assert runs[0].equals(runs[1])


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


# --- Datasets ----------------------------------------------------------------------------------


def test_datasets_load_offline_and_split_reproducibly():
    digits = digits_data()
    assert digits.X_train.shape == (288, 20) and digits.X_test.shape == (72, 20)
    assert set(np.unique(digits.y_train)) == {0.0, 1.0}
    assert digits.images_train.shape == (288, 8, 8)
    np.testing.assert_array_equal(digits.X_train, digits_data().X_train)
    assert not np.array_equal(digits.y_train, digits_data(rng=1).y_train)

    diabetes = diabetes_data()
    assert diabetes.X_train.shape == (354, 10) and diabetes.feature_names[1] == "sex"
    assert set(np.unique(diabetes.X_train[:, 1])) == {0.0, 1.0}
    numeric = np.delete(diabetes.X_train, 1, axis=1)
    np.testing.assert_allclose(numeric.mean(axis=0), 0, atol=1e-12)
    np.testing.assert_allclose(numeric.std(axis=0, ddof=1), 1)

    cancer = breast_cancer_data()
    assert cancer.X_train.shape == (455, 30) and cancer.X_test.shape == (114, 30)


# --- Bad input -----------------------------------------------------------------------------------


@pytest.mark.parametrize("sigma", [0.0, -1.0])
def test_sigma_must_be_positive(sigma):
    with pytest.raises(ValueError, match="sigma"):
        per_example_fil(X_TINY, Y_REAL, sigma=sigma)


def test_bad_input_is_named():
    with pytest.raises(ValueError, match="y must have one label per row of X"):
        per_example_fil(X_TINY, Y_REAL[:-1])
    with pytest.raises(ValueError, match="X must be 2-dimensional"):
        per_example_fil(X_TINY[:, 0], Y_REAL)
    with pytest.raises(ValueError, match="y must hold only 0 and 1"):
        per_example_fil(X_TINY, 2 * Y_BINARY - 1, model="logistic")
    with pytest.raises(ValueError, match="model must be one of"):
        per_example_fil(X_TINY, Y_REAL, model="probit")
    with pytest.raises(TypeError, match="model must be a string"):
        per_example_fil(X_TINY, Y_REAL, model=1)
    with pytest.raises(ValueError, match="weights must have one entry per row"):
        per_example_fil(X_TINY, Y_REAL, weights=np.ones(3))
    with pytest.raises(ValueError, match="weights must be non-negative"):
        per_example_fil(X_TINY, Y_REAL, weights=-WEIGHTS)
    with pytest.raises(ValueError, match="l2"):
        per_example_fil(X_TINY, Y_REAL, l2=-0.1)
    with pytest.raises(ValueError, match="attributes"):
        per_example_fil(X_TINY, Y_REAL, attributes=4)
    with pytest.raises(ValueError, match=r"Hessian .* singular"):
        per_example_fil(X_TINY[:2], Y_REAL[:2])
    with pytest.raises(ValueError, match="did not converge"):
        # Separable classes without regularisation: no minimiser.
        fit_model(X_TINY, (X_TINY[:, 0] > 0).astype(float), model="logistic")
    with pytest.raises(ValueError, match="values must include"):
        attribute_inversion(np.column_stack([X_TINY, np.arange(9) % 3]), Y_REAL, 3, values=[0, 1])
    with pytest.raises(TypeError, match="attribute"):
        attribute_inversion(X_TINY, Y_REAL, 1.0)
    with pytest.raises(ValueError, match="iterations"):
        irfil(X_TINY, Y_REAL, iterations=0)
    with pytest.raises(ValueError, match="epsilon"):
        mean_release_fil(0.0, patients=10, released=2)
