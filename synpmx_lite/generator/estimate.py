r"""The model generator's estimation and its fingerprint: what is fitted, and what is released.

:func:`synpmx_model_estimate` fits the population PK model and the model of each continuous PD
endpoint to a study, in rounds that leave out the patients who move a released estimate too
far (:mod:`synpmx_lite.generator.influence`).
:func:`model_fingerprint` builds from that fit, through the allowlist of
:mod:`synpmx_lite.generator.release`, everything that is released, applying the rules of
:mod:`synpmx_lite.generator.protections`; :func:`model_privacy_checks` hands the released JSON and
the source study to the independent checks of :mod:`synpmx_lite.generator.checks`.

The protections, as the R generator states them, with where this engine is stricter. They are
named, not numbered, so that they are not confused with the checks P1-P5 that verify them; each
says which checks those are.

* **Allowlist** (P1, P2). No patient record leaves the study: the fingerprint holds only the
  allowlisted population- and arm-level fields
  (:data:`synpmx_lite.generator.release.FINGERPRINT_FIELDS`). Arms are released under the
  engine's own labels (``arm 1``, ...), and a study whose identifiers could be taken for one of
  the engine's labels is refused.
* **Single-value rule** (P3). No single patient's value is used: the LOQ is half the lowest
  value at least ``min_arm_patients`` patients reached, rounded down to 1, 2 or 5 times a power
  of ten (and further down where one or two patients' lowest values equal it); the reference
  weight is the median at one significant figure, or where one or two patients' weights equal it
  the nearest value at one figure that at least ``min_arm_patients`` share (without one, 70 kg);
  planned doses where patients' doses differ are the arm mean at two figures, durations are
  medians at two figures, and dose and visit times are medians (a visit with a nominal time:
  that time) at two figures, each moved to the nearest value on its grid that no patient, or
  at least ``min_arm_patients``, hold
  (:func:`synpmx_lite.generator.protections.protected_value`). Where two figures would merge
  or swap distinct times of a period (a trough, the dose and the next peak past 1,000 h),
  those times are released as increasing numbers on a finer grid of one two-figure cell,
  placed by their order alone, so that no figure past two carries a patient's time (a study
  whose times that leaves out of order within :data:`MAX_TIME_FIGURES` is refused).
* **Threshold** (P3, P4). At least ``min_arm_patients`` patients behind every frequency, on both
  sides: arms, visits, endpoints and planned doses are kept only where that many reached them;
  the released cohort is the patients of the kept arms, so that the cohort size is the sum of
  the arm sizes and no subtraction gives a dropped arm; an attendance rate is set to 1 where
  fewer than that many missed a visit and to 0 where fewer attended one, each scheduled visit
  counted once per patient; a dose-change rate is set to 0 where fewer changed their dose and to
  1 where fewer kept it; a category level held by fewer than ``min_category_patients`` is folded
  into the most common level, and a covariate left with fewer than two levels is withheld; the
  same for the levels of a yes/no or graded endpoint (observed in fewer patients), pooled over
  visits; a keep column's value on an arm is written as missing where fewer than
  ``min_arm_patients`` of the arm's patients hold it. Category frequencies count the released
  cohort, left-out patients included, so that no pair of released counts differs by the left-out
  group.
* **Trimming** (P3). Covariate summaries without their extremes: mean and SD on the log scale
  after setting aside the highest and lowest 5 % of patients (at least one each side), the SD
  divided by the SD of a normal truncated at the same quantiles; withheld unless at least
  ``min_arm_patients`` kept patients remain once the extremes are set aside.
* **Rounding** (P3). One significant figure for PK and PD estimates, two for covariate summaries
  and shares.
* **Influence screen** (P5). How far leaving out each patient moves each released estimate (see
  :func:`synpmx_lite.generator.influence.influence_moves`, and for the PD models, read from
  exact leave-one-out refits with the second bar on shape parameters,
  :func:`synpmx_lite.generator.influence.pd_influence_moves`), with rounds that leave out the
  patients who move one by 15 or more from every model's estimate, while they number at most a
  tenth of the cohort (so nobody below 10 patients).

References
----------
Hundepool A, Domingo-Ferrer J, Franconi L, et al. Statistical Disclosure Control. Wiley; 2012.
"""

from __future__ import annotations

import copy
import dataclasses
import hashlib
import math
import pickle
import threading
import warnings
import weakref
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pandas as pd

from .._validation import check_count, check_real
from ..pmx.pd import PdFit, fit_pd_endpoint, pd_endpoints, pd_loo_refits
from ..pmx.population import FitWarning, PopulationFit, fit_population
from ..pmx.study import (
    DATASETS,
    PmxRoles,
    StudyEvents,
    _correlated_names,
    _effect_formulas,
    _random_names,
    load_dataset,
    prepare_study,
)
from ..rounding import round_significant
from .checks import CHECK_QUESTIONS, _release_untrusted_fits, read_release, release_checks
from .design import dose_changed_patients, scheduled_visits
from .influence import (
    MAX_LEFT_OUT_SHARE,
    LeftOut,
    PrivacyReport,
    influence_moves,
    influence_table,
    jackknife_moves,
    move_band,
    pd_influence_moves,
)
from .ledger import P6_QUESTION, between_releases
from .protections import (
    dose_route,
    few_values,
    folded_counts,
    identifier_like,
    loq_floor,
    numeric_code,
    protected_value,
    share_two_sided,
    trimmed_core_size,
    trimmed_log_summary,
)
from .release import Fingerprint, arm_label, engine_label_clashes

__all__ = [
    "ModelFit",
    "fit_status",
    "model_fingerprint",
    "model_privacy_checks",
    "privacy_checks_across_studies",
    "release_refusal",
    "synpmx_model_estimate",
]


#: The most significant figures a released dose or visit time may carry: a study whose crowded
#: times cannot be put in order within one two-figure cell at this many is refused.
MAX_TIME_FIGURES = 5

#: The reference weight of a study where no weight at one figure is shared by enough patients:
#: the standard adult of allometric scaling (70 kg), which every study could release.
STANDARD_WEIGHT = 70.0

#: Releases a time of a period: ``(period, center, every source value, their patients)`` to
#: the released value.
TimeRule = Callable[[int, float, np.ndarray, np.ndarray], float]


def _round(value: float, figures: int) -> float:
    return float(round_significant(float(value), figures))


