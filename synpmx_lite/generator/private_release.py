r"""A differentially private release mode, built on OpenDP, over an ordinary fit.

:func:`private_fingerprint` releases every model estimate, covariate summary, count and rate of
a fingerprint with an :math:`\varepsilon`-differential-privacy guarantee for adding or removing
one patient, the noise from OpenDP's measurements and the whole composed by OpenDP
(:func:`opendp.combinators.make_composition`):

* **model estimates** (PK typical values, between-subject variances, residual errors) and the
  continuous covariates' geometric means and SDs of the logs, by *subsample and aggregate*
  (Nissim, Raskhodnikova & Smith 2007): the patients are split into ``subsets`` disjoint
  groups by a hash of their identifier (so that adding a patient changes one group only), the
  model is fitted to each group, each log estimate clamped to a public range and averaged with
  Laplace noise. One patient moves one of the ``subsets`` clamped values, so the average moves
  by at most the range's width over ``subsets``. A group whose fit fails (or does not converge)
  contributes the middle of the range, which depends on that group alone;
* **counts and frequencies** with OpenDP's counting: arm sizes and the levels of each
  categorical covariate (``then_count_by_categories`` over the released arms and levels, with
  Laplace noise); the dose-change rate and each endpoint's attendance rate as a noisy sum of a
  per-patient share in [0, 1] (``then_sum``, Laplace noise) over the noisy cohort size.

The budget is split evenly over the released numbers' measurements; the release states each
share, the Laplace scale OpenDP certifies for it (:func:`opendp.prelude.binary_search_param`),
the public ranges and the composed epsilon OpenDP computes. The ranges are arguments with
defaults wide enough for any study in the package's units: they never come from the data.

What the guarantee does not cover is the study's design, taken from the ordinary release:
which arms are kept, the planned doses' amounts and the visit times (medians of the
patients'), the category levels and their folding, the LOQ, the model's structure and error
model. Here they are computed from the patients, under the ordinary release's protections
only; a sponsor would take them from the protocol. The guarantee on the counts and rates
therefore holds only for a design fixed beforehand: computed from the patients, a patient who
brings a visit to the threshold changes the design, and with it every attendance share (a
test keeps this attack). The steps from patients to one value per
group or per patient are declared to OpenDP with their stability
(``make_user_transformation``), which OpenDP takes on trust; the tests add a patient and check
that no other value moves. PD models, graded endpoints and the reference weight are withheld.
The release writes that list in its JSON (``not_covered``). A fit whose release would carry
model estimates the aggregate does not privatise (covariate effects, a correlated pair of etas,
a parameter without a random effect, keep columns) is refused; the ordinary release's P4 and P5
verdicts, computed from every patient, are not carried. OpenDP's samplers cannot be seeded: a
release is drawn afresh at each call, and a chapter that needs the same release each time
stores it (its JSON).

With ``epsilon=math.inf`` no noise is added and nothing is split: the release is the ordinary
release with unrounded estimates (:func:`synpmx_lite.generator.utility.fingerprint_at`). That is
not the limit of a finite epsilon as it grows, which is the aggregate of the groups' clamped
estimates without noise (:func:`noise_free_estimates`).

References
----------
Nissim K, Raskhodnikova S, Smith A. Smooth sensitivity and sampling in private data analysis.
STOC 2007:75-84.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
import math
import warnings
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from types import MappingProxyType

import numpy as np
import opendp.prelude as dp
import pandas as pd

from .._validation import check_count, check_real
from ..pmx.population import FitWarning, PopulationFit, fit_population
from .design import dose_changed_patients, scheduled_visits
from .estimate import ModelFit, model_fingerprint
from .protections import trimmed_log_summary
from .release import Fingerprint
from .utility import fingerprint_at

__all__ = [
    "DEFAULT_RANGES",
    "NOT_COVERED",
    "PrivateRelease",
    "SubsetEstimates",
    "noise_free_estimates",
    "private_fingerprint",
    "subset_estimates",
]

# The user transformations need both; enabled for the whole process (OpenDP's flags are global).
dp.enable_features("contrib", "honest-but-curious")

#: Public ranges (natural scale) of the estimates, by kind: wide enough for any study in the
#: package's units (hours, litres, mg/L, kg, years), and chosen without looking at any study.
DEFAULT_RANGES: dict[str, tuple[float, float]] = {
    "typical": (1e-3, 1e3),
    "omega": (1e-3, 4.0),
    "residual additive": (1e-3, 1e2),
    "residual proportional": (1e-3, 1.0),
    "geometric_mean": (1e-2, 1e3),
    "sdlog": (1e-2, 2.0),
}

#: The parts of a private release taken from the ordinary release, outside the guarantee.
NOT_COVERED: tuple[str, ...] = (
    "the model's structure and error model",
    "which arms are kept",
    "the planned doses' times, amounts, durations and routes",
    "the visit times",
    "the categorical covariates' levels and their folding",
    "the LOQ",
)

# The even split's relative shortfall: far above the rounding OpenDP's composition adds
# (a few units in the last place), far below any change of the noise a reader could see.
_SPLIT_MARGIN = 1e-9

_PATIENTS = (dp.vector_domain(dp.atom_domain(T=int)), dp.symmetric_distance())


@dataclass(frozen=True)
class PrivateRelease:
    """A differentially private release: the fingerprint and what its guarantee rests on.

    Attributes
    ----------
    fingerprint : Fingerprint
        The released fingerprint; synthetic data come from it as from any
        (:func:`synpmx_lite.generator.generate.synpmx_model_generate`).
    epsilon : float
        The budget asked for.
    composed_epsilon : float
        The epsilon OpenDP's composition of every measurement gives for one patient.
    subsets : int
        Groups of patients of the subsample and aggregate.
    split : dict of str to float
        Each released number's share of the budget, by name.
    scales : dict of str to float
        The Laplace scale OpenDP certifies for each number at its share.
    ranges : dict of str to list of float
        The public range each estimate was clamped to (natural scale).
    not_covered : list of str
        What the release holds outside the guarantee: the study's design, taken from the
        ordinary release (:data:`NOT_COVERED`).
    """

    fingerprint: Fingerprint
    epsilon: float
    composed_epsilon: float
    subsets: int
    split: dict[str, float]
    scales: dict[str, float]
    ranges: dict[str, list[float]]
    not_covered: list[str] = dataclasses.field(default_factory=lambda: list(NOT_COVERED))

    def to_json(self) -> str:
        """The release with its guarantee's terms, as JSON."""
        fields = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        fields["fingerprint"] = json.loads(self.fingerprint.to_json())
        return json.dumps(fields, indent=1, sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> PrivateRelease:
        """Read a release written by :meth:`to_json`."""
        fields = json.loads(text)
        fields["fingerprint"] = Fingerprint.from_json(json.dumps(fields["fingerprint"]))
        return cls(**fields)


def _group(identifier: object, subsets: int) -> int:
    """A patient's group, from their identifier alone."""
    digest = hashlib.sha256(str(identifier).encode()).digest()
    return int.from_bytes(digest[:8], "big") % subsets


@dataclass(frozen=True, eq=False)
class SubsetEstimates(Mapping):
    """The group fits of the subsample and aggregate, as :func:`subset_estimates` made them
    for one fit: a read-only mapping from estimate (``"typical cl"``) to its ``subsets``
    values (NaN where a group's fit failed).

    Attributes
    ----------
    estimates : mapping of str to numpy.ndarray
        By estimate, one value per group (read-only, as the arrays are).
    subsets : int
        The number of groups.
    fit_digest : str
        The digest of the fit they were made from (:func:`_fit_digest`): a release from them
        is refused for any other fit, whose groups these are not.
    """

    estimates: Mapping[str, np.ndarray]
    subsets: int
    fit_digest: str

    def __post_init__(self) -> None:
        frozen = {}
        for name, values in self.estimates.items():
            frozen[name] = np.array(values, dtype=float)
            frozen[name].setflags(write=False)
        object.__setattr__(self, "estimates", MappingProxyType(frozen))

    def __reduce__(self):
        # A mapping proxy cannot be pickled (or deep-copied); its dict can.
        return type(self), (dict(self.estimates), self.subsets, self.fit_digest)

    def __getitem__(self, name: str) -> np.ndarray:
        return self.estimates[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self.estimates)

    def __len__(self) -> int:
        return len(self.estimates)


def _fit_digest(fit: ModelFit) -> str:
    """SHA-256 of what ties group fits to one fit: its patients in order, their covariates
    and observations (the groups' summaries and fits come from them), and its model and PK
    estimates (another fit of the same patients differs in them). A guard against passing
    another fit's groups by mistake, not against a forger."""
    pk, study = fit.pk, fit.study
    tables = (study.covariates, study.observations, study.doses)
    parts = [
        "\x1f".join(map(str, study.ids)),
        *(pd.util.hash_pandas_object(table).to_numpy().tobytes().hex() for table in tables),
        repr(pk.model),
        pk.error,
        repr(tuple(pk.random)),
        *(getattr(pk, kind).to_json() for kind in ("typical", "omega", "residual", "effects")),
        pk.correlation.to_json(),
    ]
    return hashlib.sha256("\x1e".join(parts).encode()).hexdigest()


def subset_estimates(fit: ModelFit, *, subsets: int) -> SubsetEstimates:
    """Each estimate's value on each of ``subsets`` groups of patients (NaN where the group's
    fit failed): the fits of the subsample and aggregate, which do not depend on the budget.

    Parameters
    ----------
    fit : ModelFit
        A fit with a PK model.
    subsets : int
        Groups, at least 2: a public number, fixed before the data are seen (e.g. from the
        protocol's planned enrolment). A number computed from the cohort would change with
        one patient, regroup everyone and publish the cohort size without noise.

    Returns
    -------
    SubsetEstimates
        By estimate (``"typical cl"``, ``"covariate wt sdlog"``), its ``subsets`` values, tied
        to ``fit``.
    """
    if not isinstance(fit, ModelFit) or fit.pk is None:
        raise ValueError("fit must be a ModelFit with a PK model")
    _refuse_unprivatised(fit)
    subsets = check_count(subsets, "subsets", minimum=2)
    groups = np.array([_group(i, subsets) for i in fit.study.ids])
    covariates = fit.study.covariates
    values: dict[str, list] = {}
    for g in range(subsets):
        members = groups == g
        estimates = _group_estimates(fit, members)
        for name in fit.continuous:
            group_values = covariates.loc[members, name].to_numpy(dtype=float)
            meanlog, sdlog = (
                trimmed_log_summary(group_values) if group_values.size >= 3 else (np.nan,) * 2
            )
            estimates[f"covariate {name} geometric_mean"] = math.exp(meanlog)
            estimates[f"covariate {name} sdlog"] = sdlog
        for name, value in estimates.items():
            values.setdefault(name, []).append(value)
    return SubsetEstimates(values, subsets, _fit_digest(fit))


def _refuse_unprivatised(fit: ModelFit) -> None:
    """Refuse a fit whose release would carry estimates the group fits do not make (they fit
    every parameter with a random effect and no covariate effect), so no noise would reach."""
    pk = fit.pk
    parts = {
        "covariate effects (effects=)": bool(pk.effect_terms),
        "a correlated pair of etas (correlated=)": pk.correlated is not None,
        "parameters without a random effect (random=)": len(pk.random)
        < len(pk.model.parameters),
        "keep columns (the roles' keep)": bool(fit.roles.keep),
    }
    found = [part for part, present in parts.items() if present]
    if found:
        raise ValueError(
            "the private release does not privatise " + ", ".join(found) + ": the ordinary "
            "release's values would be released without noise; fit without them"
        )


def _group_estimates(fit: ModelFit, members: np.ndarray) -> dict[str, float]:
    """The PK estimates on one group, NaN where its fit fails or does not converge."""
    pk = fit.pk
    names = _pk_estimate_names(pk)
    if members.sum() < 3:
        return dict.fromkeys(names, np.nan)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FitWarning)
            refit = fit_population(fit.study.subset(members), error=pk.error)
    except ValueError:  # e.g. no positive concentration in the group
        return dict.fromkeys(names, np.nan)
    if not refit.converged:
        return dict.fromkeys(names, np.nan)
    return {
        f"{part} {k}": float(v)
        for part in ("typical", "omega", "residual")
        for k, v in getattr(refit, part).items()
    }


