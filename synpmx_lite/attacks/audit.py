r"""A calibrated likelihood-ratio audit of the real generator's releases (LiRA).

The linear scores of :mod:`synpmx_lite.attacks.membership_generator` weigh every candidate
alike. The likelihood-ratio attack of Carlini et al. (2022) instead learns, patient by patient,
what the release looks like with and without them, from shadow releases
(:mod:`synpmx_lite.attacks.shadow_releases`). For each release it reads a vector ``z``: the
released log typical values, log between-subject variances and shares, and the candidate's own
shares and population scores under that release.

* **online**: per patient, a member mean and a non-member mean of ``z`` over the shadow
  releases that held them and those that did not, with one within-class covariance pooled over
  patients (a linear discriminant, shrunk a tenth toward its diagonal); the score is the log
  likelihood ratio of the two Gaussians.
* **offline**: only the non-member shadows are used (an attacker who cannot rerun the
  generator with the candidate in): each own score less the patient's non-member mean, over its
  pooled non-member SD, summed. Membership can only raise the own scores, so the test is
  one-sided.
* **linear** (the baseline): the two own scores, each standardised robustly within its release
  (less the median, over 1.4826 times the median absolute deviation), summed.

Calibration is leave-one-block-out: the replicates fall into :data:`BLOCKS` blocks and a block
is scored with means and covariance fitted on the others, so no release calibrates its own
scores.

Standard errors come from a bootstrap of the shadow releases that reruns the calibration
(:data:`RESAMPLES` resamples). A block's scores are fitted on the other blocks, so every
shadow release moves the scores of every release outside its block: the releases' first-order
terms are not independent, and an SE that treats them so (DeLong's placements clustered by
release) comes out too small for the online attack, by about a third on a null control. Each
resample draws releases with replacement within each calibration block (a drawn release
never calibrates its own copy), refits every attack and recounts the AUC and the
true-positive rates; the SE is the SD over resamples and the rates' intervals are their 2.5
and 97.5 % quantiles. The epsilon lower bound is read the same way: each resample recounts
the held-out rates at the selected false-positive rate, and the bound takes the 2.5 % point of
the true-positive rate and the 97.5 % point of the false-positive rate
(:func:`resampled_epsilon`), where exact binomial intervals would treat every score as an
independent trial. The same seed draws the same resamples at every rounding, so two
audits of the same shadow cohorts are paired resample by resample.

Shadow fits not to be trusted are counted and left out before anything is fitted:
those the engine flags (``converged``, ``diagnostics``), those the generator's checks judge
untrusted, and degenerate ones, whose unrounded log typical value or variance lies more than
:data:`DEGENERATE_MADS` robust SDs from the other shadows' median.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import special

from .._validation import check_count
from ..pmx.study import load_dataset
from .membership_generator import _mean_standard_error, _replicate_terms

__all__ = [
    "AUDIT_ATTACKS",
    "AUDIT_CONFIDENCE",
    "AUDIT_RATES",
    "AUDIT_SEED",
    "BLOCKS",
    "DEGENERATE_MADS",
    "FAULT_KINDS",
    "PATIENT_RESAMPLES",
    "RESAMPLES",
    "RESIDUAL_FAULTS",
    "Audit",
    "audit_shadows",
    "epsilon_lower_bound",
    "exposed_rates",
    "fault_kinds",
    "paired_change",
    "pk_width",
    "rate_at",
    "release_epsilon_bound",
    "rerun_spread",
    "resampled_epsilon",
    "residual_faults_only",
    "trusted_replicates",
]

#: The attacks, strongest first.
AUDIT_ATTACKS = ("LiRA online", "LiRA offline", "linear")
#: False-positive rates at which true-positive rates are reported.
AUDIT_RATES = (0.1, 0.01, 0.001)
#: Blocks of replicates for leave-one-block-out calibration.
BLOCKS = 5
#: The seed of the audit's threshold split and null-control shuffle, one for every chapter
#: that reads the audit, so that they quote one bound.
AUDIT_SEED = 20261202
#: A shadow fit whose unrounded estimate lies this many robust SDs from the median is degenerate.
DEGENERATE_MADS = 8.0
#: Kinds of the engine's diagnostics (:class:`~synpmx_lite.pmx.population.PopulationFit`),
#: each with a pattern of its message; the first that matches names a message.
FAULT_KINDS = {
    "residual SD at a bound": r"^residual \S+ sits at a bound",
    "residual SD not determined": r"do not determine residual ",
    "between-subject SD at its floor": r"collapsed to its floor",
    "PK estimate not determined": r"do not determine ",
    "estimate at a bound": r"sits at a bound",
    "covariance step failed": r"covariance step failed",
    "search not converged": r"did not converge",
}
#: The kinds that concern the residual error model alone.
RESIDUAL_FAULTS = ("residual SD at a bound", "residual SD not determined")
#: Bootstrap resamples of the shadow releases behind every SE and resampled interval.
RESAMPLES = 100
#: Patient resamples behind the exposed group's intervals (:func:`exposed_rates`).
PATIENT_RESAMPLES = 1000
_SHRINK = 0.1  # share of the pooled covariance moved to its diagonal
#: Confidence of the audit's intervals and epsilon lower bounds (a release's bound holds at it
#: jointly over :data:`AUDIT_ATTACKS`, each attack's at the Bonferroni share).
AUDIT_CONFIDENCE = 0.95


@dataclass(frozen=True)
class Audit:
    """The audit of one study's shadow releases at one rounding.

    Attributes
    ----------
    level : str
        The release audited (:data:`~synpmx_lite.attacks.shadow_releases.RELEASE_LEVELS`).
    replicates : int
        Shadow releases audited (after exclusions).
    excluded : dict of str to int
        Shadow fits left out: ``"flagged"`` by the engine or the generator's checks and
        ``"degenerate"`` by the audit's own check (a fit counts once, under the first).
    summary : pandas.DataFrame
        A row per attack of :data:`AUDIT_ATTACKS`: ``auc``, ``auc_se`` (bootstrap) and
        ``auc_se_independent`` (the SE that treats the releases as independent, for
        comparison); for each rate of :data:`AUDIT_RATES` (``tpr_10``, ``tpr_1``,
        ``tpr_0.1``) the share of members flagged at that false-positive rate with ``_low``
        and ``_high`` Clopper-Pearson bounds (every score an independent trial) and
        ``_boot_low`` and ``_boot_high`` bootstrap bounds (95 %); ``epsilon``, the lower
        bound of :func:`epsilon_lower_bound` from exact intervals (every score an independent
        trial, too narrow); and ``epsilon_resampled``, the bound of :func:`resampled_epsilon`
        from the bootstrap resamples (95 %), the one to quote.
    scores : dict of str to numpy.ndarray
        Each attack's scores, ``(R, n)``.
    member : numpy.ndarray
        Who was in each audited shadow cohort, ``(R, n)``.
    resampled : dict of str to numpy.ndarray
        Each attack's AUC, true-positive rates (at :data:`AUDIT_RATES`) and the held-out
        true- and false-positive rates at the epsilon bound's selected false-positive rate, on
        every bootstrap resample, ``(B, 3 + len(AUDIT_RATES))``.
    resample_index : numpy.ndarray
        The shadow releases drawn by each resample, ``(B, R)``.
    """

    level: str
    replicates: int
    excluded: dict
    summary: pd.DataFrame
    scores: dict
    member: np.ndarray
    resampled: dict
    resample_index: np.ndarray


def trusted_replicates(
    arrays: dict, *, pk_width: int, keep_residual_faults: bool = False
) -> tuple[np.ndarray, dict[str, int]]:
    """Which shadow releases to audit, and how many were left out for which reason.

    Parameters
    ----------
    arrays : dict
        The arrays of :func:`~synpmx_lite.attacks.shadow_releases.shadow_releases`.
    pk_width : int
        Leading columns of the released vector that are PK estimates (:func:`pk_width`); the
        degenerate-fit check reads these.
    keep_residual_faults : bool, default False
        Keep the fits whose every diagnostic concerns the residual error model (an SD of it
        at a bound or not determined), which the generator still releases under review
        (keyword-only; a sensitivity reading, see :func:`fault_kinds`).

    Returns
    -------
    keep : numpy.ndarray
        Boolean, one per replicate.
    excluded : dict
        ``{"flagged": ..., "degenerate": ...}``.
    """
    flagged = _flagged(arrays)
    if keep_residual_faults:
        flagged &= ~residual_faults_only(arrays)
    estimates = arrays["release unrounded"][:, :pk_width]
    centre = np.median(estimates[~flagged], axis=0)
    spread = 1.4826 * np.median(np.abs(estimates[~flagged] - centre), axis=0)
    far = np.abs(estimates - centre) > DEGENERATE_MADS * np.maximum(spread, 1e-12)
    degenerate = far.any(axis=1) & ~flagged
    keep = ~flagged & ~degenerate
    return keep, {"flagged": int(flagged.sum()), "degenerate": int(degenerate.sum())}


def fault_kinds(arrays: dict) -> list[tuple[str, ...]]:
    """The kinds of each shadow fit's diagnostics (:data:`FAULT_KINDS`), in the order reported.

    A fit flagged without any diagnostic reads ``("leave-one-out refit not converged",)``
    where the fit itself converged (P5 distrusts it for exact leave-one-out refits that did
    not, :attr:`~synpmx_lite.generator.influence.PrivacyReport.unconverged_pk_refits`), and
    ``("not converged",)`` otherwise; shadow releases stored without the diagnostics' text read
    ``("not recorded",)`` for every flagged fit.
    """
    flagged = _flagged(arrays)
    texts = arrays.get("diagnostics")
    kinds = []
    for row, bad in enumerate(flagged):
        if texts is None:
            kinds.append(("not recorded",) if bad else ())
            continue
        found = [_fault_kind(message) for message in str(texts[row]).split("\n") if message]
        unexplained = (
            "leave-one-out refit not converged"
            if arrays["converged"][row] and not arrays["diagnosed"][row]
            else "not converged"
        )
        kinds.append(tuple(found) or ((unexplained,) if bad else ()))
    return kinds


def residual_faults_only(arrays: dict) -> np.ndarray:
    """Whether each shadow fit is flagged and every fault it reports is in
    :data:`RESIDUAL_FAULTS` (its error model, not its PK estimates), ``(R,)``."""
    kinds = fault_kinds(arrays)
    return np.array([bool(k) and set(k) <= set(RESIDUAL_FAULTS) for k in kinds], dtype=bool)


def _flagged(arrays: dict) -> np.ndarray:
    return ~arrays["converged"] | arrays["diagnosed"] | arrays["untrusted"]


def _fault_kind(message: str) -> str:
    for kind, pattern in FAULT_KINDS.items():
        if re.search(pattern, message):
            return kind
    return "other"


def pk_width(name: str) -> int:
    """Columns of a study's released vector that are PK estimates: a log typical value and a
    log variance per parameter (the rest are shares)."""
    return 2 * len(load_dataset(name)[1].model.parameters)


def audit_shadows(
    arrays: dict,
    level: str,
    *,
    pk_width: int,
    null_control: bool = False,
    seed: int = 0,
    resamples: int = RESAMPLES,
    keep_residual_faults: bool = False,
) -> Audit:
    """The three attacks on one study's shadow releases at one rounding.

    Parameters
    ----------
    arrays : dict
        The arrays of :func:`~synpmx_lite.attacks.shadow_releases.shadow_releases`.
    level : str
        ``"unrounded"``, ``"2 figures"`` or ``"1 figure"``.
    pk_width : int
        As for :func:`trusted_replicates`.
    null_control : bool, default False
        Shuffle the releases between shadow cohorts first (keyword-only): membership then says
        nothing about a release, and every AUC should be a half.
    seed : int, default 0
        Seed of the shuffle, the threshold split and the bootstrap (keyword-only).
    resamples : int, default RESAMPLES
        Bootstrap resamples behind the SEs (keyword-only, at least 2).
    keep_residual_faults : bool, default False
        As for :func:`trusted_replicates` (keyword-only).

    Returns
    -------
    Audit
    """
    if f"release {level}" not in arrays:
        raise ValueError(f"level: no release {level!r} in these shadow releases")
    rng = np.random.default_rng(check_count(seed, "seed", minimum=0))
    resamples = check_count(resamples, "resamples", minimum=2)
    keep, excluded = trusted_replicates(
        arrays, pk_width=pk_width, keep_residual_faults=keep_residual_faults
    )
    member = arrays["member"][keep]
    release, own = arrays[f"release {level}"][keep], arrays[f"own {level}"][keep]
    if null_control:
        order = rng.permutation(len(member))
        release, own = release[order], own[order]
    if len(member) < 2 * BLOCKS:
        raise ValueError(f"arrays: {len(member)} trusted shadow releases, fewer than {2 * BLOCKS}")
    scores = attack_scores(release, own, member)
    split = rng.random(len(member)) < 0.5
    index = _resample_index(rng, len(member), resamples)
    rows = {name: summarise(s, member, split) for name, s in scores.items()}
    chosen = {name: row.pop("selected_rate") for name, row in rows.items()}
    resampled = _resampled_rates(release, own, member, index, split=split, chosen=chosen)
    summary = pd.DataFrame(
        [
            {"attack": name} | row | _resampled_columns(resampled[name], len(member))
            for name, row in rows.items()
        ]
    )
    return Audit(level, len(member), excluded, summary, scores, member, resampled, index)


def attack_scores(release: np.ndarray, own: np.ndarray, member: np.ndarray) -> dict:
    """Every attack of :data:`AUDIT_ATTACKS` fitted and scored (shapes as for
    :func:`lira_online`)."""
    return {
        "LiRA online": lira_online(release, own, member),
        "LiRA offline": lira_offline(own, member),
        "linear": linear_score(own),
    }


def _resample_index(rng: np.random.Generator, replicates: int, resamples: int) -> np.ndarray:
    """``(resamples, replicates)`` draws with replacement within each calibration block, in
    block order, so that a resample's blocks are the original blocks' releases."""
    block = _blocks(replicates)
    starts = np.searchsorted(block, np.arange(BLOCKS))
    sizes = np.bincount(block, minlength=BLOCKS)
    offsets = np.floor(rng.random((resamples, replicates)) * sizes[block]).astype(int)
    return starts[block] + offsets


def _resampled_rates(
    release: np.ndarray,
    own: np.ndarray,
    member: np.ndarray,
    index: np.ndarray,
    *,
    split: np.ndarray,
    chosen: dict[str, float],
) -> dict[str, np.ndarray]:
    """Each attack's AUC and true-positive rates on every resample, recalibrated, and its
    held-out rates at the false-positive rate ``chosen`` on the full data's ``split`` half."""
    rows = {name: [] for name in AUDIT_ATTACKS}
    for drawn in index:
        cohorts, half = member[drawn], split[drawn]
        for name, s in attack_scores(release[drawn], own[drawn], cohorts).items():
            members, others = s[cohorts], s[~cohorts]
            held = _held_out_rates(
                s[half][cohorts[half]], s[half][~cohorts[half]],
                s[~half][cohorts[~half]], s[~half][~cohorts[~half]], chosen[name],
            )  # fmt: skip
            rows[name].append(_auc_and_rates(members, others) + held)
    return {name: np.array(values) for name, values in rows.items()}


