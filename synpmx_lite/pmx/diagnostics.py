r"""Residual diagnostics of a population PK fit: NONMEM's PRED, IPRED, WRES, CWRES and IWRES.

For patient :math:`i` with observations :math:`y_i`, typical log parameters :math:`\mu`,
between-subject covariance :math:`\Omega` (diagonal) and empirical Bayes random effects
:math:`\hat\eta_i`:

* PRED :math:`f(\mu, 0)`, the typical patient's prediction; IPRED :math:`f(\mu, \hat\eta_i)`;
* IWRES :math:`(y - \mathrm{IPRED}) / \sqrt{V(\mathrm{IPRED})}`, with :math:`V(f) = a^2 +
  b^2 f^2` the residual variance of the error model;
* WRES, NONMEM's first-order weighted residuals: :math:`L_0^{-1}(y_i - \mathrm{PRED})` with
  :math:`L_0` the Cholesky factor of :math:`G_0 \Omega G_0^\top + \mathrm{diag}\,V(\mathrm{PRED})`
  and :math:`G_0 = \partial f / \partial \eta` at :math:`\eta = 0`;
* CWRES, the conditional weighted residuals of :cite:t:`hooker2007conditional`: the same
  linearisation taken at :math:`\hat\eta_i` instead of 0, so that the expectation is
  :math:`f(\mu, \hat\eta_i) - G \hat\eta_i` and the covariance
  :math:`G \Omega G^\top + \mathrm{diag}\,V(\mathrm{IPRED})`, with :math:`G` at
  :math:`\hat\eta_i` (the FOCE-I approximation the fit itself makes).

Under the model each patient's WRES and CWRES are near independent standard normals; WRES
is known to be misleading under FOCE fits :cite:p:`hooker2007conditional`, so CWRES is the
one to read. Epsilon-shrinkage is :math:`1 - \mathrm{SD}(\mathrm{IWRES})`
:cite:p:`savic2009importance`: near 1 when the individual predictions follow the observations
so closely that the IWRES collapse towards 0 and say little about the error model.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ._foce import _Problem
from .pk import _sensitivities
from .population import ERROR_MODELS, PopulationFit
from .study import StudyEvents

__all__ = ["epsilon_shrinkage", "fit_residuals"]


def fit_residuals(fit: PopulationFit, study: StudyEvents) -> pd.DataFrame:
    """PRED, IPRED, WRES, CWRES and IWRES of every observation of a fit's PK endpoint.

    Parameters
    ----------
    fit : PopulationFit
        The fit.
    study : StudyEvents
        The study it was fitted to (the same patients, in the same order).

    Returns
    -------
    pandas.DataFrame
        One row per observation: ``id`` (source ID), ``time``, ``dv`` (on the fitted scale:
        log concentrations for ``roles.log_dv``), ``pred``, ``ipred``, ``res`` (DV - PRED),
        ``wres``, ``cwres`` and ``iwres``. An observation left out of the likelihood (an
        observed 0 under proportional error) has NaN weighted residuals.
    """
    if not isinstance(fit, PopulationFit):
        raise TypeError(f"fit must be a PopulationFit, got {type(fit).__name__}")
    if not isinstance(study, StudyEvents):
        raise TypeError(f"study must be a StudyEvents, got {type(study).__name__}")
    if list(study.ids) != list(fit.eta.index):
        raise ValueError("study must hold the fit's patients, in the fit's order")
    problem = _Problem(study, fit.model, fit.error, ERROR_MODELS[fit.error])
    names = list(fit.model.parameters)
    mu = np.log(fit.typical[names].to_numpy())
    eta = fit.eta[names].to_numpy()
    pred, g0 = _predictions(problem, np.broadcast_to(mu, eta.shape))
    ipred, g = _predictions(problem, mu + eta)
    a, b = (float(fit.residual.get(name, 0.0)) for name in ("additive", "proportional"))
    omega = fit.omega[names].to_numpy()
    y = problem.y
    linearised = ipred - np.einsum("ok,ok->o", g, eta[problem.patient])
    table = pd.DataFrame(
        {
            "id": study.ids[problem.patient],
            "time": study.obs_time[study.obs_mask],
            "dv": y,
            "pred": pred,
            "ipred": ipred,
            "res": y - pred,
            "wres": _weighted(problem, y - pred, g0, omega, a**2 + b**2 * pred**2),
            "cwres": _weighted(problem, y - linearised, g, omega, a**2 + b**2 * ipred**2),
            "iwres": (y - ipred) / np.sqrt(a**2 + b**2 * ipred**2),
        }
    )
    if problem.left_out is not None:
        table.loc[problem.left_out, ["wres", "cwres", "iwres"]] = np.nan
    return table


def epsilon_shrinkage(residuals: pd.DataFrame) -> float:
    """Epsilon-shrinkage :math:`1 - \\mathrm{SD}(\\mathrm{IWRES})` of a residual table
    (:func:`fit_residuals`), over the observations in the likelihood."""
    return float(1 - np.nanstd(residuals["iwres"].to_numpy()))


def _predictions(problem: _Problem, log_theta: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Predictions on the fitted scale and their derivatives in the random effects (the log
    parameters), one row per observation."""
    with np.errstate(all="ignore"):
        f, g, _ = _sensitivities(problem.model, problem.dosing, log_theta, 1)
    if problem.log_dv:
        positive = f > 0
        g = g / np.where(positive, f, 1.0)[:, None] * positive[:, None]
        f = np.log(np.where(positive, f, np.nan))
    return f, g


def _weighted(
    problem: _Problem, r: np.ndarray, g: np.ndarray, omega: np.ndarray, variance: np.ndarray
) -> np.ndarray:
    """Residuals ``r`` decorrelated patient by patient: ``L^{-1} r`` with ``L`` the Cholesky
    factor of ``G Omega G' + diag(variance)`` (padded to one square block per patient)."""
    slot = np.arange(r.size) - problem.patient_start[problem.patient]
    width = int(slot.max()) + 1
    shape = (problem.n_patients, width)
    padded_r = np.zeros(shape)
    padded_g = np.zeros((*shape, g.shape[1]))
    padded_v = np.ones(shape)
    padded_r[problem.patient, slot] = r
    padded_g[problem.patient, slot] = g
    padded_v[problem.patient, slot] = variance
    covariance = np.einsum("nak,k,nbk->nab", padded_g, omega, padded_g)
    covariance[:, np.arange(width), np.arange(width)] += padded_v
    factor = np.linalg.cholesky(covariance)
    return np.linalg.solve(factor, padded_r[..., None])[..., 0][problem.patient, slot]
