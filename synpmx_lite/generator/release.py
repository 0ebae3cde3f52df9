"""The released artefact: the fingerprint, its allowlist, its schema and the engine's own labels.

A :class:`Fingerprint` holds everything a model release carries, and :meth:`Fingerprint.to_json`
writes the artefact that leaves the secure environment. Its shape is fixed: the top-level
fields are :data:`FINGERPRINT_FIELDS`, and every nested key, type and range is checked by
:func:`release_problems`, which both :meth:`Fingerprint.from_json` (to refuse a malformed file
with a clear message) and check P1 (to report what lies outside the allowlist) use.

Labels that the engine makes are chosen so that they can never be a source identifier: arms
are released as ``"arm 1"``, ``"arm 2"``, ... (:func:`arm_label`), synthetic patients are
``"syn-0001"``, ``"syn-0002"``, ... (:func:`synthetic_id`), and a source study whose
identifiers take either form is refused (:func:`engine_label_clashes`).
"""

from __future__ import annotations

import dataclasses
import json
import math
import numbers
import re
import textwrap
from collections.abc import Callable
from dataclasses import dataclass

from ..pmx.pd import PD_SHAPES
from ..pmx.pk import PkModel
from ..pmx.population import ERROR_MODELS

__all__ = [
    "FINGERPRINT_FIELDS",
    "OPTIONAL_FIELDS",
    "Fingerprint",
    "arm_label",
    "engine_label_clashes",
    "release_problems",
    "synthetic_id",
]

#: The fields a fingerprint may hold: nothing else leaves the study.
FINGERPRINT_FIELDS = (
    "cohort_size",
    "model",
    "pk_endpoint",
    "log_dv",
    "error",
    "typical",
    "omega",
    "residual",
    "pd",
    "graded",
    "covariates",
    "categories",
    "reference_weight",
    "arms",
    "dose_change_rate",
    "endpoints",
    "checks",
)

#: Fields a fingerprint holds only where the fit used them (absent from the JSON otherwise, so
#: that a release without them reads as before): ``effects``, the covariate effects,
#: ``correlation``, the correlation of a correlated pair of PK etas, and ``guarantee``, the
#: terms of a differentially private release.
OPTIONAL_FIELDS = ("effects", "correlation", "guarantee")

VERDICTS = ("pass", "review", "FAIL")

_MODEL_KEYS = ("compartments", "route", "lag")
# A planned dose's route: into the central compartment ("iv") or the depot ("oral").
_DOSE_ROUTES = ("iv", "oral")
_SUMMARY_KEYS = ("geometric_mean", "sdlog")
_ARM_KEYS = ("arm", "patients", "doses", "keep")
_DOSE_KEYS = ("period", "index", "time", "amount", "duration", "route")
_ENDPOINT_KEYS = ("attendance", "visits", "loq")
_CHECK_KEYS = ("P4", "P5")
GUARANTEE_KEYS = ("epsilon", "subsets")
_PD_KEYS = ("shape", "baseline", "baseline_sd", "parameters", "residual")
EFFECT_KEYS = ("parameter", "covariate", "reference", "level", "estimate")
_EXPONENT_RANGE = 10.0  # the fit's bound on an exponent
_SYNTHETIC_PREFIX = "syn-"
_ARM_PATTERN = re.compile(r"arm \d+")


# --- The engine's own labels ------------------------------------------------------------------


def arm_label(position: int) -> str:
    """The released label of the arm at ``position`` (0-based) in the fingerprint's arm list."""
    return f"arm {position + 1}"


def synthetic_id(number: int) -> str:
    """The identifier of synthetic patient ``number`` (0-based): ``syn-0001``, ``syn-0002``, ..."""
    return f"{_SYNTHETIC_PREFIX}{number + 1:04d}"