def _held_out_rates(
    members: np.ndarray, others: np.ndarray, held_members: np.ndarray, held_others: np.ndarray,
    rate: float,
) -> list[float]:  # fmt: skip
    """True- and false-positive rates on the held-out scores at the threshold that flags
    ``rate`` of the selection half's non-members."""
    if members.size == 0 or others.size == 0 or held_members.size == 0 or held_others.size == 0:
        return [np.nan, np.nan]  # a resample that drew one half only
    threshold = _threshold(others, rate)
    return [float((held_members > threshold).mean()), float((held_others > threshold).mean())]


def _threshold(others: np.ndarray, rate: float) -> float:
    """The score above which at most ``rate`` of ``others`` lie."""
    allowed = int(np.floor(rate * others.size + 1e-9))
    return float(np.sort(others.ravel())[::-1][min(allowed, others.size - 1)])


def _auc_and_rates(members: np.ndarray, others: np.ndarray) -> list[float]:
    """The AUC (ties half) and the true-positive rates at :data:`AUDIT_RATES`, from one sort
    of the non-members (as :func:`rate_at` and DeLong's placements, faster)."""
    ordered = np.sort(others)
    below = np.searchsorted(ordered, members, "left")
    auc = (below + np.searchsorted(ordered, members, "right")).mean() / (2 * ordered.size)
    rates = []
    for rate in AUDIT_RATES:
        allowed = int(np.floor(rate * ordered.size + 1e-9))
        threshold = ordered[::-1][min(allowed, ordered.size - 1)]
        rates.append(float((members > threshold).mean()))
    return [float(auc), *rates]


