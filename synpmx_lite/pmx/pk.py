r"""Closed-form linear pharmacokinetic models, vectorized over patients, doses and times.

A linear model's response to a unit bolus into the central compartment is a sum of
exponentials :math:`\sum_m c_m e^{-\lambda_m t}`: one term for a one-compartment model, two
for a two-compartment model. Every dosing route follows from it in closed form:

* IV bolus: :math:`D \sum_m c_m e^{-\lambda_m t}`;
* zero-order infusion of duration :math:`\tau`:
  :math:`\frac{D}{\tau} \sum_m \frac{c_m}{\lambda_m}
  \left(e^{-\lambda_m \max(t-\tau, 0)} - e^{-\lambda_m t}\right)`;
* first-order absorption from a depot at rate :math:`k_a` (bioavailability 1):
  :math:`D \sum_m c_m k_a \frac{e^{-\lambda_m t} - e^{-k_a t}}{k_a - \lambda_m}`;

with :math:`t` the time since the dose less any absorption lag. Multiple doses add up
(superposition). A dose at steady state (NONMEM's SS=1 at interval :math:`\tau`) stands for
itself and the same dose every :math:`\tau` before it, for ever: each exponential
:math:`e^{-x t}` of its response becomes :math:`e^{-x t}/(1 - e^{-x \tau})`, the sum of its
geometric series (boluses into the central compartment and first-order absorption; not
infusions or lag times). A dose acts only on the observations of its own dosing period, so
that a study with a washout between periods (time starting again at zero) needs no reset
records.

The population fit (:mod:`synpmx_lite.pmx.population`) needs the first and second derivatives of
every prediction in the log parameters. They are exact: each term :math:`c_m E(\lambda_m,
k_a, t - t_{lag})` is differentiated by hand in its own quantities (coefficient, exponent,
absorption rate, lag), and those quantities in the parameters by carrying value, gradient and
Hessian through the few arithmetic steps from :math:`CL, V, Q, V_p` (forward-mode
differentiation). The differences of exponentials are written as
:math:`t e^{-\lambda t}\varphi((k_a - \lambda) t)` with :math:`\varphi(x) = (1 - e^{-x})/x`,
evaluated by its Taylor series near 0, so that neither the predictions nor their derivatives
lose digits where :math:`k_a` is close to an exponent or an infusion is short.

References
----------
Gibaldi M, Perrier D. Pharmacokinetics. 2nd ed. Marcel Dekker; 1982.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from .._validation import check_array, check_count

__all__ = ["PkModel", "predict_concentrations"]

_ROUTES = ("oral", "iv")

# Below this argument phi(x) = (1 - exp(-x)) / x and its derivatives lose digits in closed form
# (the second derivative as 1 / x^2); their Taylor series is used instead.
_SERIES_BELOW = 1e-2


@dataclass(frozen=True)
class PkModel:
    """A linear compartmental PK model.

    Parameters
    ----------
    compartments : int, default 1
        1 or 2 disposition compartments.
    route : {"oral", "iv"}, default "oral"
        ``"oral"``: doses enter a depot and are absorbed at first order (rate ``ka``);
        ``"iv"``: doses enter the central compartment as a bolus, or as a zero-order infusion
        where the dose has a duration.
    lag : bool, default False
        Whether absorption starts after a lag time ``tlag`` (oral route only).

    Examples
    --------
    >>> PkModel(compartments=2, route="iv").parameters
    ('cl', 'v', 'q', 'vp')
    >>> print(PkModel(route="oral", lag=True))
    one-compartment model, first-order absorption with a lag time
    """

    compartments: int = 1
    route: str = "oral"
    lag: bool = False

    def __post_init__(self) -> None:
        if check_count(self.compartments, "compartments") not in (1, 2):
            raise ValueError(f"compartments must be 1 or 2, got {self.compartments}")
        if self.route not in _ROUTES:
            raise ValueError(f"route must be one of {_ROUTES}, got {self.route!r}")
        if not isinstance(self.lag, bool):
            raise TypeError(f"lag must be a bool, got {self.lag!r}")
        if self.lag and self.route != "oral":
            raise ValueError("lag needs route='oral' (an absorption lag)")

    @property
    def parameters(self) -> tuple[str, ...]:
        """Names of the structural parameters, in the order :func:`predict_concentrations` reads.

        ``cl`` clearance, ``v`` central volume, ``q`` inter-compartmental clearance, ``vp``
        peripheral volume, ``ka`` absorption rate constant, ``tlag`` absorption lag time.
        """
        names = ["cl", "v"]
        if self.compartments == 2:
            names += ["q", "vp"]
        if self.route == "oral":
            names.append("ka")
        if self.lag:
            names.append("tlag")
        return tuple(names)

    def __str__(self) -> str:
        size = {1: "one", 2: "two"}[self.compartments]
        if self.route == "iv":
            entry = "IV bolus or zero-order infusion"
        else:
            entry = "first-order absorption" + (" with a lag time" if self.lag else "")
        return f"{size}-compartment model, {entry}"


# --- Second-order forward differentiation of the per-patient quantities -------------------------
#
# A jet holds a value, its gradient and its Hessian with respect to the log parameters
# (shapes (...), (..., p) and (..., p, p)); ``None`` for the orders not asked for. The
# disposition's coefficients and exponents are a few arithmetic steps from the parameters, and
# carrying jets through those steps gives their exact first and second derivatives.


@dataclass(frozen=True)
class _Jet:
    value: np.ndarray
    grad: np.ndarray | None = None
    hess: np.ndarray | None = None


def _power_products(log_theta: np.ndarray, weights: np.ndarray, order: int) -> _Jet:
    """The jets of ``exp(weights[r] . log_theta)`` for every row ``r`` of ``weights`` at once,
    stacked on a last axis (values ``(..., r)``, ``(..., r, p)``, ``(..., r, p, p)``): products
    of powers of the parameters, from one exponential and one product."""
    value = np.exp(log_theta @ weights.T)
    grad = value[..., None] * weights if order >= 1 else None
    if order < 2:
        return _Jet(value, grad)
    return _Jet(value, grad, value[..., None, None] * np.einsum("rk,rl->rkl", weights, weights))


def _row(jets: _Jet, index: int) -> _Jet:
    """One row of stacked jets (:func:`_power_products`)."""
    grad = None if jets.grad is None else jets.grad[..., index, :]
    hess = None if jets.hess is None else jets.hess[..., index, :, :]
    return _Jet(jets.value[..., index], grad, hess)


def _add(x: _Jet, y: _Jet, sign: float = 1.0) -> _Jet:
    grad = None if x.grad is None else x.grad + sign * y.grad
    hess = None if x.hess is None else x.hess + sign * y.hess
    return _Jet(x.value + sign * y.value, grad, hess)


def _scale(x: _Jet, factor: float) -> _Jet:
    grad = None if x.grad is None else factor * x.grad
    hess = None if x.hess is None else factor * x.hess
    return _Jet(factor * x.value, grad, hess)


def _multiply(x: _Jet, y: _Jet) -> _Jet:
    value = x.value * y.value
    if x.grad is None:
        return _Jet(value)
    grad = x.grad * y.value[..., None] + y.grad * x.value[..., None]
    if x.hess is None:
        return _Jet(value, grad)
    cross = x.grad[..., :, None] * y.grad[..., None, :]
    hess = (
        x.hess * y.value[..., None, None]
        + y.hess * x.value[..., None, None]
        + cross
        + np.swapaxes(cross, -1, -2)
    )
    return _Jet(value, grad, hess)


def _compose(x: _Jet, f0: np.ndarray, f1: np.ndarray, f2: np.ndarray) -> _Jet:
    """The jet of ``h(x)`` from ``h``, ``h'`` and ``h''`` at ``x.value`` (the chain rule)."""
    if x.grad is None:
        return _Jet(f0)
    grad = f1[..., None] * x.grad
    if x.hess is None:
        return _Jet(f0, grad)
    hess = f1[..., None, None] * x.hess + f2[..., None, None] * (
        x.grad[..., :, None] * x.grad[..., None, :]
    )
    return _Jet(f0, grad, hess)