# --- The fit ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ModelFit:
    """What :func:`synpmx_model_estimate` returns: stays in the secure environment.

    Attributes
    ----------
    study : StudyEvents
        The source study, every patient (dosing, visit and arm summaries read all of them).
    kept : numpy.ndarray
        True for the patients behind the PK fit and covariate summaries.
    pk : PopulationFit or None
        The population PK fit on the kept patients (None for a study without one).
    pd : dict
        The population model of each continuous PD endpoint (:class:`synpmx_lite.pmx.pd.PdFit`)
        on the kept patients, by endpoint.
    privacy : PrivacyReport
        Influence readings and the patients left out.
    seed : int
        The default seed of :func:`synpmx_lite.generator.generate.synpmx_model_generate`.
    min_arm_patients, min_category_patients : int
        The thresholds of the threshold protection.
    earlier_releases : tuple of str
        The JSON of the earlier releases of the same study the release is built against.
    """

    study: StudyEvents
    kept: np.ndarray
    pk: PopulationFit | None
    pd: dict[str, PdFit]
    privacy: PrivacyReport
    seed: int
    min_arm_patients: int
    min_category_patients: int
    earlier_releases: tuple = ()

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
        """The continuous covariates: numeric ones not declared categorical, except those with
        few values (:func:`synpmx_lite.generator.protections.few_values`), which are never
        summarised."""
        return _continuous(self.roles, self.study.covariates)

    @property
    def categorical(self) -> list[str]:
        """The categorical covariates: declared so, text, or numeric codes
        (:func:`synpmx_lite.generator.protections.numeric_code`)."""
        return _categorical(self.roles, self.study.covariates)

    def __str__(self) -> str:
        largest = self.privacy.largest
        models = "".join(f"\n{model}" for model in self.pd.values())
        return (
            f"{self.pk or 'no PK model'}{models}\n{self.n_source} patients, "
            f"{self.privacy.left_out.patients} left out "
            f"in {self.privacy.left_out.rounds} round(s); largest move: {largest['estimate']}, "
            f"{move_band(largest['largest'], self.privacy.review, self.privacy.fail)} "
            f"{largest['scale']} ({largest['verdict']})"
        )


def _numeric(roles: PmxRoles, covariates: pd.DataFrame) -> list[str]:
    """Numeric covariates not declared categorical."""
    return [
        c
        for c in roles.covariates
        if c not in roles.categorical and pd.api.types.is_numeric_dtype(covariates[c])
    ]


def _continuous(roles: PmxRoles, covariates: pd.DataFrame) -> list[str]:
    """Numeric covariates not declared categorical with more than a code's values."""
    numeric = _numeric(roles, covariates)
    return [c for c in numeric if not few_values(covariates[c].to_numpy(dtype=float))]


def _categorical(roles: PmxRoles, covariates: pd.DataFrame) -> list[str]:
    """Covariates released as categories: declared so, text, or numeric codes; a numeric
    column with few values that is not a code is neither, and is withheld."""
    numeric = _numeric(roles, covariates)
    return [
        c
        for c in roles.covariates
        if c not in numeric or numeric_code(covariates[c].to_numpy(dtype=float))
    ]


def _refuse_identifiers(study: StudyEvents) -> None:
    """Refuse a study that would put an identifier in the release or a synthetic dataset."""
    clashes = engine_label_clashes(study.ids)
    if clashes:
        raise ValueError(
            f"data has subject IDs that read like the engine's own labels ({clashes[:3]}): "
            "'syn-...' is reserved for synthetic patients and 'arm <number>' for released "
            "arms; rename them"
        )
    roles, covariates = study.roles, study.covariates
    columns = {name: covariates[name] for name in _categorical(roles, covariates)}
    if roles.arm:
        columns[roles.arm] = study.arms
    for name, levels in columns.items():
        if identifier_like(levels):
            raise ValueError(
                f"column {name!r} has {levels.nunique()} levels for {study.n_patients} "
                "patients: it identifies patients (or is continuous) and cannot be released "
                "as a category or arm; leave it out of the roles"
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
    residual_readings: bool = True,
    earlier_releases: list | None = None,
    random: tuple[str, ...] | list[str] | None = None,
    correlated: tuple[str, str] | list[str] | None = None,
    effects: tuple[str, ...] | list[str] | None = None,
) -> ModelFit:
    """Fit the population PK and PD models and read each patient's influence, in rounds.

    Each round fits the PK model (FOCE-I, :func:`synpmx_lite.pmx.population.fit_population`) and
    the model of each continuous PD endpoint (:func:`synpmx_lite.pmx.pd.fit_pd_endpoint`) to the
    patients kept so far, and reads how far each patient moves each released estimate
    (:func:`synpmx_lite.generator.influence.influence_moves` for the PK model and the covariates,
    leave-one-out refits and :func:`synpmx_lite.generator.influence.pd_influence_moves` for the PD
    models, whose shape parameters must also clear the second bar). With
    ``drop_influential``, the patients who move any estimate by ``review`` or more are left
    out of every estimate (PK fit, every PD fit and continuous covariate summaries; they stay
    in the dosing, visit, arm and category summaries) and the next round runs; rounds stop
    when nobody is flagged, or when leaving out the newly flagged would take the patients left
    out past a tenth of the cohort, in which case those patients stay in and the checks report
    their move. Below 10 patients nobody can be left out. A round whose PK fit fails its
    diagnostics after one whose fit passed them is undone, its patients kept and reported.

    Parameters
    ----------
    data : pandas.DataFrame
        The event table.
    roles : PmxRoles
        Its roles (:func:`synpmx_lite.pmx.study.pmx_roles`), with the PK model to fit.
    seed : int, default 1
        The estimation is deterministic; the seed is stored as the default seed of
        :func:`synpmx_lite.generator.generate.synpmx_model_generate`.
    drop_influential : bool, default True
        Whether to leave influential patients out; False keeps everyone.
    error : str, optional
        Residual error model (see :func:`synpmx_lite.pmx.population.fit_population`).
    min_arm_patients, min_category_patients : int, default 3
        Thresholds of the threshold protection (patients on each side of a frequency).
    review, fail : float, default 15 and 30
        Move at which an estimate is flagged for review, and fails.
    residual_readings : bool, default True
        Whether each patient's move of the residual errors is read too (by the infinitesimal
        jackknife, :func:`synpmx_lite.generator.influence.jackknife_moves`) and held to the
        same bars, counted only as far as it is also large against the error's standard
        error (the SE bar of PD shape parameters: ``review`` at one standard error, ``fail``
        at two). Without that bar an additive error the data barely determine (mavoglurant's
        under combined error) is moved past ``review`` by most patients, each by a small
        fraction of its own uncertainty. False leaves the residual errors unread, as releases
        made before the reading existed; P5 then reports them as released estimates no reading
        covers, and fails.
        Covariate effects (the roles' ``effects``) are always read.
    earlier_releases : list of Fingerprint or str, optional
        The earlier releases of the same study (other data cuts): the release ledger. The
        fingerprint then withholds every categorical covariate whose level counts changed
        since one of them by one to ``k - 1`` patients (a frequency withheld says nothing of
        the new patients; coarsening would still leave the change readable below 50
        patients), and is refused where the cohort, an arm or the dose-change count changed
        by so few, because those counts are what every other number rests on and nothing
        can be released safely until ``k`` more patients have joined (check P6,
        :func:`synpmx_lite.generator.ledger.between_releases`).
    random : sequence of str, optional
        The PK parameters with a random effect (as :func:`synpmx_lite.pmx.study.pmx_roles`
        takes them; default the roles' own). A parameter without one releases no variance,
        and its typical value is read by the infinitesimal jackknife
        (:func:`synpmx_lite.generator.influence.jackknife_moves`).
    correlated : pair of str, optional
        Two PK parameters with a random effect whose etas are correlated (as
        :func:`synpmx_lite.pmx.study.pmx_roles` takes them). The fingerprint releases their
        correlation (``correlation``), and each patient's move of it is read by the
        infinitesimal jackknife.
    effects : sequence of str, optional
        The covariate effects on PK parameters, as formulas (``"cl ~ WT/70"``,
        :func:`synpmx_lite.pmx.study.pmx_roles` takes them, each naming one of the roles'
        covariates; default the roles' own, and ``()`` fits none). The fingerprint releases
        each, and each patient's move of each is read.

    Returns
    -------
    ModelFit
        The fit, with ``n_source`` and ``privacy.left_out``.

    Raises
    ------
    ValueError
        Besides bad arguments and data (see :func:`synpmx_lite.pmx.study.prepare_study`): subject
        IDs that read like the engine's labels (``syn-...``, ``arm 1``), or a categorical
        covariate or arm column with about as many levels as patients (an identifier).
    """
    if isinstance(seed, bool) or not isinstance(seed, int | np.integer):
        raise TypeError(f"seed must be an integer, got {seed!r}")
    if seed < 0:
        raise ValueError(f"seed must be a non-negative integer, got {seed}")
    if not isinstance(drop_influential, bool):
        raise TypeError(f"drop_influential must be a bool, got {drop_influential!r}")
    min_arm_patients = check_count(min_arm_patients, "min_arm_patients")
    min_category_patients = check_count(min_category_patients, "min_category_patients")
    review = check_real(review, "review", low=0, low_open=True)
    fail = check_real(fail, "fail", low=review)
    if random is not None:
        if not isinstance(roles, PmxRoles):
            raise TypeError(f"roles must be a PmxRoles, got {type(roles).__name__}")
        roles = dataclasses.replace(roles, random=_random_names(random, roles.model))
    if correlated is not None:
        if not isinstance(roles, PmxRoles):
            raise TypeError(f"roles must be a PmxRoles, got {type(roles).__name__}")
        pair = _correlated_names(correlated, roles.model, roles.random)
        roles = dataclasses.replace(roles, correlated=pair)
    if effects is not None:
        if not isinstance(roles, PmxRoles):
            raise TypeError(f"roles must be a PmxRoles, got {type(roles).__name__}")
        roles = dataclasses.replace(roles, effects=_effect_formulas(effects, roles.covariates))
    study = prepare_study(data, roles)
    _refuse_identifiers(study)
    refusal = release_refusal(study)
    if refusal is not None:
        raise ValueError(refusal)
    if not isinstance(residual_readings, bool):
        raise TypeError(f"residual_readings must be a bool, got {residual_readings!r}")
    kept, last, history = _influence_rounds(
        study,
        error,
        drop_influential,
        min_arm_patients=min_arm_patients,
        review=review,
        fail=fail,
        residual_readings=residual_readings,
    )
    return ModelFit(
        study=study,
        kept=kept,
        pk=last.pk,
        pd=last.pd,
        privacy=_privacy_report(study, kept, last, history, review, fail),
        seed=int(seed),
        min_arm_patients=min_arm_patients,
        min_category_patients=min_category_patients,
        earlier_releases=_ledger(earlier_releases),
    )


