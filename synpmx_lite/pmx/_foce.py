"""The FOCE-I objective: the patients' modes, the OFV and their exact derivatives.

Everything here works on batches of outer points (typical log values, log between-subject
SDs, log residual errors): the modes of every patient by batched Newton steps, each
patient's OFV term and its exact gradient in the outer parameters, and the modes'
sensitivity to them. The formulas are in the docstring of :mod:`synpmx_lite.pmx.population`,
which runs the search, the covariance step and the diagnostics on top of these.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ._censored import censored_residual_moves, censored_terms
from .covariates import CovariateEffect, effect_design
from .pk import PkModel, _dosing, _primitives, _response
from .study import StudyEvents

# The residual error's components, a and b of V = a^2 + b^2 f^2; an error model estimates
# one or both (``residual_names`` of a problem).
_RESIDUAL_COMPONENTS = ("additive", "proportional")
_MODE_TOLERANCE = 1e-8  # Newton step (log scale) below which a mode is found
_MODE_ITERATIONS = 50
_STEP_HALVINGS = 20
_STALL_TOLERANCE = 1e-5  # a Newton step no halving of which descends: found, if this small
_LOG_BOUND = 25.0  # individual parameters stay within exp(+-25)
_TINY = 1e-300


class _Problem:
    """The arrays of one fit, and the FOCE-I objective's pieces at a batch of outer points.

    Observations are flat (patient after patient); per-patient sums are ``reduceat`` over
    ``patient_start``. Outer points come in batches: arrays carry a leading batch axis ``B``.
    The predictions' derivatives are kept in the primitives of ``synpmx_lite.pmx.pk._response``
    (coefficients, exponents, ``ka``, ``tlag``) and summed per patient there; each patient's
    sums are then carried to the log parameters once, with the primitives' Jacobian ``J``
    and second derivatives ``K``: ``g = J' f_u`` and
    ``d2f = J' f_uu J + sum_a f_u[a] K[a]``.
    """

    def __init__(
        self,
        study: StudyEvents,
        model: PkModel,
        error: str,
        residual_names: tuple[str, ...],
        effects: tuple[CovariateEffect, ...] = (),
        random: np.ndarray | None = None,
        pair: tuple[int, int] | None = None,
    ) -> None:
        self.model = model
        # Which parameters have a random effect; the others' SDs are held near 0 by the fit.
        self.p = len(model.parameters)
        self.random = np.ones(self.p, dtype=bool) if random is None else np.asarray(random)
        self.effects = effects
        # Covariate effects: log typical value of patient i is mu + design[i] @ beta on the
        # parameter ``effect_target``; the betas close the outer point.
        self.design, self.effect_target = effect_design(
            effects, study.covariates, tuple(model.parameters)
        )
        self.n_effects = len(effects)
        self.error = error
        self.residual_names = residual_names
        periods = study.dose_period[:, :, None] == study.obs_period[:, None, :]
        self.dosing = _dosing(
            study.dose_time,
            study.dose_amount,
            study.dose_duration,
            study.obs_time,
            observed=study.obs_mask,
            same_period=None if periods.all() else periods,
            dose_central=study.dose_central,
            dose_interval=study.dose_interval,
        )
        self.n_patients = study.n_patients
        self.patient = self.dosing.obs_patient
        self.patient_start = np.searchsorted(self.patient, np.arange(self.n_patients))
        self.y = study.obs_dv[study.obs_mask]
        self.log_dv = study.roles.log_dv
        self.concentration = np.exp(self.y) if self.log_dv else self.y
        self.residual_columns = [_RESIDUAL_COMPONENTS.index(name) for name in residual_names]
        self.n_variance = 2 * self.p + len(self.residual_columns)  # where the betas start
        # A correlated pair of etas (``correlated=``): their correlation tanh(z), with z the
        # last outer coordinate, after the betas; None for a diagonal Omega.
        self.pair = pair
        self.k = self.n_variance + self.n_effects + (pair is not None)
        self.n_obs = self.y.size
        self.identity = np.eye(self.p)
        # Under proportional error an observed 0 has a density that grows without bound as
        # the prediction goes to 0: left out of the likelihood (see the module docstring).
        self.left_out = (self.y == 0) if error == "proportional" else None
        # Observations below the limit (their value the limit) enter by Beal's M3; None
        # where there are none, so that such a fit runs exactly the uncensored arithmetic.
        censored = None if study.obs_censored is None else study.obs_censored[study.obs_mask]
        self.censored = censored if censored is not None and censored.any() else None
        if self.censored is not None and self.left_out is not None:
            self.left_out = self.left_out & ~self.censored
        # Observations a dose reaches after some time has elapsed: a prediction of 0 there is
        # not structural (before the first dose) but set by the parameters (a lag time).
        timed = (self.dosing.amount > 0) & (self.dosing.elapsed > 0)
        self.after_dose = np.add.reduceat(timed, self.dosing.pair_start) > 0

    def per_patient(self, values: np.ndarray, axis: int) -> np.ndarray:
        return np.add.reduceat(values, self.patient_start, axis=axis)

    def unpack(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Outer points ``(B, k)`` -> each patient's typical log values ``(B, n, p)`` (the
        covariate effects applied), log SDs ``(B, p)``, residual ``(B, 2)`` (a, b)."""
        residual = np.zeros((x.shape[0], 2))
        residual[:, self.residual_columns] = np.exp(x[:, 2 * self.p : self.n_variance])
        return (
            x[:, None, : self.p] + self.covariate_shift(x),
            x[:, self.p : 2 * self.p],
            residual,
        )

    def correlation(self, x: np.ndarray) -> np.ndarray | None:
        """The pair's correlation at outer points ``(B, k)`` -> ``(B,)``; None without one."""
        return None if self.pair is None else np.tanh(x[:, -1])

    def precision_matrix(self, log_sd: np.ndarray, rho: np.ndarray) -> np.ndarray:
        """Omega's inverse ``(B, 1, p, p)`` with the pair correlated: D^-1 R^-1 D^-1, R^-1
        the identity but for the pair's 2 x 2 block, in closed form."""
        a, b = self.pair
        inverse_r = np.broadcast_to(self.identity, (len(rho), self.p, self.p)).copy()
        inverse_r[:, a, a] = inverse_r[:, b, b] = 1 / (1 - rho**2)
        inverse_r[:, a, b] = inverse_r[:, b, a] = -rho / (1 - rho**2)
        scale = np.exp(-log_sd)
        return (scale[:, :, None] * inverse_r * scale[:, None, :])[:, None]

    def omega_change(self, log_sd: np.ndarray, rho: np.ndarray) -> np.ndarray:
        """d Omega / dz ``(B, 1, p, p)``: nonzero only at the pair, (1 - rho^2) sd_a sd_b."""
        a, b = self.pair
        change = np.zeros((len(rho), 1, self.p, self.p))
        value = (1 - rho**2) * np.exp(log_sd[:, a] + log_sd[:, b])
        change[:, 0, a, b] = change[:, 0, b, a] = value
        return change

    def covariate_shift(self, x: np.ndarray) -> np.ndarray:
        """What the covariate effects add to each patient's log typical values ``(B, n, p)``."""
        shift = np.zeros((x.shape[0], self.n_patients, self.p))
        for column, target in enumerate(self.effect_target):
            shift[..., target] += x[:, None, self.n_variance + column] * self.design[:, column]
        return shift

    def effect_columns(self, per_typical: np.ndarray) -> np.ndarray:
        """Per-patient derivatives in the betas ``(B, n, c)`` from those in the patient's
        typical log values ``(B, n, p)``: the chain rule through the design."""
        return per_typical[..., self.effect_target] * self.design

    def predictions(self, phi: np.ndarray, order: int):
        """Predictions, their derivatives in the primitives, and the primitives' derivatives.

        Returns ``f`` ``(B, N)``, ``f_u`` ``(B, N, u)``, ``f_uu`` ``(B, N, u, u)`` and ``J``
        ``(B, n, u, p)``, ``K`` ``(B, n, u, p, p)`` up to ``order`` (None beyond).
        """
        phi = np.clip(phi, -_LOG_BOUND, _LOG_BOUND)  # a wild trial step cannot overflow
        with np.errstate(all="ignore"):
            u, jacobian, second = _primitives(self.model, phi, order)
            f, f_u, f_uu = _response(self.model, self.dosing, u, order)
        if self.log_dv:
            # Log concentrations: log f and its derivatives (0 where the prediction is 0).
            positive = f > _TINY
            inverse = np.where(positive, 1 / np.where(positive, f, 1.0), 0.0)
            f = np.log(np.maximum(f, _TINY))
            if order >= 1:
                f_u = f_u * inverse[..., None]
            if order >= 2:
                f_uu = f_uu * inverse[..., None, None] - f_u[..., :, None] * f_u[..., None, :]
        return f, f_u, f_uu, jacobian, second

    def variance(self, f: np.ndarray, residual: np.ndarray):
        """Residual variance ``V``, its inverse, ``dV/df``, ``d2V/df2``, the mask of the fixed
        variances, a^2 and b^2.

        Proportional error at a prediction of exactly 0 has ``V = 1``; an observation left
        out of the likelihood has ``V = 1`` and inverse 0, so that it adds nothing.
        """
        a2 = residual[:, 0, None] ** 2
        b2 = residual[:, 1, None] ** 2
        variance = a2 + b2 * f**2
        fixed = variance <= 0
        if self.left_out is not None:
            fixed |= self.left_out
        variance = np.where(fixed, 1.0, variance)
        inverse = 1 / variance
        if self.left_out is not None:
            inverse = np.where(self.left_out, 0.0, inverse)
        slope = np.where(fixed, 0.0, 2 * b2 * f)
        curvature = np.where(fixed, 0.0, 2 * b2)
        return variance, inverse, slope, curvature, fixed, a2, b2


