r"""Membership inference against two simplified models of a PMX fingerprint.

A *member* is a patient in a simulated study and a *non-member* a new patient from the same
population. The attacker holds the candidate's own values and reference values for the
population, and scores the candidate by how far the release has moved from the reference
toward them. The area under the ROC curve (AUC) of member against non-member scores measures
how far the release gives membership away: 0.5 is a coin toss, 1 certain identification.

Two parts of a fingerprint are modelled:

* **attendance**: the share of patients sampled at each scheduled visit, released with or
  without a floor that rounds a share resting on fewer than ``floor`` patients on either side
  to 0 or 1;
* **the population model**: typical values and between-subject variances of the five
  parameters of a two-compartment oral model, released unrounded, at two or at one
  significant figure.

Each protection is scored on the same simulated studies with and without it, so that two
columns of a table differ only by what the protection does. The simulation draws every
Monte Carlo replicate of a setting at once; where only a sufficient statistic of the other
patients enters the release (the column sums of independent attendance, the sum and sum of
squares of normal random effects), that statistic is drawn from its exact distribution.
"""

from __future__ import annotations

from dataclasses import dataclass
from importlib import resources

import numpy as np
import pandas as pd
from scipy import special, stats
from sklearn import metrics

from .._validation import (
    check_array,
    check_binary,
    check_count,
    check_flag,
    check_probabilities,
    check_real,
    check_rng,
)
from ..rounding import round_significant

__all__ = [
    "ATTENDANCE_FLOOR",
    "ATTENDANCE_RANGE",
    "POPULATION_OMEGA",
    "POPULATION_ROUNDINGS",
    "POPULATION_TYPICAL",
    "AttendanceAttack",
    "MembershipTables",
    "PopulationAttack",
    "ScorePiles",
    "attendance_attack",
    "attendance_score",
    "attendance_scores",
    "auc",
    "auc_difference",
    "auc_standard_error",
    "draw_attendance",
    "membership_tables",
    "population_attack",
    "r_reference_tables",
    "release_shares",
    "roc_curve",
    "true_positive_rate_at",
]

#: Range of the average attendance drawn for each visit: where the in-between shares of the
#: sparsely sampled public studies sit.
ATTENDANCE_RANGE = (0.2, 0.8)

#: Typical values of clearance (L/h), central volume (L), inter-compartmental clearance (L/h),
#: peripheral volume (L) and absorption rate (1/h) of the simulated two-compartment oral model,
#: a pandas Series indexed ``cl``, ``v``, ``q``, ``v2``, ``ka``.
#:
#: :meta hide-value:
POPULATION_TYPICAL = pd.Series({"cl": 4.3, "v": 31.0, "q": 2.1, "v2": 55.0, "ka": 1.2})

#: Between-subject variances (log scale) of the same five parameters.
#:
#: :meta hide-value:
POPULATION_OMEGA = pd.Series({"cl": 0.3, "v": 0.25, "q": 0.4, "v2": 0.35, "ka": 0.6}) ** 2

#: The floor of the attendance table's ``released`` column, as the fingerprint applies it: a
#: share is released as it is only with at least this many patients on each side.
ATTENDANCE_FLOOR = 3

#: Significant figures of each AUC column of the population-model table (``None``: unrounded);
#: ``released`` is the fingerprint's rounding.
POPULATION_ROUNDINGS = {"unrounded": None, "two_figures": 2, "released": 1}

# Log-scale SD of one study's own typical values around the population's, so that rounding
# boundaries fall where they would in a real study rather than at fixed places.
_STUDY_SPREAD = 0.3


# --- The AUC and its Monte Carlo error -------------------------------------------------------


def _scores(values: object, name: str) -> np.ndarray:
    return check_array(values, name, ndim=1)