def _range_of(name: str, ranges: dict) -> tuple[float, float]:
    """The public range of an estimate: its own entry, else its kind's."""
    if name in ranges:
        return ranges[name]
    kind = name.split()[-1] if name.startswith("covariate ") else name.split()[0]
    if name.startswith("residual "):
        kind = name
    return ranges[kind]


def _clamped_logs(values: np.ndarray, low: float, high: float) -> np.ndarray:
    """The group values' logs clamped to [log low, log high]; a failed group (NaN) gives the
    middle of the range, which depends on that group alone."""
    bounds = (math.log(low), math.log(high))
    clamped = np.clip(np.log(values), *bounds)
    return np.where(np.isfinite(clamped), clamped, sum(bounds) / 2)


def noise_free_estimates(
    groups: Mapping[str, np.ndarray], ranges: dict[str, tuple[float, float]] | None = None
) -> dict[str, float]:
    """What the private release's estimates tend to as epsilon grows: each estimate's clamped
    group logs averaged, without noise (the aggregate's own bias, failed groups included).

    Parameters
    ----------
    groups : mapping of str to numpy.ndarray
        The groups' estimates (:func:`subset_estimates`, or as stored).
    ranges : dict, optional
        Public ranges overriding :data:`DEFAULT_RANGES`, as for :func:`private_fingerprint`.

    Returns
    -------
    dict of str to float
        By estimate, on the natural scale.
    """
    ranges = _checked_ranges(ranges)
    return {
        name: math.exp(float(np.mean(_clamped_logs(values, *_range_of(name, ranges)))))
        for name, values in groups.items()
    }


