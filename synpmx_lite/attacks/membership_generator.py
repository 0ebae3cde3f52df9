r"""Membership inference against the real model generator, on the public studies.

The attacks of :mod:`synpmx_lite.attacks.membership` score a simplified fingerprint. Here the
fingerprint is the generator's own: :func:`generator_membership_attack` draws random
sub-cohorts (*shadow cohorts*) of a shipped study, runs the whole generator on each (the FOCE-I
fit, the influence rounds and :func:`~synpmx_lite.generator.estimate.model_fingerprint`), and scores
every patient of the study against each release: the sub-cohort's patients are its members,
the rest of the study non-members with their own real records.

The attacker holds the release, the candidate's own record and reference values for the
population, from one of two sources:

* ``"whole study"``: the generator's estimates on every patient of the study, at full
  precision. The shadow cohort is drawn from exactly these patients, so this attacker knows
  the population the release was drawn from, the real-data counterpart of an exact reference.
* ``"shadow cohort"``: the full-precision estimates of another shadow cohort of the same size,
  as an attacker holding an analysis of a related study would. Replicate ``r`` borrows the
  estimates of replicate ``r + 1`` (cyclically), so that no extra fit is needed.

Three scores, each from what the attacker holds:

* ``"shares"``: the chapter's attendance score, summed over every released share of a yes/no
  fact about each patient that the candidate's record settles (each endpoint's attendance
  rate, each category level but one per covariate, each arm but one, the dose-change rate);
* ``"population"``: the chapter's population-model score, with the candidate's random effects
  read from their own concentrations as their empirical Bayes estimate under the released
  model (:func:`synpmx_lite.pmx.population.empirical_bayes_estimates`), measured from the
  reference typical values;
* ``"combined"``: the sum of the two, each divided by its SD over all the candidates scored
  (members and non-members together, so the attacker needs no labels to form it).

Every score is computed for the release as it leaves (PK estimates at ``rounding``
significant figures, shares as the fingerprint rounds them) and for the same fits unrounded.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass

import numpy as np
import pandas as pd

from .._validation import check_count, check_real
from ..generator.estimate import ModelFit, model_fingerprint, synpmx_model_estimate
from ..generator.influence import MAX_LEFT_OUT_SHARE
from ..generator.release import Fingerprint
from ..pmx.population import FitWarning, empirical_bayes_estimates
from ..pmx.study import PmxRoles, StudyEvents, load_dataset, prepare_study
from ..rounding import round_significant
from .membership import (
    _placements,
    _population_score,
    attendance_attack,
    population_attack,
    roc_curve,
)

__all__ = [
    "ATTACK_REFERENCES",
    "ATTACK_RELEASES",
    "ATTACK_SCORES",
    "FALSE_POSITIVE_RATES",
    "MIN_SHADOW_COHORT",
    "GeneratorAttack",
    "equivalent_patients",
    "generator_membership_attack",
    "refuse_unauditable",
    "simplified_prediction",
]

#: The two releases scored: as it leaves, and the same fits at full precision.
ATTACK_RELEASES = ("released", "unrounded")
#: The attacker's two sources of reference values.
ATTACK_REFERENCES = ("whole study", "shadow cohort")
#: The three scores.
ATTACK_SCORES = ("shares", "population", "combined")
#: False-positive rates at which the true-positive rate is reported.
FALSE_POSITIVE_RATES = (0.01, 0.05)

#: The fewest patients a shadow cohort may have: below it the influence rounds can leave nobody
#: out (a tenth of the cohort is under one patient), unlike on the studies themselves.
MIN_SHADOW_COHORT = math.ceil(1 / MAX_LEFT_OUT_SHARE)

_BOOTSTRAP = 400  # resamples of the replicates behind each true-positive rate's SE


@dataclass(frozen=True)
class GeneratorAttack:
    """The membership attacks on one study's generator releases.

    Attributes
    ----------
    study : str
        The shipped study (a key of :data:`synpmx_lite.pmx.study.DATASETS`).
    patients : int
        Patients in the study.
    members : int
        Patients in each shadow cohort; the other ``patients - members`` are non-members.
    replicates : int
        Shadow cohorts, each a full run of the generator.
    cohort_fraction : float
        The share of the study drawn into each shadow cohort.
    rounding : int
        Significant figures of the released PK estimates.
    seed : int
        Seed of the draws (cohorts and the bootstrap).
    summary : pandas.DataFrame
        One row per release, reference and score (``release``, ``reference``, ``score``):
        ``auc`` and ``auc_se``; ``tpr_1`` and ``tpr_5``, the share of members flagged by the
        threshold that flags at most 1 % and 5 % of non-members, with ``tpr_1_se`` and
        ``tpr_5_se``.
    rounding_change : pandas.DataFrame
        Per reference and score: ``change``, the released AUC less the unrounded one on the
        same cohorts, and ``change_se``.
    scores : pandas.DataFrame
        Long table of every score: ``replicate``, ``patient`` (source ID), ``member``,
        ``release``, ``reference``, ``score`` and ``value``.
    shares : int
        Released shares the ``shares`` score reads (those strictly between 0 and 1 in the
        whole study).
    random_effects : int
        Random effects of the study's model.
    left_out : float
        Mean number of members per cohort the influence rounds left out of the PK fit (they
        remain members: they are in the cohort and its other summaries).
    unconverged : int
        Replicates whose PK fit is flagged as not to be trusted (they are scored as released).
    modes_unfound : int
        Candidates' empirical Bayes modes, over releases, replicates and patients, that the
        search did not find (their scores use the search's last point).
    fit_problems : pandas.Series
        How many replicates' fits carry each diagnostic
        (:attr:`synpmx_lite.pmx.population.PopulationFit.diagnostics`), most frequent first.
    estimates : pandas.DataFrame
        One row per replicate; columns ``(release, kind, parameter)`` with ``kind``
        ``typical`` or ``omega`` (sorted): the PK estimates each cohort's release holds, as
        released and unrounded.
    shadow_off_by : float
        Root mean square, over replicates and parameters, of the log-scale difference between
        a shadow cohort's typical values and the whole study's: how far off the shadow
        reference is, on the scale of the simplified table's ``off_by``.

    Notes
    -----
    **Standard errors.** The replicates (shadow cohorts) are the independent units; the
    patients of one replicate are scored against the same release and are not independent,
    and each patient appears, as member or non-member, in many replicates. An AUC pools every
    member's score against every non-member's. Its first-order (Hoeffding) term is, per
    replicate, the mean placement of its members plus that of its non-members (DeLong's
    placements, clustered as by Obuchowski 1997), and its SE the SD of that term over
    replicates over the square root of their number. With the shadow-cohort reference,
    replicates ``r`` and ``r + 1`` share one fit, and replicates two apart share none; the
    variance then adds twice the lag-one autocovariance of the terms, estimated without bias
    for one-dependent terms (never below the independent value). The true-positive rates'
    SEs are from a bootstrap of whole replicates (in neighbouring pairs where they share a
    fit). Every SE is Monte Carlo error given the
    study's patients: the study itself is one draw of patients, which no SE here covers.
    """

    study: str
    patients: int
    members: int
    replicates: int
    cohort_fraction: float
    rounding: int
    seed: int
    summary: pd.DataFrame
    rounding_change: pd.DataFrame
    scores: pd.DataFrame
    shares: int
    random_effects: int
    left_out: float
    unconverged: int
    modes_unfound: int
    fit_problems: pd.Series
    estimates: pd.DataFrame
    shadow_off_by: float

    def piles(self, release: str, reference: str, score: str) -> tuple[np.ndarray, np.ndarray]:
        """Members' and non-members' scores under one release, reference and score.

        Parameters
        ----------
        release : {"released", "unrounded"}
            The release as it leaves, or the same fits at full precision.
        reference : {"whole study", "shadow cohort"}
            The attacker's reference values.
        score : {"shares", "population", "combined"}
            The attacker's score.

        Returns
        -------
        members, non_members : numpy.ndarray
            The scores pooled over replicates, in replicate order.

        Raises
        ------
        ValueError
            A choice outside those listed.
        """
        chosen = _attack_rows(self.scores, release, reference, score)
        member = chosen["member"].to_numpy()
        values = chosen["value"].to_numpy()
        return values[member], values[~member]

    def roc_curve(self, release: str, reference: str, score: str) -> pd.DataFrame:
        """The ROC curve of one release, reference and score.

        Parameters
        ----------
        release, reference, score : str
            As for :meth:`piles`.

        Returns
        -------
        pandas.DataFrame
            The curve of the pooled scores, as :func:`~synpmx_lite.attacks.membership.roc_curve`
            gives it.
        """
        return roc_curve(*self.piles(release, reference, score))

    def result(self, release: str, reference: str, score: str) -> pd.Series:
        """One row of :attr:`summary`.

        Parameters
        ----------
        release, reference, score : str
            As for :meth:`piles`.

        Returns
        -------
        pandas.Series
            The AUC, the true-positive rates and their SEs.
        """
        return _attack_rows(self.summary, release, reference, score).iloc[0]


def _attack_rows(table: pd.DataFrame, release: str, reference: str, score: str) -> pd.DataFrame:
    """The rows of ``table`` (scores or summary) for one release, reference and score, each
    checked against the choices the attack offers."""
    _check_choice(release, "release", ATTACK_RELEASES)
    _check_choice(reference, "reference", ATTACK_REFERENCES)
    _check_choice(score, "score", ATTACK_SCORES)
    return table[
        (table["release"] == release)
        & (table["reference"] == reference)
        & (table["score"] == score)
    ]


def _check_choice(value: object, name: str, allowed: tuple[str, ...]) -> None:
    if value not in allowed:
        raise ValueError(f"{name} must be one of {list(allowed)}, got {value!r}")


# --- What the candidate's record settles --------------------------------------------------------


def _patient_facts(study: StudyEvents, min_patients: int) -> pd.DataFrame:
    """Per patient, each yes/no fact a share of the fingerprint counts, as a value in [0, 1].

    Columns are ``(kind, key)``: ``("attendance", endpoint)`` the share of the endpoint's
    scheduled visits (those at least ``min_patients`` of the study reached) the patient
    attended, NaN for a patient with no observation of it; ``("category", (covariate,
    level))`` and ``("arm", arm)`` indicators; ``("dose change", "")`` whether the patient's
    dose changed within a period.
    """
    n = study.n_patients
    facts = {}
    visits = study.observations.drop_duplicates(["patient", "endpoint", "period", "visit"])
    for endpoint, rows in visits.groupby("endpoint"):
        reached = rows.groupby(["period", "visit"])["patient"].nunique()
        scheduled = reached.index[reached >= min_patients]
        on_schedule = pd.MultiIndex.from_frame(rows[["period", "visit"]]).isin(scheduled)
        attended = rows[on_schedule].groupby("patient").size()
        share = np.full(n, np.nan)
        share[rows["patient"].unique()] = 0.0
        share[attended.index] = attended.to_numpy() / max(len(scheduled), 1)
        facts[("attendance", str(endpoint))] = share
    continuous = {
        c
        for c in study.roles.covariates
        if c not in study.roles.categorical and pd.api.types.is_numeric_dtype(study.covariates[c])
    }
    for name in study.roles.covariates:
        if name in continuous:
            continue
        for level in pd.unique(study.covariates[name]):
            facts[("category", (name, str(level)))] = (
                study.covariates[name].to_numpy() == level
            ).astype(float)
    arms = pd.unique(study.arms)
    if len(arms) > 1:
        for arm in arms:
            facts[("arm", str(arm))] = (study.arms.to_numpy() == arm).astype(float)
    doses = study.doses
    previous = doses.groupby(["patient", "period"])["amount"].shift()
    changed = doses.loc[previous.notna() & (doses["amount"] != previous), "patient"].unique()
    facts[("dose change", "")] = np.isin(np.arange(n), changed).astype(float)
    return pd.DataFrame(facts)


def _released_shares(
    fingerprint: Fingerprint, facts: pd.DataFrame, cohort: np.ndarray
) -> np.ndarray:
    """The fingerprint's value of each fact's share (NaN where it releases none).

    Arm sizes are released as exact counts, so an arm's share is read from the cohort.
    """
    values = np.full(facts.shape[1], np.nan)
    categories = {
        (name, str(level)): share
        for name, pairs in fingerprint.categories.items()
        for level, share in pairs
    }
    for j, (kind, key) in enumerate(facts.columns):
        if kind == "attendance" and key in fingerprint.endpoints:
            values[j] = fingerprint.endpoints[key]["attendance"]
        elif kind == "category" and key in categories:
            values[j] = categories[key]
        elif kind == "dose change":
            values[j] = fingerprint.dose_change_rate
        elif kind == "arm":
            values[j] = facts.iloc[cohort, j].mean()
    return values


def _cohort_shares(study: StudyEvents, facts: pd.DataFrame, cohort: np.ndarray) -> np.ndarray:
    """Each fact's share in a cohort (boolean per patient) at full precision, as the
    fingerprint defines it: attendance over the visits the cohort itself reached."""
    shares = facts[cohort].mean(axis=0)
    attendance = _patient_facts(study.subset(cohort), min_patients=3)["attendance"]
    shares.loc["attendance"] = (
        attendance.mean(axis=0).reindex(shares["attendance"].index).to_numpy()
    )
    return shares.to_numpy()


def _scored_facts(facts: pd.DataFrame, whole: np.ndarray) -> np.ndarray:
    """Which facts the shares score reads: those strictly between 0 and 1 in the whole study,
    less the last such level of each covariate and the last such arm (the shares of a
    covariate's levels, or of the arms, add up to 1, so the last repeats the others)."""
    scored = (whole > 0) & (whole < 1)
    groups = pd.Series(
        [f"{kind} {key[0]}" if kind == "category" else kind for kind, key in facts.columns]
    )
    kinds = facts.columns.get_level_values(0)
    for group in groups[np.isin(kinds, ["category", "arm"]) & scored].unique():
        scored[np.flatnonzero((groups == group).to_numpy() & scored)[-1]] = False
    return scored


# --- The AUC of pooled piles with replicates as the unit -----------------------------------------


def _replicate_terms(members: np.ndarray, others: np.ndarray) -> tuple[float, np.ndarray]:
    """The pooled AUC and each replicate's first-order term (``(R, m)`` and ``(R, k)`` piles)."""
    member_placement, other_placement = _placements(members.ravel(), others.ravel())
    terms = member_placement.reshape(members.shape).mean(axis=1) + other_placement.reshape(
        others.shape
    ).mean(axis=1)
    return float(member_placement.mean()), terms


def _mean_standard_error(terms: np.ndarray, neighbours: bool) -> float | np.ndarray:
    r"""SE of the mean of per-replicate terms (along the last axis).

    With ``neighbours``, adjacent replicates (cyclically) share one fit, so the terms are
    one-dependent and the variance of their mean is :math:`(\gamma_0 + 2\gamma_1)/R`. Around
    the sample mean, the sum of squares plus twice the sum of lag-one products has expectation
    :math:`R(R - 3)` times that variance, so it is divided by :math:`R - 3`, not :math:`R - 1`
    (at ``R = 10`` the latter understates the variance by a fifth). The result is never
    below the independent value.
    """
    size = terms.shape[-1]
    centred = terms - terms.mean(axis=-1, keepdims=True)
    squares = (centred**2).sum(axis=-1)
    variance = squares / (size - 1)
    if neighbours:
        lag_one = (centred * np.roll(centred, -1, axis=-1)).sum(axis=-1)
        variance = np.maximum((squares + 2 * lag_one) / (size - 3), variance)
    standard_error = np.sqrt(variance / size)
    return float(standard_error) if standard_error.ndim == 0 else standard_error


def _true_positive_rates(members: np.ndarray, others: np.ndarray, rate: float) -> np.ndarray:
    """Share of members above the threshold that flags at most ``rate`` of the non-members,
    for each row of ``(B, M)`` and ``(B, N)`` piles."""
    allowed = int(np.floor(rate * others.shape[-1] + 1e-9))
    threshold = -np.sort(-others, axis=-1)[..., allowed]  # the highest score left unflagged
    return (members > threshold[..., None]).mean(axis=-1)


def _replicate_resamples(rng: np.random.Generator, replicates: int, neighbours: bool) -> np.ndarray:
    """``(_BOOTSTRAP, replicates)`` indices of whole replicates drawn with replacement; with
    ``neighbours``, in cyclic pairs ``(r, r + 1)`` (a block bootstrap), so that replicates
    sharing a fit are drawn together and their dependence stays in the resamples."""
    if not neighbours:
        return rng.integers(0, replicates, size=(_BOOTSTRAP, replicates))
    starts = rng.integers(0, replicates, size=(_BOOTSTRAP, -(-replicates // 2)))
    pairs = (starts[..., None] + np.arange(2)) % replicates
    return pairs.reshape(_BOOTSTRAP, -1)[:, :replicates]


def _summarise(
    scores: np.ndarray, member: np.ndarray, neighbours: bool, rng: np.random.Generator
) -> dict[str, float]:
    """AUC, its SE and the true-positive rates with bootstrap SEs, of ``(R, n)`` scores."""
    replicates = scores.shape[0]
    members = scores[member].reshape(replicates, -1)
    others = scores[~member].reshape(replicates, -1)
    value, terms = _replicate_terms(members, others)
    row = {"auc": value, "auc_se": _mean_standard_error(terms, neighbours)}
    resample = _replicate_resamples(rng, replicates, neighbours)
    for rate in FALSE_POSITIVE_RATES:
        column = f"tpr_{round(100 * rate)}"
        row[column] = float(_true_positive_rates(members.ravel(), others.ravel(), rate))
        boot = _true_positive_rates(
            members[resample].reshape(_BOOTSTRAP, -1),
            others[resample].reshape(_BOOTSTRAP, -1),
            rate,
        )
        row[f"{column}_se"] = float(boot.std(ddof=1))
    return row


# --- The attack --------------------------------------------------------------------------------


def generator_membership_attack(
    name: str,
    *,
    cohort_fraction: float = 0.75,
    replicates: int = 40,
    rounding: int = 1,
    seed: int = 1,
) -> GeneratorAttack:
    """Membership inference against the generator's releases of shadow cohorts of a real study.

    Each replicate draws ``round(cohort_fraction * patients)`` of the study's patients at
    random, runs the generator on them
    (:func:`~synpmx_lite.generator.estimate.synpmx_model_estimate` with its influence rounds, then
    :func:`~synpmx_lite.generator.estimate.model_fingerprint`), and scores every patient of the
    study against the release, with each reference and score of the module docstring. The fits run
    one after another (each is a full FOCE-I estimation); every patient's random effects under
    every replicate's release are then found in one batch, and all scores are computed at once.

    Parameters
    ----------
    name : str
        A shipped study (:func:`~synpmx_lite.pmx.study.load_dataset`).
    cohort_fraction : float, default 0.75
        Share of the study in each shadow cohort, in (0, 1); the cohort must have at least
        :data:`MIN_SHADOW_COHORT` patients (so that the influence rounds can act, as on the
        studies themselves) and leave at least 2 out.
    replicates : int, default 40
        Shadow cohorts, at least 4 (the shadow-cohort reference's SE needs four).
    rounding : int, default 1
        Significant figures of the released PK estimates (the fingerprint's is 1).
    seed : int, default 1
        Seed of the cohorts' draw and of the bootstrap (a non-negative integer).

    Returns
    -------
    GeneratorAttack
        AUCs with SEs and true-positive rates at 1 % and 5 % false positives, per release,
        reference and score, and every score.

    Raises
    ------
    TypeError, ValueError
        An unknown study, a fraction outside (0, 1) or one leaving too few members or
        non-members, fewer than 4 replicates, a rounding below 1, a negative seed; a study
        whose roles choose the random effects, covariate effects or a correlated pair
        (:func:`refuse_unauditable`).
    """
    data, roles = load_dataset(name)
    refuse_unauditable(name, roles)
    cohort_fraction = check_real(
        cohort_fraction, "cohort_fraction", low=0, high=1, low_open=True, high_open=True
    )
    replicates = check_count(replicates, "replicates", minimum=4)
    rounding = check_count(rounding, "rounding")
    seed = check_count(seed, "seed", minimum=0)
    study = prepare_study(data, roles)
    m = _shadow_cohort_size(name, study.n_patients, cohort_fraction)
    cohorts, member = _shadow_cohorts(np.random.default_rng(seed), replicates, study.n_patients, m)
    facts = _patient_facts(study, min_patients=3)
    whole_shares = np.nanmean(facts.to_numpy(), axis=0)
    scored = _scored_facts(facts, whole_shares)
    whole_fit, runs = _generator_runs(name, data, roles, study, cohorts)
    parameters = list(roles.model.parameters)
    error = whole_fit.pk.error
    releases = _releases(runs, rounding)
    shares, cohort_shares = _shares(study, facts, runs, cohorts, member)
    references = _references(
        whole_fit, releases["unrounded"], parameters, whole_shares, cohort_shares
    )
    individual, modes_unfound = _random_effects(study, releases, parameters, error)
    values = _attack_scores(facts, scored, releases, shares, references, individual, parameters)
    summary, rounding_change = _summary_tables(values, member, seed)
    return GeneratorAttack(
        study=name,
        patients=study.n_patients,
        members=m,
        replicates=replicates,
        cohort_fraction=cohort_fraction,
        rounding=rounding,
        seed=seed,
        summary=summary,
        rounding_change=rounding_change,
        scores=_score_table(values, member, study.ids),
        shares=int(scored.sum()),
        random_effects=len(parameters),
        modes_unfound=modes_unfound,
        **_fit_findings([fit for fit, _ in runs]),
        estimates=_estimate_table(releases, parameters),
        shadow_off_by=_shadow_off_by(references),
    )


def refuse_unauditable(name: str, roles: PmxRoles) -> None:
    """Refuse a study whose release this audit cannot score.

    The population score reads every parameter's released variance, and each candidate's
    random effects under a diagonal Omega without covariate effects: a release built with
    ``random=`` (no variance for some parameters), ``effects=`` or ``correlated=`` would be
    scored against estimates it does not hold, or against the wrong model, and its AUC
    would say nothing. Such a release is refused with a ``ValueError`` naming the options,
    rather than audited wrongly.
    """
    chosen = {
        "random": roles.random,
        "effects": roles.effects or None,
        "correlated": roles.correlated,
    }
    chosen = {option: value for option, value in chosen.items() if value is not None}
    if chosen:
        listed = ", ".join(f"{option}={value!r}" for option, value in chosen.items())
        raise ValueError(
            f"study {name!r} is fitted with {listed}: the membership audit scores releases "
            "with a variance on every parameter and no covariate effects or correlation, so "
            "it cannot audit this release"
        )


def _shadow_cohort_size(name: str, n: int, cohort_fraction: float) -> int:
    """Members of each shadow cohort, refusing a fraction that leaves too few members or
    non-members."""
    m = round(cohort_fraction * n)
    if m < MIN_SHADOW_COHORT or n - m < 2:
        raise ValueError(
            f"cohort_fraction {cohort_fraction} puts {m} of {name}'s {n} patients in each "
            f"shadow cohort: it needs at least {MIN_SHADOW_COHORT} members and 2 non-members"
        )
    return m


def _shadow_cohorts(
    rng: np.random.Generator, replicates: int, n: int, m: int
) -> tuple[np.ndarray, np.ndarray]:
    """Each replicate's shadow cohort (the sorted positions of its ``m`` members), and the
    ``(replicates, n)`` mask of members."""
    cohorts = np.sort(rng.random((replicates, n)).argsort(axis=1)[:, :m], axis=1)
    member = np.zeros((replicates, n), dtype=bool)
    np.put_along_axis(member, cohorts, True, axis=1)
    return cohorts, member


def _generator_runs(
    name: str, data: pd.DataFrame, roles: PmxRoles, study: StudyEvents, cohorts: np.ndarray
) -> tuple[ModelFit, list[tuple[ModelFit, Fingerprint]]]:
    """The generator's fit on the whole study, and its fit and release of each shadow cohort;
    a study without a PK fit (nothing for the population score to read) is refused."""
    with warnings.catch_warnings():
        # An untrusted fit is counted, and scored as the generator would release it.
        warnings.simplefilter("ignore", FitWarning)
        whole_fit = synpmx_model_estimate(data, roles)
        if whole_fit.pk is None:
            raise ValueError(f"study {name!r} has no PK fit to attack")
        runs = []
        for cohort in cohorts:
            fit = synpmx_model_estimate(data[data[roles.id].isin(study.ids[cohort])], roles)
            runs.append((fit, model_fingerprint(fit)))
    return whole_fit, runs


def _releases(
    runs: list[tuple[ModelFit, Fingerprint]], rounding: int
) -> dict[str, dict[str, pd.DataFrame]]:
    """Each replicate's PK estimates (``typical``, ``omega``, ``residual``, a row per replicate),
    ``unrounded`` and ``released`` at ``rounding`` significant figures."""
    unrounded = {
        kind: pd.DataFrame([getattr(fit.pk, kind) for fit, _ in runs]).reset_index(drop=True)
        for kind in ("typical", "omega", "residual")
    }
    return {
        "unrounded": unrounded,
        "released": {
            kind: pd.DataFrame(round_significant(table.to_numpy(), rounding), columns=table.columns)
            for kind, table in unrounded.items()
        },
    }


def _shares(
    study: StudyEvents,
    facts: pd.DataFrame,
    runs: list[tuple[ModelFit, Fingerprint]],
    cohorts: np.ndarray,
    member: np.ndarray,
) -> tuple[dict[str, np.ndarray], np.ndarray]:
    """Each replicate's shares of the facts, ``released`` as its fingerprint holds them and
    ``unrounded`` as its cohort's, both NaN where the fingerprint releases none; and each
    cohort's own shares of every fact (the shadow-cohort reference's)."""
    released = np.array(
        [_released_shares(fp, facts, cohort) for (_, fp), cohort in zip(runs, cohorts, strict=True)]
    )
    cohort_shares = np.array([_cohort_shares(study, facts, row) for row in member])
    unrounded = np.where(np.isnan(released), np.nan, cohort_shares)
    return {"released": released, "unrounded": unrounded}, cohort_shares


def _references(
    whole_fit: ModelFit,
    unrounded: dict[str, pd.DataFrame],
    parameters: list[str],
    whole_shares: np.ndarray,
    cohort_shares: np.ndarray,
) -> dict[str, tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """The attacker's references for each replicate (typical values, variances and shares, a
    row per replicate): the whole study's, or the next replicate's (cyclically)."""
    replicates = len(cohort_shares)
    following = np.roll(np.arange(replicates), -1)
    return {
        "whole study": (
            np.tile(whole_fit.pk.typical[parameters].to_numpy(), (replicates, 1)),
            np.tile(whole_fit.pk.omega[parameters].to_numpy(), (replicates, 1)),
            np.tile(whole_shares, (replicates, 1)),
        ),
        "shadow cohort": (
            unrounded["typical"][parameters].to_numpy()[following],
            unrounded["omega"][parameters].to_numpy()[following],
            cohort_shares[following],
        ),
    }


def _random_effects(
    study: StudyEvents,
    releases: dict[str, dict[str, pd.DataFrame]],
    parameters: list[str],
    error: str,
) -> tuple[dict[str, np.ndarray], int]:
    """Every patient's log parameters under every replicate's release, ``(R, n, p)`` by release
    (one batch each), and how many empirical Bayes modes the search did not find."""
    individual, modes_unfound = {}, 0
    for release, tables in releases.items():
        eta, found = empirical_bayes_estimates(
            study, tables["typical"], tables["omega"], tables["residual"], error=error
        )
        modes_unfound += int((~found).sum())
        individual[release] = np.log(tables["typical"][parameters].to_numpy())[:, None] + eta
    return individual, modes_unfound


def _attack_scores(
    facts: pd.DataFrame,
    scored: np.ndarray,
    releases: dict[str, dict[str, pd.DataFrame]],
    shares: dict[str, np.ndarray],
    references: dict[str, tuple[np.ndarray, np.ndarray, np.ndarray]],
    individual: dict[str, np.ndarray],
    parameters: list[str],
) -> dict[tuple[str, str], dict[str, np.ndarray]]:
    """Every candidate's three scores, ``(R, n)``, by release and reference."""
    fact_values = facts.to_numpy()
    values = {}
    for release in ATTACK_RELEASES:
        typical = releases[release]["typical"][parameters].to_numpy()
        omega = releases[release]["omega"][parameters].to_numpy()
        for reference, (ref_typical, ref_omega, ref_shares) in references.items():
            share_score = _share_score(fact_values, scored, shares[release], ref_shares)
            population = _population_score(
                individual[release] - np.log(ref_typical)[:, None],
                typical[:, None],
                omega[:, None],
                ref_typical[:, None],
                ref_omega[:, None],
            )
            values[release, reference] = {
                "shares": share_score,
                "population": population,
                "combined": _combined_score(share_score, population),
            }
    return values


def _share_score(
    fact_values: np.ndarray, scored: np.ndarray, released: np.ndarray, reference: np.ndarray
) -> np.ndarray:
    """The shares score: each candidate's facts less the reference shares, weighted by how far
    each released share leans from its reference."""
    lean = np.where(scored & ~np.isnan(released), released - reference, 0)
    candidate = np.where(np.isnan(fact_values), 0.0, fact_values)
    known = ~np.isnan(fact_values)
    # A candidate with no record of a fact (no sample of an endpoint) adds nothing.
    own = np.where(known[None], candidate[None] - reference[:, None], 0.0)
    return np.einsum("rns,rs->rn", own, lean)


def _combined_score(share_score: np.ndarray, population: np.ndarray) -> np.ndarray:
    """The shares and population scores, each over its SD, summed."""
    combined = np.zeros_like(population)
    for part in (share_score, population):
        if part.std() > 0:  # a study with no share to score adds nothing
            combined = combined + part / part.std()
    return combined


def _summary_tables(
    values: dict[tuple[str, str], dict[str, np.ndarray]], member: np.ndarray, seed: int
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The summary (AUCs and true-positive rates by release, reference and score) and the
    rounding change (released less unrounded AUC, by reference and score), with their SEs."""
    replicates = member.shape[0]
    summary_rng = np.random.default_rng([seed, 1])
    rows, changes = [], []
    for reference in ATTACK_REFERENCES:
        neighbours = reference == "shadow cohort"
        for score in ATTACK_SCORES:
            terms = {}
            for release in ATTACK_RELEASES:
                s = values[release, reference][score]
                rows.append(
                    {"release": release, "reference": reference, "score": score}
                    | _summarise(s, member, neighbours, summary_rng)
                )
                members = s[member].reshape(replicates, -1)
                others = s[~member].reshape(replicates, -1)
                terms[release] = _replicate_terms(members, others)
            change = terms["released"][1] - terms["unrounded"][1]
            changes.append(
                {
                    "reference": reference,
                    "score": score,
                    "change": terms["released"][0] - terms["unrounded"][0],
                    "change_se": _mean_standard_error(change, neighbours),
                }
            )
    return pd.DataFrame(rows), pd.DataFrame(changes)


def _score_table(
    values: dict[tuple[str, str], dict[str, np.ndarray]], member: np.ndarray, ids: np.ndarray
) -> pd.DataFrame:
    """Every score as a long table (:attr:`GeneratorAttack.scores`)."""
    replicates, n = member.shape
    ids = np.asarray(ids, dtype=object)
    frames = [
        pd.DataFrame(
            {
                "replicate": np.repeat(np.arange(replicates), n),
                "patient": np.tile(ids, replicates),
                "member": member.ravel(),
                "release": release,
                "reference": reference,
                "score": score,
                "value": s.ravel(),
            }
        )
        for (release, reference), by_score in values.items()
        for score, s in by_score.items()
    ]
    return pd.concat(frames, ignore_index=True)


def _fit_findings(fits: list[ModelFit]) -> dict[str, object]:
    """What the shadow cohorts' fits report: the mean patients left out, the PK fits not to be
    trusted, and how many fits carry each diagnostic."""
    problems = [problem for fit in fits for problem in fit.pk.diagnostics]
    return {
        "left_out": float(np.mean([fit.privacy.left_out.patients for fit in fits])),
        "unconverged": int(sum(not fit.pk.converged for fit in fits)),
        "fit_problems": pd.Series(problems, dtype=object).value_counts(),
    }


def _estimate_table(
    releases: dict[str, dict[str, pd.DataFrame]], parameters: list[str]
) -> pd.DataFrame:
    """The PK estimates each release holds (:attr:`GeneratorAttack.estimates`)."""
    return pd.concat(
        {
            (release, kind): releases[release][kind][parameters]
            for release in ATTACK_RELEASES
            for kind in ("typical", "omega")
        },
        axis=1,
    ).sort_index(axis=1)


def _shadow_off_by(references: dict[str, tuple[np.ndarray, np.ndarray, np.ndarray]]) -> float:
    """Root mean square log-scale difference between the shadow cohorts' typical values and
    the whole study's (:attr:`GeneratorAttack.shadow_off_by`)."""
    shadow = np.log(references["shadow cohort"][0] / references["whole study"][0])
    return float(np.sqrt(np.mean(shadow**2)))


def equivalent_patients(attack: GeneratorAttack, reference: str) -> int:
    r"""The cohort size at which the simplified model's attack is as strong as on the shadow
    cohorts, to first order.

    A shadow cohort of :math:`m` of the study's :math:`n` patients is drawn without
    replacement. A member pulls a released mean by about :math:`\eta/m` against a non-member,
    as in the simplified model; but against the whole study's value the release wanders only
    by the variance :math:`\omega (n - m)/(m n)` of a sample mean from a finite population,
    not :math:`\omega / m`. The pull over the wander is that of a simplified cohort of
    :math:`m (n - m) / n` patients. A shadow-cohort reference wanders as much again, which
    doubles it.

    Parameters
    ----------
    attack : GeneratorAttack
        The attack.
    reference : {"whole study", "shadow cohort"}
        The attacker's reference.

    Returns
    -------
    int
        The equivalent cohort size, at least 1.
    """
    if not isinstance(attack, GeneratorAttack):
        raise TypeError(f"attack must be a GeneratorAttack, got {type(attack).__name__}")
    _check_choice(reference, "reference", ATTACK_REFERENCES)
    size = attack.members * (attack.patients - attack.members) / attack.patients
    return max(round(size * (2 if reference == "shadow cohort" else 1)), 1)


def simplified_prediction(
    attack: GeneratorAttack, patients: int, *, draws: int = 2000, seed: int = 1
) -> pd.DataFrame:
    """The simplified model's AUCs for a study's shares and population scores.

    The shares score is placed at :func:`~synpmx_lite.attacks.membership.attendance_attack` with as
    many independent visits as the study has scored shares, and the population score at
    :func:`~synpmx_lite.attacks.membership.population_attack` with an exact reference (its five
    random effects are more than any shipped study's model has, so that prediction is high for
    them).

    Parameters
    ----------
    attack : GeneratorAttack
        The attack whose study is placed (its ``shares``).
    patients : int
        Cohort size of the simplified model (for example ``attack.members``, or
        :func:`~synpmx_lite.attacks.membership_generator.equivalent_patients`).
    draws : int, default 2000
        Simulated studies.
    seed : int, default 1
        Seed of the simulation.

    Returns
    -------
    pandas.DataFrame
        Index ``shares`` and ``population``; columns ``released`` and ``unrounded`` (for the
        shares: with the fingerprint's floor, and without it) and their ``_se``. The shares row
        is NaN where the study scores no share.
    """
    if not isinstance(attack, GeneratorAttack):
        raise TypeError(f"attack must be a GeneratorAttack, got {type(attack).__name__}")
    patients = check_count(patients, "patients")
    draws = check_count(draws, "draws", minimum=2)
    rng = np.random.default_rng(check_count(seed, "seed", minimum=0))
    population = population_attack(patients, 0.0, draws=draws, rng=rng)
    rows = {
        "shares": dict.fromkeys(["released", "released_se", "unrounded", "unrounded_se"], np.nan),
        "population": {
            "released": population.released,
            "released_se": population.released_se,
            "unrounded": population.unrounded,
            "unrounded_se": population.unrounded_se,
        },
    }
    if attack.shares:
        shares = attendance_attack(patients, attack.shares, 0.0, draws=draws, rng=rng)
        rows["shares"] = {
            "released": shares.released,
            "released_se": shares.released_se,
            "unrounded": shares.without_floor,
            "unrounded_se": shares.without_floor_se,
        }
    return pd.DataFrame.from_dict(rows, orient="index")
