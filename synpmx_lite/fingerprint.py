r"""The model generator's estimation, its fingerprint, the six protections and checks P1-P5.

:func:`synpmx_model_estimate` fits the population PK model to a study and summarizes the study
as it was carried out (covariates, arms, planned doses, dose changes, attendance, the LOQ), in
rounds that leave out the patients who move a released estimate too far.
:func:`model_fingerprint` builds from that fit, through an allowlist, everything that is
released; :func:`model_privacy_checks` verifies the protections.

The protections, as the R generator states them:

1. No patient record leaves the study: the fingerprint holds only the allowlisted
   population- and arm-level fields (:data:`FINGERPRINT_FIELDS`).
2. No single patient's value is used: the LOQ is half the lowest value at least three patients
   reached, rounded down to 1, 2 or 5 times a power of ten; the reference weight is the median
   at one significant figure; a planned dose where patients' doses differ is the arm mean at
   two figures; continuous covariates are trimmed.
3. At least three patients behind every frequency, on both sides: arms, visits and planned
   doses are kept only where at least ``min_arm_patients`` reached them; an attendance rate is
   set to 1 where fewer than that many patients missed a visit; a dose-change rate is set to
   0 where fewer changed their dose, and to 1 where fewer kept it; a category level held by
   fewer than ``min_category_patients`` is folded into the most common level. Check P4
   reports the smallest group behind any of them.
4. Covariate summaries without their extremes: mean and SD on the log scale after setting
   aside the highest and lowest 5 % of patients (at least one each side), the SD divided by
   the SD of a normal truncated at the same quantiles.
5. One significant figure for PK estimates, two for covariate summaries.
6. Influence: how far leaving out each patient moves each released estimate (see
   :func:`influence_moves`), with rounds that leave out the patients who move one by 15 or
   more.

References
----------
Hundepool A, Domingo-Ferrer J, Franconi L, et al. Statistical Disclosure Control. Wiley; 2012.

Huber PJ, Ronchetti EM. Robust Statistics. 2nd ed. Wiley; 2009.

Cook RD. Detection of influential observation in linear regression. Technometrics.
1977;19(1):15-18.
"""

from __future__ import annotations

import dataclasses
import json
import math
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import stats

from ._validation import check_array, check_count, check_real
from .estimation import PopulationFit, fit_population
from .pk import PkModel
from .rounding import round_significant
from .study import DATASETS, PmxRoles, StudyEvents, load_dataset, prepare_study

__all__ = [
    "FINGERPRINT_FIELDS",
    "Fingerprint",
    "LeftOut",
    "ModelFit",
    "PrivacyReport",
    "fold_categories",
    "influence_moves",
    "loq_floor",
    "model_fingerprint",
    "model_privacy_checks",
    "privacy_checks_across_studies",
    "synpmx_model_estimate",
    "trimmed_log_summary",
]

#: The fields a fingerprint may hold: nothing else leaves the study.
FINGERPRINT_FIELDS = (
    "cohort_size",
    "model",
    "pk_endpoint",
    "log_dv",
    "error",
    "typical",
    "omega",
    "residual",
    "covariates",
    "categories",
    "reference_weight",
    "arms",
    "dose_change_rate",
    "endpoints",
    "checks",
)

_TRIM = 0.05
_VERDICTS = ("pass", "review", "FAIL")


# --- Protections 2-4 on their own ------------------------------------------------------------


def trimmed_log_summary(values: object, *, trim: float = _TRIM) -> tuple[float, float]:
    r"""Mean and SD of log values after setting aside the highest and lowest ``trim`` share.

    Parameters
    ----------
    values : array_like
        Positive values, at least 3.
    trim : float, default 0.05
        Share set aside at each end: :math:`k = \lceil \text{trim}\, n \rceil` values, at
        least one, as long as two values remain (so none of 3 values).

    Returns
    -------
    meanlog, sdlog : float
        The trimmed mean of the logs, and their trimmed SD divided by
        :math:`\sqrt{1 - 2 z \varphi(z) / (1 - 2 k/n)}`, the SD of a standard normal
        truncated at its :math:`k/n` and :math:`1-k/n` quantiles (:math:`z` the upper one), so
        that it estimates the SD of a normal sample.

    Examples
    --------
    One extreme value moves neither:

    >>> m, s = trimmed_log_summary([60.0, 65, 70, 75, 80, 250])
    >>> round(float(np.exp(m)), 1)
    72.3
    """
    logs = np.log(_positive(values, "values"))
    trim = check_real(trim, "trim", low=0, high=0.5, low_open=True, high_open=True)
    if logs.size < 3:
        raise ValueError(f"values needs at least 3 entries, got {logs.size}")
    mean, sd = _trimmed(np.sort(logs)[None, :], trim)
    return float(mean[0]), float(sd[0])