def _aggregate(values: np.ndarray, low: float, high: float) -> Callable[[float], dp.Measurement]:
    """Measurement builder: the group values' logs clamped to [log low, log high], averaged,
    with Laplace noise of the given scale; its input is the vector of patient indices."""
    bounds = (math.log(low), math.log(high))
    clamped = _clamped_logs(values, low, high).tolist()
    groups = dp.t.make_user_transformation(
        *_PATIENTS,
        dp.vector_domain(dp.atom_domain(bounds=bounds, nan=False), size=len(clamped)),
        dp.symmetric_distance(),
        function=lambda _patients: clamped,
        # Adding or removing a patient changes one group's value: one value out, one in.
        stability_map=lambda d_in: 2 * d_in,
    )
    return lambda scale: groups >> dp.t.then_mean() >> dp.m.then_laplace(scale)


def _per_patient(values: list, domain: dp.Domain) -> dp.Transformation:
    """Patient indices to one value per patient (row by row: one patient, one value)."""
    return dp.t.make_user_transformation(
        *_PATIENTS,
        dp.vector_domain(domain),
        dp.symmetric_distance(),
        function=lambda patients: [values[i] for i in patients],
        stability_map=lambda d_in: d_in,
    )


def _counts(labels: list, levels: list) -> Callable[[float], dp.Measurement]:
    """Measurement builder: counts of the patients at each level, with Laplace noise."""
    rows = _per_patient([str(label) for label in labels], dp.atom_domain(T=str))
    categories = [str(level) for level in levels]
    return lambda scale: (
        rows
        >> dp.t.then_count_by_categories(categories=categories, null_category=False)
        >> dp.m.then_laplace(scale)
    )


