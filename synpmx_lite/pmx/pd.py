r"""Continuous PD endpoints: one population model per observation type, pooled across cohorts.

The model, for patient :math:`i` and observation :math:`j` of a PD endpoint at time
:math:`t_{ij}` since the patient's first dose of the period:

.. math::

    y_{ij} = (B + b_i)\, h(t_{ij}; \theta) + \varepsilon_{ij}, \qquad
    b_i \sim N(0, \omega^2), \quad \varepsilon_{ij} \sim N(0, \sigma^2),

a baseline :math:`B` with between-subject spread :math:`\omega` (in the endpoint's units), a
shape :math:`h` with :math:`h(0) = 1`, and an additive residual error :math:`\sigma`. Four
shapes (:data:`PD_SHAPES`), the first three each nested in the next:

* ``slope``: :math:`h = 1 + s t`, a steady relative change per hour;
* ``plateau``: :math:`h = 1 + P(1 - e^{-k t})`, a relative change approaching the plateau
  :math:`P` at the rate :math:`k`;
* ``transient``: :math:`h = 1 + P(1 - e^{-k t}) e^{-r t}`, the same change fading at the
  recovery rate :math:`r` (warfarin's prothrombin activity falls for two days and returns);
* ``nadir``: :math:`h = 1 + D\,(t/T)\,e^{1 - t/T}`, a change that reaches its depth :math:`D`
  (relative to the baseline; positive for a peak) at the time :math:`T` and fades, the limit
  of the transient shape as its onset slows and its plateau deepens together.

The shape is chosen per endpoint by Akaike's criterion, the OFV plus twice the number of
estimated parameters, among the fits that converged.

**Objective.** The random effect enters the prediction linearly and the error is additive, so
FOCE-I's Laplace approximation is exact here: each patient's observations are jointly normal,
:math:`y_i \sim N(B h_i, \sigma^2 I + \omega^2 h_i h_i^\top)`, and the OFV (minus twice the
log-likelihood less :math:`N_{obs}\log 2\pi`, on the scale of
:func:`synpmx_lite.pmx.population.fit_population`) is in closed form through the matrix
determinant lemma and the Sherman-Morrison formula. It needs three sums per patient,
:math:`h^\top h`, :math:`h^\top r` and :math:`r^\top r` with :math:`r = y - B h`.

**Method.** The objective is a sum over patients, so fits differing only in which patients
count (the influence screen's leave-one-out refits) are rows of one batch with per-patient
weights. Given the shape and the ratio :math:`\omega / \sigma`, the baseline and the residual
variance that minimise the OFV are in closed form (generalised least squares, then the mean
squared residual), so every fit, from every start, is a damped Newton iteration on the OFV
profiled over those two, on the whole batch at once: at most four parameters, its gradient
and Hessian by central differences evaluated for every row and every difference in one array
operation. Each optimum is then judged on the full OFV, its gradient and Hessian in all the
parameters. Estimates are on an internal scale: the baseline, the rates, :math:`\omega` and
:math:`\sigma` on the log scale, time divided by the endpoint's last observation time.

The seed's generator describes the PD shapes only as "a slope, or a plateau and a rate"; the
``transient`` and ``nadir`` shapes are this engine's additions, for endpoints that recover.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cached_property, partial

import numpy as np
import pandas as pd
from scipy import sparse

from .._validation import check_array, check_real
from .population import _UNDETERMINED_LOG_SE, FitWarning
from .study import StudyEvents

__all__ = ["PD_SHAPES", "PdFit", "fit_pd_endpoint", "pd_endpoints", "pd_loo_refits", "pd_response"]

#: The shapes of a PD model and their parameters (slope per hour, plateau as a fraction of the
#: baseline, rates per hour).
PD_SHAPES = {
    "slope": ("slope",),
    "plateau": ("plateau", "rate"),
    "transient": ("plateau", "rate", "recovery"),
    "nadir": ("depth", "nadir_time"),
}

_STEP = 1e-4  # central differences on the internal scale
_ITERATIONS = 60
_GRADIENT_TOLERANCE = 1e-3  # OFV units per internal unit
# The profiled iteration stops well inside the tolerance the full OFV's gradient is then judged
# by: the two are differenced at different points, and a refit stopped at the edge could fail.
_STOPPING_TOLERANCE = _GRADIENT_TOLERANCE / 10
_LOG_BOUND = 20.0
_BLOCK_ELEMENTS = 2**16  # observations times rows of one block of the objective
# The share of a patient's variance along its shape that the baseline's spread carries,
# rho h'h / (1 + rho h'h), below which (for every patient) the spread has collapsed: the data
# hold no between-subject variation to read. In the most-observed patient, the fitted spread
# of every shipped endpoint carries 88 % or more; a collapsing one stops orders of magnitude
# under 1 %.
_SPREAD_SHARE = 0.01
# A second difference carries a rounding error of about eps |OFV| / step^2; a Hessian eigenvalue
# within this many such errors of zero has no sign that can be read, so its direction is taken
# as flat (the data do not determine it), not as curved.
_CURVATURE_MARGIN = 10.0
# The internal coordinate of the first shape parameter (slope, plateau, depth): signed, not on
# the log scale, so that no relative standard error judges it (an effect near 0 is a finding).
_SIGNED_COORDINATE = 1


def pd_response(shape: str, parameters: dict, time: object) -> np.ndarray:
    """The relative shape :math:`h(t)` of a PD model (1 at time 0).

    Parameters
    ----------
    shape : str
        A key of :data:`PD_SHAPES`.
    parameters : dict
        Its parameters by name (natural scale, rates per hour).
    time : array_like
        Hours since the patient's first dose.

    Returns
    -------
    numpy.ndarray
        :math:`h` at each time.

    Examples
    --------
    >>> pd_response("plateau", {"plateau": -0.5, "rate": 1.0}, [0.0, 100.0]).round(3)
    array([1. , 0.5])
    """
    if shape not in PD_SHAPES:
        raise ValueError(f"shape must be one of {sorted(PD_SHAPES)}, got {shape!r}")
    if not isinstance(parameters, Mapping):
        raise TypeError(f"parameters must be a mapping of name to value, got {parameters!r}")
    missing = [name for name in PD_SHAPES[shape] if name not in parameters]
    if missing:
        raise ValueError(f"parameters lacks {missing} for the {shape} shape")
    parameters = {
        name: check_real(parameters[name], f"parameters[{name!r}]") for name in PD_SHAPES[shape]
    }
    if shape == "nadir" and parameters["nadir_time"] <= 0:
        raise ValueError(f"parameters['nadir_time'] must be positive, got {parameters}")
    t = check_array(time, "time")
    if shape == "slope":
        return 1 + parameters["slope"] * t
    if shape == "nadir":
        relative = t / parameters["nadir_time"]
        return 1 + parameters["depth"] * relative * np.exp(1 - relative)
    effect = parameters["plateau"] * -np.expm1(-parameters["rate"] * t)
    if shape == "transient":
        effect = effect * np.exp(-parameters["recovery"] * t)
    return 1 + effect


def _shape_batch(shape: str, z: np.ndarray, tau: np.ndarray) -> np.ndarray:
    """``h`` ``(B, N)`` at internal times ``tau`` for internal shape parameters ``z`` ``(B, m)``."""
    if shape == "slope":
        return 1 + z[:, :1] * tau
    if shape == "nadir":
        relative = tau / np.exp(np.clip(z[:, 1:2], -_LOG_BOUND, _LOG_BOUND))
        return 1 + z[:, :1] * relative * np.exp(1 - relative)
    rate = np.exp(np.clip(z[:, 1:2], -_LOG_BOUND, _LOG_BOUND))
    effect = z[:, :1] * -np.expm1(-rate * tau)
    if shape == "transient":
        effect = effect * np.exp(-np.exp(np.clip(z[:, 2:3], -_LOG_BOUND, _LOG_BOUND)) * tau)
    return 1 + effect


@dataclass(frozen=True)
class _Data:
    """One endpoint's observations, flat and patient after patient."""

    y: np.ndarray
    tau: np.ndarray
    times: np.ndarray  # the distinct values of tau, where the shape is evaluated
    time_index: np.ndarray  # each observation's place among them
    patient: np.ndarray  # position among the endpoint's patients
    starts: np.ndarray
    counts: np.ndarray
    time_scale: float

    @property
    def n_patients(self) -> int:
        return self.starts.size

    @cached_property
    def patients(self) -> sparse.csr_array:
        """``(n, N)``: which patient each observation is, to sum them patient by patient."""
        ones = np.ones(self.y.size)
        shape = (self.n_patients, self.y.size)
        return sparse.csr_array((ones, (self.patient, np.arange(self.y.size))), shape=shape)