@dataclass
class _Evaluation:
    """The inner problem's solution at a batch of outer points, with what the gradient needs."""

    x: np.ndarray  # (B, k) outer points
    eta: np.ndarray  # (B, n, p) modes
    converged: np.ndarray  # (B, n) whether each mode converged
    terms: dict


def _chain(jacobian: np.ndarray, matrix: np.ndarray) -> np.ndarray:
    """``J' matrix J`` for each patient: a ``(u, u)`` sum carried to the log parameters."""
    return np.swapaxes(jacobian, -1, -2) @ matrix @ jacobian


def _joint(problem: _Problem, mu, log_sd, residual, eta, order: int, rho=None) -> dict:
    """``L_i(eta)`` of every patient, and with ``order`` 2 its gradient and Hessians; ``rho``
    the pair's correlation (``(B,)``, None for a diagonal Omega)."""
    f, f_u, f_uu, jacobian, second = problem.predictions(mu + eta, order)
    variance, inverse, slope, curvature, zero, a2, b2 = problem.variance(f, residual)
    r = problem.y - f
    data = np.log(variance) + r**2 * inverse
    censored = {}
    if problem.censored is not None:  # Beal's M3 in place of the density (_censored)
        censored = censored_terms(problem.y, f, variance, slope, curvature, zero)
        data = np.where(problem.censored, censored["data"], data)
    if rho is None:
        precision = np.exp(-2 * log_sd)[:, None, :]  # 1 / omega^2, (B, 1, p)
        precise_eta = eta * precision
        quadratic = (eta**2 * precision).sum(axis=-1)
        prior = 2 * precision[..., None] * problem.identity  # (B, 1, p, p)
    else:  # Omega^-1 a matrix (B, 1, p, p)
        precision = problem.precision_matrix(log_sd, rho)
        precise_eta = np.einsum("...kl,...l->...k", precision, eta)
        quadratic = (eta * precise_eta).sum(axis=-1)
        prior = 2 * precision
    objective = problem.per_patient(data, axis=-1) + quadratic
    if order == 0:
        return {"objective": objective}
    scaled_r = r * inverse
    d_f = slope * inverse - 2 * scaled_r - scaled_r**2 * slope
    weight = 2 * inverse + (slope * inverse) ** 2
    d_ff = (
        curvature * inverse
        - (slope * inverse) ** 2
        + 2 * inverse
        + 4 * scaled_r * slope * inverse
        - scaled_r**2 * curvature
        + 2 * scaled_r**2 * slope**2 * inverse
    )
    if censored:
        d_f, d_ff, weight = (
            np.where(problem.censored, censored[name], normal)
            for name, normal in (("d_f", d_f), ("d_ff", d_ff), ("weight", weight))
        )
    outer = f_u[..., :, None] * f_u[..., None, :]
    score_u = problem.per_patient(d_f[..., None] * f_u, axis=-2)  # (B, n, u)
    information_u = problem.per_patient(weight[..., None, None] * outer, axis=-3)
    hessian_u = problem.per_patient(
        d_ff[..., None, None] * outer + d_f[..., None, None] * f_uu, axis=-3
    )
    score = np.einsum("...ak,...a->...k", jacobian, score_u)
    information = _chain(jacobian, information_u) + prior
    hessian = _chain(jacobian, hessian_u) + np.einsum("...a,...akl->...kl", score_u, second) + prior
    return dict(
        objective=objective, gradient=score + 2 * precise_eta, score=score, prior=prior,
        precise_eta=precise_eta, rho=rho,
        information=information, hessian=hessian, information_u=information_u,
        f=f, f_u=f_u, f_uu=f_uu, jacobian=jacobian, second=second, r=r, inverse=inverse,
        slope=slope, curvature=curvature, zero=zero, a2=a2, b2=b2, d_f=d_f, weight=weight,
        precision=precision, **{f"censored_{name}": value for name, value in censored.items()},
    )  # fmt: skip