def _bootstrap_se(values: np.ndarray, replicates: int) -> float:
    """SD over resamples, corrected for drawing within blocks (which shrinks the variance
    by (b - 1) / b for blocks of b releases)."""
    per_block = replicates / BLOCKS
    return float(values.std(ddof=1) * np.sqrt(per_block / (per_block - 1)))


def _resampled_columns(resampled: np.ndarray, replicates: int) -> dict[str, float]:
    """The bootstrap SE of the AUC and the 95 % bootstrap bounds of each rate."""
    tail = 100 * (1 - AUDIT_CONFIDENCE) / 2
    row = {"auc_se": _bootstrap_se(resampled[:, 0], replicates)}
    for column, rate in enumerate(AUDIT_RATES, start=1):
        low, high = np.percentile(resampled[:, column], [tail, 100 - tail])
        row[f"tpr_{100 * rate:g}_boot_low"], row[f"tpr_{100 * rate:g}_boot_high"] = low, high
    row["epsilon_resampled"] = resampled_epsilon(resampled)
    return row


def resampled_epsilon(resampled: np.ndarray, *, confidence: float = AUDIT_CONFIDENCE) -> float:
    r"""The epsilon lower bound from one attack's bootstrap resamples.

    The bound of :func:`epsilon_lower_bound` with the lower ``(1 - confidence) / 2`` point of
    the held-out true-positive rate and the upper point of the false-positive rate over the
    resamples in place of exact binomial bounds: the resamples refit the attack, so they carry
    the dependence between scores that exact intervals ignore.

    Parameters
    ----------
    resampled : numpy.ndarray
        One attack's rows of :attr:`Audit.resampled`, ``(B, 3 + len(AUDIT_RATES))``.
    confidence : float, default 0.95
        Two-sided level of the rates' intervals (keyword-only).

    Returns
    -------
    float
    """
    if not 0 < confidence < 1:
        raise ValueError(f"confidence: {confidence!r} is not between 0 and 1")
    tail = 100 * (1 - confidence) / 2
    tpr, fpr = resampled[:, -2], resampled[:, -1]
    tpr_low, fpr_high = np.nanpercentile(tpr, tail), np.nanpercentile(fpr, 100 - tail)
    return _epsilon_from_bounds(float(tpr_low), float(fpr_high))