def _share_sum(shares: np.ndarray) -> Callable[[float], dp.Measurement]:
    """Measurement builder: the sum of a per-patient share in [0, 1], with Laplace noise."""
    rows = _per_patient(
        np.clip(shares, 0.0, 1.0).astype(float).tolist(),
        dp.atom_domain(bounds=(0.0, 1.0), nan=False),
    )
    return lambda scale: rows >> dp.t.then_sum() >> dp.m.then_laplace(scale)


def _cohort_labels(fit: ModelFit, released: Fingerprint) -> tuple[np.ndarray, list]:
    """Each patient's released arm label (None outside the released arms), and the labels."""
    from .estimate import _arms_kept  # the ordinary release's arm order, not re-derived here

    kept = _arms_kept(fit)
    names = {arm: released.arms[i]["arm"] for i, arm in enumerate(kept)}
    labels = np.array([names.get(arm) for arm in fit.study.arms], dtype=object)
    return labels, [arm["arm"] for arm in released.arms]


def _level_labels(fit: ModelFit, name: str, levels: list, in_cohort: np.ndarray) -> list:
    """Each patient's level of a categorical covariate: a folded level counts with the most
    common one (as the ordinary release folds it), a patient outside the cohort nowhere."""
    listed = {str(level) for level in levels}
    values = fit.study.covariates[name].astype(str).to_numpy()
    return [
        ("" if not member else value if value in listed else str(levels[0]))
        for value, member in zip(values, in_cohort, strict=True)
    ]