def engine_label_clashes(ids: object) -> list:
    """The source identifiers that could be taken for a label the engine makes.

    Parameters
    ----------
    ids : iterable
        Source subject identifiers.

    Returns
    -------
    list
        Those whose text, ignoring case and surrounding spaces, starts with ``syn-`` (the
        synthetic patients' prefix) or reads ``arm`` and a number (an arm label). A study with
        any is refused, so that a synthetic patient or a released arm can never carry a source
        identifier.

    Examples
    --------
    >>> engine_label_clashes([1, "syn-0007", "Arm 2", "arm-2"])
    ['syn-0007', 'Arm 2']
    """
    clashes = []
    for value in ids:
        text = str(value).strip().casefold()
        if text.startswith(_SYNTHETIC_PREFIX) or _ARM_PATTERN.fullmatch(text):
            clashes.append(value)
    return clashes


# --- The schema -------------------------------------------------------------------------------


class _Schema:
    """Walks a released dict and collects what departs from the allowlisted shape."""

    def __init__(self) -> None:
        self.type_problems: list[str] = []
        self.value_problems: list[str] = []

    @property
    def problems(self) -> list[str]:
        return self.type_problems + self.value_problems

    def keys(self, value: object, path: str, allowed: tuple, *, exact: bool = True) -> bool:
        if not isinstance(value, dict):
            self.type_problems.append(f"{path} must be an object, got {type(value).__name__}")
            return False
        extra = [str(k) for k in value if k not in allowed]
        if extra:
            self.value_problems.append(f"{path} holds keys outside the allowlist: {extra}")
        missing = [k for k in allowed if k not in value] if exact else []
        if missing:
            self.value_problems.append(f"{path} lacks {missing}")
        return True

    def count(self, value: object, path: str, *, minimum: int = 0) -> None:
        if isinstance(value, bool) or not isinstance(value, numbers.Integral):
            self.type_problems.append(f"{path} must be an integer, got {value!r}")
        elif value < minimum:
            self.value_problems.append(f"{path} must be at least {minimum}, got {value}")

    def number(
        self, value: object, path: str, *, low: float = 0.0, high: float = math.inf, open_low=False
    ) -> None:
        if isinstance(value, bool) or not isinstance(value, numbers.Real):
            self.type_problems.append(f"{path} must be a number, got {value!r}")
            return
        below = value <= low if open_low else value < low
        if not math.isfinite(value) or below or value > high:
            bracket = "(" if open_low else "["
            self.value_problems.append(
                f"{path} must lie in {bracket}{low:g}, {high:g}], got {value}"
            )

    def text(self, value: object, path: str, choices: tuple | None = None) -> None:
        if not isinstance(value, str) or not value:
            self.type_problems.append(f"{path} must be a non-empty string, got {value!r}")
        elif choices is not None and value not in choices:
            self.value_problems.append(f"{path} must be one of {list(choices)}, got {value!r}")

    def flag(self, value: object, path: str) -> None:
        if not isinstance(value, bool):
            self.type_problems.append(f"{path} must be true or false, got {value!r}")

    def level(self, value: object, path: str) -> None:
        if not isinstance(value, str | numbers.Real):
            self.type_problems.append(f"{path} must be text or a number")

    def level_pairs(self, value: object, path: str, level: Callable[[object, str], None]) -> None:
        """A list of ``[level, frequency]`` pairs, each level checked by ``level``."""
        for i, pair in enumerate(self.items(value, path)):
            where = f"{path}[{i}]"
            if not isinstance(pair, list) or len(pair) != 2:
                self.type_problems.append(f"{where} must be a [level, frequency] pair")
                continue
            level(pair[0], f"{where} level")
            self.number(pair[1], f"{where} frequency", high=1.0, open_low=True)

    def items(self, value: object, path: str) -> list:
        if not isinstance(value, list):
            self.type_problems.append(f"{path} must be a list, got {type(value).__name__}")
            return []
        return value

    def refuse(self, prefix: str) -> None:
        """Raise the type problems, if any, as a TypeError, else the value problems as a
        ValueError, each message after ``prefix``."""
        if self.type_problems:
            raise TypeError(prefix + "; ".join(self.type_problems))
        if self.value_problems:
            raise ValueError(prefix + "; ".join(self.value_problems))

    def estimates(self, value: object, path: str, names: tuple | None, *, positive: bool) -> None:
        """A dict of numbers keyed by ``names`` (any keys where the model itself is malformed)."""
        allowed = names if names is not None else tuple(value) if isinstance(value, dict) else ()
        if self.keys(value, path, allowed):
            for name, number in value.items():
                self.number(number, f"{path}.{name}", open_low=positive)

    def names(self, value: object, path: str) -> bool:
        """A dict keyed by names (covariates, endpoints)."""
        return self.keys(value, path, tuple(value) if isinstance(value, dict) else ())