def _reciprocal(x: _Jet) -> _Jet:
    r = 1 / x.value
    return _compose(x, r, -(r**2), 2 * r**3)


def _sqrt(x: _Jet) -> _Jet:
    s = np.sqrt(x.value)
    return _compose(x, s, 0.5 / s, -0.25 / (s * x.value))


def _power_rows(model: PkModel) -> np.ndarray:
    """The primitives that are products of powers of the parameters, as rows of exponents:
    ``1/V`` and ``k10 = CL/V``, then ``k12 = Q/V`` and ``k21 = Q/VP`` (two compartments), then
    ``ka`` and ``tlag`` where the model has them."""
    names = model.parameters
    rows = [{"v": -1.0}, {"cl": 1.0, "v": -1.0}]
    if model.compartments == 2:
        rows += [{"q": 1.0, "v": -1.0}, {"q": 1.0, "vp": -1.0}]
    rows += [{name: 1.0} for name in ("ka", "tlag") if name in names]
    return np.array([[row.get(name, 0.0) for name in names] for row in rows])


def _disposition_jets(powers: _Jet) -> list[_Jet]:
    """Coefficients ``c_m`` then exponents ``lambda_m`` of a two-compartment model's unit-bolus
    response, as jets, from the power products ``1/V``, ``k10``, ``k12``, ``k21``."""
    inverse_v, k10, k12, k21 = (_row(powers, index) for index in range(4))
    # The exponents are the roots of s^2 - (k10 + k12 + k21) s + k10 k21. Their difference,
    # the square root of the discriminant, written as a sum of positive terms (no cancellation).
    gap = _add(k10, k21, -1.0)
    discriminant = _add(
        _multiply(gap, gap),
        _multiply(k12, _add(k12, _scale(_add(k10, k21), 2.0))),
    )
    root = _sqrt(discriminant)
    alpha = _scale(_add(_add(_add(k10, k12), k21), root), 0.5)
    beta = _multiply(_multiply(k10, k21), _reciprocal(alpha))  # the product of the roots
    scale = _multiply(inverse_v, _reciprocal(root))
    coef_alpha = _multiply(_add(alpha, k21, -1.0), scale)
    coef_beta = _multiply(_add(k21, beta, -1.0), scale)
    return [coef_alpha, coef_beta, alpha, beta]


