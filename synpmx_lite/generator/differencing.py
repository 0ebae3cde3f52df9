r"""What two releases of one study bound about the patients added between them.

The ledger (:mod:`synpmx_lite.generator.ledger`) stops counts from being subtracted between an
interim and a final release. Continuous numbers are differenced too, but give bounds, not
values: an attacker who reads a geometric mean :math:`G` and a log-scale SD :math:`s` in two
releases, of :math:`n` and :math:`N = n + m` patients, and takes each for the plain mean and
SD of the logs of its cohort, has two equations in the :math:`m` new patients' logs,

.. math::

    m \mu = N \log G_N - n \log G_n, \qquad
    (N - 1) s_N^2 - (n - 1) s_n^2 = S_m + \frac{n m}{N} (\mu - \log G_n)^2,

where :math:`\mu` is the mean of the new patients' logs and :math:`S_m \ge 0` their sum of
squares about it (zero for one new patient, so the second equation then gives the distance
of that patient from the interim mean). Every released number stands for the interval of
values that round to it, so :func:`differencing_bounds` carries the intervals through both
equations (interval arithmetic) and returns the range of :math:`e^\mu`, the new patients'
geometric mean, that the two releases allow. A typical value and its between-subject variance
are read the same way, as the geometric mean and log-scale variance of the patients'
parameters.

The arithmetic is the attacker's, not the builder's: the released summaries are trimmed
(extremes set aside, a number that changes with the cohort), moved off values one or two
patients hold, and the model estimates are fits, not means. So a bound need not hold, and
:func:`differencing_tightness` measures both how narrow it is and how often it holds, over
random orders in which a study's patients could have joined.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import stats

from .._validation import check_count
from ..rounding import round_significant
from .checks import RELEASED_FIGURES, as_mapping, is_number, read_release
from .protections import TRIM, protected_value, trimmed_core_size, trimmed_moments

__all__ = [
    "DIFFERENCING_CONFIDENCE",
    "DifferencingBounds",
    "differencing_bounds",
    "differencing_tightness",
    "exact_log_summary",
    "rounding_interval",
]

#: The attackers measured: one holding both releases; one also holding the interim cut's
#: patients exactly; and one who, holding them, also inverts the release rule for one new
#: patient (tries every value and keeps those the rule turns into the final release).
#: The fourth holds the interim patients, assumes no new patient is among the extremes the final
#: cut's trimming sets aside, and allows one unit of the single-value rule's move: it works for
#: any number of new patients.
ATTACKERS = (
    "both releases",
    "interim patients known",
    "interim known, rule inverted",
    "interim known, trimming assumed",
)

# Candidate values the inverting attacker tries for the new patient, log-spaced from half the
# interim's lowest value to twice its highest (so its widest bounds end where the grid ends, not
# where the data say: a new extreme is set aside by the trimming and the rule then says nothing
# more of it); and how many units of the last figure the rule
# may move a geometric mean off a value one or two patients hold, for the pre-filter.
CANDIDATES = 400
#: The confidence of each coverage's exact interval, and the share of the added patients' true
#: means, over the orders, whose range sets the population's factor.
DIFFERENCING_CONFIDENCE = 0.95
_MOVE_UNITS = 5


@dataclass(frozen=True)
class DifferencingBounds:
    """The range of the new patients' geometric mean that two releases allow, per summary.

    Attributes
    ----------
    summaries : tuple of str
        What was differenced: a covariate's name, or ``"typical <parameter>"``.
    new_patients : int
        Patients in the later release and not in the earlier one.
    low, high : numpy.ndarray
        The bounds, one per summary; NaN where the two releases contradict the arithmetic
        (no geometric mean fits both).
    """

    summaries: tuple[str, ...]
    new_patients: int
    low: np.ndarray
    high: np.ndarray

    @property
    def factor(self) -> np.ndarray:
        """How many times the upper bound is the lower (1 pins the value; NaN: no bound)."""
        with np.errstate(divide="ignore", invalid="ignore"):
            return self.high / self.low

    def table(self) -> pd.DataFrame:
        """The bounds as a table: summary, new patients, low, high and factor."""
        return pd.DataFrame(
            {
                "summary": list(self.summaries),
                "new patients": self.new_patients,
                "low": self.low,
                "high": self.high,
                "factor": self.factor,
            }
        )


def rounding_interval(released: object, figures: int) -> tuple[np.ndarray, np.ndarray]:
    """The values that round to ``released`` at ``figures`` significant figures.

    Parameters
    ----------
    released : array_like
        Released values, positive.
    figures : int
        Significant figures they were released with.

    Returns
    -------
    low, high : numpy.ndarray
        The interval ends: half a unit of the last figure either side, where the unit below a
        power of ten is the finer one (0.1 at one figure stands for 0.095 to 0.15).

    Examples
    --------
    >>> low, high = rounding_interval([67.0, 0.1], 2)
    >>> np.round(low, 6).tolist(), np.round(high, 6).tolist()
    ([66.5, 0.0995], [67.5, 0.105])
    """
    figures = check_count(figures, "figures")
    values = np.asarray(released, dtype=float)
    if not np.all(np.isfinite(values) & (values > 0)):
        raise ValueError(f"released values must be positive and finite, got {released!r}")
    unit = 10.0 ** (np.floor(np.log10(values)) - figures + 1)
    at_power = np.isclose(values / unit, 10.0 ** (figures - 1))
    return values - np.where(at_power, unit / 20, unit / 2), values + unit / 2


def exact_log_summary(values: object) -> tuple[float, float]:
    """The untrimmed mean and SD (``ddof=1``) of the logs: what an attacker holding a cut's
    patients computes, and passes to :func:`differencing_bounds` as ``known_earlier``.

    Examples
    --------
    >>> exact_log_summary([math.e, math.e**3])
    (2.0, 1.4142135623730951)
    """
    array = np.asarray(values, dtype=float)
    if array.ndim != 1 or array.size < 2 or not np.all(np.isfinite(array) & (array > 0)):
        raise ValueError("values must be at least two positive, finite numbers")
    logs = np.log(array)
    return float(logs.mean()), float(logs.std(ddof=1))


def _summaries(release: dict) -> dict[str, tuple[float, float, int, bool]]:
    """Each differencable summary of a release: its centre, its spread as released (a
    covariate's sdlog; a parameter's omega, a variance; 0 where none), the figures both are
    released with, and whether the spread is a variance."""
    found = {}
    for name, summary in as_mapping(release.get("covariates")).items():
        summary = as_mapping(summary)
        centre, sd = summary.get("geometric_mean"), summary.get("sdlog")
        if is_number(centre) and centre > 0:
            spread = sd if is_number(sd) and sd > 0 else 0.0
            found[name] = (centre, spread, RELEASED_FIGURES["summary"], False)
    omega = as_mapping(release.get("omega"))
    for name, typical in as_mapping(release.get("typical")).items():
        variance = omega.get(name)
        spread = variance if is_number(variance) and variance > 0 else 0.0
        if is_number(typical) and typical > 0:
            found[f"typical {name}"] = (typical, spread, RELEASED_FIGURES["estimate"], True)
    return found


def _log_intervals(
    centre: np.ndarray, spread: np.ndarray, figures: np.ndarray, variance: np.ndarray
) -> tuple:
    """Intervals of the log centre and of the log-scale SD, from released centres and spreads
    (SDs, or variances where ``variance``); a zero spread stands for any SD, so that it
    constrains nothing."""
    centre_low, centre_high = np.empty_like(centre), np.empty_like(centre)
    sd_low, sd_high = np.zeros_like(spread), np.full_like(spread, np.inf)
    for f in np.unique(figures):
        rows = figures == f
        centre_low[rows], centre_high[rows] = rounding_interval(centre[rows], int(f))
        given = rows & (spread > 0)
        low, high = rounding_interval(spread[given], int(f))
        power = np.where(variance[given], 0.5, 1.0)
        sd_low[given], sd_high[given] = low**power, high**power
    return np.log(centre_low), np.log(centre_high), sd_low, sd_high


def _new_mean(later: tuple, earlier: tuple, n_later: int, n_earlier: int) -> tuple:
    """The interval of the new patients' mean log from the intervals of each release's log
    centre and SD (each a (low, high) pair of arrays): both equations of the module
    docstring, carried through by interval arithmetic. NaN where nothing fits both."""
    (lf_low, lf_high, sf_low, sf_high), (li_low, li_high, si_low, si_high) = later, earlier
    big, small = n_later, n_earlier
    m = big - small
    mean_low = (big * lf_low - small * li_high) / m
    mean_high = (big * lf_high - small * li_low) / m
    with np.errstate(invalid="ignore"):  # inf - inf where an SD is not released
        spread_high = (big - 1) * sf_high**2 - (small - 1) * si_low**2
        spread_low = np.maximum((big - 1) * sf_low**2 - (small - 1) * si_high**2, 0.0)
    scale = big / (small * m)
    far = np.sqrt(np.where(spread_high >= 0, scale * spread_high, np.nan))
    near = np.sqrt(scale * spread_low) if m == 1 else np.zeros_like(far)
    # mu lies within [near, far] of the interim mean, on either side, and in the mean's range
    pieces = [(li_low - far, li_high - near), (li_low + near, li_high + far)]
    lows, highs = [], []
    for low, high in pieces:
        low, high = np.maximum(low, mean_low), np.minimum(high, mean_high)
        empty = ~(low <= high)
        lows.append(np.where(empty, np.inf, low))
        highs.append(np.where(empty, -np.inf, high))
    low, high = np.minimum(*lows), np.maximum(*highs)
    nothing = ~np.isfinite(low)
    return np.where(nothing, np.nan, low), np.where(nothing, np.nan, high)


def differencing_bounds(
    released: object,
    earlier: object,
    *,
    known_earlier: Mapping[str, tuple[float, float]] | None = None,
) -> DifferencingBounds:
    """The new patients' geometric mean as two releases of one study bound it.

    Parameters
    ----------
    released : Fingerprint or str
        The later release (its JSON text), with more patients.
    earlier : Fingerprint or str
        The earlier release of the same study.
    known_earlier : mapping of str to (float, float), optional
        For the attacker who holds the earlier cut's patients: per summary name (a covariate,
        or ``"typical <parameter>"``), the exact mean and SD of the logs
        (:func:`exact_log_summary`; for a parameter, the log of the unrounded typical value
        and the square root of its variance). These replace the earlier release's rounded
        numbers, so that only the later release's rounding blurs.

    Returns
    -------
    DifferencingBounds
        One bound per summary both releases hold (covariate geometric means with their
        ``sdlog``; PK typical values with their omegas), read at the figures the policy
        releases them with (two for covariate summaries, one for estimates; the rounding).

    Raises
    ------
    ValueError
        The later release does not hold more patients than the earlier, or ``known_earlier``
        names a summary the releases do not share or gives no finite mean and SD.
    """
    later, before = read_release(released)[0], read_release(earlier)[0]
    big, small = later.get("cohort_size"), before.get("cohort_size")
    if not (isinstance(big, int) and isinstance(small, int) and big > small >= 2):
        raise ValueError(
            f"released must hold more patients than earlier (cohort sizes {big!r} and "
            f"{small!r}): differencing needs patients added between the two"
        )
    new, old = _summaries(later), _summaries(before)
    names = tuple(name for name in new if name in old)
    known = _known(known_earlier, names)
    numbers = np.array([new[name] + old[name][:2] for name in names], dtype=float).reshape(-1, 6)
    figures, variance = numbers[:, 2], numbers[:, 3].astype(bool)
    later_intervals = _log_intervals(numbers[:, 0], numbers[:, 1], figures, variance)
    earlier_intervals = list(_log_intervals(numbers[:, 4], numbers[:, 5], figures, variance))
    for i, name in enumerate(names):
        if name in known:
            meanlog, sdlog = known[name]
            for j, value in enumerate((meanlog, meanlog, sdlog, sdlog)):
                earlier_intervals[j][i] = value
    low, high = _new_mean(later_intervals, tuple(earlier_intervals), big, small)
    return DifferencingBounds(names, big - small, np.exp(low), np.exp(high))


def _known(known: Mapping | None, names: tuple[str, ...]) -> dict[str, tuple[float, float]]:
    """``known_earlier`` checked: names the releases share, finite means, SDs not negative."""
    if known is None:
        return {}
    if not isinstance(known, Mapping):
        raise TypeError(f"known_earlier must be a mapping of summary names, got {known!r}")
    checked = {}
    for name, pair in known.items():
        if name not in names:
            raise ValueError(f"known_earlier names {name!r}, which is not in both releases")
        if not (isinstance(pair, Sequence) and len(pair) == 2 and all(map(is_number, pair))):
            raise ValueError(f"known_earlier[{name!r}] must be a (meanlog, sdlog) pair")
        if pair[1] < 0:
            raise ValueError(f"known_earlier[{name!r}]: the SD must not be negative")
        checked[name] = (float(pair[0]), float(pair[1]))
    return checked


# --- How tight, and how often right: the bounds over random orders of joining ------------------


def _released(cuts: np.ndarray, min_patients: int, rounded: np.ndarray | None = None) -> tuple:
    """The geometric mean and sdlog the builder releases for each row of ``cuts`` (one cut's
    patients per row), as :func:`synpmx_lite.generator.estimate.model_fingerprint` makes them
    when no patient is left out: trimmed, moved off values one or two patients hold, at two
    figures. ``rounded``: the cuts at two figures, where the caller has them."""
    figures = RELEASED_FIGURES["summary"]
    meanlog, sdlog = trimmed_moments(np.sort(np.log(cuts), axis=1), TRIM)
    rounded = round_significant(cuts, figures) if rounded is None else rounded
    centre = _protected(np.exp(meanlog), rounded, min_patients)
    for row in np.flatnonzero(np.isnan(centre)):  # a walk the vectorised one does not cover
        centre[row] = protected_value(
            math.exp(meanlog[row]),
            cuts[row],
            np.arange(cuts.shape[1]),
            figures=figures,
            min_patients=min_patients,
            positive=True,
        )
    return centre, round_significant(sdlog, figures)


def _protected(centre: np.ndarray, rounded: np.ndarray, min_patients: int) -> np.ndarray:
    """:func:`synpmx_lite.generator.protections.protected_value` for many cuts at once (one
    value per patient, ``rounded`` at two figures): the same walk, nearest first, up to
    :data:`_MOVE_UNITS` units within one power of ten; NaN where it needs to go further."""
    figures = RELEASED_FIGURES["summary"]
    start = round_significant(centre, figures)
    power = 10.0 ** np.floor(np.log10(start))
    unit = power * 10.0 ** (1 - figures)
    within = (start - _MOVE_UNITS * unit >= power) & (start + _MOVE_UNITS * unit < 10 * power)

    def acceptable(candidate: np.ndarray) -> np.ndarray:
        held = np.isclose(rounded, candidate[:, None], rtol=1e-9, atol=0).sum(axis=1)
        return ~((held > 0) & (held < min_patients))

    chosen = np.where(acceptable(start), start, np.nan)
    for j in range(1, _MOVE_UNITS + 1):
        above, below = (round_significant(start + s * j * unit, figures) for s in (1, -1))
        below_first = np.abs(below - centre) <= np.abs(above - centre)
        for candidate in (np.where(below_first, below, above), np.where(below_first, above, below)):
            take = np.isnan(chosen) & within & acceptable(candidate)
            chosen[take] = candidate[take]
    return chosen


def _intervals(centre: np.ndarray, sdlog: np.ndarray) -> tuple:
    """The log-scale intervals of released covariate summaries."""
    shape = centre.shape
    return _log_intervals(
        centre, sdlog, np.full(shape, RELEASED_FIGURES["summary"]), np.zeros(shape, dtype=bool)
    )


def _inverted(ordered: np.ndarray, start: int, min_patients: int) -> tuple:
    """The third attacker's bound on one new patient's value (log scale), for each order: the
    lowest and highest candidate whose cut, with the interim patients, the builder's rule
    releases as the final release's numbers; NaN where none does. Also the grid's log step."""
    interim = ordered[:, :start]
    centre, sdlog = _released(ordered[:, : start + 1], min_patients)
    ends = np.log(np.stack([interim.min(axis=1) / 2, interim.max(axis=1) * 2]))
    grid = np.linspace(ends[0], ends[1], CANDIDATES, axis=1)  # (orders, candidates)

    def with_candidates(cut: np.ndarray, candidates: np.ndarray) -> np.ndarray:
        spread = np.repeat(cut[:, None, :], CANDIDATES, axis=1)
        return np.concatenate([spread, candidates[..., None]], axis=2).reshape(-1, start + 1)

    cuts = with_candidates(interim, np.exp(grid))
    rounded = with_candidates(
        round_significant(interim, RELEASED_FIGURES["summary"]),
        round_significant(np.exp(grid), RELEASED_FIGURES["summary"]),
    )
    meanlog, sd = trimmed_moments(np.sort(np.log(cuts), axis=1), TRIM)
    want = np.repeat(centre, CANDIDATES)
    unit = 10.0 ** (np.floor(np.log10(want)) - RELEASED_FIGURES["summary"] + 1)
    near = (round_significant(sd, RELEASED_FIGURES["summary"]) == np.repeat(sdlog, CANDIDATES)) & (
        np.abs(np.exp(meanlog) - want) <= _MOVE_UNITS * unit
    )
    fits = np.zeros(near.size, dtype=bool)
    rows = np.flatnonzero(near)  # only these need the full rule (its moves are a loop)
    fits[rows] = _released(cuts[rows], min_patients, rounded[rows])[0] == want[rows]
    fits = fits.reshape(grid.shape)
    found = fits.any(axis=1)
    first, last = fits.argmax(axis=1), CANDIDATES - 1 - fits[:, ::-1].argmax(axis=1)
    take = np.arange(len(grid))
    low = np.where(found, grid[take, first], np.nan)
    high = np.where(found, grid[take, last], np.nan)
    return low, high, grid[:, 1] - grid[:, 0]


def _trimming_assumed(ordered: np.ndarray, start: int, added: int, min_patients: int) -> tuple:
    """The fourth attacker's bound on the mean log of ``added`` new patients, for each order.

    Holding the interim patients and assuming no new patient among the final cut's ``k``
    lowest or highest, the attacker knows the final trimmed mean rests on the interim's logs
    without their ``k`` extremes each side plus the new ones, so the released geometric mean
    (its rounding interval widened by one unit for the rule's move) bounds their sum; and each
    new log lies between the interim's ``k``-th lowest and ``k``-th highest.

    Returns
    -------
    low, high, step : numpy.ndarray, numpy.ndarray, float
        The bounds on the new patients' mean log (NaN where they contradict), and 0 (no grid).
    """
    total = start + added
    core = trimmed_core_size(total, trim=TRIM)
    k = (total - core) // 2
    interim = np.sort(np.log(ordered[:, :start]), axis=1)
    kept = interim[:, k : start - k].sum(axis=1)
    centre = _released(ordered[:, :total], min_patients)[0]
    low, high = rounding_interval(centre, RELEASED_FIGURES["summary"])
    unit = 10.0 ** (np.floor(np.log10(centre)) - RELEASED_FIGURES["summary"] + 1)
    mean_low = (core * np.log(np.maximum(low - unit, unit / 10)) - kept) / added
    mean_high = (core * np.log(high + unit) - kept) / added
    mean_low = np.maximum(mean_low, interim[:, k - 1])
    mean_high = np.minimum(mean_high, interim[:, start - k])
    empty = ~(mean_low <= mean_high)
    return np.where(empty, np.nan, mean_low), np.where(empty, np.nan, mean_high), 0.0


def _coverage(covered: np.ndarray) -> dict[str, float]:
    """The share of orders whose bound holds the truth, its binomial standard error, and its
    exact (Clopper-Pearson) interval at :data:`DIFFERENCING_CONFIDENCE`, which stays
    informative at 0 % and 100 %."""
    share, hits = covered.mean(), int(covered.sum())
    interval = stats.binomtest(hits, covered.size).proportion_ci(
        confidence_level=DIFFERENCING_CONFIDENCE, method="exact"
    )
    return {
        "coverage": share,
        "coverage se": math.sqrt(share * (1 - share) / covered.size),
        "coverage low": interval.low,
        "coverage high": interval.high,
    }


def _one_column(ordered: np.ndarray, start: int, added: int, min_patients: int) -> list[dict]:
    """Every attacker's bounds on ``added`` new patients after ``start``, for each order (a row
    of ``ordered``), summarised."""
    later = _intervals(*_released(ordered[:, : start + added], min_patients))
    earlier_logs = np.log(ordered[:, :start])
    known = (earlier_logs.mean(1), earlier_logs.mean(1), *[earlier_logs.std(1, ddof=1)] * 2)
    earliers = {
        ATTACKERS[0]: _intervals(*_released(ordered[:, :start], min_patients)),
        ATTACKERS[1]: known,
    }
    truth = np.log(ordered[:, start : start + added]).mean(1)
    tail = (1 - DIFFERENCING_CONFIDENCE) / 2
    prior = np.exp(np.subtract(*np.quantile(truth, [1 - tail, tail])))
    bounds = {a: (*_new_mean(later, e, start + added, start), 0.0) for a, e in earliers.items()}
    if added == 1:
        bounds[ATTACKERS[2]] = _inverted(ordered, start, min_patients)
    bounds[ATTACKERS[3]] = _trimming_assumed(ordered, start, added, min_patients)
    rows = []
    for attacker, (low, high, step) in bounds.items():
        # the inverting attacker's grid: the truth counts as found within a step of a bound
        covered = (low - step <= truth) & (truth <= high + step)
        factor = np.exp(high - low)
        rows.append(
            {
                "start": start,
                "added": added,
                "attacker": attacker,
                "median factor": np.nanmedian(factor),
                "factor q25": np.nanquantile(factor, 0.25),
                "factor q75": np.nanquantile(factor, 0.75),
                **_coverage(covered),
                "contradicted": np.isnan(low).mean(),
                "population factor": prior,
            }
        )
    return rows


def differencing_tightness(
    values: pd.DataFrame,
    *,
    starts: Sequence[int],
    added: Sequence[int],
    repeats: int,
    seed: int,
    min_patients: int = 3,
) -> pd.DataFrame:
    """How narrow the bounds of :func:`differencing_bounds` are, and how often they hold.

    For ``repeats`` random orders in which the study's patients could have joined (one seeded
    generator), a cut is released after the first ``start`` patients and again after
    ``start + a`` for each ``a`` in ``added``, and each attacker of :data:`ATTACKERS` bounds
    the added patients' geometric mean of each covariate: the one who holds both releases
    (:func:`differencing_bounds`), the one who also holds the interim cut's patients exactly,
    for one added patient, the one who moreover inverts the release rule, trimming and moves
    included, over :data:`CANDIDATES` candidate values; and, for every number added, the one
    who holds the interim patients and assumes no new patient among the final cut's trimmed
    extremes, allowing one unit of the rule's move.

    Parameters
    ----------
    values : pandas.DataFrame
        One row per patient, one column per continuous covariate (positive values).
    starts : sequence of int
        Patients in the interim cut, each at least 3.
    added : sequence of int
        Patients added by the later cut, each at least 1; ``start + a`` at most the patients.
    repeats : int
        Random orders.
    seed : int
        Seed of the one :class:`numpy.random.Generator`, not negative.
    min_patients : int, default 3
        The release's ``min_arm_patients`` (who may share a released value), at least 1.

    Returns
    -------
    pandas.DataFrame
        Per covariate, start, added and attacker: the median factor (upper over lower bound)
        with its quartiles, the share of orders whose bound holds the truth (coverage) with
        its standard error and exact interval at :data:`DIFFERENCING_CONFIDENCE`
        (``coverage low``, ``coverage high``), the share where the two releases contradict
        the arithmetic, and the factor of the central :data:`DIFFERENCING_CONFIDENCE` range of
        the added patients' true geometric mean over the orders (``population factor``: what
        the population alone says of them).

    Raises
    ------
    TypeError
        ``values`` is not a non-empty DataFrame, or a count is not an integer.
    ValueError
        A count is out of range, ``starts`` or ``added`` is empty, or a start plus a number
        added exceeds the patients.

    Notes
    -----
    The releases follow the builder's covariate rule with no patient left out by the
    influence rounds; a patient left out moves the cohort the summaries rest on further from
    the one the attacker assumes.
    """
    if not isinstance(values, pd.DataFrame) or values.empty:
        raise TypeError("values must be a non-empty DataFrame, one row per patient")
    array = values.to_numpy(dtype=float)
    if not np.all(np.isfinite(array) & (array > 0)):
        raise ValueError("values must be positive and finite (continuous covariates)")
    repeats = check_count(repeats, "repeats")
    seed = check_count(seed, "seed", minimum=0)
    min_patients = check_count(min_patients, "min_patients")
    for name, counts in (("starts", starts), ("added", added)):
        if not isinstance(counts, Sequence) or isinstance(counts, str) or not counts:
            raise ValueError(f"{name} must be a non-empty sequence of counts, got {counts!r}")
    patients = len(values)
    for start in starts:
        check_count(start, "starts", minimum=3)
        for a in added:
            if check_count(a, "added") + start > patients:
                raise ValueError(f"start {start} + added {a} exceeds the {patients} patients")
    rng = np.random.default_rng(seed)
    orders = rng.permuted(np.tile(np.arange(patients), (repeats, 1)), axis=1)
    rows = [
        {"covariate": name, **row}
        for j, name in enumerate(values.columns)
        for start in starts
        for a in added
        for row in _one_column(array[orders, j], start, a, min_patients)
    ]
    return pd.DataFrame(rows)