def release_epsilon_bound(audit: Audit) -> pd.Series:
    """The largest epsilon lower bound any of the audit's attacks puts on one study's release.

    Parameters
    ----------
    audit : Audit
        The study's audit at the release's rounding, the membership chapter's (one figure,
        :data:`AUDIT_SEED`, as :func:`~synpmx_lite.attacks.audit_results.audit_results`
        stores it) to quote its bound.

    Returns
    -------
    pandas.Series
        ``epsilon`` (the resampled bound of :func:`resampled_epsilon`), ``attack`` (the attack
        that gives it) and ``confidence``, each attack's level: 95 % Bonferroni-corrected for
        taking the largest of :data:`AUDIT_ATTACKS` (the tails at a third of 5 %, read from
        the audit's resamples: the stored audits as released have
        :data:`~synpmx_lite.attacks.audit_results.BOUND_RESAMPLES`, about 17 beyond each tail).

    Raises
    ------
    TypeError
        If ``audit`` is not an :class:`Audit` (e.g. the shadow releases' arrays).
    """
    if not isinstance(audit, Audit):
        raise TypeError(f"audit must be an Audit (audit_shadows), not {type(audit).__name__}")
    confidence = 1 - (1 - AUDIT_CONFIDENCE) / len(AUDIT_ATTACKS)
    bounds = {
        name: resampled_epsilon(values, confidence=confidence)
        for name, values in audit.resampled.items()
    }
    attack = max(bounds, key=bounds.get)
    return pd.Series({"epsilon": bounds[attack], "attack": attack, "confidence": confidence})