def _primitives(
    model: PkModel, log_theta: np.ndarray, order: int
) -> tuple[np.ndarray, np.ndarray | None, np.ndarray | None]:
    """The quantities the response is written in, per patient, and their derivatives.

    In order: the coefficients ``c_m`` and exponents ``lambda_m`` of the disposition, then
    ``ka`` and ``tlag`` where the model has them. Returns their values ``(..., n, u)``, first
    derivatives ``(..., n, u, p)`` and second derivatives ``(..., n, u, p, p)`` with respect to
    the log parameters (``None`` beyond ``order``).
    """
    powers = _power_products(log_theta, _power_rows(model), order)
    if model.compartments == 1:  # 1/V, k10, ka and tlag: every primitive a power product
        return powers.value, powers.grad, powers.hess
    absorption = [_row(powers, index) for index in range(4, powers.value.shape[-1])]
    jets = _disposition_jets(powers) + absorption
    values = np.stack([j.value for j in jets], axis=-1)
    grad = np.stack([j.grad for j in jets], axis=-2) if order >= 1 else None
    hess = np.stack([j.hess for j in jets], axis=-3) if order >= 2 else None
    return values, grad, hess


# --- The response of each observation to each dose ---------------------------------------------


@dataclass(frozen=True)
class _Dosing:
    """The (dose, observation) pairs through which doses reach observations.

    A dose reaches an observation of its own patient and dosing period taken at or after the
    dose. Observations are flat (``obs_patient`` gives each one's patient); pairs are sorted
    by observation, and every observation has at least one pair (a pair of amount 0 where no
    dose reaches it), so that ``numpy.add.reduceat`` over ``pair_start`` sums them.
    """

    obs_patient: np.ndarray
    pair_patient: np.ndarray
    pair_start: np.ndarray
    elapsed: np.ndarray
    amount: np.ndarray
    duration: np.ndarray
    infused: bool
    central: np.ndarray | None = None  # pairs of doses into the central compartment (oral model)
    interval: np.ndarray | None = None  # pairs' steady-state interval (SS=1), 0 for other doses


def _dosing(
    dose_time: np.ndarray,
    dose_amount: np.ndarray,
    dose_duration: np.ndarray,
    times: np.ndarray,
    *,
    observed: np.ndarray | None = None,
    same_period: np.ndarray | None = None,
    dose_central: np.ndarray | None = None,
    dose_interval: np.ndarray | None = None,
) -> _Dosing:
    """Pairs of the doses ``(n, d)`` and observation times ``(n, t)`` where ``observed``;
    ``dose_central`` flags the doses into the central compartment under an oral model, and
    ``dose_interval`` holds the interval of each steady-state dose (0 for the others)."""
    observed = np.ones(times.shape, dtype=bool) if observed is None else observed
    patient, slot = np.nonzero(observed)
    elapsed = times[patient, slot][:, None] - dose_time[patient]  # (observations, doses)
    reaches = (elapsed >= 0) & (dose_amount[patient] > 0)
    if same_period is not None:
        reaches &= same_period[patient, :, slot]
    # Observations no dose reaches get one pair of amount 0 in the first dose's column.
    unreached = ~reaches.any(axis=1)
    reaches[unreached, 0] = True
    obs, dose = np.nonzero(reaches)
    amount = np.where(unreached[obs], 0.0, dose_amount[patient[obs], dose])
    duration = dose_duration[patient[obs], dose]
    return _Dosing(
        obs_patient=patient,
        pair_patient=patient[obs],
        pair_start=np.searchsorted(obs, np.arange(patient.size)),
        elapsed=np.where(unreached[obs], 0.0, elapsed[obs, dose]),
        amount=amount,
        duration=duration,
        infused=bool(np.any(duration > 0)),
        central=None if dose_central is None else dose_central[patient[obs], dose] & (amount > 0),
        interval=None if dose_interval is None else dose_interval[patient[obs], dose],
    )