def _positive(values: object, name: str) -> np.ndarray:
    array = check_array(values, name, ndim=1)
    if np.any(array <= 0):
        raise ValueError(f"{name} must be positive")
    return array


def _trimmed(sorted_logs: np.ndarray, trim: float) -> tuple[np.ndarray, np.ndarray]:
    """Trimmed mean and corrected SD of each row of an already sorted ``(rows, n)`` array."""
    n = sorted_logs.shape[1]
    k = max(1, math.ceil(trim * n))
    if n - 2 * k < 2:
        k = (n - 2) // 2
    core = sorted_logs[:, k : n - k]
    share = k / n
    z = stats.norm.isf(share)
    correction = np.sqrt(1 - 2 * z * stats.norm.pdf(z) / (1 - 2 * share)) if k else 1.0
    return core.mean(axis=1), core.std(axis=1, ddof=1) / correction


def fold_categories(levels: object, *, min_patients: int = 3) -> pd.Series:
    """Level frequencies, with every level held by fewer than ``min_patients`` folded away.

    Parameters
    ----------
    levels : array_like
        One level per patient.
    min_patients : int, default 3
        The fewest patients a released level may have.

    Returns
    -------
    pandas.Series
        Frequency of each kept level (index: level, most common first), summing to 1. The
        patients of a folded level count toward the most common level.

    Examples
    --------
    >>> fold_categories(["m"] * 5 + ["f"] * 3 + ["x"])
    m    0.666667
    f    0.333333
    Name: frequency, dtype: float64
    """
    min_patients = check_count(min_patients, "min_patients")
    counts = _folded_counts(pd.Series(np.asarray(levels, dtype=object)), min_patients)
    return (counts / counts.sum()).rename("frequency")


def _folded_counts(levels: pd.Series, min_patients: int) -> pd.Series:
    counts = levels.value_counts(sort=True)
    if counts.empty:
        raise ValueError("levels must not be empty")
    counts.index = counts.index.astype(object)
    keep = counts >= min_patients
    keep.iloc[0] = True  # the most common level stays, and takes the folded patients
    folded = counts[keep].copy()
    folded.iloc[0] += counts[~keep].sum()
    folded.index.name = None
    return folded.rename(None)


def loq_floor(lowest_per_patient: object, *, min_patients: int = 3) -> float | None:
    """Half the lowest value at least ``min_patients`` patients reached, rounded down.

    Parameters
    ----------
    lowest_per_patient : array_like
        Each patient's lowest positive observation.
    min_patients : int, default 3
        How many patients must have reached the value.

    Returns
    -------
    float or None
        The LOQ, rounded down to 1, 2 or 5 times a power of ten; None with fewer than
        ``min_patients`` patients.

    Examples
    --------
    The third lowest of the patients' minima is 0.9; half of it, 0.45, rounds down to 0.2.

    >>> loq_floor([0.3, 0.7, 0.9, 1.5])
    0.2
    """
    lowest = np.sort(_positive(lowest_per_patient, "lowest_per_patient"))
    min_patients = check_count(min_patients, "min_patients")
    if lowest.size < min_patients:
        return None
    half = lowest[min_patients - 1] / 2
    power = 10.0 ** math.floor(math.log10(half))
    mantissa = max(m for m in (1, 2, 5, 10) if m * power <= half * (1 + 1e-12))
    return float(round_significant(mantissa * power, 1))


def _round(value: float, figures: int) -> float:
    return float(round_significant(float(value), figures))


# --- Protection 6: influence -----------------------------------------------------------------