def _blocks(replicates: int) -> np.ndarray:
    return np.arange(replicates) * BLOCKS // replicates


def lira_online(release: np.ndarray, own: np.ndarray, member: np.ndarray) -> np.ndarray:
    """Per-patient Gaussian log likelihood ratios, pooled covariance, leave-one-block-out.

    Parameters
    ----------
    release : numpy.ndarray
        ``(R, d)`` released vectors.
    own : numpy.ndarray
        ``(R, n, k)`` each candidate's own scores.
    member : numpy.ndarray
        ``(R, n)`` membership.

    Returns
    -------
    numpy.ndarray
        ``(R, n)`` scores, higher for a likelier member.
    """
    replicates, n = member.shape
    z = np.concatenate(
        [np.broadcast_to(release[:, None], (replicates, n, release.shape[1])), own], -1
    )
    scores = np.empty((replicates, n))
    block = _blocks(replicates)
    for b in range(BLOCKS):
        train, test = block != b, block == b
        mean_in, mean_out = _class_means(z[train], member[train])
        residual = z[train] - np.where(member[train][..., None], mean_in, mean_out)
        covariance = np.cov(residual.reshape(-1, z.shape[-1]), rowvar=False)
        covariance = (1 - _SHRINK) * covariance + _SHRINK * np.diag(np.diag(covariance))
        covariance += 1e-12 * np.eye(len(covariance))
        weights = np.linalg.solve(covariance, (mean_in - mean_out).T).T  # (n, D)
        middle = (mean_in + mean_out) / 2
        scores[test] = np.einsum("rnd,nd->rn", z[test] - middle, weights)
    return scores


