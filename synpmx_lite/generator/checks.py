r"""Checks P1-P5: the released JSON judged against the source study, independently of the builder.

:func:`release_checks` reads two things: the artefact that leaves the secure environment (the
fingerprint's JSON) and the source study it was built from (with the fit's influence readings
for P5). It re-derives from the source, in its own code, what each released number may be, and
shares nothing with the code that built the release
(:func:`synpmx_lite.generator.estimate.model_fingerprint`) beyond the policy itself: the allowlisted
shape (:func:`synpmx_lite.generator.release.release_problems`), the thresholds, the trimming share
and the most values a code may take. A release edited by hand, built by other code, or built by a
faulty builder is judged the same way, so that every check can fail.

========  ==========================================================================
P1        The release holds exactly the allowlisted shape: no field, key or type outside it,
          and no key repeated within one JSON object (readers differ on which value wins).
P2        Every label in the release (a key, a text value, a category level, an arm label)
          is one the source vouches for: a field or key of the allowlist, a column name, an
          endpoint or category level that enough patients share, or the engine's own arm
          label at its place. Any other label fails, as a source identifier where it is or
          contains one, and otherwise as free text that could carry one.
P3        No released number equals, at the precision it is released with, a value that one
          to ``k - 1`` source patients hold for that quantity: the LOQ against each
          patient's lowest value (and it follows the LOQ rule), the reference weight against
          the weights, planned doses, dose times and durations against the individual doses,
          visit times against the observation times (and nominal times), covariate means
          against the covariate's values, category levels and frequencies against the
          source counts, a graded endpoint's levels against the patients observed at each,
          a keep column's value against its holders, a PD baseline against the patients'
          first observations; covariate summaries rest on at least ``k`` kept patients after
          trimming, and none summarises a column of at most ``CODE_VALUES`` values (whose
          mean and SD are equations in the counts), nor fits, by enumeration of the count
          vectors of the column's values where they are few, only vectors that put one to
          ``k - 1`` patients on a value; no number carries more significant figures than its
          rule allows. Every released magnitude (covariate summaries, the reference weight,
          LOQs, visit times, planned doses, keep values judged within their own arm) is
          recomputed from the source by its rule, and one that differs fails.
P4        Every released frequency has at least ``k`` patients on each side, and no released
          total differs from the sum of its released parts, or from any one part, by a group
          under ``k`` (subtraction); every released endpoint, visit period and planned dose
          rests on at least ``k`` patients, graded levels on both sides over the released
          cohort; the cohort size, arm sizes, category and graded frequencies, attendance
          and dose-change rates are recomputed from the source, and one that differs fails
          (a cohort size is not the reader's to trust: frequencies become counts with it);
          the release's own P4 verdict agrees.
P5        No kept patient moves an estimate the release holds by ``review`` or more (``fail``
          or more fails; a PD shape parameter's move counted past the second bar); the
          released PK and PD estimates are those of the fits whose influence was read; the
          release's own P5 verdict agrees. A fit that is not to be trusted (its diagnostics,
          :attr:`synpmx_lite.pmx.population.PopulationFit.diagnostics`, exact leave-one-out
          refits of the PK fit not converged where their readings stay below ``fail``, a
          released PD model's fit not converged, or leave-one-out refits of it not converged)
          makes a pass a review: the readings are pulls on that fit. Below 10 patients nobody
          can be left out, and the result says so.
========  ==========================================================================

Here ``k`` is ``min_arm_patients``, and ``min_category_patients`` for category levels, each at
least :data:`SMALLEST_THRESHOLD`: thresholds may be raised, and the checks follow them; a
release built with a threshold below three is held to three all the same, and fails.
"""

from __future__ import annotations

import copy
import hashlib
import itertools
import json
import math
import numbers
import re
import weakref
from collections.abc import Callable, Iterable

import numpy as np
import pandas as pd
from scipy import stats

from .._validation import check_count
from ..pmx.pd import PD_SHAPES, PdFit
from ..pmx.population import ERROR_MODELS, PopulationFit
from ..pmx.study import StudyEvents, identifier_key
from ..rounding import round_significant
from .influence import MAX_LEFT_OUT_SHARE, PrivacyReport, move_band, verdict
from .protections import CODE_VALUES, TRIM
from .release import (
    EFFECT_KEYS,
    FINGERPRINT_FIELDS,
    GUARANTEE_KEYS,
    OPTIONAL_FIELDS,
    VERDICTS,
    Fingerprint,
    arm_label,
    read_json,
    release_problems,
)

__all__ = [
    "CHECK_QUESTIONS",
    "RELEASED_FIGURES",
    "SMALLEST_THRESHOLD",
    "as_mapping",
    "as_sequence",
    "figures_in",
    "is_number",
    "read_release",
    "release_checks",
]

#: The smallest threshold in common use in statistical disclosure control (Hundepool et al.
#: 2012): the checks hold every release to at least this many patients behind a value.
SMALLEST_THRESHOLD = 3

#: The question each check answers.
CHECK_QUESTIONS = {
    "P1": "No per-patient table is released",
    "P2": "No source identifier is released",
    "P3": "No single patient's value is released",
    "P4": "Every released frequency rests on at least three patients",
    "P5": "No single patient moves a released estimate far",
}

#: Significant figures each kind of released number may carry (the rounding, and the
#: single-value rule); read by the checks and by the readers of two releases (ledger,
#: differencing). An amount may carry more only where it is a dose at least k patients got
#: exactly (a planned dose of 137.5 mg): an arm mean at full precision would give back, to
#: anyone who knows the other patients' doses, the one dose that differs.
RELEASED_FIGURES = {
    "estimate": 1,
    "summary": 2,
    "weight": 1,
    "share": 2,
    "loq": 1,
    "time": 2,
    "amount": 2,
}
#: The most figures a dose or visit time may carry: two, or more where two would merge or swap
#: it with a neighbouring time of its period (its further figures then place it among its
#: neighbours on the grid of its two-figure cell, and the single-value rule judges its
#: two-figure value).
MOST_TIME_FIGURES = 5
_PARAMETERS = ("cl", "v", "q", "vp", "ka", "tlag")
_VOCABULARY_KEYS = {
    "model": ("compartments", "route", "lag"),
    "summary": ("geometric_mean", "sdlog"),
    "arm": ("arm", "patients", "doses", "keep"),
    "dose": ("period", "index", "time", "amount", "duration", "route"),
    "endpoint": ("attendance", "visits", "loq"),
    "checks": ("P4", "P5"),
    "guarantee": GUARANTEE_KEYS,
    "pd": ("shape", "baseline", "baseline_sd", "parameters", "residual"),
}
_PD_PARAMETERS = tuple(dict.fromkeys(name for names in PD_SHAPES.values() for name in names))


# --- Reading the inputs -----------------------------------------------------------------------


def read_release(released: object) -> tuple[dict, list[str]]:
    """The release as the dict its JSON holds, and the keys its JSON repeats in one object.

    A repeated key is read here as its last value, but another JSON reader may take the
    first: what was checked would not be what is read, so P1 fails such a release.
    """
    if isinstance(released, Fingerprint):
        released = released.to_json()
    if not isinstance(released, str):
        raise TypeError(
            f"released must be a Fingerprint or its JSON text, got {type(released).__name__}"
        )
    try:
        parsed, repeated = read_json(released)
    except json.JSONDecodeError as error:
        raise ValueError(f"released is not JSON: {error}") from error
    if not isinstance(parsed, dict):
        raise ValueError(
            f"released must be a fingerprint's JSON object, got a JSON {type(parsed).__name__}"
        )
    return parsed, repeated


def is_number(value: object) -> bool:
    """Whether a value read from a release is a finite real number (not a bool)."""
    return isinstance(value, numbers.Real) and not isinstance(value, bool) and math.isfinite(value)


def _count(value: object) -> bool:
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


def as_mapping(value: object) -> dict:
    """A value read from a release if it is a JSON object, else an empty one (a malformed
    field is then read as absent, and the checks say what is missing)."""
    return value if isinstance(value, dict) else {}


def as_sequence(value: object) -> list:
    """A value read from a release if it is a JSON array, else an empty one."""
    return value if isinstance(value, list) else []