def _ledger(earlier: list | None) -> tuple:
    """The earlier releases as JSON texts."""
    if earlier is None:
        return ()
    if not isinstance(earlier, list | tuple):
        raise TypeError(f"earlier_releases must be a list of releases, got {earlier!r}")
    texts = []
    for release in earlier:
        if isinstance(release, Fingerprint):
            release = release.to_json()
        if not isinstance(release, str):
            raise TypeError(
                f"earlier_releases must hold Fingerprints or JSON texts, got {release!r}"
            )
        texts.append(Fingerprint.from_json(release).to_json())
    return tuple(texts)


@dataclass(frozen=True)
class _Round:
    """One round's fits on the patients kept so far, their moves of every estimate, and how
    many leave-one-out refits did not converge, by PD endpoint (those with any) and of the
    PK fit's exact refits."""

    pk: PopulationFit | None
    pd: dict[str, PdFit]
    moves: pd.DataFrame
    unconverged_refits: dict[str, int]
    unconverged_pk_refits: tuple = ()


def _influence_rounds(
    study: StudyEvents,
    error: str | None,
    drop_influential: bool,
    *,
    min_arm_patients: int,
    review: float,
    fail: float,
    residual_readings: bool,
) -> tuple[np.ndarray, _Round, list[dict]]:
    """The patients kept, the last round and a record of each round: rounds run while they
    flag patients, unless ``drop_influential`` is False or the flagged would take the patients
    left out past a tenth of the cohort. A round whose PK fit fails its diagnostics after one
    whose fit passed them is undone: leaving out the patients who determine an estimate (an
    additive error's low concentrations) can put it at a bound, so they stay in, and the
    round before is the last."""
    n = study.n_patients
    kept = np.ones(n, dtype=bool)
    continuous = _continuous(study.roles, study.covariates)
    history = []
    previous = None
    while True:
        last = _influence_round(
            study.subset(kept),
            study.pk_endpoint,
            continuous,
            error,
            min_arm_patients,
            review,
            fail,
            residual_readings=residual_readings,
        )
        if previous is not None and _trusted(previous[1]) and not _trusted(last):
            return previous[0], previous[1], history
        flagged = last.moves.index[(last.moves >= review).any(axis=1).to_numpy()]
        history.append(
            {
                "round": len(history) + 1,
                "patients": int(kept.sum()),
                "flagged": len(flagged),
                "largest": float(last.moves.to_numpy().max()),
                "estimate": last.moves.max(axis=0).idxmax(),
            }
        )
        left_out = n - int(kept.sum())
        too_many = left_out + len(flagged) > MAX_LEFT_OUT_SHARE * n
        if not drop_influential or len(flagged) == 0 or too_many:
            return kept, last, history
        previous = (kept.copy(), last)
        kept &= ~pd.Index(study.ids).isin(flagged)


def _trusted(round_: _Round) -> bool:
    """Whether a round's PK fit (if any) converged and reports no diagnostic."""
    pk = round_.pk
    return pk is None or (pk.converged and not pk.diagnostics)