def _mapping_keys(value: object) -> list:
    return list(value) if isinstance(value, dict) else []


def _random_names(omega: object, parameters: tuple | None) -> tuple | None:
    """The parameters a released omega may name: those it names where they are some of the
    model's (a parameter without a random effect releases no variance), else all of them."""
    if parameters is None or not isinstance(omega, dict) or not omega:
        return parameters
    named = tuple(name for name in parameters if name in omega)
    return named if len(named) == len(omega) else parameters


def _model_parameters(model: object) -> tuple | None:
    try:
        return PkModel(**model).parameters
    except (TypeError, ValueError):
        return None


def release_problems(released: object) -> list[str]:
    """What in a released fingerprint departs from the allowlisted shape.

    Parameters
    ----------
    released : dict
        A fingerprint as read from its JSON (:meth:`Fingerprint.to_json`).

    Returns
    -------
    list of str
        One message per problem, naming where it is (``arms[0].doses[2].amount``); empty when
        the release holds exactly the allowlisted fields, each of its type and range: no key
        outside :data:`FINGERPRINT_FIELDS` or the keys documented in :class:`Fingerprint`,
        typical values and variances named by the model's parameters, residual errors by the
        error model's.

    Examples
    --------
    >>> release_problems([])
    ['the release must be a JSON object, got list']
    """
    return _schema(released).problems


def _schema(released: object) -> _Schema:
    schema = _Schema()
    if not isinstance(released, dict):
        schema.type_problems.append(
            f"the release must be a JSON object, got {type(released).__name__}"
        )
        return schema
    _check_fields(schema, released)
    _check_pk(schema, released)
    if "pd" in released and schema.names(released["pd"], "pd"):
        for name, model in released["pd"].items():
            _check_pd_model(schema, released, name, model)
    if "graded" in released and schema.names(released["graded"], "graded"):
        for name, pairs in released["graded"].items():
            _check_graded(schema, released, name, pairs)
    if "covariates" in released and schema.names(released["covariates"], "covariates"):
        for name, summary in released["covariates"].items():
            _check_covariate(schema, f"covariates.{name}", summary)
    if "categories" in released and schema.names(released["categories"], "categories"):
        for name, pairs in released["categories"].items():
            schema.level_pairs(pairs, f"categories.{name}", schema.level)
    if "reference_weight" in released and released["reference_weight"] is not None:
        schema.number(released["reference_weight"], "reference_weight", open_low=True)
    model = released.get("model")
    # An IV model has no depot: every dose enters the central compartment.
    routes = ("iv",) if isinstance(model, dict) and model.get("route") == "iv" else _DOSE_ROUTES
    for i, arm in enumerate(schema.items(released.get("arms", []), "arms")):
        _check_arm(schema, f"arms[{i}]", arm, routes)
    if "dose_change_rate" in released:
        schema.number(released["dose_change_rate"], "dose_change_rate", high=1.0)
    if "endpoints" in released and schema.names(released["endpoints"], "endpoints"):
        _check_endpoints(schema, released)
    for i, effect in enumerate(schema.items(released.get("effects", []), "effects")):
        _check_effect(schema, released, f"effects[{i}]", effect)
    if "correlation" in released:
        _check_correlation(schema, released)
    _check_verdicts(schema, released)
    return schema


def _check_verdicts(schema: _Schema, released: dict) -> None:
    """Both verdicts of an ordinary release; none in a private one, which states its guarantee
    instead (verdicts read from every patient would break it)."""
    private = "guarantee" in released
    if private and schema.keys(released["guarantee"], "guarantee", GUARANTEE_KEYS):
        guarantee = released["guarantee"]
        if "epsilon" in guarantee:
            schema.number(guarantee["epsilon"], "guarantee.epsilon", open_low=True)
        if "subsets" in guarantee:
            schema.count(guarantee["subsets"], "guarantee.subsets", minimum=2)
    if "checks" not in released or not schema.keys(
        released["checks"], "checks", _CHECK_KEYS, exact=not private
    ):
        return
    if private and released["checks"]:
        schema.value_problems.append(
            "checks must be empty in a release with a guarantee: a private release carries "
            "no P4 or P5 verdict"
        )
    for name in _CHECK_KEYS:
        if name in released["checks"]:
            schema.text(released["checks"][name], f"checks.{name}", VERDICTS)


