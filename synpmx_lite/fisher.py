r"""Fisher information loss (FIL): how much a released model tells about each training example.

A model :math:`w^*(D)` fitted to data :math:`D` is released as :math:`w' = w^*(D) + e` with
Gaussian noise :math:`e \sim N(0, \sigma^2 I)`. The Fisher information matrix of the release
about the data is :math:`J^\top J / \sigma^2`, with :math:`J` the Jacobian of the minimiser
with respect to the data, and the Fisher information loss of an example is the square root of
the largest eigenvalue of its block, :math:`\eta_i = \lVert J_i \rVert_2 / \sigma`. By the
Cramer-Rao bound, an unbiased adversary who knows every other example cannot estimate the
example with a variance below :math:`1/\eta_i^2` in any direction.

For L2-regularised linear and logistic regression the Jacobian follows from the implicit
function theorem: the gradient of the training objective vanishes at the minimiser, so
:math:`J_i = -H^{-1}\,\partial g/\partial(x_i, y_i)`, with :math:`H` the Hessian, factorised
once and shared by every example. The conventions are those of Hannun, Guo and van der Maaten
(2021): the objective is the (weighted) mean loss plus :math:`(\lambda/2)\lVert w\rVert^2`,
so that, written as a sum over examples, its Hessian carries :math:`n\lambda I`; the linear
model has the squared loss over two (labels in :math:`\{-1, 1\}` for classification, any real
for regression) and the logistic model the log-loss (labels in :math:`\{0, 1\}`). Neither has
an intercept.

The module also holds iteratively reweighted FIL (IRFIL), which equalises :math:`\eta` across
examples, the white-box attribute-inversion attack with its baseline, and the FIL of one
patient in a clipped mean released with Laplace or Gaussian noise.

References
----------
Hannun, Guo and van der Maaten (2021), "Measuring data leakage in machine-learning models with
Fisher information", Proceedings of UAI 2021, PMLR 161, 760-770.
"""

from __future__ import annotations

import numbers
from dataclasses import dataclass

import numpy as np
import opendp.prelude as dp
import pandas as pd
from scipy import linalg, optimize, special

from ._validation import check_array, check_binary, check_count, check_real, check_rng
from .dp_noise import CLIPPING_SPAN

__all__ = [
    "MODELS",
    "AttributeInversion",
    "Reweighting",
    "accuracy",
    "attribute_inversion",
    "fit_model",
    "irfil",
    "mean_release_fil",
    "per_example_fil",
    "per_example_heuristics",
    "per_example_jacobians",
    "subset_fil",
]

# OpenDP's Laplace and Gaussian measurements sit behind its "contrib" flag.
dp.enable_features("contrib")

#: The models the module fits.
MODELS = ("linear", "logistic")

# Gradient size (mean-loss scale) below which a fit counts as the exact minimiser that the
# implicit-function Jacobian assumes.
_GRADIENT_TOLERANCE = 1e-10

# Entries of the (examples x candidate models) margin array held at once by the attack.
_ATTACK_BUDGET = 2_000_000


# --- Checks ------------------------------------------------------------------------------------


def _check_model(model: object) -> str:
    if not isinstance(model, str):
        raise TypeError(f"model must be a string, got {type(model).__name__}")
    if model not in MODELS:
        raise ValueError(f"model must be one of {MODELS}, got {model!r}")
    return model


def _check_problem(
    X: object, y: object, model: object, l2: object, weights: object
) -> tuple[np.ndarray, np.ndarray, str, float, np.ndarray]:
    """Validate a regression problem; return it as arrays, weights filled with ones."""
    X = check_array(X, "X", ndim=2)
    model = _check_model(model)
    y = (
        check_binary(y, "y", ndim=1).astype(float)
        if model == "logistic"
        else check_array(y, "y", ndim=1)
    )
    if y.size != X.shape[0]:
        raise ValueError(
            f"y must have one label per row of X: X has {X.shape[0]} rows, y has {y.size}"
        )
    l2 = check_real(l2, "l2", low=0)
    if weights is None:
        weights = np.ones(y.size)
    else:
        weights = check_array(weights, "weights", ndim=1)
        if weights.size != y.size:
            raise ValueError(
                f"weights must have one entry per row of X: X has {X.shape[0]} rows, "
                f"weights has {weights.size}"
            )
        if np.any(weights < 0) or not np.any(weights > 0):
            raise ValueError("weights must be non-negative and not all zero")
    return X, y, model, l2, weights