def _patient_shares(fit: ModelFit, in_cohort: np.ndarray) -> dict[str, np.ndarray]:
    """Per patient: whether their dose changed, and per endpoint the share of the released
    visits they attended (0 outside the cohort).

    The released visits are the design's (those the ordinary release lists): for a fixed design,
    counted against them, a patient's share is theirs alone, as the row-by-row transformation
    asserts. The design here is computed from the patients (see the module's docstring). Counted
    against every visit anyone attended, one added patient with a visit of their own would
    change everyone's share.
    """
    study = fit.study
    changed = dose_changed_patients(study.doses)
    shares = {"dose_change_rate": np.isin(np.arange(study.n_patients), changed) & in_cohort}
    cohort = np.flatnonzero(in_cohort)
    for endpoint, rows in study.observations.groupby("endpoint"):
        _, design = scheduled_visits(
            rows[rows["patient"].isin(cohort)], min_patients=fit.min_arm_patients
        )
        cells, _ = scheduled_visits(rows)
        released = pd.MultiIndex.from_frame(cells[["period", "visit"]]).isin(design)
        attended = cells[released].groupby("patient").size()
        attended = attended.reindex(range(study.n_patients), fill_value=0).to_numpy()
        shares[f"attendance {endpoint}"] = attended / max(len(design), 1) * in_cohort
    return {name: share.astype(float) for name, share in shares.items()}


def _builders(fit: ModelFit, released: Fingerprint, groups: dict, ranges: dict) -> tuple:
    """Every released number's measurement builder (scale to measurement) and the public
    parameters it is made from (:func:`_measurement_builder`), by name, and the public range
    of each estimate."""
    public, data, used = {}, {}, {}
    for name, values in groups.items():
        low, high = used[name] = _range_of(name, ranges)
        public[name], data[name] = ("mean", len(values), float(low), float(high)), values
    labels, arms = _cohort_labels(fit, released)
    in_cohort = labels != None  # noqa: E711 (elementwise on an object array)
    public["arms"] = ("counts", *map(str, arms))
    data["arms"] = ["" if arm is None else arm for arm in labels]
    for name, pairs in released.categories.items():
        levels = [level for level, _ in pairs]
        public[f"categories {name}"] = ("counts", *map(str, levels))
        data[f"categories {name}"] = _level_labels(fit, name, levels, in_cohort)
    for name, shares in _patient_shares(fit, in_cohort).items():
        if name == "dose_change_rate" or name.split(" ", 1)[1] in released.endpoints:
            public[name], data[name] = ("sum",), shares
    builders = {name: _measurement_builder(public[name], data[name]) for name in public}
    ranges_used = {name: [float(low), float(high)] for name, (low, high) in used.items()}
    return builders, public, ranges_used


def _measurement_builder(public: tuple, data) -> Callable[[float], dp.Measurement]:
    """The measurement builder of the public parameters ``public`` on ``data`` (None:
    placeholder data, for :func:`_certified_scale`): ``("mean", groups, low, high)`` of the
    group values, ``("counts", *levels)`` of each patient's label, ``("sum",)`` of each
    patient's share. Everything a privacy map reads comes from ``public``."""
    kind, *parameters = public
    if kind == "mean":
        size, low, high = parameters
        values = np.full(size, low) if data is None else np.asarray(data)
        if values.shape != (size,):
            raise ValueError(f"a mean of {size} groups was given {values.shape} values")
        return _aggregate(values, low, high)
    if kind == "counts":
        return _counts([] if data is None else data, parameters)
    if kind == "sum":
        return _share_sum(np.zeros(0) if data is None else data)
    raise ValueError(f"public must be a mean's, counts' or sum's parameters, got {public!r}")


@functools.lru_cache(maxsize=256)
def _certified_scale(public: tuple, share: float) -> float:
    """The smallest Laplace scale OpenDP certifies within ``share`` for one patient added or
    removed (:func:`opendp.prelude.binary_search_param`), for a builder of the public
    parameters ``public`` (:func:`_measurement_builder`).

    The search runs on the builder made with placeholder data: a measurement's privacy map
    reads its domains, metrics and scale, which come from ``public``, never the data, so the
    scale is the same for every cohort with those parameters. It is searched once per process
    (a release of theo_sd or warfarin builds 13 to 17 measurements of 8 or 9 kinds).
    """
    return float(dp.binary_search_param(_measurement_builder(public, None), d_in=1, d_out=share))