def _per_patient(data: _Data, values: np.ndarray) -> np.ndarray:
    """Each patient's sum ``(B, n)`` of ``values`` ``(B, N)`` at their observations.

    A sparse product: several times faster than ``numpy.add.reduceat`` over a patient's few
    observations, and each sum is taken in the observations' order whatever the batch's size
    (the Newton iteration compares values computed in batches of different sizes).
    """
    return (data.patients @ values.T).T


def _shape_at(shape: str, data: _Data, z: np.ndarray) -> np.ndarray:
    """The shape ``(B, N)`` at each observation for shape parameters ``z`` ``(B, m)``,
    evaluated once at each of the design's distinct times."""
    return _shape_batch(shape, z, data.times)[:, data.time_index]


def _ofv_terms(shape: str, data: _Data, x: np.ndarray) -> np.ndarray:
    """Each patient's OFV term ``(B, n)`` at internal points ``x`` ``(B, k)``."""
    x = np.clip(x, -1e6, 1e6)
    baseline = np.exp(np.clip(x[:, :1], -_LOG_BOUND, _LOG_BOUND))
    h = _shape_at(shape, data, x[:, 1:-2])
    omega2 = np.exp(2 * np.clip(x[:, -2:-1], -_LOG_BOUND, _LOG_BOUND))
    sigma2 = np.exp(2 * np.clip(x[:, -1:], -_LOG_BOUND, _LOG_BOUND))
    r = data.y - baseline * h
    hh = _per_patient(data, h * h)
    hr = _per_patient(data, h * r)
    rr = _per_patient(data, r * r)
    ratio = omega2 / sigma2
    lift = 1 + ratio * hh
    return data.counts * np.log(sigma2) + np.log(lift) + (rr - ratio * hr**2 / lift) / sigma2