def _phi(x: np.ndarray, order: int) -> list[np.ndarray]:
    """``phi(x) = (1 - exp(-x)) / x`` for ``x >= 0`` and its first two derivatives.

    The closed forms lose digits as ``x`` goes to 0 (the second derivative as ``1/x^2``);
    below ``_SERIES_BELOW`` (0.01) the Taylor series (error below 1e-12) replaces them.
    """
    small = x < _SERIES_BELOW
    safe = np.where(small, 1.0, x)
    expm1 = np.expm1(-safe)
    decay = expm1 + 1
    values = [-expm1 / safe]
    if order >= 1:
        values.append((safe * decay + expm1) / safe**2)
    if order >= 2:
        values.append(-(safe * (safe + 2) * decay + 2 * expm1) / safe**3)
    if small.any():
        s = x[small]
        series = [
            1 - s * (1 / 2 - s * (1 / 6 - s * (1 / 24 - s / 120))),
            -1 / 2 + s * (1 / 3 - s * (1 / 8 - s * (1 / 30 - s / 144))),
            1 / 3 - s * (1 / 4 - s * (1 / 10 - s * (1 / 36 - s / 168))),
        ]
        for value, exact in zip(values, series, strict=False):
            value[small] = exact
    return values


def _bolus_or_infusion(
    lam: np.ndarray, t: np.ndarray, duration: np.ndarray, infused: bool, order: int
):
    """Response ``E`` to a unit dose into the central compartment, and ``dE/dlam``, ``d2E/dlam2``.

    A bolus gives ``exp(-lam t)``; an infusion of duration ``tau`` gives
    ``exp(-lam t2) (delta / tau) phi(lam delta)`` with ``delta = min(t, tau)``,
    ``t2 = t - delta``.
    """
    if not infused:
        decay = np.exp(-lam * t)
        return [decay, -t * decay, t * t * decay][: order + 1]
    delta = np.minimum(t, duration)
    after = t - delta
    share = np.where(duration > 0, delta / np.where(duration > 0, duration, 1.0), 1.0)
    phi = _phi(lam * delta, order)
    decay = np.exp(-lam * after)
    u0 = share * phi[0]
    out = [decay * u0]
    if order >= 1:
        u1 = share * delta * phi[1]
        out.append(decay * (u1 - after * u0))
    if order >= 2:
        u2 = share * delta**2 * phi[2]
        out.append(decay * (after**2 * u0 - 2 * after * u1 + u2))
    return out


def _response(model: PkModel, dosing: _Dosing, u: np.ndarray, order: int):
    """Each observation's prediction and its derivatives in the primitives (see ``_primitives``).

    Returns ``f`` ``(..., N)``, ``f_u`` ``(..., N, u)`` and ``f_uu`` ``(..., N, u, u)`` up to
    ``order``. Each exponential term ``c_m E(lam_m, ka, t - tlag)`` of each pair is
    differentiated by hand, then the pairs are summed into their observations.
    """
    if model.route == "iv":
        return _central_response(model, dosing, u, dosing.amount, order)
    if dosing.central is None:
        return _depot_response(model, dosing, u, dosing.amount, order)
    # An oral model with IV doses: the depot's doses and the central ones add up; the central
    # ones do not depend on ka or tlag (zero columns in those primitives).
    depot = _depot_response(model, dosing, u, np.where(dosing.central, 0.0, dosing.amount), order)
    central = _central_response(
        model, dosing, u, np.where(dosing.central, dosing.amount, 0.0), order
    )
    summed = [depot[0] + central[0]]
    for k, (d, c) in enumerate(zip(depot[1:], central[1:], strict=True), start=1):
        if d is not None:
            d = d.copy()
            d[(..., *(slice(0, c.shape[-1]),) * k)] += c
        summed.append(d)
    return tuple(summed)


def _pair_terms(m: int, dosing: _Dosing, u: np.ndarray, amounts: np.ndarray) -> tuple:
    """The primitives at each (dose, observation) pair (all, ``c_m``, ``lambda_m``), the
    elapsed times and amounts as columns, and the sum of pairs into their observations."""
    at_pairs = u[..., dosing.pair_patient, :]

    def total(x: np.ndarray) -> np.ndarray:
        return np.add.reduceat(x, dosing.pair_start, axis=-2)

    c, lam = at_pairs[..., :m], at_pairs[..., m : 2 * m]
    return at_pairs, c, lam, dosing.elapsed[:, None], amounts[:, None], total


