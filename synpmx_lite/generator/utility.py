"""What a release keeps: synthetic data set against the source, and the model refitted on them.

A fingerprint is worth releasing only if the synthetic data drawn from it answer the questions
the source answers. This module measures that, study by study:

* :func:`fingerprint_at` rebuilds a fit's fingerprint with its model estimates at another
  precision (unrounded, two figures), everything else as released;
* :func:`synthetic_study` draws a synthetic study from any fingerprint and reads it back with
  the source's roles, ready to fit (:func:`synthetic_studies`: many, one seeded stream each);
* :func:`refit_estimates` fits the source's model (same structure, same error model, same PD
  shape) to many synthetic studies and returns every estimate of every replicate;
* :func:`refit_summary` sets those against the source fit: ratio, bias, and whether the source
  estimate lies within the synthetic estimates' spread;
* :func:`rounding_against_rse` sets each estimate's RSE beside the width of the rounding step
  at one and two figures, and how far rounding moved it;
* :func:`vpc_bands` gives the percentiles of a visual predictive check
  (:func:`vpc_bands_by_arm`: within each released arm; :func:`pd_bands`: of a PD endpoint, by
  arm), :func:`design_rates`
  the dose-modification and attendance rates, :func:`covariate_summaries` the covariate
  distributions, each for the source and for synthetic replicates alike.
"""

from __future__ import annotations

import dataclasses
import functools
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from .._validation import check_count, check_rng
from ..pmx.pd import PdFit, fit_pd_endpoint
from ..pmx.population import FitWarning, PopulationFit, fit_population
from ..pmx.study import PmxRoles, StudyEvents, prepare_study
from ..rounding import round_significant
from .design import dose_changed_patients, scheduled_visits
from .estimate import ModelFit, _arms_kept, model_fingerprint
from .generate import synpmx_model_generate
from .release import Fingerprint, arm_label

__all__ = [
    "BAND_RANGE",
    "CHECK_PERCENTILES",
    "PRECISIONS",
    "REFIT_RANGE",
    "RefitSummary",
    "covariate_summaries",
    "design_rates",
    "fingerprint_at",
    "model_estimates",
    "pd_bands",
    "refit_estimates",
    "refit_summary",
    "rounding_against_rse",
    "synthetic_studies",
    "synthetic_study",
    "vpc_bands",
    "vpc_bands_by_arm",
]

#: The percentiles of the refits that bound their spread (``low`` and ``high`` of
#: :class:`RefitSummary`).
REFIT_RANGE = (2.5, 97.5)
#: The percentiles of the synthetic replicates' percentiles that bound a band (``low`` and
#: ``high`` of :func:`vpc_bands` and :func:`pd_bands`).
BAND_RANGE = (5.0, 95.0)
#: The percentiles a predictive check compares by default (:func:`vpc_bands`,
#: :func:`vpc_bands_by_arm`, :func:`pd_bands`).
CHECK_PERCENTILES = (10.0, 50.0, 90.0)

#: The precisions compared: significant figures of the model estimates (None: unrounded).
PRECISIONS: dict[str, int | None] = {"unrounded": None, "2 figures": 2, "1 figure": 1}


def _rounded(value: float, figures: int | None) -> float:
    return float(value) if figures is None else float(round_significant(float(value), figures))


def _check_figures(figures: object) -> int | None:
    if figures is None:
        return None
    return check_count(figures, "figures")


def fingerprint_at(fit: ModelFit, figures: int | None) -> Fingerprint:
    """The fit's fingerprint with its PK and PD estimates at ``figures`` significant figures.

    Everything but the model estimates (typical values, variances, residual errors, covariate
    effects, a correlation, the PD models' estimates) is the ordinary release
    (:func:`model_fingerprint`); ``figures=1`` gives the ordinary release itself.

    Parameters
    ----------
    fit : ModelFit
        A fit from :func:`synpmx_lite.generator.estimate.synpmx_model_estimate`.
    figures : int or None
        Significant figures of every model estimate; None leaves them unrounded.

    Returns
    -------
    Fingerprint
    """
    figures = _check_figures(figures)
    released = model_fingerprint(fit)
    pk = fit.pk
    values = {}
    if pk is not None:
        values = {
            part: {k: _rounded(v, figures) for k, v in getattr(pk, part).items()}
            for part in ("typical", "omega", "residual")
        }
        values["effects"] = _effects_at(pk, released.effects, figures)
        if released.correlation:
            values["correlation"] = {k: _rounded(v, figures) for k, v in pk.correlation.items()}
    models = {
        name: {
            **model,
            **{
                key: _rounded(getattr(fit.pd[name], key), figures)
                for key in ("baseline", "baseline_sd", "residual")
            },
            "parameters": {k: _rounded(v, figures) for k, v in fit.pd[name].parameters.items()},
        }
        for name, model in released.pd.items()
    }
    return dataclasses.replace(released, **values, pd=models)


