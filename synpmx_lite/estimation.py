r"""Population PK estimation: a nonlinear mixed-effects model fitted by FOCE with interaction.

The model, for patient :math:`i` and observation :math:`j`:

.. math::

    \theta_{ik} = \theta_k e^{\eta_{ik}}, \quad \eta_i \sim N(0, \Omega),\ \Omega
    \text{ diagonal}, \qquad y_{ij} = f(t_{ij}; \theta_i) + \varepsilon_{ij},\quad
    \varepsilon_{ij} \sim N(0, V_{ij}),

with :math:`f` a closed-form model of :mod:`synpmx_lite.pk` and residual variance
:math:`V = a^2` (additive), :math:`b^2 f^2` (proportional) or :math:`a^2 + b^2 f^2` (combined).

**Method: FOCE with interaction (FOCE-I).** Each patient's marginal likelihood is approximated
by Laplace's method around the mode :math:`\hat\eta_i` of the joint density, with the Hessian
replaced by its first-order (Gauss-Newton, expected-information) form
:math:`H_i = \sum_j \left(g_{ij} g_{ij}^\top / V_{ij} + \tfrac12 \nabla V_{ij} \nabla
V_{ij}^\top / V_{ij}^2\right) + \Omega^{-1}`, :math:`g_{ij} = \partial f_{ij}/\partial \eta_i`,
and :math:`V_{ij}` evaluated at :math:`\hat\eta_i` (the interaction). This is the objective
NONMEM's FOCE-I minimizes (Wang 2007). The objective function value (OFV) is

.. math::

    \sum_i \Big[\sum_j \big(\log V_{ij} + (y_{ij}-f_{ij})^2/V_{ij}\big)
    + \hat\eta_i^\top\Omega^{-1}\hat\eta_i + \log|\Omega| + \log|H_i|\Big],

minus twice the log-likelihood less :math:`N_{obs} \log 2\pi`, as NONMEM reports it.

* Inner problem: the modes :math:`\hat\eta_i` of all patients at once, by Gauss-Newton steps
  with step halving, the Jacobian :math:`g` by forward differences, vectorized over patients.
* Outer problem: typical values (log scale), between-subject SDs (log scale) and residual
  errors (log scale) by L-BFGS-B (:func:`scipy.optimize.minimize`). Its gradient is taken by
  forward differences: the inner problems at all perturbed points are solved together as one
  batch, started from the modes at the base point (which start from the best point's).
* Starting values: a naive pooled fit (all :math:`\eta = 0`) by
  :func:`scipy.optimize.least_squares` from a few absorption rates, started from
  non-compartmental estimates (dose over peak for the volume, terminal slope for clearance).

Eta-shrinkage is :math:`1 - \mathrm{SD}(\hat\eta_k)/\omega_k`.

References
----------
Wang Y. Derivation of various NONMEM estimation methods. J Pharmacokinet Pharmacodyn.
2007;34(5):575-593.

Beal SL, Sheiner LB. NONMEM Users Guides. Icon Development Solutions; 1989-2009.

Savic RM, Karlsson MO. Importance of shrinkage in empirical Bayes estimates for diagnostics.
AAPS J. 2009;11(3):558-569.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import optimize

from .pk import PkModel, _predict
from .study import StudyEvents

__all__ = ["ERROR_MODELS", "PopulationFit", "fit_population"]

#: Residual error models and the parameters each estimates: ``additive`` SD ``a`` (units of
#: the observations) and ``proportional`` fraction ``b``.
ERROR_MODELS = {
    "additive": ("additive",),
    "proportional": ("proportional",),
    "combined": ("additive", "proportional"),
}

_JACOBIAN_STEP = 1e-6  # forward-difference step on the log scale of a parameter
_GRADIENT_STEP = 1e-5  # forward-difference step of the outer parameters
_INNER_TOLERANCE = 1e-8
_INNER_ITERATIONS = 60
_STALL_STEP = 1e-6
# A gradient below this in every free direction: a 1 % change of any parameter moves the OFV
# by less than 0.0005, well inside the precision of the approximation.
_FLAT_GRADIENT = 0.05
_OMEGA_SD_BOUNDS = (0.01, 5.0)
_LOG_BOUND = 25.0  # parameters stay within exp(+-25)
_TINY = 1e-300


@dataclass(frozen=True)
class PopulationFit:
    """A fitted population PK model.

    Attributes
    ----------
    model : PkModel
        The structural model.
    error : str
        The residual error model (a key of :data:`ERROR_MODELS`).
    typical : pandas.Series
        Typical values, one per parameter of ``model``.
    omega : pandas.Series
        Between-subject variances of the log parameters (diagonal of :math:`\\Omega`).
    residual : pandas.Series
        Residual error: ``additive`` SD and/or ``proportional`` fraction.
    eta : pandas.DataFrame
        Empirical Bayes random effects, one row per patient (index: source ID).
    shrinkage : pandas.Series
        Eta-shrinkage per parameter, between 0 and 1.
    ofv : float
        Objective function value (-2 log-likelihood less :math:`N_{obs}\\log 2\\pi`).
    converged : bool
        Whether L-BFGS-B reported convergence, or stopped where the OFV's central-difference
        gradient is below 0.05 in every direction not held at a bound.
    iterations : int
        Outer iterations taken.
    n_observations : int
        Observations fitted.
    """

    model: PkModel
    error: str
    typical: pd.Series
    omega: pd.Series
    residual: pd.Series
    eta: pd.DataFrame
    shrinkage: pd.Series
    ofv: float
    converged: bool
    iterations: int
    n_observations: int

    @property
    def omega_sd(self) -> pd.Series:
        """Between-subject SDs on the log scale (about the CV)."""
        return np.sqrt(self.omega)

    @property
    def n_patients(self) -> int:
        """Patients fitted."""
        return len(self.eta)

    def parameter_table(self) -> pd.DataFrame:
        """Typical value, between-subject SD and shrinkage of each parameter, as a DataFrame."""
        return pd.DataFrame(
            {"typical": self.typical, "omega_sd": self.omega_sd, "shrinkage": self.shrinkage}
        )

    def __str__(self) -> str:
        residual = ", ".join(f"{k} {v:.3g}" for k, v in self.residual.items())
        status = "converged" if self.converged else "NOT converged"
        return (
            f"{self.model}; {self.n_patients} patients, {self.n_observations} observations\n"
            f"{self.parameter_table().to_string(float_format=lambda v: f'{v:.3g}')}\n"
            f"residual error ({self.error}): {residual}\nOFV {self.ofv:.2f} ({status})"
        )


class _Problem:
    """The arrays of one fit and the model's predictions, Jacobian and variances."""

    def __init__(self, study: StudyEvents, model: PkModel, error: str) -> None:
        self.model = model
        self.error = error
        self.p = len(model.parameters)
        self.mask = study.obs_mask
        self.log_dv = study.roles.log_dv
        self.y = np.where(self.mask, study.obs_dv, 0.0)
        self.concentration = np.exp(self.y) if self.log_dv else self.y
        self.doses = (study.dose_time, study.dose_amount, study.dose_duration, study.obs_time)
        periods = study.dose_period[:, :, None] == study.obs_period[:, None, :]
        self.same_period = None if periods.all() else periods
        self.n_obs = int(self.mask.sum())

    def predict(self, log_theta: np.ndarray) -> np.ndarray:
        # Bounded so that a wild trial step of the optimizers cannot overflow.
        theta = np.exp(np.clip(log_theta, -_LOG_BOUND, _LOG_BOUND))
        # A degenerate trial point gives NaN, which the line searches reject: no warning.
        with np.errstate(all="ignore"):
            f = _predict(self.model, theta, *self.doses, self.same_period)
        return np.log(np.maximum(f, _TINY)) if self.log_dv else f

    def jacobian(self, log_theta: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Predictions ``(..., n, t)`` and their derivatives ``(..., n, t, p)`` in log theta."""
        basis = np.eye(self.p).reshape(self.p, *(1,) * (log_theta.ndim - 1), self.p)
        shifted = log_theta[None] + _JACOBIAN_STEP * basis
        both = self.predict(np.concatenate([log_theta[None], shifted]))
        return both[0], np.moveaxis((both[1:] - both[0]) / _JACOBIAN_STEP, 0, -1)

    def variance(self, f: np.ndarray, residual: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Residual variance ``V`` and ``dV/df``; ``residual`` has shape ``(..., 2)`` (a, b)."""
        a = residual[..., 0][..., None, None]
        b = residual[..., 1][..., None, None]
        variance = a**2 + (b * f) ** 2
        return np.maximum(variance, 1e-12), 2 * b**2 * f

    def objective_terms(
        self, eta: np.ndarray, mu: np.ndarray, omega: np.ndarray, residual: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        """Each patient's ``-2 log p(y, eta)`` (less constants) and predictions."""
        f = self.predict(mu[..., None, :] + eta)
        variance, _ = self.variance(f, residual)
        data = np.where(self.mask, np.log(variance) + (self.y - f) ** 2 / variance, 0.0)
        return data.sum(axis=-1) + (eta**2 / omega[..., None, :]).sum(axis=-1), f


def _bfgs(curvature: np.ndarray, s: np.ndarray, y: np.ndarray) -> np.ndarray:
    """BFGS update of each patient's curvature matrix (skipped where it would not stay positive).

    The Gauss-Newton Hessian of the FOCE-I objective misses the curvature of large residuals,
    and Gauss-Newton steps alone then converge slowly; the secant update restores it.
    """
    hs = np.einsum("...kl,...l->...k", curvature, s)
    shs = np.einsum("...k,...k->...", s, hs)
    ys = np.einsum("...k,...k->...", y, s)
    ok = (ys > 1e-12 * np.maximum(shs, 1e-300)) & (shs > 0)
    safe_shs, safe_ys = np.where(ok, shs, 1.0), np.where(ok, ys, 1.0)
    update = -hs[..., :, None] * hs[..., None, :] / safe_shs[..., None, None]
    update += y[..., :, None] * y[..., None, :] / safe_ys[..., None, None]
    return curvature + np.where(ok[..., None, None], update, 0.0)


def _inner(
    problem: _Problem, mu: np.ndarray, omega: np.ndarray, residual: np.ndarray, eta: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Modes of all patients' joint densities and the FOCE-I OFV, batched over outer points.

    ``mu``, ``omega``: ``(B, p)``; ``residual``: ``(B, 2)``; ``eta``: ``(B, n, p)`` start.
    Returns the modes ``(B, n, p)`` and the OFV of each batch element ``(B,)``.
    """
    current, _ = problem.objective_terms(eta, mu, omega, residual)
    inverse_omega = 1 / omega[..., None, :]
    curvature = previous = None
    done = np.zeros(eta.shape[:-1], dtype=bool)
    for _ in range(_INNER_ITERATIONS):
        f, g = problem.jacobian(mu[..., None, :] + eta)
        variance, dv_df = problem.variance(f, residual)
        weight = np.where(problem.mask, 1 / variance, 0.0)
        r = problem.y - f
        dv = dv_df[..., None] * g
        # Gradient and first-order (Gauss-Newton) Hessian of -log p(y, eta), each patient.
        score = (-r * weight + 0.5 * (weight - (r * weight) ** 2) * dv_df)[..., None] * g
        gradient = score.sum(axis=-2) + eta * inverse_omega
        information = np.einsum("...tk,...tl->...kl", g * weight[..., None], g)
        information += 0.5 * np.einsum("...tk,...tl->...kl", dv * weight[..., None] ** 2, dv)
        hessian = information + np.eye(problem.p) * inverse_omega[..., None, :]
        curvature = (
            hessian
            if curvature is None
            else _bfgs(curvature, eta - previous[0], gradient - previous[1])
        )
        previous = eta, gradient
        step = -np.linalg.solve(curvature, gradient[..., None])[..., 0]
        size = np.max(np.abs(step), axis=-1)
        # At most a step of 1 on the log scale of a parameter at a time (a trust region).
        step = step / np.maximum(size, 1.0)[..., None]
        size = np.minimum(size, 1.0)
        done |= size < _INNER_TOLERANCE
        if done.all():
            break
        # Step halving for the patients whose objective would rise. A patient whose objective
        # rises even for a step below 1e-6 is at its mode to the precision of the
        # finite-difference gradient: it is done.
        scale = np.where(done, 0.0, 1.0)
        while True:
            trial = eta + scale[..., None] * step
            value, _ = problem.objective_terms(trial, mu, omega, residual)
            worse = ~(value <= current) & (scale > 0)
            if not worse.any():
                break
            scale = np.where(worse, scale / 2, scale)
            stalled = worse & (scale * size < _STALL_STEP)
            done |= stalled
            scale = np.where(stalled, 0.0, scale)
        eta = np.where((scale > 0)[..., None], trial, eta)
        current = np.where(scale > 0, value, current)
    _, log_det = np.linalg.slogdet(hessian)
    ofv = current + np.log(omega).sum(axis=-1)[..., None] + log_det
    return eta, ofv.sum(axis=-1)


def _unpack(x: np.ndarray, p: int, error: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Outer parameters ``(B, k)`` -> typical log values, omega variances, residual (a, b)."""
    mu = x[..., :p]
    omega = np.exp(2 * x[..., p : 2 * p])
    residual = np.zeros((*x.shape[:-1], 2))
    columns = [ERROR_MODELS["combined"].index(name) for name in ERROR_MODELS[error]]
    residual[..., columns] = np.exp(x[..., 2 * p :])
    return mu, omega, residual


def _starting_values(problem: _Problem, study: StudyEvents) -> np.ndarray:
    """Typical log values from a naive pooled fit started from non-compartmental estimates."""
    model = problem.model
    # Peak and its time within the first dose's interval, before any accumulation.
    later = np.where(study.dose_amount[:, 1:] > 0, study.dose_time[:, 1:], np.inf)
    second_dose = np.min(later, axis=1, initial=np.inf)[:, None]
    first_interval = problem.mask & (study.obs_time < second_dose) & (study.obs_period == 0)
    first_interval[~first_interval.any(axis=1)] = problem.mask[~first_interval.any(axis=1)]
    y = np.where(first_interval, problem.concentration, np.nan)
    peak = np.nanmax(y, axis=1)
    first_dose = study.dose_amount[:, 0]
    volume = np.median(first_dose / np.maximum(peak, 1e-12 * np.nanmax(peak)))
    # Terminal slope from each patient's last three positive observations.
    times = np.where(problem.mask & (problem.concentration > 0), study.obs_time, np.nan)
    order = np.argsort(np.where(np.isnan(times), -np.inf, times), axis=1)[:, -3:]
    t_last = np.take_along_axis(times, order, axis=1)
    positive = np.where(problem.concentration > 0, problem.concentration, np.nan)
    log_last = np.log(np.take_along_axis(positive, order, axis=1))
    centred = t_last - np.nanmean(t_last, axis=1, keepdims=True)
    with np.errstate(divide="ignore", invalid="ignore"):
        slope = np.nansum(centred * log_last, axis=1) / np.nansum(centred**2, axis=1)
    elimination = np.clip(-np.nanmedian(slope), 1e-4, 10.0) if np.isfinite(slope).any() else 0.1
    peak_time = np.nanmedian(
        np.take_along_axis(study.obs_time, np.nanargmax(y, axis=1)[:, None], 1)
    )
    guess = {"cl": elimination * volume, "v": volume, "q": elimination * volume, "vp": volume}
    guess["tlag"] = max(0.2 * peak_time, 0.05)
    # Log-scale residuals of the positive concentrations with a robust loss, so that one
    # patient's gross error (values a thousand times too high) cannot drag the start.
    positive_obs = problem.mask & (problem.concentration > 0)
    log_observed = np.log(problem.concentration[positive_obs])

    def residuals(log_theta: np.ndarray) -> np.ndarray:
        theta = np.broadcast_to(log_theta, (study.n_patients, problem.p))
        f = _predict(model, np.exp(theta), *problem.doses, problem.same_period)
        return np.log(np.maximum(f[positive_obs], _TINY)) - log_observed

    best = None
    for ka_factor in (0.5, 2.0, 8.0) if model.route == "oral" else (1.0,):
        guess["ka"] = ka_factor / max(peak_time, 1e-3)
        start = np.log([guess[name] for name in model.parameters])
        result = optimize.least_squares(
            residuals, start, method="trf", loss="soft_l1", f_scale=0.5, max_nfev=200
        )
        if best is None or result.cost < best.cost:
            best = result
    return best.x


def fit_population(
    study: StudyEvents,
    *,
    model: PkModel | None = None,
    error: str | None = None,
    max_iterations: int = 300,
) -> PopulationFit:
    """Fit a population PK model to a study's PK endpoint by FOCE-I.

    Parameters
    ----------
    study : StudyEvents
        The study (:func:`synpmx_lite.study.prepare_study`).
    model : PkModel, optional
        The structural model; default the one in the study's roles.
    error : {"combined", "additive", "proportional"}, optional
        The residual error model; default ``"combined"``, or ``"additive"`` for log
        concentrations (``roles.log_dv``), which is then the only one allowed.
    max_iterations : int, default 300
        Most L-BFGS-B iterations of the outer problem.

    Returns
    -------
    PopulationFit
        Typical values, omega, residual error, empirical Bayes random effects, shrinkage,
        OFV and convergence.

    Notes
    -----
    The method (FOCE-I) is described in the module docstring. Between-subject SDs are
    bounded to [0.01, 5] on the log scale.
    """
    if not isinstance(study, StudyEvents):
        raise TypeError(f"study must be a StudyEvents, got {type(study).__name__}")
    model = study.roles.model if model is None else model
    if not isinstance(model, PkModel):
        raise TypeError(f"model must be a PkModel, got {type(model).__name__}")
    if error is None:
        error = "additive" if study.roles.log_dv else "combined"
    if error not in ERROR_MODELS:
        raise ValueError(f"error must be one of {sorted(ERROR_MODELS)}, got {error!r}")
    if study.roles.log_dv and error != "additive":
        raise ValueError("log concentrations (roles.log_dv) take error='additive'")
    problem = _Problem(study, model, error)
    p = problem.p
    mu0 = _starting_values(problem, study)
    spread = np.median(np.abs(problem.y[problem.mask]))
    residual0 = {"additive": np.log(0.1 * spread), "proportional": np.log(0.1)}
    x0 = np.concatenate(
        [mu0, np.full(p, np.log(0.3)), [residual0[name] for name in ERROR_MODELS[error]]]
    )
    bounds = [(m - np.log(20), m + np.log(20)) for m in mu0]
    bounds += [tuple(np.log(_OMEGA_SD_BOUNDS))] * p
    bounds += [
        (np.log(1e-4 * spread), np.log(10 * spread))
        if name == "additive"
        else (np.log(1e-3), np.log(2.0))
        for name in ERROR_MODELS[error]
    ]
    step = _GRADIENT_STEP * np.eye(x0.size)
    # The inner problems start from the modes at the best point so far: a wild trial point
    # of the line search must not leave them in another patient's local mode.
    state = {"eta": np.zeros((study.n_patients, p)), "ofv": np.inf}

    def solve(points: np.ndarray, start: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        eta_start = np.broadcast_to(start, (len(points), *start.shape))
        return _inner(problem, *_unpack(points, p, error), eta_start)

    def objective(x: np.ndarray) -> tuple[float, np.ndarray]:
        eta, ofv = solve(x[None], state["eta"])
        if ofv[0] < state["ofv"]:
            state["eta"], state["ofv"] = eta[0], ofv[0]
        # The perturbed points start from this point's modes: a step or two each.
        _, shifted = solve(x + step, eta[0])
        return float(ofv[0]), (shifted - ofv[0]) / _GRADIENT_STEP

    result = optimize.minimize(
        objective,
        x0,
        jac=True,
        method="L-BFGS-B",
        bounds=bounds,
        options={"maxiter": max_iterations, "ftol": 1e-10, "gtol": 1e-4},
    )
    # Central differences at the end (free of the forward differences' bias) decide whether
    # the minimum is reached where L-BFGS-B stops in a line search at the noise floor.
    eta, ofv = solve(result.x[None], state["eta"])
    _, shifted = solve(np.vstack([result.x + step, result.x - step]), eta[0])
    gradient = (shifted[: x0.size] - shifted[x0.size :]) / (2 * _GRADIENT_STEP)
    low, high = np.array(bounds).T
    pinned = ((result.x <= low + 1e-8) & (gradient > 0)) | (
        (result.x >= high - 1e-8) & (gradient < 0)
    )
    converged = result.success or bool(np.all(np.abs(gradient[~pinned]) < _FLAT_GRADIENT))
    mu, omega, residual = (a[0] for a in _unpack(result.x[None], p, error))
    names = list(model.parameters)
    eta_table = pd.DataFrame(eta[0], index=pd.Index(study.ids, name="id"), columns=names)
    omega = pd.Series(omega, index=names)
    return PopulationFit(
        model=model,
        error=error,
        typical=pd.Series(np.exp(mu), index=names),
        omega=omega,
        residual=pd.Series(
            residual[[ERROR_MODELS["combined"].index(n) for n in ERROR_MODELS[error]]],
            index=list(ERROR_MODELS[error]),
        ),
        eta=eta_table,
        shrinkage=1 - eta_table.std(ddof=0) / np.sqrt(omega),
        ofv=float(ofv[0]),
        converged=converged,
        iterations=int(result.nit),
        n_observations=problem.n_obs,
    )