def _newton_step(terms: dict) -> np.ndarray:
    """Newton step on the exact Hessian where positive definite, else the first-order one."""
    curvature = hessian = terms["hessian"]
    try:
        np.linalg.cholesky(hessian)  # near the modes, every patient's is (the usual case)
    except np.linalg.LinAlgError:
        smallest = np.linalg.eigvalsh(hessian)[..., 0]
        definite = smallest > 1e-8 * np.abs(hessian).max(axis=(-2, -1))
        curvature = np.where(definite[..., None, None], hessian, terms["information"])
    return -np.linalg.solve(curvature, terms["gradient"][..., None])[..., 0]


def _modes(
    problem: _Problem,
    x: np.ndarray,
    eta: np.ndarray,
    tolerance: float | None = None,
    iterations: int | None = None,
) -> _Evaluation:
    """Newton's method for the modes of all patients at a batch of outer points ``(B, k)``.

    At most a step of 1 on the log scale of any parameter; a step that raises ``L_i`` is
    halved, for at most ``iterations`` steps (default ``_MODE_ITERATIONS``). A mode is found
    when the Newton step is below ``tolerance`` (default ``_MODE_TOLERANCE``), or below
    ``_STALL_TOLERANCE`` where no halving of it lowers ``L_i`` (rounding, not a distant mode,
    stops it). The returned terms are those at the returned modes.
    """
    tolerance = _MODE_TOLERANCE if tolerance is None else tolerance
    iterations = _MODE_ITERATIONS if iterations is None else iterations
    mu, log_sd, residual = problem.unpack(x)
    rho = problem.correlation(x)
    terms = _joint(problem, mu, log_sd, residual, eta, 2, rho)
    stalled = np.zeros(eta.shape[:-1], dtype=bool)
    for _ in range(iterations):
        step = _newton_step(terms)
        size = np.abs(step).max(axis=-1)
        converged = (size < tolerance) | (stalled & (size < _STALL_TOLERANCE))
        done = converged | stalled
        if done.all():
            break
        step = np.where(done[..., None], 0.0, step / np.maximum(size, 1.0)[..., None])
        current = terms["objective"]
        trial = eta + step
        terms = _joint(problem, mu, log_sd, residual, trial, 2, rho)
        # Rounding may raise a converging patient's objective by a few ulps: allow it.
        worse = ~(terms["objective"] <= current + 1e-12 * np.abs(current))
        if worse.any():
            scale = np.ones(current.shape)
            for _ in range(_STEP_HALVINGS):
                scale = np.where(worse, scale / 2, scale)
                trial = eta + scale[..., None] * step
                value = _joint(problem, mu, log_sd, residual, trial, 0, rho)["objective"]
                worse = ~(value <= current + 1e-12 * np.abs(current))
                if not worse.any():
                    break
            stalled |= worse
            trial = np.where(worse[..., None], eta, trial)  # no descent: stay
            terms = _joint(problem, mu, log_sd, residual, trial, 2, rho)
        eta = trial
    else:  # out of iterations: which modes the last step found
        size = np.abs(_newton_step(terms)).max(axis=-1)
        converged = (size < tolerance) | (stalled & (size < _STALL_TOLERANCE))
    return _Evaluation(x=x, eta=eta, converged=converged, terms=terms)