def _released(
    released: Fingerprint, outputs: dict, ranges: dict, min_arm_patients: int, guarantee: dict
) -> Fingerprint:
    """The fingerprint holding the noisy numbers (post-processing of OpenDP's outputs) and
    stating its ``guarantee``; an arm holds at least the public ``min_arm_patients``."""
    sizes = np.maximum(np.rint(outputs["arms"]), min_arm_patients).astype(int)
    cohort = int(sizes.sum())
    arms = [{**arm, "patients": int(size)} for arm, size in zip(released.arms, sizes, strict=True)]
    # Clamping the noisy log mean back into its public range is post-processing.
    estimate = {
        name: math.exp(float(np.clip(value, *np.log(ranges[name]))))
        for name, value in outputs.items()
        if name in ranges
    }
    pk = {
        part: {k: estimate[f"{part} {k}"] for k in getattr(released, part)}
        for part in ("typical", "omega", "residual")
    }
    covariates = {
        name: {key: estimate[f"covariate {name} {key}"] for key in ("geometric_mean", "sdlog")}
        for name in released.covariates
    }
    categories = {}
    for name, pairs in released.categories.items():
        # A level keeps a share (the release refuses 0): half a patient at least.
        counts = np.maximum(np.asarray(outputs[f"categories {name}"], dtype=float), 0.5)
        shares = counts / counts.sum()
        categories[name] = [[level, float(s)] for (level, _), s in zip(pairs, shares, strict=True)]
    rate = {
        name: float(np.clip(value / cohort, 0.0, 1.0))
        for name, value in outputs.items()
        if name == "dose_change_rate" or name.startswith("attendance ")
    }
    endpoints = {
        name: {**endpoint, "attendance": rate[f"attendance {name}"]}
        for name, endpoint in released.endpoints.items()
    }
    return dataclasses.replace(
        released,
        cohort_size=cohort,
        **pk,
        pd={},
        graded={},
        covariates=covariates,
        categories=categories,
        reference_weight=None,
        arms=arms,
        dose_change_rate=rate["dose_change_rate"],
        endpoints=endpoints,
        checks={},  # the ordinary release's verdicts, read from every patient
        guarantee=guarantee,
    )


def private_fingerprint(
    fit: ModelFit,
    *,
    epsilon: float,
    subsets: int | None = None,
    ranges: dict[str, tuple[float, float]] | None = None,
    groups: SubsetEstimates | None = None,
) -> PrivateRelease:
    """Release a fit's fingerprint with an epsilon-DP guarantee for one patient, by OpenDP.

    Parameters
    ----------
    fit : ModelFit
        A fit with a PK model (:func:`synpmx_lite.generator.estimate.synpmx_model_estimate`).
    epsilon : float
        The budget, split evenly over the released numbers; ``math.inf`` releases the
        ordinary fingerprint with unrounded estimates, without noise (not the limit of a
        finite epsilon: that is :func:`noise_free_estimates`).
    subsets : int, optional
        Groups of the subsample and aggregate, a public number (see :func:`subset_estimates`);
        needed unless ``groups`` is given (or ``epsilon`` is infinite).
    ranges : dict, optional
        Public ranges (natural scale) overriding :data:`DEFAULT_RANGES`, by kind or by
        estimate (``"typical cl"``, ``"covariate wt geometric_mean"``). Never from the data.
    groups : SubsetEstimates, optional
        What :func:`subset_estimates` returned for this fit (with the same ``subsets``), to
        draw several releases from one set of group fits. Groups made for another fit (other
        patients, or other estimates of the same ones) are refused, and so is a plain dict:
        the guarantee rests on fits of disjoint groups of this fit's patients, which the
        values alone cannot show.

    Returns
    -------
    PrivateRelease

    Raises
    ------
    ValueError
        A fit without a PK model, a budget that is not positive, fewer than 2 groups, a
        range that is not ``0 < low < high``, or (at a finite budget) a fit with estimates the
        release does not privatise: covariate effects, a correlated pair of etas, parameters
        without a random effect, keep columns.
    """
    if not isinstance(fit, ModelFit):
        raise TypeError(f"fit must be a ModelFit (from synpmx_model_estimate), got {fit!r}")
    if fit.pk is None:
        raise ValueError("fit has no PK model: the private release covers PK studies only")
    ranges = _checked_ranges(ranges)
    if epsilon == math.inf:
        nothing = ["everything: with an infinite epsilon nothing is noised"]
        return PrivateRelease(fingerprint_at(fit, None), epsilon, math.inf, 1, {}, {}, {}, nothing)
    epsilon = check_real(epsilon, "epsilon", low=0, low_open=True)
    _refuse_unprivatised(fit)
    if groups is None:
        if subsets is None:
            raise ValueError(
                "subsets must be given: the number of groups is public, fixed before the data "
                "are seen, never computed from the cohort"
            )
        groups = subset_estimates(fit, subsets=subsets)
    groups, subsets = _checked_groups(fit, groups, subsets)
    released = model_fingerprint(fit)
    builders, public, used = _builders(fit, released, groups, ranges)
    # Each share a hair below an even split, so that OpenDP's composition, which rounds up,
    # stays within the epsilon the release states.
    share = epsilon / len(builders) * (1 - _SPLIT_MARGIN)
    scales = {name: _certified_scale(public[name], share) for name in public}
    measurements = {name: builders[name](scale) for name, scale in scales.items()}
    composition = dp.c.make_composition(list(measurements.values()))
    if composition.map(1) > epsilon:
        raise RuntimeError(f"OpenDP composes the split to {composition.map(1)!r}, past {epsilon!r}")
    answers = composition(list(range(fit.n_source)))
    outputs = dict(zip(measurements, answers, strict=True))
    return PrivateRelease(
        fingerprint=_released(
            released,
            outputs,
            used,
            fit.min_arm_patients,
            {"epsilon": float(epsilon), "subsets": subsets},
        ),
        epsilon=float(epsilon),
        composed_epsilon=float(composition.map(1)),
        subsets=subsets,
        split=dict.fromkeys(builders, share),
        scales=scales,
        ranges=used,
    )


