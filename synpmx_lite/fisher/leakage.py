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

Each example's :math:`J_i J_i^\top` is, in the eigenbasis of :math:`H`, a diagonal matrix plus a
symmetric rank-two term, so its largest eigenvalue is the largest root of a two-by-two secular
equation: :func:`per_example_fil` costs one :math:`O(n d^2)` transform and then :math:`O(d)`
per example and root-finding step, and never forms a :math:`d \times d` matrix per example.

The module also holds the loss and gradient-norm heuristics FIL is compared with, iteratively
reweighted FIL (IRFIL), which equalises :math:`\eta` across examples, and the paper's rule for
the logistic regularisation. The attribute-inversion attacks are in
:mod:`synpmx_lite.fisher.inversion`; the FIL of a differentially private mean and the bound for
biased adversaries in :mod:`synpmx_lite.fisher.bounds`.

References
----------
Hannun, Guo and van der Maaten (2021), "Measuring data leakage in machine-learning models with
Fisher information", Proceedings of UAI 2021, PMLR 161, 760-770.

Golub (1973), "Some modified matrix eigenvalue problems", SIAM Review 15, 318-334.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import special
from threadpoolctl import threadpool_limits

from .._validation import check_array, check_binary, check_count, check_real
from ..rounding import round_significant

__all__ = [
    "CONDITION_LIMIT",
    "MODELS",
    "Reweighting",
    "accuracy",
    "fit_model",
    "irfil",
    "logistic_l2_path",
    "matched_logistic_l2",
    "per_example_fil",
    "per_example_heuristics",
    "per_example_jacobians",
    "subset_fil",
]

#: The models the module fits.
MODELS = ("linear", "logistic")

#: Largest condition number of the Hessian accepted. Rounding in its inverse alone can move
#: the Jacobians by about this times machine epsilon (2e-6 here), and a rank-deficient
#: Hessian, whose computed condition number is of order 1/epsilon, is refused.
CONDITION_LIMIT = 1e10

# Gradient size (mean-loss scale) below which a fit counts as the exact minimiser that the
# implicit-function Jacobian assumes.
_GRADIENT_TOLERANCE = 1e-10

# Newton steps allowed for a logistic fit; damped Newton needs a few dozen at most.
_NEWTON_STEPS = 100

_NO_MINIMISER = (
    "logistic regression did not converge (separable classes have no minimiser): use l2 > 0"
)

_EPS = np.finfo(float).eps


# --- Checks ------------------------------------------------------------------------------------


def _check_model(model: object) -> str:
    if not isinstance(model, str):
        raise TypeError(f"model must be a string, got {type(model).__name__}")
    if model not in MODELS:
        raise ValueError(f"model must be one of {MODELS}, got {model!r}")
    return model


def _check_labels(y: object, model: str, name: str = "y") -> np.ndarray:
    if model == "logistic":
        return check_binary(y, name, ndim=1).astype(float)
    return check_array(y, name, ndim=1)


def _check_problem(
    X: object, y: object, model: object, l2: object, weights: object
) -> tuple[np.ndarray, np.ndarray, str, float, np.ndarray]:
    """Validate a regression problem; return it as arrays, weights filled with ones."""
    X = check_array(X, "X", ndim=2)
    model = _check_model(model)
    y = _check_labels(y, model)
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


# --- Losses, the Hessian and the fit -------------------------------------------------------------


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
class _Hessian:
    """Eigendecomposition ``H = V diag(values) V'`` of the sum-form Hessian X'WX + n l2 I."""

    values: np.ndarray
    vectors: np.ndarray

    def solve(self, b: np.ndarray) -> np.ndarray:
        """H^{-1} b for a vector or the columns of a matrix."""
        values = self.values if b.ndim == 1 else self.values[:, None]
        return self.vectors @ ((self.vectors.T @ b) / values)

    @property
    def inverse(self) -> np.ndarray:
        return (self.vectors / self.values) @ self.vectors.T


def _factorise(X: np.ndarray, curvature: np.ndarray, l2: float) -> _Hessian:
    """Factorise X' diag(curvature) X + n l2 I, refusing it when it is numerically singular.

    The test is on the condition number (a rank test with a relative tolerance): an absolute
    or pivot-size test lets rank-deficient problems through whenever rounding leaves their
    zero eigenvalue slightly positive.
    """
    hessian = (X * curvature[:, None]).T @ X
    hessian[np.diag_indices_from(hessian)] += X.shape[0] * l2
    values, vectors = np.linalg.eigh(hessian)
    if not values[-1] > 0 or values[0] <= values[-1] / CONDITION_LIMIT:
        raise ValueError(
            "the Hessian of the training objective is singular to working precision "
            f"(condition number above {CONDITION_LIMIT:g}): use l2 > 0 or more examples, "
            "not collinear, than features"
        )
    return _Hessian(values, vectors)


