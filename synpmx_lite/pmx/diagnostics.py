r"""Residual diagnostics of a population PK fit: NONMEM's PRED, IPRED, WRES, CWRES and IWRES.

For patient :math:`i` with observations :math:`y_i`, typical log parameters :math:`\mu`,
between-subject covariance :math:`\Omega` (diagonal, or with a correlated pair's 2 x 2 block)
and empirical Bayes random effects :math:`\hat\eta_i`:

* PRED :math:`f(\mu, 0)`, the typical patient's prediction; IPRED :math:`f(\mu, \hat\eta_i)`;
* IWRES :math:`(y - \mathrm{IPRED}) / \sqrt{V(\mathrm{IPRED})}`, with :math:`V(f) = a^2 +
  b^2 f^2` the residual variance of the error model;
* WRES, NONMEM's first-order weighted residuals: :math:`C_0^{-1/2}(y_i - \mathrm{PRED})` with
  :math:`C_0^{-1/2}` the symmetric inverse square root of :math:`C_0 = G_0 \Omega G_0^\top +
  \mathrm{diag}\,V(\mathrm{PRED})` and :math:`G_0 = \partial f / \partial \eta` at
  :math:`\eta = 0`;
* CWRES, the conditional weighted residuals of :cite:t:`hooker2007conditional`: the same
  linearisation taken at :math:`\hat\eta_i` instead of 0, so that the expectation is
  :math:`f(\mu, \hat\eta_i) - G \hat\eta_i` and the covariance
  :math:`G \Omega G^\top + \mathrm{diag}\,V(\mathrm{IPRED})`, with :math:`G` at
  :math:`\hat\eta_i` (the FOCE-I approximation the fit itself makes).

Both are taken over a patient's measured observations only: a censored one (Beal's M3) and
one left out of the likelihood enter neither :math:`y_i` nor the covariance, so that they do
not move the measured rows' residuals. A row of no residual variance (a prediction of 0 under
proportional error) has no weighted residual either.

Under the model each patient's WRES and CWRES are near independent standard normals; WRES
is known to be misleading under FOCE fits :cite:p:`hooker2007conditional`, so CWRES is the
one to read. Epsilon-shrinkage is :math:`1 - \mathrm{SD}(\mathrm{IWRES})`
:cite:p:`savic2009importance`: near 1 when the individual predictions follow the observations
so closely that the IWRES collapse towards 0 and say little about the error model.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import plotnine as p9

from .._validation import check_count, check_rng
from ..plotting import theme_book
from ..tables import percentile_name
from ._foce import _Problem
from .pk import _sensitivities
from .study import StudyEvents

# A fit is a population.PopulationFit, read by its fields: population imports this module
# (PopulationFit.residuals), so this one cannot import it back.

__all__ = [
    "VPC_INTERVAL",
    "VPC_PERCENTILES",
    "epsilon_shrinkage",
    "fit_residuals",
    "goodness_of_fit_plot",
    "visual_predictive_check",
    "vpc_plot",
]

#: The percentiles of a visual predictive check, as quantiles.
VPC_PERCENTILES = (0.05, 0.5, 0.95)
#: The quantiles of the simulated studies' percentiles that bound a VPC's intervals.
VPC_INTERVAL = (0.025, 0.975)


def fit_residuals(fit: object, study: StudyEvents) -> pd.DataFrame:
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
        observed 0 under proportional error) and a censored one (Beal's M3, its ``dv`` the
        limit) have NaN ``res`` and weighted residuals, and enter no other row's. So does a
        row of no residual variance (a prediction of 0 under proportional error, such as a
        sample before an oral dose is absorbed); every row of a patient whose covariance is
        degenerate has NaN ``wres`` and ``cwres``.
    """
    _check_fit(fit)
    if not isinstance(study, StudyEvents):
        raise TypeError(f"study must be a StudyEvents, got {type(study).__name__}")
    if list(study.ids) != list(fit.eta.index):
        raise ValueError("study must hold the fit's patients, in the fit's order")
    problem = _problem(fit, study)
    names = list(fit.model.parameters)
    mu = _typical_log_values(fit)
    # A parameter without a random effect has eta 0 and variance 0.
    eta = fit.eta.reindex(columns=names, fill_value=0.0).to_numpy()
    pred, g0 = _predictions(problem, mu)
    ipred, g = _predictions(problem, mu + eta)
    a, b = (float(fit.residual.get(name, 0.0)) for name in ("additive", "proportional"))
    omega = _omega_matrix(fit)
    y = problem.y
    measured = _measured(problem)
    linearised = ipred - np.einsum("ok,ok->o", g, eta[problem.patient])
    weighted = {
        "wres": (y - pred, g0, a**2 + b**2 * pred**2),
        "cwres": (y - linearised, g, a**2 + b**2 * ipred**2),
    }
    table = pd.DataFrame(
        {
            "id": study.ids[problem.patient],
            "time": study.obs_time[study.obs_mask],
            "dv": y,
            "pred": pred,
            "ipred": ipred,
            "res": np.where(measured, y - pred, np.nan),
            **{
                name: _weighted(problem, r, slope, omega, variance, measured)
                for name, (r, slope, variance) in weighted.items()
            },
            "iwres": _iwres(y - ipred, a**2 + b**2 * ipred**2, measured),
        }
    )
    return table