def _check_correlation(schema: _Schema, released: dict) -> None:
    """One pair ``"cl,v"`` of two parameters with a released variance, and its correlation
    inside (-1, 1)."""
    pairs = released["correlation"]
    if not schema.names(pairs, "correlation"):
        return
    if len(pairs) != 1:
        schema.value_problems.append(f"correlation must hold one pair, got {len(pairs)}")
    omega = released.get("omega") if isinstance(released.get("omega"), dict) else {}
    for pair, rho in pairs.items():
        names = pair.split(",")
        if len(names) != 2 or names[0] == names[1] or not all(n in omega for n in names):
            schema.value_problems.append(
                f"correlation {pair!r} must name two parameters with a released omega"
            )
        schema.number(rho, f"correlation.{pair}", low=-1.0, high=1.0, open_low=True)
        if rho == 1 and not isinstance(rho, bool):
            schema.value_problems.append(f"correlation.{pair} must lie inside (-1, 1)")


def _check_fields(schema: _Schema, released: dict) -> None:
    """The top-level fields: exactly those of the allowlist, and the cohort size."""
    extra = [str(k) for k in released if k not in FINGERPRINT_FIELDS + OPTIONAL_FIELDS]
    if extra:
        schema.value_problems.append(f"fields outside the allowlist: {', '.join(extra)}")
    missing = [k for k in FINGERPRINT_FIELDS if k not in released]
    if missing:
        schema.value_problems.append(f"the release lacks {', '.join(missing)}")
    if "cohort_size" in released:
        schema.count(released["cohort_size"], "cohort_size")


def _check_pk(schema: _Schema, released: dict) -> None:
    """The PK model, its endpoint and error model, and its estimates named by the model's
    parameters and the error model's."""
    parameters = None
    # A study without a PK fit releases no model, PK endpoint or error, and no PK estimates.
    no_pk = released.get("model", ()) is None
    if no_pk:
        parameters = ()
        for key in ("pk_endpoint", "error"):
            if released.get(key) is not None:
                schema.value_problems.append(f"{key} must be null without a PK model")
    elif "model" in released and schema.keys(released["model"], "model", _MODEL_KEYS):
        parameters = _model_parameters(released["model"])
        if parameters is None:
            schema.value_problems.append(f"model is not a PK model: {released['model']!r}")
    if "pk_endpoint" in released and not no_pk:
        schema.text(released["pk_endpoint"], "pk_endpoint")
    if "log_dv" in released:
        schema.flag(released["log_dv"], "log_dv")
    if "error" in released and not no_pk:
        schema.text(released["error"], "error", tuple(ERROR_MODELS))
    if "typical" in released:
        schema.estimates(released["typical"], "typical", parameters, positive=True)
    if "omega" in released:
        schema.estimates(
            released["omega"], "omega", _random_names(released["omega"], parameters),
            positive=False,
        )  # fmt: skip
    if "residual" in released:
        error = released.get("error")
        names = ERROR_MODELS.get(error) if isinstance(error, str) else None
        names = () if no_pk else names
        schema.estimates(released["residual"], "residual", names, positive=True)


def _check_effect(schema: _Schema, released: dict, path: str, effect: object) -> None:
    """One covariate effect: a power of a released continuous covariate over a reference, or
    the factor of a released level of a categorical one, on a parameter of the model."""
    if not schema.keys(effect, path, EFFECT_KEYS):
        return
    parameters = _model_parameters(released.get("model")) or ()
    schema.text(effect["parameter"], f"{path}.parameter", tuple(parameters))
    covariate, reference = effect["covariate"], effect["reference"]
    continuous = _mapping_keys(released.get("covariates"))
    categories = released.get("categories") if isinstance(released.get("categories"), dict) else {}
    if reference is None:
        levels = [pair[0] for pair in categories.get(covariate, []) if isinstance(pair, list)]
        schema.text(covariate, f"{path}.covariate", tuple(categories))
        if effect["level"] not in levels:
            schema.value_problems.append(f"{path}.level must be a released level of {covariate!r}")
        schema.number(effect["estimate"], f"{path}.estimate", open_low=True)
        return
    schema.text(covariate, f"{path}.covariate", tuple(continuous))
    schema.number(reference, f"{path}.reference", open_low=True)
    if effect["level"] is not None:
        schema.value_problems.append(f"{path}.level must be null for a continuous covariate")
    schema.number(
        effect["estimate"], f"{path}.estimate", low=-_EXPONENT_RANGE, high=_EXPONENT_RANGE
    )