def influence_moves(
    pk: PopulationFit, covariates: pd.DataFrame, continuous: list[str], *, pk_label: str
) -> pd.DataFrame:
    r"""How far leaving out each patient moves each released estimate, on percent-like scales.

    Parameters
    ----------
    pk : PopulationFit
        The PK fit, whose random effects :math:`\eta_i` approximate the leave-one-out moves.
    covariates : pandas.DataFrame
        The fitted patients' baseline covariates, in the order of ``pk.eta``.
    continuous : list of str
        The continuous covariates whose summaries are released.
    pk_label : str
        Prefix of the PK estimates' names (the PK endpoint).

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
    """
    eta = pk.eta.to_numpy()
    n = eta.shape[0]
    columns = {}
    for k, name in enumerate(pk.eta.columns):
        columns[f"{pk_label}: {name} typical value"] = 100 * np.abs(np.expm1(-eta[:, k] / (n - 1)))
        total = np.sum(eta[:, k] ** 2)
        ratio = np.clip((total - eta[:, k] ** 2) / (n - 1) / (total / n), 0, None)
        omega_sd = math.sqrt(pk.omega.iloc[k])
        columns[f"{pk_label}: {name} between-subject SD"] = (
            100 * omega_sd * np.abs(np.sqrt(ratio) - 1)
        )
    for name in continuous:
        logs = np.log(covariates[name].to_numpy(dtype=float))
        order = np.argsort(logs)
        ranked = logs[order]
        # Row i: the sorted logs without patient i (deleting from a sorted row keeps it sorted).
        without = ranked[np.flatnonzero(~np.eye(n, dtype=bool)).reshape(n, n - 1) % n]
        mean, sd = _trimmed(ranked[None, :], _TRIM)
        loo_mean, loo_sd = _trimmed(without, _TRIM)
        inverse = np.empty(n, dtype=int)
        inverse[order] = np.arange(n)
        scale = sd[0] if sd[0] > 0 else 1.0
        columns[f"{name} mean on the log scale"] = (100 * np.abs(loo_mean - mean) / scale)[inverse]
        columns[f"{name} SD on the log scale"] = (100 * np.abs(loo_sd - sd) / scale)[inverse]
    return pd.DataFrame(columns, index=pk.eta.index)


def _verdict(move: float, review: float, fail: float) -> str:
    return _VERDICTS[int(move >= review) + int(move >= fail)]


# --- The fit ------------------------------------------------------------------------------------


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
    """Protection 6 on a fit: the influence readings and the rounds that led to them.

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
    """

    left_out: LeftOut
    influence: pd.DataFrame
    moves: pd.DataFrame
    rounds: pd.DataFrame
    review: float
    fail: float

    @property
    def largest(self) -> pd.Series:
        """The row of :attr:`influence` with the largest move."""
        return self.influence.loc[self.influence["largest"].idxmax()]


@dataclass(frozen=True)
class ModelFit:
    """What :func:`synpmx_model_estimate` returns: stays in the secure environment.

    Attributes
    ----------
    study : StudyEvents
        The source study, every patient (dosing, visit and arm summaries read all of them).
    kept : numpy.ndarray
        True for the patients behind the PK fit and covariate summaries.
    pk : PopulationFit
        The population PK fit on the kept patients.
    privacy : PrivacyReport
        Influence readings and the patients left out.
    seed : int
        The default seed of :func:`synpmx_lite.generate.synpmx_model_generate`.
    min_arm_patients, min_category_patients : int
        The thresholds of protection 3.
    """

    study: StudyEvents
    kept: np.ndarray
    pk: PopulationFit
    privacy: PrivacyReport
    seed: int
    min_arm_patients: int
    min_category_patients: int

    @property
    def n_source(self) -> int:
        """Patients in the source study."""
        return self.study.n_patients

    @property
    def roles(self) -> PmxRoles:
        """The study's roles."""
        return self.study.roles

    @property
    def continuous(self) -> list[str]:
        """The continuous covariates."""
        covariates = self.study.covariates
        return [
            c
            for c in self.roles.covariates
            if c not in self.roles.categorical and pd.api.types.is_numeric_dtype(covariates[c])
        ]

    @property
    def categorical(self) -> list[str]:
        """The categorical covariates."""
        return [c for c in self.roles.covariates if c not in self.continuous]

    def __str__(self) -> str:
        largest = self.privacy.largest
        return (
            f"{self.pk}\n{self.n_source} patients, {self.privacy.left_out.patients} left out "
            f"in {self.privacy.left_out.rounds} round(s); largest move: {largest['estimate']}, "
            f"{largest['largest']:.3g} {largest['scale']} ({largest['verdict']})"
        )


def _influence_table(
    pk: PopulationFit, moves: pd.DataFrame, review: float, fail: float
) -> pd.DataFrame:
    largest = moves.max(axis=0)
    shrinkage = []
    for estimate in moves.columns:
        parameter = estimate.split(": ", 1)[-1].split(" ")[0]
        is_pk = ": " in estimate and parameter in pk.shrinkage.index
        shrinkage.append(pk.shrinkage[parameter] if is_pk else np.nan)
    return pd.DataFrame(
        {
            "estimate": moves.columns,
            "scale": ["%" if c.endswith("typical value") else "points" for c in moves.columns],
            "largest": largest.to_numpy(),
            "shrinkage": shrinkage,
            "verdict": [_verdict(v, review, fail) for v in largest],
        }
    )