def _effects_at(pk: PopulationFit, effects: list, figures: int | None) -> list:
    """The released covariate effects with each estimate at ``figures``, matched to the fit's
    effect by parameter, covariate and level."""
    labels = {
        (t.parameter, t.covariate, str(t.level) if t.categorical else None): t.label
        for t in pk.effect_terms
    }
    return [
        {
            **effect,
            "estimate": _rounded(
                pk.effects[labels[effect["parameter"], effect["covariate"], _level(effect)]],
                figures,
            ),
        }
        for effect in effects
    ]


def _level(effect: dict) -> str | None:
    return None if effect["level"] is None else str(effect["level"])


def _synthetic_roles(roles: PmxRoles, fingerprint: Fingerprint) -> PmxRoles:
    """The source's roles renamed to the columns a fingerprint's synthetic data carry (no
    NONMEM dose items but ``cmt``, where a released dose enters the central compartment of an
    oral model)."""
    routes = {dose["route"] for arm in fingerprint.arms for dose in arm["doses"]}
    central = fingerprint.model is not None and fingerprint.model["route"] == "oral"
    return dataclasses.replace(
        roles,
        addl=None,
        ii=None,
        ss=None,
        cmt="cmt" if central and "iv" in routes else None,
        id="id",
        time="time",
        dv="dv",
        amt="amt",
        evid="evid",
        dvid="dvid",
        mdv="mdv",
        rate="rate",
        nominal_time="nominal_time" if roles.nominal_time else None,
        arm="arm" if roles.arm else None,
        pk_endpoint=fingerprint.pk_endpoint,
    )


def synthetic_study(
    fingerprint: Fingerprint, roles: PmxRoles, *, seed: int | np.random.Generator
) -> StudyEvents:
    """A synthetic study drawn from ``fingerprint``, read with the source's ``roles``.

    The release may list one visit time twice (two visits rounded to the same time); a
    synthetic patient then has two samples at that time, and where both fall below the LOQ
    (reported as 0) the two rows are equal and would be refused as copies: they are kept once.

    Parameters
    ----------
    fingerprint : Fingerprint
        Any fingerprint, ordinary or differentially private.
    roles : PmxRoles
        The source study's roles (its covariates, model and endpoints).
    seed : int or numpy.random.Generator
        Randomness of :func:`synpmx_lite.generator.generate.synpmx_model_generate`.

    Returns
    -------
    StudyEvents
    """
    if not isinstance(fingerprint, Fingerprint):
        raise TypeError(f"fingerprint must be a Fingerprint, got {type(fingerprint).__name__}")
    if not isinstance(roles, PmxRoles):
        raise TypeError(f"roles must be a PmxRoles, got {type(roles).__name__}")
    table = synpmx_model_generate(fingerprint, seed=check_rng(seed, "seed"))
    return prepare_study(table.drop_duplicates(), _synthetic_roles(roles, fingerprint))


def _streams(replicates: int, seed: int) -> list[np.random.SeedSequence]:
    """One stream per replicate, so that replicate ``r`` is the same for any number of them."""
    replicates = check_count(replicates, "replicates")
    return np.random.SeedSequence(check_count(seed, "seed", minimum=0)).spawn(replicates)


def synthetic_studies(
    fingerprint: Fingerprint, roles: PmxRoles, *, replicates: int, seed: int
) -> list[StudyEvents]:
    """``replicates`` synthetic studies from ``fingerprint`` (:func:`synthetic_study`), each from
    its own stream of one seeded :class:`numpy.random.SeedSequence`: with the same ``seed``, the
    studies :func:`refit_estimates` fits."""
    return [synthetic_study(fingerprint, roles, seed=s) for s in _streams(replicates, seed)]