def _blocked(terms, data: _Data, x: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """``terms(x, weights)`` row by row in blocks, infinite where not finite."""
    # In blocks of rows that stay in the CPU's cache: a leave-one-out batch's differences are
    # thousands of rows, and one array of them all is memory-bound, about 7 times slower. Each
    # row's arithmetic is the same in a block as in the whole.
    rows = max(1, _BLOCK_ELEMENTS // max(data.y.size, 1))
    weights = np.broadcast_to(weights, (x.shape[0], data.n_patients))
    total = np.empty(x.shape[0])
    with np.errstate(all="ignore"):
        for start in range(0, x.shape[0], rows):
            block = slice(start, start + rows)
            total[block] = terms(x[block], weights[block])
    return np.where(np.isfinite(total), total, np.inf)


def _objective(shape: str, data: _Data, x: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """The OFV ``(B,)`` of each row of ``x`` ``(B, k)`` with its patients' ``weights``."""

    def terms(x, w):
        return (_ofv_terms(shape, data, x) * w).sum(axis=-1)

    return _blocked(terms, data, x, weights)


def _profile(shape: str, data: _Data, p: np.ndarray, w: np.ndarray) -> tuple:
    r"""The OFV ``(B,)`` at profiled points ``p`` ``(B, m + 1)`` (shape parameters, log of
    omega over sigma), with the baseline and residual variance that minimise it there.

    Given the shape and the ratio :math:`\rho = \omega^2 / \sigma^2`, the OFV is quadratic in
    the baseline and of the form :math:`N \log\sigma^2 + S / \sigma^2` in the residual
    variance: both minimise in closed form, :math:`B = a / b` with
    :math:`a = \sum_i w_i h_i^\top y_i / L_i`, :math:`b = \sum_i w_i h_i^\top h_i / L_i`,
    :math:`L_i = 1 + \rho\, h_i^\top h_i`, and :math:`\sigma^2 = S / N`.
    """
    p = np.clip(p, -1e6, 1e6)
    h = _shape_at(shape, data, p[:, :-1])
    rho = np.exp(2 * np.clip(p[:, -1:], -2 * _LOG_BOUND, 2 * _LOG_BOUND))
    hh = _per_patient(data, h * h)
    hy = _per_patient(data, h * data.y)
    lift = 1 + rho * hh
    a = (w * hy / lift).sum(axis=-1)
    b = (w * hh / lift).sum(axis=-1)
    # The residuals at that baseline, not the sums of squares expanded: those cancel to the
    # last digits of a large number, and the Newton iteration stalls on their noise.
    r = data.y - (a / b)[:, None] * h
    rr, hr = _per_patient(data, r * r), _per_patient(data, h * r)
    counts = (w * data.counts).sum(axis=-1)
    sigma2 = (w * (rr - rho * hr**2 / lift)).sum(axis=-1) / counts
    value = counts * (np.log(sigma2) + 1) + (w * np.log(lift)).sum(axis=-1)
    # The baseline is positive: where the unconstrained one is not, there is no optimum here.
    return np.where((a > 0) & (sigma2 > 0), value, np.inf), a / b, sigma2


def _profiled_objective(shape: str, data: _Data, p: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """The profiled OFV ``(B,)`` of each row of ``p`` (:func:`_profile`), in blocks as
    :func:`_objective`."""
    return _blocked(lambda q, w: _profile(shape, data, q, w)[0], data, p, weights)


def _to_profiled(x: np.ndarray) -> np.ndarray:
    """Full internal points ``(B, k)`` -> profiled ones: the shape parameters, log omega/sigma."""
    return np.column_stack([x[:, 1:-2], x[:, -2] - x[:, -1]])


def _from_profiled(p: np.ndarray, baseline: np.ndarray, sigma2: np.ndarray) -> np.ndarray:
    """Profiled points with their baseline and residual variance -> full internal points."""
    with np.errstate(all="ignore"):
        log_sigma = 0.5 * np.log(sigma2)
        return np.column_stack([np.log(baseline), p[:, :-1], p[:, -1] + log_sigma, log_sigma])


def _differences(k: int) -> np.ndarray:
    """The offsets ``(D, k)`` of the central differences: the centre, one and two steps
    either way along each axis, and the four corners of each pair of axes."""
    eye = np.eye(k)
    offsets = [np.zeros(k)]
    offsets += [s * eye[a] for reach in (1, 2) for a in range(k) for s in (reach, -reach)]
    for a in range(k):
        for b in range(a + 1, k):
            offsets += [sa * eye[a] + sb * eye[b] for sa in (1, -1) for sb in (1, -1)]
    return _STEP * np.array(offsets)


def _derivatives(objective, x: np.ndarray, weights: np.ndarray) -> tuple:
    """The value ``(B,)``, gradient ``(B, k)`` and Hessian ``(B, k, k)`` of ``objective`` at
    each row of ``x``, by central differences evaluated in one batch."""
    batch, k = x.shape
    offsets = _differences(k)
    points = (x[:, None, :] + offsets[None]).reshape(-1, k)
    f = objective(points, np.repeat(weights, len(offsets), axis=0)).reshape(batch, -1)
    # An infinite OFV (no optimum there) gives a NaN difference, which the callers read as such.
    with np.errstate(invalid="ignore"):
        return _differenced(f, k)


def _differenced(f: np.ndarray, k: int) -> tuple:
    """:func:`_derivatives` from the OFV ``f`` ``(B, D)`` at each of :func:`_differences`."""
    batch = f.shape[0]
    centre, f = f[:, 0], f[:, 1:]
    plus, minus = f[:, 0 : 2 * k : 2], f[:, 1 : 2 * k : 2]
    far_plus, far_minus = f[:, 2 * k : 4 * k : 2], f[:, 2 * k + 1 : 4 * k : 2]
    # Richardson's extrapolation of the one- and two-step differences: the gradient's error
    # falls from the step squared to its fourth power. Along a well-determined estimate the
    # OFV curves steeply, and the plain difference's error alone could exceed the tolerance.
    near, far = (plus - minus) / (2 * _STEP), (far_plus - far_minus) / (4 * _STEP)
    hessian = np.zeros((batch, k, k))
    hessian[:, np.arange(k), np.arange(k)] = (plus - 2 * centre[:, None] + minus) / _STEP**2
    corners = f[:, 4 * k :].reshape(batch, -1, 4)
    pairs = [(a, b) for a in range(k) for b in range(a + 1, k)]
    for index, (a, b) in enumerate(pairs):
        pp, pm, mp, mm = corners[:, index].T
        hessian[:, a, b] = hessian[:, b, a] = (pp - pm - mp + mm) / (4 * _STEP**2)
    return centre, (4 * near - far) / 3, hessian


def _newton(
    objective, x: np.ndarray, weights: np.ndarray, tolerance: float = _GRADIENT_TOLERANCE
) -> tuple:
    """Damped Newton on a batch of fits ``x`` ``(B, k)`` of ``objective(x, weights)``, until
    each gradient's largest element is under ``tolerance``.

    Returns the optima, their values, gradient norms and the Hessians there (see
    :func:`_at_minimum`). A fit stops moving once its gradient vanishes, so its derivatives are
    not evaluated again: each iteration differentiates only the fits still moving.
    """
    x = np.array(x, dtype=float)
    batch, k = x.shape
    damping = np.full(batch, 1e-3)
    value = objective(x, weights)
    gradient = np.zeros((batch, k))
    converged = np.zeros(batch, dtype=bool)
    hessians = np.full((batch, k, k), np.nan)
    for _ in range(_ITERATIONS):
        moving = np.flatnonzero(~converged)
        _, gradient[moving], hessian = _derivatives(objective, x[moving], weights[moving])
        finite = np.isfinite(gradient[moving]).all(axis=1) & np.isfinite(hessian).all(axis=(1, 2))
        converged[moving] = finite & (np.abs(gradient[moving]).max(axis=1) < tolerance)
        hessians[moving] = hessian
        stepping = ~converged[moving]
        if not stepping.any():
            break
        rows = moving[stepping]
        step_gradient = np.where(finite[:, None], gradient[moving], 0.0)[stepping]
        hessian = np.where(finite[:, None, None], hessian, np.eye(k))[stepping]
        diagonal = np.diagonal(hessian, axis1=1, axis2=2)
        # Levenberg-Marquardt: a step on H + lambda (|diag H| + 1) I, lambda adapted per row.
        improved = np.zeros(rows.size, dtype=bool)
        for _ in range(12):
            scaled = hessian + damping[rows, None, None] * (
                np.abs(diagonal)[:, :, None] * np.eye(k) + np.eye(k)
            )
            try:
                step = -np.linalg.solve(scaled, step_gradient[..., None])[..., 0]
            except np.linalg.LinAlgError:
                step = -step_gradient
            step = step / np.maximum(np.abs(step).max(axis=1, keepdims=True), 1.0)
            trial = x[rows] + step
            trial_value = objective(trial, weights[rows])
            better = (trial_value <= value[rows]) & ~improved
            x[rows] = np.where(better[:, None], trial, x[rows])
            value[rows] = np.where(better, trial_value, value[rows])
            damping[rows] = np.where(better, np.maximum(damping[rows] / 5, 1e-9), damping[rows])
            improved |= better
            if improved.all():
                break
            damping[rows] = np.where(~improved, damping[rows] * 10, damping[rows])
    return x, value, np.abs(gradient).max(axis=1), hessians


def _fit_batch(shape: str, data: _Data, starts: np.ndarray, weights: np.ndarray) -> tuple:
    """Fits ``(B, k)`` from internal starts: Newton on the OFV profiled over the baseline and
    the residual variance (two coordinates fewer), then the full OFV's gradient norms and
    Hessians at the optima, by which every fit is judged.

    Returns the optima on the full internal scale, their OFVs, gradient norms and Hessians.
    """
    objective = partial(_profiled_objective, shape, data)
    profiled = _newton(objective, _to_profiled(starts), weights, _STOPPING_TOLERANCE)[0]
    with np.errstate(all="ignore"):
        profiled_value, baseline, sigma2 = _profile(shape, data, profiled, weights)
    # Where no positive baseline minimises the OFV (a start the iteration could not leave), the
    # start itself is reported, with an infinite OFV: it is never chosen, nor trusted.
    optimum = np.isfinite(profiled_value)
    x = np.where(optimum[:, None], _from_profiled(profiled, baseline, sigma2), starts)
    value, gradient, hessian = _derivatives(partial(_objective, shape, data), x, weights)
    return x, np.where(optimum, value, np.inf), np.abs(gradient).max(axis=1), hessian


def _at_minimum(value: np.ndarray, hessian: np.ndarray) -> np.ndarray:
    """Whether each Hessian ``(B, k, k)`` is positive definite beyond its rounding error.

    A point where the gradient vanishes but the OFV does not curve up in every direction is a
    saddle, or lies along a direction the data do not determine: not a minimum.
    """
    finite = np.isfinite(hessian).all(axis=(1, 2))
    safe = np.where(finite[:, None, None], hessian, np.eye(hessian.shape[-1]))
    rounding = np.finfo(float).eps * np.maximum(np.abs(value), 1.0) / _STEP**2
    return finite & (np.linalg.eigvalsh(safe)[:, 0] > _CURVATURE_MARGIN * rounding)


def _undetermined(hessian: np.ndarray) -> np.ndarray:
    """Whether the data leave a log-scale estimate of each fit ``(B,)`` at a minimum
    undetermined.

    Its standard error, from the inverse observed information (:math:`2H^{-1}` on the OFV's
    scale), exceeds the bound of the PK fit's diagnostics: a 95 % interval wider than a factor
    100 either way (RSE above 235 %). Read only at a minimum, where the Hessian inverts.
    """
    se = np.sqrt(np.diagonal(2 * np.linalg.inv(hessian), axis1=1, axis2=2))
    return (np.delete(se, _SIGNED_COORDINATE, axis=1) > _UNDETERMINED_LOG_SE).any(axis=1)


def _collapsed(shape: str, data: _Data, x: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """Whether the baseline's spread of each fit ``(B,)`` carries under :data:`_SPREAD_SHARE`
    of every counted patient's variance along its shape (``weights`` above 0)."""
    h = _shape_at(shape, data, x[:, 1:-2])
    rho = np.exp(2 * np.clip(x[:, -2:-1] - x[:, -1:], -2 * _LOG_BOUND, 2 * _LOG_BOUND))
    carried = rho * _per_patient(data, h * h)
    share = np.where(weights > 0, carried / (1 + carried), 0.0).max(axis=1)
    return ~(share >= _SPREAD_SHARE)


def _verdicts(shape: str, data: _Data, fitted: tuple, weights: np.ndarray) -> np.ndarray:
    """Why each fit ``(B,)`` of :func:`_fit_batch` is not to be trusted; ``""`` where it is.

    A fit is trusted where its OFV is finite, its gradient vanishes, every log-scale estimate
    lies inside the bounds the objective evaluates (beyond them it reads a clipped point, not
    the one reported), the Hessian is positive definite beyond its rounding error
    (:func:`_at_minimum`), the spread has not collapsed (:func:`_collapsed`) and no log-scale
    estimate is undetermined (:func:`_undetermined`). The first reason that holds is given.
    """
    x, value, gradient, hessian = fitted
    with np.errstate(all="ignore"):
        outside = (np.abs(np.delete(x, _SIGNED_COORDINATE, axis=1)) >= _LOG_BOUND).any(axis=1)
        stopped = ~(gradient < _GRADIENT_TOLERANCE)
        failures = [
            (~np.isfinite(value), "no positive baseline minimises the OFV there"),
            (stopped, "the optimizer stopped before the gradient vanished"),
            (outside, "an estimate lies beyond the objective's bounds"),
            (~_at_minimum(value, hessian), "the OFV does not curve up in every direction there "
             "(a saddle, or a direction the data do not determine)"),
            (_collapsed(shape, data, x, weights), "the baseline's spread between subjects "
             "collapsed"),
        ]  # fmt: skip
    undetermined = np.zeros(len(x), dtype=bool)
    judged = ~np.any([failed for failed, _ in failures], axis=0)
    if judged.any():  # the Hessian inverts only at a minimum
        undetermined[judged] = _undetermined(hessian[judged])
    failures.append((undetermined, "the data do not determine an estimate (RSE above 235 %)"))
    verdicts = np.full(len(x), "", dtype=object)
    for failed, reason in reversed(failures):
        verdicts[failed] = reason
    return verdicts


def _trusted(shape: str, data: _Data, fitted: tuple, weights: np.ndarray) -> np.ndarray:
    """Whether each fit ``(B,)`` of :func:`_fit_batch` is to be trusted (:func:`_verdicts`)."""
    return _verdicts(shape, data, fitted, weights) == ""


@dataclass(frozen=True)
class PdFit:
    """A fitted population model of one continuous PD endpoint.

    Attributes
    ----------
    endpoint : str
        The observation type.
    shape : str
        The chosen shape (a key of :data:`PD_SHAPES`).
    baseline, baseline_sd : float
        Typical baseline and its between-subject SD (endpoint units).
    parameters : dict
        The shape's parameters (natural scale, rates per hour).
    residual : float
        Additive residual SD.
    ofv : float
        Objective function value (-2 log-likelihood less :math:`N_{obs}\\log 2\\pi`).
    converged : bool
        Whether the gradient vanished at the optimum, the Hessian there is positive definite
        beyond its rounding error (a minimum, not a saddle or a direction the data do not
        determine), every estimate on the log scale (all but the slope, plateau or depth) has
        a standard error under the PK fit's bound (RSE below 235 %) and lies inside the
        objective's bounds, and the baseline's spread carries at least 1 % of some patient's
        variance (it has not collapsed).
    n_patients, n_observations : int
        Patients and observations fitted.
    candidates : pandas.DataFrame
        Every shape tried: its OFV, parameters counted, AIC and convergence.
    ids : numpy.ndarray
        Source IDs of the fitted patients, in order (stays in the secure environment).
    x : numpy.ndarray
        The optimum on the internal scale (log baseline, shape, log spread, log residual),
        where the leave-one-out refits start.
    data : object
        The endpoint's observations as the objective reads them (for the refits).
    """

    endpoint: str
    shape: str
    baseline: float
    baseline_sd: float
    parameters: dict
    residual: float
    ofv: float
    converged: bool
    n_patients: int
    n_observations: int
    candidates: pd.DataFrame
    ids: np.ndarray
    x: np.ndarray
    data: object

    def estimates(self) -> dict:
        """Every released estimate by name: baseline, baseline_sd, shape parameters, residual."""
        return {
            "baseline": self.baseline,
            "baseline_sd": self.baseline_sd,
            **self.parameters,
            "residual": self.residual,
        }

    def __str__(self) -> str:
        shape = ", ".join(f"{k} {v:.3g}" for k, v in self.parameters.items())
        return (
            f"PD {self.endpoint}: {self.shape} shape; baseline {self.baseline:.3g} "
            f"(between-subject SD {self.baseline_sd:.3g}), {shape}, residual SD "
            f"{self.residual:.3g}; OFV {self.ofv:.2f} "
            f"({'converged' if self.converged else 'NOT converged'})"
        )


def pd_endpoints(study: StudyEvents) -> list[str]:
    """The continuous PD endpoints of a study: every endpoint but the PK and graded ones."""
    endpoints = sorted(map(str, study.observations["endpoint"].unique()))
    return [e for e in endpoints if e != study.pk_endpoint and e not in study.roles.graded]


def _endpoint_data(study: StudyEvents, endpoint: str) -> tuple[_Data, np.ndarray]:
    rows = study.observations[study.observations["endpoint"].astype(str) == endpoint]
    first = study.doses.groupby(["patient", "period"])["time"].min()
    key = pd.MultiIndex.from_arrays([rows["patient"], rows["period"]])
    since = rows["time"].to_numpy(float) - first.reindex(key).to_numpy()
    rows = rows.assign(since=since).sort_values(["patient", "since"], kind="stable")
    patients, position = np.unique(rows["patient"].to_numpy(), return_inverse=True)
    scale = float(rows["since"].max()) or 1.0
    counts = np.bincount(position)
    tau = rows["since"].to_numpy(float) / scale
    times, time_index = np.unique(tau, return_inverse=True)
    data = _Data(
        y=rows["dv"].to_numpy(float),
        tau=tau,
        times=times,
        time_index=time_index,
        patient=position,
        starts=np.r_[0, np.cumsum(counts)[:-1]],
        counts=counts.astype(float),
        time_scale=scale,
    )
    return data, patients


def _natural(shape: str, x: np.ndarray, scale: float) -> dict:
    """Internal point ``(..., k)`` -> natural estimates by name (arrays over the batch)."""
    names = PD_SHAPES[shape]
    out = {"baseline": np.exp(x[..., 0]), "baseline_sd": np.exp(x[..., -2])}
    z = x[..., 1:-2]
    if shape == "slope":
        out["slope"] = z[..., 0] / scale
    elif shape == "nadir":
        out["depth"] = z[..., 0]
        out["nadir_time"] = np.exp(z[..., 1]) * scale
    else:
        out["plateau"] = z[..., 0]
        out["rate"] = np.exp(z[..., 1]) / scale
        if shape == "transient":
            out["recovery"] = np.exp(z[..., 2]) / scale
    out["residual"] = np.exp(x[..., -1])
    return {k: out[k] for k in ("baseline", "baseline_sd", *names, "residual")}


def _starts(shape: str, data: _Data) -> np.ndarray:
    first = data.y[data.starts]
    baseline = float(np.median(first)) if np.median(first) > 0 else float(np.abs(data.y).mean())
    spread = max(float(np.std(first)), 0.05 * baseline)
    relative = data.y / baseline - 1
    noise = max(float(np.std(data.y)) * 0.3, 1e-3 * baseline)
    head = [np.log(baseline)]
    tail = [np.log(spread), np.log(noise)]
    starts = []
    if shape == "slope":
        slope = float(relative @ data.tau / max(data.tau @ data.tau, 1e-12))
        starts.append([*head, slope, *tail])
    elif shape == "nadir":
        for time in (0.01, 0.03, 0.1, 0.3):
            g = data.tau / time * np.exp(1 - data.tau / time)
            depth = float(relative @ g / max(g @ g, 1e-12))
            starts.append([*head, depth, np.log(time), *tail])
    else:
        recoveries = [None] if shape == "plateau" else [0.3, 1.0, 3.0]
        for rate in (1.0, 5.0, 20.0, 80.0):
            for recovery in recoveries:
                g = -np.expm1(-rate * data.tau)
                if recovery is not None:
                    g = g * np.exp(-recovery * data.tau)
                plateau = float(relative @ g / max(g @ g, 1e-12))
                z = [plateau, np.log(rate)] + ([] if recovery is None else [np.log(recovery)])
                starts.append([*head, *z, *tail])
    return np.array(starts)


def fit_pd_endpoint(
    study: StudyEvents, endpoint: str, *, shapes: tuple[str, ...] | None = None
) -> PdFit:
    """Fit the population model of one continuous PD endpoint, choosing its shape by AIC.

    Parameters
    ----------
    study : StudyEvents
        The study (patients without this endpoint's observations are not fitted).
    endpoint : str
        The endpoint (a value of the study's ``dvid`` column).
    shapes : tuple of str, optional
        The shapes to choose among (keys of :data:`PD_SHAPES`); default all.

    Returns
    -------
    PdFit
        The fit of the shape with the lowest AIC among those that converged (the lowest AIC
        of all where none did).

    Raises
    ------
    ValueError
        An unknown endpoint or shape, or fewer than three patients with observations.

    Warns
    -----
    FitWarning
        When the chosen fit did not converge (``converged`` False).
    """
    if not isinstance(study, StudyEvents):
        raise TypeError(f"study must be a StudyEvents, got {type(study).__name__}")
    if endpoint not in pd_endpoints(study):
        raise ValueError(f"endpoint must be one of the PD endpoints {pd_endpoints(study)}")
    shapes = tuple(PD_SHAPES) if shapes is None else tuple(shapes)
    unknown = [s for s in shapes if s not in PD_SHAPES]
    if not shapes or unknown:
        raise ValueError(f"shapes must be among {sorted(PD_SHAPES)}, got {shapes!r}")
    data, patients = _endpoint_data(study, endpoint)
    if data.n_patients < 3:
        raise ValueError(f"endpoint {endpoint!r} has {data.n_patients} patients; at least 3")
    fits = {shape: _best_start(shape, data) for shape in shapes}
    candidates = pd.DataFrame(
        [
            {
                "shape": shape,
                "parameters": x.size,
                "ofv": value,
                "aic": value + 2 * x.size,
                "converged": verdict == "",
            }
            for shape, (x, value, verdict) in fits.items()
        ]
    )
    pool = candidates[candidates["converged"]] if candidates["converged"].any() else candidates
    shape = str(pool.loc[pool["aic"].idxmin(), "shape"])
    x, ofv, verdict = fits[shape]
    converged = verdict == ""
    estimates = {k: float(v) for k, v in _natural(shape, x, data.time_scale).items()}
    if not converged:
        warnings.warn(
            f"PD model of {endpoint!r} ({shape} shape) is not to be trusted: {verdict}",
            FitWarning,
            stacklevel=2,
        )
    return PdFit(
        endpoint=endpoint,
        shape=shape,
        baseline=estimates["baseline"],
        baseline_sd=estimates["baseline_sd"],
        parameters={name: estimates[name] for name in PD_SHAPES[shape]},
        residual=estimates["residual"],
        ofv=ofv,
        converged=converged,
        n_patients=data.n_patients,
        n_observations=data.y.size,
        candidates=candidates,
        ids=study.ids[patients],
        x=x,
        data=data,
    )


def _best_start(shape: str, data: _Data) -> tuple[np.ndarray, float, str]:
    """The fit of ``shape`` from its best start (:func:`_starts`): the internal estimates, the
    OFV and the verdict (empty where the fit can be trusted)."""
    starts = _starts(shape, data)
    weights = np.ones((len(starts), data.n_patients))
    fitted = _fit_batch(shape, data, starts, weights)
    x, value = fitted[:2]
    best = int(np.argmin(value))
    return x[best], float(value[best]), _verdicts(shape, data, fitted, weights)[best]


def pd_loo_refits(fit: PdFit) -> pd.DataFrame:
    """Refit a PD model with each patient left out, all patients in one batch.

    Parameters
    ----------
    fit : PdFit
        The fit on every patient.

    Returns
    -------
    pandas.DataFrame
        One row per patient left out (index: source ID), one column per estimate
        (:meth:`PdFit.estimates`), natural scale; a column ``converged``, judged as
        :attr:`PdFit.converged` is.
    """
    if not isinstance(fit, PdFit):
        raise TypeError(f"fit must be a PdFit, got {type(fit).__name__}")
    n = fit.n_patients
    weights = 1.0 - np.eye(n)
    fitted = _fit_batch(fit.shape, fit.data, np.repeat(fit.x[None], n, 0), weights)
    table = pd.DataFrame(
        _natural(fit.shape, fitted[0], fit.data.time_scale), index=pd.Index(fit.ids, name="id")
    )
    # A refit is judged as the fit is: its moves are read only where it can be trusted.
    table["converged"] = _trusted(fit.shape, fit.data, fitted, weights)
    return table