def synpmx_model_estimate(
    data: pd.DataFrame,
    roles: PmxRoles,
    *,
    seed: int = 1,
    drop_influential: bool = True,
    error: str | None = None,
    min_arm_patients: int = 3,
    min_category_patients: int = 3,
    review: float = 15.0,
    fail: float = 30.0,
) -> ModelFit:
    """Fit the population PK model and read each patient's influence, in rounds.

    Each round fits the PK model (FOCE-I, :func:`synpmx_lite.estimation.fit_population`) to
    the patients kept so far and reads how far each moves each released estimate
    (:func:`influence_moves`). With ``drop_influential``, the patients who move any estimate by
    ``review`` or more are left out of every estimate (PK fit and covariate summaries; they
    stay in the dosing, visit and arm summaries) and the next round runs; rounds stop when
    nobody is flagged, or when leaving out the newly flagged would take the patients left out
    past a tenth of the cohort, in which case those patients stay in and the checks report
    their move.

    Parameters
    ----------
    data : pandas.DataFrame
        The event table.
    roles : PmxRoles
        Its roles (:func:`synpmx_lite.study.pmx_roles`), with the PK model to fit.
    seed : int, default 1
        The estimation is deterministic; the seed is stored as the default seed of
        :func:`synpmx_lite.generate.synpmx_model_generate`.
    drop_influential : bool, default True
        Whether to leave influential patients out; False keeps everyone.
    error : str, optional
        Residual error model (see :func:`synpmx_lite.estimation.fit_population`).
    min_arm_patients, min_category_patients : int, default 3
        Thresholds of protection 3.
    review, fail : float, default 15 and 30
        Move at which an estimate is flagged for review, and fails.

    Returns
    -------
    ModelFit
        The fit, with ``n_source`` and ``privacy.left_out``.
    """
    if isinstance(seed, bool) or not isinstance(seed, int | np.integer):
        raise TypeError(f"seed must be an integer, got {seed!r}")
    if not isinstance(drop_influential, bool):
        raise TypeError(f"drop_influential must be a bool, got {drop_influential!r}")
    min_arm_patients = check_count(min_arm_patients, "min_arm_patients")
    min_category_patients = check_count(min_category_patients, "min_category_patients")
    review = check_real(review, "review", low=0, low_open=True)
    fail = check_real(fail, "fail", low=review)
    study = prepare_study(data, roles)
    n = study.n_patients
    kept = np.ones(n, dtype=bool)
    continuous = [
        c
        for c in roles.covariates
        if c not in roles.categorical and pd.api.types.is_numeric_dtype(study.covariates[c])
    ]
    history = []
    while True:
        subset = study.subset(kept)
        pk = fit_population(subset, error=error)
        moves = influence_moves(pk, subset.covariates, continuous, pk_label=study.pk_endpoint)
        flagged = moves.index[(moves >= review).any(axis=1).to_numpy()]
        history.append(
            {
                "round": len(history) + 1,
                "patients": int(kept.sum()),
                "flagged": len(flagged),
                "largest": float(moves.to_numpy().max()),
                "estimate": moves.max(axis=0).idxmax(),
            }
        )
        left_out = n - int(kept.sum())
        if not drop_influential or len(flagged) == 0 or left_out + len(flagged) > n / 10:
            break
        kept &= ~pd.Index(study.ids).isin(flagged)
    privacy = PrivacyReport(
        left_out=LeftOut(
            patients=n - int(kept.sum()), ids=tuple(study.ids[~kept]), rounds=len(history)
        ),
        influence=_influence_table(pk, moves, review, fail),
        moves=moves,
        rounds=pd.DataFrame(history),
        review=review,
        fail=fail,
    )
    return ModelFit(
        study=study,
        kept=kept,
        pk=pk,
        privacy=privacy,
        seed=int(seed),
        min_arm_patients=min_arm_patients,
        min_category_patients=min_category_patients,
    )


# --- The fingerprint --------------------------------------------------------------------------