def model_estimates(pk: PopulationFit | None, models: dict[str, PdFit]) -> pd.Series:
    """Every released model estimate of a fit, by name (``"typical cl"``, ``"pca baseline"``).

    PK: typical values, between-subject variances (``omega``) and residual errors; each PD
    model: baseline, between-subject SD, the shape's parameters and the residual SD.
    """
    values: dict[str, float] = {}
    if pk is not None:
        for part in ("typical", "omega", "residual"):
            values.update({f"{part} {k}": float(v) for k, v in getattr(pk, part).items()})
    for name, model in models.items():
        values[f"{name} baseline"] = float(model.baseline)
        values[f"{name} baseline_sd"] = float(model.baseline_sd)
        values.update({f"{name} {k}": float(v) for k, v in model.parameters.items()})
        values[f"{name} residual"] = float(model.residual)
    return pd.Series(values, dtype=float)


def _refit_one(study: StudyEvents, fit: ModelFit, released: Fingerprint) -> pd.Series:
    """The source's model refitted to one synthetic study, for the models ``released`` holds;
    NaN where a fit fails, is not trusted, or its model was not released."""
    names = model_estimates(fit.pk, fit.pd).index
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FitWarning)
        try:
            pk = fit_population(study, error=fit.pk.error) if fit.pk is not None else None
        except ValueError:  # e.g. every synthetic concentration below the LOQ
            pk = None
        models = {
            name: fit_pd_endpoint(study, name, shapes=(model.shape,))
            for name, model in fit.pd.items()
            if name in released.pd
        }
    values = model_estimates(
        pk if pk is not None and pk.converged else None,
        {name: model for name, model in models.items() if model.converged},
    )
    return values.reindex(names)


def refit_estimates(
    fingerprint: Fingerprint,
    fit: ModelFit,
    *,
    replicates: int,
    seed: int,
    report: Callable[[int, int], None] | None = None,
) -> pd.DataFrame:
    """Fit the source's model to ``replicates`` synthetic studies drawn from ``fingerprint``.

    Each replicate is drawn with its own stream of one seeded
    :class:`numpy.random.SeedSequence`, so that replicate ``r`` is the same whatever the number
    of replicates. The PK model keeps the source's structure and error model; each PD model its
    shape.

    Parameters
    ----------
    fingerprint : Fingerprint
        The release the synthetic data come from.
    fit : ModelFit
        The source fit (its roles and models).
    replicates : int
        Synthetic studies.
    seed : int
        Seed of the replicates' streams.
    report : callable, optional
        Called with ``(done, total)`` after each replicate.

    Returns
    -------
    pandas.DataFrame
        One row per replicate, one column per estimate of the source fit
        (:func:`model_estimates`); NaN where that replicate's fit failed or did not converge,
        or where ``fingerprint`` does not release that model.
    """
    streams = _streams(replicates, seed)
    rows = []
    for done, stream in enumerate(streams, start=1):
        try:
            study = synthetic_study(fingerprint, fit.roles, seed=stream)
        except ValueError:  # a release too noisy to simulate a study the engine reads
            rows.append(pd.Series(np.nan, index=model_estimates(fit.pk, fit.pd).index))
        else:
            rows.append(_refit_one(study, fit, fingerprint))
        if report is not None:
            report(done, len(streams))
    return pd.DataFrame(rows).reset_index(drop=True)


@dataclass(frozen=True)
class RefitSummary:
    """The refits on synthetic data set against the source fit, one row per estimate.

    Attributes
    ----------
    table : pandas.DataFrame
        Columns ``source`` (the estimate on the source), ``median`` (of the refits),
        ``ratio`` (median over source), ``bias_percent`` (mean refit over source, less 1,
        in %) and ``bias_se_percent`` (its Monte Carlo standard error), ``low`` and ``high``
        (the 2.5th and 97.5th percentiles of the refits), ``covered`` (whether the source
        estimate lies between them: with a dozen refits, nearly their whole range, so a miss
        requires nearly every refit to fall on one side) and ``converged`` (share of replicates
        whose fit converged). The variances (``omega``) are between-subject variances, not SDs.
    """

    table: pd.DataFrame

    @property
    def covered_share(self) -> float:
        """Share of the estimates whose source value lies in the refits' spread."""
        return float(self.table["covered"].mean())