def _residual_changes(problem: _Problem, t: dict):
    """Per residual parameter (log scale): the change of ``V`` and of ``dV/df``."""
    changes = {
        "additive": (2 * t["a2"] * np.ones_like(t["r"]), np.zeros_like(t["r"])),
        "proportional": (2 * t["b2"] * t["f"] ** 2, 2 * t["slope"]),
    }
    for name in problem.residual_names:
        yield (np.where(t["zero"], 0.0, c) for c in changes[name])


def _d_f_residual(t: dict, dv: np.ndarray, dslope: np.ndarray) -> np.ndarray:
    """How one residual parameter moves ``dL/df`` at each observation."""
    inverse, slope, r = t["inverse"], t["slope"], t["r"]
    return (-slope * inverse**2 + 2 * r * inverse**2 + 2 * r**2 * slope * inverse**3) * dv + (
        inverse - (r * inverse) ** 2
    ) * dslope


def _residual_moves(problem: _Problem, t: dict):
    """Per residual parameter (log scale): its moves of each observation's data term, of
    ``dL/df`` and of the information's weight (Beal's M3 ones at censored observations)."""
    inverse, slope, r = t["inverse"], t["slope"], t["r"]
    for dv, dslope in _residual_changes(problem, t):
        d_psi = (inverse - (r * inverse) ** 2) * dv
        weight_psi = (-2 * inverse**2 - 2 * slope**2 * inverse**3) * dv
        weight_psi += 2 * slope * inverse**2 * dslope
        moves = (d_psi, _d_f_residual(t, dv, dslope), weight_psi)
        if problem.censored is not None:
            censored = {name[9:]: t[name] for name in t if name.startswith("censored_")}
            m3 = censored_residual_moves(censored, dv, dslope)
            moves = tuple(np.where(problem.censored, a, b) for a, b in zip(m3, moves, strict=True))
        yield moves