def _influence_round(
    subset: StudyEvents,
    pk_label: str | None,
    continuous: list[str],
    error: str | None,
    min_arm_patients: int,
    review: float,
    fail: float,
    *,
    residual_readings: bool,
) -> _Round:
    """The PK and PD fits on ``subset`` and how far each of its patients moves each estimate
    (PD moves from leave-one-out refits)."""
    pk = fit_population(subset, error=error) if subset.roles.fit_pk else None
    moves = influence_moves(pk, subset.covariates, continuous, pk_label=pk_label, ids=subset.ids)
    kinds = ("residual", "effect", "typical") if residual_readings else ("effect", "typical")
    without_eta = pk is not None and len(pk.random) < len(pk.model.parameters)
    correlated = pk is not None and pk.correlated is not None
    kinds += ("correlation",) if correlated else ()
    unconverged_pk_refits = ()
    if pk is not None and (residual_readings or pk.effect_terms or without_eta or correlated):
        jackknife, unconverged_pk_refits = jackknife_moves(
            subset, pk, pk_label=pk_label, exact_from=review / 2, kinds=kinds, se_bar=(review, fail)
        )
        moves = moves.join(jackknife)
    pd_fits = _fit_pd(subset, min_arm_patients)
    unconverged_refits = {}
    for name, model in pd_fits.items():
        refits = pd_loo_refits(model)
        pd_moves = pd_influence_moves(model, refits, review=review, fail=fail)
        moves = moves.join(pd_moves).fillna(0.0)
        if not refits["converged"].all():
            unconverged_refits[name] = int((~refits["converged"]).sum())
    return _Round(
        pk=pk,
        pd=pd_fits,
        moves=moves,
        unconverged_refits=unconverged_refits,
        unconverged_pk_refits=unconverged_pk_refits,
    )


def _privacy_report(
    study: StudyEvents,
    kept: np.ndarray,
    last: _Round,
    history: list[dict],
    review: float,
    fail: float,
) -> PrivacyReport:
    """The last round's influence readings, the patients left out and the rounds."""
    return PrivacyReport(
        left_out=LeftOut(
            patients=study.n_patients - int(kept.sum()),
            ids=tuple(study.ids[~kept]),
            rounds=len(history),
        ),
        influence=influence_table(last.pk, last.moves, review, fail),
        moves=last.moves,
        rounds=pd.DataFrame(history),
        review=review,
        fail=fail,
        unconverged_refits=last.unconverged_refits,
        unconverged_pk_refits=last.unconverged_pk_refits,
    )


def _fit_pd(study: StudyEvents, min_patients: int) -> dict[str, PdFit]:
    """The model of every continuous PD endpoint that at least ``min_patients`` patients have."""
    fits = {}
    for endpoint in pd_endpoints(study):
        rows = study.observations[study.observations["endpoint"].astype(str) == endpoint]
        if rows["patient"].nunique() >= max(min_patients, 3):
            fits[endpoint] = fit_pd_endpoint(study, endpoint)
    return fits


# --- The release ------------------------------------------------------------------------------


def _arms_kept(fit: ModelFit) -> list:
    """The arms with at least ``min_arm_patients`` patients: most patients first, then in order
    of first appearance."""
    arms = fit.study.arms
    sizes = arms.value_counts(sort=False).reindex(pd.unique(arms))
    order = sorted(range(len(sizes)), key=lambda i: (-sizes.iloc[i], i))
    return [sizes.index[i] for i in order if sizes.iloc[i] >= fit.min_arm_patients]


def _arm_release(fit: ModelFit, arms: list, release_time: TimeRule) -> list:
    """Each kept arm: its size and the planned doses at least ``min_arm_patients`` reached,
    each with the route most of the arm's patients took in its period
    (:func:`~synpmx_lite.generator.protections.dose_route`), their times released by
    ``release_time``."""
    study, threshold = fit.study, fit.min_arm_patients
    doses = study.doses.copy()
    doses["arm"] = study.arms.to_numpy()[doses["patient"]]
    doses["index"] = doses.groupby(["patient", "period"]).cumcount()
    owners = doses["patient"].to_numpy()

    def protected(center: float, column: str, figures: int, *, positive: bool = False) -> float:
        return protected_value(
            center,
            doses[column].to_numpy(),
            owners,
            figures=figures,
            min_patients=threshold,
            positive=positive,
        )

    released = []
    for position, arm in enumerate(arms):
        planned, arm_doses = [], doses[doses["arm"] == arm]
        period_routes = {
            period: dose_route(
                np.where(group["central"], "iv", "oral"), group["patient"], min_patients=threshold
            )
            for period, group in arm_doses.groupby("period")
        }
        for (period, index), group in arm_doses.groupby(["period", "index"]):
            if group["patient"].nunique() < threshold:
                continue
            route = period_routes[period]
            amounts = group["amount"]
            amount = (
                float(amounts.iloc[0])
                if amounts.nunique() == 1
                else protected(amounts.mean(), "amount", 2, positive=True)
            )
            planned.append(
                {
                    "period": int(period),
                    "index": int(index),
                    "time": release_time(
                        int(period), group["time"].median(), doses["time"].to_numpy(), owners
                    ),
                    "amount": amount,
                    "duration": protected(group["duration"].median(), "duration", 2),
                    "route": route,
                }
            )
        released.append(
            {
                "arm": arm_label(position),
                "patients": int((study.arms == arm).sum()),
                "doses": planned,
                "keep": _keep_values(fit, arm),
            }
        )
    return released


def _keep_values(fit: ModelFit, arm: object) -> dict:
    """Each keep column's value on an arm: its most common value among the arm's patients,
    None (missing) where fewer than ``min_arm_patients`` of them hold it."""
    values = fit.study.covariates.loc[(fit.study.arms == arm).to_numpy(), list(fit.roles.keep)]
    kept = {}
    for column in fit.roles.keep:
        counts = values[column].dropna().value_counts(sort=True)
        held = len(counts) and counts.iloc[0] >= fit.min_arm_patients
        kept[column] = _plain(counts.index[0]) if held else None
    return kept


def _dose_change(fit: ModelFit, cohort: np.ndarray) -> float:
    """The share of the cohort with a dose unlike their previous one in the same period."""
    doses = fit.study.doses[fit.study.doses["patient"].isin(cohort)]
    changed = dose_changed_patients(doses).size
    return share_two_sided(changed, cohort.size, fit.min_arm_patients)


def _endpoint_release(fit: ModelFit, cohort: np.ndarray, release_time: TimeRule) -> dict:
    """Per endpoint at least ``min_arm_patients`` of the cohort have: attendance, visits (their
    times released by ``release_time``), LOQ."""
    study, threshold = fit.study, fit.min_arm_patients
    released = {}
    for endpoint, every in study.observations.groupby("endpoint"):
        rows = every[every["patient"].isin(cohort)]
        patients = rows["patient"].unique()
        if patients.size < threshold:
            continue
        scheduled, visits = scheduled_visits(rows, min_patients=threshold)
        attended = scheduled.groupby("patient").size().reindex(patients, fill_value=0)
        missed = int((attended < len(visits)).sum())
        attended_any = int((attended > 0).sum())
        attendance = 1.0
        if missed >= threshold:
            attendance = (
                _round(attended.sum() / (patients.size * len(visits)), 2)
                if attended_any >= threshold
                else 0.0
            )
        times = every["time"].to_numpy(float)
        owners = every["patient"].to_numpy()
        if study.roles.nominal_time:
            times = np.concatenate([times, every["visit"].to_numpy(float)])
            owners = np.concatenate([owners, every["patient"].to_numpy()])
        visit_times = []
        for (period, visit), group in scheduled.groupby(["period", "visit"]):
            # A nominal time is the protocol's; otherwise the median of the patients' times.
            center = visit if study.roles.nominal_time else group["time"].median()
            visit_times.append([int(period), release_time(int(period), center, times, owners)])
        values = every["dv"].to_numpy()
        if study.roles.log_dv and endpoint == study.pk_endpoint:
            values = np.exp(values)
        positive = every.assign(value=values)[values > 0]
        lowest = positive.groupby("patient")["value"].min().to_numpy()
        loq = loq_floor(lowest, min_patients=threshold) if lowest.size >= threshold else None
        released[str(endpoint)] = {
            "attendance": float(attendance),
            "visits": visit_times,
            "loq": loq,
        }
    return released