def _iwres(r: np.ndarray, variance: np.ndarray, measured: np.ndarray) -> np.ndarray:
    """Individual weighted residuals on the measured rows of positive residual variance."""
    keep = measured & (variance > 0)
    return np.where(keep, r / np.sqrt(np.where(keep, variance, 1.0)), np.nan)


def _measured(problem: _Problem) -> np.ndarray:
    """The observations in the likelihood as measurements: not censored (M3, whose dv is a
    limit) and not left out (an observed 0 under proportional error)."""
    measured = np.ones(problem.y.size, dtype=bool)
    for rows in (problem.left_out, problem.censored):
        if rows is not None:
            measured &= ~rows
    return measured


def _omega_matrix(fit: object) -> np.ndarray:
    """The fit's between-subject covariance over every model parameter (model order): the
    variances on the diagonal (0 for a parameter without an eta) and a correlated pair's
    covariance :math:`\\rho\\,\\omega_a \\omega_b` off it."""
    names = list(fit.model.parameters)
    omega = np.diag(fit.omega.reindex(names, fill_value=0.0).to_numpy(dtype=float))
    for pair, rho in fit.correlation.items():
        a, b = (names.index(name) for name in pair.split(","))
        omega[a, b] = omega[b, a] = rho * np.sqrt(omega[a, a] * omega[b, b])
    return omega


def _check_fit(fit: object) -> None:
    if type(fit).__name__ != "PopulationFit":
        raise TypeError(f"fit must be a PopulationFit, got {type(fit).__name__}")


def _typical_log_values(fit: object) -> np.ndarray:
    """Each patient's log typical values ``(patients, parameters)``: the population's, moved
    by the covariate effects at the patient's covariates (PRED is the typical patient's
    prediction at those covariates, not at the reference's)."""
    mu = np.log(fit.typical[list(fit.model.parameters)].to_numpy(dtype=float))
    mu = np.broadcast_to(mu, (fit.n_patients, mu.size))
    return mu if fit.covariate_shift is None else mu + fit.covariate_shift.to_numpy()


def _problem(fit: object, study: StudyEvents) -> _Problem:
    """The fit's likelihood problem on ``study``: its dosing pairs and observations."""
    return _Problem(study, fit.model, fit.error, tuple(fit.residual.index))