def _pk_estimate_names(pk: PopulationFit) -> list[str]:
    return [
        f"{part} {k}" for part in ("typical", "omega", "residual") for k in getattr(pk, part).index
    ]


def _estimate_names(fit: ModelFit) -> list[str]:
    """The estimates the groups' fits make (:func:`subset_estimates`), by name."""
    names = _pk_estimate_names(fit.pk)
    for name in fit.continuous:
        names += [f"covariate {name} geometric_mean", f"covariate {name} sdlog"]
    return names


def _checked_groups(
    fit: ModelFit, groups: object, subsets: int | None
) -> tuple[dict[str, np.ndarray], int]:
    """``groups`` as :func:`subset_estimates` made them for ``fit``: every estimate, one value
    per group, as many groups for each (``subsets`` of them, where given)."""
    if not isinstance(groups, SubsetEstimates):
        raise TypeError(
            "groups must be what subset_estimates returned for this fit, got "
            f"{type(groups).__name__}"
        )
    if groups.fit_digest != _fit_digest(fit):
        raise ValueError(
            "groups were made by subset_estimates for another fit (other patients or other "
            "estimates): the guarantee holds only for fits of this fit's own groups"
        )
    expected = _estimate_names(fit)
    missing = [name for name in expected if name not in groups]
    extra = [name for name in groups if name not in expected]
    if missing or extra:
        raise ValueError(
            f"groups must hold the fit's estimates (subset_estimates): missing {missing}, "
            f"not estimates of this fit {extra}"
        )
    arrays = {name: np.asarray(groups[name], dtype=float) for name in expected}
    lengths = {name: a.shape for name, a in arrays.items()}
    if len(set(lengths.values())) != 1 or len(next(iter(lengths.values()))) != 1:
        raise ValueError(f"groups must each hold one value per group, alike: shapes {lengths}")
    found = next(iter(arrays.values())).size
    if found < 2 or (subsets is not None and found != subsets):
        wanted = "at least 2" if subsets is None else f"subsets={subsets}"
        raise ValueError(f"groups hold {found} group(s) per estimate, not {wanted}")
    return arrays, found


def _checked_ranges(ranges: object) -> dict[str, tuple[float, float]]:
    """:data:`DEFAULT_RANGES` with the overrides, each ``0 < low < high``."""
    if ranges is not None and not isinstance(ranges, dict):
        raise TypeError(f"ranges must be a dict of name to (low, high), got {ranges!r}")
    merged = {**DEFAULT_RANGES, **(ranges or {})}
    for name, bounds in merged.items():
        low, high = (float(b) for b in bounds)
        if not 0 < low < high < math.inf:
            raise ValueError(f"ranges[{name!r}] must be 0 < low < high, got {bounds!r}")
        merged[name] = (low, high)
    return merged