def _ofv_and_gradient(problem: _Problem, evaluation: _Evaluation):
    """Each patient's OFV term ``(B, n)`` and its exact gradient in the outer point ``(B, n, k)``.

    See the module docstring; ``q`` is the gradient of ``log|H_i|`` in the modes, ``aq`` the
    exact Hessian's solve against it (the implicit-function term).
    """
    t = evaluation.terms
    p = problem.p
    _, log_sd, _ = problem.unpack(evaluation.x)
    eta = evaluation.eta
    information = t["information"]
    sign, log_det = np.linalg.slogdet(information / 2)
    ofv = t["objective"] + 2 * log_sd.sum(axis=-1)[:, None] + log_det
    if problem.pair is not None:  # log|Omega| = 2 sum log SD + log(1 - rho^2)
        ofv = ofv + np.log1p(-t["rho"] ** 2)[:, None]
    ofv = np.where(sign > 0, ofv, np.inf)
    inverse, slope, curvature = t["inverse"], t["slope"], t["curvature"]
    f_u, jacobian, second = t["f_u"], t["jacobian"], t["second"]
    m = np.linalg.inv(information)  # (B, n, p, p)
    m_jt = np.einsum("...kl,...al->...ka", m, jacobian)  # M J', (B, n, p, u)
    m_u = np.einsum("...ak,...kb->...ab", jacobian, m_jt)  # J M J', (B, n, u, u)
    mf = np.einsum("...ab,...b->...a", m_u[:, problem.patient], f_u)  # (B, N, u)
    gmg = (f_u * mf).sum(axis=-1)  # g' M g per observation
    weight_f = 2 * slope * inverse**2 * (curvature - 1) - 2 * slope**3 * inverse**3
    if problem.censored is not None:
        weight_f = np.where(problem.censored, t["censored_weight_f"], weight_f)
    along_u = problem.per_patient(
        (weight_f * gmg)[..., None] * f_u
        + 2 * t["weight"][..., None] * np.einsum("...ab,...b->...a", t["f_uu"], mf),
        axis=-2,
    )
    # d log|H| / d eta: the first-order Hessian moves with f (through V) and with g.
    q = np.einsum("...ak,...a->...k", jacobian, along_u) + 2 * np.einsum(
        "...akl,...la->...k", second, m_jt @ t["information_u"]
    )
    aq = np.linalg.solve(t["hessian"], q[..., None])[..., 0]
    precision = t["precision"]
    gradient = np.empty((*ofv.shape, problem.k))
    if problem.pair is None:
        gradient[..., :p] = t["score"] + 2 * precision * aq
        gradient[..., p : 2 * p] = (
            2
            - 2 * eta**2 * precision
            - 4 * np.diagonal(m, axis1=-2, axis2=-1) * precision
            + 4 * aq * eta * precision
        )
    else:
        _correlated_gradient(problem, t, eta, m, aq, log_sd, gradient)
    for column, (d_psi, d_f_psi, weight_psi) in enumerate(_residual_moves(problem, t)):
        direct = problem.per_patient(d_psi + weight_psi * gmg, axis=-1)
        score_psi = problem.per_patient(d_f_psi[..., None] * f_u, axis=-2)
        implicit = (aq * np.einsum("...ak,...a->...k", jacobian, score_psi)).sum(axis=-1)
        gradient[..., 2 * p + column] = direct - implicit
    effects = slice(problem.n_variance, problem.n_variance + problem.n_effects)
    gradient[..., effects] = problem.effect_columns(gradient[..., :p])
    return ofv, gradient