@dataclass(frozen=True)
class _Fit:
    """A fitted model and what its Jacobians need: the factorised Hessian and each example's
    weighted loss derivatives, ``first`` and ``second``, in the margin."""

    coef: np.ndarray
    hessian: _Hessian
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


def _minimise_logistic(
    X: np.ndarray, y: np.ndarray, l2: float, weights: np.ndarray, start: np.ndarray | None
) -> np.ndarray:
    """Damped Newton's method: the objective is smooth and, with l2 > 0, strictly convex."""
    n = y.size
    coef = np.zeros(X.shape[1]) if start is None else start.copy()
    value, gradient = _objective(coef, X, y, "logistic", l2, weights)
    polished = 0
    for _ in range(_NEWTON_STEPS):
        second = _loss_terms("logistic", X @ coef, y)[2]
        try:
            step = _factorise(X, weights * second, l2).solve(n * gradient)
        except ValueError as error:
            raise ValueError(_NO_MINIMISER) from error
        if np.max(np.abs(step)) <= 1e-14 * (1 + np.max(np.abs(coef))):
            break
        decrease = gradient @ step  # twice the predicted decrease of the objective
        if decrease <= 1e3 * _EPS * max(value, _EPS):
            # Within rounding of the minimum the line search cannot tell steps apart; full
            # Newton steps converge quadratically from here.
            coef = coef - step
            value, gradient = _objective(coef, X, y, "logistic", l2, weights)
            polished += 1
            if polished == 3:
                break
            continue
        scale = 1.0
        while True:  # backtracking (Armijo) line search
            trial = coef - scale * step
            trial_value, trial_gradient = _objective(trial, X, y, "logistic", l2, weights)
            if trial_value <= value - 1e-4 * scale * decrease:
                break
            scale /= 2
            if scale < 1e-10:
                raise ValueError(_NO_MINIMISER)
        coef, value, gradient = trial, trial_value, trial_gradient
    if not np.all(np.isfinite(coef)) or np.max(np.abs(gradient)) > _GRADIENT_TOLERANCE:
        raise ValueError(_NO_MINIMISER)
    return coef


