r"""The influence screen: how far leaving out one patient moves each released estimate.

:func:`influence_moves` reads, for every patient, how far each released estimate would move
with that patient left out: local sensitivity, the study's own version of differential
privacy's sensitivity (Dwork et al. 2006), and in regression Cook's distance (Cook 1977).
:class:`PrivacyReport` holds the readings of a fit and the rounds of leaving patients out that
:func:`synpmx_lite.generator.estimate.synpmx_model_estimate` runs.

References
----------
Cook RD. Detection of influential observation in linear regression. Technometrics.
1977;19(1):15-18.

Dwork C, McSherry F, Nissim K, Smith A. Calibrating noise to sensitivity in private data
analysis. In: Theory of Cryptography Conference (TCC). 2006.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np
import pandas as pd

from .._validation import check_real
from ..pmx.pd import PD_SHAPES, PdFit
from ..pmx.population import FitWarning, PopulationFit, fit_population
from ..pmx.study import StudyEvents
from .protections import TRIM, trimmed_moments

__all__ = [
    "MAX_LEFT_OUT_SHARE",
    "JackknifeMoves",
    "LeftOut",
    "PrivacyReport",
    "influence_moves",
    "influence_table",
    "jackknife_moves",
    "pd_influence_moves",
    "pd_shape_moves",
    "se_barred",
    "verdict",
]

#: The largest share of the cohort the influence rounds may leave out: below 10 patients a
#: tenth of the cohort is under one patient, so nobody can be left out.
MAX_LEFT_OUT_SHARE = 0.1

_VERDICTS = ("pass", "review", "FAIL")


def influence_moves(
    pk: PopulationFit | None,
    covariates: pd.DataFrame,
    continuous: list[str],
    *,
    pk_label: str | None,
    ids: object = None,
) -> pd.DataFrame:
    r"""How far leaving out each patient moves each released estimate, on percent-like scales.

    Parameters
    ----------
    pk : PopulationFit or None
        The PK fit, whose random effects :math:`\eta_i` approximate the leave-one-out moves;
        None for a study without a PK fit (covariate moves only).
    covariates : pandas.DataFrame
        The fitted patients' baseline covariates, one row per patient of ``pk.eta``, in its
        order.
    continuous : list of str
        The continuous covariates whose summaries are released: columns of ``covariates``
        with positive values.
    pk_label : str or None
        Prefix of the PK estimates' names (the PK endpoint).
    ids : array_like, optional
        The patients' source IDs, one per row of ``covariates``; needed without a PK fit
        (otherwise ``pk.eta``'s index).

    Returns
    -------
    pandas.DataFrame
        One row per patient (index: source ID), one column per estimate:

        * typical value: :math:`100\,|e^{-\eta_{ik}/(n-1)} - 1|`, the percent change of
          leaving out patient :math:`i`;
        * between-subject SD: :math:`100\,|\omega_k\sqrt{r_{ik}} - \omega_k|` with
          :math:`r_{ik} = \frac{(S_k-\eta_{ik}^2)/(n-1)}{S_k/n}`,
          :math:`S_k=\sum_j \eta_{jk}^2`: the change of the log-scale SD in hundredths;
        * covariate mean and SD on the log scale: recomputed exactly without the patient,
          the change as a percent of the covariate's SD.

        Shrinkage makes the PK readings understate the move.

    Raises
    ------
    TypeError
        ``pk`` is not a PopulationFit, ``covariates`` not a DataFrame, ``continuous`` not a
        list or tuple of column names, or ``pk_label`` not a string.
    ValueError
        ``covariates`` has another number of rows than ``pk.eta``, a name in ``continuous``
        is not one of its columns, or a continuous covariate is missing, not numeric or not
        positive.
    """
    if pk is not None and not isinstance(pk, PopulationFit):
        raise TypeError(f"pk must be a PopulationFit or None, got {type(pk).__name__}")
    if pk is None and ids is None:
        raise ValueError("ids must be given without a PK fit")
    if not isinstance(covariates, pd.DataFrame):
        raise TypeError(f"covariates must be a pandas DataFrame, got {type(covariates).__name__}")
    if isinstance(continuous, str) or not isinstance(continuous, list | tuple):
        raise TypeError(f"continuous must be a list of column names, got {continuous!r}")
    if pk is not None and not isinstance(pk_label, str):
        raise TypeError(f"pk_label must be a string, got {pk_label!r}")
    index = pk.eta.index if pk is not None else pd.Index(np.asarray(ids), name="id")
    eta = pk.eta.to_numpy() if pk is not None else np.zeros((len(index), 0))
    n = eta.shape[0]
    if len(covariates) != n:
        raise ValueError(
            f"covariates must have one row per fitted patient ({n}), got {len(covariates)}"
        )
    unknown = [name for name in continuous if name not in covariates.columns]
    if unknown:
        raise ValueError(f"continuous names columns that covariates lacks: {unknown}")
    columns = {}
    for k, name in enumerate(pk.eta.columns if pk is not None else []):
        columns[f"{pk_label}: {name} typical value"] = 100 * np.abs(np.expm1(-eta[:, k] / (n - 1)))
        total = np.sum(eta[:, k] ** 2)
        ratio = np.clip((total - eta[:, k] ** 2) / (n - 1) / (total / n), 0, None)
        omega_sd = math.sqrt(pk.omega[name])
        columns[f"{pk_label}: {name} between-subject SD"] = (
            100 * omega_sd * np.abs(np.sqrt(ratio) - 1)
        )
    for name in continuous:
        if not pd.api.types.is_numeric_dtype(covariates[name]):
            raise ValueError(f"continuous covariate {name!r} must be numeric")
        values = covariates[name].to_numpy(dtype=float)
        if not np.all(np.isfinite(values) & (values > 0)):
            raise ValueError(f"continuous covariate {name!r} must be positive and not missing")
        logs = np.log(values)
        order = np.argsort(logs)
        ranked = logs[order]
        # Row i: the sorted logs without patient i (deleting from a sorted row keeps it sorted).
        without = ranked[np.flatnonzero(~np.eye(n, dtype=bool)).reshape(n, n - 1) % n]
        mean, sd = trimmed_moments(ranked[None, :], TRIM)
        loo_mean, loo_sd = trimmed_moments(without, TRIM)
        inverse = np.empty(n, dtype=int)
        inverse[order] = np.arange(n)
        scale = sd[0] if sd[0] > 0 else 1.0
        columns[f"{name} mean on the log scale"] = (100 * np.abs(loo_mean - mean) / scale)[inverse]
        columns[f"{name} SD on the log scale"] = (100 * np.abs(loo_sd - sd) / scale)[inverse]
    return pd.DataFrame(columns, index=index)


class JackknifeMoves(NamedTuple):
    """What :func:`jackknife_moves` reads: each patient's moves, and the patients whose exact
    refit did not converge (their moves may understate those patients' pull)."""

    moves: pd.DataFrame
    unconverged: tuple


def jackknife_moves(
    study: StudyEvents,
    pk: PopulationFit,
    *,
    pk_label: str,
    exact_from: float,
    kinds: tuple[str, ...] = ("residual", "effect", "typical"),
    se_bar: tuple[float, float] | None = None,
) -> pd.DataFrame:
    r"""How far leaving out each patient moves the estimates no random effect reads.

    The residual errors, the covariate effects and the typical values of parameters without
    a random effect (``pk.random``) have no random effect whose size reads a patient's pull
    on them. Their moves come from the infinitesimal jackknife (``pk.jackknife``: one Newton
    step from the optimum with the patient's OFV term removed), in hundredths of the
    estimated scale: :math:`100\,|\Delta\log\sigma|` for a residual error and
    :math:`100\,|\Delta\log\theta|` for a typical value (about their percent changes),
    :math:`100\,|\Delta\beta|` for an exponent or the log of a level's factor. One Newton
    step understates the largest moves (by a quarter on warfarin), so every patient whose
    reading reaches ``exact_from`` is refitted without them, and the exact move replaces the
    reading.

    Parameters
    ----------
    study : StudyEvents
        The patients ``pk`` was fitted to.
    pk : PopulationFit
        The fit.
    pk_label : str
        Prefix of the estimates' names (the PK endpoint).
    exact_from : float
        Reading from which a patient's moves are computed by an exact refit.
    kinds : tuple of str, default ("residual", "effect", "typical")
        Which estimates to read: residual errors, covariate effects, typical values of the
        parameters without a random effect (those with one are read from their etas by
        :func:`influence_moves`), and ``"correlation"``, a correlated pair's correlation
        (hundredths of the correlation, :math:`100\,|\Delta\rho|`).
    se_bar : (float, float), optional
        The screen's ``(review, fail)`` bars, to count a residual error's move only as far as
        it is also large against that error's standard error, as a PD shape parameter's
        (:func:`pd_influence_moves`): ``review`` only at one standard error and ``fail`` at
        two. The standard error is :math:`\mathrm{SE}_{-i}`, the jackknife standard error of
        the *other* patients' one-step readings, so that a patient's own pull cannot widen
        the bar it is held to. Without it the moves are read as they stand.

    Returns
    -------
    JackknifeMoves
        ``moves``: one row per patient (index: source ID), one column per residual error
        (``"<pk_label>: <name> residual error"``) and per effect
        (``"<pk_label>: <label> effect"``) and per typical value without a random effect
        (``"<pk_label>: <name> typical value"``), and a correlated pair's
        ``"<pk_label>: cl,v correlation"``; empty of columns where the covariance step
        failed; an effect that the other patients leave without variation (a level the
        patient alone holds) is the patient's alone, and reads ``inf``. ``unconverged``: the
        source IDs of the patients whose exact refit (each from ``pk``'s estimates, with its
        covariate terms pinned: the references and levels ``pk`` read, not read again from
        the other patients) did not converge: its ``converged`` is False, because the
        optimizer stopped short, an estimate sits at a bound of its search, or its covariance
        step failed.
    """
    if not isinstance(pk, PopulationFit):
        raise TypeError(f"pk must be a PopulationFit, got {type(pk).__name__}")
    if not np.array_equal(pk.eta.index.to_numpy(), study.ids):
        raise ValueError("pk was not fitted to study (its patients differ)")
    if pk.jackknife is None:
        return JackknifeMoves(pd.DataFrame(index=pk.eta.index), ())
    unknown = set(kinds) - set(_KIND_NAMES)
    if unknown:
        raise ValueError(f"kinds must be among {sorted(_KIND_NAMES)}, got {sorted(unknown)}")
    keys = [
        key
        for key in pk.jackknife.columns
        if key[0] in kinds and not (key[0] == "typical" and key[1] in pk.random)
    ]
    columns = [f"{pk_label}: {name} {_KIND_NAMES[kind]}" for kind, name in keys]
    # A correlation is estimated as Fisher's z: its move read in the correlation's own units,
    # d rho = (1 - rho^2) dz, as the exact refits measure it.
    scale = [1 - pk.correlation[name] ** 2 if kind == "correlation" else 1.0 for kind, name in keys]
    signed = pk.jackknife[keys].to_numpy()
    # The residual errors' moves held to the SE bar, in points per standard error.
    barred = np.array([kind == "residual" and se_bar is not None for kind, _ in keys])
    points_per_se = 100 * _others_jackknife_se(signed[:, barred])

    def read(moves: np.ndarray, rows: slice | int = slice(None)) -> np.ndarray:
        if barred.any():
            per_se = points_per_se[rows]
            z = np.divide(
                moves[..., barred], per_se, out=np.full_like(per_se, np.inf), where=per_se > 0
            )
            moves[..., barred] = se_barred(moves[..., barred], z, *se_bar)
        return moves

    moves = pd.DataFrame(read(100 * np.abs(signed) * scale), index=pk.eta.index, columns=columns)
    base = _estimated_scale(pk, keys)
    unconverged = []
    alone = _terms_held_alone(study, pk) if "effect" in kinds else np.zeros((len(moves), 0))
    for i in np.flatnonzero((moves.to_numpy() >= exact_from).any(axis=1) | alone.any(axis=1)):
        if alone[i].any():
            # Without the patient the effect has no variation to be estimated from.
            labels = [t.label for t, held in zip(pk.effect_terms, alone[i], strict=True) if held]
            moves.loc[moves.index[i], [f"{pk_label}: {label} effect" for label in labels]] = np.inf
            continue
        without = study.subset(np.arange(study.n_patients) != i)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FitWarning)
            refit = fit_population(
                without,
                model=pk.model,
                error=pk.error,
                effects=pk.effect_terms,
                random=pk.random,
                correlated=pk.correlated,
                start=pk,
            )
        moves.iloc[i] = read(100 * np.abs(_estimated_scale(refit, keys) - base), i)
        if not refit.converged:
            unconverged.append(moves.index[i])
    return JackknifeMoves(moves, tuple(unconverged))


def _terms_held_alone(study: StudyEvents, pk: PopulationFit) -> np.ndarray:
    """``(patients, effects)``: whether the other patients leave the effect's design
    constant (a level held by this patient alone), so that the patient alone sets it."""
    held = np.zeros((study.n_patients, len(pk.effect_terms)), dtype=bool)
    for j, term in enumerate(pk.effect_terms):
        values, owners, counts = np.unique(
            term.design(study.covariates), return_inverse=True, return_counts=True
        )
        # Constant without patient i: two values, patient i alone at one (a fitted term varies).
        held[:, j] = (values.size == 2) & (counts[owners] == 1)
    return held


def _others_jackknife_se(values: np.ndarray) -> np.ndarray:
    r"""For each row :math:`i` and column, the jackknife standard error of the other rows'
    leave-one-out values, :math:`\mathrm{SE}_{-i}^2 = \frac{m-1}{m}\sum_{j \ne i}
    (\theta_{(j)} - \bar\theta_{-i})^2` with :math:`m = n - 1` (one column per estimate;
    a constant shift of a column, as between values and their moves, leaves it unchanged)."""
    m = values.shape[0] - 1
    centred = values - values.mean(axis=0)
    others_sum = centred.sum(axis=0) - centred
    others_squares = (centred**2).sum(axis=0) - centred**2
    variance = (m - 1) / m * (others_squares - others_sum**2 / m)
    return np.sqrt(np.clip(variance, 0, None))


def se_barred(percent: np.ndarray, z: np.ndarray, review: float, fail: float) -> np.ndarray:
    """``percent`` counted only as far as it is also large in standard errors ``z``: at most
    ``review`` times ``z`` up to one standard error, then rising to ``fail`` at two.

    Examples
    --------
    >>> se_barred(np.array([40.0, 40.0, 10.0]), np.array([0.5, 2.0, 3.0]), 15, 30)
    array([ 7.5, 30. , 10. ])
    """
    past_one = (fail - review) * np.maximum(z - 1, 0) if fail > review else 0.0
    return np.minimum(percent, review * np.minimum(z, 1) + past_one)


_KIND_NAMES = {
    "residual": "residual error",
    "effect": "effect",
    "typical": "typical value",
    "correlation": "correlation",
}


def _estimated_scale(fit: PopulationFit, keys: list) -> np.ndarray:
    """The estimates at ``keys`` on the scale they are estimated on (logs, exponents)."""
    powers = {term.label for term in fit.effect_terms if not term.categorical}
    values = []
    for kind, name in keys:
        table = {"residual": fit.residual, "typical": fit.typical}.get(kind, fit.effects)
        if kind == "correlation":  # read as it stands: it may be 0 or negative
            values.append(float(fit.correlation[name]))
            continue
        value = float(table[name])
        values.append(value if name in powers else np.log(value))
    return np.array(values)


def pd_influence_moves(
    fit: PdFit, refits: pd.DataFrame, *, review: float = 15.0, fail: float = 30.0
) -> pd.DataFrame:
    r"""How far leaving out each patient moves each released estimate of a PD model.

    Every move is read from the leave-one-out refits (:func:`synpmx_lite.pmx.pd.pd_loo_refits`):
    exact, not approximated from random effects.

    Parameters
    ----------
    fit : PdFit
        The PD fit on every patient.
    refits : pandas.DataFrame
        Its leave-one-out refits, one row per patient in the order of ``fit.ids``.
    review, fail : float, default 15 and 30
        The bars of the influence screen, which set the second bar's scale (below).

    Returns
    -------
    pandas.DataFrame
        One row per fitted patient (index: source ID), one column per estimate:

        * ``baseline typical value``: the percent change of the baseline;
        * ``baseline between-subject SD``: the change of the spread relative to the baseline
          (a CV), in hundredths;
        * ``<name> shape parameter``: the percent change of the shape parameter, counted only
          as far as it is also large against the parameter's standard error. With
          :math:`z_i = |\Delta_i| / \mathrm{SE}_{-i}`, the move read is
          :math:`\min(100|\Delta_i/\theta|, g(z_i))`, where :math:`g` is piecewise linear with
          :math:`g(1) = ` ``review``, :math:`g(2) = ` ``fail`` and :math:`g(0) = 0`: it reaches
          ``review`` only where the change is at least 15 % *and* one SE, and ``fail`` only at
          30 % and two SEs. :math:`\mathrm{SE}_{-i}` is the jackknife standard error of the
          refits without each of the *other* patients (the patient's own refit left out of
          it);
        * ``residual error``: :math:`100\,|\Delta\log\sigma|` (about the residual SD's percent
          change), held to the same bar with :math:`z_i` of :math:`\log\sigma`, as the PK
          fit's residual errors are (:func:`jackknife_moves`).

    Warns
    -----
    FitWarning
        When a refit did not converge (its ``converged`` column False): its moves may
        understate that patient's influence.
    """
    if not isinstance(fit, PdFit):
        raise TypeError(f"fit must be a PdFit, got {type(fit).__name__}")
    if not isinstance(refits, pd.DataFrame) or len(refits) != fit.n_patients:
        raise ValueError(f"refits must be a DataFrame with one row per patient ({fit.n_patients})")
    review = check_real(review, "review", low=0, low_open=True)
    fail = check_real(fail, "fail", low=review)
    _check_refit_columns(fit, refits)
    if "converged" in refits.columns and not refits["converged"].all():
        unsettled = int((~refits["converged"].astype(bool)).sum())
        warnings.warn(
            f"{unsettled} leave-one-out refit(s) of the PD model of {fit.endpoint!r} did not "
            "converge: the moves read from them may understate those patients' influence",
            FitWarning,
            stacklevel=2,
        )
    label = fit.endpoint
    baseline, spread = fit.baseline, fit.baseline_sd
    loo_baseline = refits["baseline"].to_numpy(float)
    loo_spread = refits["baseline_sd"].to_numpy(float)
    columns = {
        f"{label}: baseline typical value": 100 * np.abs(loo_baseline / baseline - 1),
        f"{label}: baseline between-subject SD": 100
        * np.abs(loo_spread / loo_baseline - spread / baseline),
    }
    shape = pd_shape_moves(fit, refits)
    for name in PD_SHAPES[fit.shape]:
        percent = shape[(name, "percent")].to_numpy()
        z = shape[(name, "standard_errors")].to_numpy()
        columns[f"{label}: {name} shape parameter"] = se_barred(percent, z, review, fail)
    columns[f"{label}: residual error"] = _residual_move(fit, refits, review, fail)
    return pd.DataFrame(columns, index=pd.Index(fit.ids, name="id"))


def _residual_move(fit: PdFit, refits: pd.DataFrame, review: float, fail: float) -> np.ndarray:
    """Each patient's move of a PD model's residual SD, in hundredths of its log, held to the
    SE bar of the other patients' refits (finite: :func:`_check_refit_columns`)."""
    logs = np.log(refits["residual"].to_numpy(float))
    change = np.abs(logs - np.log(fit.residual))
    se = _others_jackknife_se(logs[:, np.newaxis])[:, 0]
    z = np.divide(change, se, out=np.full_like(change, np.inf), where=se > 0)
    return se_barred(100 * change, z, review, fail)


def pd_shape_moves(fit: PdFit, refits: pd.DataFrame) -> pd.DataFrame:
    r"""Each patient's move of each PD shape parameter, in percent and in standard errors.

    Parameters
    ----------
    fit : PdFit
        The PD fit on every patient.
    refits : pandas.DataFrame
        Its leave-one-out refits (:func:`synpmx_lite.pmx.pd.pd_loo_refits`).

    Returns
    -------
    pandas.DataFrame
        One row per patient (index: source ID); columns a MultiIndex of (parameter,
        ``percent`` | ``standard_errors``): the percent change of leaving the patient out, and
        the change in jackknife standard errors of the *other* patients' refits,
        :math:`\mathrm{SE}_{-i}^2 = \frac{m-1}{m}\sum_{j \ne i}(\theta_{(j)} -
        \bar\theta_{-i})^2` with :math:`m = n - 1`.
    """
    if not isinstance(fit, PdFit):
        raise TypeError(f"fit must be a PdFit, got {type(fit).__name__}")
    n = fit.n_patients
    if not isinstance(refits, pd.DataFrame) or len(refits) != n:
        raise ValueError(f"refits must be a DataFrame with one row per patient ({n})")
    _check_refit_columns(fit, refits)
    columns = {}
    for name in PD_SHAPES[fit.shape]:
        estimate = fit.parameters[name]
        values = refits[name].to_numpy(float)
        change = np.abs(values - estimate)
        se = _others_jackknife_se(values[:, np.newaxis])[:, 0]
        columns[(name, "percent")] = (
            100 * change / abs(estimate) if estimate != 0 else np.full(n, np.inf)
        )
        columns[(name, "standard_errors")] = np.where(
            se > 0, change / np.where(se > 0, se, 1.0), np.inf
        )
    return pd.DataFrame(columns, index=pd.Index(fit.ids, name="id"))


def _check_refit_columns(fit: PdFit, refits: pd.DataFrame) -> None:
    missing = [name for name in fit.estimates() if name not in refits.columns]
    if missing:
        raise ValueError(f"refits lacks the columns {missing} (see pd_loo_refits)")
    values = refits[list(fit.estimates())].to_numpy(float)
    if not np.isfinite(values).all():
        raise ValueError("refits must be finite: a NaN move would read as no move")


def verdict(move: float, review: float, fail: float) -> str:
    """``"pass"`` below ``review``, ``"FAIL"`` at ``fail`` or more, ``"review"`` between."""
    return _VERDICTS[int(move >= review) + int(move >= fail)]


def move_band(move: float, review: float, fail: float) -> str:
    """A single patient's move as the band it falls in, for printing: ``under 15``, ``15 to
    30`` or ``30 or more`` (with the default bars). The move is one patient's pull on an
    estimate, so what is printed about it says no more than its verdict does.

    Examples
    --------
    >>> move_band(25.2, 15, 30), move_band(3.1, 15, 30), move_band(30, 15, 30)
    ('15 to 30', 'under 15', '30 or more')
    """
    if move >= fail:
        return f"{fail:g} or more"
    return f"{review:g} to {fail:g}" if move >= review else f"under {review:g}"


def influence_table(
    pk: PopulationFit | None, moves: pd.DataFrame, review: float, fail: float
) -> pd.DataFrame:
    """One row per released estimate: its largest move, its scale, shrinkage and verdict."""
    largest = moves.max(axis=0)
    shrinkage = []
    for estimate in moves.columns:
        parameter = estimate.split(": ", 1)[-1].split(" ")[0]
        is_pk = pk is not None and ": " in estimate and parameter in pk.shrinkage.index
        shrinkage.append(pk.shrinkage[parameter] if is_pk else np.nan)
    return pd.DataFrame(
        {
            "estimate": moves.columns,
            "scale": [_scale(c) for c in moves.columns],
            "largest": largest.to_numpy(),
            "shrinkage": shrinkage,
            "verdict": [verdict(v, review, fail) for v in largest],
        }
    )


def _scale(estimate: str) -> str:
    """How a move of ``estimate`` reads: percent, percent capped by the SE bar, or points."""
    if estimate.endswith("typical value"):
        return "%"
    return "% (SE bar)" if estimate.endswith("shape parameter") else "points"


@dataclass(frozen=True)
class LeftOut:
    """The patients left out of the estimates for their influence.

    Attributes
    ----------
    patients : int
        How many were left out.
    ids : tuple
        Their source IDs: shown on the secure system's console only, never released.
    rounds : int
        Estimation rounds run (1: nobody was left out).
    """

    patients: int
    ids: tuple
    rounds: int


@dataclass(frozen=True)
class PrivacyReport:
    """The influence screen on a fit: the influence readings and the rounds that led to them.

    Attributes
    ----------
    left_out : LeftOut
        Patients left out for their influence.
    influence : pandas.DataFrame
        One row per released estimate: ``estimate``, ``scale`` (``%`` or ``points``),
        ``largest`` move among the patients kept, ``shrinkage`` (PK estimates) and
        ``verdict`` (pass below ``review``, FAIL at ``fail`` or more).
    moves : pandas.DataFrame
        Every kept patient's move of every estimate (stays in the secure environment).
    rounds : pandas.DataFrame
        One row per round: patients fitted, patients flagged, the largest move.
    review, fail : float
        The thresholds.
    unconverged_refits : dict
        For each PD endpoint some of whose leave-one-out refits (last round) did not converge,
        how many did not: their moves may understate those patients' influence, so that the
        checks do not pass them.
    unconverged_pk_refits : tuple
        The source IDs of the patients whose exact leave-one-out refit of the PK fit
        (:func:`jackknife_moves`, last round) did not converge. P5 counts those whose moves
        of released estimates stay below ``fail``: a refit stopped short (or at a bound of its
        search) may understate the move it reads, and one past ``fail`` fails already.
    """

    left_out: LeftOut
    influence: pd.DataFrame
    moves: pd.DataFrame
    rounds: pd.DataFrame
    review: float
    fail: float
    unconverged_refits: dict = field(default_factory=dict)
    unconverged_pk_refits: tuple = ()

    @property
    def largest(self) -> pd.Series:
        """The row of :attr:`influence` with the largest move."""
        return self.influence.loc[self.influence["largest"].idxmax()]