def _class_means(z: np.ndarray, member: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each patient's mean of ``z`` over the releases that held them and those that did not."""
    weights_in = member / np.maximum(member.sum(axis=0), 1)
    weights_out = ~member / np.maximum((~member).sum(axis=0), 1)
    return np.einsum("rn,rnd->nd", weights_in, z), np.einsum("rn,rnd->nd", weights_out, z)


def lira_offline(own: np.ndarray, member: np.ndarray) -> np.ndarray:
    """Own scores against each patient's non-member mean, over the pooled non-member SD, summed
    (one-sided), leave-one-block-out; shapes as for :func:`lira_online`."""
    replicates = member.shape[0]
    scores = np.empty(member.shape)
    block = _blocks(replicates)
    for b in range(BLOCKS):
        train, test = block != b, block == b
        _, mean_out = _class_means(own[train], member[train])
        out = ~member[train]
        spread = (own[train] - mean_out)[out].std(axis=0)
        standardised = (own[test] - mean_out) / np.where(spread > 0, spread, np.inf)
        scores[test] = standardised.sum(axis=-1)
    return scores


def linear_score(own: np.ndarray) -> np.ndarray:
    """The baseline: each own score standardised robustly within its release, summed."""
    centre = np.median(own, axis=1, keepdims=True)
    spread = 1.4826 * np.median(np.abs(own - centre), axis=1, keepdims=True)
    return ((own - centre) / np.where(spread > 0, spread, np.inf)).sum(axis=-1)


def rate_at(members: np.ndarray, others: np.ndarray, rate: float) -> tuple[int, int, int, int]:
    """Counts at the threshold that flags at most ``rate`` of ``others``: members flagged,
    members, non-members flagged, non-members."""
    allowed = int(np.floor(rate * len(others) + 1e-9))
    threshold = np.sort(others)[::-1][min(allowed, len(others) - 1)]
    return (
        int((members > threshold).sum()),
        len(members),
        int((others > threshold).sum()),
        len(others),
    )


def _clopper_pearson(k: int, total: int) -> tuple[float, float]:
    """Exact (Clopper-Pearson) two-sided interval of a binomial proportion, from beta quantiles
    (as ``scipy.stats.binomtest(...).proportion_ci(method="exact")``, without its root search).

    The quantiles are the inverse regularised incomplete beta function, the very values
    ``scipy.stats.beta.ppf`` returns, without its argument checks: the epsilon bound's
    threshold search calls this thousands of times."""
    tail = (1 - AUDIT_CONFIDENCE) / 2
    low = special.betaincinv(k, total - k + 1, tail) if k > 0 else 0.0
    high = special.betaincinv(k + 1, total - k, 1 - tail) if k < total else 1.0
    return float(low), float(high)


def epsilon_lower_bound(tp: int, members: int, fp: int, non_members: int) -> float:
    r"""The smallest epsilon of any (epsilon, 0)-DP mechanism with these attack rates.

    An (epsilon, 0)-DP mechanism bounds any test's rates by
    :math:`\mathrm{TPR} \le e^\varepsilon \mathrm{FPR}` and
    :math:`1 - \mathrm{FPR} \le e^\varepsilon (1 - \mathrm{TPR})` (Jagielski et al. 2020;
    Nasr et al. 2021). With Clopper-Pearson bounds (95 %) on both rates, the larger of
    :math:`\log(\underline{\mathrm{TPR}}/\overline{\mathrm{FPR}})` and
    :math:`\log((1-\overline{\mathrm{FPR}})/(1-\underline{\mathrm{TPR}}))`, and 0.

    Parameters
    ----------
    tp, members, fp, non_members : int
        Members flagged, members, non-members flagged, non-members.

    Returns
    -------
    float
    """
    tpr_low, _ = _clopper_pearson(tp, members)
    _, fpr_high = _clopper_pearson(fp, non_members)
    return _epsilon_from_bounds(tpr_low, fpr_high)


def _epsilon_from_bounds(tpr_low: float, fpr_high: float) -> float:
    """The larger of the two DP inequalities' log ratios at these bounds, and 0."""
    if tpr_low >= 1:
        return np.inf if fpr_high < 1 else 0.0
    bounds = [0.0, np.log((1 - fpr_high) / (1 - tpr_low))]
    if tpr_low > 0:
        bounds.append(np.log(tpr_low / fpr_high))
    return float(max(bounds))


def summarise(scores: np.ndarray, member: np.ndarray, split: np.ndarray) -> dict[str, float]:
    """AUC with the SE that treats replicates as independent (``auc_se_independent``), rates
    with Clopper-Pearson bounds, and the epsilon lower bound with the threshold chosen on the
    replicates of ``split`` and its rates counted on the others (so the choice does not
    inflate the bound), with the false-positive rate that chose it (``selected_rate``)."""
    replicates = len(member)
    members = scores[member].reshape(replicates, -1)
    others = scores[~member].reshape(replicates, -1)
    auc, terms = _replicate_terms(members, others)
    row = {"auc": auc, "auc_se_independent": _mean_standard_error(terms, False)}
    for rate in AUDIT_RATES:
        column = f"tpr_{100 * rate:g}"
        tp, total, _, _ = rate_at(members.ravel(), others.ravel(), rate)
        row[column] = tp / total
        row[f"{column}_low"], row[f"{column}_high"] = _clopper_pearson(tp, total)
    row["epsilon"], row["selected_rate"] = _split_epsilon(members, others, split)
    return row


def _split_epsilon(
    members: np.ndarray, others: np.ndarray, split: np.ndarray
) -> tuple[float, float]:
    """Epsilon lower bound at the threshold that gives the largest bound on ``split``, and
    the false-positive rate on ``split`` that sets that threshold."""
    # Thresholds that flag at least ten selection non-members: fewer make the choice chase noise.
    rates = np.geomspace(min(10 / others[split].size, 0.5), 0.5, 30)
    chosen = max(
        rates,
        key=lambda r: epsilon_lower_bound(
            *rate_at(members[split].ravel(), others[split].ravel(), r)
        ),
    )
    threshold = _threshold(others[split], chosen)
    held_members, held_others = members[~split].ravel(), others[~split].ravel()
    epsilon = epsilon_lower_bound(
        int((held_members > threshold).sum()),
        held_members.size,
        int((held_others > threshold).sum()),
        held_others.size,
    )
    return epsilon, float(chosen)


def paired_change(before: Audit, after: Audit, attack: str) -> tuple[float, float]:
    """The AUC of ``after`` less that of ``before`` on the same shadow cohorts, and its SE
    (the SD of the change over the two audits' shared bootstrap resamples, so the pairing
    cancels the cohorts' shared luck).

    Parameters
    ----------
    before, after : Audit
        Two audits of the same shadow releases at different roundings, with the same seed
        (paired on the resamples they share, the first of the larger).
    attack : str
        One of :data:`AUDIT_ATTACKS`.

    Returns
    -------
    change, se : float
    """
    if not np.array_equal(before.member, after.member):
        raise ValueError("before, after: audits of different shadow cohorts cannot be paired")
    # A seed draws the same first resamples whatever their number: pair those in common.
    common = min(len(before.resample_index), len(after.resample_index))
    if not np.array_equal(before.resample_index[:common], after.resample_index[:common]):
        raise ValueError("before, after: audits with different resamples (seeds) cannot be paired")
    aucs = [audit.summary.set_index("attack").loc[attack, "auc"] for audit in (before, after)]
    change = after.resampled[attack][:common, 0] - before.resampled[attack][:common, 0]
    return float(aucs[1] - aucs[0]), _bootstrap_se(change, after.replicates)


def exposed_rates(
    audit: Audit,
    influence: np.ndarray,
    attack: str,
    *,
    share: float = 0.1,
    seed: int = AUDIT_SEED,
    resamples: int = PATIENT_RESAMPLES,
) -> pd.DataFrame:
    """True- and false-positive rates on the most influential patients beside everyone's.

    The threshold is the one that flags each rate of :data:`AUDIT_RATES` of all non-members;
    the rates are then counted on the members and on the non-members among the ``share`` of
    patients with the largest P5 influence (at least one patient), and on everyone. A patient
    who scores high in or out of a cohort raises both of their group's rates, so the group's
    own false-positive rate and its AUC (its members against its non-members) are what say
    whether the attack finds them more than others.

    A group's many scores come from few patients, and a patient's scores rise and fall
    together, so the Clopper-Pearson interval, which treats every score as an independent
    trial, is too narrow. The ``patients_`` intervals resample the group's patients with
    replacement (a cluster bootstrap over patients), each drawn patient bringing all their
    scores, at the thresholds and shadow releases fixed: they carry the patients' variation,
    not the releases'.

    Parameters
    ----------
    audit : Audit
        The audit.
    influence : numpy.ndarray
        Each patient's P5 influence (the shadow releases' ``influence``).
    attack : str
        One of :data:`AUDIT_ATTACKS`.
    share : float, default 0.1
        The exposed share of patients (keyword-only).
    seed : int, default AUDIT_SEED
        Seed of the patient resamples (keyword-only).
    resamples : int, default PATIENT_RESAMPLES
        Patient resamples per group (keyword-only, at least 2).

    Returns
    -------
    pandas.DataFrame
        A row per rate and group (``"most influential"``, ``"everyone"``): ``tpr``, ``low``,
        ``high`` (Clopper-Pearson), ``members`` scored, ``fpr`` (the group's non-members
        flagged), ``non_members`` scored, ``patients`` in the group, ``auc`` (the group's
        members against its non-members, ties half), and the 95 % patient-resampled bounds
        ``tpr_patients_low``, ``tpr_patients_high``, ``fpr_patients_low``,
        ``fpr_patients_high``, ``auc_patients_low`` and ``auc_patients_high``.
    """
    scores, member = audit.scores[attack], audit.member
    influence = np.asarray(influence, dtype=float)
    if influence.shape != (member.shape[1],):
        raise ValueError(f"influence: {influence.shape} values for {member.shape[1]} patients")
    rng = np.random.default_rng(check_count(seed, "seed", minimum=0))
    resamples = check_count(resamples, "resamples", minimum=2)
    count = max(int(np.ceil(share * member.shape[1])), 1)
    exposed = np.zeros(member.shape[1], dtype=bool)
    exposed[np.argsort(-influence, kind="stable")[:count]] = True
    thresholds = [_threshold(scores[~member], rate) for rate in AUDIT_RATES]
    groups = {"most influential": exposed, "everyone": np.ones_like(exposed)}
    tables = [
        _group_rates(scores[:, within], member[:, within], thresholds, rng, resamples).assign(
            group=group
        )
        for group, within in groups.items()
    ]
    table = pd.concat(tables).sort_values("rate", ascending=False, kind="stable")
    return table[["rate", "group", *table.columns.drop(["rate", "group"])]].reset_index(drop=True)


def _group_rates(
    scores: np.ndarray,
    member: np.ndarray,
    thresholds: list[float],
    rng: np.random.Generator,
    resamples: int,
) -> pd.DataFrame:
    """One group's rates at each threshold, with exact and patient-resampled intervals."""
    patients = member.shape[1]
    # Each resample's count of every patient: a multinomial draw of the group's size.
    weights = rng.multinomial(patients, np.full(patients, 1 / patients), size=resamples)
    ins, outs = member.sum(axis=0), (~member).sum(axis=0)
    wins = _pair_wins(scores, member)
    with np.errstate(invalid="ignore", divide="ignore"):
        aucs = np.einsum("bi,ij,bj->b", weights, wins, weights) / (
            (weights @ ins) * (weights @ outs)
        )
    rows = []
    for rate, threshold in zip(AUDIT_RATES, thresholds, strict=True):
        above = scores > threshold
        hits, false = (member & above).sum(axis=0), (~member & above).sum(axis=0)
        low, high = _clopper_pearson(int(hits.sum()), int(ins.sum()))
        with np.errstate(invalid="ignore", divide="ignore"):
            tprs, fprs = weights @ hits / (weights @ ins), weights @ false / (weights @ outs)
        rows.append(
            {"rate": rate, "tpr": hits.sum() / ins.sum(), "low": low, "high": high,
             "members": int(ins.sum()), "fpr": false.sum() / outs.sum(),
             "non_members": int(outs.sum()), "patients": patients,
             "auc": wins.sum() / (ins.sum() * outs.sum())}
            | _percentile_bounds("tpr", tprs) | _percentile_bounds("fpr", fprs)
            | _percentile_bounds("auc", aucs)
        )  # fmt: skip
    return pd.DataFrame(rows)


def _pair_wins(scores: np.ndarray, member: np.ndarray) -> np.ndarray:
    """``(c, c)``: of patient i's member scores against patient j's non-member scores, the
    pairs where the member scores higher, ties half."""
    patients = member.shape[1]
    owner, inside = np.nonzero(member)[1], scores[member]
    wins = np.empty((patients, patients))
    for j in range(patients):
        ordered = np.sort(scores[~member[:, j], j])
        below = np.searchsorted(ordered, inside, "left") + np.searchsorted(ordered, inside, "right")
        wins[:, j] = np.bincount(owner, weights=below / 2, minlength=patients)
    return wins


def _percentile_bounds(name: str, values: np.ndarray) -> dict[str, float]:
    """The middle 95 % of ``values`` over resamples (those defined), as ``name_patients_*``."""
    tail = 100 * (1 - AUDIT_CONFIDENCE) / 2
    low, high = np.nanpercentile(values, [tail, 100 - tail])
    return {f"{name}_patients_low": float(low), f"{name}_patients_high": float(high)}


def rerun_spread(arrays: dict, level: str, *, pk_width: int, groups: int = 5) -> pd.DataFrame:
    """Each attack's AUC over disjoint groups of the shadow releases, as independent reruns.

    Parameters
    ----------
    arrays : dict
        The shadow releases' arrays.
    level : str
        The release audited.
    pk_width : int
        As for :func:`trusted_replicates`.
    groups : int, default 5
        Reruns, each of an equal share of the trusted replicates (at least ``2 * BLOCKS``).

    Returns
    -------
    pandas.DataFrame
        Per attack: ``mean`` AUC over the reruns, ``spread`` (their SD), ``se`` (the reruns'
        mean bootstrap SE), ``ratio`` (spread over SE, near 1 when the SEs are right), and
        ``ratio_independent``, the same with the SE that treats releases as independent.
    """
    groups = check_count(groups, "groups", minimum=2)
    keep, _ = trusted_replicates(arrays, pk_width=pk_width)
    # Groups of the trusted replicates, so that every rerun keeps as many.
    which = np.full(len(keep), -1)
    which[keep] = np.arange(keep.sum()) % groups
    per_patient = {"influence"}  # the only array not indexed by replicate first
    summaries = pd.concat(
        audit_shadows(
            {k: (v if k in per_patient else v[which == g]) for k, v in arrays.items()},
            level,
            pk_width=pk_width,
        ).summary.assign(rerun=g)
        for g in range(groups)
    )
    table = summaries.groupby("attack", sort=False).agg(
        mean=("auc", "mean"),
        spread=("auc", "std"),
        se=("auc_se", "mean"),
        se_independent=("auc_se_independent", "mean"),
    )
    return table.assign(
        ratio=table["spread"] / table["se"],
        ratio_independent=table["spread"] / table["se_independent"],
    )