def _check_sigma(sigma: object) -> float:
    return check_real(sigma, "sigma", low=0, low_open=True)


def _check_columns(columns: object, d: int, name: str) -> np.ndarray:
    """Indices into the d + 1 columns of an example's Jacobian: features 0..d-1, the label d."""
    if columns is None:
        return np.arange(d + 1)
    indices = np.atleast_1d(np.asarray(columns))
    if indices.ndim != 1 or indices.size == 0 or not np.issubdtype(indices.dtype, np.integer):
        raise TypeError(f"{name} must be an integer or a non-empty sequence of integers")
    if np.any((indices < -(d + 1)) | (indices > d)):
        raise ValueError(f"{name} must index the {d} features or the label ({d} or -1)")
    return np.unique(indices % (d + 1))


# --- Losses and the fit --------------------------------------------------------------------


def _loss_terms(
    model: str, margin: np.ndarray, y: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Loss and its first and second derivatives with respect to the margin ``x . w``."""
    if model == "linear":
        residual = margin - y
        return residual**2 / 2, residual, np.ones_like(margin)
    prob = special.expit(margin)
    return np.logaddexp(0, margin) - y * margin, prob - y, prob * (1 - prob)


@dataclass(frozen=True)
class _Fit:
    """A fitted model and what its Jacobians need: the inverse Hessian (from its Cholesky
    factor) and each example's weighted loss derivatives, ``first`` and ``second``, in the
    margin."""

    coef: np.ndarray
    hessian_inverse: np.ndarray
    first: np.ndarray
    second: np.ndarray


def _objective(
    w: np.ndarray, X: np.ndarray, y: np.ndarray, model: str, l2: float, weights: np.ndarray
) -> tuple[float, np.ndarray]:
    """Weighted mean loss plus (l2/2)||w||^2, and its gradient."""
    loss, first, _ = _loss_terms(model, X @ w, y)
    n = y.size
    value = weights @ loss / n + l2 / 2 * w @ w
    return value, X.T @ (weights * first) / n + l2 * w


def _hessian(
    X: np.ndarray, second: np.ndarray, l2: float, weights: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Cholesky factor and inverse of the sum-form Hessian X'WX + n l2 I."""
    hessian = (X * (weights * second)[:, None]).T @ X
    hessian[np.diag_indices_from(hessian)] += X.shape[0] * l2
    try:
        factor = linalg.cho_factor(hessian)
        pivots = np.abs(np.diag(factor[0]))
        # Rounding can leave a rank-deficient matrix with tiny positive pivots.
        singular = pivots.min() <= np.sqrt(X.shape[1] * np.finfo(float).eps) * pivots.max()
    except linalg.LinAlgError:
        singular = True
    if singular:
        raise ValueError(
            "the Hessian of the training objective is singular: use l2 > 0 or more examples "
            "than features"
        )
    return factor, linalg.cho_solve(factor, np.eye(X.shape[1]))


def _minimise_logistic(X: np.ndarray, y: np.ndarray, l2: float, weights: np.ndarray) -> np.ndarray:
    n, d = X.shape
    coef = optimize.minimize(
        _objective,
        np.zeros(d),
        args=(X, y, "logistic", l2, weights),
        jac=True,
        method="L-BFGS-B",
        options={"maxiter": 10_000, "gtol": 1e-9, "ftol": 1e-15},
    ).x
    failure = (
        "logistic regression did not converge (separable classes have no minimiser): use l2 > 0"
    )
    # L-BFGS stops near the minimiser; a few Newton steps reach it to machine precision, which
    # the implicit-function Jacobian assumes.
    try:
        for _ in range(20):
            _, first, second = _loss_terms("logistic", X @ coef, y)
            factor, _ = _hessian(X, second, l2, weights)
            step = linalg.cho_solve(factor, X.T @ (weights * first) + n * l2 * coef)
            coef = coef - step
            if np.max(np.abs(step)) <= 1e-13 * (1 + np.max(np.abs(coef))):
                break
    except ValueError as error:
        raise ValueError(failure) from error
    gradient = _objective(coef, X, y, "logistic", l2, weights)[1]
    if not np.all(np.isfinite(coef)) or np.max(np.abs(gradient)) > _GRADIENT_TOLERANCE:
        raise ValueError(failure)
    return coef


def _fit(X: np.ndarray, y: np.ndarray, model: str, l2: float, weights: np.ndarray) -> _Fit:
    if model == "linear":
        factor, inverse = _hessian(X, np.ones(y.size), l2, weights)
        coef = linalg.cho_solve(factor, X.T @ (weights * y))
        _, first, second = _loss_terms(model, X @ coef, y)
    else:
        coef = _minimise_logistic(X, y, l2, weights)
        _, first, second = _loss_terms(model, X @ coef, y)
        _, inverse = _hessian(X, second, l2, weights)
    return _Fit(coef, inverse, weights * first, weights * second)


def fit_model(
    X: object, y: object, *, model: str = "linear", l2: float = 0.0, weights: object = None
) -> np.ndarray:
    r"""The minimiser of the weighted mean loss plus :math:`(\lambda/2)\lVert w\rVert^2`.

    Parameters
    ----------
    X : array_like
        ``(n, d)`` features, one example per row (no intercept is added).
    y : array_like
        ``n`` labels: any real for ``"linear"`` (:math:`\pm 1` for classification), 0 or 1
        for ``"logistic"``.
    model : {"linear", "logistic"}, default "linear"
        Squared loss over two, solved exactly, or log-loss, minimised by L-BFGS and polished
        with Newton steps.
    l2 : float, default 0.0
        The regularisation :math:`\lambda \ge 0`.
    weights : array_like or None
        Non-negative weight of each example's loss; None weighs all by one.

    Returns
    -------
    numpy.ndarray
        The ``d`` coefficients.
    """
    return _fit(*_check_problem(X, y, model, l2, weights)).coef


# --- Jacobians and FIL -----------------------------------------------------------------------


def per_example_jacobians(
    X: object, y: object, *, model: str = "linear", l2: float = 0.0, weights: object = None
) -> np.ndarray:
    r"""Jacobian of the fitted coefficients with respect to each example's features and label.

    By the implicit function theorem, :math:`J_i = -H^{-1}\,\partial g/\partial (x_i, y_i)`,
    with :math:`g` the gradient of the objective (as a sum over examples) and :math:`H` its
    Hessian at the minimiser, :math:`X^\top \mathrm{diag}(\omega\,\ell'') X + n\lambda I`:

    .. math::

        J_{i,x} = -\omega_i\left(\ell'_i H^{-1} + \ell''_i H^{-1} x_i w^{*\top}\right),
        \qquad J_{i,y} = \omega_i H^{-1} x_i,

    with :math:`\ell'_i, \ell''_i` the derivatives of the loss with respect to the margin
    :math:`x_i^\top w^*`. The Hessian is factorised once for all examples.

    Parameters
    ----------
    X, y, model, l2, weights
        The problem, as in :func:`fit_model`.

    Returns
    -------
    numpy.ndarray
        ``(n, d, d + 1)`` array: for example ``i``, the derivative of each coefficient
        (rows) with respect to each feature and, in the last column, the label.
    """
    X, y, model, l2, weights = _check_problem(X, y, model, l2, weights)
    return _jacobian_array(X, _fit(X, y, model, l2, weights), weights)


def _jacobian_array(X: np.ndarray, fit: _Fit, weights: np.ndarray) -> np.ndarray:
    """``(n, d, d + 1)`` Jacobians of the minimiser with respect to each example's (x, y)."""
    a = X @ fit.hessian_inverse  # row i is H^{-1} x_i (H is symmetric)
    jx = -(
        fit.first[:, None, None] * fit.hessian_inverse
        + (fit.second[:, None] * a)[:, :, None] * fit.coef[None, None, :]
    )
    return np.concatenate([jx, (weights[:, None] * a)[:, :, None]], axis=2)


def _largest_eigenvalue(jacobians: np.ndarray) -> np.ndarray:
    """Largest eigenvalue of J J^T for a stack of J, through the smaller of the two Grams."""
    if jacobians.shape[-1] <= jacobians.shape[-2]:
        gram = np.swapaxes(jacobians, -1, -2) @ jacobians
    else:
        gram = jacobians @ np.swapaxes(jacobians, -1, -2)
    return np.clip(np.linalg.eigvalsh(gram)[..., -1], 0, None)


def per_example_fil(
    X: object,
    y: object,
    model: str = "linear",
    l2: float = 0.0,
    sigma: float = 1.0,
    weights: object = None,
    *,
    attributes: object = None,
) -> np.ndarray:
    r"""Fisher information loss :math:`\eta_i` of each example under Gaussian output noise.

    The model is fitted once, its Hessian factorised once, and each example's
    :math:`\eta_i = \lVert J_i \rVert_2/\sigma` is the square root of the largest eigenvalue
    of its Fisher information matrix :math:`J_i^\top J_i/\sigma^2`
    (:func:`per_example_jacobians`). The cost is :math:`O(d^2 n)` for the Hessian and
    :math:`O(d^3)` per example.

    Parameters
    ----------
    X : array_like
        ``(n, d)`` features.
    y : array_like
        ``n`` labels (reals for ``"linear"``, 0/1 for ``"logistic"``).
    model : {"linear", "logistic"}, default "linear"
        The model (:func:`fit_model`).
    l2 : float, default 0.0
        Regularisation :math:`\lambda \ge 0`.
    sigma : float, default 1.0
        Standard deviation of the Gaussian noise added to each released coefficient, > 0.
    weights : array_like or None
        Per-example loss weights (:func:`irfil`); None weighs all by one.
    attributes : int, sequence of int or None
        Restrict each example's information to these columns: features ``0..d-1`` and the
        label as ``d`` (or ``-1``). None (the default) takes the whole example.

    Returns
    -------
    numpy.ndarray
        One :math:`\eta` per example.

    References
    ----------
    Hannun, Guo and van der Maaten (2021), UAI, section 3 and appendix.
    """
    X, y, model, l2, weights = _check_problem(X, y, model, l2, weights)
    sigma = _check_sigma(sigma)
    columns = _check_columns(attributes, X.shape[1], "attributes")
    jacobians = _jacobian_array(X, _fit(X, y, model, l2, weights), weights)[:, :, columns]
    return np.sqrt(_largest_eigenvalue(jacobians)) / sigma


def subset_fil(
    X: object,
    y: object,
    *,
    examples: object = None,
    attributes: object = None,
    model: str = "linear",
    l2: float = 0.0,
    sigma: float = 1.0,
    weights: object = None,
) -> float:
    r"""Fisher information loss of a set of entries of the data, taken together.

    The Fisher information matrix of the selected entries is the block of the full matrix
    that they index; its largest eigenvalue equals that of :math:`\sum_i J_{i,S} J_{i,S}^\top`
    over the selected examples, with :math:`J_{i,S}` the selected columns of example ``i``'s
    Jacobian. Every entry left out is taken as known to the adversary.

    Parameters
    ----------
    X, y, model, l2, sigma, weights
        As in :func:`per_example_fil`.
    examples : array_like of int or bool, or None
        Rows of ``X`` in the subset; None takes all of them.
    attributes : int, sequence of int or None
        Columns in the subset: features ``0..d-1`` and the label ``d`` (or ``-1``); None takes
        them all. ``attributes=j`` with ``examples=None`` is the FIL of attribute ``j`` over
        all examples.

    Returns
    -------
    float
        The subset's :math:`\eta`.
    """
    X, y, model, l2, weights = _check_problem(X, y, model, l2, weights)
    sigma = _check_sigma(sigma)
    columns = _check_columns(attributes, X.shape[1], "attributes")
    rows = np.arange(y.size)
    if examples is not None:
        try:
            rows = rows[np.asarray(examples)]
        except IndexError as error:
            raise ValueError(f"examples must index the {y.size} rows of X") from error
        if rows.size == 0:
            raise ValueError("examples must select at least one row")
    jacobians = _jacobian_array(X, _fit(X, y, model, l2, weights), weights)[rows][:, :, columns]
    gram = np.einsum("idk,iek->de", jacobians, jacobians)
    return float(np.sqrt(max(np.linalg.eigvalsh(gram)[-1], 0.0)) / sigma)


# --- The heuristics FIL is compared with -----------------------------------------------------


def per_example_heuristics(
    X: object,
    y: object,
    model: str = "linear",
    l2: float = 0.0,
    sigma: float = 1.0,
    weights: object = None,
) -> pd.DataFrame:
    r"""Each example's FIL beside its loss and the norm of its loss gradient.

    The loss :math:`\ell(w^{*\top} x_i, y_i)` and the gradient norm
    :math:`\lVert \nabla_w \ell(w^{*\top} x_i, y_i)\rVert_2 = |\ell'_i|\,\lVert x_i\rVert_2`
    (unweighted, without the regulariser) are the heuristics often used to rank examples by
    how exposed they are.

    Parameters
    ----------
    X, y, model, l2, sigma, weights
        As in :func:`per_example_fil`.

    Returns
    -------
    pandas.DataFrame
        One row per example, columns ``label``, ``eta``, ``loss``, ``gradient_norm``.
    """
    X, y, model, l2, weights = _check_problem(X, y, model, l2, weights)
    sigma = _check_sigma(sigma)
    fit = _fit(X, y, model, l2, weights)
    eta = np.sqrt(_largest_eigenvalue(_jacobian_array(X, fit, weights))) / sigma
    loss, first, _ = _loss_terms(model, X @ fit.coef, y)
    return pd.DataFrame(
        {
            "label": y,
            "eta": eta,
            "loss": loss,
            "gradient_norm": np.abs(first) * np.linalg.norm(X, axis=1),
        }
    )


def accuracy(X: object, y: object, coef: object, *, model: str = "linear") -> float:
    r"""Share of examples classified correctly by coefficients ``coef``.

    Parameters
    ----------
    X : array_like
        ``(n, d)`` features.
    y : array_like
        Labels: :math:`\pm 1` for ``"linear"`` (the sign of the margin is the prediction),
        0/1 for ``"logistic"`` (a positive margin predicts 1).
    coef : array_like
        ``d`` coefficients.
    model : {"linear", "logistic"}, default "linear"
        Which label coding ``y`` uses.

    Returns
    -------
    float
        The accuracy, between 0 and 1.
    """
    X = check_array(X, "X", ndim=2)
    coef = check_array(coef, "coef", ndim=1)
    if coef.size != X.shape[1]:
        raise ValueError(
            f"coef must have one entry per column of X ({X.shape[1]}), got {coef.size}"
        )
    model = _check_model(model)
    if model == "logistic":
        y = check_binary(y, "y", ndim=1)
        predicted = (X @ coef > 0).astype(np.int8)
    else:
        y = check_array(y, "y", ndim=1)
        if not np.all(np.abs(y) == 1):
            raise ValueError("y must hold only -1 and 1 for a linear classifier")
        predicted = np.where(X @ coef > 0, 1.0, -1.0)
    if y.size != X.shape[0]:
        raise ValueError(
            f"y must have one label per row of X: X has {X.shape[0]} rows, y has {y.size}"
        )
    return float(np.mean(predicted == y))


# --- IRFIL -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Reweighting:
    r"""The iterations of :func:`irfil`.

    Attributes
    ----------
    weights : numpy.ndarray
        ``(iterations + 1, n)`` loss weights; row 0 is all ones (the unweighted model).
    eta : numpy.ndarray
        ``(iterations + 1, n)`` per-example FIL of the model trained with each row's weights.
    coef : numpy.ndarray
        ``(iterations + 1, d)`` coefficients of those models.
    model : str
        The model trained.
    """

    weights: np.ndarray
    eta: np.ndarray
    coef: np.ndarray
    model: str

    def summary(self) -> pd.DataFrame:
        """Mean, standard deviation and maximum of eta at each iteration.

        Returns
        -------
        pandas.DataFrame
            Columns ``iteration``, ``eta_mean``, ``eta_sd`` (ddof 1), ``eta_max``.
        """
        return pd.DataFrame(
            {
                "iteration": np.arange(self.eta.shape[0]),
                "eta_mean": self.eta.mean(axis=1),
                "eta_sd": self.eta.std(axis=1, ddof=1),
                "eta_max": self.eta.max(axis=1),
            }
        )

    def accuracy(self, X: object, y: object) -> np.ndarray:
        """Classification accuracy (:func:`accuracy`) of the model at each iteration."""
        return np.array([accuracy(X, y, coef, model=self.model) for coef in self.coef])

    def mean_squared_error(self, X: object, y: object) -> np.ndarray:
        """Mean squared prediction error of the model at each iteration."""
        X = check_array(X, "X", ndim=2)
        y = check_array(y, "y", ndim=1)
        if y.size != X.shape[0] or X.shape[1] != self.coef.shape[1]:
            raise ValueError("X and y must match each other and the fitted coefficients")
        return np.mean((X @ self.coef.T - y[:, None]) ** 2, axis=0)


def irfil(
    X: object,
    y: object,
    *,
    model: str = "linear",
    l2: float = 0.0,
    sigma: float = 1.0,
    iterations: int = 10,
    attributes: object = None,
) -> Reweighting:
    r"""Iteratively reweighted Fisher information loss: train so that every example leaks alike.

    Starting from equal weights, each iteration divides every example's loss weight by its
    current :math:`\eta_i`, rescales the weights to sum to ``n``, and retrains:
    :math:`\omega^{(t+1)}_i \propto \omega^{(t)}_i/\eta^{(t)}_i`. Examples that leak more are
    down-weighted, which lowers their :math:`\eta`, until the :math:`\eta_i` agree.

    Parameters
    ----------
    X, y, model, l2, sigma
        As in :func:`per_example_fil`.
    iterations : int, default 10
        Reweighting steps, at least 1.
    attributes : int, sequence of int or None
        Equalise the FIL of these columns of each example (as in :func:`per_example_fil`),
        for instance the attribute an attacker targets; None equalises the whole example.

    Returns
    -------
    Reweighting
        Weights, per-example FIL and coefficients at every iteration.

    References
    ----------
    Hannun, Guo and van der Maaten (2021), UAI, section 5.
    """
    X, y, model, l2, weights = _check_problem(X, y, model, l2, None)
    sigma = _check_sigma(sigma)
    iterations = check_count(iterations, "iterations")
    columns = _check_columns(attributes, X.shape[1], "attributes")
    history_weights, history_eta, history_coef = [], [], []
    for step in range(iterations + 1):
        fit = _fit(X, y, model, l2, weights)
        eta = np.sqrt(_largest_eigenvalue(_jacobian_array(X, fit, weights)[:, :, columns]))
        history_weights.append(weights)
        history_eta.append(eta / sigma)
        history_coef.append(fit.coef)
        if step < iterations:
            if np.any(eta == 0):
                raise ValueError("an example with zero FIL cannot be reweighted by 1/eta")
            weights = weights / eta
            weights = weights * (y.size / weights.sum())
    return Reweighting(
        np.array(history_weights), np.array(history_eta), np.array(history_coef), model
    )


# --- Attribute inversion ----------------------------------------------------------------------


@dataclass(frozen=True)
class AttributeInversion:
    """Results of :func:`attribute_inversion`, one entry per training example.

    Attributes
    ----------
    truth : numpy.ndarray
        The example's true value of the attacked attribute.
    eta : numpy.ndarray
        FIL of that attribute of the example (all else known).
    accuracy : numpy.ndarray
        Share of the simulated releases in which the white-box attack recovers the value.
    baseline : numpy.ndarray
        1.0 where the baseline guess (the attribute's most common value) is right, else 0.0.
    values : numpy.ndarray
        The candidate values the attacker chooses between.
    """

    truth: np.ndarray
    eta: np.ndarray
    accuracy: np.ndarray
    baseline: np.ndarray
    values: np.ndarray

    def to_frame(self) -> pd.DataFrame:
        """One row per example: ``truth``, ``eta``, ``accuracy``, ``baseline``."""
        return pd.DataFrame(
            {
                "truth": self.truth,
                "eta": self.eta,
                "accuracy": self.accuracy,
                "baseline": self.baseline,
            }
        )


def _candidate_models(
    X: np.ndarray,
    y: np.ndarray,
    model: str,
    l2: float,
    weights: np.ndarray,
    coef: np.ndarray,
    rows: np.ndarray,
    attribute: int,
    values: np.ndarray,
) -> np.ndarray:
    """Minimisers with example ``rows[r]``'s attribute set to each value: ``(len(rows), k, d)``.

    All candidate problems are solved at once by Newton's method from the released
    minimiser, which differs from each candidate's only through one entry of one example;
    for the linear model the first step is exact.
    """
    n, d = X.shape
    rows_count, k = rows.size, values.size
    replaced = np.repeat(X[rows][:, None, :], k, axis=1)
    replaced[:, :, attribute] = values[None, :]
    replaced = replaced.reshape(-1, d)  # candidate c = (row, value)
    own = np.repeat(X[rows], k, axis=0)
    label, weight = np.repeat(y[rows], k), np.repeat(weights[rows], k)
    outer = (X[:, :, None] * X[:, None, :]).reshape(n, d * d)
    candidates = np.repeat(coef[None, :], rows_count * k, axis=0)
    for _ in range(50):
        _, first, second = _loss_terms(model, X @ candidates.T, y[:, None])  # (n, m)
        _, own_first, own_second = _loss_terms(model, np.einsum("md,md->m", own, candidates), label)
        _, new_first, new_second = _loss_terms(
            model, np.einsum("md,md->m", replaced, candidates), label
        )
        # Swap the example's own term for its replacement's in the full sums.
        gradient = (
            (weights[:, None] * first).T @ X
            - (weight * own_first)[:, None] * own
            + (weight * new_first)[:, None] * replaced
            + n * l2 * candidates
        )
        hessian = (
            ((weights[:, None] * second).T @ outer).reshape(-1, d, d)
            - (weight * own_second)[:, None, None] * own[:, :, None] * own[:, None, :]
            + (weight * new_second)[:, None, None] * replaced[:, :, None] * replaced[:, None, :]
            + n * l2 * np.eye(d)
        )
        step = np.linalg.solve(hessian, gradient[:, :, None])[:, :, 0]
        candidates = candidates - step
        if np.max(np.abs(step)) <= 1e-12 * (1 + np.max(np.abs(candidates))):
            return candidates.reshape(rows_count, k, d)
    raise ValueError("retraining a candidate model did not converge: use a larger l2")


def attribute_inversion(
    X: object,
    y: object,
    attribute: int,
    *,
    model: str = "linear",
    l2: float = 0.0,
    sigma: float = 1.0,
    weights: object = None,
    values: object = None,
    releases: int = 500,
    rng: object = None,
) -> AttributeInversion:
    r"""The white-box attribute-inversion attack on a model released with Gaussian noise.

    The attacker knows the training data except one example's value of ``attribute``, the
    training procedure (model, ``l2``, ``weights``) and the release
    :math:`w' = w^* + N(0, \sigma^2 I)`. For each candidate value it retrains the model with
    that value in place and guesses the value whose model lies nearest :math:`w'`. Every
    example is attacked in each of ``releases`` independent releases; the baseline guesses
    the attribute's most common value in the training data.

    Parameters
    ----------
    X, y, model, l2, weights
        The training problem, as in :func:`fit_model`.
    attribute : int
        Column of ``X`` under attack.
    sigma : float, default 1.0
        Standard deviation of the release noise, > 0.
    values : array_like or None
        Candidate values (at least two, distinct); None takes the distinct values of the
        column, which must then hold each example's true value.
    releases : int, default 500
        Independent noisy releases attacked, at least 1.
    rng : numpy.random.Generator, int or None
        Source of the release noise.

    Returns
    -------
    AttributeInversion
        Per-example truth, attribute FIL, attack accuracy and baseline.

    References
    ----------
    Hannun, Guo and van der Maaten (2021), UAI, section 6.
    """
    X, y, model, l2, weights = _check_problem(X, y, model, l2, weights)
    sigma = _check_sigma(sigma)
    if isinstance(attribute, bool) or not isinstance(attribute, numbers.Integral):
        raise TypeError(f"attribute must be an integer column index, got {attribute!r}")
    if not 0 <= attribute < X.shape[1]:
        raise ValueError(f"attribute must index one of the {X.shape[1]} columns of X")
    truth = X[:, attribute]
    values = np.unique(truth) if values is None else np.unique(check_array(values, "values"))
    if values.size < 2:
        raise ValueError("values must hold at least two distinct candidates")
    if not np.all(np.isin(truth, values)):
        raise ValueError("values must include every example's true value of the attribute")
    releases = check_count(releases, "releases")
    rng = check_rng(rng)

    fit = _fit(X, y, model, l2, weights)
    n, d = X.shape
    chunk = max(1, _ATTACK_BUDGET // (n * values.size))
    offsets = (
        np.concatenate(
            [
                _candidate_models(
                    X,
                    y,
                    model,
                    l2,
                    weights,
                    fit.coef,
                    np.arange(n)[s : s + chunk],
                    attribute,
                    values,
                )
                for s in range(0, n, chunk)
            ]
        )
        - fit.coef
    )  # (n, k, d): each candidate relative to the released minimiser
    noise = sigma * rng.standard_normal((releases, d))
    # ||w' - w_c||^2 = ||noise||^2 - 2 noise . offset_c + ||offset_c||^2; the first term is
    # the same for every candidate.
    distance = np.sum(offsets**2, axis=2)[None] - 2 * np.einsum("rd,nkd->rnk", noise, offsets)
    guess = values[np.argmin(distance, axis=2)]
    column_values, counts = np.unique(truth, return_counts=True)
    mode = column_values[np.argmax(counts)]
    # The attribute's column of each example's Jacobian.
    column = _jacobian_array(X, fit, weights)[:, :, attribute]
    return AttributeInversion(
        truth=truth,
        eta=np.linalg.norm(column, axis=1) / sigma,
        accuracy=np.mean(guess == truth[None, :], axis=0),
        baseline=(truth == mode).astype(float),
        values=values,
    )


# --- One patient in a released mean --------------------------------------------------------


def _laplace(scale: float) -> dp.Measurement:
    space = dp.vector_domain(dp.atom_domain(T=float, nan=False)), dp.l1_distance(T=float)
    return dp.m.make_laplace(*space, scale=scale)


def _gaussian(scale: float, delta: float) -> dp.Measurement:
    space = dp.vector_domain(dp.atom_domain(T=float, nan=False)), dp.l2_distance(T=float)
    return dp.c.make_fix_delta(
        dp.c.make_zCDP_to_approxDP(dp.m.make_gaussian(*space, scale=scale)), delta
    )


def mean_release_fil(
    epsilon: object,
    *,
    patients: int,
    released: int,
    width: float = CLIPPING_SPAN,
    delta: float = 1e-6,
) -> pd.DataFrame:
    r"""FIL of one patient in ``released`` clipped means released with Laplace or Gaussian noise.

    Each released number is the mean over ``patients`` patients of one value clipped to a
    public range of width ``width``, plus noise. Replacing one patient moves each mean by at
    most ``width / patients``, so the vector moves by at most
    ``released * width / patients`` in L1 and ``sqrt(released) * width / patients`` in L2.
    OpenDP's Laplace mechanism is calibrated to :math:`\varepsilon`-DP for the whole vector
    (which gives :math:`b = \text{released}\cdot\text{width}/(\text{patients}\,\varepsilon)`,
    the budget split evenly) and its Gaussian mechanism to :math:`(\varepsilon, \delta)`-DP through
    zero-concentrated DP.

    Inside the range each mean moves by ``1 / patients`` per unit of the patient's value, and
    a Laplace or Gaussian location family of scale :math:`s` (:math:`b` or :math:`\sigma`)
    carries Fisher information :math:`1/s^2` per observation, so the patient's FIL is
    :math:`\eta = 1/(\text{patients}\cdot s)` under either.

    Parameters
    ----------
    epsilon : float or array_like
        Privacy budgets, each > 0.
    patients : int
        Patients behind each mean, at least 1.
    released : int
        Released numbers (means), at least 1.
    width : float, default :data:`~synpmx_lite.dp_noise.CLIPPING_SPAN`
        Width of the public clipping range (ln 16 on the log scale: a sixteen-fold range).
    delta : float, default 1e-6
        The :math:`\delta` of the Gaussian mechanism, in (0, 1).

    Returns
    -------
    pandas.DataFrame
        Two rows per budget (``mechanism`` "Laplace" then "Gaussian"), columns
        ``mechanism``, ``epsilon``, ``scale`` (noise scale per number), ``eta``,
        ``cramer_rao_sd`` (:math:`1/\eta`, the least standard deviation of an unbiased
        estimate of one of the patient's values) and ``estimator_sd`` (that of the natural
        unbiased estimate, ``patients`` times the release less the others' share).
    """
    epsilons = np.atleast_1d(check_array(epsilon, "epsilon"))
    if epsilons.ndim != 1 or np.any(epsilons <= 0):
        raise ValueError("epsilon must be a positive number or a 1-D array of them")
    patients = check_count(patients, "patients")
    released = check_count(released, "released")
    width = check_real(width, "width", low=0, low_open=True)
    delta = check_real(delta, "delta", low=0, high=1, low_open=True, high_open=True)
    l1, l2 = released * width / patients, np.sqrt(released) * width / patients
    rows = []
    for eps in epsilons:
        laplace = dp.binary_search_param(_laplace, d_in=l1, d_out=float(eps))
        gaussian = dp.binary_search_param(
            lambda s: _gaussian(s, delta), d_in=float(l2), d_out=(float(eps), delta)
        )
        # A Laplace variable of scale b has variance 2 b^2; a Gaussian one sigma^2.
        rows.append(("Laplace", eps, laplace, np.sqrt(2) * laplace))
        rows.append(("Gaussian", eps, gaussian, gaussian))
    table = pd.DataFrame(rows, columns=["mechanism", "epsilon", "scale", "estimator_sd"])
    table["eta"] = 1 / (patients * table["scale"])
    table["cramer_rao_sd"] = 1 / table["eta"]
    table["estimator_sd"] = patients * table["estimator_sd"]
    return table[["mechanism", "epsilon", "scale", "eta", "cramer_rao_sd", "estimator_sd"]]