def epsilon_shrinkage(residuals: pd.DataFrame) -> float:
    """Epsilon-shrinkage :math:`1 - \\mathrm{SD}(\\mathrm{IWRES})` of a residual table
    (:func:`fit_residuals`), over the observations that have an IWRES (in the likelihood, with
    a residual variance)."""
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
    problem: _Problem,
    r: np.ndarray,
    g: np.ndarray,
    omega: np.ndarray,
    variance: np.ndarray,
    measured: np.ndarray,
) -> np.ndarray:
    """Residuals ``r`` decorrelated patient by patient over the ``measured`` rows:
    ``C^{-1/2} r`` with ``C^{-1/2}`` the symmetric inverse square root of
    ``C = G Omega G' + diag(variance)``, as NONMEM takes it (a Cholesky factor would give
    other residuals, in an order-dependent way); NaN on the other rows, on rows of no
    residual variance (a prediction of 0 under proportional error), which enter no block,
    and on every row of a patient whose block is not finite or not positive definite to
    working precision (a degenerate fit), which has no inverse square root."""
    rows = np.flatnonzero(measured & (variance > 0))
    patient = problem.patient[rows]
    first = np.searchsorted(patient, np.arange(problem.n_patients))
    slot = np.arange(rows.size) - first[patient]
    width = int(slot.max(initial=0)) + 1
    shape = (problem.n_patients, width)
    padded_r = np.zeros(shape)
    padded_g = np.zeros((*shape, g.shape[1]))
    padded_v = np.ones(shape)
    padded_r[patient, slot] = r[rows]
    padded_g[patient, slot] = g[rows]
    padded_v[patient, slot] = variance[rows]
    covariance = np.einsum("nak,kl,nbl->nab", padded_g, omega, padded_g)
    covariance[:, np.arange(width), np.arange(width)] += padded_v
    # Padding rows have no slope and unit variance: a block of their own, left unchanged.
    finite = np.isfinite(covariance).all(axis=(1, 2))
    covariance[~finite] = np.eye(width)
    values, vectors = np.linalg.eigh(covariance)
    definite = finite & (values[:, 0] > width * np.finfo(float).eps * values[:, -1])
    root = np.sqrt(np.where(definite[:, None], values, 1.0))
    projected = np.einsum("nba,nb->na", vectors, padded_r) / root
    weighted = np.einsum("nab,nb->na", vectors, projected)
    weighted[~definite] = np.nan
    out = np.full(r.size, np.nan)
    out[rows] = weighted[patient, slot]
    return out


