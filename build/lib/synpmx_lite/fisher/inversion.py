r"""Attribute inversion against a model released with Gaussian noise, and what FIL predicts.

An attacker knows one training example's features except one nominal attribute, its label, and
how common each value of the attribute is among the training examples (the prior), and sees the
model :math:`w' = w^* + N(0, \sigma^2 I)` fitted by :mod:`synpmx_lite.fisher.leakage`. Two attackers
guess the attribute from the release:

* the **white-box** attacker of the FIL threat model also knows every other training record
  and how the model was trained, retrains with each candidate value in place and picks the
  candidate whose model lies nearest the release;
* the **black-box** attacker of Fredrikson et al. (2014) sees only the model's predictions and
  its error on the training data, and picks the value whose prediction best agrees with the
  label, weighted by the prior.

The attribute's FIL :math:`\eta` predicts, to first order in the noise, both the white-box
attacker's accuracy and the best accuracy any attacker with the release and the prior can
reach. :func:`inversion_sweep` follows both attacks as the regularisation and the noise vary.

References
----------
Hannun, Guo and van der Maaten (2021), "Measuring data leakage in machine-learning models with
Fisher information", Proceedings of UAI 2021, PMLR 161, 760-770, section 6.

Fredrikson, Lantz, Jha, Lin, Page and Ristenpart (2014), "Privacy in pharmacogenetics: an
end-to-end case study of personalized warfarin dosing", USENIX Security 2014, 17-32.
"""

from __future__ import annotations

import numbers
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import stats

from .._validation import check_array, check_count, check_rng
from .leakage import (
    _check_labels,
    _check_problem,
    _check_sigma,
    _fil_squared,
    _fit,
    _loss_terms,
)

__all__ = ["AttributeInversion", "attribute_inversion", "inversion_sweep"]

# Entries of the (releases x examples x candidates) arrays the attacks hold at once.
_ATTACK_BUDGET = 4_000_000


def _check_attribute(attribute: object, d: int) -> int:
    if isinstance(attribute, bool) or not isinstance(attribute, numbers.Integral):
        raise TypeError(f"attribute must be an integer column index, got {attribute!r}")
    if not 0 <= attribute < d:
        raise ValueError(f"attribute must index one of the {d} columns of X")
    return int(attribute)