def _check_pd_model(schema: _Schema, released: dict, name: object, model: object) -> None:
    """One PD endpoint's model: its shape, baseline, parameters and residual error."""
    path = f"pd.{name}"
    if not schema.keys(model, path, _PD_KEYS):
        return
    schema.text(model.get("shape"), f"{path}.shape", tuple(PD_SHAPES))
    schema.number(model.get("baseline"), f"{path}.baseline", open_low=True)
    schema.number(model.get("baseline_sd"), f"{path}.baseline_sd")
    schema.number(model.get("residual"), f"{path}.residual", open_low=True)
    shape = model.get("shape")
    names = PD_SHAPES.get(shape) if isinstance(shape, str) else None
    parameters = model.get("parameters")
    allowed = names if names is not None else tuple(_mapping_keys(parameters))
    if schema.keys(parameters, f"{path}.parameters", allowed):
        for key, number in parameters.items():
            low = -math.inf if key in ("slope", "plateau", "depth") else 0.0
            schema.number(number, f"{path}.parameters.{key}", low=low, open_low=True)
    _check_among_endpoints(schema, released, name, path)
    if name == released.get("pk_endpoint"):
        schema.value_problems.append(f"{path} is the PK endpoint")


def _check_graded(schema: _Schema, released: dict, name: object, pairs: object) -> None:
    """One graded endpoint's level frequencies, the endpoint neither PK nor PD."""
    path = f"graded.{name}"
    schema.level_pairs(pairs, path, lambda level, where: schema.number(level, where, low=-math.inf))
    _check_among_endpoints(schema, released, name, path)
    if name == released.get("pk_endpoint") or name in _mapping_keys(released.get("pd")):
        schema.value_problems.append(f"{path} is also a PK or PD endpoint")


def _check_among_endpoints(schema: _Schema, released: dict, name: object, path: str) -> None:
    """A model or frequencies released for an endpoint must be of one of the endpoints."""
    endpoints = released.get("endpoints")
    if isinstance(endpoints, dict) and name not in endpoints:
        schema.value_problems.append(f"{path} is not one of the endpoints")


def _check_covariate(schema: _Schema, path: str, summary: object) -> None:
    """One continuous covariate's geometric mean and SD on the log scale."""
    if schema.keys(summary, path, _SUMMARY_KEYS):
        schema.number(summary.get("geometric_mean"), f"{path}.geometric_mean", open_low=True)
        schema.number(summary.get("sdlog"), f"{path}.sdlog")


def _check_arm(schema: _Schema, path: str, arm: object, routes: tuple) -> None:
    """One arm: its label, size, keep columns' values and planned doses (their route one of
    ``routes``)."""
    if not schema.keys(arm, path, _ARM_KEYS):
        return
    schema.text(arm.get("arm"), f"{path}.arm")
    schema.count(arm.get("patients"), f"{path}.patients", minimum=1)
    if schema.names(arm.get("keep"), f"{path}.keep"):
        for column, value in arm["keep"].items():
            if value is not None and not isinstance(value, str | numbers.Real):
                schema.type_problems.append(
                    f"{path}.keep.{column} must be text, a number or null, got {value!r}"
                )
    for j, dose in enumerate(schema.items(arm.get("doses", []), f"{path}.doses")):
        where = f"{path}.doses[{j}]"
        if schema.keys(dose, where, _DOSE_KEYS):
            schema.count(dose.get("period"), f"{where}.period")
            schema.count(dose.get("index"), f"{where}.index")
            schema.number(dose.get("time"), f"{where}.time")
            schema.number(dose.get("amount"), f"{where}.amount", open_low=True)
            schema.number(dose.get("duration"), f"{where}.duration")
            schema.text(dose.get("route"), f"{where}.route", routes)