def visual_predictive_check(
    fit: object,
    *,
    replicates: int = 200,
    seed: object,
    prediction_corrected: bool = False,
    bins: int = 10,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """A visual predictive check: the observed percentiles of each time bin
    (:data:`VPC_PERCENTILES`) beside the intervals (:data:`VPC_INTERVAL`) of the same
    percentiles over studies simulated from the fit.

    Each replicate draws every patient's random effects from :math:`N(0, \\Omega)` and each
    observation's residual error at the fitted variance, at the study's own doses and times.
    The prediction-corrected check :cite:p:`bergstrand2011prediction` scales each value by
    the median PRED of its bin over its own PRED (on a log scale, adds the difference), so
    that observations of different doses and covariates can share a bin.

    Parameters
    ----------
    fit : PopulationFit
        The fit (with its study).
    replicates : int, default 200
        Simulated studies.
    seed : int, numpy.random.Generator or None
        Seed of the one generator the simulation draws from.
    prediction_corrected : bool, default False
        Whether to prediction-correct observed and simulated values.
    bins : int, default 10
        Time bins, of about equal numbers of observations (unique times where there are no
        more of them than ``bins``).

    Returns
    -------
    observed : pandas.DataFrame
        One row per observation: ``time``, ``bin``, ``dv`` (prediction-corrected if asked).
    percentiles : pandas.DataFrame
        One row per bin and percentile: ``bin``, ``time`` (the bin's median time),
        ``percentile`` (5, 50, 95), ``observed``, ``low``, ``median``, ``high`` (the 2.5th,
        50th and 97.5th percentiles of the simulated studies' percentile).

    Raises
    ------
    ValueError
        For a study with censored observations (``roles.cens``), whose simulated values
        cannot be censored as the observed ones were.
    """
    _check_fit(fit)
    if fit.study is None:
        raise TypeError("fit must be a PopulationFit that holds its study")
    if fit.study.obs_censored is not None:
        # The limit is known on the censored rows only: the simulated values cannot be
        # censored as the observed ones were, and percentiles of limits are not data.
        raise ValueError(
            f"the fit's study has observations below the limit of quantification (column "
            f"{fit.study.roles.cens!r}): a visual predictive check of censored data is not drawn"
        )
    if not isinstance(prediction_corrected, bool):
        raise TypeError(f"prediction_corrected must be a bool, got {prediction_corrected!r}")
    replicates = check_count(replicates, "replicates", minimum=20)
    bins = check_count(bins, "bins", minimum=1)
    problem = _problem(fit, fit.study)
    time = fit.study.obs_time[fit.study.obs_mask]
    simulated, pred = _simulated_studies(fit, problem, replicates, check_rng(seed, "seed"))
    groups = _time_bins(time, bins)
    observed = problem.y
    if prediction_corrected:
        observed, simulated = (_corrected(v, pred, groups, problem.log_dv)
                               for v in (observed, simulated))  # fmt: skip
    rows = []
    for b in np.unique(groups):
        inside = groups == b
        sim = np.quantile(simulated[:, inside], VPC_PERCENTILES, axis=1)  # (3, replicates)
        # (3 intervals, 3 percentiles)
        spread = np.quantile(sim, (VPC_INTERVAL[0], 0.5, VPC_INTERVAL[1]), axis=1)
        for j, q in enumerate(VPC_PERCENTILES):
            rows.append({
                "bin": int(b), "time": float(np.median(time[inside])), "percentile": 100 * q,
                "observed": float(np.quantile(observed[inside], q)),
                "low": spread[0, j], "median": spread[1, j], "high": spread[2, j],
            })  # fmt: skip
    table = pd.DataFrame({"time": time, "bin": groups, "dv": observed})
    return table, pd.DataFrame(rows)


def _simulated_studies(
    fit: object, problem: _Problem, replicates: int, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray]:
    """``(replicates, observations)`` values simulated from the fit, and the PRED."""
    mu = _typical_log_values(fit)
    log_theta = mu + _random_effects(fit, (replicates, problem.n_patients), rng)
    with np.errstate(all="ignore"):
        f = _sensitivities(fit.model, problem.dosing, log_theta, 0)[0]
        pred = _sensitivities(fit.model, problem.dosing, mu, 0)[0]
    if problem.log_dv:
        f, pred = np.log(f), np.log(pred)
    a, b = (float(fit.residual.get(name, 0.0)) for name in ("additive", "proportional"))
    noise = np.sqrt(a**2 + b**2 * f**2) * rng.standard_normal(f.shape)
    return f + noise, pred


def _random_effects(fit: object, shape: tuple[int, ...], rng: np.random.Generator) -> np.ndarray:
    """Random effects ``(*shape, parameters)`` drawn from :math:`N(0, \\Omega)`, the fit's
    full Omega (a correlated pair's covariance too); 0 for a parameter without an eta."""
    omega = _omega_matrix(fit)
    random = np.flatnonzero(np.diag(omega) > 0)
    root = np.zeros_like(omega)
    root[np.ix_(random, random)] = np.linalg.cholesky(omega[np.ix_(random, random)])
    return rng.standard_normal((*shape, omega.shape[0])) @ root.T


def _time_bins(time: np.ndarray, bins: int) -> np.ndarray:
    """Each observation's time bin: its unique time where there are at most ``bins``, else
    bins of about equal counts."""
    unique = np.unique(time)
    if unique.size <= bins:
        return np.searchsorted(unique, time)
    edges = np.unique(np.quantile(time, np.linspace(0, 1, bins + 1)[1:-1]))
    return np.searchsorted(edges, time, side="right")


def _corrected(values, pred: np.ndarray, groups: np.ndarray, log_scale: bool) -> np.ndarray:
    """Prediction-corrected values (Bergstrand et al., 2011): scaled by the bin's median PRED
    over the observation's own (shifted by their difference on a log scale)."""
    median = pd.Series(pred).groupby(groups).transform("median").to_numpy()
    if log_scale:
        return values + (median - pred)
    return values * median / np.where(pred > 0, pred, np.nan)


def goodness_of_fit_plot(residuals: pd.DataFrame) -> p9.ggplot:
    """The four goodness-of-fit panels: DV against PRED and IPRED (with the identity line),
    CWRES against time and PRED (with zero and +-2), from :func:`fit_residuals`."""
    panels = {
        "DV vs PRED": ("pred", "dv"),
        "DV vs IPRED": ("ipred", "dv"),
        "CWRES vs time": ("time", "cwres"),
        "CWRES vs PRED": ("pred", "cwres"),
    }
    long = pd.concat(
        [
            pd.DataFrame({"panel": name, "x": residuals[x], "y": residuals[y]})
            for name, (x, y) in panels.items()
        ]
    )
    long["panel"] = pd.Categorical(long["panel"], categories=list(panels))
    identity = pd.DataFrame({"panel": pd.Categorical(list(panels)[:2], categories=list(panels))})
    levels = pd.DataFrame(
        {
            "panel": pd.Categorical(np.repeat(list(panels)[2:], 3), categories=list(panels)),
            "y": np.tile([-2.0, 0.0, 2.0], 2),
        }
    )
    return (
        p9.ggplot(long, p9.aes("x", "y"))
        + p9.geom_point(alpha=0.45, size=1.2, color="#1B6CA8")
        + p9.geom_abline(p9.aes(intercept=0, slope=1), data=identity, color="#D95F02")
        + p9.geom_hline(p9.aes(yintercept="y"), data=levels, color="#D95F02", linetype="dashed")
        + p9.geom_smooth(method="lowess", se=False, color="black", size=0.6)
        + p9.facet_wrap("panel", scales="free", ncol=2)
        + p9.labs(x="", y="")
        + theme_book(width=8, height=6)
    )


def vpc_plot(observed: pd.DataFrame, percentiles: pd.DataFrame, *, ylabel: str) -> p9.ggplot:
    """The visual predictive check of :func:`visual_predictive_check`: observed values as
    points, observed percentiles as lines, the simulated intervals of each
    (:data:`VPC_INTERVAL`) as bands."""
    # Named in the percentiles' numeric order, so the legend reads low to high; the median is
    # coloured apart from the tails.
    order = np.sort(percentiles["percentile"].unique())
    colours = {percentile_name(p): _VPC_MEDIAN if p == 50 else _VPC_TAIL for p in order}
    named = pd.Categorical(percentiles["percentile"].map(percentile_name), categories=list(colours))
    bands = percentiles.assign(percentile=named)
    return (
        p9.ggplot(bands, p9.aes("time"))
        + p9.geom_ribbon(p9.aes(ymin="low", ymax="high", fill="percentile"), alpha=0.3)
        + p9.geom_point(p9.aes(y="dv"), data=observed, alpha=0.3, size=0.9, color="grey")
        + p9.geom_line(p9.aes(y="observed", color="percentile"), size=0.9)
        + p9.scale_fill_manual(values=colours)
        + p9.scale_color_manual(values=colours)
        + p9.labs(x="time (h)", y=ylabel, fill="percentile", color="percentile")
        + theme_book(width=8, height=3.6)
    )


_VPC_TAIL, _VPC_MEDIAN = "#1B6CA8", "#D95F02"