def _central_response(model: PkModel, dosing: _Dosing, u: np.ndarray, amounts, order: int):
    """``_response`` for doses ``amounts`` (per pair) into the central compartment: boluses,
    or infusions where the dose has a duration. Derivatives in the ``c_m`` and ``lambda_m``
    primitives only."""
    m = model.compartments
    _, c, lam, t, amount, total = _pair_terms(m, dosing, u, amounts)

    e = _bolus_or_infusion(lam, t, dosing.duration[:, None], dosing.infused, order)
    if dosing.interval is not None:  # steady-state boluses (no infusion at steady state)
        e = _steady_bolus(e, lam, dosing.interval[:, None], order)
    f = total(amount * c * e[0]).sum(axis=-1)
    if order == 0:
        return f, None, None
    weighted = [amount * x for x in e]
    first = [total(weighted[0]), total(c * weighted[1])]  # d/dc_m, d/dlam_m
    f_u = np.concatenate(first, axis=-1)
    if order == 1:
        return f, f_u, None
    f_uu = np.zeros((*f_u.shape, f_u.shape[-1]))
    diagonal = np.arange(m)
    cross = total(weighted[1])
    f_uu[..., diagonal, m + diagonal] = cross
    f_uu[..., m + diagonal, diagonal] = cross
    f_uu[..., m + diagonal, m + diagonal] = total(c * weighted[2])
    return f, f_u, f_uu


def _depot_response(model: PkModel, dosing: _Dosing, u: np.ndarray, amounts, order: int):
    """``_response`` for doses ``amounts`` (per pair) into the depot, absorbed at first order
    after any lag."""
    m = model.compartments
    at_pairs, c, lam, t, amount, total = _pair_terms(m, dosing, u, amounts)

    ka = at_pairs[..., 2 * m : 2 * m + 1]
    active = None
    if model.lag and dosing.interval is not None:
        raise ValueError("steady-state doses (SS=1) under a model with a lag time are not modelled")
    if model.lag:
        shifted = t - at_pairs[..., 2 * m + 1 : 2 * m + 2]
        active = shifted >= 0
        t = np.where(active, shifted, 0.0)
        amount = amount * active
    # a(ka, lam, t) = (exp(-lam t) - exp(-ka t)) / (ka - lam) = t exp(-lo t) phi((hi - lo) t),
    # with lo, hi the smaller and larger of ka and lam: symmetric, and free of overflow.
    lo, hi = np.minimum(lam, ka), np.maximum(lam, ka)
    phi = _phi((hi - lo) * t, order)
    decay_lo = t * np.exp(-lo * t)
    a = decay_lo * phi[0]
    single = {"a": a}
    if dosing.interval is not None:  # steady-state doses (refused with a lag time)
        a = _steady_depot(single, lam, ka, t, dosing.interval[:, None], 0)["a"]
    f = total(amount * c * ka * a).sum(axis=-1)
    if order == 0:
        return f, None, None
    swap = ka < lam  # then lo is ka
    t_decay = t * decay_lo
    a_hi, a_lo = t_decay * phi[1], -t_decay * (phi[0] + phi[1])
    a_lam, a_ka = np.where(swap, a_hi, a_lo), np.where(swap, a_lo, a_hi)
    if dosing.interval is not None:
        single.update(lam=a_lam, ka=a_ka)
        steady = _steady_depot(single, lam, ka, t, dosing.interval[:, None], 1)
        a_lam, a_ka = steady["lam"], steady["ka"]
    columns = [amount * ka * a, amount * c * ka * a_lam, amount * c * (a + ka * a_ka)]
    if model.lag:
        decay_ka = np.exp(-ka * t)
        a_t = decay_ka - lam * a  # from d/dt a = exp(-ka t) - lam a
        columns.append(-amount * c * ka * a_t)
    sums = [total(x) for x in columns]
    f_u = np.concatenate(
        [sums[0], sums[1], *(s.sum(axis=-1, keepdims=True) for s in sums[2:])], axis=-1
    )
    if order == 1:
        return f, f_u, None
    t2_decay = t * t_decay
    a_hihi = t2_decay * phi[2]
    a_lohi = -t2_decay * (phi[1] + phi[2])
    a_lolo = t2_decay * (phi[0] + 2 * phi[1] + phi[2])
    a_lam_lam = np.where(swap, a_hihi, a_lolo)
    a_ka_ka = np.where(swap, a_lolo, a_hihi)
    if dosing.interval is not None:
        single.update(lam_lam=a_lam_lam, lam_ka=a_lohi, ka_ka=a_ka_ka)
        steady = _steady_depot(single, lam, ka, t, dosing.interval[:, None], 2)
        a_lam_lam, a_lohi, a_ka_ka = (steady[k] for k in ("lam_lam", "lam_ka", "ka_ka"))
    # Second derivatives of c ka a(ka, lam, t - tlag) in (c, lam, ka, tlag), per term m.
    pieces = {
        ("c", "lam"): amount * ka * a_lam,
        ("c", "ka"): amount * (a + ka * a_ka),
        ("lam", "lam"): amount * c * ka * a_lam_lam,
        ("lam", "ka"): amount * c * (a_lam + ka * a_lohi),
        ("ka", "ka"): amount * c * (2 * a_ka + ka * a_ka_ka),
    }
    if model.lag:
        a_t_lam = -a - lam * a_lam
        a_t_ka = -t * decay_ka - lam * a_ka
        a_t_t = -ka * decay_ka - lam * a_t
        pieces[("c", "tlag")] = -amount * ka * a_t
        pieces[("lam", "tlag")] = -amount * c * ka * a_t_lam
        pieces[("ka", "tlag")] = -amount * c * (a_t + ka * a_t_ka)
        pieces[("tlag", "tlag")] = amount * c * ka * a_t_t
    sums = {key: total(value) for key, value in pieces.items()}
    f_uu = np.zeros((*f_u.shape, f_u.shape[-1]))
    diagonal = np.arange(m)
    index = {"ka": 2 * m, "tlag": 2 * m + 1}

    def put(rows, cols, value):
        f_uu[..., rows, cols] = value
        f_uu[..., cols, rows] = value

    put(diagonal, m + diagonal, sums[("c", "lam")])
    put(m + diagonal, m + diagonal, sums[("lam", "lam")])
    for first in ("c", "lam"):
        for second in ("ka", "tlag"):
            if (first, second) in sums:
                put(diagonal + (m if first == "lam" else 0), index[second], sums[(first, second)])
    for first, second in (("ka", "ka"), ("ka", "tlag"), ("tlag", "tlag")):
        if (first, second) in sums:
            put(index[first], index[second], sums[(first, second)].sum(axis=-1))
    return f, f_u, f_uu