def _fit(
    X: np.ndarray,
    y: np.ndarray,
    model: str,
    l2: float,
    weights: np.ndarray,
    start: np.ndarray | None = None,
) -> _Fit:
    if model == "linear":
        hessian = _factorise(X, weights, l2)
        coef = hessian.solve(X.T @ (weights * y))
    else:
        coef = _minimise_logistic(X, y, l2, weights, start)
    _, first, second = _loss_terms(model, X @ coef, y)
    if model == "logistic":
        try:
            hessian = _factorise(X, weights * second, l2)
        except ValueError as error:
            raise ValueError(_NO_MINIMISER) from error
    return _Fit(coef, hessian, weights * first, weights * second)


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
        Squared loss over two, solved exactly, or log-loss, minimised by damped Newton steps
        to machine precision (the implicit-function Jacobians assume the exact minimiser).
    l2 : float, default 0.0
        The regularisation :math:`\lambda \ge 0`.
    weights : array_like or None
        Non-negative weight of each example's loss; None weighs all by one.

    Returns
    -------
    numpy.ndarray
        The ``d`` coefficients.

    Raises
    ------
    ValueError
        If the Hessian's condition number exceeds :data:`CONDITION_LIMIT` (too few or
        collinear examples without regularisation), or the logistic loss has no minimiser.
    """
    return _fit(*_check_problem(X, y, model, l2, weights)).coef


def logistic_l2_path(
    X: object, y: object, *, candidates: object = None, figures: int = 2
) -> pd.DataFrame:
    r"""Training accuracy of logistic regression over candidate :math:`\lambda`, beside the
    unregularised linear classifier's: the table behind :func:`matched_logistic_l2`.

    Parameters
    ----------
    X : array_like
        ``(n, d)`` features.
    y : array_like
        ``n`` labels, 0 or 1 (the linear classifier takes them as :math:`\pm 1`).
    candidates : array_like or None
        Positive values of :math:`\lambda`; None takes 49 values spaced evenly on a log
        scale from :math:`10^{-6}` to 1. They are fitted from the largest down, each fit
        starting from the previous one.
    figures : int, default 2
        Significant figures to which the two accuracies must agree.

    Returns
    -------
    pandas.DataFrame
        One row per candidate, largest first: ``l2``, ``accuracy`` (logistic, training),
        ``linear_accuracy`` (the same in every row) and ``matches`` (equal to ``figures``
        significant figures).
    """
    X = check_array(X, "X", ndim=2)
    y = _check_labels(y, "logistic")
    figures = check_count(figures, "figures")
    if y.size != X.shape[0]:
        raise ValueError(
            f"y must have one label per row of X: X has {X.shape[0]} rows, y has {y.size}"
        )
    if np.unique(y).size < 2:
        raise ValueError(
            f"y must hold both labels 0 and 1, got only {int(y[0])}: a classifier of one class "
            "has nothing to separate"
        )
    grid = (
        np.geomspace(1e-6, 1.0, 49) if candidates is None else check_array(candidates, "candidates")
    )
    if grid.ndim != 1 or np.any(grid <= 0):
        raise ValueError("candidates must be a 1-D array of positive values")
    ones = np.ones(y.size)
    signs = 2 * y - 1
    linear = accuracy(X, signs, _fit(X, signs, "linear", 0.0, ones).coef)
    grid = np.sort(grid)[::-1]
    coef, scores = None, []
    for l2 in grid:
        coef = _fit(X, y, "logistic", float(l2), ones, start=coef).coef
        scores.append(accuracy(X, y, coef, model="logistic"))
    scores = np.array(scores)
    return pd.DataFrame(
        {
            "l2": grid,
            "accuracy": scores,
            "linear_accuracy": linear,
            "matches": round_significant(scores, figures) == round_significant(linear, figures),
        }
    )


def matched_logistic_l2(
    X: object, y: object, *, candidates: object = None, figures: int = 2
) -> float:
    r"""The paper's logistic regularisation: the largest :math:`\lambda` that keeps the training
    accuracy of the unregularised linear classifier.

    Hannun, Guo and van der Maaten (2021) set :math:`\lambda` for logistic regression to the
    largest value whose training accuracy equals, to two significant figures, that of linear
    regression on labels :math:`\pm 1` without regularisation (:func:`logistic_l2_path`).

    Parameters
    ----------
    X, y, candidates, figures
        As in :func:`logistic_l2_path`.

    Returns
    -------
    float
        The largest candidate that matches.

    Raises
    ------
    ValueError
        If no candidate matches, or if the largest does: then the rule has no answer among
        the candidates (classes that stay separated at any :math:`\lambda` never lose
        training accuracy, and the rule would drive :math:`\lambda` without limit).
    """
    path = logistic_l2_path(X, y, candidates=candidates, figures=figures)
    if not path["matches"].any():
        raise ValueError(
            "no candidate l2 gives the linear classifier's training accuracy; try smaller values"
        )
    if path["matches"].iloc[0]:
        raise ValueError(
            f"the largest candidate, l2 = {path['l2'].iloc[0]:g}, already keeps the linear "
            "classifier's training accuracy: the rule has no largest value among the candidates"
        )
    return float(path.loc[path["matches"], "l2"].iloc[0])


# --- Jacobians -----------------------------------------------------------------------------------


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

    This function returns the whole ``(n, d, d + 1)`` array, for inspection and checks;
    :func:`per_example_fil` and :func:`subset_fil` never form it.

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
    fit = _fit(X, y, model, l2, weights)
    inverse = fit.hessian.inverse
    a = X @ inverse  # row i is H^{-1} x_i (H is symmetric)
    jx = -(
        fit.first[:, None, None] * inverse
        + (fit.second[:, None] * a)[:, :, None] * fit.coef[None, None, :]
    )
    return np.concatenate([jx, (weights[:, None] * a)[:, :, None]], axis=2)


# --- Per-example FIL: a secular equation per example ---------------------------------------------


def _largest_eigenvalues(
    theta: np.ndarray,
    U: np.ndarray,
    c: np.ndarray,
    scale: np.ndarray,
    rho: np.ndarray,
    cross: np.ndarray,
) -> np.ndarray:
    r"""Largest eigenvalue of :math:`M_i = s_i\Theta + \rho_i u_i u_i^\top + t_i(c u_i^\top +
    u_i c^\top)` for every row :math:`u_i` of ``U``, each :math:`M_i` positive semi-definite.

    :math:`\Theta = \mathrm{diag}(\theta)` (ascending, non-negative) and :math:`c` are shared;
    ``scale``, ``rho`` and ``cross`` are :math:`s_i, \rho_i, t_i`. Writing
    :math:`D = s_i\Theta` and :math:`g_{ab}(\mu) = \sum_k a_k b_k / (D_k - \mu)`, a value
    :math:`\mu` outside the spectrum of :math:`D` is an eigenvalue exactly when the secular
    function

    .. math:: f(\mu) = (1 + t_i g_{uc})^2 + g_{uu}(\rho_i - t_i^2 g_{cc})

    vanishes, and by Haynsworth's inertia formula the number of eigenvalues above
    :math:`\mu` is :math:`\#\{k: D_k > \mu\} + \pi(S) - 1`, with :math:`\pi(S)` the number
    of positive eigenvalues of the two-by-two matrix
    :math:`S = \begin{pmatrix} -g_{uu} & -1 - t_i g_{uc} \\ \cdot & \rho_i - t_i^2
    g_{cc}\end{pmatrix}` (whose determinant is :math:`-f`). That count keeps a bracket
    :math:`[lo, hi]` around the largest eigenvalue; inside it, once no pole of :math:`f`
    and no other eigenvalue remains, Newton steps on :math:`1/(\mu - p)`, with :math:`p` the
    nearest pole below, converge in a few steps, and bisection takes over whenever a step
    would leave the bracket or fail to halve.
    """
    n, d = U.shape
    uu, uc, cc = U * U, U * c, c * c
    if d == 1:
        return np.maximum(scale * theta[0] + rho * uu[:, 0] + 2 * cross * uc[:, 0], 0)
    top = scale * theta[-1]
    # The rank-two part alone, R = [u, tc] C [u, tc]' with C = [[rho, 1], [1, 0]], has its
    # nonzero eigenvalues in common with the 2 x 2 matrix C G, G the Gram matrix of u and tc.
    g11, g12, g22 = uu.sum(axis=1), cross * uc.sum(axis=1), cross**2 * cc.sum()
    trace, det = rho * g11 + 2 * g12, g12**2 - g11 * g22  # det <= 0
    root = np.sqrt(np.maximum(trace**2 - 4 * det, 0))
    with np.errstate(divide="ignore", invalid="ignore"):
        largest_r = np.where(trace >= 0, (trace + root) / 2, 2 * det / (trace - root))
    largest_r = np.nan_to_num(largest_r)
    # Weyl's inequalities bracket the largest eigenvalue of D + R between largest_r plus the
    # smallest and the largest entry of D. Other lower bounds: the Rayleigh quotient at
    # e = y1 u + y2 t c, with (y1, y2) = (largest_r - g12, g11) solving (C G - largest_r) y = 0
    # so that e is R's top eigenvector; the second pole (interlacing); and zero.
    hi = (largest_r + top) * (1 + 64 * _EPS)
    y1, y2 = largest_r - g12, g11
    p, q = g11 * y1 + g12 * y2, g12 * y1 + g22 * y2  # [u, tc]' e
    diagonal = scale * (
        y1**2 * (uu @ theta) + 2 * y1 * y2 * cross * (uc @ theta) + y2**2 * cross**2 * (cc @ theta)
    )
    with np.errstate(divide="ignore", invalid="ignore"):
        quotient = (diagonal + rho * p**2 + 2 * p * q) / (y1 * p + y2 * q)
    lo = np.maximum(largest_r + scale * theta[0], np.nan_to_num(quotient))
    lo = np.maximum(lo, scale * theta[-2])
    lo = np.minimum(np.maximum(lo, 0) * (1 - 64 * _EPS), hi)
    result = (lo + hi) / 2
    # Above the largest pole at most one eigenvalue lies (interlacing), so a lower bound
    # there brackets only the largest.
    state = {
        "index": np.arange(n),
        "uu": uu,
        "uc": uc,
        "scale": scale,
        "rho": rho,
        "cross": cross,
        "lo": lo,
        "hi": hi,
        "x": lo.copy(),
        "count_lo": np.where(lo >= top, 1, 2),
        "last": np.full(n, np.inf),
    }
    active = hi - lo > 32 * _EPS * hi
    # Two work arrays serve every step (fresh n x d temporaries cost more than the arithmetic).
    work, work2 = np.empty((n, d)), np.empty((n, d))
    for _ in range(400):
        if active.sum() <= active.size / 2:  # drop the finished rows now and then
            state = {key: value[active] for key, value in state.items()}
            active = active[active]
        if active.size == 0:
            break
        s, t, rho_, lo, hi, x = (state[key] for key in ("scale", "cross", "rho", "lo", "hi", "x"))
        r, r2 = work[: x.size], work2[: x.size]
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            np.multiply.outer(s, theta, out=r)
            np.subtract(r, x[:, None], out=r)
            np.divide(1.0, r, out=r)
            np.multiply(r, r, out=r2)
            guu = np.einsum("nd,nd->n", state["uu"], r)
            guc = t * np.einsum("nd,nd->n", state["uc"], r)
            gcc = t * t * np.einsum("nd,d->n", r, cc)
            duu = np.einsum("nd,nd->n", state["uu"], r2)
            duc = t * np.einsum("nd,nd->n", state["uc"], r2)
            dcc = t * t * np.einsum("nd,d->n", r2, cc)
            f = (1 + guc) ** 2 + guu * (rho_ - gcc)
            slope = 2 * (1 + guc) * duc + duu * (rho_ - gcc) - guu * dcc
            trace = rho_ - gcc - guu
            positive = np.where(f > 0, 1, np.where(trace > 0, 2 - (f == 0), 0))
            count = d - np.searchsorted(theta, x / s, side="right") + positive - 1
        above = count >= 1
        lo = np.where(above, x, lo)
        hi = np.where(above, hi, x)
        count_lo = np.where(above, count, state["count_lo"])
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            below = np.searchsorted(theta, lo / s, side="right")
            poles_inside = np.searchsorted(theta, hi / s, side="left") - below
            pole = np.where(below > 0, s * theta[np.maximum(below - 1, 0)], -np.inf)
            gap = x - pole
            inverse_gap = 1 / gap + f / (slope * gap * gap)
            newton = np.where(np.isfinite(pole), pole + 1 / inverse_gap, x - f / slope)
            newton = np.where(np.isfinite(pole) & (inverse_gap <= 0), np.nan, newton)
            step = newton - x
            # A nudge of a few units in the last place carries the next point across the
            # root, so that the bracket closes from both sides.
            newton = newton + np.sign(step) * 4 * _EPS * np.abs(newton)
        bracketed = (count_lo == 1) & (poles_inside <= 0) & np.isfinite(newton)
        use = bracketed & (newton > lo) & (newton < hi) & (np.abs(step) <= state["last"] / 2)
        following = np.where(use, newton, (lo + hi) / 2)
        narrow = hi - lo <= 32 * _EPS * hi
        at_root = np.abs(f) <= 4 * (d + 1) * _EPS * (
            (1 + np.abs(guc)) ** 2 + np.abs(guu) * (np.abs(rho_) + np.abs(gcc))
        )
        done = active & (narrow | (bracketed & ((np.abs(step) <= 8 * _EPS * np.abs(x)) | at_root)))
        value = np.where(narrow, (lo + hi) / 2, np.where(at_root | ~np.isfinite(newton), x, newton))
        result[state["index"][done]] = value[done]
        active = active & ~done
        state.update(lo=lo, hi=hi, x=following, count_lo=count_lo, last=np.abs(following - x))
    index = state["index"][active]
    result[index] = (state["lo"][active] + state["hi"][active]) / 2
    return result


def _selected(fit: _Fit, columns: np.ndarray) -> tuple[np.ndarray, bool, np.ndarray, np.ndarray]:
    """The selected features, whether the label is selected, and for the features F:
    ``A_F = H^{-1}[:, F]`` and ``b = A_F w_F``."""
    d = fit.coef.size
    features = columns[columns < d]
    inverse_columns = fit.hessian.solve(np.eye(d)[:, features])
    return (
        features,
        bool(np.any(columns == d)),
        inverse_columns,
        inverse_columns @ fit.coef[features],
    )


def _fil_squared(X: np.ndarray, fit: _Fit, weights: np.ndarray, columns: np.ndarray) -> np.ndarray:
    r"""Largest eigenvalue of :math:`J_{i,S} J_{i,S}^\top` for every example (noise scale 1).

    With :math:`A = H^{-1}`, :math:`a_i = A x_i`, :math:`F` the selected features and
    :math:`\delta` one if the label is selected,

    .. math::

        J_{i,S} J_{i,S}^\top = (\omega_i\ell'_i)^2 A_F A_F^\top
        + \omega_i^2\ell'_i\ell''_i (b a_i^\top + a_i b^\top)
        + \left((\omega_i\ell''_i)^2 \lVert w_F\rVert^2 + \delta\omega_i^2\right) a_i a_i^\top,

    with :math:`b = A_F w_F`: a matrix shared by all examples, scaled, plus a rank-two term.
    In the eigenbasis of :math:`B = A_F A_F^\top` (for all features, that of :math:`H`
    itself) the shared part is diagonal, and :func:`_largest_eigenvalues` solves each
    example's secular equation in :math:`O(d)` per step. Memory is :math:`O(n d)`.
    """
    d = X.shape[1]
    features, label, inverse_columns, b = _selected(fit, columns)
    if features.size == d:
        # B = H^{-2}: the eigenvectors of H, the eigenvalues 1/h^2 (ascending for descending h).
        values, vectors = fit.hessian.values[::-1], fit.hessian.vectors[:, ::-1]
        theta = values**-2
        U = (X @ vectors) / values
        c = (vectors.T @ fit.coef) / values
    else:
        theta, basis = np.linalg.eigh(inverse_columns @ inverse_columns.T)
        theta = np.clip(theta, 0, None)
        U = X @ fit.hessian.solve(basis)
        c = basis.T @ b
    coef_norm2 = float(fit.coef[features] @ fit.coef[features])
    return _largest_eigenvalues(
        theta,
        U,
        c,
        scale=fit.first**2,
        rho=fit.second**2 * coef_norm2 + (weights**2 if label else 0.0),
        cross=fit.first * fit.second,
    )


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

    The model is fitted once and its Hessian factorised once; each example's
    :math:`\eta_i = \lVert J_i \rVert_2/\sigma` is the square root of the largest eigenvalue
    of its Fisher information matrix :math:`J_i^\top J_i/\sigma^2`
    (:func:`per_example_jacobians`). That eigenvalue is the largest root of a secular
    equation in the eigenbasis of the Hessian, where :math:`J_i J_i^\top` is a diagonal
    matrix plus a rank-two term, found by safeguarded Newton steps: the cost is
    :math:`O(n d^2)` for the Hessian and the change of basis, then :math:`O(d)` per example
    and step, and the memory :math:`O(n d)`.

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
    # The products are O(n d^2) with small d: a second BLAS thread only adds hand-off cost, and
    # on busy cores an idle OpenBLAS thread spins (benchmarks/bench_fisher.py: 6 ms on one
    # thread against about 100 ms with the default at 10,000 x 20). Scoped to this call.
    with threadpool_limits(limits=1, user_api="blas"):
        fit = _fit(X, y, model, l2, weights)
        return np.sqrt(_fil_squared(X, fit, weights, columns)) / sigma


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
    Jacobian. That sum is formed in closed form (the expansion in :func:`per_example_fil`,
    summed), in :math:`O(n d^2)` time and without any per-example Jacobian. Every entry left
    out is taken as known to the adversary.

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
    fit = _fit(X, y, model, l2, weights)
    features, label, inverse_columns, b = _selected(fit, columns)
    first, second, rows_X = fit.first[rows], fit.second[rows], X[rows]
    coef_norm2 = float(fit.coef[features] @ fit.coef[features])
    outer = fit.hessian.solve((first * second) @ rows_X)  # sum_i w^2 l' l'' a_i
    rho = second**2 * coef_norm2 + (weights[rows] ** 2 if label else 0.0)
    inner = fit.hessian.solve(fit.hessian.solve((rows_X * rho[:, None]).T @ rows_X).T)
    gram = (
        (first @ first) * (inverse_columns @ inverse_columns.T)
        + np.outer(b, outer)
        + np.outer(outer, b)
        + inner
    )
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
    eta = np.sqrt(_fil_squared(X, fit, weights, np.arange(X.shape[1] + 1))) / sigma
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
        r"""Classification accuracy of the model trained at each iteration.

        Parameters
        ----------
        X, y : array_like
            Examples to classify and their labels, coded as :func:`accuracy` expects for the
            model trained (:math:`\pm 1` for ``"linear"``, 0/1 for ``"logistic"``).

        Returns
        -------
        numpy.ndarray
            ``iterations + 1`` accuracies, the unweighted model's first.
        """
        return np.array([accuracy(X, y, coef, model=self.model) for coef in self.coef])


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
    start = None
    for step in range(iterations + 1):
        fit = _fit(X, y, model, l2, weights, start=start)
        start = fit.coef
        eta = np.sqrt(_fil_squared(X, fit, weights, columns))
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