def _check_endpoints(schema: _Schema, released: dict) -> None:
    """Each endpoint's attendance, visits and LOQ, and the PK endpoint among them."""
    for name, endpoint in released["endpoints"].items():
        path = f"endpoints.{name}"
        if not schema.keys(endpoint, path, _ENDPOINT_KEYS):
            continue
        schema.number(endpoint.get("attendance"), f"{path}.attendance", high=1.0)
        for j, visit in enumerate(schema.items(endpoint.get("visits", []), f"{path}.visits")):
            if not isinstance(visit, list) or len(visit) != 2:
                schema.type_problems.append(f"{path}.visits[{j}] must be a [period, time] pair")
                continue
            schema.count(visit[0], f"{path}.visits[{j}] period")
            schema.number(visit[1], f"{path}.visits[{j}] time")
        if endpoint.get("loq") is not None:
            schema.number(endpoint["loq"], f"{path}.loq", open_low=True)
    if (
        isinstance(released.get("pk_endpoint"), str)
        and released["pk_endpoint"] not in (released["endpoints"])
    ):
        schema.value_problems.append("pk_endpoint is not one of the endpoints")


# --- The fingerprint --------------------------------------------------------------------------


def read_json(text: str) -> tuple[object, list[str]]:
    """Parse JSON text, noting every key repeated within one object.

    Readers differ on which value of a repeated key wins, so both the reader of a fingerprint
    and the checks refuse such text; this parses it once for both.

    Parameters
    ----------
    text : str
        JSON text.

    Returns
    -------
    tuple
        The parsed value (a repeated key keeps its last value) and the repeated keys.

    Raises
    ------
    json.JSONDecodeError
        If ``text`` is not JSON.
    """
    repeated: list[str] = []

    def pairs(items: list) -> dict:
        keys = [key for key, _ in items]
        repeated.extend(key for key in dict.fromkeys(keys) if keys.count(key) > 1)
        return dict(items)

    return json.loads(text, object_pairs_hook=pairs), repeated