def _sensitivities(model: PkModel, dosing: _Dosing, log_theta: np.ndarray, order: int):
    """Predictions at each observation and their exact derivatives in the log parameters.

    ``log_theta`` has shape ``(..., n, p)``. Returns ``f`` ``(..., N)``, ``g = df/dlog theta``
    ``(..., N, p)`` and ``G = d2f/dlog theta^2`` ``(..., N, p, p)`` up to ``order`` (0, 1 or
    2; ``None`` beyond). The chain rule joins the response's derivatives in the primitives
    (``_response``) with the primitives' derivatives in the parameters
    (``_primitives``).
    """
    u, u_grad, u_hess = _primitives(model, log_theta, order)
    f, f_u, f_uu = _response(model, dosing, u, order)
    if order == 0:
        return f, None, None
    jacobian = u_grad[..., dosing.obs_patient, :, :]  # (..., N, u, p)
    g = np.einsum("...a,...ak->...k", f_u, jacobian)
    if order == 1:
        return f, g, None
    G = np.einsum("...ak,...al->...kl", jacobian, np.einsum("...ab,...bl->...al", f_uu, jacobian))
    G += np.einsum("...a,...akl->...kl", f_u, u_hess[..., dosing.obs_patient, :, :, :])
    return f, g, G


def predict_concentrations(
    model: PkModel,
    parameters: object,
    dose_time: object,
    dose_amount: object,
    dose_duration: object,
    times: object,
    *,
    dose_period: object = None,
    time_period: object = None,
    dose_central: object = None,
) -> np.ndarray:
    """Concentrations of a linear PK model after any number of doses, for many patients at once.

    Parameters
    ----------
    model : PkModel
        The structural model.
    parameters : array_like or pandas.DataFrame
        Positive parameter values of shape ``(..., n, len(model.parameters))``, columns in the
        order of ``model.parameters`` (a DataFrame is reordered by column name). Leading
        dimensions evaluate several parameter sets for the same patients at once.
    dose_time, dose_amount, dose_duration : array_like
        Shape ``(n, d)``: each patient's dose times, amounts (not negative) and infusion
        durations (0 for a bolus or an oral dose). Pad patients with fewer doses with
        amount 0.
    times : array_like
        Shape ``(n, t)``: each patient's observation times (pad with any finite value).
    dose_period, time_period : array_like of int, optional
        Shapes ``(n, d)`` and ``(n, t)``: the dosing period of each dose and observation; a
        dose acts only within its own period. Default: one period.
    dose_central : array_like of bool, optional
        Shape ``(n, d)``: under an oral model, the doses given into the central compartment
        (an IV bolus, or an infusion where the duration is positive); the others enter the
        depot. Default: none.

    Returns
    -------
    numpy.ndarray
        Concentrations of shape ``(..., n, t)``, in amount units per volume unit.

    Examples
    --------
    One 100 mg IV bolus, V = 10 L, CL = 1 L/h: 10 mg/L at once, 10/e mg/L after 10 h.

    >>> predict_concentrations(PkModel(route="iv"), [[1.0, 10.0]], [[0.0]], [[100.0]],
    ...                        [[0.0]], [[0.0, 10.0]]).round(4)
    array([[10.    ,  3.6788]])
    """
    if not isinstance(model, PkModel):
        raise TypeError(f"model must be a PkModel, got {type(model).__name__}")
    if isinstance(parameters, pd.DataFrame):
        parameters = parameters.loc[:, list(model.parameters)].to_numpy(dtype=float)
    theta = check_array(parameters, "parameters")
    if theta.ndim < 2 or theta.shape[-1] != len(model.parameters):
        raise ValueError(
            f"parameters must have shape (..., n, {len(model.parameters)}), got {theta.shape}"
        )
    if np.any(theta <= 0):
        raise ValueError("parameters must be positive")
    dose_time = check_array(dose_time, "dose_time", ndim=2)
    dose_amount = check_array(dose_amount, "dose_amount", ndim=2)
    dose_duration = check_array(dose_duration, "dose_duration", ndim=2)
    times = check_array(times, "times", ndim=2)
    n = theta.shape[-2]
    for name, array in (("dose_amount", dose_amount), ("dose_duration", dose_duration)):
        if array.shape != dose_time.shape:
            raise ValueError(f"{name} must have the shape of dose_time, {dose_time.shape}")
    if dose_time.shape[0] != n or times.shape[0] != n:
        raise ValueError(f"dose_time and times must have one row per patient ({n})")
    if np.any(dose_amount < 0):
        raise ValueError("dose_amount must not be negative (pad with 0)")
    if np.any(dose_duration < 0):
        raise ValueError("dose_duration must not be negative")
    central = _central_flags(model, dose_central, dose_time.shape)
    depot = np.ones(dose_time.shape, dtype=bool) if central is None else ~central
    if model.route == "oral" and np.any(dose_duration[depot] > 0):
        raise ValueError(
            "model route 'oral' takes no infusions into the depot (dose_duration must be 0 "
            "where dose_central is False)"
        )
    same_period = None
    if dose_period is not None or time_period is not None:
        dose_period = _periods(dose_period, "dose_period", dose_time.shape)
        time_period = _periods(time_period, "time_period", times.shape)
        same_period = dose_period[:, :, None] == time_period[:, None, :]
    dosing = _dosing(
        dose_time,
        dose_amount,
        dose_duration,
        times,
        same_period=same_period,
        dose_central=central,
    )
    with np.errstate(over="ignore", invalid="ignore"):
        f, _, _ = _sensitivities(model, dosing, np.log(theta), 0)
    overflow = ~np.isfinite(f).reshape(-1, f.shape[-1]).all(axis=0)
    if overflow.any():
        raise ValueError(
            f"the predictions overflow (not finite) for patients (rows) "
            f"{np.unique(dosing.obs_patient[overflow])[:6].tolist()}: doses or parameters are "
            "past floating-point range"
        )
    return f.reshape(f.shape[:-1] + times.shape)


