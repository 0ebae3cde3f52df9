r"""The protection rules on plain values: what the fingerprint may release, and how coarsely.

Each rule takes values that stay in the secure environment and returns what may leave it. The
builder (:func:`synpmx_lite.generator.estimate.model_fingerprint`) applies them; the checks
(:mod:`synpmx_lite.generator.checks`) verify the result independently, from the released JSON and
the source data.

Where the R generator's article is silent or weaker, the rules follow statistical disclosure
control (SDC) practice (Hundepool et al. 2012), and say so:

* **Threshold rule on both sides** (the threshold protection, verified by P3 and P4): a
  frequency is released only where at least ``min_patients`` patients stand on each side of it.
  A category level held by fewer is folded into the most common level; a covariate whose levels
  do not survive folding (none reaches the threshold, or only one does) is withheld, because a
  single level released at frequency 1 would misdescribe the patients folded into it and a
  frequency of 1 - c/n would describe them. A covariate with about as many levels as patients is
  an identifier (:func:`identifier_like`) and is refused outright.
* **No single patient's value** (the single-value rule, verified by P3), for every released
  magnitude that stands for a per-patient quantity (a time, a dose, a weight, a lowest
  concentration, a covariate mean): the released number, at the precision it is released with,
  must equal the value of no patient, or of at least ``min_patients`` patients. An odd-sized
  median is one patient's value, and at two significant figures a mean can coincide with one;
  such a number is moved to the nearest value on the same grid that nobody, or enough patients,
  hold (:func:`protected_value`). The SDC analogue is the threshold rule for magnitude tables: a
  cell value must not be attributable to fewer than ``k`` contributors.
* **A planned dose's route is the arm's** (a majority over the arm, verified by P3): a dose is
  planned where at least ``min_patients`` patients reached it by either route, and every
  planned dose of an arm's dosing period is released with the route (``"iv"`` or ``"oral"``)
  most of the arm's patients took in that period (:func:`dose_route`). A study mixing IV and
  oral doses within one arm is released as the arm's majority, and an arm split evenly is
  planned like any other. The route is one figure of the whole arm: a route read dose by dose
  would change between a dose and a later one that fewer patients reached, and tell the
  route of those who stopped.
* **Trimmed summaries on enough patients** (the trimming, verified by P3): the trimmed mean and
  SD rest on at least ``min_patients`` patients once the extremes are set aside (at least one at
  each end), or are withheld. With 4 patients the core would hold 2, and its mean and SD give
  both values back.
* **The mean of a code is a frequency** (the threshold and the trimming): a numeric covariate
  with few distinct values (sex coded 1/2, a genotype or stage coded 1-3, an Apgar score from 1
  to 10) has a value set anyone can guess, and its mean and SD are two equations in the counts
  of those values: with three values they give every count back exactly (with twelve patients
  coded 1, 2, 3, a release of geometric mean 1.7 and SD 0.78 on the log scale can only be six,
  one and five), and with six values at twelve patients enumerating the count vectors finds one
  alone that fits, ``[3, 3, 3, 1, 1, 1]``. SDC output checking treats the mean of a binary or
  coded variable as the frequency table it is (Hundepool et al. 2012). Here a numeric covariate
  with at most :data:`CODE_VALUES` distinct values is never summarised (:func:`few_values`): it
  is released as categories, level by level under the threshold rule, where its levels are fewer
  than an identifier's (:func:`numeric_code`), and withheld otherwise (a tiny study whose few
  patients each hold their own value). The rule reads only the number of distinct values, not
  how they compare with the number of patients: a rule that let three values at five patients
  through as a summary pinned their counts.

  The rule is conservative for small studies of measurements, and deliberately so. nimoData's
  twelve patients hold nine or ten distinct values of age, body surface area, height and
  weight, so all four are withheld (at most one value of any is held by three patients).
  Enumerating the count vectors of their values finds hundreds consistent with each trimmed
  summary, a few with no value under three patients, so a summary released where the
  consistent vectors are many would let them through. But that test needs the summary of the
  patients the influence screen keeps, and the screen reads the influence on every released
  summary, including these: the choice would feed back into the rounds that decide it. Read
  from the number of distinct values, the choice is made before the fit, and the builder and
  the checks (P3) each make it from the source alone.

References
----------
Hundepool A, Domingo-Ferrer J, Franconi L, et al. Statistical Disclosure Control. Wiley; 2012.

Huber PJ, Ronchetti EM. Robust Statistics. 2nd ed. Wiley; 2009.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
from scipy import stats

from .._validation import check_array, check_count, check_real
from ..rounding import round_significant

__all__ = [
    "CODE_VALUES",
    "IDENTIFIER_SHARE",
    "TRIM",
    "dose_route",
    "few_values",
    "fold_categories",
    "identifier_like",
    "loq_floor",
    "numeric_code",
    "protected_value",
    "share_two_sided",
    "trimmed_core_size",
    "trimmed_log_summary",
]

#: Share of patients set aside at each end of a trimmed covariate summary (the trimming).
TRIM = 0.05

#: A categorical column with at least this many distinct levels per patient is taken for an
#: identifier and refused.
IDENTIFIER_SHARE = 0.8

#: A numeric covariate with at most this many distinct values is never summarised by a mean
#: and SD (:func:`few_values`): ten covers scores such as Apgar's (1 to 10) and every code
#: whose count vectors a summary at two figures can be enumerated against.
CODE_VALUES = 10

# The smallest value the LOQ rule accepts: below it, halving and rounding down to a power of
# ten leave the range of normal floating-point numbers.
_SMALLEST_LOQ_INPUT = 1e-300


# --- The trimming: trimmed covariate summaries ----------------------------------------------


def _set_aside(n: int, trim: float) -> int:
    """Values set aside at each end of ``n``: ceil(trim n), at least one, two kept at least."""
    k = max(1, math.ceil(trim * n))
    return (n - 2) // 2 if n - 2 * k < 2 else k


def trimmed_core_size(n: int, *, trim: float = TRIM) -> int:
    """How many of ``n`` patients a trimmed summary rests on after its extremes are set aside.

    Parameters
    ----------
    n : int
        Patients behind the summary.
    trim : float, default 0.05
        Share set aside at each end, at least one patient each.

    Returns
    -------
    int
        ``n - 2 max(1, ceil(trim n))``, or 0 where fewer than two would remain: the release
        needs at least ``min_patients`` (see the module docstring).

    Examples
    --------
    >>> [trimmed_core_size(n) for n in (3, 4, 5, 20, 21)]
    [0, 2, 3, 18, 17]
    """
    n = check_count(n, "n", minimum=0)
    trim = check_real(trim, "trim", low=0, high=0.5, low_open=True, high_open=True)
    core = n - 2 * max(1, math.ceil(trim * n))
    return core if core >= 2 else 0


def trimmed_log_summary(values: object, *, trim: float = TRIM) -> tuple[float, float]:
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

    Notes
    -----
    The fingerprint releases a summary only where it rests on at least
    ``min_arm_patients`` patients after the extremes are set aside
    (:func:`trimmed_core_size`).

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
    mean, sd = trimmed_moments(np.sort(logs)[None, :], trim)
    return float(mean[0]), float(sd[0])


def _positive(values: object, name: str) -> np.ndarray:
    array = check_array(values, name, ndim=1)
    if np.any(array <= 0):
        raise ValueError(f"{name} must be positive")
    return array


def trimmed_moments(sorted_logs: np.ndarray, trim: float) -> tuple[np.ndarray, np.ndarray]:
    """Trimmed mean and corrected SD of each row of an already sorted ``(rows, n)`` array."""
    n = sorted_logs.shape[1]
    k = _set_aside(n, trim)
    core = sorted_logs[:, k : n - k]
    share = k / n
    z = stats.norm.isf(share)
    correction = np.sqrt(1 - 2 * z * stats.norm.pdf(z) / (1 - 2 * share)) if k else 1.0
    return core.mean(axis=1), core.std(axis=1, ddof=1) / correction


# --- The threshold: frequencies with enough patients on both sides ---------------------------


def identifier_like(levels: object) -> bool:
    """Whether a categorical column has about as many levels as patients (an identifier).

    Parameters
    ----------
    levels : array_like
        One level per patient.

    Returns
    -------
    bool
        True where the distinct levels number at least :data:`IDENTIFIER_SHARE` (0.8) of the
        patients: a per-patient code, a name or a continuous value declared categorical.

    Examples
    --------
    >>> identifier_like(["pt001", "pt002", "pt003", "pt004"]), identifier_like(["a", "a", "b"])
    (True, False)
    """
    series = _levels(levels)
    return series.nunique() >= IDENTIFIER_SHARE * len(series)


def few_values(values: object) -> bool:
    """Whether a numeric covariate takes too few distinct values to be summarised.

    Parameters
    ----------
    values : array_like
        One value per patient.

    Returns
    -------
    bool
        True where the values take at most :data:`CODE_VALUES` (10) distinct values: a
        value set that small can be guessed, and a mean and SD would be equations in the
        counts of its values (see the module docstring).

    Examples
    --------
    >>> few_values([1, 2, 3, 4, 5, 6] * 2), few_values(np.linspace(50, 90, 11))
    (True, False)
    """
    array = check_array(values, "values", ndim=1)
    return np.unique(array).size <= CODE_VALUES


def numeric_code(values: object) -> bool:
    """Whether a numeric covariate is a category written in numbers (see the module docstring).

    Parameters
    ----------
    values : array_like
        One value per patient.

    Returns
    -------
    bool
        True where the values take too few distinct values to be summarised
        (:func:`few_values`) and fewer than an identifier's share of the patients
        (:data:`IDENTIFIER_SHARE`): it is released as categories. A column with few values
        that is not a code (each of a tiny study's patients holding their own) is withheld.

    Examples
    --------
    >>> numeric_code([1, 2, 2, 3, 1, 1, 2, 3]), numeric_code(np.linspace(50, 90, 11))
    (True, False)
    >>> numeric_code([1, 1, 2, 3, 3])  # three values at five patients: still a code
    True
    """
    array = check_array(values, "values", ndim=1)
    distinct = np.unique(array).size
    return few_values(array) and distinct < IDENTIFIER_SHARE * array.size


def _levels(levels: object) -> pd.Series:
    if isinstance(levels, str) or not hasattr(levels, "__len__"):
        raise TypeError(f"levels must be a sequence of levels, one per patient, got {levels!r}")
    series = pd.Series(np.asarray(levels, dtype=object).ravel(), dtype=object)
    if series.empty:
        raise ValueError("levels must not be empty")
    if series.isna().any():
        raise ValueError(
            f"levels has {int(series.isna().sum())} missing values: record them as a level of "
            "their own (such as 'not recorded') or leave the covariate out"
        )
    return series


def fold_categories(levels: object, *, min_patients: int = 3) -> pd.Series:
    """Level frequencies, with every level held by fewer than ``min_patients`` folded away.

    Parameters
    ----------
    levels : array_like
        One level per patient, none missing.
    min_patients : int, default 3
        The fewest patients a released level may have.

    Returns
    -------
    pandas.Series
        Frequency of each kept level (index: level, most common first), summing to 1; the
        patients of a folded level count toward the most common level. Empty where the
        covariate is withheld: no level has ``min_patients`` patients, or only one has.

    Raises
    ------
    ValueError
        A missing level (``None`` or NaN), or no level at all.

    Examples
    --------
    >>> fold_categories(["m"] * 5 + ["f"] * 3 + ["x"])
    m    0.666667
    f    0.333333
    Name: frequency, dtype: float64
    >>> fold_categories(["X", "X", "Y", "Z"]).empty
    True
    """
    min_patients = check_count(min_patients, "min_patients")
    counts = folded_counts(_levels(levels), min_patients)
    return (counts / counts.sum()).rename("frequency")


def folded_counts(levels: pd.Series, min_patients: int) -> pd.Series:
    """Counts of the kept levels with the folded patients in the most common; empty if withheld."""
    counts = levels.value_counts(sort=True)
    counts.index = counts.index.astype(object)
    keep = counts >= min_patients
    if keep.sum() < 2:
        return pd.Series([], dtype=int, index=pd.Index([], dtype=object))
    folded = counts[keep].copy()
    folded.iloc[0] += counts[~keep].sum()
    folded.index.name = None
    return folded.rename(None)


def share_two_sided(count: int, total: int, min_patients: int) -> float:
    """A share with at least ``min_patients`` patients on each side, else 0 or 1.

    Parameters
    ----------
    count, total : int
        Patients with the event, and patients in all.
    min_patients : int
        The fewest patients each side may have.

    Returns
    -------
    float
        0 where fewer than ``min_patients`` had the event, 1 where fewer did not, otherwise
        ``count / total`` at two significant figures.

    Examples
    --------
    >>> share_two_sided(2, 30, 3), share_two_sided(28, 30, 3), share_two_sided(9, 30, 3)
    (0.0, 1.0, 0.3)
    """
    if count < min_patients:
        return 0.0
    if total - count < min_patients:
        return 1.0
    return float(round_significant(count / total, 2))


# --- The single-value rule: no single patient's value ----------------------------------------


def loq_floor(lowest_per_patient: object, *, min_patients: int = 3) -> float | None:
    """Half the lowest value at least ``min_patients`` patients reached, rounded down.

    Parameters
    ----------
    lowest_per_patient : array_like
        Each patient's lowest positive observation (at least 1e-300).
    min_patients : int, default 3
        How many patients must have reached the value; also the fewest patients whose lowest
        value may equal the LOQ at one figure.

    Returns
    -------
    float or None
        The LOQ, rounded down to 1, 2 or 5 times a power of ten, and further down the same
        series while one to ``min_patients - 1`` patients' lowest values equal it at one
        significant figure (so that the LOQ is never the value of one or two patients); None
        with fewer than ``min_patients`` patients.

    Examples
    --------
    The third lowest of the patients' minima is 0.9; half of it, 0.45, rounds down to 0.2.

    >>> loq_floor([0.3, 0.7, 0.9, 1.5])
    0.2

    Here 0.2 would be what two patients' lowest values read at one figure, so it steps to 0.1:

    >>> loq_floor([0.15, 0.24, 0.74, 0.86])
    0.1
    """
    lowest = np.sort(_positive(lowest_per_patient, "lowest_per_patient"))
    min_patients = check_count(min_patients, "min_patients")
    if lowest[0] < _SMALLEST_LOQ_INPUT:
        raise ValueError(
            f"lowest_per_patient must be at least {_SMALLEST_LOQ_INPUT:g} (got "
            f"{lowest[0]:g}): rescale the values to a unit where they are not subnormal"
        )
    if lowest.size < min_patients:
        return None
    half = lowest[min_patients - 1] / 2
    exponent = math.floor(math.log10(half))
    mantissa = max(m for m in (1, 2, 5, 10) if m * 10.0**exponent <= half * (1 + 1e-12))
    steps = [1, 2, 5]
    place = steps.index(mantissa) if mantissa < 10 else 0
    exponent += mantissa == 10
    at_one_figure = round_significant(lowest, 1)
    while True:
        loq = float(round_significant(steps[place] * 10.0**exponent, 1))
        holders = int(np.isclose(at_one_figure, loq, rtol=1e-9, atol=0).sum())
        if not 0 < holders < min_patients:
            return loq
        place -= 1
        if place < 0:
            place, exponent = 2, exponent - 1


def protected_value(
    center: float,
    values: object,
    owners: object,
    *,
    figures: int,
    min_patients: int,
    positive: bool = False,
) -> float:
    """``center`` at ``figures`` significant figures, moved off any value one or two patients hold.

    Parameters
    ----------
    center : float
        The summary to release (a median, a mean), not negative.
    values : array_like
        Every source value of the same quantity (a patient may contribute several).
    owners : array_like
        The patient each of ``values`` belongs to.
    figures : int
        Significant figures the number is released with.
    min_patients : int
        The fewest patients who may share a released value.
    positive : bool, default False
        Whether the released value must be positive (a dose): then 0 is never proposed.

    Returns
    -------
    float
        ``center`` rounded to ``figures``, where the patients whose value rounds to the same
        number are none or at least ``min_patients``; otherwise the nearest number on the
        same grid (moving one unit of the last figure at a time, either way, nearest to
        ``center`` first, the smaller on a tie) for which that holds.

    Examples
    --------
    The median of 1.02, 1.5 and 1.98 is one patient's value; 1.4 and 1.6 are held by nobody,
    and a tie goes to the smaller:

    >>> protected_value(1.5, [1.02, 1.5, 1.98], [0, 1, 2], figures=2, min_patients=3)
    1.4
    """
    values = check_array(values, "values", ndim=1)
    owners = np.asarray(owners)
    if owners.shape != values.shape:
        raise ValueError(f"owners must match values in shape, got {owners.shape}")
    figures = check_count(figures, "figures")
    center = check_real(center, "center", low=0)
    rounded_values = round_significant(values, figures)

    def acceptable(candidate: float) -> bool:
        if positive and candidate <= 0:
            return False
        held = np.isclose(rounded_values, candidate, rtol=1e-9, atol=0)
        holders = np.unique(owners[held]).size
        return not 0 < holders < min_patients

    start = float(round_significant(center, figures)) if center > 0 else 0.0
    if acceptable(start):
        return start
    # Walk the grid one unit of the last figure at a time, both ways, nearest to center first.
    # Upward the walk leaves the data's range, where nobody holds a value, so it ends.
    floor_unit = _grid_unit(float(np.max(np.abs(values), initial=0.0)) or 1.0, figures)
    above = below = start
    while True:
        above = float(
            round_significant(
                above + (_grid_unit(above, figures) if above > 0 else floor_unit), figures
            )
        )
        candidates = [above]
        if below > 0:
            below = float(
                round_significant(below - _grid_unit(below * (1 - 1e-9), figures), figures)
            )
            candidates.append(below)
        for candidate in sorted(candidates, key=lambda c: (abs(c - center), c)):
            if acceptable(candidate):
                return candidate


def _grid_unit(value: float, figures: int) -> float:
    """One unit of the last of ``figures`` significant figures at ``value`` (positive)."""
    return 10.0 ** (math.floor(math.log10(value)) - figures + 1)


# --- The route of a planned dose ----------------------------------------------------------------


def dose_route(routes: object, owners: object, *, min_patients: int) -> str | None:
    """The route to release an arm's planned doses with: the one most of its patients took.

    Given the doses of one arm in one dosing period, it is the route of every planned dose
    there, so that no released route describes fewer patients than the arm: read dose by dose,
    a route changing at a dose that fewer patients reached would tell the route of those who
    stopped. Only the majority's route is released, so an arm split evenly between routes is
    released like any other (leaving it out would let the arm's size tell the split).

    Parameters
    ----------
    routes : array_like of str
        Each source dose's route, ``"iv"`` (into the central compartment) or ``"oral"``.
    owners : array_like
        The patient each dose belongs to.
    min_patients : int
        The fewest patients a released route may describe.

    Returns
    -------
    str or None
        The route the most patients took (``"oral"`` on a tie: the depot, the model's own),
        or None where fewer than ``min_patients`` patients took the doses at all.

    Examples
    --------
    >>> dose_route(["iv", "iv", "iv", "oral"], [0, 1, 2, 3], min_patients=3)
    'iv'
    >>> dose_route(["iv", "iv", "oral", "oral"], [0, 1, 2, 3], min_patients=3)
    'oral'
    >>> dose_route(["iv", "oral"], [0, 1], min_patients=3) is None
    True
    """
    routes = np.asarray(routes, dtype=object)
    owners = np.asarray(owners)
    if routes.shape != owners.shape or not set(routes) <= {"iv", "oral"}:
        raise ValueError("routes must be 'iv' or 'oral', one per owner")
    min_patients = check_count(min_patients, "min_patients")
    held = {route: np.unique(owners[routes == route]).size for route in ("oral", "iv")}
    route = max(held, key=held.get)  # "oral" first: it wins a tie
    return route if np.unique(owners).size >= min_patients else None