@dataclass(frozen=True)
class Fingerprint:
    """Everything a model release holds, and nothing else (see :data:`FINGERPRINT_FIELDS`).

    Construction checks every field against the allowlisted shape
    (:func:`release_problems`), so that a malformed fingerprint fails here, naming the field,
    rather than later inside the simulation.

    Attributes
    ----------
    cohort_size : int
        Patients in the released arms.
    model : dict or None
        The structural PK model: ``compartments``, ``route``, ``lag`` (None for a study
        without a PK fit, whose ``typical``, ``omega`` and ``residual`` are then empty).
    pk_endpoint : str or None
        The endpoint the PK model describes.
    log_dv : bool
        Whether that endpoint's values are log concentrations.
    error : str or None
        The residual error model.
    typical, omega, residual : dict
        Typical values, between-subject variances and residual errors, at one significant
        figure.
    graded : dict
        Per yes/no or graded endpoint, a list of ``[level, frequency]`` pairs: the share of
        its observations at each level, pooled over visits, at two figures (levels observed in
        fewer than ``min_category_patients`` patients folded into the most common).
    pd : dict
        Per continuous PD endpoint: ``shape`` (a key of :data:`synpmx_lite.pmx.pd.PD_SHAPES`),
        ``baseline``, ``baseline_sd`` (between-subject SD, endpoint units), ``parameters``
        (the shape's, by name) and ``residual`` (additive SD), each at one significant figure.
    covariates : dict
        Per continuous covariate, ``geometric_mean`` (the exponential of the trimmed mean of
        the logs) and ``sdlog`` (the trimmed SD of the logs), at two figures.
    categories : dict
        Per categorical covariate, a list of ``[level, frequency]`` pairs (levels held by
        fewer than ``min_category_patients`` folded away), frequencies at two figures.
    reference_weight : float or None
        Median body weight at one figure, or the nearest value at one figure three patients
        share where one or two weigh about the median (70 kg without one); None without a
        weight column.
    arms : list of dict
        Per arm kept: ``arm`` (the engine's label, ``"arm 1"``, ...), ``patients``, the
        planned ``doses``, each a dict of ``period``, ``index`` (the dose's place in its
        period), ``time``, ``amount``, ``duration`` and ``route`` (``"iv"`` into the central
        compartment, ``"oral"`` into the depot of an oral model), and ``keep``: each keep column's
        value on the arm (null where fewer than three of the arm's patients hold it).
    dose_change_rate : float
        Share of patients given a dose unlike their previous one in the same period (0 where
        fewer than three were, 1 where fewer than three were not).
    endpoints : dict
        Per endpoint: ``attendance`` (1 where fewer than three missed a visit), ``visits``
        (``[period, time]`` pairs reached by at least three patients) and ``loq``.
    checks : dict
        The verdicts of P4 and P5; empty in a private release, since they are read from every
        patient.
    effects : list of dict
        The PK fit's covariate effects (absent from the JSON without any), each with
        ``parameter``, ``covariate``, ``estimate`` (one significant figure) and either the
        ``reference`` a continuous covariate's value is divided by (two figures; ``level``
        null) or the categorical ``level`` whose factor it is (``reference`` null). Only
        effects of released covariates are released.
    correlation : dict
        The correlation of the PK fit's correlated pair of etas (absent from the JSON for a
        diagonal Omega), keyed ``"cl,v"``, at one significant figure as the other estimates.
    guarantee : dict
        Only in a differentially private release
        (:func:`synpmx_lite.generator.private_release.private_fingerprint`; absent from the
        JSON otherwise): its ``epsilon`` and the number of ``subsets`` of its subsample and
        aggregate. Such a release carries no ``checks``; an ordinary one carries both.
    """

    cohort_size: int
    model: dict | None
    pk_endpoint: str | None
    log_dv: bool
    error: str | None
    typical: dict
    omega: dict
    residual: dict
    pd: dict
    graded: dict
    covariates: dict
    categories: dict
    reference_weight: float | None
    arms: list
    dose_change_rate: float
    endpoints: dict
    checks: dict
    effects: list = dataclasses.field(default_factory=list)
    correlation: dict = dataclasses.field(default_factory=dict)
    guarantee: dict = dataclasses.field(default_factory=dict)

    def __post_init__(self) -> None:
        _schema(self._fields()).refuse("not a fingerprint: ")

    def _fields(self) -> dict:
        """The fields as released: an optional field left out where it is empty."""
        fields = dataclasses.asdict(self)
        for name in OPTIONAL_FIELDS:
            if not fields[name]:
                del fields[name]
        return fields

    def to_json(self) -> str:
        """The fingerprint as JSON: the artefact that would leave the secure environment."""
        return json.dumps(self._fields(), indent=1, sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> Fingerprint:
        """Read a fingerprint written by :meth:`to_json`.

        Raises
        ------
        TypeError
            ``text`` is not a string, or a field has the wrong type (named in the message).
        ValueError
            ``text`` is not JSON, repeats a key within one object, or holds fields outside
            the allowlist, lacks some, or has a value out of range (named in the message).
        """
        if not isinstance(text, str):
            raise TypeError(f"text must be a JSON string, got {type(text).__name__}")
        try:
            fields, repeated = read_json(text)
        except json.JSONDecodeError as error:
            raise ValueError(f"text is not JSON: {error}") from error
        if repeated:
            # Readers differ on which value of a repeated key wins: refuse the ambiguity.
            raise ValueError(f"text repeats keys within one object: {repeated}")
        _schema(fields).refuse("text does not hold a fingerprint: ")
        return cls(**fields)

    @property
    def pk_model(self) -> PkModel | None:
        """The structural model as a :class:`synpmx_lite.pmx.pk.PkModel` (None without one)."""
        return None if self.model is None else PkModel(**self.model)

    def __str__(self) -> str:
        lines = [
            f"PMX model fingerprint: {self.cohort_size} patients",
            *_pk_lines(self),
            *_pd_lines(self),
            *_covariate_lines(self),
            *_arm_lines(self),
            *_endpoint_lines(self),
            _verdict_line(self),
        ]
        return "\n".join(wrapped for line in lines for wrapped in _wrap(line))


# Longest line of a printed fingerprint: it fits a notebook's or the book's output box.
_PRINT_WIDTH = 72


def _verdict_line(fingerprint: Fingerprint) -> str:
    """The checks' verdicts, or a private release's guarantee in their place."""
    if fingerprint.guarantee:
        terms = fingerprint.guarantee
        return f"guarantee: epsilon {terms['epsilon']:g}, {terms['subsets']} subsets"
    return "checks: " + ", ".join(f"{k} {v}" for k, v in fingerprint.checks.items())


def _wrap(line: str) -> list[str]:
    """One printed line within ``_PRINT_WIDTH``, continued four spaces further in."""
    indent = " " * (len(line) - len(line.lstrip()))
    return textwrap.wrap(
        line,
        _PRINT_WIDTH,
        subsequent_indent=indent + "    ",
        break_on_hyphens=False,
        break_long_words=False,
    )


def _estimates(values: dict) -> str:
    """Named numbers as text: ``cl 0.1, v 8``."""
    return ", ".join(f"{k} {v:g}" for k, v in values.items())


def _pk_lines(fingerprint: Fingerprint) -> list[str]:
    """The PK model and its estimates (none without a PK model)."""
    if fingerprint.model is None:
        return []
    return [
        f"PK ({fingerprint.pk_endpoint}): {fingerprint.pk_model}, {fingerprint.error} error",
        f"  typical values: {_estimates(fingerprint.typical)}",
        f"  between-subject variances: {_estimates(fingerprint.omega)}",
        f"  residual error: {_estimates(fingerprint.residual)}",
    ]


def _pd_lines(fingerprint: Fingerprint) -> list[str]:
    """Each PD model, then each graded endpoint's level frequencies."""
    lines = []
    for name, model in fingerprint.pd.items():
        lines += [
            f"PD ({name}): {model['shape']} shape",
            f"  baseline: {model['baseline']:g}, between-subject SD {model['baseline_sd']:g}",
            f"  shape parameters: {_estimates(model['parameters'])}",
            f"  residual SD: {model['residual']:g}",
        ]
    for name, levels in fingerprint.graded.items():
        lines.append(f"graded {name}: " + ", ".join(f"{lv:g} {fr:g}" for lv, fr in levels))
    return lines


def _covariate_lines(fingerprint: Fingerprint) -> list[str]:
    """The continuous covariates' summaries, the categories' frequencies, the reference weight."""
    lines = [
        f"covariate {name}: geometric mean {summary['geometric_mean']:g}, "
        f"SD on the log scale {summary['sdlog']:g}"
        for name, summary in fingerprint.covariates.items()
    ]
    for name, levels in fingerprint.categories.items():
        lines.append(f"covariate {name}: " + ", ".join(f"{lv} {fr:g}" for lv, fr in levels))
    if fingerprint.reference_weight is not None:
        lines.append(f"reference weight: {fingerprint.reference_weight:g}")
    return lines


def _arm_lines(fingerprint: Fingerprint) -> list[str]:
    """Each arm's size and first four doses, then the dose-change rate."""
    lines = []
    for arm in fingerprint.arms:
        doses = ", ".join(
            f"{d['amount']:g} at {d['time']:g} h"
            + (f" of period {d['period'] + 1}" if d["period"] else "")
            for d in arm["doses"][:4]
        )
        more = f" (+{len(arm['doses']) - 4} more)" if len(arm["doses"]) > 4 else ""
        lines.append(f"{arm['arm']}: {arm['patients']} patients; doses {doses}{more}")
    return [*lines, f"dose-change rate: {fingerprint.dose_change_rate:g}"]


def _endpoint_lines(fingerprint: Fingerprint) -> list[str]:
    """Each endpoint's attendance, number of visits and LOQ."""
    lines = []
    for name, endpoint in fingerprint.endpoints.items():
        loq = "none" if endpoint["loq"] is None else f"{endpoint['loq']:g}"
        lines.append(
            f"endpoint {name}: attendance {endpoint['attendance']:g} over "
            f"{len(endpoint['visits'])} visits, LOQ {loq}"
        )
    return lines