def _central_flags(model: PkModel, value: object, shape: tuple[int, int]) -> np.ndarray | None:
    """The doses into the central compartment under an oral model (None: none of them)."""
    if value is None:
        return None
    flags = np.asarray(value)
    if flags.dtype != bool or flags.shape != shape:
        raise ValueError(f"dose_central must be a boolean array of shape {shape}")
    if model.route == "iv" or not flags.any():
        return None  # every dose of an IV model enters the central compartment
    return flags


def _periods(value: object, name: str, shape: tuple[int, int]) -> np.ndarray:
    """Dosing periods of the given shape (all 0 when ``value`` is None)."""
    if value is None:
        return np.zeros(shape)
    periods = check_array(value, name, ndim=2)
    if periods.shape != shape:
        raise ValueError(f"{name} must have shape {shape}, got {periods.shape}")
    return periods


# --- Steady state (NONMEM's SS=1) -----------------------------------------------------------
#
# A steady-state dose at interval II stands for itself and the same dose every II hours
# before it, for ever: each exponential e^{-x t} of its response sums to e^{-x t} S(x), with
# S(x) = 1 / (1 - e^{-x II}) the geometric series. Into the central compartment that is a
# factor on each term; from the depot, c ka (e^{-lam t} S(lam) - e^{-ka t} S(ka)) / (ka - lam)
# = c ka (S(lam) a + e^{-ka t} D) with a the single dose's difference of exponentials and D the
# divided difference (S(lam) - S(ka)) / (ka - lam), by quadrature where ka and lam are close.

_GAUSS_NODES, _GAUSS_WEIGHTS = np.polynomial.legendre.leggauss(10)
_CLOSE_RATES = 0.1  # |ka - lam| below this share of the smaller: D by quadrature


