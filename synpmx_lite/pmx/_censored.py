r"""Beal's M3 likelihood for observations below the limit of quantification.

A censored observation (NONMEM's ``CENS`` = 1, its ``DV`` the limit :math:`L`) contributes
the probability that a measurement would have fallen below the limit,
:math:`P(y < L) = \Phi(z)`, :math:`z = (L - f)/\sqrt{V}`, in place of the normal density
(Beal 2001, method M3). In the objective's units it adds :math:`g(z) = -2\log\Phi(z)` to
:math:`L_i(\eta)`. The same :math:`z` serves every error model the engine has: :math:`V =
a^2 + b^2 f^2` (additive, proportional or combined), and on log concentrations :math:`f` and
:math:`L` are logarithms under an additive error. The term is written for all three, but
:func:`synpmx_lite.pmx.population.fit_population` refuses combined error on censored data,
whose additive part the censoring leaves undetermined.

What is computed is the FOCE-I objective (``synpmx_lite.pmx.population``) with this term
in place of the density: the modes minimise :math:`L_i(\eta)` with the exact term, and the
Hessian in :math:`\log|H_i/2|` is FOCE-I's first-order one, :math:`H_i = \sum_j w_{ij}\,
g_{ij} g_{ij}^\top + 2\Omega^{-1}`, for censored rows as for measured ones. A censored row's
weight is :math:`w = g''(z)\,(\partial z/\partial f)^2`, positive since :math:`\log\Phi` is
concave: the term's exact second derivative in :math:`f` under additive error
(:math:`\partial^2 z/\partial f^2 = 0`), its Gauss-Newton part where the variance moves with
:math:`f`. The terms in the curvature of the prediction, :math:`g'(z)\,\partial z/\partial f
\;\partial^2 f/\partial\eta^2`, are left out, as FOCE-I leaves them out of the measured rows:
this is not NONMEM's M3 under ``LAPLACIAN`` (Ahn et al. 2008), whose Hessian is the full
second derivative in :math:`\eta`, and its OFV differs from that one by those terms.

The objective needs, per observation, the derivatives of the data term in :math:`f` up to the
third (through the information's dependence on the modes) and their moves with the residual
parameters.

With :math:`\lambda = \varphi(z)/\Phi(z)`: :math:`g' = -2\lambda`,
:math:`g'' = 2\lambda(z + \lambda)`, :math:`g''' = -2\lambda[(z+\lambda)^2 - 1 +
\lambda(z+\lambda)]`.

References
----------
Beal SL. Ways to fit a PK model with some data below the quantification limit.
J Pharmacokinet Pharmacodyn. 2001;28(5):481-504.

Ahn JE, Karlsson MO, Dunne A, Ludden TM. Likelihood based approaches to handling data below
the quantification limit using NONMEM VI. J Pharmacokinet Pharmacodyn. 2008;35(4):401-421.
"""

from __future__ import annotations

import numpy as np
from scipy import special

_LOG_ROOT_2PI = 0.5 * np.log(2 * np.pi)


def _z_derivatives(z: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``g(z) = -2 log Phi(z)`` and its first three derivatives, stable in both tails."""
    log_cdf = special.log_ndtr(z)
    mills = np.exp(-0.5 * z**2 - _LOG_ROOT_2PI - log_cdf)  # phi / Phi
    shifted = z + mills
    g1 = -2 * mills
    g2 = 2 * mills * shifted
    g3 = -2 * mills * (shifted**2 - 1 + mills * shifted)
    return -2 * log_cdf, g1, g2, g3


def censored_terms(
    limit: np.ndarray,
    f: np.ndarray,
    variance: np.ndarray,
    slope: np.ndarray,
    curvature: np.ndarray,
    fixed: np.ndarray,
) -> dict:
    """The M3 data term of each observation and its derivatives in the prediction ``f``.

    Parameters
    ----------
    limit : numpy.ndarray
        The limit of each observation ``(N,)`` (on the scale of ``f``).
    f, variance, slope, curvature : numpy.ndarray
        Predictions ``(B, N)``, ``V``, ``dV/df`` and ``d2V/df2`` there.
    fixed : numpy.ndarray
        Where ``V`` is 0 (proportional error at a prediction of 0): the observation is then
        certainly below the limit and adds nothing.

    Returns
    -------
    dict
        ``data``, ``d_f``, ``d_ff`` (exact), ``weight`` (the information's), ``weight_f``
        (its derivative in ``f``), and what the residual parameters' moves need
        (``z``, ``sd``, ``sd_f``, ``z_f``, ``g1``, ``g2``, ``g3``, ``variance``, ``slope``).
    """
    sd = np.sqrt(variance)
    # A zero variance has been set to 1 upstream; its row is certain: z large, g = 0.
    z = np.where(fixed, 40.0, (limit - f) / sd)
    data, g1, g2, g3 = _z_derivatives(z)
    sd_f = np.where(fixed, 0.0, slope / (2 * sd))
    sd_ff = np.where(fixed, 0.0, curvature / (2 * sd) - slope**2 / (4 * sd**3))
    z_f = -1 / sd - z * sd_f / sd
    z_ff = 2 * sd_f / sd**2 + 2 * z * sd_f**2 / sd**2 - z * sd_ff / sd
    return dict(
        data=data, d_f=g1 * z_f, d_ff=g2 * z_f**2 + g1 * z_ff, weight=g2 * z_f**2,
        weight_f=g3 * z_f**3 + 2 * g2 * z_f * z_ff, z=z, sd=sd, sd_f=sd_f, z_f=z_f,
        g1=g1, g2=g2, g3=g3, variance=variance, slope=slope,
    )  # fmt: skip


def censored_residual_moves(
    c: dict, dv: np.ndarray, dslope: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """How one residual parameter (log scale) moves the M3 term, its ``f``-derivative and
    the information's weight, given its moves of ``V`` (``dv``) and of ``dV/df``
    (``dslope``): ``(d data, d d_f, d weight)``."""
    z, sd, sd_f, z_f = c["z"], c["sd"], c["sd_f"], c["z_f"]
    sd_psi = dv / (2 * sd)
    z_psi = -z * sd_psi / sd
    sd_f_psi = dslope / (2 * sd) - c["slope"] * sd_psi / (2 * sd**2)
    z_f_psi = sd_psi / sd**2 - z_psi * sd_f / sd - z * sd_f_psi / sd + z * sd_f * sd_psi / sd**2
    d_data = c["g1"] * z_psi
    d_d_f = c["g2"] * z_psi * z_f + c["g1"] * z_f_psi
    d_weight = c["g3"] * z_psi * z_f**2 + 2 * c["g2"] * z_f * z_f_psi
    return d_data, d_d_f, d_weight