def _correlated_gradient(problem, t, eta, m, aq, log_sd, gradient) -> None:
    """The gradient's typical-value, log-SD and z columns with a correlated pair.

    With ``P = Omega^-1``, ``W = dP/dtheta = -P (dOmega/dtheta) P`` and ``M = H^-1``, each
    parameter of Omega moves the OFV by ``eta' W eta + tr(P dOmega) + 2 tr(M W)`` directly
    and by ``-2 aq' W eta`` through the modes; a log SD has ``W_k = -(E_kk P + P E_kk)``.
    """
    p = problem.p
    precision = t["precision"]  # (B, 1, p, p)
    p_eta = t["precise_eta"]
    p_aq = np.einsum("...kl,...l->...k", precision, aq)
    gradient[..., :p] = t["score"] + 2 * p_aq
    mp = np.diagonal(m @ precision, axis1=-2, axis2=-1)
    gradient[..., p : 2 * p] = 2 - 2 * eta * p_eta - 4 * mp + 2 * (aq * p_eta + p_aq * eta)
    change = problem.omega_change(log_sd, t["rho"])  # (B, 1, p, p)
    pmp = precision @ m @ precision
    gradient[..., -1] = (
        -2 * t["rho"][:, None]
        - np.einsum("...k,...kl,...l->...", p_eta, change, p_eta)
        - 2 * np.einsum("...kl,...lk->...", pmp, change)
        + 2 * np.einsum("...k,...kl,...l->...", p_aq, change, p_eta)
    )


def _select(evaluation: _Evaluation, index: int) -> _Evaluation:
    """One outer point of a batch, as a batch of one."""
    part = slice(index, index + 1)
    return _Evaluation(
        x=evaluation.x[part],
        eta=evaluation.eta[part],
        converged=evaluation.converged[part],
        terms={n: v if v is None else v[part] for n, v in evaluation.terms.items()},
    )


def _mode_sensitivity(problem: _Problem, evaluation: _Evaluation) -> np.ndarray:
    """``d eta_hat / dx`` of each patient ``(B, n, p, k)``, by the implicit-function theorem."""
    t = evaluation.terms
    p = problem.p
    precision = t["precision"]
    cross = np.zeros((*evaluation.eta.shape, problem.k))  # d (dL/deta) / dx
    cross[..., :p] = t["hessian"] - t["prior"]
    if problem.pair is None:
        cross[..., p : 2 * p] = -4 * (evaluation.eta * precision)[..., None] * problem.identity
    else:  # 2 W_k eta = -2 (e_k (P eta)_k + P e_k eta_k); and 2 W_z eta
        p_eta = t["precise_eta"]
        cross[..., p : 2 * p] = -2 * (
            p_eta[..., None] * problem.identity + precision * evaluation.eta[..., None, :]
        )
        _, log_sd, _ = problem.unpack(evaluation.x)
        change = problem.omega_change(log_sd, t["rho"])
        cross[..., -1] = -2 * np.einsum("...kl,...lm,...m->...k", precision, change, p_eta)
    for column, (_, d_f_psi, _) in enumerate(_residual_moves(problem, t)):
        score_psi = problem.per_patient(d_f_psi[..., None] * t["f_u"], -2)
        cross[..., 2 * p + column] = np.einsum("...ak,...a->...k", t["jacobian"], score_psi)
    # A beta moves the patient's typical log value, as mu does, scaled by its design value.
    design = problem.design[:, None, :]  # (n, 1, c): the same for every eta
    effects = slice(problem.n_variance, problem.n_variance + problem.n_effects)
    cross[..., effects] = cross[..., problem.effect_target] * design
    return -np.linalg.solve(t["hessian"], cross)
