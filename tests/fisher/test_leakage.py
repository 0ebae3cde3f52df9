"""Tests of synpmx_lite.fisher.leakage and synpmx_lite.fisher.datasets: Jacobians against finite
differences, FIL against the full Fisher information matrix and against eigvalsh on random and
ill-conditioned problems, the rank test, IRFIL, the paper's logistic lambda, the datasets, bad
input.

Every test that draws random numbers seeds its own generator, so no test's data depend on
which tests ran before it."""

from contextlib import nullcontext

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from synpmx_lite.fisher import leakage as fisher
from synpmx_lite.fisher.datasets import breast_cancer_data, diabetes_data, digits_data
from synpmx_lite.fisher.leakage import (
    accuracy,
    fit_model,
    irfil,
    logistic_l2_path,
    matched_logistic_l2,
    per_example_fil,
    per_example_heuristics,
    per_example_jacobians,
    subset_fil,
)
from synpmx_lite.rounding import round_significant


def _tiny_problem() -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """9 examples, 3 features; a regression and a classification label; loss weights."""
    rng = np.random.default_rng(7)
    X = rng.normal(size=(9, 3))
    y_real = X @ np.array([0.5, -1.0, 0.3]) + rng.normal(scale=0.5, size=9)
    y_binary = (X[:, 0] + rng.normal(size=9) > 0).astype(float)
    return X, y_real, y_binary, rng.uniform(0.5, 1.5, size=9)


# Constants, the same whatever runs first: each test that needs more draws seeds its own.
X_TINY, Y_REAL, Y_BINARY, WEIGHTS = _tiny_problem()
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


# --- The fast path against eigvalsh ---------------------------------------------------------


def _random_problem(seed: int, n: int, d: int, model: str, log_condition: float):
    """Features with singular values spread over ``10 ** log_condition``, and labels."""
    rng = np.random.default_rng(seed)
    left = np.linalg.qr(rng.normal(size=(n, d)))[0]
    right = np.linalg.qr(rng.normal(size=(d, d)))[0]
    X = (left * np.logspace(0, -log_condition, d)) @ right * np.sqrt(n)
    signal = X @ rng.normal(size=d) + rng.normal(scale=0.5, size=n)
    y = (signal > 0).astype(float) if model == "logistic" else signal
    return X, y, rng.uniform(0.2, 2.0, size=n)


def _dense_eta(jacobians: np.ndarray, columns: np.ndarray) -> np.ndarray:
    selected = jacobians[:, :, columns]
    gram = selected @ np.swapaxes(selected, 1, 2)
    return np.sqrt(np.clip(np.linalg.eigvalsh(gram)[:, -1], 0, None))


@settings(max_examples=60, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    n=st.integers(12, 60),
    d=st.integers(2, 9),
    model=st.sampled_from(["linear", "logistic"]),
    log_condition=st.floats(0, 3.5),
    weighted=st.booleans(),
    subset=st.sampled_from(["all", "features", "label", "one", "some"]),
)
def test_fast_fil_agrees_with_eigvalsh(seed, n, d, model, log_condition, weighted, subset):
    # Up to a condition number of 10^7 for the Hessian of the unregularised linear model.
    X, y, weights = _random_problem(seed, n, d, model, log_condition)
    l2 = 1e-3 if model == "logistic" else 0.0
    weights = weights if weighted else None
    columns = {
        "all": np.arange(d + 1),
        "features": np.arange(d),
        "label": np.array([d]),
        "one": np.array([seed % d]),
        "some": np.array([0, d - 1, d]),
    }[subset]
    try:
        jacobians = per_example_jacobians(X, y, model=model, l2=l2, weights=weights)
    except ValueError as error:  # a logistic fit of separable classes that l2 = 1e-3 cannot rescue
        assert "did not converge" in str(error)
        return
    expected = _dense_eta(jacobians, columns)
    eta = per_example_fil(X, y, model, l2, weights=weights, attributes=columns)
    np.testing.assert_allclose(eta, expected, rtol=1e-9, atol=1e-12 * expected.max())


def _dense_largest(theta, U, c, scale, rho, cross):
    matrices = (
        scale[:, None, None] * np.diag(theta)
        + rho[:, None, None] * U[:, :, None] * U[:, None, :]
        + cross[:, None, None]
        * (c[None, :, None] * U[:, None, :] + U[:, :, None] * c[None, None, :])
    )
    return np.linalg.eigvalsh(matrices)[:, -1]


STRUCTURES = [
    "generic",
    "repeated poles",
    "zero poles",
    "deflated top",
    "no diagonal",
    "no cross term",
    "spread of 1e16",
]