def _numbers_as_read(value: object) -> object:
    """The release with every text that spells a finite number replaced by that number."""
    if isinstance(value, dict):
        return {key: _numbers_as_read(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_numbers_as_read(item) for item in value]
    if isinstance(value, str):
        for kind in (int, float):
            try:
                number = kind(value)
            except ValueError:
                continue
            return number if math.isfinite(number) else value
    return value


def figures_in(value: float) -> int:
    """Significant figures in the shortest decimal text of ``value`` (1 for zero)."""
    digits = np.format_float_positional(abs(float(value)), trim="-").replace(".", "")
    digits = digits.lstrip("0").rstrip("0")
    return max(len(digits), 1)


class _Source:
    """What the checks read from the source study."""

    def __init__(
        self,
        study: StudyEvents,
        min_arm_patients: int,
        min_category_patients: int,
        left_out,
        memo: dict | None = None,
    ) -> None:
        self.study = study
        self._memo: dict = {} if memo is None else memo
        self.n = study.n_patients
        self.min_arm_patients = min_arm_patients
        self.min_category_patients = min_category_patients
        # The patients a release may describe: those of arms with enough patients.
        sizes = study.arms.value_counts()
        self.eligible = study.arms.isin(sizes.index[sizes >= min_arm_patients]).to_numpy()
        # The patients behind the covariate summaries: all but those left out for influence.
        self.kept = ~pd.Index(study.ids).isin(list(left_out))
        self.shared_endpoints = self.memo(("shared endpoints",), self._shared_endpoints)
        # Split once: every check reads the rows of an endpoint, many times over.
        self._rows = self.memo(("rows",), self._rows_by_endpoint)

    def memo(self, key: tuple, compute: Callable[[], object]) -> object:
        """``compute()``, computed once per ``key`` for this source: one release's checks
        recompute the same visit centres, rounded values and rule times several times over.
        Arrays are kept read-only; callers copy what else they change."""
        if key not in self._memo:
            value = compute()
            if isinstance(value, np.ndarray):
                value.flags.writeable = False
            self._memo[key] = value
        return self._memo[key]

    def _shared_endpoints(self) -> frozenset:
        counts = self.study.observations.groupby("endpoint")["patient"].nunique()
        return frozenset(str(e) for e in counts.index[counts >= self.min_arm_patients])

    def _rows_by_endpoint(self) -> dict:
        observations = self.study.observations
        return dict(list(observations.groupby(observations["endpoint"].astype(str))))

    def values(self, column: str) -> tuple[np.ndarray, np.ndarray]:
        """Every patient's value of a numeric covariate, and the patient it belongs to."""
        covariates = self.study.covariates
        if column not in covariates.columns or not pd.api.types.is_numeric_dtype(
            covariates[column]
        ):
            return np.array([]), np.array([], dtype=int)
        return covariates[column].to_numpy(dtype=float), np.arange(self.n)

    def level_holders(self, column: str, level: object) -> int:
        """Patients whose value of ``column`` is ``level`` (numbers by value, text as text)."""
        covariates = self.study.covariates
        if column not in covariates.columns:
            return 0
        key = identifier_key(level)
        return int(sum(identifier_key(v) == key for v in covariates[column]))

    def endpoint_rows(self, endpoint: str) -> pd.DataFrame:
        """The source's observations of ``endpoint`` (none for an endpoint it does not have)."""
        return self._rows.get(endpoint, self.study.observations.iloc[:0])

    def lowest(self, endpoint: str) -> pd.Series:
        """Each patient's lowest positive value of ``endpoint`` (on the linear scale)."""
        return self.memo(("lowest", endpoint), lambda: self._lowest_of(endpoint))

    def _lowest_of(self, endpoint: str) -> pd.Series:
        rows = self.endpoint_rows(endpoint)
        values = rows["dv"].to_numpy(dtype=float)
        if self.study.roles.log_dv and endpoint == self.study.pk_endpoint:
            values = np.exp(values)
        positive = rows.assign(value=values)[values > 0]
        return positive.groupby("patient")["value"].min()

    def first_values(self, endpoint: str) -> tuple[np.ndarray, np.ndarray]:
        """Each patient's first observation of an endpoint (their baseline), and the patient."""
        rows = self.endpoint_rows(endpoint).sort_values(["patient", "period", "time"])
        first = rows.groupby("patient")["dv"].first()
        return first.to_numpy(float), first.index.to_numpy()

    def visit_times(self, endpoint: str) -> tuple[np.ndarray, np.ndarray]:
        rows = self.endpoint_rows(endpoint)
        times, owners = [rows["time"].to_numpy(float)], [rows["patient"].to_numpy()]
        if self.study.roles.nominal_time:
            times.append(rows["visit"].to_numpy(float))
            owners.append(rows["patient"].to_numpy())
        return np.concatenate(times), np.concatenate(owners)


# What the checks recomputed from each living study, by its contents and the thresholds: a
# fingerprint is checked as it is built and again as it leaves, and each time the checks
# recompute the same values. Only derived values are kept (never the study), so that an entry
# goes when its study does.
_SOURCES: dict[int, tuple[weakref.ref, dict]] = {}


def _contents(study: StudyEvents) -> str:
    """A digest of everything the checks read from ``study``, so that a study changed in place
    is read afresh."""
    digest = hashlib.sha256(repr((study.roles, list(study.ids))).encode())
    for frame in (study.observations, study.doses, study.covariates, study.arms.to_frame()):
        digest.update(pd.util.hash_pandas_object(frame, index=True).to_numpy().tobytes())
        digest.update(repr((list(frame.columns), list(frame.dtypes))).encode())
    return digest.hexdigest()


def _source_for(
    study: StudyEvents, min_arm_patients: int, min_category_patients: int, left_out
) -> _Source:
    """The :class:`_Source` of ``study`` at these thresholds, with what earlier checks of the
    same study, unchanged, recomputed."""
    place = id(study)
    held = _SOURCES.get(place)
    if held is None or held[0]() is not study:
        sources = _SOURCES  # still there when the interpreter's exit clears the module
        forget = weakref.ref(study, lambda _: sources.pop(place, None))
        held = _SOURCES[place] = (forget, {})
    key = (_contents(study), min_arm_patients, min_category_patients, tuple(left_out))
    memo = held[1].setdefault(key, {})
    return _Source(study, min_arm_patients, min_category_patients, left_out, memo=memo)


def _holders(
    values: np.ndarray, owners: np.ndarray, released: float, figures: int, source: _Source
) -> int:
    """Patients whose value of the quantity reads ``released`` at ``figures`` figures."""
    finite = np.isfinite(values)
    if not finite.any():
        return 0
    kept = values[finite]
    rounded = source.memo(
        ("rounded", figures, kept.tobytes()), lambda: round_significant(kept, figures)
    )
    held = np.isclose(rounded, released, rtol=1e-9, atol=0)
    return np.unique(owners[finite][held]).size


def _implied_counts(frequency: float, total: int) -> range:
    """The whole patient counts out of ``total`` that round to ``frequency`` at its precision.

    The precision is read from the number as written (0.08: one figure, 0.083: two), the
    coarser reading where trailing zeros leave it open, so that a group is called under the
    threshold only where every count the number can stand for is.
    """
    figures = figures_in(frequency)
    half_unit = 0.5 * 10.0 ** (math.floor(math.log10(frequency)) - figures + 1) if frequency else 0
    low = math.ceil((frequency - half_unit) * total - 1e-9)
    high = math.floor((frequency + half_unit) * total + 1e-9)
    return range(max(low, 0), min(high, total) + 1)


# --- P1 and P2 --------------------------------------------------------------------------------


def _p2_labels(released: dict) -> list[tuple[tuple, object, str]]:
    """Every label in the release: ``(path, label, kind)``, kind ``key``, ``text`` or ``level``."""
    labels = []

    def walk(value: object, path: tuple) -> None:
        if isinstance(value, dict):
            for key, item in value.items():
                labels.append(((*path, key), key, "key"))
                walk(item, (*path, key))
        elif isinstance(value, list):
            for i, item in enumerate(value):
                walk(item, (*path, i))
        elif isinstance(value, str):
            labels.append((path, value, "text"))

    walk(released, ())
    for name, pairs in as_mapping(released.get("categories")).items():
        for j, pair in enumerate(as_sequence(pairs)):
            if isinstance(pair, list) and pair and is_number(pair[0]):
                labels.append((("categories", name, j, 0), pair[0], "level"))
    # A covariate effect's level is judged as a level of its covariate: the path names it.
    labels = [
        label for label in labels if label[0][:1] != ("effects",) or label[0][2:] != ("level",)
    ]
    for i, effect in enumerate(as_sequence(released.get("effects"))):
        effect = as_mapping(effect)
        level = effect.get("level")
        if isinstance(level, str) or is_number(level):
            labels.append((("effects", i, "level", effect.get("covariate")), level, "level"))
    return labels


def _vocabulary(path: tuple, label: object, kind: str, source: _Source) -> bool:
    """Whether the source shows that the label at ``path`` is not an identifier."""
    roles = source.study.roles
    depth, head = len(path), path[0] if path else None
    if kind == "key":
        if depth == 1:
            return label in FINGERPRINT_FIELDS + OPTIONAL_FIELDS
        if head == "effects" and depth == 3:
            return label in EFFECT_KEYS
        if head == "correlation" and depth == 2:  # "cl,v": two parameters' names
            names = str(label).split(",")
            return len(names) == 2 and all(name in _PARAMETERS for name in names)
        if depth == 2:
            return label in {
                "model": _VOCABULARY_KEYS["model"],
                "typical": _PARAMETERS,
                "omega": _PARAMETERS,
                "residual": ("additive", "proportional"),
                "covariates": roles.covariates,
                "categories": roles.covariates,
                "pd": tuple(source.shared_endpoints),
                "graded": tuple(source.shared_endpoints),
                "endpoints": tuple(source.shared_endpoints),
                "checks": _VOCABULARY_KEYS["checks"],
                "guarantee": _VOCABULARY_KEYS["guarantee"],
            }.get(head, ())
        if head == "pd" and depth == 3:
            return label in _VOCABULARY_KEYS["pd"]
        if head == "pd" and depth == 4:
            return path[2] == "parameters" and label in _PD_PARAMETERS
        if head == "covariates" and depth == 3:
            return label in _VOCABULARY_KEYS["summary"]
        if head == "endpoints" and depth == 3:
            return label in _VOCABULARY_KEYS["endpoint"]
        if head == "arms" and depth == 3:
            return label in _VOCABULARY_KEYS["arm"]
        if head == "arms" and depth == 4 and path[2] == "keep":
            return label in roles.keep
        if head == "arms" and depth == 5:
            return label in _VOCABULARY_KEYS["dose"]
        return False
    if path == ("model", "route"):
        return label in ("oral", "iv")
    if head == "arms" and depth == 5 and path[4] == "route":
        return label in ("oral", "iv")
    if path == ("error",):
        return label in ERROR_MODELS
    if path == ("pk_endpoint",):
        return label in source.shared_endpoints
    if head == "checks" and depth == 2:
        return label in VERDICTS
    if head == "pd" and depth == 3 and path[2] == "shape":
        return label in PD_SHAPES
    if head == "arms" and depth == 3 and path[2] == "arm":
        return label == arm_label(path[1])
    if head == "arms" and depth == 4 and path[2] == "keep":
        return source.level_holders(str(path[3]), label) >= source.min_arm_patients
    if head == "categories" and depth == 4 and path[3] == 0:
        return source.level_holders(str(path[1]), label) >= source.min_category_patients
    if head == "effects" and depth == 3:
        return label in {"parameter": _PARAMETERS, "covariate": roles.covariates}.get(path[2], ())
    if head == "effects" and depth == 4 and path[2] == "level":  # path[3]: its covariate
        return source.level_holders(str(path[3]), label) >= source.min_category_patients
    return False


def _p2(released: dict, source: _Source) -> list[str]:
    """Labels that are or contain a source ID, and labels the source does not vouch for.

    A label passes only where the source shows what it is (:func:`_vocabulary`): any other
    text is a free channel that can carry an identifier in a form no comparison would
    recognise ("first: 101", an initial, a date of birth), so it fails even where it holds no
    ID that can be seen; the message says which it is.
    """
    numbers_, texts = set(), set()
    for value in source.study.ids:
        kind, key = identifier_key(value)
        if kind == "number":
            numbers_.add(key)
            if float(key).is_integer():
                texts.add(str(int(key)))
        texts.add(str(value).strip().casefold())
    # An ID inside a label: as a whole token (not a digit of a longer number), or anywhere once
    # it is long enough not to turn up by chance.
    inside = re.compile(
        "|".join(
            rf"(?<![0-9a-z]){re.escape(t)}(?![0-9a-z])" if len(t) < 4 else re.escape(t)
            for t in sorted(texts, key=len, reverse=True)
            if t
        )
        or r"(?!)"
    )
    identifiers, unvouched = [], []
    for path, label, kind in _p2_labels(released):
        if _vocabulary(path, label, kind, source):
            continue
        label_kind, key = identifier_key(label)
        text = str(label).strip().casefold()
        where = f"{label!r} at {'.'.join(map(str, path)) or 'top level'}"
        if (label_kind == "number" and key in numbers_) or inside.search(text):
            identifiers.append(where)
        else:
            unvouched.append(where)
    problems = []
    if identifiers:
        problems.append(f"source IDs in the fingerprint: {', '.join(identifiers)}")
    if unvouched:
        problems.append(
            f"labels the source does not vouch for (free text can carry an ID): "
            f"{', '.join(unvouched)}"
        )
    return problems


# --- P3 ---------------------------------------------------------------------------------------


def _p3(released: dict, source: _Source) -> list[str]:
    """Released numbers that are one to ``k - 1`` patients' values, or carry too many figures."""
    problems = []
    for field in ("typical", "omega", "residual", "correlation"):
        for name, value in as_mapping(released.get(field)).items():
            problems += _excess_figures(value, RELEASED_FIGURES["estimate"], f"{field} {name}")
    for part in (
        _p3_graded,
        _p3_pd,
        _p3_covariates,
        _p3_weight,
        _p3_categories,
        _p3_keep,
        _p3_doses,
        _p3_endpoints,
        _p3_guarantee,
        _recomputed_magnitudes,
    ):
        problems += part(released, source)
    rate = released.get("dose_change_rate")
    return problems + _excess_figures(rate, RELEASED_FIGURES["share"], "dose-change rate")


def _p3_guarantee(released: dict, source: _Source) -> list[str]:
    """A stated guarantee's terms are numbers that leave like any other: epsilon at the
    figures of a share, and no more groups than half the patients (a group's fit needs two)."""
    terms = as_mapping(released.get("guarantee"))
    problems = _excess_figures(terms.get("epsilon"), RELEASED_FIGURES["share"], "guarantee epsilon")
    subsets = terms.get("subsets")
    if _count(subsets) and subsets > source.n // 2:
        problems.append(
            f"guarantee subsets {subsets} is more groups than half the {source.n} patients"
        )
    return problems


def _excess_figures(value: object, limit: int, where: str) -> list[str]:
    """The problem, if any, that ``value`` carries more than ``limit`` significant figures."""
    if is_number(value) and figures_in(value) > limit:
        return [f"{where} {value:g} has more than {limit} significant figure(s)"]
    return []


def _held_by_few(
    value: object,
    values: object,
    owners: object,
    where: str,
    limit: int,
    source: _Source,
    *,
    at: int | None = None,
) -> list[str]:
    """The problem, if any, that ``value`` at its precision (at least ``limit`` figures; or
    at ``at`` figures, where given) is the value of one to ``k - 1`` patients."""
    if not is_number(value) or len(values) == 0:
        return []
    precision = at or max(limit, figures_in(value))
    reading = float(round_significant(value, precision))
    holders = _holders(np.asarray(values, float), np.asarray(owners), reading, precision, source)
    if 0 < holders < source.min_arm_patients:
        return [f"{where} {value:g} is the value of {holders} patient(s) at {precision} figure(s)"]
    return []


def _p3_graded(released: dict, source: _Source) -> list[str]:
    """A graded endpoint's level frequencies: their figures, and levels few patients show."""
    problems = []
    for name, pairs in as_mapping(released.get("graded")).items():
        rows = source.endpoint_rows(str(name))
        rows = rows[rows["patient"].isin(np.flatnonzero(source.eligible))]
        for pair in as_sequence(pairs):
            if not isinstance(pair, list) or len(pair) != 2 or not is_number(pair[0]):
                continue
            level, frequency = pair
            where = f"frequency of {name} level {level:g}"
            problems += _excess_figures(frequency, RELEASED_FIGURES["share"], where)
            held = rows.loc[np.isclose(rows["dv"], level), "patient"].nunique()
            if held < source.min_category_patients:
                problems.append(f"level {level:g} of {name} is observed in {held} patient(s)")
    return problems


def _p3_pd(released: dict, source: _Source) -> list[str]:
    """PD models: the figures of every number, and the baseline against first observations."""
    problems = []
    for name, model in as_mapping(released.get("pd")).items():
        model = as_mapping(model)
        numbers_ = {k: model.get(k) for k in ("baseline", "baseline_sd", "residual")}
        numbers_.update({k: v for k, v in as_mapping(model.get("parameters")).items()})
        for key, value in numbers_.items():
            problems += _excess_figures(value, RELEASED_FIGURES["estimate"], f"PD {name} {key}")
        values, owners = source.first_values(str(name))
        problems += _held_by_few(
            model.get("baseline"), values, owners, f"PD {name} baseline", 1, source
        )
    return problems


def _p3_covariates(released: dict, source: _Source) -> list[str]:
    """Covariate summaries: enough kept patients once trimmed, no code, figures, the mean."""
    problems = []
    kept = int(source.kept.sum())
    core = kept - 2 * max(1, math.ceil(TRIM * kept))
    for name, summary in as_mapping(released.get("covariates")).items():
        summary = as_mapping(summary)
        values, owners = source.values(str(name))
        if core < source.min_arm_patients:
            problems.append(
                f"covariate {name} is summarised on {max(core, 0)} kept patient(s) once its "
                f"extremes are set aside"
            )
        distinct = np.unique(values).size
        if len(values) and distinct <= CODE_VALUES:
            problems.append(
                f"covariate {name} takes {distinct} values: its mean and SD count the patients "
                "who hold each (a code is released as categories)"
            )
        for key in ("geometric_mean", "sdlog"):
            problems += _excess_figures(
                summary.get(key), RELEASED_FIGURES["summary"], f"covariate {name} {key}"
            )
        mean = summary.get("geometric_mean")
        problems += _held_by_few(mean, values, owners, f"covariate {name} mean", 2, source)
    return problems


def _p3_weight(released: dict, source: _Source) -> list[str]:
    """The reference weight: its figures, and against the weights."""
    weight = source.study.roles.weight
    if weight is None:
        return []
    values, owners = source.values(weight)
    reference = released.get("reference_weight")
    limit = RELEASED_FIGURES["weight"]
    problems = _excess_figures(reference, limit, "reference weight")
    return problems + _held_by_few(reference, values, owners, "reference weight", limit, source)


def _p3_categories(released: dict, source: _Source) -> list[str]:
    """Category levels few patients hold, and frequencies: figures, and counts they imply."""
    problems = []
    k_category = source.min_category_patients
    cohort = released.get("cohort_size")
    for name, pairs in as_mapping(released.get("categories")).items():
        for pair in as_sequence(pairs):
            if not isinstance(pair, list) or len(pair) != 2:
                continue
            level, frequency = pair
            held = source.level_holders(str(name), level)
            if 0 < held < k_category:
                problems.append(f"level {level!r} of {name} is held by {held} patient(s)")
            if is_number(frequency):
                where = f"frequency of {name} {level!r}"
                problems += _excess_figures(frequency, RELEASED_FIGURES["share"], where)
            if is_number(frequency) and isinstance(cohort, int) and cohort > 0:
                span = _implied_counts(frequency, cohort)
                if span and span[0] >= 1 and span[-1] < k_category:
                    problems.append(
                        f"frequency {frequency:g} of {name} {level!r} stands for {span[-1]} or "
                        f"fewer of {cohort} patients"
                    )
    return problems


def _p3_keep(released: dict, source: _Source) -> list[str]:
    """Keep columns' values on the arms that fewer than ``k`` patients hold."""
    problems = []
    k = source.min_arm_patients
    for i, arm in enumerate(as_sequence(released.get("arms"))):
        for column, value in as_mapping(as_mapping(arm).get("keep")).items():
            held = source.level_holders(str(column), value) if value is not None else 0
            if value is not None and held < k:
                problems.append(
                    f"arm {i + 1} keep column {column} value {value!r} is held by {held} patient(s)"
                )
    return problems


def _p3_doses(released: dict, source: _Source) -> list[str]:
    """Planned doses' amounts, times and durations against the individual doses."""
    problems = []
    k = source.min_arm_patients
    doses = source.study.doses
    dose_owners = doses["patient"].to_numpy()
    for i, arm in enumerate(as_sequence(released.get("arms"))):
        for dose in as_sequence(as_mapping(arm).get("doses")):
            dose = as_mapping(dose)
            where = f"arm {i + 1} dose {dose.get('index')} of period {dose.get('period')}"
            amount = dose.get("amount")
            problems += _held_by_few(
                amount,
                doses["amount"],
                dose_owners,
                f"{where}: amount",
                RELEASED_FIGURES["amount"],
                source,
            )
            if is_number(amount) and figures_in(amount) > RELEASED_FIGURES["amount"]:
                given = _holders(doses["amount"].to_numpy(float), dose_owners, amount, 17, source)
                if given < k:
                    problems.append(
                        f"{where}: amount {amount!r} has more than {RELEASED_FIGURES['amount']} "
                        f"significant figures and is a dose {given} patient(s) got, not {k}"
                    )
            for key in ("time", "duration"):
                value, limit = dose.get(key), RELEASED_FIGURES["time"]
                most = MOST_TIME_FIGURES if key == "time" else limit
                problems += _excess_figures(value, most, f"{where}: {key}")
                # A time's figures past two place it among its neighbours (the time rule): the
                # single-value rule judges what it says of the patients, its two figures.
                problems += _held_by_few(
                    value,
                    doses[key],
                    dose_owners,
                    f"{where}: {key}",
                    limit,
                    source,
                    at=limit if key == "time" else None,
                )
    return problems


def _p3_endpoints(released: dict, source: _Source) -> list[str]:
    """Endpoints: attendance figures, visit times against the observation times, the LOQ."""
    problems = []
    for name, endpoint in as_mapping(released.get("endpoints")).items():
        endpoint = as_mapping(endpoint)
        problems += _excess_figures(
            endpoint.get("attendance"), RELEASED_FIGURES["share"], f"{name} attendance"
        )
        times, owners = source.visit_times(str(name))
        for visit in as_sequence(endpoint.get("visits")):
            if isinstance(visit, list) and len(visit) == 2:
                where, limit = f"{name} visit time", RELEASED_FIGURES["time"]
                problems += _excess_figures(visit[1], MOST_TIME_FIGURES, where)
                problems += _held_by_few(visit[1], times, owners, where, limit, source, at=limit)
        problems += _loq_problems(name, endpoint.get("loq"), source)
    return problems


def _loq_problems(name: object, loq: object, source: _Source) -> list[str]:
    """The LOQ rule, judged on the source: a 1-2-5 value at most half the lowest value that
    ``k`` patients reached, which no one to ``k - 1`` patients' lowest values equal."""
    if loq is None or not is_number(loq):
        return []
    k = source.min_arm_patients
    lowest = source.lowest(str(name))
    if len(lowest) < k:
        return [f"{name} LOQ {loq:g} rests on {len(lowest)} patient(s) with a positive value"]
    problems = []
    mantissa = loq / 10.0 ** math.floor(math.log10(loq))
    if not any(math.isclose(mantissa, m, rel_tol=1e-9) for m in (1, 2, 5)):
        problems.append(f"{name} LOQ {loq:g} is not 1, 2 or 5 times a power of ten")
    bound = np.sort(lowest.to_numpy())[k - 1] / 2
    if loq > bound * (1 + 1e-9):
        problems.append(f"{name} LOQ {loq:g} lies above half the lowest value {k} patients reached")
    precision = max(RELEASED_FIGURES["loq"], figures_in(loq))
    holders = _holders(lowest.to_numpy(), lowest.index.to_numpy(), loq, precision, source)
    if 0 < holders < k:
        problems.append(f"{name} LOQ {loq:g} is the lowest value of {holders} patient(s)")
    return problems


# --- P4 ---------------------------------------------------------------------------------------


def _p4(released: dict, source: _Source) -> tuple[list[str], float]:
    """Groups behind every released frequency and count, both sides; the smallest of them.

    The groups behind the release's structure (:func:`_structure_groups`) must reach ``k``
    too, but do not enter the smallest group, which describes frequencies and counts.

    A group read from a frequency is known only to within its rounding: it is a whole number
    of patients in ``[low, high]``, and fails only where every such number lies from 1 to
    ``k - 1``.
    """
    k, k_category = source.min_arm_patients, source.min_category_patients
    cohort = released.get("cohort_size")
    cohort = cohort if isinstance(cohort, int) and not isinstance(cohort, bool) else None
    eligible = np.flatnonzero(source.eligible)
    # (what, low, high, threshold) of each group, exact where low == high.
    groups = [
        *_arm_groups(released, cohort, k),
        *_category_groups(released, cohort, k_category),
        *((what, n, n, k) for what, n in _attendance_and_dose_groups(released, source, eligible)),
        *((what, n, n, k_category) for what, n in _graded_groups(released, source, eligible)),
    ]
    problems = _recomputed_counts(released, source)
    for what, low, high, threshold in groups:
        if high < 0:
            problems.append(f"{what}: {high} (more patients in the parts than in the total)")
        elif low >= 1 and high < threshold:
            problems.append(f"{what}: {low if low == high else f'{low} to {high}'}")
    sizes = [round((low + high) / 2) for _, low, high, _ in groups if low >= 1]
    # The groups behind the release's structure fail the same way, outside the smallest group,
    # which describes the released frequencies and counts.
    for what, patients in _structure_groups(released, source, eligible):
        if 1 <= patients < k:
            problems.append(f"{what}: {patients}")
    return problems, (min(sizes) if sizes else math.inf)


def _arm_groups(released: dict, cohort: int | None, k: int) -> list[tuple[str, int, int, int]]:
    """The cohort, each released arm, the cohort less each arm and less all of them."""
    arms = [a.get("patients") for a in map(as_mapping, as_sequence(released.get("arms")))]
    arms = [a for a in arms if isinstance(a, int) and not isinstance(a, bool)]
    groups = [("the cohort", cohort)] if cohort else []
    for i, patients in enumerate(arms):
        groups.append((f"arm {i + 1}", patients))
        if cohort is not None:
            groups.append((f"the cohort less arm {i + 1}", cohort - patients))
    if cohort is not None and arms:
        groups.append(("the cohort less its released arms", cohort - sum(arms)))
    return [(what, n, n, k) for what, n in groups]


def _category_groups(
    released: dict, cohort: int | None, k_category: int
) -> list[tuple[str, int, int, int]]:
    """Each released category level's patients, the others, and those in no released level,
    each known to within the rounding of its frequency (:func:`_implied_counts`)."""
    groups = []
    for name, pairs in as_mapping(released.get("categories")).items():
        frequencies = [
            p[1]
            for p in as_sequence(pairs)
            if isinstance(p, list) and len(p) == 2 and is_number(p[1])
        ]
        if not cohort or not frequencies:
            continue
        spans = [_implied_counts(f, cohort) for f in frequencies]
        for frequency, span in zip(frequencies, spans, strict=True):
            if not span:
                continue
            groups.append((f"{name} level at {frequency:g}", span[0], span[-1], k_category))
            groups.append(
                (
                    f"{name}: the others than the level at {frequency:g}",
                    cohort - span[-1],
                    cohort - span[0],
                    k_category,
                )
            )
        low = cohort - sum(span[-1] for span in spans if span)
        high = cohort - sum(span[0] for span in spans if span)
        groups.append((f"{name}: patients in no released level", max(low, 0), high, k_category))
    return groups


def _attendance_and_dose_groups(
    released: dict, source: _Source, eligible: np.ndarray
) -> list[tuple[str, int]]:
    """The patients who missed a visit and those who attended one, for each endpoint released
    with an attendance rate below 1, and those whose dose changed or did not, where the
    release gives a dose-change rate strictly between 0 and 1."""
    groups = []
    for name, endpoint in as_mapping(released.get("endpoints")).items():
        rate = as_mapping(endpoint).get("attendance")
        if is_number(rate) and 0 < rate < 1:
            missed, attended, _ = _attendance_groups(str(name), source, eligible)
            groups.append((f"{name}: patients who missed a visit", missed))
            groups.append((f"{name}: patients who attended a visit", attended))
    rate = released.get("dose_change_rate")
    if is_number(rate) and 0 < rate < 1:
        doses = source.study.doses[source.study.doses["patient"].isin(eligible)]
        previous = doses.groupby(["patient", "period"])["amount"].shift()
        changed = doses.loc[previous.notna() & (doses["amount"] != previous), "patient"].nunique()
        groups.append(("patients whose dose changed", changed))
        groups.append(("patients whose dose did not change", eligible.size - changed))
    return groups


def _graded_groups(released: dict, source: _Source, eligible: np.ndarray) -> list:
    """The patients of the cohort observed at each released graded level, and at another."""
    groups = []
    for name, pairs in as_mapping(released.get("graded")).items():
        rows = source.endpoint_rows(str(name))
        rows = rows[rows["patient"].isin(eligible)]
        for pair in as_sequence(pairs):
            if isinstance(pair, list) and len(pair) == 2 and is_number(pair[0]):
                at = np.isclose(rows["dv"], pair[0])
                groups.append((f"{name} level {pair[0]:g}", rows.loc[at, "patient"].nunique()))
                groups.append(
                    (f"{name}: others than level {pair[0]:g}", rows.loc[~at, "patient"].nunique())
                )
    return groups


def _structure_groups(released: dict, source: _Source, eligible: np.ndarray) -> list:
    """The patients behind each released endpoint, visit period and planned dose.

    A planned dose stands for the patients of its arm who got a dose at that place
    (period and index), the visits of a period for the patients observed in it and, ranked by
    attendance, for the patients of the least attended of them, an endpoint or a PD model for
    the patients who have it: each is a group, and a second dosing period, or a fifth visit,
    that one patient had would give that patient away as surely as a count of one. A released arm is
    matched to the source arms of its size; where several have that size the check cannot
    tell them apart and counts the arm among them with the most patients at that place.
    """
    reach, sizes = source.memo(
        ("dose reach", eligible.tobytes()), lambda: _dose_reach(source, eligible)
    )
    groups = []
    for i, arm in enumerate(map(as_mapping, as_sequence(released.get("arms")))):
        candidates = list(sizes.index[sizes == arm.get("patients")]) or list(sizes.index)
        for dose in map(as_mapping, as_sequence(arm.get("doses"))):
            period, index = dose.get("period"), dose.get("index")
            if not (_count(period) and _count(index)):
                continue  # P1 reports it
            got = max((int(reach.get((a, period, index), 0)) for a in candidates), default=0)
            groups.append((f"arm {i + 1}: patients given dose {index} of period {period}", got))
    for name, endpoint in as_mapping(released.get("endpoints")).items():
        having, observed, reached = _endpoint_reach(str(name), source, eligible)
        groups.append((f"{name}: patients with the endpoint", having))
        visits = as_sequence(as_mapping(endpoint).get("visits"))
        periods = pd.Series(
            [v[0] for v in visits if isinstance(v, list) and len(v) == 2 and _count(v[0])],
            dtype=object,
        ).value_counts()
        for period, released_visits in sorted(periods.items()):
            groups.append(
                (f"{name}: patients seen in period {period}", int(observed.get(period, 0)))
            )
            # The released visits of a period stand for its best-attended ones: the last of
            # them for the patients of the visit ranked at the number released.
            ranked = np.sort(reached.get(period, pd.Series(dtype=int)).to_numpy())[::-1]
            last = int(ranked[released_visits - 1]) if released_visits <= ranked.size else 0
            groups.append((f"{name}: patients at visit {released_visits} of period {period}", last))
    # A PD model stands for the patients with its endpoint, whether or not the endpoint's
    # visits are released beside it.
    released_endpoints = set(map(str, as_mapping(released.get("endpoints"))))
    for name in as_mapping(released.get("pd")):
        if str(name) not in released_endpoints:
            having = _endpoint_reach(str(name), source, eligible)[0]
            groups.append((f"{name}: patients behind its PD model", having))
    return groups


def _dose_reach(source: _Source, eligible: np.ndarray) -> tuple[pd.Series, pd.Series]:
    """Patients given each dose (arm, period, index among the period's doses), and the
    patients of each arm, among ``eligible``."""
    arms = source.study.arms.to_numpy()
    doses = source.study.doses[source.study.doses["patient"].isin(eligible)].copy()
    doses["index"] = doses.groupby(["patient", "period"]).cumcount()
    doses["arm"] = arms[doses["patient"].to_numpy()]
    reach = doses.groupby(["arm", "period", "index"])["patient"].nunique()
    return reach, pd.Series(arms[eligible]).value_counts()


def _endpoint_reach(
    endpoint: str, source: _Source, eligible: np.ndarray
) -> tuple[int, pd.Series, pd.Series]:
    """Patients among ``eligible`` with observations of ``endpoint``: in all, in each period
    and at each visit (period, visit)."""

    def reach() -> tuple[int, pd.Series, pd.Series]:
        rows = source.endpoint_rows(endpoint)
        rows = rows[rows["patient"].isin(eligible)]
        by_period = rows.groupby("period")["patient"].nunique()
        by_visit = rows.groupby(["period", "visit"])["patient"].nunique()
        return rows["patient"].nunique(), by_period, by_visit

    return source.memo(("endpoint reach", endpoint, eligible.tobytes()), reach)


def _attendance_groups(
    endpoint: str, source: _Source, eligible: np.ndarray
) -> tuple[int, int, float]:
    """Patients who missed at least one scheduled visit, who attended at least one, and the
    share of scheduled visits attended (each counted once per patient)."""
    key = ("attendance", endpoint, np.asarray(eligible).tobytes())
    return source.memo(key, lambda: _attendance_groups_of(endpoint, source, eligible))


def _attendance_groups_of(
    endpoint: str, source: _Source, eligible: np.ndarray
) -> tuple[int, int, float]:
    rows = source.endpoint_rows(endpoint)
    rows = rows[rows["patient"].isin(eligible)].drop_duplicates(["patient", "period", "visit"])
    reached = rows.groupby(["period", "visit"])["patient"].nunique()
    visits = reached.index[reached >= source.min_arm_patients]
    scheduled = rows[pd.MultiIndex.from_frame(rows[["period", "visit"]]).isin(visits)]
    patients = rows["patient"].unique()
    attended = scheduled.groupby("patient").size().reindex(patients, fill_value=0)
    share = attended.sum() / (patients.size * len(visits)) if len(visits) else 1.0
    return int((attended < len(visits)).sum()), int((attended > 0).sum()), float(share)


# --- Every released number recomputed ---------------------------------------------------------

# The most count vectors the code check enumerates (:func:`_code_vectors`); past it a column
# with at most CODE_VALUES values fails as a code without the enumeration.
_ENUMERATION_LIMIT = 200_000


def _trimmed(sorted_logs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Trimmed mean and corrected SD of each row of sorted logs, in the checks' own code: the
    share :data:`TRIM` set aside at each end (at least one, two values kept at least), the SD
    divided by that of a normal truncated at the same quantiles."""
    n = sorted_logs.shape[1]
    aside = max(1, math.ceil(TRIM * n))
    aside = (n - 2) // 2 if n - 2 * aside < 2 else aside
    core = sorted_logs[:, aside : n - aside]
    share = aside / n
    z = stats.norm.isf(share)
    truncated_sd = math.sqrt(1 - 2 * z * stats.norm.pdf(z) / (1 - 2 * share))
    return core.mean(axis=1), core.std(axis=1, ddof=1) / truncated_sd


def _unit(value: float, figures: int) -> float:
    return 10.0 ** (math.floor(math.log10(abs(value))) - figures + 1)


def _grid(low: float, high: float, figures: int) -> list[float]:
    """The numbers at ``figures`` significant figures from ``low`` to ``high``, 0 included."""
    found = [0.0] if low <= 0 <= high else []
    value = max(low, 10.0**-300)
    value = float(round_significant(value, figures))
    while value <= high * (1 + 1e-12):
        if value >= low * (1 - 1e-12):
            found.append(value)
        value = float(round_significant(value + _unit(value, figures) * 0.999, figures))
    return found


def _rule_value(
    center: float, values: object, owners: object, figures: int, source: _Source, *, positive: bool
) -> float:
    """What the single-value rule releases for ``center``: the number at ``figures`` figures
    nearest to it (the smaller on a tie) that no one to ``k - 1`` patients' values read as,
    found by widening a window around ``center`` until it holds one. The grid ends below at 0 and at
    the unit of the largest value (or of ``center``, if smaller)."""
    values, owners = np.asarray(values, float), np.asarray(owners)
    finite = np.isfinite(values)
    values, owners = values[finite], owners[finite]
    rounded = source.memo(
        ("rounded", figures, values.tobytes()), lambda: round_significant(values, figures)
    )

    def free(candidate: float) -> bool:
        if positive and candidate <= 0:
            return False
        held = np.unique(owners[np.isclose(rounded, candidate, rtol=1e-9, atol=0)]).size
        return not 0 < held < source.min_arm_patients

    start = float(round_significant(center, figures)) if center > 0 else 0.0
    if free(start):
        return start
    floor = _unit(float(np.max(np.abs(values), initial=0.0)) or 1.0, figures)
    floor = min(floor, _unit(start, figures)) if start > 0 else floor
    width = _unit(start, figures) if start > 0 else floor
    while True:
        grid = _grid(max(center - width, floor), center + width, figures)
        grid = ([0.0] if center - width <= 0 else []) + grid
        found = [c for c in grid if free(c)]
        if found:
            return min(found, key=lambda c: (abs(c - center), c))
        width *= 2


def _differs(value: object, expected: float | None, where: str) -> list[str]:
    """The problem, if any, that a released number is not the one the source gives."""
    if expected is None:
        return [] if value is None else [f"{where} {value!r} is released, the source gives none"]
    if is_number(value) and math.isclose(value, expected, rel_tol=1e-9, abs_tol=1e-12):
        return []
    return [f"{where} {value!r} is not what the source gives ({expected:g})"]


def _arm_order(source: _Source) -> list:
    """The source arms a release describes, in its order: most patients first, then first
    seen."""
    return list(source.memo(("arm order",), lambda: tuple(_arm_order_of(source))))


def _arm_order_of(source: _Source) -> list:
    arms = source.study.arms
    first = {arm: i for i, arm in enumerate(pd.unique(arms))}
    sizes = arms.value_counts()
    eligible = [arm for arm in first if sizes[arm] >= source.min_arm_patients]
    return sorted(eligible, key=lambda arm: (-int(sizes[arm]), first[arm]))


def _recomputed_counts(released: dict, source: _Source) -> list[str]:
    """The cohort size, arm sizes, category and graded frequencies and the rates, each
    recomputed from the source and compared with the release (part of P4)."""
    sizes = source.study.arms.value_counts()
    order = _arm_order(source)
    problems = _differs(
        released.get("cohort_size"), float(sum(sizes[a] for a in order)), "cohort_size"
    )
    shown = [as_mapping(arm).get("patients") for arm in as_sequence(released.get("arms"))]
    if shown != [int(sizes[a]) for a in order]:
        problems.append(f"arm sizes {shown} are not the source's {[int(sizes[a]) for a in order]}")
    eligible = np.flatnonzero(source.eligible)
    for name, pairs in as_mapping(released.get("categories")).items():
        column = source.study.covariates.get(str(name))
        if column is not None:
            levels = pd.Series([_key(v) for v in column.iloc[eligible]])
            counts = levels.value_counts()
            problems += _folded_frequencies(
                pairs, counts, counts, source.min_category_patients, f"category {name}"
            )
    for name, pairs in as_mapping(released.get("graded")).items():
        rows = source.endpoint_rows(str(name))
        rows = rows[rows["patient"].isin(eligible)]
        counts = rows["dv"].map(_key).value_counts()
        holders = rows.groupby(rows["dv"].map(_key))["patient"].nunique()
        problems += _folded_frequencies(
            pairs, counts, holders, source.min_category_patients, f"graded {name}"
        )
    return problems + _recomputed_rates(released, source, eligible)


def _folded_frequencies(
    pairs: object, counts: pd.Series, holders: pd.Series, threshold: int, where: str
) -> list[str]:
    """Released ``[level, frequency]`` pairs against the source's counts: the levels that
    ``threshold`` patients hold, the others folded into the most common of them."""
    kept = holders.index[holders >= threshold]
    released = {_key(p[0]): p[1] for p in as_sequence(pairs) if isinstance(p, list) and len(p) == 2}
    if len(kept) < 2:
        return [f"{where} is released, but fewer than two of its levels reach {threshold}"]
    if set(released) != set(kept):
        return [f"{where} releases levels other than the {len(kept)} that {threshold} hold"]
    total, folded = counts.sum(), counts.drop(kept).sum()
    largest = counts[kept].max()
    problems = []
    for key, frequency in released.items():
        count = counts[key]
        allowed = [float(round_significant(count / total, 2))]
        if count == largest:  # the folded levels join the most common (any of a tie)
            allowed.append(float(round_significant((count + folded) / total, 2)))
        if not (is_number(frequency) and any(math.isclose(frequency, a) for a in allowed)):
            problems.append(f"{where} level {key} at {frequency!r} is not the source's")
    return problems


def _two_sided(count: int, total: int, k: int) -> float:
    """A rate as the threshold releases it: 0 under ``k`` holders, 1 under ``k`` others."""
    if count < k:
        return 0.0
    return 1.0 if total - count < k else float(round_significant(count / total, 2))


def _dose_changers(source: _Source, eligible: np.ndarray) -> int:
    """Patients among ``eligible`` whose dose changed within a period."""
    doses = source.study.doses[source.study.doses["patient"].isin(eligible)]
    previous = doses.groupby(["patient", "period"])["amount"].shift()
    return int(doses.loc[previous.notna() & (doses["amount"] != previous), "patient"].nunique())


def _recomputed_rates(released: dict, source: _Source, eligible: np.ndarray) -> list[str]:
    """The dose-change rate and each endpoint's attendance, recomputed."""
    k = source.min_arm_patients
    changed = source.memo(
        ("dose changes", eligible.tobytes()), lambda: _dose_changers(source, eligible)
    )
    problems = _differs(
        released.get("dose_change_rate"),
        _two_sided(changed, eligible.size, k),
        "dose-change rate",
    )
    for name, endpoint in as_mapping(released.get("endpoints")).items():
        missed, attended, share = _attendance_groups(str(name), source, eligible)
        expected = (
            1.0 if missed < k else (float(round_significant(share, 2)) if attended >= k else 0.0)
        )
        problems += _differs(as_mapping(endpoint).get("attendance"), expected, f"{name} attendance")
    return problems


def _key(level: object) -> str:
    """A level as the checks compare it: numbers by value, text as text."""
    kind, key = identifier_key(level)
    return repr(key) if kind == "number" else str(key)


def _rule_times(released: dict, source: _Source) -> tuple[dict, list]:
    """Every dose and visit time as the time rule releases it, recomputed in the checks' own
    code: the visit times of each released endpoint, and the planned doses' times of each
    released arm (in the release's order).

    Each time's two-figure value comes from the single-value rule; in each period, distinct
    times whose two-figure values meet or pass form a run, released as increasing numbers
    that read as the two-figure value of the run's middle time, above the period's earlier
    runs, at the fewest figures that hold them, centred on that value.
    """
    names = tuple(str(name) for name in as_mapping(released.get("endpoints")))
    arms = len(as_sequence(released.get("arms")))
    found = source.memo(("rule times", names, arms), lambda: _rule_times_of(released, source))
    return copy.deepcopy(found)


def _rule_times_of(released: dict, source: _Source) -> tuple[dict, list]:
    """The time rule's times of :func:`_rule_times`, computed."""
    points = []  # (period, centre, two-figure value, where it goes)
    for name in as_mapping(released.get("endpoints")):
        times, owners = source.visit_times(str(name))
        for j, (period, center) in enumerate(_visit_centers(str(name), source)):
            value = _rule_value(center, times, owners, 2, source, positive=False)
            points.append((period, center, value, (str(name), j)))
    doses = source.study.doses
    for i, group in _dose_groups(released, source):
        for j, (period, center) in enumerate(group):
            value = _rule_value(center, doses["time"], doses["patient"], 2, source, positive=False)
            points.append((period, center, value, (i, j)))
    placed = {}
    for period in sorted({p[0] for p in points}):
        placed.update(_placed_runs([p for p in points if p[0] == period]))
    visits = {str(name): [] for name in as_mapping(released.get("endpoints"))}
    arms: list[list] = [[] for _ in as_sequence(released.get("arms"))]
    for period, center, _, (owner, _j) in points:
        (visits[owner] if isinstance(owner, str) else arms[owner]).append(placed[period, center])
    return visits, arms


def _placed_runs(points: list) -> dict:
    """A period's ``(period, centre) -> released time``: runs of centres whose two-figure
    values meet or pass (or differ at one centre), spread over their anchor's cell."""
    centers = sorted({p[1] for p in points})
    low = {c: min(p[2] for p in points if p[1] == c) for c in centers}
    high = {c: max(p[2] for p in points if p[1] == c) for c in centers}
    runs = [[centers[0]]] if centers else []
    for before, after in itertools.pairwise(centers):
        if high[before] >= low[after]:
            runs[-1].append(after)
        else:
            runs.append([after])
    placed, above = {}, -math.inf
    period = points[0][0] if points else 0
    for run in runs:
        values = _run_values(low[run[(len(run) - 1) // 2]], len(run), above)
        if values is None:
            return {(period, c): math.nan for c in centers}  # the builder refuses the study
        placed.update({(period, c): v for c, v in zip(run, values, strict=True)})
        above = values[-1]
    return placed


def _run_values(anchor: float, count: int, above: float) -> list[float] | None:
    """``count`` consecutive numbers above ``above`` that read ``anchor`` at two figures, at
    the fewest figures up to :data:`MOST_TIME_FIGURES`, centred on ``anchor`` (None if none)."""
    if anchor <= 0:
        return [anchor] if count == 1 and anchor > above else None
    unit = _unit(anchor, 2)
    for figures in range(2, MOST_TIME_FIGURES + 1):
        grid = _grid(anchor - unit, anchor + unit, figures)
        grid = [
            g
            for g in grid
            if g > above and math.isclose(float(round_significant(g, 2)), anchor, rel_tol=1e-9)
        ]
        if len(grid) >= count:
            first = sum(g < anchor * (1 - 1e-12) for g in grid) - (count - 1) // 2
            first = min(max(first, 0), len(grid) - count)
            return grid[first : first + count]
    return None


def _dose_groups(released: dict, source: _Source) -> list[tuple[int, list]]:
    """Each released arm's planned doses, those ``k`` patients reached by either route:
    ``(period, median time)``, in the release's order."""
    study = source.study
    doses = study.doses.assign(
        arm=study.arms.to_numpy()[study.doses["patient"]],
        index=study.doses.groupby(["patient", "period"]).cumcount(),
    )
    groups = []
    for i, (arm, _) in enumerate(
        zip(_arm_order(source), as_sequence(released.get("arms")), strict=False)
    ):
        planned = [
            (int(period), float(group["time"].median()))
            for (period, _), group in doses[doses["arm"] == arm].groupby(["period", "index"])
            if group["patient"].nunique() >= source.min_arm_patients
        ]
        groups.append((i, planned))
    return groups


def _rule_time_problems(released: dict, source: _Source) -> list[str]:
    """Each released dose or visit time the time rule does not give, named; a time with more
    figures than the rule's carries figures the order does not need."""
    visits, arms = _rule_times(released, source)
    shown = [
        (f"{name} visit {j + 1} of period {visit[0]}", visit[1], expected)
        for name, expected_times in visits.items()
        for j, (visit, expected) in enumerate(
            zip(
                as_sequence(
                    as_mapping(as_mapping(released.get("endpoints")).get(name)).get("visits")
                ),
                expected_times,
                strict=False,
            )
        )
        if isinstance(visit, list) and len(visit) == 2
    ]
    for i, (arm, expected_times) in enumerate(
        zip(as_sequence(released.get("arms")), arms, strict=False)
    ):
        for dose, expected in zip(
            as_sequence(as_mapping(arm).get("doses")), expected_times, strict=False
        ):
            dose = as_mapping(dose)
            where = f"arm {i + 1} dose {dose.get('index')} of period {dose.get('period')}"
            shown.append((where, dose.get("time"), expected))
    problems = []
    for where, value, expected in shown:
        if is_number(value) and math.isclose(value, expected, rel_tol=1e-9, abs_tol=1e-12):
            continue
        more = is_number(value) and figures_in(value) > figures_in(expected)
        problems.append(
            f"{where}: time {value!r} is not the time rule's {expected:g}"
            + (" (it carries figures the order does not need)" if more else "")
        )
    return problems


def _time_order(released: dict, source: _Source) -> list[str]:
    """Released visit and dose times that merge or swap two distinct times of the source in a
    period (a trough, a dose and a peak released at one time)."""
    points = [
        (period, center, visit[1])
        for name, endpoint in as_mapping(released.get("endpoints")).items()
        for (period, center), visit in zip(
            _visit_centers(str(name), source),
            as_sequence(as_mapping(endpoint).get("visits")),
            strict=False,
        )
        if isinstance(visit, list) and len(visit) == 2 and is_number(visit[1])
    ]
    doses = source.study.doses.assign(
        arm=source.study.arms.to_numpy()[source.study.doses["patient"]]
    )
    for arm, shown in zip(_arm_order(source), as_sequence(released.get("arms")), strict=False):
        rows = doses[doses["arm"] == arm]
        rows = rows.assign(index=rows.groupby(["patient", "period"]).cumcount())
        for dose in as_sequence(as_mapping(shown).get("doses")):
            dose = as_mapping(dose)
            group = rows[
                (rows["period"] == dose.get("period")) & (rows["index"] == dose.get("index"))
            ]
            if len(group) and is_number(dose.get("time")):
                points.append((int(dose["period"]), float(group["time"].median()), dose["time"]))
    problems = []
    for period in sorted({p for p, _, _ in points}):
        ordered = sorted((c, r) for p, c, r in points if p == period)
        for (c1, r1), (c2, r2) in itertools.pairwise(ordered):
            if c1 < c2 and r1 >= r2:
                problems.append(
                    f"times {c1:g} and {c2:g} of period {period} are released as {r1:g} and "
                    f"{r2:g}: merged or swapped"
                )
    return problems


def _recomputed_magnitudes(released: dict, source: _Source) -> list[str]:
    """Covariate summaries, the reference weight, LOQs, visit times, planned doses and keep
    values, each recomputed from the source by the single-value rule (part of P3)."""
    problems = _recomputed_covariates(released, source) + _recomputed_weight(released, source)
    visit_times, arm_times = _rule_times(released, source)
    for name, endpoint in as_mapping(released.get("endpoints")).items():
        endpoint = as_mapping(endpoint)
        problems += _differs(endpoint.get("loq"), _rule_loq(str(name), source), f"{name} LOQ")
        expected = [
            [period, time]
            for (period, _), time in zip(
                _visit_centers(str(name), source), visit_times[str(name)], strict=True
            )
        ]
        # The times are judged one by one (_rule_time_problems); here the visits themselves.
        shown = [
            v[0] if isinstance(v, list) and len(v) == 2 else v
            for v in as_sequence(endpoint.get("visits"))
        ]
        if not isinstance(endpoint.get("visits"), list) or shown != [p for p, _ in expected]:
            problems.append(
                f"{name} visits {endpoint.get('visits')} are not the source's {expected}"
            )
    return (
        problems
        + _rule_time_problems(released, source)
        + _recomputed_arms(released, source, arm_times)
        + _time_order(released, source)
    )


def _recomputed_covariates(released: dict, source: _Source) -> list[str]:
    """Each continuous covariate's geometric mean and SD on the log scale."""
    problems = []
    for name, summary in as_mapping(released.get("covariates")).items():
        values, owners = source.values(str(name))
        if values.size == 0:
            continue  # not a numeric covariate of the source: P2 reports the label
        kept = np.sort(values[source.kept])
        if kept.size < 3 or np.any(kept <= 0):
            continue  # withheld-size and non-positive columns fail elsewhere
        meanlog, sdlog = _trimmed(np.log(kept)[None, :])
        summary = as_mapping(summary)
        where = f"covariate {name}"
        center = math.exp(float(meanlog[0]))
        mean = _rule_value(center, values, owners, 2, source, positive=True)
        problems += _differs(summary.get("geometric_mean"), mean, f"{where} geometric mean")
        sd = float(round_significant(float(sdlog[0]), 2))
        problems += _differs(summary.get("sdlog"), sd, f"{where} sdlog")
        problems += _code_vectors(name, summary, kept, source)
    return problems


def _code_vectors(name: object, summary: dict, kept: np.ndarray, source: _Source) -> list[str]:
    """The problem, if any, that a summary fits only count vectors of the column's values
    that put one to ``k - 1`` patients on a value, found by enumerating every vector of
    counts of its distinct values summing to the kept patients (where they are few)."""
    values = np.unique(kept)
    n, d = kept.size, values.size
    if math.comb(n + d - 1, d - 1) > _ENUMERATION_LIMIT or d < 2:
        return []
    cuts = np.array(list(itertools.combinations(range(n + d - 1), d - 1)))
    edges = np.hstack([np.full((len(cuts), 1), -1), cuts, np.full((len(cuts), 1), n + d - 1)])
    counts = np.diff(edges, axis=1) - 1
    # Row r's sorted values: position j holds the value whose cumulative count first passes j.
    place = (counts.cumsum(axis=1)[:, None, :] <= np.arange(n)[None, :, None]).sum(axis=2)
    mean, sd = _trimmed(np.log(values)[place])
    fits = np.ones(len(counts), dtype=bool)
    for number, estimate in (
        (summary.get("geometric_mean"), np.exp(mean)),
        (summary.get("sdlog"), sd),
    ):
        if not is_number(number):
            return []
        half = 0.5 * (_unit(number, max(2, figures_in(number))) if number else 0.01)
        fits &= np.abs(estimate - number) <= half * (1 + 1e-9)
    small = ((counts >= 1) & (counts < source.min_arm_patients)).any(axis=1)
    if fits.any() and small[fits].all():
        return [
            f"covariate {name}'s summary fits {int(fits.sum())} count vector(s) of its {d} "
            f"values, each putting 1 to {source.min_arm_patients - 1} patients on a value"
        ]
    return []


def _recomputed_weight(released: dict, source: _Source) -> list[str]:
    """The reference weight: the kept patients' median at one figure, or where one to
    ``k - 1`` patients' weights read as it, the nearest reading ``k`` share (or 70 kg)."""
    weight = source.study.roles.weight
    if weight is None or "reference_weight" not in released:
        return []
    values, owners = source.values(weight)
    k = source.min_arm_patients
    median = float(round_significant(float(np.median(values[source.kept])), 1))
    expected = median
    if 0 < _holders(values, owners, median, 1, source) < k:
        # The nearest reading at one figure that k patients share, else the 70 kg standard.
        readings = np.unique(round_significant(values, 1))
        shared = [w for w in readings if _holders(values, owners, w, 1, source) >= k]
        expected = min(shared, key=lambda w: (abs(w - median), w)) if shared else 70.0
        if not shared and 0 < _holders(values, owners, 70.0, 1, source) < k:
            expected = None
    expected = None if expected is None else float(expected)
    return _differs(released.get("reference_weight"), expected, "reference weight")


def _rule_loq(endpoint: str, source: _Source) -> float | None:
    """The LOQ rule in the checks' own code: the largest of 1, 2 or 5 times a power of ten at
    most half the lowest value ``k`` patients reached, which no one to ``k - 1`` patients'
    lowest values read as at one figure."""
    k = source.min_arm_patients
    lowest = source.lowest(endpoint)
    if len(lowest) < k:
        return None
    bound = np.sort(lowest.to_numpy())[k - 1] / 2
    top = math.floor(math.log10(bound))
    for exponent in range(top, top - 40, -1):
        for mantissa in (5, 2, 1):
            loq = float(round_significant(mantissa * 10.0**exponent, 1))
            if loq > bound * (1 + 1e-12):
                continue
            held = _holders(lowest.to_numpy(), lowest.index.to_numpy(), loq, 1, source)
            if not 0 < held < k:
                return loq
    return None


def _visit_centers(endpoint: str, source: _Source) -> list[tuple[int, float]]:
    """Each visit the cohort's ``k`` patients reached, with its nominal time or median time."""
    return list(
        source.memo(("visit centres", endpoint), lambda: _visit_centers_of(endpoint, source))
    )


def _visit_centers_of(endpoint: str, source: _Source) -> list[tuple[int, float]]:
    rows = source.endpoint_rows(endpoint)
    rows = rows[rows["patient"].isin(np.flatnonzero(source.eligible))]
    rows = rows.drop_duplicates(["patient", "period", "visit"])
    centers = []
    for (period, visit), group in rows.groupby(["period", "visit"]):
        if group["patient"].nunique() >= source.min_arm_patients:
            nominal = source.study.roles.nominal_time
            centers.append((int(period), float(visit) if nominal else group["time"].median()))
    return centers


def _recomputed_arms(released: dict, source: _Source, arm_times: list) -> list[str]:
    """Each released arm's planned doses and keep values against its source arm (the arms
    matched in the release's order: most patients first, then first seen); the doses' times
    are those of the time rule (``arm_times``, judged one by one by
    :func:`_rule_time_problems`)."""
    study, k = source.study, source.min_arm_patients
    doses = study.doses.assign(
        arm=study.arms.to_numpy()[study.doses["patient"]],
        index=study.doses.groupby(["patient", "period"]).cumcount(),
    )
    owners = doses["patient"].to_numpy()
    problems = []
    for i, (arm, shown) in enumerate(
        zip(_arm_order(source), as_sequence(released.get("arms")), strict=False)
    ):
        shown, expected = as_mapping(shown), []
        times = arm_times[i] if i < len(arm_times) else []
        arm_doses = doses[doses["arm"] == arm]
        for (period, index), group in arm_doses.groupby(["period", "index"]):
            if group["patient"].nunique() < k:
                continue
            route = _majority_route(arm_doses[arm_doses["period"] == period])
            amounts = group["amount"]
            amount = (
                float(amounts.iloc[0])
                if amounts.nunique() == 1
                else _rule_value(amounts.mean(), doses["amount"], owners, 2, source, positive=True)
            )
            expected.append(
                {
                    "period": int(period),
                    "index": int(index),
                    "time": times[len(expected)] if len(expected) < len(times) else None,
                    "amount": amount,
                    "duration": _rule_value(
                        group["duration"].median(),
                        doses["duration"],
                        owners,
                        2,
                        source,
                        positive=False,
                    ),
                    "route": route,
                }
            )
        if _untimed(shown.get("doses")) != _untimed(expected):
            problems.append(
                f"arm {i + 1} doses {shown.get('doses')} are not the source's {expected}"
            )
        problems += _recomputed_keep(i, arm, as_mapping(shown.get("keep")), source)
    return problems


def _untimed(doses: object) -> list:
    """Planned doses without their times (which the time rule's check names one by one)."""
    return [{k: v for k, v in as_mapping(d).items() if k != "time"} for d in as_sequence(doses)]


def _majority_route(doses: pd.DataFrame) -> str:
    """The route most of an arm's patients took in a dosing period (``doses``, the arm's
    doses in it), the depot's on a tie: the route of every planned dose there."""
    central, patient = doses["central"].to_numpy(dtype=bool), doses["patient"].to_numpy()
    iv, oral = np.unique(patient[central]).size, np.unique(patient[~central]).size
    return "iv" if iv > oral else "oral"


def _recomputed_keep(i: int, arm: object, keep: dict, source: _Source) -> list[str]:
    """Each keep value of an arm: a value at least ``k`` of the arm's own patients hold, the
    most common (any of a tie), or missing where none is held by so many."""
    patients = source.study.covariates[(source.study.arms == arm).to_numpy()]
    problems = []
    for column, value in keep.items():
        if column not in patients.columns:
            continue
        counts = patients[column].dropna().map(_key).value_counts()
        top = counts[counts == counts.max()] if len(counts) else counts
        top = top[top >= source.min_arm_patients]
        held = top.empty if value is None else _key(value) in top.index
        if not held:
            problems.append(
                f"arm {i + 1} keep column {column} value {value!r} is not the value at least "
                f"{source.min_arm_patients} of the arm's own patients hold most often"
            )
    return problems


# --- P5 ---------------------------------------------------------------------------------------


def _untrusted_fits(
    pk: PopulationFit | None,
    pd_fits: dict,
    privacy: PrivacyReport,
    released_pd: Iterable,
    moves: pd.DataFrame,
) -> list[tuple[str, str]]:
    """The fits behind a release whose readings P5 cannot trust: ``(fit, why)`` pairs.

    The PK fit when its diagnostics report a fault (or its flag says it did not converge: a
    flag that says converged beside diagnostics that say otherwise, as after an edit, is not
    trusted either), and its exact leave-one-out refits that did not converge where the
    ``moves`` of released estimates they read stay below ``fail`` (one past it fails
    already, whatever the refit would have reached); for each released PD model its fit and
    its leave-one-out refits.
    """
    found = []
    if pk is not None and (not pk.converged or pk.diagnostics):
        found.append(("PK", "; ".join(pk.diagnostics) or "not converged"))
    unsettled = [i for i in privacy.unconverged_pk_refits if i in moves.index]
    unsettled = int((moves.loc[unsettled].max(axis=1) < privacy.fail).sum()) if unsettled else 0
    if pk is not None and unsettled:
        found.append(("PK", f"{unsettled} exact leave-one-out refits not converged"))
    for name in released_pd:
        if name in pd_fits and not pd_fits[name].converged:
            found.append((f"PD {name}", "not converged"))
        unsettled = privacy.unconverged_refits.get(name)
        if unsettled:
            found.append((f"PD {name}", f"{unsettled} leave-one-out refits not converged"))
    return found


def _effect_columns(columns: pd.Index, released: dict, endpoint: str) -> list[str]:
    """The move columns of the covariate effects a release holds: each effect's column reads
    ``"<endpoint>: <parameter> ~ <covariate>..."`` (its reference or level after it)."""
    heads = [
        f"{endpoint}: {as_mapping(e).get('parameter')} ~ {as_mapping(e).get('covariate')}"
        for e in as_sequence(released.get("effects"))
    ]
    return [
        column
        for column in columns
        if column.endswith(" effect")
        and any(column.startswith(head) and column[len(head)] in " /[" for head in heads)
    ]


def _release_untrusted_fits(
    pk: PopulationFit | None, pd_fits: dict, privacy: PrivacyReport, released: dict, endpoint
) -> list[tuple[str, str]]:
    """:func:`_untrusted_fits` for the release ``released`` (its JSON's dict), as P5 judges
    it: by the moves of the estimates it holds."""
    moves = _moves_of(privacy, _shown_columns(released, endpoint, privacy))
    return _untrusted_fits(pk, pd_fits, privacy, as_mapping(released.get("pd")), moves)


def _moves_of(privacy: PrivacyReport, shown: list[str]) -> pd.DataFrame:
    """The columns of ``privacy.moves`` among ``shown`` (all of them where none is): a
    withheld covariate summary moves nothing released."""
    return privacy.moves[[c for c in privacy.moves.columns if c in shown] or privacy.moves.columns]


def _shown_columns(released: dict, endpoint: str | None, privacy: PrivacyReport) -> list[str]:
    """The move columns of every estimate the release holds."""
    shown = [f"{endpoint}: {name} typical value" for name in as_mapping(released.get("typical"))]
    shown += [
        f"{endpoint}: {name} between-subject SD" for name in as_mapping(released.get("omega"))
    ]
    for name in as_mapping(released.get("covariates")):
        shown += [f"{name} mean on the log scale", f"{name} SD on the log scale"]
    shown += _effect_columns(privacy.moves.columns, released, endpoint)
    shown += [f"{endpoint}: {name} residual error" for name in as_mapping(released.get("residual"))]
    shown += [f"{endpoint}: {pair} correlation" for pair in as_mapping(released.get("correlation"))]
    for name, model in as_mapping(released.get("pd")).items():
        shown += [f"{name}: baseline typical value", f"{name}: baseline between-subject SD"]
        parameters = as_mapping(as_mapping(model).get("parameters"))
        shown += [f"{name}: {parameter} shape parameter" for parameter in parameters]
        shown += [f"{name}: residual error"] if "residual" in as_mapping(model) else []
    return shown


def _p5(
    released: dict, source: _Source, pk: PopulationFit | None, pd_fits: dict, privacy: PrivacyReport
) -> tuple[str, str, list[str]]:
    endpoint = source.study.pk_endpoint
    shown = _shown_columns(released, endpoint, privacy)
    moves = _moves_of(privacy, shown)
    largest = moves.max(axis=0)
    if largest.empty:
        value, result = 0.0, "no estimate released"
    else:
        estimate = largest.idxmax()
        value = float(largest.max())
        scale = "%" if estimate.endswith("typical value") else "points"
        if estimate.endswith("shape parameter"):
            scale = "% (SE bar)"
        elif estimate.endswith(": residual error"):  # a PD model's
            scale = "points (SE bar)"
        band = move_band(value, privacy.review, privacy.fail)
        result = f"largest: {estimate}, {band} {scale}"
    if privacy.left_out.patients:
        result += f"; {privacy.left_out.patients} left out"
    if source.n * MAX_LEFT_OUT_SHARE < 1:
        result += f"; below {math.ceil(1 / MAX_LEFT_OUT_SHARE)} patients nobody can be left out"
    # The readings are each patient's pull on a fit; on a fit that is not to be trusted (an SD
    # at its floor shrinks every pull to nothing) they cannot clear anyone, so they cannot pass.
    untrusted = _untrusted_fits(pk, pd_fits, privacy, as_mapping(released.get("pd")), moves)
    judged = verdict(value, privacy.review, privacy.fail)
    if untrusted:
        listed = ", ".join(f"{fit} ({why})" for fit, why in untrusted)
        result += f"; fit not to be trusted: {listed}"
        judged = "review" if judged == "pass" else judged
    problems = _unread_pk_estimates(shown, privacy.moves.columns, released, pk)
    fitted = {"typical": pk.typical, "omega": pk.omega, "residual": pk.residual} if pk else {}
    if pk is not None:
        fitted["correlation"] = pk.correlation
    if pk is None:
        for field in ("typical", "omega", "residual", "correlation"):
            if as_mapping(released.get(field)):
                problems.append(f"released {field} has no PK fit behind it")
    for field, estimates in fitted.items():
        shown = as_mapping(released.get(field))
        for name, number in estimates.items():
            expected = float(round_significant(float(number), RELEASED_FIGURES["estimate"]))
            if (
                name in shown
                and is_number(shown[name])
                and not math.isclose(shown[name], expected, rel_tol=1e-9)
            ):
                problems.append(
                    f"released {field} {name} {shown[name]:g} is not the estimate whose "
                    f"influence was read ({expected:g})"
                )
    for name, model in as_mapping(released.get("pd")).items():
        model = as_mapping(model)
        fitted_pd = pd_fits.get(name)
        if fitted_pd is None:
            problems.append(f"released PD model {name} is not a model whose influence was read")
            continue
        if model.get("shape") != fitted_pd.shape:
            problems.append(
                f"released PD {name} shape {model.get('shape')!r} is not the fitted "
                f"{fitted_pd.shape!r}"
            )
            continue
        shown = {k: model.get(k) for k in ("baseline", "baseline_sd", "residual")}
        shown.update(as_mapping(model.get("parameters")))
        for key, number in fitted_pd.estimates().items():
            expected = float(round_significant(float(number), RELEASED_FIGURES["estimate"]))
            if is_number(shown.get(key)) and not math.isclose(shown[key], expected, rel_tol=1e-9):
                problems.append(
                    f"released PD {name} {key} {shown[key]:g} is not the estimate whose "
                    f"influence was read ({expected:g})"
                )
    return judged, result, problems


# The PK estimates every release must have a reading of (a PD baseline's come with its model).
_READ_PK_ESTIMATES = ("typical value", "between-subject SD", "residual error", " correlation")


def _unread_pk_estimates(
    shown: list[str], read: pd.Index, released: dict, pk: PopulationFit | None
) -> list[str]:
    """The released PK typical values, variances and residual errors no reading covers, and
    variances of parameters the fit gave no random effect (which no reading can cover)."""
    if pk is None:
        return []  # a release with PK estimates but no fit is a problem of its own
    problems = [
        f"released {column} has no reading of each patient's move"
        for column in shown
        if column.endswith(_READ_PK_ESTIMATES)
        and ": baseline " not in column
        and column not in read
    ]
    problems += [
        f"released correlation {pair} has no correlated pair behind it (the fit's: "
        f"{', '.join(pk.correlation.index) or 'none'})"
        for pair in as_mapping(released.get("correlation"))
        if pair not in pk.correlation.index
    ]
    return problems + [
        f"released omega {name} has no random effect behind it (the fit has none on {name})"
        for name in as_mapping(released.get("omega"))
        if name not in pk.omega.index
    ]


# --- The table --------------------------------------------------------------------------------


def _stated_guarantee(guarantee: object) -> str:
    """What the P5 row says of a release's stated guarantee: a claim about how its numbers
    were made, which nothing in the file can confirm, so the reader is told it is unverified."""
    terms = as_mapping(guarantee)
    stated = ", ".join(f"{key} {terms[key]!r}" for key in GUARANTEE_KEYS if key in terms)
    return (
        f"states a differential-privacy guarantee ({stated or 'no terms'}) in place of the "
        "P4 and P5 verdicts: a claim no check on the file can verify (the noise is not in "
        "it), for review against the release's record"
    )


def release_checks(
    released: Fingerprint | str,
    study: StudyEvents,
    *,
    pk: PopulationFit | None,
    privacy: PrivacyReport,
    pd_fits: dict | None = None,
    min_arm_patients: int = 3,
    min_category_patients: int = 3,
    claims: bool = True,
) -> pd.DataFrame:
    """Judge a released fingerprint against its source study: checks P1-P5.

    Parameters
    ----------
    released : Fingerprint or str
        The release: its JSON text, as it would leave the secure environment (a Fingerprint
        is first written to JSON and read back).
    study : StudyEvents
        The source study.
    pk : PopulationFit or None
        The PK fit whose influence was read (the kept patients' fit); None for a study
        without one, whose release must then hold no PK estimate.
    privacy : PrivacyReport
        The influence readings and the patients left out.
    pd_fits : dict, optional
        The PD fits whose influence was read, by endpoint (:class:`synpmx_lite.pmx.pd.PdFit`);
        a release holding a PD model not among them fails P5.
    min_arm_patients, min_category_patients : int, default 3
        The thresholds of the threshold protection the release was built with; the checks
        apply each, or :data:`SMALLEST_THRESHOLD` where it is lower.
    claims : bool, default True
        Whether to hold the release to the verdicts it carries for P4 and P5 (False while the
        release is being built, before it carries any). A private release, which states a
        ``guarantee`` and carries no verdicts, is held to none; its noisy numbers are judged
        as any (they fail P3-P5, the rounding and influence protections it does without), and
        P5 passes it at best for review: nothing in the file shows that the noise was drawn.

    Returns
    -------
    pandas.DataFrame
        One row per check with columns ``check``, ``question``, ``verdict`` (pass, review or
        FAIL) and ``result``: ``none`` or what failed for P1-P3, ``smallest group k`` (and
        what failed) for P4, and for P5 the largest move with the estimate's name, how many
        were left out and which fit, if any, is not to be trusted (and why).

    Raises
    ------
    TypeError
        ``released`` is neither a Fingerprint nor text, or another argument has the wrong type.
    ValueError
        ``released`` is not JSON, or its JSON is not an object.
    """
    parsed, repeated = read_release(released)
    pd_fits, min_arm_patients, min_category_patients = _checked_arguments(
        study, pk, privacy, claims, pd_fits, min_arm_patients, min_category_patients
    )
    source = _source_for(
        study,
        max(min_arm_patients, SMALLEST_THRESHOLD),
        max(min_category_patients, SMALLEST_THRESHOLD),
        privacy.left_out.ids,
    )
    # P1 and P2 judge the text as written; P3 and P4 judge what a reader takes from it, and
    # a reader takes "73.4" for the weight it spells.
    as_read = _numbers_as_read(parsed)
    p4_problems, smallest = _p4(as_read, source)
    p5_verdict, p5_result, p5_problems = _p5(parsed, source, pk, pd_fits, privacy)
    # What the table reports: a problem found in P5's reading fails it whatever the moves say.
    p5_verdict = "FAIL" if p5_problems else p5_verdict
    if claims and "guarantee" not in parsed:
        _check_stated_verdicts(parsed, p4_problems, p5_problems, p5_verdict)
    if "guarantee" in parsed:
        # Nothing in the file shows the noise: a stated guarantee is at best for review.
        p5_result += "; " + _stated_guarantee(parsed["guarantee"])
        p5_verdict = "review" if p5_verdict == "pass" else p5_verdict
    smallest_text = f"smallest group {smallest}" if math.isfinite(smallest) else "no group"
    rows = [
        (
            "P1",
            release_problems(parsed)
            + [f"the JSON repeats key {key!r} in one object" for key in repeated],
            "none",
        ),
        ("P2", _p2(parsed, source), "none"),
        ("P3", _p3(as_read, source), "none"),
        ("P4", p4_problems, smallest_text),
    ]
    return _verdict_table(rows, smallest_text, p5_verdict, p5_result, p5_problems)


def _checked_arguments(
    study: object,
    pk: object,
    privacy: object,
    claims: object,
    pd_fits: object,
    min_arm_patients: object,
    min_category_patients: object,
) -> tuple[dict, int, int]:
    """:func:`release_checks`' arguments checked: the PD fits (a dict, empty for None) and the
    two thresholds."""
    if not isinstance(study, StudyEvents):
        raise TypeError(f"study must be a StudyEvents, got {type(study).__name__}")
    if pk is not None and not isinstance(pk, PopulationFit):
        raise TypeError(f"pk must be a PopulationFit or None, got {type(pk).__name__}")
    if not isinstance(privacy, PrivacyReport):
        raise TypeError(f"privacy must be a PrivacyReport, got {type(privacy).__name__}")
    if not isinstance(claims, bool):
        raise TypeError(f"claims must be a bool, got {claims!r}")
    pd_fits = {} if pd_fits is None else pd_fits
    if not isinstance(pd_fits, dict) or not all(isinstance(m, PdFit) for m in pd_fits.values()):
        raise TypeError("pd_fits must be a dict of PdFit by endpoint")
    return (
        pd_fits,
        check_count(min_arm_patients, "min_arm_patients"),
        check_count(min_category_patients, "min_category_patients"),
    )


def _check_stated_verdicts(
    parsed: dict, p4_problems: list[str], p5_problems: list[str], p5_verdict: str
) -> None:
    """Add a problem to P4 or P5 (in place) where the release states another verdict than the
    check finds. A private release states its guarantee instead, and is not read here."""
    stated = as_mapping(parsed.get("checks"))
    found = {"P4": "FAIL" if p4_problems else "pass", "P5": p5_verdict}
    for check, problems in (("P4", p4_problems), ("P5", p5_problems)):
        if stated.get(check) != found[check]:
            problems.append(
                f"the release states {check} {stated.get(check)!r}, the check finds "
                f"{found[check]!r}"
            )


def _verdict_table(
    rows: list[tuple[str, list[str], str]],
    smallest_text: str,
    p5_verdict: str,
    p5_result: str,
    p5_problems: list[str],
) -> pd.DataFrame:
    """The checks' table: P1-P4 from their problems (``rows``: check, problems, the result when
    it passes), then P5 with its verdict and reading."""
    table = []
    for check, problems, passed in rows:
        result = "; ".join(problems) if problems else passed
        if check == "P4" and problems:
            result = f"{smallest_text}; {result}"
        table.append(
            {
                "check": check,
                "question": CHECK_QUESTIONS[check],
                "verdict": "FAIL" if problems else "pass",
                "result": result,
            }
        )
    table.append(
        {
            "check": "P5",
            "question": CHECK_QUESTIONS["P5"],
            "verdict": "FAIL" if p5_problems else p5_verdict,
            "result": "; ".join([p5_result, *p5_problems]),
        }
    )
    return pd.DataFrame(table, columns=["check", "question", "verdict", "result"])
