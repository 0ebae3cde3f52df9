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

Predicates are a keyed hash of each record into ``d`` bits (:func:`random_predicates`). The
differentially private release (:func:`dp_mean_query`) is built with OpenDP: its domains and
metrics, the mean's stability, and the Laplace scale that OpenDP's own privacy map certifies
for the budget. OpenDP makes every release a reader sees; because its sampler cannot be
seeded, the releases a page shows are kept in an :class:`OpenDpRecord`.
:func:`simulate_tracing` repeats the whole experiment many times for each predicate count and
budget, drawing with numpy, the noise included, at exactly the certified scale: seeded, and
vectorised over trials.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import math
import numbers
import os
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from fractions import Fraction
from functools import cache
from importlib import resources

import numpy as np
import opendp.prelude as dp
import pandas as pd
from scipy import stats
from sklearn.metrics import roc_curve
from threadpoolctl import threadpool_limits

from .._validation import check_array, check_binary, check_count, check_real, check_rng
from .membership import auc, auc_standard_error

__all__ = [
    "STATISTICS",
    "DpMeanQuery",
    "OpenDpRecord",
    "TracingSimulation",
    "TracingTest",
    "calibrated_threshold",
    "dp_mean_query",
    "exact_means",
    "half_way_budget",
    "load_opendp_record",
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

# The largest Laplace scale OpenDP's parameter search explores (its bands stop at 2**49).
_MAX_SCALE = 2.0**49
_MAX_SIZE = 2**31 - 1  # OpenDP holds a vector domain's size as an i32

# Unpacked predicate bits are processed in blocks of about this many entries, to bound memory.
_BLOCK = 1 << 21

# simulate_tracing refuses runs of more person-predicate terms (several minutes at the rate
# measured on a shared 2-core machine) or more rows of statistics (about 0.6 GiB).
_MAX_TERMS = 10**11
_TERMS_PER_SECOND = 3e8
_MAX_ROWS = 10**7

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


def _laplace_measurement(scale: float, size: int) -> dp.Measurement:
    """OpenDP's Laplace mechanism on ``size`` floats, at ``scale``."""
    return dp.m.make_laplace(*_float_vectors(size), scale, k=_GRANULARITY)


@cache
def _float_vectors(size: int) -> tuple[dp.Domain, dp.Metric]:
    """The space of ``size`` floats under the L1 distance, built once per size: the scale
    search builds a measurement on it at every step."""
    return (
        dp.vector_domain(dp.atom_domain(T=float, nan=False), size=size),
        dp.l1_distance(T=float),
    )


@dataclass(frozen=True)
class DpMeanQuery:
    r"""The means of ``predicates`` boolean predicates over ``sample_size`` people, released
    with OpenDP's Laplace noise for :math:`\varepsilon`-DP as a whole.

    Attributes
    ----------
    sample_size, predicates : int
        People in the sample (public) and predicates released.
    epsilon : float
        Privacy budget of the whole release.
    scale : float
        The Laplace scale of every mean: the smallest that OpenDP's privacy map certifies for the
        whole vector at ``sensitivity``, about ``predicates / (sample_size * epsilon)``.
    sensitivity : float
        L1 sensitivity of the vector of means: ``predicates`` times OpenDP's stability map of
        one mean at a changed record (symmetric distance 2), rounded up; about
        ``predicates / sample_size``.
    measurement : opendp.mod.Measurement
        The Laplace measurement on the vector of exact means.
    """

    sample_size: int
    predicates: int
    epsilon: float
    scale: float
    sensitivity: float
    measurement: dp.Measurement

    @property
    def privacy_loss(self) -> float:
        """The budget OpenDP's privacy map says the release spends (at most ``epsilon``)."""
        return float(self.measurement.map(self.sensitivity))

    def release(self, rows: object) -> np.ndarray:
        """Release the noisy means of a sample, through OpenDP.

        Parameters
        ----------
        rows : array_like
            ``(sample_size, predicates)`` array of 0/1.

        Returns
        -------
        numpy.ndarray
            One noisy mean per predicate (not confined to [0, 1]). OpenDP draws the noise from
            the operating system's secure generator, which no seed controls: see
            :class:`OpenDpRecord` for releases that read the same on every run.
        """
        rows = self._check_rows(rows)
        return np.asarray(self.measurement(rows.mean(axis=0).tolist()), dtype=float)

    def _check_rows(self, rows: object) -> np.ndarray:
        """``rows`` as 0/1, one row per person of the sample and one column per predicate."""
        rows = check_binary(rows, "rows", ndim=2)
        if rows.shape != (self.sample_size, self.predicates):
            raise ValueError(
                f"rows must have shape ({self.sample_size}, {self.predicates}), one row per "
                f"person of the sample and one column per predicate, got {rows.shape}"
            )
        return rows

    def opendp_noise(self, size: int) -> np.ndarray:
        """Draw ``size`` values of the noise OpenDP adds, from OpenDP's own sampler.

        The draws are OpenDP's release, at this query's scale and granularity, of a vector of
        ``size`` zeros. They are not seeded (see :meth:`release`).

        Parameters
        ----------
        size : int
            Number of draws, at least 1.

        Returns
        -------
        numpy.ndarray
            The draws.
        """
        size = check_count(size, "size")
        return np.asarray(_laplace_measurement(self.scale, size)([0.0] * size), dtype=float)

    def simulated_noise(self, shape: int | tuple[int, ...], *, rng: object) -> np.ndarray:
        """Laplace noise drawn by numpy at exactly this query's scale, as the simulations add it.

        numpy's Laplace is continuous where OpenDP's lies on a grid of :math:`2^{-40}`; the two
        are compared in the tracing chapter. numpy's draw at scale ``b`` is ``b`` times its
        draw at scale 1, value for value, which :func:`simulate_tracing` uses to share one
        standard draw between budgets.

        Parameters
        ----------
        shape : int or tuple of int
            Shape of the draw.
        rng : numpy.random.Generator or int
            Source of the draws.

        Returns
        -------
        numpy.ndarray
            The draws.
        """
        shape = tuple(check_count(n, "shape", minimum=0) for n in np.atleast_1d(shape).tolist())
        return check_rng(rng).laplace(0.0, self.scale, shape)


@cache
def _dp_mean_query(
    sample_size: int, predicates: int, epsilon: float
) -> DpMeanQuery:
    """OpenDP's pipeline: one mean, its stability, the certified scale."""
    # One predicate's answers: sample_size values in [0, 1], the size
    # public, so a neighbouring sample replaces one person (distance 2).
    mean = dp.t.make_mean(
        dp.vector_domain(
            dp.atom_domain(bounds=(0.0, 1.0), nan=False), size=sample_size
        ),
        dp.symmetric_distance(),
    )
    one_mean = mean.map(2)  # OpenDP's stability map, rounded up
    # Times the number of means: the vector's L1 sensitivity, rounded up
    # again so that the product cannot fall below the exact value.
    sensitivity = predicates * one_mean
    if Fraction(sensitivity) < predicates * Fraction(one_mean):
        sensitivity = math.nextafter(sensitivity, math.inf)
    scale = _certified_scale(
        sensitivity, predicates, epsilon, sample_size=sample_size
    )
    return DpMeanQuery(
        sample_size=sample_size,
        predicates=predicates,
        epsilon=epsilon,
        scale=scale,
        sensitivity=sensitivity,
        measurement=_laplace_measurement(scale, predicates),
    )


def _certified_scale(
    sensitivity: float, predicates: int, epsilon: float, *, sample_size: int
) -> float:
    """The smallest scale OpenDP certifies for ``epsilon`` at ``sensitivity``."""
    needed = sensitivity / epsilon
    if not needed <= _MAX_SCALE:
        raise ValueError(
            f"epsilon = {epsilon:g} over {predicates} means of "
            f"{sample_size} people needs Laplace noise of scale "
            f"{needed:.3g}, beyond the {_MAX_SCALE:.3g} that OpenDP's "
            f"parameter search reaches; epsilon must be at least "
            f"{sensitivity / _MAX_SCALE:.3g} here"
        )
    # OpenDP's answer lies just above sensitivity / epsilon, by its rounding
    # to the grid: search there first (a third of the steps), and over the
    # whole range if not there.
    for bounds in ((needed, needed * (1 + 1e-9)), (0.0, 2 * needed)):
        try:
            return dp.binary_search_param(
                lambda s: _laplace_measurement(s, predicates),
                d_in=sensitivity,
                d_out=epsilon,
                bounds=bounds,
            )
        except ValueError:
            continue
    raise ValueError(
        f"OpenDP certifies no Laplace scale for epsilon = {epsilon:g}"
    )


def dp_mean_query(sample_size: int, predicates: int, epsilon: float) -> DpMeanQuery:
    r"""The :math:`\varepsilon`-DP release of ``predicates`` means, built with OpenDP.

    One person changed (symmetric distance 2, the sample size being public) moves each mean by
    at most OpenDP's stability map of ``make_mean`` on ``sample_size`` values in [0, 1], about
    :math:`1/n`, and the vector of means by at most ``predicates`` times that in L1. The scale
    is the smallest for which OpenDP's privacy map of its Laplace mechanism on the vector, at
    that sensitivity, is at most :math:`\varepsilon` (``binary_search_param``)
    :cite:p:`dwork2006calibrating`: about :math:`d/(n\varepsilon)`, the same as giving each
    mean :math:`\varepsilon/d` (basic composition).

    Parameters
    ----------
    sample_size : int
        People in the sample, at least 1.
    predicates : int
        Means released, at least 1.
    epsilon : float
        Budget of the whole release, positive and finite.

    Returns
    -------
    DpMeanQuery
        The query, with its scale, sensitivity and OpenDP measurement.

    Raises
    ------
    ValueError
        If ``sample_size`` is past :math:`2^{31} - 1`, the largest size OpenDP's vector domain
        holds (a 32-bit integer), or if ``epsilon`` is so small that the scale would exceed
        :math:`2^{49}`, the largest OpenDP's parameter search explores; the release would
        then be noise of more than :math:`10^{14}` times the range of a mean.
    """
    sample_size = check_count(sample_size, "sample_size")
    if sample_size > _MAX_SIZE:
        raise ValueError(
            f"sample_size must be at most {_MAX_SIZE} (OpenDP holds a vector's size as a 32-bit "
            f"integer), got {sample_size}"
        )
    return _dp_mean_query(
        sample_size,
        check_count(predicates, "predicates"),
        check_real(epsilon, "epsilon", low=0, low_open=True),
    )


# --- OpenDP outputs kept for the book -------------------------------------------------------------


def _certified_query(query: object) -> DpMeanQuery:
    """The query :func:`dp_mean_query` builds for ``query``'s settings, refusing any other."""
    if not isinstance(query, DpMeanQuery):
        raise TypeError(f"query must be a DpMeanQuery (see dp_mean_query), got {query!r}")
    certified = dp_mean_query(query.sample_size, query.predicates, query.epsilon)
    if (query.scale, query.sensitivity) != (certified.scale, certified.sensitivity):
        raise ValueError(
            f"query has scale {query.scale!r} and sensitivity {query.sensitivity!r}, not the "
            f"{certified.scale!r} and {certified.sensitivity!r} that OpenDP certifies for "
            f"{query.predicates} means of {query.sample_size} people at epsilon = "
            f"{query.epsilon!r}: build it with dp_mean_query"
        )
    return certified


def _query_key(query: DpMeanQuery) -> str:
    """Everything that determines the distribution of the query's output, exactly."""
    return (
        f"n{query.sample_size}-d{query.predicates}-eps{query.epsilon.hex()}-"
        f"scale{query.scale.hex()}-k{_GRANULARITY}"
    )


class OpenDpRecord:
    """OpenDP outputs made once and kept, so that a page that shows them reads the same on every
    build.

    OpenDP draws its noise from the operating system's secure generator, which by design no seed
    controls, so a page that shows an OpenDP release, or compares OpenDP's noise with numpy's,
    would change at every build. A DP release is also meant to be made once: every fresh draw
    from the same data is another release, and averaging them would undo the noise. A record
    keeps each output under the query it was made for (sample size, predicate count, budget,
    certified scale and granularity) and, for a release, its input (the exact means).
    :meth:`release` and :meth:`noise` return the kept output when there is one, and otherwise
    call OpenDP afresh, through the query :func:`dp_mean_query` certifies, and keep the result,
    counted in :attr:`fresh`; :meth:`save` writes them. Rows that do not fit the query, or a
    query that is not the certified one, are refused before anything kept is looked up.

    The record shipped with the package (:func:`load_opendp_record`) holds the outputs the
    tracing chapter shows. It was written by running the chapter and then
    ``record.save("synpmx_lite/data/tracing_opendp.npz")``; change the chapter's parameters
    and it draws afresh, and says so.

    Parameters
    ----------
    outputs : dict of str to numpy.ndarray, optional
        Kept outputs, by key (as written by :meth:`save`).
    opendp_version : str, optional
        Version of the OpenDP that made ``outputs``; None for the one installed.
    """

    def __init__(
        self, outputs: dict[str, np.ndarray] | None = None, *, opendp_version: str | None = None
    ) -> None:
        self.outputs: dict[str, np.ndarray] = dict(outputs or {})
        #: Version of the OpenDP that made the outputs.
        self.opendp_version = opendp_version or importlib.metadata.version("opendp")
        #: How many outputs this record had to ask OpenDP for, not having them kept.
        self.fresh = 0

    def _kept(self, key: str, draw: Callable[[], np.ndarray]) -> np.ndarray:
        if key not in self.outputs:
            self.outputs[key] = draw()
            self.fresh += 1
        return self.outputs[key].copy()

    def release(self, query: DpMeanQuery, rows: object) -> np.ndarray:
        """OpenDP's release of the means of ``rows`` through ``query`` (see
        :meth:`DpMeanQuery.release`), the kept one if there is one.

        Parameters
        ----------
        query : DpMeanQuery
            The query.
        rows : array_like
            ``(sample_size, predicates)`` array of 0/1.

        Returns
        -------
        numpy.ndarray
            One noisy mean per predicate.
        """
        query = _certified_query(query)
        rows = query._check_rows(rows)
        # The mechanism sees only the means: equal means, equal release distribution.
        means = np.ascontiguousarray(rows.mean(axis=0), dtype="<f8")
        key = f"release-{_query_key(query)}-{hashlib.sha256(means.tobytes()).hexdigest()}"
        return self._kept(key, lambda: query.release(rows))

    def noise(self, query: DpMeanQuery, size: int) -> np.ndarray:
        """``size`` draws of OpenDP's noise at ``query``'s scale (see
        :meth:`DpMeanQuery.opendp_noise`), the kept ones if there are.

        Parameters
        ----------
        query : DpMeanQuery
            The query.
        size : int
            Number of draws, at least 1.

        Returns
        -------
        numpy.ndarray
            The draws.
        """
        query = _certified_query(query)
        size = check_count(size, "size")
        return self._kept(f"noise-{_query_key(query)}-size{size}", lambda: query.opendp_noise(size))

    def save(self, path: str | os.PathLike[str]) -> None:
        """Write every output of the record (kept and fresh) to a compressed ``.npz`` file.

        Parameters
        ----------
        path : str or path-like
            The file to write.
        """
        installed = importlib.metadata.version("opendp")
        if self.fresh and self.opendp_version != installed:
            raise ValueError(
                f"the record mixes outputs of OpenDP {self.opendp_version} with fresh ones of "
                f"OpenDP {installed}; save the fresh ones in a new record"
            )
        outputs = dict(sorted(self.outputs.items()))
        outputs["opendp-version"] = np.array(self.opendp_version)
        np.savez_compressed(path, **outputs)

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> OpenDpRecord:
        """Read a record written by :meth:`save`.

        Parameters
        ----------
        path : str or path-like
            The ``.npz`` file.

        Returns
        -------
        OpenDpRecord
            The record, with nothing drawn afresh yet.
        """
        with np.load(path, allow_pickle=False) as stored:
            outputs = {key: stored[key] for key in stored.files if key != "opendp-version"}
            return cls(outputs, opendp_version=str(stored["opendp-version"]))


def load_opendp_record() -> OpenDpRecord:
    """The OpenDP outputs kept for the tracing chapter (see :class:`OpenDpRecord`).

    Returns
    -------
    OpenDpRecord
        A fresh copy of the record in ``synpmx_lite/data/tracing_opendp.npz``.
    """
    data = resources.files("synpmx_lite").joinpath("data", "tracing_opendp.npz")
    with resources.as_file(data) as path:
        return OpenDpRecord.load(path)


# --- The simulation ----------------------------------------------------------------------------

#: Confidence level of the Wilson interval given with every simulated rate.
INTERVAL_LEVEL = 0.95

#: Names of the statistics :func:`simulate_tracing` reports. "figure 1, unclipped" is the
#: single-reference statistic on the answers as released; the others clip them to [0, 1] first.
STATISTICS = ("figure 1", "figure 2", "figure 1, unclipped")


@dataclass(frozen=True)
class TracingSimulation:
    """Results of :func:`simulate_tracing`.

    Attributes
    ----------
    rates : pandas.DataFrame
        One row per budget ``epsilon`` (infinite for exact answers), predicate count,
        statistic, threshold (``"fixed"`` or ``"calibrated"``) and candidate (``"member"``,
        ``"non-member"``): ``flagged`` of ``trials``, the ``rate`` and its Wilson 95% interval
        ``low``, ``high``. The member's rate is the true-positive rate, the non-member's the
        false-positive rate.
    statistics : pandas.DataFrame
        One row per budget, predicate count, statistic and trial: the ``member``'s and the
        ``non_member``'s value of the statistic, and the calibrated thresholds each was tested
        against, ``member_calibrated`` and ``non_member_calibrated`` (NaN for a statistic that
        is not calibrated).
    sample_size, reference_size, trials : int
        The simulation's settings.
    epsilons : tuple of float
        The budgets simulated, ``inf`` standing for exact answers.
    delta : float
        Level of the tests.
    """

    rates: pd.DataFrame
    statistics: pd.DataFrame
    sample_size: int
    reference_size: int
    trials: int
    epsilons: tuple[float, ...]
    delta: float

    def auc(self) -> pd.DataFrame:
        """AUC of member against non-member statistics, with its standard error (trials paired).

        Returns
        -------
        pandas.DataFrame
            Columns ``epsilon``, ``predicates``, ``statistic``, ``auc`` and ``auc_se``.
        """
        keys = ["epsilon", "predicates", "statistic"]
        rows = [
            (
                *key,
                auc(group.member, group.non_member),
                auc_standard_error(group.member, group.non_member, paired=True),
            )
            for key, group in self.statistics.groupby(keys, sort=False)
        ]
        return pd.DataFrame(rows, columns=[*keys, "auc", "auc_se"])

    def roc(
        self, predicates: int, statistic: str = "figure 1", *, epsilon: float | None = None
    ) -> pd.DataFrame:
        """The ROC curve of one statistic at one predicate count and budget.

        Parameters
        ----------
        predicates : int
            One of the simulated predicate counts.
        statistic : str, default "figure 1"
            One of the simulated statistics.
        epsilon : float or None
            One of the simulated budgets (``inf`` for exact answers); None if only one was.

        Returns
        -------
        pandas.DataFrame
            Columns ``fpr``, ``tpr`` and ``threshold``, from scikit-learn's ``roc_curve``.
        """
        if epsilon is None:
            if len(self.epsilons) > 1:
                raise ValueError(
                    f"epsilon must name one of the simulated budgets {list(self.epsilons)}"
                )
            epsilon = self.epsilons[0]
        table = self.statistics
        chosen = table[
            (table.predicates == predicates)
            & (table.statistic == statistic)
            & (table.epsilon == epsilon)
        ]
        if chosen.empty:
            raise ValueError(
                f"no simulation of statistic {statistic!r} at {predicates!r} predicates and "
                f"epsilon {epsilon!r}"
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
    bits: np.ndarray,
    answers: np.ndarray,
    sample_size: int,
    delta: float,
    statistics: Sequence[str],
) -> dict[str, list[tuple[np.ndarray, np.ndarray]]]:
    """Statistics of one block of trials, for each of its budgets: per statistic asked for, a
    list over budgets of the member's and the non-member's values ``(t, 2)`` and the calibrated
    thresholds they were tested against ``(t, 2)`` (NaN where there are none).

    ``bits (t, k, d)`` hold, in order, the sample (member first), the non-member, the other
    reference people and, last, the reference person ``z``; ``answers (b, t, d)`` are the
    answers of each of ``b`` budgets.
    """
    n = sample_size
    trials = bits.shape[0]
    candidates = bits[:, [0, n], :]
    others = bits[:, n + 1 : -1, :]
    count = others.shape[1]
    clipped = np.clip(answers, 0, 1)
    none = np.full((trials, 2), np.nan)
    results = {}

    if "figure 1" in statistics:
        # All budgets in one product. The scores of the non-member and of the other reference
        # people, all drawn alike from outside the sample, are exchangeable: the others' are
        # the non-member's null.
        scores = _scores(bits, np.ascontiguousarray((2 * clipped - 1).transpose(1, 2, 0)))
        results["figure 1"] = [
            (
                scores[:, [0, n], b],
                np.repeat(_conformal_threshold(scores[:, n + 1 : -1, b], delta)[:, None], 2, 1)
                if count
                else none,
            )
            for b in range(answers.shape[0])
        ]
    if "figure 1, unclipped" in statistics:
        scores = _scores(
            bits[:, [0, n, -1]], np.ascontiguousarray((2 * answers - 1).transpose(1, 2, 0))
        )
        results["figure 1, unclipped"] = [(scores[:, :2, b], none) for b in range(answers.shape[0])]
    if "figure 2" in statistics and count:
        results["figure 2"] = [_figure_2(bits, candidates, others, c, n, delta) for c in clipped]
    return results


def _figure_2(
    bits: np.ndarray,
    candidates: np.ndarray,
    others: np.ndarray,
    clipped: np.ndarray,
    sample_size: int,
    delta: float,
) -> tuple[np.ndarray, np.ndarray]:
    """Figure 2's statistics and calibrated thresholds of one block at one budget."""
    # For exchangeability each reference person k is scored as the candidate is, against the
    # mean of the other `count` people of {candidate, others}. In +-1 coding that mean is
    # w + (x_c - x_k) / count; with 0/1 bits, k's weights before clipping are the candidate's
    # `weights` less 2 x_c / count plus 2 x_k / count.
    count = others.shape[1]
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
    n = sample_size
    scores = _scores(bits[:, [0, n, -1]], np.clip(weights, -eta, eta)[:, :, None])[:, :2, 0]
    return scores, _conformal_threshold(np.round(null, 9).transpose(0, 2, 1), delta)


def _wilson(flagged: int, trials: int) -> tuple[float, float]:
    interval = stats.binomtest(flagged, trials).proportion_ci(
        confidence_level=INTERVAL_LEVEL, method="wilson"
    )
    return interval.low, interval.high


def _check_epsilons(epsilon: object) -> tuple[float, ...]:
    if epsilon is None:
        return (math.inf,)
    values = np.atleast_1d(np.asarray(epsilon, dtype=object)).tolist()
    if not values:
        raise ValueError("epsilon must name at least one budget")
    budgets = tuple(
        math.inf
        if isinstance(value, numbers.Real) and value == math.inf
        else check_real(value, "epsilon", low=0, low_open=True)
        for value in values
    )
    if len(set(budgets)) < len(budgets):
        raise ValueError(f"epsilon must name each budget once, got {list(budgets)}")
    return budgets


def _check_statistics(statistics: object) -> tuple[str, ...]:
    names = [statistics] if isinstance(statistics, str) else list(statistics)
    unknown = [name for name in names if name not in STATISTICS]
    if not names or unknown:
        raise ValueError(f"statistics must be some of {list(STATISTICS)}, got {names!r}")
    return tuple(name for name in STATISTICS if name in names)


def _check_size(
    trials: int, people: int, population: int, counts: list[int], epsilons: tuple, rows: int
) -> None:
    """Refuse a simulation that would run for hours or hold more statistics than fit."""
    terms = trials * sum(people * d * (1 + len(epsilons)) + population for d in counts)
    if terms <= _MAX_TERMS and rows <= _MAX_ROWS:
        return
    seconds = terms / _TERMS_PER_SECOND
    duration = f"{seconds / 3600:.2g} hours" if seconds >= 3600 else f"{seconds / 60:.2g} minutes"
    gib = rows * 8 * 8 / 2**30
    raise ValueError(
        f"simulate_tracing would compute {terms:.2g} person-predicate terms (about {duration} "
        f"at {_TERMS_PER_SECOND:.0e} a second) and keep {rows:.2g} rows of statistics "
        f"(about {gib:.2g} GiB); it takes at most {_MAX_TERMS:.0e} terms and {_MAX_ROWS:.0e} "
        f"rows: use fewer trials, predicates or budgets, or split the run"
    )


def _trial_blocks(
    hashes: np.ndarray,
    people: int,
    predicates: int,
    trials: int,
    width: int,
    rng: np.random.Generator,
) -> Iterator[np.ndarray]:
    """Each trial's people and their predicate bits, ``(t, people, predicates)``, in blocks of
    trials small enough that ``width`` arrays of that size stay within about ``_BLOCK``
    entries."""
    block = max(1, _BLOCK // max(width * predicates, hashes.size))
    for start in range(0, trials, block):
        size = min(block, trials - start)
        # Distinct people in random order; their roles go by position (_block_statistics).
        order = rng.permuted(np.tile(np.arange(hashes.size), (size, 1)), axis=1)[:, :people]
        keys = _draw_keys(rng, (size,), predicates)
        yield _predicate_bits(hashes[order], keys, predicates).astype(float)


def half_way_budget(rates: pd.Series) -> float:
    """The budget at which a curve of rates first reaches one half, interpolated on log(epsilon).

    Parameters
    ----------
    rates : pandas.Series
        Rates indexed by budget ``epsilon`` in increasing order; an infinite budget (exact
        answers) is ignored.

    Returns
    -------
    float
        The interpolated budget; NaN if the rates never reach one half on the grid, -inf if they
        already do at its smallest budget.

    Examples
    --------
    >>> half_way_budget(pd.Series([0.1, 0.3, 0.7], index=[1.0, 10.0, 100.0]))
    31.62...
    """
    rates = rates[np.isfinite(rates.index)]
    above = np.flatnonzero(rates.to_numpy() >= 0.5)
    if not above.size:
        return math.nan
    if above[0] == 0:
        return -math.inf
    i = above[0]
    (e0, e1), (r0, r1) = rates.index[i - 1 : i + 1], rates.iloc[i - 1 : i + 1]
    return float(np.exp(np.log(e0) + (0.5 - r0) / (r1 - r0) * (np.log(e1) - np.log(e0))))


def simulate_tracing(
    predicates: Sequence[int],
    *,
    sample_size: int,
    reference_size: int,
    trials: int,
    epsilon: float | Sequence[float] | None = None,
    statistics: Sequence[str] | None = None,
    delta: float = 0.05,
    records: object = None,
    rng: object = None,
) -> TracingSimulation:
    r"""Simulate the tracing tests many times for each predicate count and budget.

    Each trial draws, from the records, a sequestered sample of ``sample_size`` people, one
    non-member and ``reference_size`` reference people (all distinct), draws fresh predicates,
    answers the mean queries on the sample, exactly or with Laplace noise at the scale
    :func:`dp_mean_query` certifies for each budget, and tests one member of the sample and
    the non-member. The statistics (:data:`STATISTICS`) use the first reference person as
    :math:`z` and, for Figure 2, the others for :math:`w`; each is tested against its fixed
    threshold and against a calibrated one (:func:`calibrated_threshold`) computed from the
    other reference people's statistics.

    Everything is drawn by numpy from ``rng``, trials in blocks of bounded memory, so a seed
    gives the same tables on every run. The noise is numpy's Laplace at exactly OpenDP's
    certified scale (:meth:`DpMeanQuery.simulated_noise`), not OpenDP's own draws, which no
    seed controls and which cost microseconds each. The budgets share each trial's sample,
    predicates and standard Laplace draw, scaled to each budget (common random numbers), so
    differences between budgets are not blurred by the draws.

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
    epsilon : float, sequence of float or None, default None
        Budget(s) of the DP release, each positive; ``inf`` or None for exact answers.
    statistics : sequence of str or None, default None
        The statistics to compute, some of :data:`STATISTICS`; None for all that apply.
        "figure 1, unclipped" applies to noisy answers only, "figure 2" to a
        ``reference_size`` of at least 2: one named here that applies to none of the budgets
        is refused.
    delta : float, default 0.05
        Level of the tests, in (0, 1).
    records : pandas.DataFrame, array_like or None
        The population, one record per row; None for :func:`load_pums`.
    rng : numpy.random.Generator, int or None
        Source of all randomness.

    Returns
    -------
    TracingSimulation
        The rates with their Wilson intervals, and every trial's statistics.

    Raises
    ------
    ValueError
        If a setting is out of range, or the run would compute more than 1e11 person-predicate
        terms (several minutes) or keep more than 1e7 rows of statistics; the message says how
        much it would need.
    """
    counts = [check_count(d, "predicates") for d in np.atleast_1d(predicates).tolist()]
    if not counts or len(set(counts)) < len(counts):
        raise ValueError(f"predicates must name each predicate count once, got {counts}")
    sample_size = check_count(sample_size, "sample_size")
    reference_size = check_count(reference_size, "reference_size")
    trials = check_count(trials, "trials", minimum=2)
    epsilons = _check_epsilons(epsilon)
    wanted = STATISTICS if statistics is None else _check_statistics(statistics)
    delta = _check_delta(delta)
    hashes = _record_hashes(load_pums() if records is None else records)
    people = sample_size + 1 + reference_size
    if people > hashes.size:
        raise ValueError(
            f"sample_size + 1 non-member + reference_size = {people} people, more than the "
            f"{hashes.size} records of the population"
        )
    per_budget = _statistics_per_budget(wanted, epsilons, reference_size, statistics is not None)
    _check_size(
        trials,
        people,
        hashes.size,
        counts,
        epsilons,
        trials * len(counts) * sum(len(names) for names in per_budget.values()),
    )
    rng = check_rng(rng)
    parts = _simulated_statistics(
        hashes,
        counts,
        epsilons,
        per_budget,
        sample_size=sample_size,
        people=people,
        trials=trials,
        delta=delta,
        rng=rng,
    )
    return _tabulate(parts, trials, reference_size, epsilons, delta, sample_size)


def _statistics_per_budget(
    wanted: Sequence[str], epsilons: tuple[float, ...], reference_size: int, named: bool
) -> dict[float, list[str]]:
    """The statistics computed at each budget, refusing any ``named`` by the caller that
    applies to none."""
    # The unclipped statistic is the clipped one on exact answers; Figure 2 needs 2 references.
    per_budget = {
        e: [
            name
            for name in wanted
            if not (name == "figure 1, unclipped" and e == math.inf)
            and not (name == "figure 2" and reference_size < 2)
        ]
        for e in epsilons
    }
    computed = {name for names in per_budget.values() for name in names}
    if named and set(wanted) - computed:
        raise ValueError(
            f"statistics {sorted(set(wanted) - computed)} cannot be computed here: "
            f'"figure 1, unclipped" needs a finite epsilon and "figure 2" a reference_size of '
            f"at least 2 (got epsilon {list(epsilons)}, reference_size {reference_size})"
        )
    return per_budget


def _simulated_statistics(
    hashes: np.ndarray,
    counts: list[int],
    epsilons: tuple[float, ...],
    per_budget: dict[float, list[str]],
    *,
    sample_size: int,
    people: int,
    trials: int,
    delta: float,
    rng: np.random.Generator,
) -> dict[tuple[float, int, str], list[tuple[np.ndarray, ...]]]:
    """Every block's statistics, by budget, predicate count and statistic (for _tabulate)."""
    noisy = [e for e in epsilons if e != math.inf]
    parts: dict[tuple[float, int, str], list[tuple[np.ndarray, ...]]] = {}
    # The products are many and small: one BLAS thread each is fastest, and threads that
    # compete with other work for a few cores slow them several-fold.
    with threadpool_limits(limits=1, user_api="blas"):
        for d in counts:
            scales = np.array([_dp_mean_query(sample_size, d, e).scale for e in noisy])
            width = max(people, len(noisy))
            for bits in _trial_blocks(hashes, people, d, trials, width, rng):
                exact = bits[:, :sample_size].mean(axis=1)
                for budgets, answers in _block_answers(exact, epsilons, scales, rng):
                    names = per_budget[budgets[0]]
                    found = _block_statistics(bits, answers, sample_size, delta, names)
                    for name, values in found.items():
                        for e, value in zip(budgets, values, strict=True):
                            parts.setdefault((e, d, name), []).append(value)
    return parts


def _block_answers(
    exact: np.ndarray, epsilons: tuple[float, ...], scales: np.ndarray, rng: np.random.Generator
) -> list[tuple[list[float], np.ndarray]]:
    """A block's answers: exact ones (where a budget is infinite), and at every finite budget,
    in one array, the exact ones plus its certified scale times one standard Laplace draw."""
    runs = [([math.inf], exact[None])] if math.inf in epsilons else []
    noisy = [e for e in epsilons if e != math.inf]
    if noisy:
        # One standard Laplace draw per answer, scaled to each budget: numpy's draw at scale b
        # is b times its draw at scale 1.
        standard = rng.laplace(0.0, 1.0, exact.shape)
        runs.append((noisy, exact + scales[:, None, None] * standard))
    return runs


def _tabulate(
    parts: dict[tuple[float, int, str], list[tuple[np.ndarray, ...]]],
    trials: int,
    reference_size: int,
    epsilons: tuple[float, ...],
    delta: float,
    sample_size: int,
) -> TracingSimulation:
    """The statistics of every block as one table, and the flag counts and rates, with Wilson
    intervals, of every test."""
    frames, rows = [], []
    for (e, d, name), blocks in sorted(parts.items()):
        scores = np.concatenate([scores for scores, _ in blocks])
        calibrated = np.concatenate([thresholds for _, thresholds in blocks])
        frames.append(
            pd.DataFrame(
                {
                    "epsilon": e,
                    "predicates": d,
                    "statistic": name,
                    "trial": np.arange(trials),
                    "member": scores[:, 0],
                    "non_member": scores[:, 1],
                    "member_calibrated": calibrated[:, 0],
                    "non_member_calibrated": calibrated[:, 1],
                }
            )
        )
        fixed = (
            _sample_threshold(d, reference_size - 1, delta)
            if name == "figure 2"
            else _single_threshold(d, delta)
        )
        tests = [("fixed", np.full_like(calibrated, fixed))]
        if not np.isnan(calibrated).any():
            tests.append(("calibrated", calibrated))
        for kind, thresholds in tests:
            flagged = np.sum(scores > thresholds, axis=0)
            for candidate, count in zip(("member", "non-member"), flagged, strict=True):
                rows.append((e, d, name, kind, candidate, int(count), int(count) / trials))
    rates = pd.DataFrame(
        rows,
        columns=["epsilon", "predicates", "statistic", "threshold", "candidate", "flagged", "rate"],
    )
    rates[["low", "high"]] = [_wilson(k, trials) for k in rates.flagged]
    return TracingSimulation(
        rates=rates,
        statistics=pd.concat(frames, ignore_index=True),
        sample_size=sample_size,
        reference_size=reference_size,
        trials=trials,
        epsilons=epsilons,
        delta=delta,
    )