def _crowded_runs(period: pd.DataFrame) -> tuple[list[np.ndarray], pd.DataFrame]:
    """A period's distinct centres, sorted, in runs: neighbours whose two-figure values meet
    or pass each other (or one centre given two values) share a run; every other centre is a
    run of its own. Also each centre's smallest and largest two-figure value."""
    spans = period.groupby("center")["released"].agg(["min", "max"])  # sorted by center
    clash = spans["max"].to_numpy()[:-1] >= spans["min"].to_numpy()[1:]
    starts = np.flatnonzero(np.r_[True, ~clash])
    return np.split(spans.index.to_numpy(), starts[1:]), spans


def _spread(anchor: float, count: int, above: float, period: int, center: float) -> list[float]:
    """``count`` increasing values above ``above`` that read ``anchor`` at two figures, at the
    fewest figures (at least two) that hold them, as near ``anchor`` as they fit."""
    if anchor <= 0 and count > 1:
        raise ValueError(f"times at {center:g} of period {period} merge at 0: cannot be released")
    magnitude = math.floor(math.log10(anchor)) if anchor > 0 else 0
    for figures in range(2, MAX_TIME_FIGURES + 1):
        # Every number at `figures` figures within two units of the anchor's second figure,
        # on both sides of a power of ten.
        fine = 10.0 ** (magnitude - figures)
        reach = np.arange(-2 * 10 ** (figures - 1), 2 * 10 ** (figures - 1) + 1)
        values = np.unique(round_significant(anchor + reach * fine * 10, figures))
        values = np.unique(np.r_[values, round_significant(anchor + reach * fine, figures)])
        values = values[
            (values > above) & np.isclose(round_significant(values, 2), anchor, atol=1e-12)
        ]
        if values.size >= count:
            first = np.searchsorted(values, anchor) - (count - 1) // 2
            first = int(np.clip(first, 0, values.size - count))
            return [float(v) for v in values[first : first + count]]
    raise ValueError(
        f"times from {center:g} of period {period} cannot be put in order above the period's "
        f"earlier times within one two-figure cell at {MAX_TIME_FIGURES} significant figures "
        "or fewer (MAX_TIME_FIGURES): the study cannot be released"
    )