@dataclass(frozen=True)
class Fingerprint:
    """Everything a model release holds, and nothing else (see :data:`FINGERPRINT_FIELDS`).

    Attributes
    ----------
    cohort_size : int
        Patients in the study.
    model : dict
        The structural PK model: ``compartments``, ``route``, ``lag``.
    pk_endpoint : str
        The endpoint the PK model describes.
    log_dv : bool
        Whether that endpoint's values are log concentrations.
    error : str
        The residual error model.
    typical, omega, residual : dict
        Typical values, between-subject variances and residual errors, at one significant
        figure.
    covariates : dict
        Per continuous covariate, ``geometric_mean`` (the exponential of the trimmed mean of
        the logs) and ``sdlog`` (the trimmed SD of the logs), at two figures.
    categories : dict
        Per categorical covariate, a list of ``[level, frequency]`` pairs (levels held by
        fewer than ``min_category_patients`` folded away), frequencies at two figures.
    reference_weight : float or None
        Median body weight at one figure.
    arms : list of dict
        Per arm kept: ``arm``, ``patients`` and the planned ``doses``, each a dict of
        ``period``, ``time``, ``amount`` and ``duration``.
    dose_change_rate : float
        Share of patients given a dose unlike their previous one in the same period (0 where
        fewer than three were, 1 where fewer than three were not).
    endpoints : dict
        Per endpoint: ``attendance`` (1 where fewer than three missed a visit), ``visits``
        (``[period, time]`` pairs reached by at least three patients) and ``loq``.
    checks : dict
        The verdicts of P4 and P5.
    """

    cohort_size: int
    model: dict
    pk_endpoint: str
    log_dv: bool
    error: str
    typical: dict
    omega: dict
    residual: dict
    covariates: dict
    categories: dict
    reference_weight: float | None
    arms: list
    dose_change_rate: float
    endpoints: dict
    checks: dict

    def to_json(self) -> str:
        """The fingerprint as JSON: the artefact that would leave the secure environment."""
        return json.dumps(dataclasses.asdict(self), indent=1, sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> Fingerprint:
        """Read a fingerprint written by :meth:`to_json`."""
        if not isinstance(text, str):
            raise TypeError(f"text must be a JSON string, got {type(text).__name__}")
        fields = json.loads(text)
        if set(fields) != set(FINGERPRINT_FIELDS):
            raise ValueError(
                f"text must hold exactly the fields {sorted(FINGERPRINT_FIELDS)}, "
                f"got {sorted(fields)}"
            )
        return cls(**fields)

    @property
    def pk_model(self) -> PkModel:
        """The structural model as a :class:`synpmx_lite.pk.PkModel`."""
        return PkModel(**self.model)

    def __str__(self) -> str:
        def line(values: dict) -> str:
            return ", ".join(f"{k} {v:g}" for k, v in values.items())

        lines = [
            f"PMX model fingerprint: {self.cohort_size} patients",
            f"PK ({self.pk_endpoint}): {self.pk_model}, {self.error} error",
            f"  typical values: {line(self.typical)}",
            f"  between-subject variances: {line(self.omega)}",
            f"  residual error: {line(self.residual)}",
        ]
        for name, summary in self.covariates.items():
            lines.append(
                f"covariate {name}: geometric mean {summary['geometric_mean']:g}, "
                f"SD on the log scale {summary['sdlog']:g}"
            )
        for name, levels in self.categories.items():
            lines.append(f"covariate {name}: " + ", ".join(f"{lv} {fr:g}" for lv, fr in levels))
        if self.reference_weight is not None:
            lines.append(f"reference weight: {self.reference_weight:g}")
        for arm in self.arms:
            doses = ", ".join(
                f"{d['amount']:g} at {d['time']:g} h"
                + (f" of period {d['period'] + 1}" if d["period"] else "")
                for d in arm["doses"][:4]
            )
            more = f" (+{len(arm['doses']) - 4} more)" if len(arm["doses"]) > 4 else ""
            lines.append(f"arm {arm['arm']}: {arm['patients']} patients; doses {doses}{more}")
        lines.append(f"dose-change rate: {self.dose_change_rate:g}")
        for name, endpoint in self.endpoints.items():
            loq = "none" if endpoint["loq"] is None else f"{endpoint['loq']:g}"
            lines.append(
                f"endpoint {name}: attendance {endpoint['attendance']:g} over "
                f"{len(endpoint['visits'])} visits, LOQ {loq}"
            )
        lines.append("checks: " + ", ".join(f"{k} {v}" for k, v in self.checks.items()))
        return "\n".join(lines)


def _median_time(values: pd.Series) -> float:
    return _round(values.median(), 2)


def _arm_release(fit: ModelFit) -> tuple[list, int]:
    """The arms kept, their planned doses, and the smallest group behind them."""
    study, threshold = fit.study, fit.min_arm_patients
    doses = study.doses.copy()
    doses["arm"] = study.arms.to_numpy()[doses["patient"]]
    doses["index"] = doses.groupby(["patient", "period"]).cumcount()
    counts = study.arms.value_counts()
    arms, smallest = [], np.inf
    for arm, patients in counts.items():
        if patients < threshold:
            continue
        smallest = min(smallest, patients)
        planned = []
        for (period, index), group in doses[doses["arm"] == arm].groupby(["period", "index"]):
            reached = group["patient"].nunique()
            if reached < threshold:
                continue
            smallest = min(smallest, reached)
            amounts = group["amount"]
            amount = amounts.iloc[0] if amounts.nunique() == 1 else _round(amounts.mean(), 2)
            planned.append(
                {
                    "period": int(period),
                    "index": int(index),
                    "time": _median_time(group["time"]),
                    "amount": float(amount),
                    "duration": _median_time(group["duration"]),
                }
            )
        arms.append({"arm": str(arm), "patients": int(patients), "doses": planned})
    return arms, smallest


def _two_sided(count: int, total: int, threshold: int) -> float:
    """A share with at least ``threshold`` patients on each side, else 0 or 1."""
    if count < threshold:
        return 0.0
    if total - count < threshold:
        return 1.0
    return _round(count / total, 2)


def _dose_change(fit: ModelFit) -> tuple[float, int]:
    """The share of patients with a dose unlike their previous one in the same period."""
    doses = fit.study.doses
    previous = doses.groupby(["patient", "period"])["amount"].shift()
    changed = doses.loc[previous.notna() & (doses["amount"] != previous), "patient"].nunique()
    n = fit.n_source
    rate = _two_sided(changed, n, fit.min_arm_patients)
    return rate, (min(changed, n - changed) if 0 < rate < 1 else np.inf)


def _endpoint_release(fit: ModelFit) -> tuple[dict, int]:
    """Per endpoint: attendance, kept visits and LOQ; and the smallest group behind them."""
    observations = fit.study.observations
    threshold = fit.min_arm_patients
    released, smallest = {}, np.inf
    for endpoint, rows in observations.groupby("endpoint"):
        patients = rows["patient"].nunique()
        reached = rows.groupby(["period", "visit"])["patient"].nunique()
        visits = reached.index[reached >= threshold]
        kept_rows = rows[pd.MultiIndex.from_frame(rows[["period", "visit"]]).isin(visits)]
        attended = (
            kept_rows.groupby("patient").size().reindex(rows["patient"].unique(), fill_value=0)
        )
        missed = int((attended < len(visits)).sum())
        attendance = 1.0
        if missed >= threshold:
            attendance = _round(attended.sum() / (patients * len(visits)), 2)
            smallest = min(smallest, missed)
        if len(visits):
            smallest = min(smallest, int(reached[visits].min()))
        times = kept_rows.groupby(["period", "visit"])["time"]
        visit_times = [[int(p), _median_time(t)] for (p, _), t in times]
        values = rows["dv"].to_numpy()
        if fit.roles.log_dv and endpoint == fit.study.pk_endpoint:
            values = np.exp(values)
        positive = rows.assign(value=values)[values > 0]
        lowest = positive.groupby("patient")["value"].min().to_numpy()
        loq = loq_floor(lowest, min_patients=3) if lowest.size >= 3 else None
        released[str(endpoint)] = {
            "attendance": float(attendance),
            "visits": visit_times,
            "loq": loq,
        }
    return released, smallest


def _covariate_release(fit: ModelFit) -> tuple[dict, dict, float | None, int]:
    covariates = fit.study.covariates[fit.kept]
    continuous = {}
    for name in fit.continuous:
        meanlog, sdlog = trimmed_log_summary(covariates[name].to_numpy(dtype=float))
        continuous[name] = {
            "geometric_mean": _round(math.exp(meanlog), 2),
            "sdlog": _round(sdlog, 2),
        }
    categories, smallest = {}, np.inf
    for name in fit.categorical:
        counts = _folded_counts(covariates[name], fit.min_category_patients)
        if len(counts) > 1:
            smallest = min(smallest, int(counts.min()))
        categories[name] = [
            [_plain(level), _round(c / counts.sum(), 2)] for level, c in counts.items()
        ]
    weight = fit.roles.weight
    reference = _round(covariates[weight].median(), 1) if weight else None
    return continuous, categories, reference, smallest


def _plain(level: object) -> object:
    """A level as a JSON-native value (numpy scalars become Python ones)."""
    return level.item() if isinstance(level, np.generic) else level


def _smallest_group(fit: ModelFit) -> int:
    groups = [
        _arm_release(fit)[1],
        _dose_change(fit)[1],
        _endpoint_release(fit)[1],
        _covariate_release(fit)[3],
    ]
    return int(min(groups)) if np.isfinite(min(groups)) else fit.n_source


def _p5(fit: ModelFit) -> tuple[str, str]:
    largest = fit.privacy.largest
    result = f"largest: {largest['estimate']}, {largest['largest']:.3g} {largest['scale']}"
    if fit.privacy.left_out.patients:
        result += f"; {fit.privacy.left_out.patients} left out"
    return largest["verdict"], result


def model_fingerprint(fit: ModelFit) -> Fingerprint:
    """Build the fingerprint of a fit: the allowlisted population- and arm-level fields.

    Parameters
    ----------
    fit : ModelFit
        A fit from :func:`synpmx_model_estimate`.

    Returns
    -------
    Fingerprint
        Everything released, with the verdicts of P4 and P5; ``str()`` prints it readably,
        :meth:`Fingerprint.to_json` serializes it.
    """
    if not isinstance(fit, ModelFit):
        raise TypeError(f"fit must be a ModelFit (from synpmx_model_estimate), got {fit!r}")
    pk = fit.pk
    continuous, categories, reference, _ = _covariate_release(fit)
    arms, _ = _arm_release(fit)
    endpoints, _ = _endpoint_release(fit)
    smallest = _smallest_group(fit)
    p4 = "pass" if smallest >= 3 else "FAIL"
    return Fingerprint(
        cohort_size=fit.n_source,
        model=dataclasses.asdict(pk.model),
        pk_endpoint=fit.study.pk_endpoint,
        log_dv=fit.roles.log_dv,
        error=pk.error,
        typical={k: _round(v, 1) for k, v in pk.typical.items()},
        omega={k: _round(v, 1) for k, v in pk.omega.items()},
        residual={k: _round(v, 1) for k, v in pk.residual.items()},
        covariates=continuous,
        categories=categories,
        reference_weight=reference,
        arms=arms,
        dose_change_rate=_dose_change(fit)[0],
        endpoints=endpoints,
        checks={"P4": p4, "P5": _p5(fit)[0]},
    )


# --- The checks -------------------------------------------------------------------------------


def _tokens(value: object) -> list[str]:
    """Every key and string value of a JSON-like structure."""
    if isinstance(value, dict):
        return [str(k) for k in value] + [t for v in value.values() for t in _tokens(v)]
    if isinstance(value, list):
        return [t for v in value for t in _tokens(v)]
    return [value] if isinstance(value, str) else []


def _p3_failures(released: dict, expected: dict) -> list[str]:
    """Protection 2 (and the rounding of protection 5), verified on the released values.

    Each protected value must be what its rule gives on the fit: the LOQ rule, the median
    weight at one figure, trimmed covariate summaries at two, arm-mean doses at two, and PK
    estimates at one figure.
    """
    failures = []
    for field in ("typical", "omega", "residual"):
        for name, value in released.get(field, {}).items():
            if value != _round(value, 1):
                failures.append(f"{field} {name} has more than one significant figure")
    for name, summary in released.get("covariates", {}).items():
        if summary != expected["covariates"].get(name):
            failures.append(f"covariate {name} is not its trimmed summary")
    if released.get("reference_weight") != expected["reference_weight"]:
        failures.append("reference weight is not the median at one figure")
    for name, endpoint in released.get("endpoints", {}).items():
        if endpoint.get("loq") != expected["endpoints"].get(name, {}).get("loq"):
            failures.append(f"{name} LOQ does not follow the LOQ rule")
    if released.get("arms") != expected["arms"]:
        failures.append("arms or planned doses are not the kept arms' means")
    return failures


def model_privacy_checks(
    fit: ModelFit, *, released: Fingerprint | str | None = None
) -> pd.DataFrame:
    """Verify the protections on a fit: checks P1-P5.

    Parameters
    ----------
    fit : ModelFit
        A fit from :func:`synpmx_model_estimate`.
    released : Fingerprint or str, optional
        The fingerprint to check, or its JSON text (the artefact as it would leave). Default:
        ``model_fingerprint(fit)``. Passing an edited one shows what the checks catch.

    Returns
    -------
    pandas.DataFrame
        One row per check with columns ``check``, ``question``, ``verdict`` (pass, review or
        FAIL) and ``result``: ``none`` or what failed for P1-P3, ``smallest group k`` for P4,
        and for P5 the largest move with the estimate's name, and how many were left out.
    """
    fingerprint = model_fingerprint(fit)
    expected = dataclasses.asdict(fingerprint)
    if released is None:
        released = expected
    elif isinstance(released, Fingerprint):
        released = dataclasses.asdict(released)
    elif isinstance(released, str):
        released = json.loads(released)
    else:
        raise TypeError(f"released must be a Fingerprint or JSON text, got {released!r}")
    extra = sorted(set(released) - set(FINGERPRINT_FIELDS))
    source_ids = {str(i) for i in fit.study.ids}
    leaked = sorted(set(_tokens(released)) & source_ids)
    smallest = _smallest_group(fit)
    p5_verdict, p5_result = _p5(fit)
    rows = [
        ("P1", "No per-patient table is released", extra, "fields outside the allowlist: "),
        ("P2", "No source identifier is released", leaked, "source IDs in the fingerprint: "),
        ("P3", "No single patient's value is released", _p3_failures(released, expected), ""),
    ]
    table = [
        {
            "check": check,
            "question": question,
            "verdict": "FAIL" if problems else "pass",
            "result": prefix + ", ".join(map(str, problems)) if problems else "none",
        }
        for check, question, problems, prefix in rows
    ]
    table.append(
        {
            "check": "P4",
            "question": "Every released frequency rests on at least three patients",
            "verdict": fingerprint.checks["P4"],
            "result": f"smallest group {smallest}",
        }
    )
    table.append(
        {
            "check": "P5",
            "question": "No single patient moves a released estimate far",
            "verdict": p5_verdict,
            "result": p5_result,
        }
    )
    return pd.DataFrame(table, columns=["check", "question", "verdict", "result"])


# --- Across the public studies ----------------------------------------------------------------


def _free_frequencies(fingerprint: Fingerprint) -> int:
    """Released frequencies free to vary: levels less one per covariate, arms less one,
    attendance rates below 1 and a dose-change rate strictly between 0 and 1."""
    levels = sum(len(pairs) - 1 for pairs in fingerprint.categories.values())
    arms = max(len(fingerprint.arms) - 1, 0)
    attendance = sum(e["attendance"] < 1 for e in fingerprint.endpoints.values())
    return levels + arms + attendance + int(0 < fingerprint.dose_change_rate < 1)


def privacy_checks_across_studies(
    names: list[str] | tuple[str, ...] | None = None, *, seed: int = 1
) -> pd.DataFrame:
    """Fit each shipped study, and tabulate its checks and what its fingerprint releases.

    Parameters
    ----------
    names : sequence of str, optional
        Studies to fit (keys of :data:`synpmx_lite.study.DATASETS`); default all of them.
    seed : int, default 1
        Passed to :func:`synpmx_model_estimate`.

    Returns
    -------
    pandas.DataFrame
        One row per study: ``study``, ``patients``, ``left_out`` (for moving an estimate by 15
        or more), the verdicts ``P1``-``P5``, ``largest`` (the largest move among the
        patients kept, with the estimate's name), and for membership inference
        ``random_effects`` (between-subject variances released), ``attendance_below_1``
        (attendance rates released below 1) and ``free_frequencies`` (category levels less
        one per covariate, arms less one, attendance rates below 1 and dose-change rates
        strictly between 0 and 1).
    """
    names = list(DATASETS) if names is None else list(names)
    unknown = sorted(set(names) - set(DATASETS))
    if unknown:
        raise ValueError(f"names must be among {sorted(DATASETS)}, got {unknown}")
    rows = []
    for name in names:
        fit = synpmx_model_estimate(*load_dataset(name), seed=seed)
        checks = model_privacy_checks(fit).set_index("check")
        fingerprint = model_fingerprint(fit)
        largest = fit.privacy.largest
        rows.append(
            {
                "study": name,
                "patients": fit.n_source,
                "left_out": fit.privacy.left_out.patients,
                **checks["verdict"].to_dict(),
                "largest": f"{largest['estimate']}, {largest['largest']:.3g} {largest['scale']}",
                "random_effects": len(fingerprint.omega),
                "attendance_below_1": sum(
                    e["attendance"] < 1 for e in fingerprint.endpoints.values()
                ),
                "free_frequencies": _free_frequencies(fingerprint),
            }
        )
    return pd.DataFrame(rows)