def _placements(members: np.ndarray, others: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """DeLong's placement values, ties counted half.

    For each member, the share of non-members it outscores; for each non-member, the share of
    members that outscore it. Both average to the AUC.
    """
    combined = stats.rankdata(np.concatenate([members, others]))
    m = members.size
    # A member's rank among everyone less its rank among members counts the non-members
    # below it (ties half); likewise for the non-members.
    member_placement = (combined[:m] - stats.rankdata(members)) / others.size
    other_placement = 1 - (combined[m:] - stats.rankdata(others)) / m
    return member_placement, other_placement


def auc(members: object, others: object) -> float:
    """Probability that a member scores above a non-member, ties counted half.

    This is the area under the receiver operating characteristic (ROC) curve, equal to the
    Mann-Whitney U statistic of ``members`` divided by the number of pairs.

    Parameters
    ----------
    members : array_like
        One score per member (1-D, finite).
    others : array_like
        One score per non-member (1-D, finite).

    Returns
    -------
    float
        The AUC, between 0 and 1.

    Examples
    --------
    >>> round(auc([0.9, 0.4, 0.4], [0.4, 0.1]), 4)  # 5 of 6 pairs, two ties counted half
    0.8333
    """
    members_placement, _ = _placements(_scores(members, "members"), _scores(others, "others"))
    return float(members_placement.mean())


def auc_standard_error(members: object, others: object, *, paired: bool = False) -> float:
    r"""Monte Carlo standard error of :func:`auc`, from DeLong's placement values.

    Parameters
    ----------
    members, others : array_like
        The scores passed to :func:`auc`.
    paired : bool, default False
        True where ``members[k]`` and ``others[k]`` come from the same simulated study (as in
        this module's attacks), so that the two are not independent. The AUC's first-order
        (Hoeffding) term is then the mean over studies of the member's placement plus the
        non-member's, and its standard error their sum's SD over :math:`\sqrt{n}`.
        Unpaired, it is DeLong's :math:`\sqrt{s_{10}^2/m + s_{01}^2/n}`.

    Returns
    -------
    float
        The standard error.

    References
    ----------
    DeLong, DeLong and Clarke-Pearson (1988), Biometrics 44, 837-845.
    """
    members = _scores(members, "members")
    others = _scores(others, "others")
    paired = check_flag(paired, "paired")
    if min(members.size, others.size) < 2:
        raise ValueError("members and others need at least 2 scores each for a standard error")
    member_placement, other_placement = _placements(members, others)
    if paired:
        if members.size != others.size:
            raise ValueError(
                f"paired scores need equal lengths, got {members.size} members "
                f"and {others.size} others"
            )
        return float(np.std(member_placement + other_placement, ddof=1) / np.sqrt(members.size))
    return float(
        np.sqrt(
            member_placement.var(ddof=1) / members.size + other_placement.var(ddof=1) / others.size
        )
    )


def auc_difference(
    members: object, others: object, baseline_members: object, baseline_others: object
) -> tuple[float, float]:
    r"""Change in the AUC between two releases of the same studies, and its standard error.

    Where two columns of a table score the same simulated studies (a release with and without
    a protection), their AUCs share most of their Monte Carlo error, and the error of their
    difference is far smaller than either AUC's. Study :math:`k` contributes the same
    first-order term to each AUC as in :func:`auc_standard_error` with ``paired=True``, its
    member's placement plus its non-member's; the difference's standard error is the SD over
    studies of the difference of those terms, over :math:`\sqrt{n}`. This is DeLong's
    comparison of correlated AUCs with the study as the unit that both releases share.

    Parameters
    ----------
    members, others : array_like
        One member's and one non-member's score from each study under the release compared
        (1-D, finite, equal lengths, at least 2).
    baseline_members, baseline_others : array_like
        The same candidates' scores from the same studies under the baseline release, in the
        same order.

    Returns
    -------
    difference : float
        ``auc(members, others) - auc(baseline_members, baseline_others)``.
    standard_error : float
        The Monte Carlo standard error of that difference.

    Raises
    ------
    ValueError
        If the four arrays are not 1-D and finite, differ in length, or hold fewer than 2
        studies.

    References
    ----------
    DeLong, DeLong and Clarke-Pearson (1988), Biometrics 44, 837-845.

    Examples
    --------
    >>> difference, error = auc_difference([3.0, 2.0, 1.0], [0.0, 2.5, 0.5],
    ...                                    [3.0, 2.0, 1.0], [0.0, 2.5, 0.5])
    >>> difference, error
    (0.0, 0.0)
    """
    arrays = {
        name: _scores(values, name)
        for name, values in [
            ("members", members),
            ("others", others),
            ("baseline_members", baseline_members),
            ("baseline_others", baseline_others),
        ]
    }
    lengths = {array.size for array in arrays.values()}
    if len(lengths) != 1:
        sizes = ", ".join(f"{name} {array.size}" for name, array in arrays.items())
        raise ValueError(f"all four score arrays need one entry per study, got lengths {sizes}")
    studies = lengths.pop()
    if studies < 2:
        raise ValueError(f"members and others need at least 2 studies, got {studies}")
    compared = _placements(arrays["members"], arrays["others"])
    baseline = _placements(arrays["baseline_members"], arrays["baseline_others"])
    difference = compared[0].mean() - baseline[0].mean()
    # Study k's first-order term is its member's placement plus its non-member's.
    change = sum(compared) - sum(baseline)
    return float(difference), float(change.std(ddof=1) / np.sqrt(studies))


def roc_curve(members: object, others: object) -> pd.DataFrame:
    """The ROC curve of member against non-member scores.

    Parameters
    ----------
    members, others : array_like
        One score per member and per non-member (1-D, finite).

    Returns
    -------
    pandas.DataFrame
        Columns ``false_positive_rate`` (share of non-members flagged) and
        ``true_positive_rate`` (share of members flagged) at every threshold, from
        :func:`sklearn.metrics.roc_curve`.
    """
    members = _scores(members, "members")
    others = _scores(others, "others")
    labels = np.repeat([1, 0], [members.size, others.size])
    fpr, tpr, _ = metrics.roc_curve(labels, np.concatenate([members, others]))
    return pd.DataFrame({"false_positive_rate": fpr, "true_positive_rate": tpr})


def true_positive_rate_at(members: object, others: object, false_positive_rate: float) -> float:
    """Share of members flagged by the threshold that flags at most a given share of non-members.

    An AUC averages over all thresholds; an attacker who must rarely accuse a non-member works
    at a low false-positive rate, where the field now reports an attack's power
    :cite:p:`carlini2022membership`.

    Parameters
    ----------
    members, others : array_like
        One score per member and per non-member (1-D, finite).
    false_positive_rate : float
        The largest share of non-members the attacker accepts to flag, in (0, 1).

    Returns
    -------
    float
        The true-positive rate at that threshold.
    """
    target = check_real(
        false_positive_rate, "false_positive_rate", low=0, high=1, low_open=True, high_open=True
    )
    curve = roc_curve(members, others)
    within = curve["false_positive_rate"].to_numpy() <= target
    return float(curve["true_positive_rate"].to_numpy()[within].max())


def _aucs_with_errors(scores: dict[str, tuple[np.ndarray, np.ndarray]]) -> dict[str, float]:
    """Each release's AUC and its paired SE, keyed ``column`` and ``column_se``."""
    summary = {}
    for column, (members, others) in scores.items():
        summary[column] = auc(members, others)
        summary[f"{column}_se"] = auc_standard_error(members, others, paired=True)
    return summary


# --- Attendance --------------------------------------------------------------------------------


def _attend(
    rng: np.random.Generator, shape: tuple[int, ...], threshold: np.ndarray, correlation: float
) -> np.ndarray:
    """Correlated attendance (True where sampled) of shape ``(..., patients, visits)``.

    Each patient's visit ``j`` is attended where a standard normal latent value, made of a
    factor shared by all of the patient's visits (weight ``sqrt(correlation)``) and one of the
    visit's own, falls below ``threshold[..., j]``, the normal quantile of the visit's rate.
    """
    own = rng.standard_normal(shape, dtype=np.float32)
    threshold = np.asarray(threshold, dtype=np.float32)
    if correlation > 0:
        # Conditioning on the shared factor moves each patient's threshold instead, which
        # spares a pass over the largest array.
        shared = rng.standard_normal((*shape[:-1], 1), dtype=np.float32)
        threshold = (threshold - np.float32(np.sqrt(correlation)) * shared) / np.float32(
            np.sqrt(1 - correlation)
        )
    return own < threshold


def draw_attendance(
    patients: int, rate: object, correlation: float, rng: object = None
) -> np.ndarray:
    """Draw which scheduled visits each patient was sampled at.

    Parameters
    ----------
    patients : int
        Number of patients (rows), at least 1.
    rate : array_like
        Average attendance at each visit, strictly between 0 and 1 (1-D, one per visit).
    correlation : float
        Correlation, in [0, 1), of the normal latent values behind one patient's visits: a
        patient who misses one visit is more likely to miss the next.
    rng : numpy.random.Generator, int or None
        Source of randomness.

    Returns
    -------
    numpy.ndarray
        ``(patients, visits)`` int8 array, 1 where the patient was sampled and 0 where the
        sample was missed.
    """
    patients = check_count(patients, "patients")
    rate = check_probabilities(rate, "rate")
    correlation = check_real(correlation, "correlation", low=0, high=1, high_open=True)
    threshold = special.ndtri(rate)
    return _attend(check_rng(rng), (patients, rate.size), threshold, correlation).astype(np.int8)


def _floor_shares(held: np.ndarray, patients: int, floor: int) -> np.ndarray:
    """Shares from counts, those resting on 1 to ``floor - 1`` patients on either side rounded."""
    shares = held / patients
    smaller_side = np.minimum(held, patients - held)
    thin = (smaller_side > 0) & (smaller_side < floor)
    return np.where(thin, (shares >= 0.5).astype(float), shares)


def release_shares(attendance: object, floor: int) -> np.ndarray:
    """The share of patients sampled at each visit, as the fingerprint would release it.

    Parameters
    ----------
    attendance : array_like
        ``(patients, visits)`` array of 0 (missed) and 1 (sampled).
    floor : int
        At least this many patients must stand on each side of a share: a share with between
        1 and ``floor - 1`` patients sampled, or missing, is released as 0 or 1, whichever is
        nearer. ``floor=1`` releases every share as it is; the fingerprint uses
        :data:`ATTENDANCE_FLOOR`.

    Returns
    -------
    numpy.ndarray
        One released share per visit.
    """
    attendance = check_binary(attendance, "attendance", ndim=2)
    floor = check_count(floor, "floor")
    return _floor_shares(attendance.sum(axis=0), attendance.shape[0], floor)


def attendance_score(candidate: object, rate: object, released: object) -> float:
    r"""The attacker's score for one candidate against released attendance shares.

    .. math:: s = \sum_j (a_j - r_j)(\hat p_j - r_j)

    with :math:`a_j` the candidate's attendance at visit :math:`j`, :math:`r_j` the average
    attendance (the attacker's reference) and :math:`\hat p_j` the released share. A term is
    positive when the candidate and the release lean the same way from the average.

    Parameters
    ----------
    candidate : array_like
        The candidate's 0/1 attendance, one per visit.
    rate : array_like
        Average attendance per visit, strictly between 0 and 1.
    released : array_like
        Released share per visit, in [0, 1].

    Returns
    -------
    float
        The score.
    """
    candidate = check_binary(candidate, "candidate", ndim=1)
    rate = check_probabilities(rate, "rate")
    released = check_array(released, "released", ndim=1)
    if np.any((released < 0) | (released > 1)):
        raise ValueError("released shares must lie in [0, 1]")
    if not candidate.size == rate.size == released.size:
        raise ValueError(
            "candidate, rate and released need one entry per visit, got lengths "
            f"{candidate.size}, {rate.size} and {released.size}"
        )
    return float(np.dot(candidate - rate, released - rate))


def _simulate_attendance(
    rng: np.random.Generator, patients: int, visits: int, correlation: float, draws: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Draw ``draws`` studies: rates, the member's and the outsider's rows, and column sums."""
    rate = rng.uniform(*ATTENDANCE_RANGE, size=(draws, visits))
    threshold = special.ndtri(rate)[:, None, :]
    # Patient 0 of each study is the member; the outsider is one more from the same population.
    candidates = _attend(rng, (draws, 2, visits), threshold, correlation)
    member, outsider = candidates[:, 0].astype(np.int8), candidates[:, 1].astype(np.int8)
    others = patients - 1
    if correlation == 0:
        # Independent visits: the others' count at a visit is exactly Binomial(others, rate).
        held_by_others = rng.binomial(others, rate)
    else:
        held_by_others = _attend(rng, (draws, others, visits), threshold, correlation).sum(
            axis=1, dtype=np.int64
        )
    return rate, member, outsider, member + held_by_others


def _scores_against(candidate: np.ndarray, rate: np.ndarray, released: np.ndarray) -> np.ndarray:
    return np.einsum("dv,dv->d", candidate - rate, released - rate)


@dataclass(frozen=True)
class ScorePiles:
    """Scores of one member and one non-member from each of many simulated studies.

    Attributes
    ----------
    member, non_member : numpy.ndarray
        ``member[k]`` and ``non_member[k]`` come from study ``k``.
    """

    member: np.ndarray
    non_member: np.ndarray

    def auc(self) -> float:
        """The AUC of the two piles (:func:`auc`)."""
        return auc(self.member, self.non_member)

    def auc_standard_error(self) -> float:
        """Its Monte Carlo standard error, studies paired (:func:`auc_standard_error`)."""
        return auc_standard_error(self.member, self.non_member, paired=True)

    def true_positive_rate_at(self, false_positive_rate: float) -> float:
        """Share of members flagged at that rate of non-members (:func:`true_positive_rate_at`)."""
        return true_positive_rate_at(self.member, self.non_member, false_positive_rate)

    def roc_curve(self) -> pd.DataFrame:
        """The ROC curve of the two piles (:func:`roc_curve`)."""
        return roc_curve(self.member, self.non_member)

    def to_frame(self) -> pd.DataFrame:
        """Long table with columns ``candidate`` ("member"/"non-member") and ``score``."""
        return pd.DataFrame(
            {
                "candidate": np.repeat(["member", "non-member"], self.member.size),
                "score": np.concatenate([self.member, self.non_member]),
            }
        )


# Largest simulation the attendance attack takes on, in bytes at its peak.
_ATTENDANCE_MEMORY_LIMIT = 2 * 2**30


def _check_attendance_setting(
    patients: object, visits: object, correlation: object, draws: object
) -> tuple[int, int, float, int]:
    setting = (
        check_count(patients, "patients"),
        check_count(visits, "visits"),
        check_real(correlation, "correlation", low=0, high=1, high_open=True),
        check_count(draws, "draws", minimum=2),
    )
    patients, visits, correlation, draws = setting
    # Peak memory, measured with tracemalloc and rounded up: correlated attendance holds every
    # patient's visits in every study (9 bytes each); independent attendance only the counts
    # at each visit of each study (59 bytes).
    if correlation > 0:
        cells, per_cell, what = draws * visits * (patients + 1), 10, "patient-visits"
    else:
        cells, per_cell, what = draws * visits, 60, "visits"
    if cells * per_cell > _ATTENDANCE_MEMORY_LIMIT:
        raise ValueError(
            f"patients={patients}, visits={visits}, correlation={correlation} and "
            f"draws={draws} would need about {cells * per_cell / 2**30:,.1f} GiB of memory "
            f"({per_cell} bytes for each of {cells:,} {what} over all studies), more than "
            f"the {_ATTENDANCE_MEMORY_LIMIT / 2**30:g} GiB allowed: "
            + (
                "use fewer patients, visits or draws, or correlation 0 (exact counts)"
                if correlation > 0
                else "use fewer visits or draws"
            )
        )
    return setting


def attendance_scores(
    patients: int,
    visits: int,
    correlation: float,
    *,
    floor: int = 3,
    draws: int = 2000,
    rng: object = None,
) -> ScorePiles:
    """Score one member and one non-member of each of ``draws`` simulated studies.

    Each study has ``patients`` patients scheduled at ``visits`` visits, the average
    attendance at each drawn uniformly from :data:`ATTENDANCE_RANGE`, and releases its shares
    with the given ``floor``. The attacker's reference is the true average.

    Parameters
    ----------
    patients : int
        Patients behind each share, at least 1.
    visits : int
        Scheduled visits, at least 1.
    correlation : float
        Within-patient correlation of attendance, in [0, 1).
    floor : int, default 3
        The floor of :func:`release_shares`.
    draws : int, default 2000
        Simulated studies, at least 2.
    rng : numpy.random.Generator, int or None
        Source of randomness.

    Returns
    -------
    ScorePiles
        The member's and the non-member's score from each study.
    """
    patients, visits, correlation, draws = _check_attendance_setting(
        patients, visits, correlation, draws
    )
    floor = check_count(floor, "floor")
    rate, member, outsider, held = _simulate_attendance(
        check_rng(rng), patients, visits, correlation, draws
    )
    released = _floor_shares(held, patients, floor)
    return ScorePiles(
        _scores_against(member, rate, released), _scores_against(outsider, rate, released)
    )


@dataclass(frozen=True)
class AttendanceAttack:
    """AUCs of the attendance attack, with and without the floor, on the same studies.

    Attributes
    ----------
    without_floor, without_floor_se : float
        AUC with every share released as it is (floor 1), and its Monte Carlo SE.
    released, released_se : float
        AUC with the fingerprint's floor (:data:`ATTENDANCE_FLOOR`), and its Monte Carlo SE.
    """

    without_floor: float
    without_floor_se: float
    released: float
    released_se: float


def attendance_attack(
    patients: int, visits: int, correlation: float, draws: int = 1500, rng: object = None
) -> AttendanceAttack:
    """AUC of the attendance score, the same studies released without and with the floor.

    Parameters
    ----------
    patients : int
        Patients behind each share, at least 1.
    visits : int
        Scheduled visits, at least 1.
    correlation : float
        Within-patient correlation of attendance, in [0, 1).
    draws : int, default 1500
        Simulated studies, at least 2.
    rng : numpy.random.Generator, int or None
        Source of randomness.

    Returns
    -------
    AttendanceAttack
        Both AUCs with their Monte Carlo standard errors.
    """
    patients, visits, correlation, draws = _check_attendance_setting(
        patients, visits, correlation, draws
    )
    scores = _attendance_release_scores(check_rng(rng), patients, visits, correlation, draws)
    return AttendanceAttack(**_aucs_with_errors(scores))


def _attendance_release_scores(
    rng: np.random.Generator, patients: int, visits: int, correlation: float, draws: int
) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Member and non-member scores of the same studies, without the floor and with it."""
    rate, member, outsider, held = _simulate_attendance(rng, patients, visits, correlation, draws)
    scores = {}
    for column, floor in (("without_floor", 1), ("released", ATTENDANCE_FLOOR)):
        released = _floor_shares(held, patients, floor)
        scores[column] = (
            _scores_against(member, rate, released),
            _scores_against(outsider, rate, released),
        )
    return scores


# --- The population model ----------------------------------------------------------------------


@dataclass(frozen=True)
class PopulationAttack:
    """AUCs of the population-model attack at three roundings, on the same studies.

    Attributes
    ----------
    unrounded, unrounded_se : float
        Every estimate released at full precision.
    two_figures, two_figures_se : float
        Every estimate rounded to two significant figures.
    released, released_se : float
        Every estimate rounded to one significant figure, as the fingerprint releases it.
    """

    unrounded: float
    unrounded_se: float
    two_figures: float
    two_figures_se: float
    released: float
    released_se: float


def _population_score(
    eta: np.ndarray,
    typical: np.ndarray,
    omega: np.ndarray,
    reference_typical: np.ndarray,
    reference_omega: np.ndarray,
) -> np.ndarray:
    """Score each study's candidate: both products are positive when the release leans their way."""
    location = eta * np.log(typical / reference_typical) / reference_omega
    spread = (eta**2 / reference_omega - 1) * (omega / reference_omega - 1) / 2
    return (location + spread).sum(axis=-1)


def population_attack(
    patients: int, off_by: float, draws: int = 2000, rng: object = None
) -> PopulationAttack:
    r"""AUC of the population-model attack, released unrounded, at two and at one figure.

    Each simulated study has its own typical values, the population's
    (:data:`POPULATION_TYPICAL`) times a log-normal factor of SD 0.3, and ``patients`` patients
    with normal random effects of variances :data:`POPULATION_OMEGA`. It releases each typical
    value as the study's times :math:`\exp(\bar\eta)` and each variance as the mean squared
    random effect. The attacker holds the candidate's random effects and reference values off
    by a log-normal error of SD ``off_by`` (``2 * off_by`` for the variances), and scores
    :math:`\sum_p \eta_p \log(\hat\theta_p/\theta^{\rm ref}_p)/\omega^{\rm ref}_p +
    \tfrac12 (\eta_p^2/\omega^{\rm ref}_p - 1)(\hat\omega_p/\omega^{\rm ref}_p - 1)`.

    Only the sum and the sum of squares of the other patients' random effects enter the
    release; they are drawn exactly: the sum as a normal, and the sum of squares as the
    sum's square over ``patients - 1`` plus the variance times an independent
    :math:`\chi^2_{\text{patients} - 2}`.

    Parameters
    ----------
    patients : int
        Cohort size, at least 1.
    off_by : float
        Log-scale SD of the error in the attacker's reference values, at least 0.
    draws : int, default 2000
        Simulated studies, at least 2.
    rng : numpy.random.Generator, int or None
        Source of randomness.

    Returns
    -------
    PopulationAttack
        The three AUCs with their Monte Carlo standard errors.
    """
    patients = check_count(patients, "patients")
    off_by = check_real(off_by, "off_by", low=0)
    draws = check_count(draws, "draws", minimum=2)
    scores = _population_release_scores(check_rng(rng), patients, off_by, draws)
    return PopulationAttack(**_aucs_with_errors(scores))


def _population_release_scores(
    rng: np.random.Generator, patients: int, off_by: float, draws: int
) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Member and non-member scores of the same studies at each of :data:`POPULATION_ROUNDINGS`."""
    omega = POPULATION_OMEGA.to_numpy()
    shape = (draws, omega.size)
    centre = POPULATION_TYPICAL.to_numpy() * np.exp(rng.normal(0, _STUDY_SPREAD, shape))
    member, outsider = rng.normal(0, np.sqrt(omega), (2, *shape))
    others = patients - 1
    others_sum = rng.normal(0, np.sqrt(others * omega), shape)
    # Cochran: the others' sum of squares is their sum's square over their count plus an
    # independent omega * chi-square with one degree of freedom fewer.
    others_squares = others_sum**2 / max(others, 1)
    if others > 1:
        others_squares = others_squares + omega * rng.chisquare(others - 1, shape)
    reference_typical = centre * np.exp(rng.normal(0, off_by, shape))
    reference_omega = omega * np.exp(rng.normal(0, 2 * off_by, shape))

    typical = centre * np.exp((member + others_sum) / patients)
    variance = (member**2 + others_squares) / patients
    scores = {}
    for column, figures in POPULATION_ROUNDINGS.items():
        shown_typical, shown_variance = (
            (typical, variance)
            if figures is None
            else (round_significant(typical, figures), round_significant(variance, figures))
        )
        scores[column] = tuple(
            _population_score(
                eta, shown_typical, shown_variance, reference_typical, reference_omega
            )
            for eta in (member, outsider)
        )
    return scores


# --- Both tables from one seed -----------------------------------------------------------------


@dataclass(frozen=True)
class MembershipTables:
    """The attendance table (18 rows) and the population-model table (9 rows).

    Attributes
    ----------
    attendance : pandas.DataFrame
        Columns ``visits``, ``patients``, ``correlation``, ``without_floor``, ``released`` and
        the standard errors ``without_floor_se``, ``released_se``.
    population : pandas.DataFrame
        Columns ``patients``, ``off_by``, ``unrounded``, ``two_figures``, ``released`` and the
        standard errors ``unrounded_se``, ``two_figures_se``, ``released_se``.
    seed : int
        The seed both were drawn from.
    attendance_draws, population_draws : int
        Simulated studies behind each row of either table.
    """

    attendance: pd.DataFrame
    population: pd.DataFrame
    seed: int
    attendance_draws: int
    population_draws: int

    def attendance_auc(
        self, visits: int, patients: int, correlation: float, column: str = "released"
    ) -> float:
        """One cell of the attendance table: ``column`` at that setting."""
        table = self.attendance
        return _cell(
            table,
            (table.visits == visits)
            & (table.patients == patients)
            & (table.correlation == correlation),
            column,
        )

    def population_auc(self, patients: int, off_by: float, column: str = "released") -> float:
        """One cell of the population-model table: ``column`` at that setting."""
        table = self.population
        return _cell(table, (table.patients == patients) & (table.off_by == off_by), column)

    def largest_change(self, table: str, column: str, baseline: str) -> float:
        """Largest absolute difference between two AUC columns of one table, over its rows."""
        frame = getattr(self, table)
        return float((frame[column] - frame[baseline]).abs().max())

    def paired_change(self, table: str, column: str, baseline: str) -> pd.DataFrame:
        """Each row's change in the AUC from ``baseline`` to ``column``, with its paired SE.

        The two columns of a row score the same simulated studies, so most of their Monte
        Carlo error is shared and cancels in their difference. The scores are not stored;
        this draws each row's studies again from :attr:`seed`, exactly as
        :func:`membership_tables` drew them, and compares the two releases with
        :func:`auc_difference`.

        Parameters
        ----------
        table : {"attendance", "population"}
            The table.
        column, baseline : str
            Two of its AUC columns (for example ``"released"`` and ``"without_floor"``).

        Returns
        -------
        pandas.DataFrame
            The table's setting columns, ``change`` (``column`` less ``baseline``, equal to the
            table's own difference) and ``change_se`` (its standard error).
        """
        frame = self._table(table)
        estimates = [c for c in frame.columns if f"{c}_se" in frame.columns]
        for name, value in (("column", column), ("baseline", baseline)):
            if value not in estimates:
                raise ValueError(f"{name} must be one of {estimates}, got {value!r}")
        settings = _settings()
        draws = {"attendance": self.attendance_draws, "population": self.population_draws}
        changes = [
            auc_difference(*scores[column], *scores[baseline])
            for scores in _row_scores(table, settings, self.seed, draws[table])
        ]
        return settings[table].assign(
            change=[change for change, _ in changes], change_se=[error for _, error in changes]
        )

    def _table(self, table: str) -> pd.DataFrame:
        if table not in ("attendance", "population"):
            raise ValueError(f"table must be 'attendance' or 'population', got {table!r}")
        return getattr(self, table)

    def formatted(self, table: str, digits: int = 3) -> pd.DataFrame:
        """``table`` ("attendance" or "population") with each AUC shown as "estimate ± SE"."""
        frame = getattr(self, table)
        estimates = [c for c in frame.columns if f"{c}_se" in frame.columns]
        shown = frame.drop(columns=[*estimates, *(f"{c}_se" for c in estimates)])
        for column in estimates:
            shown[column] = [
                f"{estimate:.{digits}f} ± {error:.{digits}f}"
                for estimate, error in zip(frame[column], frame[f"{column}_se"], strict=True)
            ]
        return shown


def _cell(table: pd.DataFrame, rows: pd.Series, column: str) -> float:
    if column not in table.columns:
        raise ValueError(f"column must be one of {list(table.columns)}, got {column!r}")
    if rows.sum() != 1:
        raise ValueError("no row of the table has that setting")
    return float(table.loc[rows, column].iloc[0])


def _grid(**levels: list) -> pd.DataFrame:
    """All combinations of the levels, the first varying fastest (as R's ``expand.grid``)."""
    index = pd.MultiIndex.from_product(
        list(reversed(levels.values())), names=list(reversed(levels))
    )
    return index.to_frame(index=False)[list(levels)]


def _with_results(grid: pd.DataFrame, results: list[dict[str, float]]) -> pd.DataFrame:
    table = pd.concat([grid, pd.DataFrame(results)], axis=1)
    estimates = [c for c in table.columns[grid.shape[1] :] if not c.endswith("_se")]
    return table[[*grid.columns, *estimates, *(f"{c}_se" for c in estimates)]]


def _settings() -> dict[str, pd.DataFrame]:
    """The rows of both tables, population first (the order their random streams are spawned)."""
    return {
        "population": _grid(patients=[12, 32, 60], off_by=[0.0, 0.1, 0.2]),
        "attendance": _grid(visits=[5, 20, 60], patients=[10, 30, 100], correlation=[0.0, 0.6]),
    }


def _row_scores(
    table: str, settings: dict[str, pd.DataFrame], seed: int, draws: int
) -> list[dict[str, tuple[np.ndarray, np.ndarray]]]:
    """Every row's scores under each release, each row from its own stream spawned from ``seed``.

    The streams are spawned for both tables at once, so that a row's studies depend only on the
    seed and its place in :func:`_settings`, not on which table is being drawn.
    """
    streams = np.random.default_rng(seed).spawn(sum(len(grid) for grid in settings.values()))
    first = 0 if table == "population" else len(settings["population"])
    grid = settings[table]
    rows = zip(grid.itertuples(), streams[first : first + len(grid)], strict=True)
    if table == "population":
        return [
            _population_release_scores(rng, int(row.patients), float(row.off_by), draws)
            for row, rng in rows
        ]
    return [
        _attendance_release_scores(
            rng, int(row.patients), int(row.visits), float(row.correlation), draws
        )
        for row, rng in rows
    ]


def r_reference_tables() -> dict[str, pd.DataFrame]:
    """The R walkthrough's two membership tables, shipped with the package.

    Returns
    -------
    dict of str to pandas.DataFrame
        ``"attendance"`` (visits, patients, correlation; AUC without the floor and released)
        and ``"population"`` (patients, off_by; AUC unrounded, at two and at one significant
        figure), as the R implementation printed them for seed 20261002. Their provenance is in
        ``synpmx_lite/data/README.md``.
    """
    data = resources.files("synpmx_lite").joinpath("data")
    tables = {}
    for name in ("attendance", "population"):
        with data.joinpath(f"membership_{name}_r.csv").open("r") as handle:
            tables[name] = pd.read_csv(handle)
    return tables


def membership_tables(
    seed: int = 20261002, *, attendance_draws: int = 1500, population_draws: int = 2000
) -> MembershipTables:
    """Both membership-inference tables from one seed.

    Every chapter that quotes these tables calls this function with the same seed, so that
    all of them quote the same numbers. Each row gets its own random stream, spawned from
    ``seed``, so a row's numbers do not depend on which rows come before it.

    Parameters
    ----------
    seed : int, default 20261002
        Seed of the whole computation.
    attendance_draws : int, default 1500
        Simulated studies per attendance row (:func:`attendance_attack`).
    population_draws : int, default 2000
        Simulated studies per population row (:func:`population_attack`).

    Returns
    -------
    MembershipTables
        The two tables.
    """
    seed = check_count(seed, "seed", minimum=0)
    attendance_draws = check_count(attendance_draws, "attendance_draws", minimum=2)
    population_draws = check_count(population_draws, "population_draws", minimum=2)
    settings = _settings()
    draws = {"attendance": attendance_draws, "population": population_draws}
    tables = {
        table: _with_results(
            grid,
            [
                _aucs_with_errors(scores)
                for scores in _row_scores(table, settings, seed, draws[table])
            ],
        )
        for table, grid in settings.items()
    }
    return MembershipTables(
        attendance=tables["attendance"],
        population=tables["population"],
        seed=seed,
        attendance_draws=attendance_draws,
        population_draws=population_draws,
    )