@dataclass(frozen=True)
class AttributeInversion:
    r"""Results of :func:`attribute_inversion`, one entry per training example.

    Attributes
    ----------
    truth : numpy.ndarray
        The example's true value of the attacked attribute.
    eta : numpy.ndarray
        FIL of that attribute of the example (all else known).
    whitebox : numpy.ndarray
        Share of the simulated releases in which the white-box attack recovers the value.
    blackbox : numpy.ndarray
        The same for the black-box attack, on the same releases.
    baseline : numpy.ndarray
        1.0 where the baseline guess (the attribute's most common value) is right, else 0.0.
    predicted : numpy.ndarray
        The white-box attack's accuracy that FIL predicts, to first order in the noise: the
        chance that the release falls nearer the true value's model than any other
        candidate's, with the candidates' models :math:`\sigma\eta\,|v - v'|` apart.
    predicted_best : numpy.ndarray
        The accuracy FIL predicts, to the same order, for the best guess from the release and
        the prior (the Bayes rule): to that order no attack that sees only the release,
        white-box or black-box, beats it on average over the prior. (The black-box attack's
        training-error statistic also depends on the hidden value, through one example's term
        among ``n``.)
    values : numpy.ndarray
        The candidate values the attacker chooses between.
    """

    truth: np.ndarray
    eta: np.ndarray
    whitebox: np.ndarray
    blackbox: np.ndarray
    baseline: np.ndarray
    predicted: np.ndarray
    predicted_best: np.ndarray
    values: np.ndarray

    def to_frame(self) -> pd.DataFrame:
        """The results as a table.

        Returns
        -------
        pandas.DataFrame
            One row per training example: ``truth``, ``eta``, ``whitebox``, ``blackbox``,
            ``baseline``, ``predicted`` and ``predicted_best``.
        """
        return pd.DataFrame(
            {
                "truth": self.truth,
                "eta": self.eta,
                "whitebox": self.whitebox,
                "blackbox": self.blackbox,
                "baseline": self.baseline,
                "predicted": self.predicted,
                "predicted_best": self.predicted_best,
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


@dataclass(frozen=True)
class _Target:
    """What both attacks need about one attacked attribute of one trained model."""

    X: np.ndarray
    y: np.ndarray
    model: str
    attribute: int
    values: np.ndarray
    truth_index: np.ndarray
    log_prior: np.ndarray
    coef: np.ndarray
    offsets: np.ndarray  # (n, k, d): each candidate's model less the trained one
    column_norm: np.ndarray  # ||J_col|| of each example: its attribute's FIL at sigma = 1


def _target(
    X: np.ndarray,
    y: np.ndarray,
    model: str,
    l2: float,
    weights: np.ndarray,
    attribute: int,
    values: np.ndarray,
) -> _Target:
    fit = _fit(X, y, model, l2, weights)
    n, d = X.shape
    # Each candidate holds n margins and a d x d Hessian while it is retrained.
    chunk = max(1, _ATTACK_BUDGET // (values.size * max(n, d * d)))
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
    )
    truth = X[:, attribute]
    counts = np.array([np.sum(truth == v) for v in values])
    with np.errstate(divide="ignore"):
        log_prior = np.log(counts / n)
    return _Target(
        X=X,
        y=y,
        model=model,
        attribute=attribute,
        values=values,
        truth_index=np.searchsorted(values, truth),
        log_prior=log_prior,
        coef=fit.coef,
        offsets=offsets,
        column_norm=np.sqrt(_fil_squared(X, fit, weights, np.array([attribute]))),
    )


def _guesses(target: _Target, noise: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Indices of the values guessed by the white-box and the black-box attack: ``(R, n)`` each,
    for the releases ``coef + noise[r]``."""
    X, y, values, attribute = target.X, target.y, target.values, target.attribute
    n, d = X.shape
    # White box: the candidate model nearest the release. ||w' - w_c||^2 = ||noise||^2
    # - 2 noise . offset_c + ||offset_c||^2, and the first term is the same for every c.
    distance = np.sum(target.offsets**2, axis=2)[None] - 2 * np.einsum(
        "rd,nkd->rnk", noise, target.offsets
    )
    whitebox = np.argmin(distance, axis=2)
    # Black box (Fredrikson et al. 2014): the released model's predictions for the example
    # with each candidate value in place, scored by the model's performance on the training
    # data, plus the log prior of the value.
    released = target.coef + noise
    margin = released @ X.T  # (R, n)
    candidate_margin = margin[:, :, None] + released[:, attribute, None, None] * (
        values[None, None, :] - X[None, :, attribute, None]
    )
    if target.model == "linear":
        spread = np.sum((margin - y) ** 2, axis=1) / max(n - d, 1)
        score = -((candidate_margin - y[None, :, None]) ** 2) / (2 * spread[:, None, None])
    else:
        predicted = (margin > 0).astype(int)
        labels = y.astype(int)
        # Confusion counts of each release, one added to each cell so that a combination
        # never seen is unlikely rather than impossible; P(label | prediction).
        counts = np.ones((noise.shape[0], 2, 2))
        for label in (0, 1):
            for guess in (0, 1):
                counts[:, label, guess] += np.sum((labels == label) & (predicted == guess), axis=1)
        conditional = counts / counts.sum(axis=1, keepdims=True)
        guess = (candidate_margin > 0).astype(int)
        score = np.log(
            conditional[np.arange(noise.shape[0])[:, None, None], labels[None, :, None], guess]
        )
    blackbox = np.argmax(score + target.log_prior, axis=2)
    return whitebox, blackbox


def _attack_accuracy(target: _Target, noise: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per-example share of the releases in which each attack is right."""
    n, k = target.offsets.shape[:2]
    chunk = max(1, _ATTACK_BUDGET // (n * k))
    right_white, right_black = np.zeros(n), np.zeros(n)
    for start in range(0, noise.shape[0], chunk):
        whitebox, blackbox = _guesses(target, noise[start : start + chunk])
        right_white += np.sum(whitebox == target.truth_index, axis=0)
        right_black += np.sum(blackbox == target.truth_index, axis=0)
    return right_white / noise.shape[0], right_black / noise.shape[0]


def _line_accuracy(
    eta: np.ndarray, truth_index: np.ndarray, values: np.ndarray, log_prior: np.ndarray
) -> np.ndarray:
    r"""Accuracy of the Bayes rule among candidates whose models lie on a line.

    To first order the candidate models are :math:`w^* + J_{\cdot j}(v - x_{ij})`, so in
    units of the noise the release's projection on that line is :math:`T \sim N(\eta v, 1)`
    under value :math:`v`, and the rule picks the value maximising
    :math:`\log p_v + \eta v T - \eta^2 v^2/2`. Value :math:`j` wins on an interval of
    :math:`T` bounded by its crossing points with the values below and above it.
    """
    j = truth_index
    vj, pj = values[j][:, None], log_prior[j][:, None]
    e = eta[:, None]
    with np.errstate(divide="ignore", invalid="ignore"):
        crossing = (log_prior[None, :] - pj) / (e * (vj - values[None, :])) + e * (
            vj + values[None, :]
        ) / 2
    lower = np.max(np.where(values[None, :] < vj, crossing, -np.inf), axis=1)
    upper = np.min(np.where(values[None, :] > vj, crossing, np.inf), axis=1)
    centre = eta * values[j]
    return np.clip(stats.norm.cdf(upper - centre) - stats.norm.cdf(lower - centre), 0, 1)


def _prepare_attack(
    X: object,
    y: object,
    attribute: object,
    model: str,
    l2: object,
    weights: object,
    values: object,
) -> tuple[np.ndarray, np.ndarray, str, float, np.ndarray, int, np.ndarray]:
    X, y, model, l2, weights = _check_problem(X, y, model, l2, weights)
    attribute = _check_attribute(attribute, X.shape[1])
    truth = X[:, attribute]
    values = np.unique(truth) if values is None else np.unique(check_array(values, "values"))
    if values.size < 2:
        raise ValueError("values must hold at least two distinct candidates")
    if not np.all(np.isin(truth, values)):
        raise ValueError("values must include every example's true value of the attribute")
    return X, y, model, l2, weights, attribute, values


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
    r"""The white-box and black-box attribute-inversion attacks on a model released with noise.

    The model is released as :math:`w' = w^* + N(0, \sigma^2 I)`. Both attackers know one
    example's features except ``attribute``, its label, and the attribute's distribution
    in the training data (the prior); they guess between the candidate ``values``.

    * The **white-box** attacker (the FIL threat model) also knows every other training
      record, the training procedure (model, ``l2``, ``weights``) and :math:`w'`. For each
      candidate it retrains the model with that value in place and guesses the value whose
      model lies nearest :math:`w'`.
    * The **black-box** attacker of Fredrikson et al. (2014) sees only the released model's
      predictions and its performance on the training data. It scores each candidate by how
      well the prediction for the example with that value in place agrees with the label,
      plus the log prior: for linear regression the log density of the label under a normal
      centred on the prediction with the training residual variance (residual sum of squares
      over :math:`n - d`); for logistic regression the log of the training share of the
      example's label among examples given the same predicted class (one added to each
      count). It guesses the best-scoring value.

    Every example is attacked in each of ``releases`` independent releases, the same for
    both attacks; the baseline guesses the attribute's most common value.

    Parameters
    ----------
    X, y, model, l2, weights
        The training problem, as in :func:`~synpmx_lite.fisher.leakage.fit_model`.
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
        Per-example truth, attribute FIL, the two attacks' accuracy, the baseline and the
        accuracies FIL predicts.

    References
    ----------
    Hannun, Guo and van der Maaten (2021), UAI, section 6; Fredrikson et al. (2014).
    """
    X, y, model, l2, weights, attribute, values = _prepare_attack(
        X, y, attribute, model, l2, weights, values
    )
    sigma = _check_sigma(sigma)
    releases = check_count(releases, "releases")
    rng = check_rng(rng)
    target = _target(X, y, model, l2, weights, attribute, values)
    noise = sigma * rng.standard_normal((releases, X.shape[1]))
    whitebox, blackbox = _attack_accuracy(target, noise)
    eta = target.column_norm / sigma
    mode = np.argmax(target.log_prior)
    return AttributeInversion(
        truth=X[:, attribute],
        eta=eta,
        whitebox=whitebox,
        blackbox=blackbox,
        baseline=(target.truth_index == mode).astype(float),
        predicted=_line_accuracy(eta, target.truth_index, values, np.zeros(values.size)),
        predicted_best=_line_accuracy(eta, target.truth_index, values, target.log_prior),
        values=values,
    )


def inversion_sweep(
    X: object,
    y: object,
    attribute: int,
    *,
    X_test: object,
    y_test: object,
    l2_values: object,
    mean_etas: object,
    model: str = "linear",
    weights: object = None,
    values: object = None,
    releases: int = 200,
    rng: object = None,
) -> pd.DataFrame:
    r"""Test error and both attacks' accuracy as regularisation and noise vary.

    For each :math:`\lambda` in ``l2_values`` the model is trained once; for each target
    mean attribute FIL :math:`\bar\eta` in ``mean_etas`` the noise scale is set to
    :math:`\sigma = \overline{\lVert J_{\cdot j}\rVert}/\bar\eta` (FIL is proportional to
    :math:`1/\sigma`), and the model is released ``releases`` times and attacked as in
    :func:`attribute_inversion`. The same standard normal draws, scaled by each
    :math:`\sigma`, serve every setting, so that the curves differ by the setting and not
    by the draws. This is the experiment of Hannun, Guo and van der Maaten (2021,
    figure 6).

    Parameters
    ----------
    X, y, attribute, model, weights, values
        The training problem and the attack, as in :func:`attribute_inversion`.
    X_test, y_test : array_like
        Held-out examples on which the released models' error is measured.
    l2_values : array_like
        Regularisation strengths, each :math:`\ge 0`.
    mean_etas : array_like
        Target mean attribute FIL values, each > 0.
    releases : int, default 200
        Noisy releases per setting.
    rng : numpy.random.Generator, int or None
        Source of the noise.

    Returns
    -------
    pandas.DataFrame
        One row per (``l2``, target): ``l2``, ``sigma``, ``eta_mean``, ``test_error`` (mean
        squared error for ``"linear"``, misclassification rate for ``"logistic"``, averaged
        over releases), ``whitebox``, ``blackbox``, ``baseline``, ``predicted`` and
        ``predicted_best`` (means over examples and releases).
    """
    X, y, model, _, weights, attribute, values = _prepare_attack(
        X, y, attribute, model, 0.0, weights, values
    )
    X_test = check_array(X_test, "X_test", ndim=2)
    y_test = _check_labels(y_test, model, "y_test")
    if X_test.shape[1] != X.shape[1] or y_test.size != X_test.shape[0]:
        raise ValueError("X_test and y_test must match each other and the columns of X")
    l2_values = np.atleast_1d(check_array(l2_values, "l2_values"))
    mean_etas = np.atleast_1d(check_array(mean_etas, "mean_etas"))
    if l2_values.ndim != 1 or np.any(l2_values < 0):
        raise ValueError("l2_values must be a 1-D array of values >= 0")
    if mean_etas.ndim != 1 or np.any(mean_etas <= 0):
        raise ValueError("mean_etas must be a 1-D array of positive values")
    releases = check_count(releases, "releases")
    standard = check_rng(rng).standard_normal((releases, X.shape[1]))
    rows = []
    for l2 in l2_values:
        target = _target(X, y, model, float(l2), weights, attribute, values)
        mode = np.argmax(target.log_prior)
        for mean_eta in mean_etas:
            sigma = target.column_norm.mean() / mean_eta
            released = target.coef + sigma * standard
            margin = released @ X_test.T
            if model == "linear":
                test_error = np.mean((margin - y_test) ** 2)
            else:
                test_error = np.mean((margin > 0) != (y_test == 1))
            whitebox, blackbox = _attack_accuracy(target, sigma * standard)
            eta = target.column_norm / sigma
            rows.append(
                {
                    "l2": float(l2),
                    "sigma": sigma,
                    "eta_mean": eta.mean(),
                    "test_error": test_error,
                    "whitebox": whitebox.mean(),
                    "blackbox": blackbox.mean(),
                    "baseline": np.mean(target.truth_index == mode),
                    "predicted": _line_accuracy(
                        eta, target.truth_index, values, np.zeros(values.size)
                    ).mean(),
                    "predicted_best": _line_accuracy(
                        eta, target.truth_index, values, target.log_prior
                    ).mean(),
                }
            )
    return pd.DataFrame(rows)
