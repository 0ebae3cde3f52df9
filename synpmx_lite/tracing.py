r"""Tracing a person in released means: the attack of Dwork et al., and OpenDP's Laplace noise.

A curator holds a *sequestered* sample of ``n`` people drawn from a population and releases
the means of ``d`` boolean predicates over it. An attacker who holds the answers, the public
record of a target and a reference sample of other people from the population asks whether the
target is in the sample :cite:p:`dwork2015robust`. Coding bits and answers as
:math:`\pm1` (:math:`\tilde x = 2x - 1`), the two tests of the paper are

* **single reference** (its Figure 1): :math:`T_1 = \langle \tilde y - \tilde z, \tilde q
  \rangle`, with :math:`y` the target, :math:`z` one reference person and :math:`q` the
  answers, against :math:`\tau_1 = \sqrt{8 d \ln(1/\delta)}`;
* **reference sample** (its Figure 2): :math:`T_2 = \langle \tilde y - \tilde z,
  {\rm clip}(\tilde q - \tilde w, \pm\eta) \rangle`, with :math:`w` the mean of :math:`m` more
  reference people, :math:`\alpha = 1/\sqrt m` and :math:`\eta = 2\alpha`, against
  :math:`\tau_2 = 4 \alpha \sqrt{d \ln(1/\delta)}`.

For a non-member both statistics are sums of independent terms of mean zero, bounded as long as
the answers lie in [0, 1], which is what the thresholds need to keep false positives below
:math:`\delta`. A *calibrated* test replaces the threshold by a quantile of the same statistic
computed for the reference people themselves, a conformal threshold that holds its level
whatever the answers' distribution.

Predicates are a seeded hash of each record into ``d`` bits (:func:`random_predicates`). The
differentially private release (:func:`dp_mean_query`) adds OpenDP's Laplace noise to each
mean, at the scale OpenDP's own privacy map certifies for a budget of
:math:`\varepsilon/d` per mean. :func:`simulate_tracing` repeats the whole experiment many
times for each predicate count, every trial of one count drawn at once.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import cache
from importlib import resources

import numpy as np
import opendp.prelude as dp
import pandas as pd
from scipy import stats
from sklearn.metrics import roc_curve

from ._validation import check_array, check_binary, check_count, check_real, check_rng
from .membership import auc, auc_standard_error

__all__ = [
    "STATISTICS",
    "DpMeanQuery",
    "TracingSimulation",
    "TracingTest",
    "calibrated_threshold",
    "dp_mean_query",
    "exact_means",
    "load_pums",
    "random_predicates",
    "reference_sample_test",
    "simulate_tracing",
    "single_reference_test",
]

dp.enable_features("contrib")

# OpenDP adds its Laplace noise on a grid of 2**-40 (as the seed did); its privacy map accounts
# for the rounding, and the sampler is three times faster than at the finest grid.
_GRANULARITY = -40

# Unpacked predicate bits are processed in blocks of about this many entries, to bound memory.
_BLOCK = 1 << 21

# Constants of the splitmix64 finaliser (Steele, Lea and Flood 2014).
_MIX = (np.uint64(0xBF58476D1CE4E5B9), np.uint64(0x94D049BB133111EB))


# --- Data and predicates -----------------------------------------------------------------------


def load_pums() -> pd.DataFrame:
    """The 100 ACS PUMS records (Fulton County, Georgia) the tracing chapter attacks.

    Returns
    -------
    pandas.DataFrame
        100 rows and 18 integer columns (``sex``, ``age``, ``educ``, ``income``, ...). Their
        provenance is in ``synpmx_lite/data/README.md``.
    """
    data = resources.files("synpmx_lite").joinpath("data", "FultonPUMS5sample100.csv")
    with data.open("r") as handle:
        return pd.read_csv(handle)


def _record_hashes(records: object) -> np.ndarray:
    """One 64-bit hash per record (row), equal for equal records."""
    if not isinstance(records, pd.DataFrame):
        records = pd.DataFrame(check_array(records, "records", ndim=2))
    elif records.empty:
        raise ValueError("records must not be empty")
    return pd.util.hash_pandas_object(records, index=False).to_numpy(dtype=np.uint64)


def _mix(x: np.ndarray) -> np.ndarray:
    """The splitmix64 finaliser: a bijection of uint64 each of whose output bits depends on all
    input bits."""
    x = (x ^ (x >> np.uint64(30))) * _MIX[0]
    x = (x ^ (x >> np.uint64(27))) * _MIX[1]
    return x ^ (x >> np.uint64(31))


def _draw_keys(rng: np.random.Generator, shape: tuple[int, ...], predicates: int) -> np.ndarray:
    """Random 64-bit keys, one per block of 64 predicates."""
    blocks = -(-predicates // 64)
    top = np.iinfo(np.uint64).max
    return rng.integers(top, size=(*shape, blocks), dtype=np.uint64, endpoint=True)


def _predicate_bits(hashes: np.ndarray, keys: np.ndarray, predicates: int) -> np.ndarray:
    """Bits of shape ``(..., records, predicates)`` from hashes ``(..., records)`` and keys
    ``(..., blocks)``: predicate ``64 b + i`` is bit ``i`` of the keyed hash under key ``b``."""
    keys = keys[..., None, :]
    mixed = _mix(_mix(hashes[..., :, None] ^ keys) ^ keys)
    # Fixed (little-endian) byte order, so that a seed gives the same bits on any machine.
    octets = mixed.astype("<u8").view(np.uint8)
    return np.unpackbits(octets, axis=-1, bitorder="little")[..., :predicates]


def random_predicates(records: object, predicates: int, *, rng: object = None) -> np.ndarray:
    """Evaluate ``predicates`` random boolean predicates on each record.

    Each record (row) is hashed to 64 bits with pandas' row hash, and each block of 64
    predicates is a keyed splitmix64 hash of that, under a key drawn from ``rng``. Equal records
    get equal bits; for distinct records the bits behave as independent fair coins, one per
    record and predicate, which is the model the tracing tests assume.

    Parameters
    ----------
    records : pandas.DataFrame or array_like
        One record per row.
    predicates : int
        Number of predicates ``d``, at least 1.
    rng : numpy.random.Generator, int or None
        Source of the keys: the same seed gives the same predicates.

    Returns
    -------
    numpy.ndarray
        Boolean array of shape ``(records, predicates)``.
    """
    hashes = _record_hashes(records)
    predicates = check_count(predicates, "predicates")
    keys = _draw_keys(check_rng(rng), (), predicates)
    return _predicate_bits(hashes, keys, predicates).astype(bool)


def exact_means(rows: object) -> np.ndarray:
    """The exact answer to each predicate's mean query: the share of rows where it holds.

    Parameters
    ----------
    rows : array_like
        ``(people, predicates)`` array of 0/1 (or booleans), one row per person in the sample.

    Returns
    -------
    numpy.ndarray
        One mean per predicate, in [0, 1].
    """
    return check_binary(rows, "rows", ndim=2).mean(axis=0)


# --- The tests ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class TracingTest:
    """One tracing test of one candidate.

    Attributes
    ----------
    statistic : float
        The test statistic.
    threshold : float
        The threshold it must exceed for the candidate to be declared a member.
    """

    statistic: float
    threshold: float

    @property
    def flagged(self) -> bool:
        """True where the test declares the candidate a member of the sample."""
        return self.statistic > self.threshold


def _check_delta(delta: object) -> float:
    return check_real(delta, "delta", low=0, high=1, low_open=True, high_open=True)


def _check_answers(answers: object, predicates: int) -> np.ndarray:
    answers = check_array(answers, "answers", ndim=1)
    if answers.size != predicates:
        raise ValueError(
            f"answers need one entry per predicate: got {answers.size} answers for "
            f"{predicates} predicates"
        )
    if np.any((answers < 0) | (answers > 1)):
        raise ValueError(
            "answers must lie in [0, 1], which the threshold assumes; clip noisy answers first"
        )
    return answers


def _check_same_length(candidate: np.ndarray, reference: np.ndarray, name: str) -> None:
    if reference.shape[-1] != candidate.size:
        raise ValueError(
            f"candidate and {name} need one entry per predicate, got lengths {candidate.size} "
            f"and {reference.shape[-1]}"
        )


def _single_threshold(predicates: int, delta: float) -> float:
    return math.sqrt(8 * predicates * math.log(1 / delta))


def _sample_threshold(predicates: int, others: int, delta: float) -> float:
    return 4 / math.sqrt(others) * math.sqrt(predicates * math.log(1 / delta))


def _sample_weights(answers: np.ndarray, others_mean: np.ndarray, others: int) -> np.ndarray:
    """Figure 2's weights: answers less the others' mean, both coded +-1, clipped to +-eta."""
    eta = 2 / math.sqrt(others)
    return np.clip(2 * (answers - others_mean), -eta, eta)


def single_reference_test(
    candidate: object, answers: object, reference: object, *, delta: float = 0.05
) -> TracingTest:
    r"""The tracing test with a single reference person (Figure 1 of Dwork et al.).

    .. math:: T_1 = \langle \tilde y - \tilde z, \tilde q \rangle > \sqrt{8 d \ln(1/\delta)}

    with :math:`\tilde x = 2x - 1` for the candidate's bits :math:`y`, the reference person's
    :math:`z` and the answers :math:`q`.

    Parameters
    ----------
    candidate : array_like
        The candidate's 0/1 value of each of the ``d`` predicates.
    answers : array_like
        The released mean of each predicate, in [0, 1].
    reference : array_like
        One reference person's 0/1 values, drawn from the population.
    delta : float, default 0.05
        Bound on the false-positive rate, in (0, 1).

    Returns
    -------
    TracingTest
        The statistic and the threshold.

    References
    ----------
    Dwork, Smith, Steinke, Ullman and Vadhan (2015), Robust traceability from trace amounts,
    FOCS, 650-669.
    """
    candidate = check_binary(candidate, "candidate", ndim=1)
    reference = check_binary(reference, "reference", ndim=1)
    _check_same_length(candidate, reference, "reference")
    answers = _check_answers(answers, candidate.size)
    delta = _check_delta(delta)
    statistic = float(np.dot(2.0 * (candidate - reference), 2 * answers - 1))
    return TracingTest(statistic, _single_threshold(candidate.size, delta))


def reference_sample_test(
    candidate: object, answers: object, references: object, *, delta: float = 0.05
) -> TracingTest:
    r"""The tracing test with a reference sample (Figure 2 of Dwork et al.).

    .. math:: T_2 = \langle \tilde y - \tilde z,\,
        {\rm clip}(\tilde q - \tilde w, -\eta, \eta) \rangle > 4\alpha\sqrt{d\ln(1/\delta)}

    where :math:`z` is the first reference person, :math:`\tilde w` the mean of the other
    :math:`m` in :math:`\pm1` coding, :math:`\alpha = 1/\sqrt m` and :math:`\eta = 2\alpha`.

    Parameters
    ----------
    candidate : array_like
        The candidate's 0/1 value of each of the ``d`` predicates.
    answers : array_like
        The released mean of each predicate, in [0, 1].
    references : array_like
        ``(m + 1, d)`` array of 0/1, one reference person per row, at least 2 rows.
    delta : float, default 0.05
        Bound on the false-positive rate, in (0, 1).

    Returns
    -------
    TracingTest
        The statistic and the threshold.

    References
    ----------
    Dwork, Smith, Steinke, Ullman and Vadhan (2015), Robust traceability from trace amounts,
    FOCS, 650-669.
    """
    candidate = check_binary(candidate, "candidate", ndim=1)
    references = check_binary(references, "references", ndim=2)
    if references.shape[0] < 2:
        raise ValueError("references need at least 2 rows: one reference and one for the mean")
    _check_same_length(candidate, references, "references")
    answers = _check_answers(answers, candidate.size)
    delta = _check_delta(delta)
    others = references.shape[0] - 1
    weights = _sample_weights(answers, references[1:].mean(axis=0), others)
    statistic = float(np.dot(2.0 * (candidate - references[0]), weights))
    return TracingTest(statistic, _sample_threshold(candidate.size, others, delta))


def _conformal_threshold(null: np.ndarray, delta: float) -> np.ndarray:
    """Calibrated thresholds along the last axis of ``null`` (see :func:`calibrated_threshold`)."""
    count = null.shape[-1]
    rank = math.ceil((1 - delta) * (count + 1))
    if rank > count:
        return np.full(null.shape[:-1], np.inf)
    return np.partition(null, rank - 1, axis=-1)[..., rank - 1]


def calibrated_threshold(null_statistics: object, *, delta: float = 0.05) -> float:
    r"""Threshold that keeps a test's false-positive rate at most ``delta``, from simulated
    non-members.

    With :math:`N` statistics of people known to be non-members, exchangeable with a
    non-member candidate's, the threshold is their :math:`\lceil (1-\delta)(N+1) \rceil`-th
    smallest value, the :math:`(1-\delta)` quantile with the finite-sample correction of
    conformal inference. A non-member exceeds it with probability at most
    :math:`\lfloor \delta (N+1) \rfloor / (N+1) \le \delta`, whatever the statistic's
    distribution. With fewer than :math:`1/\delta - 1` statistics no threshold can promise
    that, and the threshold is infinite.

    Parameters
    ----------
    null_statistics : array_like
        The statistic of each simulated non-member (1-D, finite).
    delta : float, default 0.05
        Bound on the false-positive rate, in (0, 1).

    Returns
    -------
    float
        The threshold a candidate's statistic must exceed.

    Examples
    --------
    >>> calibrated_threshold(range(1, 20), delta=0.1)
    18.0
    """
    null = check_array(null_statistics, "null_statistics", ndim=1)
    return float(_conformal_threshold(null, _check_delta(delta)))


# --- The differentially private release ---------------------------------------------------------


@cache
def _mean_transformation(sample_size: int) -> dp.Transformation:
    domain = dp.vector_domain(dp.atom_domain(bounds=(0.0, 1.0), nan=False), size=sample_size)
    return dp.t.make_mean(domain, dp.symmetric_distance())


@dataclass(frozen=True)
class DpMeanQuery:
    r"""The means of ``predicates`` boolean predicates over ``sample_size`` people, released
    with OpenDP's Laplace noise for :math:`\varepsilon`-DP as a whole.

    Attributes
    ----------
    sample_size, predicates : int
        People in the sample (public) and predicates released.
    epsilon : float
        Privacy budget of the whole release; each mean gets ``epsilon / predicates``.
    scale : float
        The Laplace scale: the smallest OpenDP certifies, by binary search on its privacy map,
        for one mean of ``sample_size`` values in [0, 1] at ``epsilon / predicates``.
    sensitivity : float
        L1 sensitivity of the vector of means: ``predicates`` times OpenDP's stability map of
        one mean at a changed record (symmetric distance 2), about ``predicates / sample_size``.
    measurement : opendp.mod.Measurement
        The Laplace measurement on the vector of exact means; its map at ``sensitivity`` is at
        most ``epsilon``.
    """

    sample_size: int
    predicates: int
    epsilon: float
    scale: float
    sensitivity: float
    measurement: dp.Measurement

    def _noisy(self, means: np.ndarray) -> np.ndarray:
        return np.asarray(self.measurement(means.tolist()), dtype=float)

    def release(self, rows: object) -> np.ndarray:
        """Release the noisy means of a sample.

        Parameters
        ----------
        rows : array_like
            ``(sample_size, predicates)`` array of 0/1.

        Returns
        -------
        numpy.ndarray
            One noisy mean per predicate (not confined to [0, 1]). OpenDP draws the noise from
            the operating system's secure generator, which no seed controls.
        """
        rows = check_binary(rows, "rows", ndim=2)
        if rows.shape != (self.sample_size, self.predicates):
            raise ValueError(
                f"rows must have shape ({self.sample_size}, {self.predicates}), got {rows.shape}"
            )
        return self._noisy(rows.mean(axis=0))


@cache
def _dp_mean_query(sample_size: int, predicates: int, epsilon: float) -> DpMeanQuery:
    mean = _mean_transformation(sample_size)
    scale = dp.binary_search_param(
        lambda s: mean >> dp.m.then_laplace(s, k=_GRANULARITY), d_in=2, d_out=epsilon / predicates
    )
    space = (
        dp.vector_domain(dp.atom_domain(T=float, nan=False), size=predicates),
        dp.l1_distance(T=float),
    )
    return DpMeanQuery(
        sample_size=sample_size,
        predicates=predicates,
        epsilon=epsilon,
        scale=scale,
        sensitivity=predicates * mean.map(2),
        measurement=space >> dp.m.then_laplace(scale, k=_GRANULARITY),
    )


def dp_mean_query(sample_size: int, predicates: int, epsilon: float) -> DpMeanQuery:
    r"""The :math:`\varepsilon`-DP release of ``predicates`` means, built with OpenDP.

    The budget is split evenly, :math:`\varepsilon/d` per mean (basic composition). The scale
    is found by OpenDP's ``binary_search_param`` on the chain ``make_mean >> then_laplace`` at
    a changed record (symmetric distance 2, the sample size being public)
    :cite:p:`dwork2006calibrating`, so it is about :math:`d/(n\varepsilon)`.

    Parameters
    ----------
    sample_size : int
        People in the sample, at least 1.
    predicates : int
        Means released, at least 1.
    epsilon : float
        Budget of the whole release, positive.

    Returns
    -------
    DpMeanQuery
        The query, with its scale, sensitivity and OpenDP measurement.
    """
    return _dp_mean_query(
        check_count(sample_size, "sample_size"),
        check_count(predicates, "predicates"),
        check_real(epsilon, "epsilon", low=0, low_open=True),
    )


# --- The simulation ----------------------------------------------------------------------------

#: Names of the statistics :func:`simulate_tracing` reports. "figure 1, unclipped" is the
#: single-reference statistic on the answers as released; the others clip them to [0, 1] first.
STATISTICS = ("figure 1", "figure 2", "figure 1, unclipped")


@dataclass(frozen=True)
class TracingSimulation:
    """Results of :func:`simulate_tracing`.

    Attributes
    ----------
    rates : pandas.DataFrame
        One row per predicate count, statistic, threshold (``"fixed"`` or ``"calibrated"``) and
        candidate (``"member"``, ``"non-member"``): ``flagged`` of ``trials``, the ``rate`` and
        its Wilson 95% interval ``low``, ``high``. The member's rate is the true-positive rate,
        the non-member's the false-positive rate.
    statistics : pandas.DataFrame
        One row per predicate count, statistic and trial: the ``member``'s and the
        ``non_member``'s value of the statistic, and the calibrated thresholds each was
        tested against, ``member_calibrated`` and ``non_member_calibrated`` (NaN for a
        statistic that is not calibrated).
    sample_size, reference_size, trials : int
        The simulation's settings.
    epsilon : float or None
        Budget of the DP release, None for exact answers.
    delta : float
        Level of the tests.
    """

    rates: pd.DataFrame
    statistics: pd.DataFrame
    sample_size: int
    reference_size: int
    trials: int
    epsilon: float | None
    delta: float

    def auc(self) -> pd.DataFrame:
        """AUC of member against non-member statistics, with its standard error (trials paired).

        Returns
        -------
        pandas.DataFrame
            Columns ``predicates``, ``statistic``, ``auc`` and ``auc_se``.
        """
        rows = [
            (
                d,
                name,
                auc(group.member, group.non_member),
                auc_standard_error(group.member, group.non_member, paired=True),
            )
            for (d, name), group in self.statistics.groupby(["predicates", "statistic"], sort=False)
        ]
        return pd.DataFrame(rows, columns=["predicates", "statistic", "auc", "auc_se"])

    def roc(self, predicates: int, statistic: str = "figure 1") -> pd.DataFrame:
        """The ROC curve of one statistic at one predicate count.

        Parameters
        ----------
        predicates : int
            One of the simulated predicate counts.
        statistic : str, default "figure 1"
            One of the simulated statistics.

        Returns
        -------
        pandas.DataFrame
            Columns ``fpr``, ``tpr`` and ``threshold``, from scikit-learn's ``roc_curve``.
        """
        chosen = self.statistics[
            (self.statistics.predicates == predicates) & (self.statistics.statistic == statistic)
        ]
        if chosen.empty:
            raise ValueError(
                f"no simulation of statistic {statistic!r} at {predicates!r} predicates"
            )
        labels = np.repeat([1, 0], len(chosen))
        fpr, tpr, thresholds = roc_curve(labels, np.concatenate([chosen.member, chosen.non_member]))
        return pd.DataFrame({"fpr": fpr, "tpr": tpr, "threshold": thresholds})


def _scores(bits: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """``2 <x - z, w>`` for every person ``x`` of ``bits (t, k, d)`` and weight vector of
    ``weights (t, d, r)``, ``z`` being person ``-1``: shape ``(t, k, r)``.

    Rounded to 1e-9 so that scores equal in exact arithmetic tie exactly."""
    dots = bits @ weights
    return np.round(2 * (dots - dots[:, -1:, :]), 9)


def _block_statistics(
    bits: np.ndarray, answers: np.ndarray, sample_size: int, delta: float, trials: np.ndarray
) -> pd.DataFrame:
    """Statistics of one block of trials: for each statistic and trial, the member's and the
    non-member's value and their calibrated thresholds (NaN where there are none).
    ``trials`` numbers the block's trials.

    ``bits (t, k, d)`` hold, in order, the sample (member first), the non-member, the other
    reference people and, last, the reference person ``z``.
    """
    n = sample_size
    candidates = bits[:, [0, n], :]
    others = bits[:, n + 1 : -1, :]
    count = others.shape[1]
    clipped = np.clip(answers, 0, 1)
    frames = []

    def add(name: str, scores: np.ndarray, thresholds: np.ndarray | float) -> None:
        thresholds = np.broadcast_to(thresholds, scores.shape)
        frames.append(
            pd.DataFrame(
                {
                    "statistic": name,
                    "trial": trials,
                    "member": scores[:, 0],
                    "non_member": scores[:, 1],
                    "member_calibrated": thresholds[:, 0],
                    "non_member_calibrated": thresholds[:, 1],
                }
            )
        )

    # Figure 1, on the answers clipped and as released. The scores of the non-member and of the
    # other reference people, all drawn alike from outside the sample, are exchangeable.
    scores = _scores(bits, (2 * clipped - 1)[:, :, None])[..., 0]
    null = scores[:, n + 1 : -1]
    add(
        "figure 1",
        scores[:, [0, n]],
        _conformal_threshold(null, delta)[:, None] if count else np.nan,
    )
    add("figure 1, unclipped", _scores(bits, (2 * answers - 1)[:, :, None])[:, [0, n], 0], np.nan)
    if not count:
        return pd.concat(frames, ignore_index=True)

    # Figure 2. For exchangeability each reference person k is scored as the candidate is,
    # against the mean of the other `count` people of {candidate, others}. In +-1 coding that
    # mean is w + (x_c - x_k) / count; with 0/1 bits, k's weights before clipping are the
    # candidate's `weights` less 2 x_c / count plus 2 x_k / count.
    eta = 2 / math.sqrt(count)
    weights = 2 * (clipped - others.mean(axis=1))
    base = weights[:, None, :] - 2 * candidates / count
    # Each candidate's weights where person k's bit is 1 (plus) and where it is 0: (t, 2, d).
    plus = np.clip(base + 2 / count, -eta, eta)
    zero = np.clip(base, -eta, eta)
    z = bits[:, -1:, :]
    # 2 <x_k - z, w_k>, w_k being plus where x_k = 1 and zero where x_k = 0.
    merged = (1 - z) * plus + z * zero
    null = 2 * (others @ merged.transpose(0, 2, 1)) - 2 * (z * zero).sum(axis=-1)[:, None, :]
    scores = _scores(bits[:, [0, n, -1], :], np.clip(weights, -eta, eta)[:, :, None])[..., 0]
    add(
        "figure 2", scores[:, :2], _conformal_threshold(np.round(null, 9).transpose(0, 2, 1), delta)
    )
    return pd.concat(frames, ignore_index=True)


def _wilson(flagged: int, trials: int) -> tuple[float, float]:
    interval = stats.binomtest(flagged, trials).proportion_ci(method="wilson")
    return interval.low, interval.high


def simulate_tracing(
    predicates: Sequence[int],
    *,
    sample_size: int,
    reference_size: int,
    trials: int,
    epsilon: float | None = None,
    delta: float = 0.05,
    records: object = None,
    rng: object = None,
) -> TracingSimulation:
    r"""Simulate the tracing tests many times for each predicate count.

    Each trial draws, from the records, a sequestered sample of ``sample_size`` people, one
    non-member and ``reference_size`` reference people (all distinct), draws fresh predicates,
    answers the mean queries on the sample (exactly, or through :func:`dp_mean_query` if
    ``epsilon`` is given) and tests one member of the sample and the non-member. The statistics
    (:data:`STATISTICS`) use the first reference person as :math:`z` and, for Figure 2, the
    others for :math:`w`; each is tested against its fixed threshold and against a calibrated
    one (:func:`calibrated_threshold`) computed from the other reference people's statistics.

    All trials of one predicate count are drawn at once; only the DP noise is drawn release by
    release, by OpenDP, whose generator no seed controls, so only exact simulations repeat
    exactly under one seed.

    Parameters
    ----------
    predicates : sequence of int
        Predicate counts ``d`` to simulate, each at least 1.
    sample_size : int
        People in the sequestered sample, at least 1.
    reference_size : int
        Reference people, at least 1. Figure 2 and the calibrated thresholds need at least 2;
        a calibrated threshold can flag anyone only with at least :math:`1/\delta` of them.
    trials : int
        Trials per predicate count, at least 2.
    epsilon : float or None, default None
        Budget of the DP release, or None for exact answers.
    delta : float, default 0.05
        Level of the tests, in (0, 1).
    records : pandas.DataFrame, array_like or None
        The population, one record per row; None for :func:`load_pums`.
    rng : numpy.random.Generator, int or None
        Source of randomness for the samples and predicates.

    Returns
    -------
    TracingSimulation
        The rates with their Wilson intervals, and every trial's statistics.
    """
    counts = [check_count(d, "predicates") for d in np.atleast_1d(predicates).tolist()]
    if not counts:
        raise ValueError("predicates must name at least one predicate count")
    sample_size = check_count(sample_size, "sample_size")
    reference_size = check_count(reference_size, "reference_size")
    trials = check_count(trials, "trials", minimum=2)
    if epsilon is not None:
        epsilon = check_real(epsilon, "epsilon", low=0, low_open=True)
    delta = _check_delta(delta)
    hashes = _record_hashes(load_pums() if records is None else records)
    people = sample_size + 1 + reference_size
    if people > hashes.size:
        raise ValueError(
            f"sample_size + 1 non-member + reference_size = {people} people, more than the "
            f"{hashes.size} records of the population"
        )
    rng = check_rng(rng)

    tables = []
    for d in counts:
        # Distinct people in random order; their roles go by position (see _block_statistics).
        order = rng.permuted(np.tile(np.arange(hashes.size), (trials, 1)), axis=1)[:, :people]
        keys = _draw_keys(rng, (trials,), d)
        query = None if epsilon is None else _dp_mean_query(sample_size, d, epsilon)
        blocks = []
        for rows in np.array_split(np.arange(trials), -(-trials * people * d // _BLOCK)):
            bits = _predicate_bits(hashes[order[rows]], keys[rows], d).astype(float)
            answers = bits[:, :sample_size].mean(axis=1)
            if query is not None:
                # One OpenDP release per trial; OpenDP frees the GIL while it samples.
                with ThreadPoolExecutor() as pool:
                    answers = np.stack(list(pool.map(query._noisy, answers)))
            blocks.append(_block_statistics(bits, answers, sample_size, delta, rows))
        table = pd.concat(blocks, ignore_index=True)
        if epsilon is None:
            # On exact answers clipping changes nothing.
            table = table[table.statistic != "figure 1, unclipped"]
        tables.append(table.assign(predicates=d))
    statistics = pd.concat(tables, ignore_index=True)[
        [
            "predicates",
            "statistic",
            "trial",
            "member",
            "non_member",
            "member_calibrated",
            "non_member_calibrated",
        ]
    ]
    statistics = statistics.sort_values(["predicates", "statistic", "trial"], kind="stable")
    statistics = statistics.reset_index(drop=True)
    return _rates(statistics, trials, reference_size, epsilon, delta, sample_size)


def _rates(
    statistics: pd.DataFrame,
    trials: int,
    reference_size: int,
    epsilon: float | None,
    delta: float,
    sample_size: int,
) -> TracingSimulation:
    """Flag counts and rates, with Wilson intervals, of every test in ``statistics``."""
    rows = []
    for (d, name), group in statistics.groupby(["predicates", "statistic"], sort=False):
        fixed = (
            _sample_threshold(d, reference_size - 1, delta)
            if name == "figure 2"
            else _single_threshold(d, delta)
        )
        tests = [("fixed", fixed, fixed)]
        if group.member_calibrated.notna().all():
            tests.append(("calibrated", group.member_calibrated, group.non_member_calibrated))
        for kind, member_threshold, non_member_threshold in tests:
            for candidate, values, threshold in (
                ("member", group.member, member_threshold),
                ("non-member", group.non_member, non_member_threshold),
            ):
                flagged = int(np.sum(values > threshold))
                rows.append((d, name, kind, candidate, flagged, flagged / trials))
    rates = pd.DataFrame(
        rows, columns=["predicates", "statistic", "threshold", "candidate", "flagged", "rate"]
    )
    rates[["low", "high"]] = [_wilson(k, trials) for k in rates.flagged]
    return TracingSimulation(
        rates=rates,
        statistics=statistics,
        sample_size=sample_size,
        reference_size=reference_size,
        trials=trials,
        epsilon=epsilon,
        delta=delta,
    )