def refit_summary(refits: pd.DataFrame, source: pd.Series) -> RefitSummary:
    """Set refits (:func:`refit_estimates`) against the source estimates (:func:`model_estimates`).

    Raises
    ------
    ValueError
        The refits and the source name different estimates.
    """
    if list(refits.columns) != list(source.index):
        raise ValueError(
            f"refits and source must name the same estimates, got {list(refits.columns)} "
            f"and {list(source.index)}"
        )
    values = refits.to_numpy(dtype=float)
    low, median, high = np.nanpercentile(values, [REFIT_RANGE[0], 50, REFIT_RANGE[1]], axis=0)
    table = pd.DataFrame(
        {
            "source": source.to_numpy(),
            "median": median,
            "ratio": median / source.to_numpy(),
            "bias_percent": 100 * (np.nanmean(values, axis=0) / source.to_numpy() - 1),
            "bias_se_percent": 100 * _mean_se(values) / np.abs(source.to_numpy()),
            "low": low,
            "high": high,
            "covered": (low <= source.to_numpy()) & (source.to_numpy() <= high),
            "converged": np.isfinite(values).mean(axis=0),
        },
        index=source.index,
    )
    return RefitSummary(table)


def _mean_se(values: np.ndarray) -> np.ndarray:
    """Monte Carlo standard error of each column's mean over its converged refits."""
    converged = np.isfinite(values).sum(axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.nanstd(values, axis=0, ddof=1) / np.sqrt(converged)


def _step_width(value: float, figures: int) -> float:
    """Width of the rounding grid at ``value`` with ``figures`` figures, relative to it."""
    exponent = np.floor(np.log10(abs(value))) - (figures - 1)
    return float(10.0**exponent / abs(value))


def rounding_against_rse(fit: ModelFit) -> pd.DataFrame:
    """Each PK estimate's RSE beside the rounding step at one and two figures.

    The step is the width of the rounding grid around the estimate relative to it (a value
    rounded to one figure can sit anywhere within it); ``moved`` is how far rounding to one
    figure moved the estimate, relative to it. RSEs are the covariance step's
    (:meth:`synpmx_lite.pmx.population.PopulationFit.summary`), for the variance ``omega``
    twice that of the between-subject SD.

    Returns
    -------
    pandas.DataFrame
        One row per released PK estimate (``typical cl``, ``omega cl``, ...): ``estimate``,
        ``rse_percent``, ``step_1_percent``, ``step_2_percent``, ``moved_1_percent`` and
        ``step_over_rse`` (the one-figure step over the RSE).
    """
    if fit.pk is None:
        raise ValueError("fit has no PK model: there is no PK estimate to compare")
    summary = fit.pk.summary()["rse_percent"]
    estimates = model_estimates(fit.pk, {})
    # By kind and name, not by position: a fit with effects has more rows than it releases.
    labels = {"typical": ("typical", 1), "omega_sd": ("omega", 2), "residual": ("residual", 1)}
    rse = pd.Series(
        {
            f"{labels[kind][0]} {name}": labels[kind][1] * value
            for (kind, name), value in summary.items()
            if kind in labels
        }
    )
    rows = []
    for name, value in estimates.items():
        step_1 = 100 * _step_width(value, 1)
        rows.append(
            {
                "estimate": value,
                "rse_percent": rse[name],
                "step_1_percent": step_1,
                "step_2_percent": 100 * _step_width(value, 2),
                "moved_1_percent": 100 * abs(_rounded(value, 1) / value - 1),
                "step_over_rse": step_1 / rse[name],
            }
        )
    return pd.DataFrame(rows, index=estimates.index)


def _pk_observations(study: StudyEvents) -> pd.DataFrame:
    rows = study.observations
    rows = rows[rows["endpoint"].astype(str) == str(study.pk_endpoint)]
    dv = rows["dv"].to_numpy(dtype=float)
    return rows.assign(dv=np.exp(dv) if study.roles.log_dv else dv)


def _bands(
    observed: pd.DataFrame, replicas: Sequence[pd.DataFrame], percentiles: tuple, bins: int
) -> pd.DataFrame:
    """Percentiles of ``dv`` per time bin (equal counts of ``observed``'s rows): observed, and
    the 5th, 50th and 95th percentiles of the replicas' (the band)."""
    quantiles = np.linspace(0, 1, check_count(bins, "bins") + 1)
    inner = np.unique(np.quantile(observed["time"], quantiles))[1:-1]
    which = np.digitize(observed["time"], inner)
    present = np.unique(which)  # bins the source's observations reach

    def by_bin(rows: pd.DataFrame) -> np.ndarray:
        grouped = pd.Series(rows["dv"].to_numpy()).groupby(np.digitize(rows["time"], inner))
        table = grouped.quantile(np.array(percentiles) / 100).unstack()
        return table.reindex(index=present, columns=np.array(percentiles) / 100).to_numpy()

    stacked = np.stack([by_bin(rows) for rows in replicas])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # a bin no replica reaches: NaN
        low, median, high = np.nanpercentile(stacked, [BAND_RANGE[0], 50, BAND_RANGE[1]], axis=0)
    times = observed["time"].groupby(which).median().reindex(present)
    frame = {
        "time": np.repeat(times.to_numpy(), len(percentiles)),
        "percentile": np.tile(percentiles, len(times)),
        "observed": by_bin(observed).ravel(),
        "low": low.ravel(),
        "median": median.ravel(),
        "high": high.ravel(),
    }
    return pd.DataFrame(frame)


def vpc_bands(
    source: StudyEvents,
    synthetic: Sequence[StudyEvents],
    *,
    percentiles: tuple[float, ...] = CHECK_PERCENTILES,
    bins: int = 8,
) -> pd.DataFrame:
    """The percentiles of a visual predictive check: observed, and over synthetic replicates.

    Observations of the PK endpoint are binned by time since the period's start, in ``bins``
    bins of equal counts of the source's observations; within each bin, each percentile of the
    observed concentrations and of each replicate's, and the 5th and 95th percentiles of the
    replicates' (the band).

    Returns
    -------
    pandas.DataFrame
        One row per bin and percentile: ``time`` (the source's median time in the bin),
        ``percentile``, ``observed``, ``low``, ``median`` and ``high`` (of the replicates).
    """
    if not synthetic:
        raise ValueError("synthetic must hold at least one synthetic study")
    replicas = [_pk_observations(study) for study in synthetic]
    return _bands(_pk_observations(source), replicas, percentiles, bins)


def vpc_bands_by_arm(
    fit: ModelFit,
    synthetic: Sequence[StudyEvents],
    *,
    percentiles: tuple[float, ...] = CHECK_PERCENTILES,
    bins: int = 8,
) -> pd.DataFrame:
    """:func:`vpc_bands` within each arm the release keeps, as :func:`pd_bands` groups them:
    pooled over dose levels or routes, percentiles of a mixture can hide one arm's misfit.

    Returns
    -------
    pandas.DataFrame
        As :func:`vpc_bands`, with a column ``arm``.
    """
    if fit.pk is None:
        raise ValueError("fit has no PK model: there are no concentrations to check")
    return _bands_by_arm(fit, synthetic, _pk_observations, percentiles, bins)


def _endpoint_rows(study: StudyEvents, endpoint: str) -> pd.DataFrame:
    """A study's observations of ``endpoint``."""
    return study.observations[study.observations["endpoint"].astype(str) == endpoint]


def _with_arms(study: StudyEvents, rows: pd.DataFrame, arms: dict) -> pd.DataFrame:
    """``rows`` of ``study`` with each patient's arm renamed by ``arms``."""
    arm = study.arms.to_numpy()[rows["patient"].to_numpy()]
    return rows.assign(arm=pd.Series(arm, index=rows.index).map(arms))


def _bands_by_arm(
    fit: ModelFit,
    synthetic: Sequence[StudyEvents],
    rows_of: Callable[[StudyEvents], pd.DataFrame],
    percentiles: tuple,
    bins: int,
) -> pd.DataFrame:
    """Bands within each released arm: the source's patients by the arm the release describes
    them under (``arm 1``, ... in its order), the synthetic ones by their own."""
    if not synthetic:
        raise ValueError("synthetic must hold at least one synthetic study")
    kept = _arms_kept(fit)
    source_arms = {arm: arm_label(i) for i, arm in enumerate(kept)}
    observed = _with_arms(fit.study, rows_of(fit.study), source_arms).dropna(subset=["arm"])

    def synthetic_arms(study: StudyEvents) -> dict:
        # A release of one arm is read back without an arm column: every patient is in it.
        return {a: str(a) if len(kept) > 1 else arm_label(0) for a in study.arms.unique()}

    replicas = [_with_arms(s, rows_of(s), synthetic_arms(s)) for s in synthetic]
    frames = {
        arm: _bands(rows, [r[r["arm"] == arm] for r in replicas], percentiles, bins)
        for arm, rows in observed.groupby("arm")
    }
    return pd.concat(frames, names=["arm"]).reset_index("arm").reset_index(drop=True)


def pd_bands(
    fit: ModelFit,
    synthetic: Sequence[StudyEvents],
    *,
    endpoint: str,
    percentiles: tuple[float, ...] = CHECK_PERCENTILES,
    bins: int = 6,
) -> pd.DataFrame:
    """A predictive check of a PD endpoint by dose arm: observed against synthetic percentiles.

    The source's patients are grouped by the arm the release describes them under (``arm 1``,
    ``arm 2``, ... in the release's order), the synthetic patients by their own arm; within
    each arm, as :func:`vpc_bands` does for concentrations.

    Parameters
    ----------
    fit : ModelFit
        The source fit (its study and the arms its release keeps).
    synthetic : sequence of StudyEvents
        Synthetic studies drawn from the fit's release (:func:`synthetic_study`).
    endpoint : str
        A PD endpoint the release carries a model of.

    Returns
    -------
    pandas.DataFrame
        As :func:`vpc_bands`, with a column ``arm``.
    """
    if endpoint not in fit.pd:
        raise ValueError(f"endpoint {endpoint!r} has no PD model in the fit: {sorted(fit.pd)}")
    rows_of = functools.partial(_endpoint_rows, endpoint=endpoint)
    return _bands_by_arm(fit, synthetic, rows_of, percentiles, bins)


def design_rates(study: StudyEvents, *, min_patients: int = 1) -> pd.Series:
    """Dose-modification and attendance rates of a study, as the release defines them.

    ``dose_change``: share of patients with a dose unlike their previous one in the same
    period; ``attendance``: per endpoint, the share of (patient, visit) cells with an
    observation among the visits of that endpoint at least ``min_patients`` patients attended
    (the release's threshold, ``ModelFit.min_arm_patients``, to measure a source as its
    release does), each visit counted once per patient.
    """
    min_patients = check_count(min_patients, "min_patients")
    rates = {"dose_change": dose_changed_patients(study.doses).size / study.n_patients}
    for endpoint, rows in study.observations.groupby("endpoint"):
        cells, visits = scheduled_visits(rows, min_patients=min_patients)
        if len(visits) == 0:  # no visit reaches the threshold: the release has none either
            continue
        rates[f"attendance {endpoint}"] = len(cells) / (cells["patient"].nunique() * len(visits))
    return pd.Series(rates, dtype=float)


def covariate_summaries(study: StudyEvents, continuous: Sequence[str]) -> pd.Series:
    """Geometric mean and SD of the logs of each continuous covariate, and each level's
    share of every other covariate, over the study's patients."""
    values: dict[str, float] = {}
    for name in study.roles.covariates:
        column = study.covariates[name]
        if name in continuous:
            logs = np.log(column.to_numpy(dtype=float))
            values[f"{name} geometric mean"] = float(np.exp(logs.mean()))
            values[f"{name} sdlog"] = float(logs.std(ddof=1))
        else:
            shares = column.astype(str).value_counts(normalize=True)
            values.update({f"{name} = {level}": float(s) for level, s in shares.items()})
    return pd.Series(values, dtype=float)