def _ordered_times(points: list[tuple[int, float, float]]) -> list[float]:
    """The released time of each ``(period, centre, two-figure value)``: the two-figure value,
    except in a crowded run, whose times are spread in order over the grid of their anchor's
    cell (see :func:`_timed_release`)."""
    frame = pd.DataFrame(points, columns=["period", "center", "released"])
    released = {}
    for period, rows in frame.groupby("period"):
        runs, spans = _crowded_runs(rows)
        above = -math.inf
        for run in runs:
            anchor = float(spans.loc[run[(len(run) - 1) // 2], "min"])
            values = _spread(anchor, len(run), above, int(period), float(run[0]))
            released.update({(period, c): v for c, v in zip(run, values, strict=True)})
            above = values[-1]
    return [float(released[p, c]) for p, c, _ in points]


def _time_rule(released: list, points: list, min_patients: int) -> TimeRule:
    """Releases the k-th time it is called for as ``released[k]`` (where the list is that
    long) or at two figures, protected by the single-value rule, and records its centre and
    two-figure value in ``points``."""

    def release_time(period: int, center: float, values, owners) -> float:
        value = protected_value(center, values, owners, figures=2, min_patients=min_patients)
        points.append((period, float(center), value))
        return released[len(points) - 1] if len(points) <= len(released) else value

    return release_time


def _timed_release(fit: ModelFit, arms: list, cohort: np.ndarray) -> tuple[list, dict]:
    """The arms' planned doses and the endpoints, every dose and visit time at two significant
    figures, protected by the single-value rule, except where two figures would merge or swap
    times of a period.

    Such crowded times form a run (neighbouring distinct times whose two-figure values meet
    or pass); a run of ``m`` times is released as ``m`` increasing values that all read, at
    two figures, as the two-figure value of the run's middle time (its anchor), above the
    values of the period's earlier runs, on the coarsest grid (fewest figures, at least
    two, at most :data:`MAX_TIME_FIGURES`) that holds them, centred on the anchor as far
    as they fit. The released values are thus a function of the two-figure values, the
    times' order and how many they are: the extra figures say where a time stands among its
    neighbours, never where a patient's time lies within its two-figure cell. The order itself
    is released: where a neighbour is an exact protocol time, a median's place beside it
    bounds the median by it.
    """
    points: list[tuple[int, float, float]] = []
    release_time = _time_rule([], points, fit.min_arm_patients)
    arms_released, endpoints = (
        _arm_release(fit, arms, release_time),
        _endpoint_release(fit, cohort, release_time),
    )
    released = _ordered_times(points)
    if released == [value for _, _, value in points]:
        return arms_released, endpoints
    release_time = _time_rule(released, [], fit.min_arm_patients)
    return _arm_release(fit, arms, release_time), _endpoint_release(fit, cohort, release_time)


def _covariate_release(fit: ModelFit, cohort: np.ndarray) -> tuple[dict, dict, float | None]:
    """Continuous summaries of the kept patients, category frequencies of the cohort, and the
    reference weight."""
    study, threshold = fit.study, fit.min_arm_patients
    kept = study.covariates[fit.kept]
    every = np.arange(study.n_patients)
    continuous = {}
    if trimmed_core_size(len(kept)) >= threshold:
        for name in fit.continuous:
            meanlog, sdlog = trimmed_log_summary(kept[name].to_numpy(dtype=float))
            continuous[name] = {
                "geometric_mean": protected_value(
                    math.exp(meanlog),
                    study.covariates[name].to_numpy(dtype=float),
                    every,
                    figures=2,
                    min_patients=threshold,
                    positive=True,
                ),
                "sdlog": _round(sdlog, 2),
            }
    categories = {}
    for name in fit.categorical:
        counts = folded_counts(study.covariates[name].iloc[cohort], fit.min_category_patients)
        if len(counts):
            categories[name] = [
                [_plain(level), _round(c / counts.sum(), 2)] for level, c in counts.items()
            ]
    weight = fit.roles.weight
    reference = (
        _reference_weight(study.covariates[weight], kept[weight], threshold) if weight else None
    )
    return continuous, categories, reference


def _reference_weight(weights: pd.Series, kept: pd.Series, threshold: int) -> float | None:
    """The kept patients' median weight at one figure where no one to ``threshold - 1``
    patients' weights read as it; otherwise the value at one figure nearest to it that at
    least ``threshold`` patients' weights read as, and without one, the public standard of
    :data:`STANDARD_WEIGHT` kg. Never withheld: a withheld reference beside a released mean
    would say that only one or two patients weigh about the median."""
    median = _round(kept.median(), 1)
    readings = pd.Series(round_significant(weights.to_numpy(dtype=float), 1)).value_counts()
    if not 0 < readings.get(median, 0) < threshold:
        return median
    shared = readings.index[readings >= threshold].to_numpy(dtype=float)
    if shared.size == 0:  # the standard, unless one or two patients read as it (then none)
        return None if 0 < readings.get(STANDARD_WEIGHT, 0) < threshold else STANDARD_WEIGHT
    return float(min(shared, key=lambda w: (abs(w - median), w)))


def _pd_release(fit: ModelFit, endpoints: dict) -> dict:
    """Each PD model of a released endpoint, every estimate at one significant figure."""
    return {
        name: {
            "shape": model.shape,
            "baseline": _round(model.baseline, 1),
            "baseline_sd": _round(model.baseline_sd, 1),
            "parameters": {k: _round(v, 1) for k, v in model.parameters.items()},
            "residual": _round(model.residual, 1),
        }
        for name, model in fit.pd.items()
        if name in endpoints
    }


def _graded_release(fit: ModelFit, cohort: np.ndarray, endpoints: dict) -> dict:
    """Level frequencies of each yes/no or graded endpoint, pooled over visits, over the cohort.

    A level observed in fewer than ``min_category_patients`` patients is folded into the most
    common level; an endpoint left with fewer than two levels is withheld.
    """
    observations = fit.study.observations
    released = {}
    for name in fit.roles.graded:
        if name not in endpoints:
            continue
        rows = observations[
            (observations["endpoint"].astype(str) == name) & observations["patient"].isin(cohort)
        ]
        counts = rows["dv"].value_counts(sort=True)
        holders = rows.groupby("dv")["patient"].nunique().reindex(counts.index)
        keep = (holders >= fit.min_category_patients).to_numpy()
        if keep.sum() < 2:
            continue
        folded = counts[keep].copy()
        folded.iloc[0] += counts[~keep].sum()
        total = folded.sum()
        released[name] = [[_level(level), _round(c / total, 2)] for level, c in folded.items()]
    return released


def _effect_release(pk: PopulationFit | None, continuous: dict, categories: dict) -> list:
    """The covariate effects of released covariates, rounded as the other estimates are
    (the reference at two figures, as the covariate summaries)."""
    released = []
    for term in pk.effect_terms if pk else ():
        if term.categorical:
            levels = [level for level, _ in categories.get(term.covariate, [])]
            if _plain(term.level) not in levels:
                continue  # the level or the covariate is withheld
        elif term.covariate not in continuous:
            continue
        released.append(
            {
                "parameter": term.parameter,
                "covariate": term.covariate,
                "reference": None if term.categorical else _round(term.reference, 2),
                "level": _plain(term.level) if term.categorical else None,
                "estimate": _round(pk.effects[term.label], 1),
            }
        )
    return released


def _level(value: float) -> int | float:
    """A numeric level as JSON shows it best: an integer where it is one."""
    value = float(value)
    return int(value) if value.is_integer() else value


def _plain(level: object) -> object:
    """A level as a JSON-native value (numpy scalars become Python ones)."""
    return level.item() if isinstance(level, np.generic) else level


# The releases built from each living study's fits, by a SHA-256 digest of the pickled fit
# (the least recently used goes first): the chapters, the checks (model_privacy_checks) and the
# attacks build the same fit's release many times over. Kept by the study's id beside a weak
# reference to it, so that a study's releases go when it does, as the checks' memory does
# (checks._SOURCES); the tests give each test that uses monkeypatch a memory of its own.
_RELEASES: dict[int, tuple[weakref.ref, OrderedDict[str, Fingerprint]]] = {}
_RELEASES_KEPT = 16  # per study
_RELEASES_LOCK = threading.Lock()


def model_fingerprint(fit: ModelFit) -> Fingerprint:
    """Build the fingerprint of a fit: the allowlisted population- and arm-level fields.

    Parameters
    ----------
    fit : ModelFit
        A fit from :func:`synpmx_model_estimate`.

    Returns
    -------
    Fingerprint
        Everything released, with the verdicts of P4 and P5 as the independent checks
        (:func:`synpmx_lite.generator.checks.release_checks`) find them on its JSON; ``str()``
        prints it readably, :meth:`~synpmx_lite.generator.release.Fingerprint.to_json` serializes
        it.

    Raises
    ------
    ValueError
        No arm has ``min_arm_patients`` patients: there is no cohort to release; or the
        study's crowded dose and visit times cannot be released in order at
        :data:`MAX_TIME_FIGURES` significant figures or fewer (the time and period are named);
        or the PK fit's correlated pair (``correlated``) has a correlation that one
        significant figure rounds to +-1.

    Notes
    -----
    A fit's release is built and checked once while its study lives: a later call with a fit
    of the same study object whose pickle has the same SHA-256 digest (every field equal,
    written the same way) returns a copy of the same release. A fit edited in place, or
    another fit, gets its own; so does a fit whose pickle differs although its fields are
    equal, or one of an equal but separate study object, at the cost of a build. Sixteen
    releases are kept per study, in each process, and they go when the study does.
    """
    if not isinstance(fit, ModelFit):
        raise TypeError(f"fit must be a ModelFit (from synpmx_model_estimate), got {fit!r}")
    try:
        key = hashlib.sha256(pickle.dumps(fit, protocol=pickle.HIGHEST_PROTOCOL)).hexdigest()
    except (pickle.PicklingError, TypeError, AttributeError):
        key = None  # a fit holding what pickle cannot write: built, not kept
    if key is None:
        return _built_fingerprint(fit)  # outside the except: a build error is not pickle's
    with _RELEASES_LOCK:
        kept = _kept_releases(fit.study)
        built = kept.get(key)
        if built is not None:
            kept.move_to_end(key)
    if built is None:
        built = _built_fingerprint(fit)
        with _RELEASES_LOCK:
            kept[key] = built
            while len(kept) > _RELEASES_KEPT:
                kept.popitem(last=False)
    return copy.deepcopy(built)  # the caller may edit its copy; the kept one stays as built


def _kept_releases(study: StudyEvents) -> OrderedDict[str, Fingerprint]:
    """The releases kept for fits of ``study`` (called under the lock)."""
    place = id(study)
    held = _RELEASES.get(place)
    if held is None or held[0]() is not study:
        releases = _RELEASES  # still there when the interpreter's exit clears the module
        forget = weakref.ref(study, lambda _: releases.pop(place, None))
        held = _RELEASES[place] = (forget, OrderedDict())
    return held[1]


def _built_fingerprint(fit: ModelFit) -> Fingerprint:
    """The release of ``fit``, built and checked (:func:`model_fingerprint`)."""
    arms = _arms_kept(fit)
    if not arms:
        raise ValueError(
            f"no arm has {fit.min_arm_patients} patients (min_arm_patients): nothing can be "
            "released"
        )
    cohort = np.flatnonzero(fit.study.arms.isin(arms).to_numpy())
    pk = fit.pk
    _check_released_correlation(pk)
    continuous, categories, reference = _covariate_release(fit, cohort)
    pk_fields = {
        "model": dataclasses.asdict(pk.model) if pk else None,
        "pk_endpoint": fit.study.pk_endpoint,
        "log_dv": fit.roles.log_dv,
        "error": pk.error if pk else None,
        "typical": {k: _round(v, 1) for k, v in pk.typical.items()} if pk else {},
        "omega": {k: _round(v, 1) for k, v in pk.omega.items()} if pk else {},
        "residual": {k: _round(v, 1) for k, v in pk.residual.items()} if pk else {},
        "correlation": {k: _round(v, 1) for k, v in pk.correlation.items()} if pk else {},
    }
    arms_released, endpoints = _timed_release(fit, arms, cohort)
    draft = Fingerprint(
        cohort_size=int(cohort.size),
        **pk_fields,
        pd=_pd_release(fit, endpoints),
        graded=_graded_release(fit, cohort, endpoints),
        covariates=continuous,
        categories=categories,
        reference_weight=reference,
        arms=arms_released,
        dose_change_rate=_dose_change(fit, cohort),
        endpoints=endpoints,
        checks={"P4": "pass", "P5": "pass"},
        effects=_effect_release(pk, continuous, categories),
    )
    draft = _against_ledger(fit, draft)
    verdicts = _checks(fit, draft, claims=False).set_index("check")["verdict"]
    return dataclasses.replace(draft, checks={"P4": verdicts["P4"], "P5": verdicts["P5"]})


def _against_ledger(fit: ModelFit, draft: Fingerprint) -> Fingerprint:
    """The draft with every covariate withheld whose level counts changed since an earlier
    release by too few patients; refused where the cohort, an arm or a rate did."""
    if not fit.earlier_releases:
        return draft
    problems = between_releases(
        draft.to_json(),
        list(fit.earlier_releases),
        min_arm_patients=fit.min_arm_patients,
        min_category_patients=fit.min_category_patients,
    )
    isolated = {p.split(" level ", 1)[0] for p in problems if " level " in p}
    counts = [p for p in problems if " level " not in p]
    if counts:
        raise ValueError(
            f"nothing can be released against the earlier releases: {'; '.join(counts)}; "
            f"wait until at least {fit.min_arm_patients} more patients have joined"
        )
    categories = {k: v for k, v in draft.categories.items() if k not in isolated}
    return dataclasses.replace(draft, categories=categories)


# --- The checks on a fit ----------------------------------------------------------------------


def _checks(fit: ModelFit, released: Fingerprint | str, *, claims: bool) -> pd.DataFrame:
    return release_checks(
        released,
        fit.study,
        pk=fit.pk,
        pd_fits=fit.pd,
        privacy=fit.privacy,
        min_arm_patients=fit.min_arm_patients,
        min_category_patients=fit.min_category_patients,
        claims=claims,
    )


def model_privacy_checks(
    fit: ModelFit,
    *,
    released: Fingerprint | str | None = None,
    earlier_releases: list | None = None,
) -> pd.DataFrame:
    """Verify the protections on a fit's release: checks P1-P5, and P6 against earlier ones.

    The checks read the release as it would leave (its JSON) and judge it against the source
    study, in code of their own (:func:`synpmx_lite.generator.checks.release_checks`): they would
    catch a faulty builder as surely as a hand-edited file.

    Parameters
    ----------
    fit : ModelFit
        A fit from :func:`synpmx_model_estimate`.
    released : Fingerprint or str, optional
        The fingerprint to check, or its JSON text. Default: the JSON of
        ``model_fingerprint(fit)``. Passing an edited one shows what the checks catch.
    earlier_releases : list of Fingerprint or str, optional
        Earlier releases of the same study (other data cuts). Given, a sixth row, P6, fails
        where a count or frequency changed between the release and one of them by one to
        ``k - 1`` patients (:func:`synpmx_lite.generator.ledger.between_releases`). Default:
        those the fit was built against, if any.

    Returns
    -------
    pandas.DataFrame
        One row per check with columns ``check``, ``question``, ``verdict`` (pass, review or
        FAIL) and ``result``: ``none`` or what failed for P1-P3, ``smallest group k`` for P4,
        and for P5 the largest move with the estimate's name, how many were left out, and
        which fit, if any, is not to be trusted (and why).

    Raises
    ------
    TypeError, ValueError
        ``fit`` is not a ModelFit; ``released`` is neither a Fingerprint nor the JSON text of
        an object.
    """
    if not isinstance(fit, ModelFit):
        raise TypeError(f"fit must be a ModelFit (from synpmx_model_estimate), got {fit!r}")
    if released is None:
        released = model_fingerprint(fit).to_json()
    table = _checks(fit, released, claims=True)
    if earlier_releases is None:
        earlier_releases = list(fit.earlier_releases) or None
    if earlier_releases is None:
        return table
    problems = between_releases(
        released,
        earlier_releases,
        min_arm_patients=fit.min_arm_patients,
        min_category_patients=fit.min_category_patients,
    )
    row = {
        "check": "P6",
        "question": P6_QUESTION,
        "verdict": "FAIL" if problems else "pass",
        "result": "; ".join(problems) or "none",
    }
    return pd.concat([table, pd.DataFrame([row])], ignore_index=True)


def _free_frequencies(fingerprint: Fingerprint) -> int:
    """Released frequencies free to vary: levels less one per covariate and per graded
    endpoint, arms less one, attendance rates below 1 and a dose-change rate strictly between
    0 and 1."""
    levels = sum(len(pairs) - 1 for pairs in fingerprint.categories.values())
    levels += sum(len(pairs) - 1 for pairs in fingerprint.graded.values())
    arms = max(len(fingerprint.arms) - 1, 0)
    attendance = sum(e["attendance"] < 1 for e in fingerprint.endpoints.values())
    return levels + arms + attendance + int(0 < fingerprint.dose_change_rate < 1)


def fit_status(fit: ModelFit) -> str:
    """Whether a fit can be trusted, as the ``fit`` column of
    :func:`privacy_checks_across_studies` says, without running the privacy checks.

    Parameters
    ----------
    fit : ModelFit
        A fit of :func:`synpmx_model_estimate`.

    Returns
    -------
    str
        "converged", or the diagnostics of the PK fit, or of a released PD model's fit (or its
        leave-one-out refits), that make it untrustworthy; check P5 passes no reading of such
        a fit.
    """
    if not isinstance(fit, ModelFit):
        raise TypeError(
            f"fit must be a ModelFit from synpmx_model_estimate, got {type(fit).__name__}"
        )
    return _fit_status(fit, model_fingerprint(fit))


def _fit_status(fit: ModelFit, fingerprint: Fingerprint) -> str:
    """ "converged", or what makes the PK fit or the fit of a released PD model untrustworthy
    (the fits whose readings P5 judges): the PK fit's diagnostics as it reports them."""
    released, _ = read_release(fingerprint)
    found = _release_untrusted_fits(fit.pk, fit.pd, fit.privacy, released, fit.study.pk_endpoint)
    reported = fit.pk is not None and fit.pk.diagnostics
    return (
        "; ".join(why if what == "PK" and reported else f"{what} {why}" for what, why in found)
        or "converged"
    )


def _check_released_correlation(pk: PopulationFit | None) -> None:
    """Refuse a correlation that one significant figure would release as +-1: the schema
    admits only (-1, 1), and an estimate that close to 1 says the two etas are one."""
    for pair, rho in ({} if pk is None else pk.correlation).items():
        if abs(_round(rho, 1)) >= 1:
            raise ValueError(
                f"the fit's correlation of {pair} ({rho:.4g}, correlated={pk.correlated}) rounds "
                f"to {_round(rho, 1):g} at one significant figure, and a released correlation "
                "must lie inside (-1, 1): the two random effects move as one; fit without "
                "correlated, or with a random effect on one of them only"
            )


def release_refusal(study: StudyEvents) -> str | None:
    """Why the generator cannot release ``study`` at all, or None where it can.

    Observations below the limit of quantification (``roles.cens`` 1) are refused: the engine
    fits them by Beal's M3, but the fingerprint releases no limit, so that its synthetic
    concentrations would never be censored and the checks could not judge the share below
    it. So are steady-state doses (``roles.ss`` 1), which the fingerprint's planned doses cannot
    express. Doses into the central compartment under an oral model (``roles.cmt`` 2) are
    released, with their route.
    """
    if study.obs_censored is not None:
        return (
            f"data has observations below the limit of quantification (column "
            f"{study.roles.cens!r} 1): the fingerprint releases no limit of quantification, "
            "so such a study cannot be released yet (fit it with fit_population, which uses "
            "Beal's M3)"
        )
    if study.dose_interval is not None:
        return (
            f"data has steady-state doses (column {study.roles.ss!r} 1): the fingerprint "
            "releases each dose alone, so its synthetic patients would miss the doses before "
            "the steady state; such a study cannot be released yet"
        )
    return None


def _refused_row(name: str, study: StudyEvents, refusal: str) -> dict:
    """The across-studies row of a study the generator refuses: nothing is fitted or checked."""
    verdicts = {check: "not run" for check in CHECK_QUESTIONS if check != "P6"}
    return {
        "study": name,
        "patients": study.n_patients,
        "left_out": 0,
        **verdicts,
        "largest": "none",
        "random_effects": 0,
        "pd_models": "none",
        "attendance_below_1": 0,
        "free_frequencies": 0,
        "fit": f"refused: {refusal}",
    }


def _study_row(name: str, fit: ModelFit) -> dict:
    """One study's row of :func:`privacy_checks_across_studies`."""
    fingerprint = model_fingerprint(fit)
    checks = model_privacy_checks(fit, released=fingerprint.to_json()).set_index("check")
    largest = fit.privacy.largest
    return {
        "study": name,
        "patients": fit.n_source,
        "left_out": fit.privacy.left_out.patients,
        **checks["verdict"].to_dict(),
        "largest": f"{largest['estimate']}, "
        f"{move_band(largest['largest'], fit.privacy.review, fit.privacy.fail)} "
        f"{largest['scale']}",
        "random_effects": len(fingerprint.omega) + len(fingerprint.pd),
        "pd_models": ", ".join(
            f"{endpoint}: {model['shape']}" for endpoint, model in fingerprint.pd.items()
        )
        or "none",
        "attendance_below_1": sum(e["attendance"] < 1 for e in fingerprint.endpoints.values()),
        "free_frequencies": _free_frequencies(fingerprint),
        "fit": _fit_status(fit, fingerprint),
    }


def privacy_checks_across_studies(
    names: list[str] | tuple[str, ...] | None = None, *, seed: int = 1, return_fits: bool = False
) -> pd.DataFrame | tuple[pd.DataFrame, dict[str, ModelFit]]:
    """Fit each shipped study, and tabulate its checks and what its fingerprint releases.

    Parameters
    ----------
    names : list or tuple of str, optional
        Studies to fit (keys of :data:`synpmx_lite.pmx.study.DATASETS`), each once; default all
        of them.
    seed : int, default 1
        Passed to :func:`synpmx_model_estimate`.
    return_fits : bool, default False
        Whether to return each study's fit as well, to read more of it than the table
        summarises without fitting again.

    Returns
    -------
    table : pandas.DataFrame
        One row per study: ``study``, ``patients``, ``left_out`` (for moving an estimate by 15
        or more), the verdicts ``P1``-``P5``, ``largest`` (the band of the largest move
        among the patients kept, with the estimate's name), and for membership inference
        ``random_effects`` (between-subject variances released, PK and PD), ``pd_models``
        (each PD endpoint's chosen shape), ``attendance_below_1``
        (attendance rates released below 1) and ``free_frequencies`` (category levels less
        one per covariate and per graded endpoint, arms less one, attendance rates below 1
        and dose-change rates strictly between 0 and 1), and ``fit``: "converged", or the
        diagnostics of the PK fit or of a released PD model's fit (or its leave-one-out
        refits) that is not to be trusted, which P5 does not pass
        (:class:`synpmx_lite.pmx.population.FitWarning` is not raised here; this column carries
        it), or "refused: " and why for a study the generator cannot release at all
        (:func:`release_refusal`), whose verdicts read "not run".
    fits : dict of str to ModelFit
        Only with ``return_fits``: each released study's fit, by name, in the table's order;
        the one its row was read from, so its ``fit`` column says whether it can be trusted.
        A refused study has none.
    """
    if names is None:
        names = list(DATASETS)
    elif isinstance(names, list | tuple):
        names = list(names)
    else:
        raise TypeError(f"names must be a list or tuple of study names, got {names!r}")
    unknown = sorted({str(name) for name in names} - set(DATASETS))
    if unknown:
        raise ValueError(f"names must be among {sorted(DATASETS)}, got {unknown}")
    repeated = sorted({name for name in names if names.count(name) > 1})
    if repeated:  # a row per study, and a fit per name
        raise ValueError(f"names must name each study once, got {repeated} more than once")
    if not isinstance(return_fits, bool):
        raise TypeError(f"return_fits must be a bool, got {return_fits!r}")
    rows, fits = [], {}
    for name in names:
        data, roles = load_dataset(name)
        study = prepare_study(data, roles)
        refusal = release_refusal(study)
        if refusal is not None:
            rows.append(_refused_row(name, study, refusal))
            continue
        # A fit that cannot be trusted is reported in the ``fit`` column, not as a warning
        # whose text (with this machine's paths) would leak into the book's output.
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FitWarning)
            fit = fits[name] = synpmx_model_estimate(data, roles, seed=seed)
        rows.append(_study_row(name, fit))
    table = pd.DataFrame(rows)
    return (table, fits) if return_fits else table