@pytest.mark.parametrize("case", STRUCTURES)
def test_secular_solver_on_structured_matrices(case):
    # Each matrix is J J' for a J = s^(1/2) Theta^(1/2) [I, 0] + u [z', -1]-like form, so it is
    # positive semi-definite as the solver requires; the structure tests the deflated and
    # coincident cases that random problems rarely reach.
    rng = np.random.default_rng(STRUCTURES.index(case))
    n, d = 200, 6
    theta = np.sort(rng.lognormal(0, 2, d))
    U = rng.normal(size=(n, d))
    z = rng.normal(size=d)
    first, second = rng.normal(size=n) * 3, rng.uniform(0.1, 2, size=n)
    if case == "repeated poles":
        theta[:] = theta[-1]
    elif case == "zero poles":
        theta[:4] = 0
    elif case == "deflated top":
        U[:, -1], z[-1] = 0, 0
    elif case == "no diagonal":
        first[::2] = 0
    elif case == "no cross term":
        z[:] = 0
    elif case == "spread of 1e16":
        theta = np.logspace(-8, 8, d)
    c = np.sqrt(theta) * z
    scale, cross = first**2, first * second
    rho = second**2 * (z @ z) + 1.0
    got = fisher._largest_eigenvalues(theta, U, c, scale, rho, cross)
    expected = _dense_largest(theta, U, c, scale, rho, cross)
    np.testing.assert_allclose(got, expected, rtol=1e-11, atol=1e-13 * expected.max())


# --- The rank test -------------------------------------------------------------------------


def test_rank_deficient_problems_are_refused(monkeypatch):
    # Two examples, three features, no regularisation: X'X has rank 2 at most, and rounding
    # leaves its zero eigenvalue anywhere in +-1e-16 of the largest. A test on the size of
    # the smallest Cholesky pivot let some of these through; every one must be refused.
    # per_example_fil holds BLAS to one thread while it runs; threadpoolctl finds the BLAS by
    # scanning every library loaded, 3 ms a call in a test process, 90 % of these 2000 calls.
    # Products of 2 x 3 matrices never reach a second thread, so the limit is left out here.
    monkeypatch.setattr(fisher, "threadpool_limits", lambda **limits: nullcontext())
    rng = np.random.default_rng(2021)
    refused = 0
    for X in rng.normal(size=(2000, 2, 3)):
        with pytest.raises(ValueError, match="singular"):
            per_example_fil(X, rng.normal(size=2))
        refused += 1
    assert refused == 2000
    # Collinear columns among many examples, weighted or not.
    X = rng.normal(size=(50, 3))
    X = np.column_stack([X, X[:, 0] - 2 * X[:, 1]])
    for weights in (None, rng.uniform(0.5, 1.5, size=50)):
        with pytest.raises(ValueError, match="singular"):
            per_example_fil(X, rng.normal(size=50), weights=weights)
    # Regularisation restores full rank.
    assert np.all(np.isfinite(per_example_fil(X, rng.normal(size=50), l2=1e-3)))


def test_rank_test_has_a_relative_tolerance():
    # Scaling the data changes no condition number, so it changes no verdict.
    rng = np.random.default_rng(5)
    left, right = (
        np.linalg.qr(rng.normal(size=(40, 2)))[0],
        np.linalg.qr(rng.normal(size=(2, 2)))[0],
    )
    for spread, accepted in ((1e-3, True), (1e-4, True), (1e-6, False)):  # cond(H) = spread^-2
        X = (left * [1.0, spread]) @ right
        for scale in (1e-100, 1.0, 1e100):
            if accepted:
                assert np.all(np.isfinite(fit_model(scale * X, rng.normal(size=40))))
            else:
                with pytest.raises(ValueError, match="singular"):
                    fit_model(scale * X, rng.normal(size=40))


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


def test_matched_logistic_l2_follows_the_paper_rule():
    data = breast_cancer_data()
    X, y = data.X_train, data.y_train
    grid = np.geomspace(1e-4, 1.0, 9)
    chosen = matched_logistic_l2(X, y, candidates=grid)
    linear = accuracy(X, 2 * y - 1, fit_model(X, 2 * y - 1))
    target = round_significant(linear, 2)

    def rounded(l2):
        return round_significant(
            accuracy(X, y, fit_model(X, y, model="logistic", l2=l2), model="logistic"), 2
        )

    assert rounded(chosen) == target
    assert all(rounded(l2) != target for l2 in grid[grid > chosen])
    path = logistic_l2_path(X, y, candidates=grid)
    assert list(path["l2"]) == sorted(grid, reverse=True)
    assert path.loc[path["matches"], "l2"].max() == chosen
    # Separable digits keep every training image right at every candidate: the rule's
    # "largest" would be whatever the search allowed, and it says so.
    digits = digits_data(components=10)
    with pytest.raises(ValueError, match="already keeps"):
        matched_logistic_l2(digits.X_train, digits.y_train, candidates=grid)


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
    with pytest.raises(ValueError, match="iterations"):
        irfil(X_TINY, Y_REAL, iterations=0)
    with pytest.raises(ValueError, match="no candidate l2"):
        # Strongly regularised logistic regression misses the linear classifier's accuracy.
        rng = np.random.default_rng(1)
        X = rng.normal(size=(12, 2))
        y = (X[:, 0] + 0.8 * rng.normal(size=12) > 0).astype(float)
        matched_logistic_l2(X, y, candidates=[10.0, 100.0])
