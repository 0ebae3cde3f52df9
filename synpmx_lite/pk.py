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
(superposition). A dose acts only on the observations of its own dosing period, so that a
study with a washout between periods (time starting again at zero) needs no reset records.

References
----------
Gibaldi M, Perrier D. Pharmacokinetics. 2nd ed. Marcel Dekker; 1982.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from ._validation import check_array, check_count

__all__ = ["PkModel", "predict_concentrations"]

_ROUTES = ("oral", "iv")

# Below this |k_a - lambda| t the difference quotient loses digits; its series is used instead.
_SERIES_BELOW = 1e-4


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


def _disposition(model: PkModel, theta: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Coefficients and exponents of the unit-bolus response, each of shape ``(..., m)``."""
    cl, v = theta[..., 0], theta[..., 1]
    if model.compartments == 1:
        return (1 / v)[..., None], (cl / v)[..., None]
    q, vp = theta[..., 2], theta[..., 3]
    k10, k12, k21 = cl / v, q / v, q / vp
    total = k10 + k12 + k21
    alpha = (total + np.sqrt(total**2 - 4 * k10 * k21)) / 2
    beta = k10 * k21 / alpha  # the product of the roots, free of cancellation
    coef_alpha = (alpha - k21) / (v * (alpha - beta))
    coef_beta = (k21 - beta) / (v * (alpha - beta))
    return np.stack([coef_alpha, coef_beta], axis=-1), np.stack([alpha, beta], axis=-1)


def _absorbed(ka: np.ndarray, lam: np.ndarray, t: np.ndarray) -> np.ndarray:
    """``(exp(-lam t) - exp(-ka t)) / (ka - lam)``, stable where ``ka`` is close to ``lam``."""
    gap = ka - lam
    x = gap * t
    near = np.abs(x) < _SERIES_BELOW
    decay = np.exp(-lam * t)
    direct = (decay - np.exp(-ka * t)) / np.where(near, 1.0, gap)
    return np.where(near, t * decay * (1 - x / 2 + x**2 / 6), direct)


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
        Shape ``(n, d)``: each patient's dose times, amounts and infusion durations (0 for a
        bolus or an oral dose). Pad patients with fewer doses with amount 0.
    times : array_like
        Shape ``(n, t)``: each patient's observation times (pad with any finite value).
    dose_period, time_period : array_like of int, optional
        Shapes ``(n, d)`` and ``(n, t)``: the dosing period of each dose and observation; a
        dose acts only within its own period. Default: one period.

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
    if np.any(dose_duration < 0):
        raise ValueError("dose_duration must not be negative")
    if model.route == "oral" and np.any(dose_duration > 0):
        raise ValueError("model route 'oral' takes no infusions (dose_duration must be 0)")
    same_period = None
    if dose_period is not None or time_period is not None:
        dose_period = np.zeros(dose_time.shape) if dose_period is None else dose_period
        time_period = np.zeros(times.shape) if time_period is None else time_period
        same_period = np.asarray(dose_period)[:, :, None] == np.asarray(time_period)[:, None, :]
    return _predict(model, theta, dose_time, dose_amount, dose_duration, times, same_period)


def _predict(
    model: PkModel,
    theta: np.ndarray,
    dose_time: np.ndarray,
    dose_amount: np.ndarray,
    dose_duration: np.ndarray,
    times: np.ndarray,
    same_period: np.ndarray | None,
) -> np.ndarray:
    """:func:`predict_concentrations` without the argument checks, for the estimation loops."""
    coef, lam = _disposition(model, theta)
    # Grid of shape (..., n, d, t, m): patient, dose, observation time, exponential term.
    coef = coef[..., :, None, None, :]
    lam = lam[..., :, None, None, :]
    elapsed = times[:, None, :] - dose_time[:, :, None]
    if model.lag:
        elapsed = elapsed - theta[..., -1][..., None, None]
    active = elapsed >= 0
    if same_period is not None:
        active = active & same_period
    t = np.where(active, elapsed, 0.0)[..., None]
    if model.route == "oral":
        ka = theta[..., model.parameters.index("ka")][..., None, None, None]
        response = dose_amount[:, :, None] * (coef * ka * _absorbed(ka, lam, t)).sum(axis=-1)
    else:
        duration = dose_duration[:, :, None, None]
        decay = np.exp(-lam * t)
        response = (coef * decay).sum(axis=-1)
        infused = duration > 0
        if infused.any():
            # (exp(-lam max(t - duration, 0)) - exp(-lam t)) / (lam duration) per unit dose.
            after_end = np.exp(-lam * np.maximum(t - duration, 0.0))
            rise = (coef / lam * (after_end - decay)).sum(axis=-1)
            response = np.where(
                infused[..., 0], rise / np.where(infused, duration, 1)[..., 0], response
            )
        response = dose_amount[:, :, None] * response
    return np.where(active, response, 0.0).sum(axis=-2)