def _accumulation(x: np.ndarray, interval: np.ndarray, order: int) -> list[np.ndarray]:
    """``S(x) = 1 / (1 - exp(-x II))`` and its first ``order`` derivatives in ``x`` (at most
    3); 1 and 0 where ``interval`` is 0 (not a steady-state dose)."""
    steady = interval > 0
    ii = np.where(steady, interval, 1.0)
    w = np.exp(-x * ii)
    one_minus = -np.expm1(-x * ii)
    values = [1 / one_minus]
    if order >= 1:
        values.append(-ii * w / one_minus**2)
    if order >= 2:
        values.append(ii**2 * w * (1 + w) / one_minus**3)
    if order >= 3:
        values.append(-(ii**3) * w * (1 + 4 * w + w**2) / one_minus**4)
    return [np.where(steady, v, float(k == 0)) for k, v in enumerate(values)]


def _steady_bolus(e: list, lam: np.ndarray, interval: np.ndarray, order: int) -> list:
    """A bolus's ``[E, dE/dlam, d2E/dlam2]`` summed over its steady state: ``E S(lam)``."""
    s = _accumulation(lam, interval, order)
    out = [e[0] * s[0]]
    if order >= 1:
        out.append(e[1] * s[0] + e[0] * s[1])
    if order >= 2:
        out.append(e[2] * s[0] + 2 * e[1] * s[1] + e[0] * s[2])
    return out


def _divided_difference(lam, ka, interval, order: int) -> list[np.ndarray]:
    """``D = (S(lam) - S(ka)) / (ka - lam)`` and its derivatives ``[D, D_lam, D_ka,
    D_lam_lam, D_lam_ka, D_ka_ka]`` up to ``order``: in closed form where the rates are apart,
    and as ``-int_0^1 S'(lam + s (ka - lam)) ds`` (Gauss-Legendre) where they are close."""
    lam, ka = np.broadcast_arrays(lam, ka)
    gap = ka - lam
    close = np.abs(gap) < _CLOSE_RATES * np.minimum(lam, ka)
    safe = np.where(close, 1.0, gap)
    s_lam, s_ka = _accumulation(lam, interval, order + 1), _accumulation(ka, interval, order + 1)
    far = [(s_lam[0] - s_ka[0]) / safe]
    if order >= 1:
        far += [(s_lam[1] + far[0]) / safe, -(s_ka[1] + far[0]) / safe]
    if order >= 2:
        d_lam, d_ka = far[1], far[2]
        far += [(s_lam[2] + 2 * d_lam) / safe, (d_ka - d_lam) / safe, -(s_ka[2] + 2 * d_ka) / safe]
    if not close.any():
        return far
    s = (_GAUSS_NODES + 1) / 2  # nodes on [0, 1], weights summing to 1
    x = lam[..., None] + s * gap[..., None]
    derivative = _accumulation(x, interval[..., None], order + 1)
    weights = [np.ones_like(s)]
    if order >= 1:
        weights += [1 - s, s]
    if order >= 2:
        weights += [(1 - s) ** 2, s * (1 - s), s**2]
    kth = [1, 2, 2, 3, 3, 3]  # which derivative of S each integrand takes
    near = [
        -(derivative[k] * w * _GAUSS_WEIGHTS / 2).sum(-1)
        for k, w in zip(kth[: len(weights)], weights, strict=True)
    ]
    return [np.where(close, n, f) for n, f in zip(near, far, strict=True)]


def _steady_depot(a: dict, lam, ka, t, interval, order: int) -> dict:
    """The depot's difference of exponentials ``a`` and its derivatives (``a``, ``lam``,
    ``ka``, ``lam_lam``, ``lam_ka``, ``ka_ka``) summed over a steady state:
    ``A = S(lam) a + exp(-ka t) D``."""
    s = _accumulation(lam, interval, order)
    d = _divided_difference(lam, ka, interval, order)
    e = np.exp(-ka * t)
    out = {"a": s[0] * a["a"] + e * d[0]}
    if order >= 1:
        out["lam"] = s[1] * a["a"] + s[0] * a["lam"] + e * d[1]
        out["ka"] = s[0] * a["ka"] - t * e * d[0] + e * d[2]
    if order >= 2:
        out["lam_lam"] = s[2] * a["a"] + 2 * s[1] * a["lam"] + s[0] * a["lam_lam"] + e * d[3]
        out["lam_ka"] = s[1] * a["ka"] + s[0] * a["lam_ka"] - t * e * d[1] + e * d[4]
        out["ka_ka"] = s[0] * a["ka_ka"] + t**2 * e * d[0] - 2 * t * e * d[2] + e * d[5]
    return out
