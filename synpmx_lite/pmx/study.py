"""Study data: a NONMEM-style event table, the roles of its columns, readers and validation.

An event table has one row per event: a dose (an amount given at a time, as a bolus, an oral
dose or an infusion at a rate) or an observation (a measured value of one observation type, the
*endpoint*). :func:`pmx_roles` says which column is which, as the R generator's ``pmx_roles()``
does, and :func:`prepare_study` checks the table and arranges it for estimation:
per-patient baseline covariates, long tables of doses and observations, and padded
patient-by-dose and patient-by-observation arrays for the vectorized PK model.

Event codes (EVID) follow rxode2, as in the nlmixr2data files shipped here: 0 an observation,
1 a dose, 101 a dose into compartment 1, 10101 an infusion given by rate and amount whose end
is marked by a row with a negative rate (that row is dropped). A row with MDV 1 and EVID 0 is a
missing observation and is dropped. A time that goes back within a patient starts a new dosing
period after a washout (mavoglurant's second occasion starts again at time 0).
"""

from __future__ import annotations

import numbers
from dataclasses import dataclass, field
from importlib import resources

import numpy as np
import pandas as pd

from .._validation import check_count
from .pk import PkModel

__all__ = [
    "DATASETS",
    "PmxRoles",
    "StudyEvents",
    "load_dataset",
    "pmx_roles",
    "prepare_study",
]

_OBSERVATION, _DOSE = 0, 1
_DOSE_CODES = (1, 101, 10101)
_INFUSION_BY_RATE = 10101
# NONMEM data items the engine reads only through a role: present but unmapped, one would be
# ignored and change the study silently (additional doses dropped, an IV dose read as oral,
# below-LOQ markers read as concentrations).
_NONMEM_ITEMS = (
    "ADDL", "II", "SS", "CMT", "PCMT", "RATE", "DUR", "MDV", "DVID",
    "BLQ", "LLOQ", "LOQ", "CENS", "LIMIT",
)  # fmt: skip
# Names that only start like a censoring item (BLQFLAG, LLOQ_MG, CENS2) are caught as well.
_CENSORING_PREFIXES = ("BLQ", "LLOQ", "CENS")
# What to do with an unmapped item that has no role of its own name.
_CENSORING_ADVICE = (
    "flag censored rows in one column named in pmx_roles(cens=...), with DV holding the limit "
    "on those rows"
)
_ITEM_ADVICE = {
    **{item: _CENSORING_ADVICE for item in ("BLQ", "LLOQ", "LOQ", "LIMIT", "CENS")},
    "DUR": "give the infusion rate AMT/DUR in a column named in pmx_roles(rate=...)",
    "PCMT": "drop the column: the engine observes the central compartment",
}
# The largest dose accepted, in any unit (a tonne in nanograms): the likelihood squares
# predictions and their derivatives, which must stay far inside floating-point range.
_MAX_DOSE = 1e15
# The optional event roles of PmxRoles, each one column or None.
_OPTIONAL_ROLES = (
    "dvid", "mdv", "rate", "nominal_time", "arm", "weight", "addl", "ii", "ss", "cmt", "cens",
)  # fmt: skip
# Dose compartments, NONMEM's numbering: (route of the model, CMT) -> into the central one.
_INTO_CENTRAL = {("oral", 1): False, ("oral", 2): True, ("iv", 1): True}


@dataclass(frozen=True)
class PmxRoles:
    """Which column of an event table plays which role, and the PK model the study calls for.

    Build it with :func:`pmx_roles`; the fields are documented there.
    """

    id: str
    time: str
    dv: str
    amt: str
    evid: str
    dvid: str | None = None
    mdv: str | None = None
    rate: str | None = None
    nominal_time: str | None = None
    arm: str | None = None
    covariates: tuple[str, ...] = ()
    categorical: tuple[str, ...] = ()
    weight: str | None = None
    pk_endpoint: str | None = None
    log_dv: bool = False
    model: PkModel = field(default_factory=PkModel)
    fit_pk: bool = True
    keep: tuple[str, ...] = ()
    graded: tuple[str, ...] = ()
    addl: str | None = None
    ii: str | None = None
    ss: str | None = None
    cmt: str | None = None
    cens: str | None = None
    negative_dv: bool = False
    varying: tuple[str, ...] = ()
    effects: tuple[str, ...] = ()
    random: tuple[str, ...] | None = None
    correlated: tuple[str, str] | None = None

    @property
    def columns(self) -> tuple[str, ...]:
        """Every column the roles name, in a fixed order."""
        named = (self.id, self.time, self.dv, self.amt, self.evid, self.dvid, self.mdv)
        named += (self.rate, self.nominal_time, self.arm, self.addl, self.ii, self.ss, self.cmt)
        named += (self.cens,)
        listed = [c for c in named if c is not None] + list(self.covariates) + list(self.keep)
        return tuple(dict.fromkeys(listed))


def _column_name(value: object, name: str) -> str:
    if not isinstance(value, str) or not value:
        raise TypeError(f"{name} must be a column name (a non-empty string), got {value!r}")
    return value


def pmx_roles(
    *,
    id: str,
    time: str,
    dv: str,
    amt: str,
    evid: str,
    dvid: str | None = None,
    mdv: str | None = None,
    rate: str | None = None,
    nominal_time: str | None = None,
    arm: str | None = None,
    covariates: tuple[str, ...] | list[str] = (),
    categorical: tuple[str, ...] | list[str] = (),
    weight: str | None = None,
    pk_endpoint: str | None = None,
    log_dv: bool = False,
    model: PkModel | None = None,
    fit_pk: bool = True,
    keep: tuple[str, ...] | list[str] = (),
    graded: tuple[str, ...] | list[str] = (),
    addl: str | None = None,
    ii: str | None = None,
    ss: str | None = None,
    cmt: str | None = None,
    cens: str | None = None,
    negative_dv: bool = False,
    varying: tuple[str, ...] | list[str] = (),
    effects: tuple[str, ...] | list[str] = (),
    random: tuple[str, ...] | list[str] | None = None,
    correlated: tuple[str, str] | list[str] | None = None,
) -> PmxRoles:
    """Name the roles of an event table's columns.

    Parameters
    ----------
    id, time, dv, amt, evid : str
        Columns of the subject identifier, the time (hours), the observed value, the dose
        amount and the event code (see the module docstring).
    dvid : str, optional
        Column of the observation type (endpoint). Without it every observation is one
        endpoint, ``"DV"``.
    mdv : str, optional
        Column flagging rows with no observation (1).
    rate : str, optional
        Column of the infusion rate; a dose with a positive rate is an infusion of duration
        amount / rate.
    nominal_time : str, optional
        Column of the planned (nominal) time of each observation, which defines the visits.
        Without it the k-th observation of each patient in a dosing period is visit k.
    arm : str, optional
        Column of the treatment arm (read at each patient's first row).
    covariates : sequence of str
        Baseline covariate columns (read at each patient's first row).
    categorical : sequence of str
        Those covariates that are categorical although numeric (a non-numeric covariate is
        always categorical).
    weight : str, optional
        The covariate that is body weight, whose median is the reference weight.
    pk_endpoint : str, optional
        The ``dvid`` value of the concentrations the PK model is fitted to. Default: every
        observation (allowed only without ``dvid`` or with a single endpoint).
    log_dv : bool, default False
        Whether the observed concentrations are natural logarithms (as in nimoData); the
        model is then fitted on the log scale with an additive error.
    model : PkModel, optional
        The structural PK model to fit. Default: ``PkModel()`` (one compartment, oral).
    fit_pk : bool, default True
        Whether the study has a PK endpoint to fit. False for a study of PD endpoints only
        (wbcSim, whose individual PK is given): every endpoint is then a PD endpoint, and
        ``pk_endpoint``, ``log_dv`` and ``model`` are not used.
    keep : sequence of str
        Keep columns: columns (read at each patient's first row) whose value is copied onto
        the synthetic patients of an arm, such as a site or a formulation. An arm's value is
        its most common one, released only where at least ``min_arm_patients`` of the arm's
        patients hold it, and written as missing otherwise.
    graded : sequence of str
        Endpoints (``dvid`` values) that are yes/no or graded, their values levels (0/1, or
        grades): released as level frequencies pooled over visits, not fitted. Every other
        endpoint but the PK one is a continuous PD endpoint.
    addl, ii : str, optional
        NONMEM's additional doses: a dose row with ``ADDL`` = k > 0 stands for itself and k
        more doses of the same amount and route, every ``II`` hours after it (``II`` positive
        there). ``addl`` needs ``ii``; ``ii`` needs ``addl`` or ``ss`` (a steady-state dose
        needs only its interval).
    ss : str, optional
        NONMEM's steady-state flag. SS 1 on a dose with a positive ``II`` is the dose at
        steady state: the dose and the same dose every ``II`` hours before it, for ever (the
        geometric series of each exponential of the closed forms, :mod:`synpmx_lite.pmx.pk`);
        with ``ADDL`` the doses after it are ordinary ones. Refused: SS 2, SS on an infusion
        or under a model with a lag time, and a steady-state dose after an earlier dose of
        its period (the reset SS=1 implies is not modelled).
    cmt : str, optional
        The compartment of each dose, NONMEM's numbering: under an oral model 1 is the depot
        (first-order absorption) and 2 the central compartment (an IV bolus, or an infusion at
        the row's rate); under an IV model 1 is the central compartment. Any other dose
        compartment is refused. On observation rows it is not read (the engine predicts the
        central concentration).
    cens : str, optional
        NONMEM's censoring flag for Beal's method M3: a PK observation with ``CENS`` = 1 was
        below the limit of quantification, and its ``DV`` holds the limit (its logarithm with
        ``log_dv``). The fit then uses the probability of a value below the limit in place of
        the density (``synpmx_lite.pmx._censored``). Only 0 and 1 are modelled (-1, above
        a limit, is refused), and only on observation rows of the PK endpoint.
    negative_dv : bool, default False
        Whether negative concentrations of the PK endpoint on a linear scale are measurements
        (simulated data with additive error, or an assay that reports values below zero).
        By default they are refused: a negative value is usually a below-LOQ marker.
    varying : sequence of str
        Covariates declared to change within a patient (a weight recorded at each cycle):
        the engine reads their value at the patient's first row, the baseline. Any other
        covariate or keep column that changes within a patient is refused (time-varying
        covariates are not modelled).
    effects : sequence of str
        Covariate effects on the PK model's typical values, as formulas ``"cl ~ wt/70"``
        or ``"cl ~ sex"`` (:mod:`synpmx_lite.pmx.covariates`), each naming one of
        ``covariates``; the default of :func:`synpmx_lite.pmx.population.fit_population`.
    random : sequence of str, optional
        The PK parameters with between-subject variability, e.g. ``("cl", "v")``: the
        default of :func:`synpmx_lite.pmx.population.fit_population`'s ``random``. None (the
        default) puts a random effect on every parameter of ``model``.
    correlated : pair of str, optional
        Two parameters with a random effect whose etas are correlated, e.g. ``("cl", "v")``:
        the default of :func:`synpmx_lite.pmx.population.fit_population`'s ``correlated``.
        None (the default): a diagonal Omega.

    Returns
    -------
    PmxRoles
        The roles.

    Examples
    --------
    >>> roles = pmx_roles(id="id", time="time", dv="dv", amt="amt", evid="evid", dvid="dvid",
    ...                   covariates=["wt", "age", "sex"], weight="wt", pk_endpoint="cp")
    >>> roles.columns
    ('id', 'time', 'dv', 'amt', 'evid', 'dvid', 'wt', 'age', 'sex')
    """
    required = {"id": id, "time": time, "dv": dv, "amt": amt, "evid": evid}
    optional = {
        "dvid": dvid,
        "mdv": mdv,
        "rate": rate,
        "nominal_time": nominal_time,
        "arm": arm,
        "weight": weight,
        "addl": addl,
        "ii": ii,
        "ss": ss,
        "cmt": cmt,
        "cens": cens,
    }
    _check_column_names(required, optional)
    _refuse_unpaired_interval(addl, ii, ss)
    covariates, categorical = _covariate_roles(covariates, categorical, weight)
    _refuse_shared_columns(required, optional, covariates + tuple(_as_names(keep, "keep")))
    _check_pk_roles(pk_endpoint, log_dv, model)
    keep = _keep_columns(keep, covariates)
    varying = tuple(_column_name(c, "varying") for c in _as_names(varying, "varying"))
    if not set(varying) <= set(covariates):
        raise ValueError(f"varying must be a subset of covariates, got {varying}")
    graded = _graded_endpoints(graded, pk_endpoint)
    for flag, value in (("fit_pk", fit_pk), ("negative_dv", negative_dv)):
        if not isinstance(value, bool):
            raise TypeError(f"{flag} must be a bool, got {value!r}")
    if not fit_pk and (pk_endpoint is not None or log_dv):
        raise ValueError("a study without a PK fit (fit_pk=False) takes no pk_endpoint or log_dv")
    effects = _effect_formulas(effects, covariates)
    model = model if model is not None else PkModel()
    random = _random_names(random, model)
    correlated = _correlated_names(correlated, model, random)
    return PmxRoles(
        **required,
        **optional,
        covariates=covariates,
        categorical=categorical,
        pk_endpoint=pk_endpoint,
        log_dv=log_dv,
        model=model,
        fit_pk=fit_pk,
        keep=keep,
        graded=graded,
        negative_dv=negative_dv,
        varying=varying,
        effects=effects,
        random=random,
        correlated=correlated,
    )


def _correlated_names(
    correlated: object, model: PkModel, random: tuple[str, ...] | None
) -> tuple[str, str] | None:
    """Two parameters of ``model`` with a random effect (``random``; None: every one), in
    the model's order, checked; None for none."""
    if correlated is None:
        return None
    if isinstance(correlated, str) or not isinstance(correlated, tuple | list):
        raise TypeError(f"correlated must be a pair of parameter names, got {correlated!r}")
    names = list(correlated)
    if len(names) != 2:
        raise ValueError(f"correlated must name exactly two parameters, got {names!r}")
    unknown = [n for n in names if n not in model.parameters]
    if unknown:
        raise ValueError(
            f"correlated names {unknown}, not parameters of {model} ({list(model.parameters)})"
        )
    if names[0] == names[1]:
        raise ValueError(f"correlated names {names[0]!r} twice: it needs two parameters")
    without = [n for n in names if random is not None and n not in random]
    if without:
        raise ValueError(f"correlated names {without}, which have no random effect (random)")
    first, second = sorted(names, key=model.parameters.index)
    return first, second


def _random_names(random: object, model: PkModel) -> tuple[str, ...] | None:
    """The parameters named in ``random``, checked against the model (None: all)."""
    if random is None:
        return None
    if isinstance(random, str) or not isinstance(random, tuple | list):
        raise TypeError(f"random must be a sequence of parameter names, got {random!r}")
    unknown = [name for name in random if name not in model.parameters]
    if unknown or not random or len(set(random)) != len(random):
        raise ValueError(
            f"random must name parameters of {model} ({list(model.parameters)}) once each, "
            f"at least one, got {random!r}"
        )
    return tuple(random)


def _effect_formulas(effects: object, covariates: tuple) -> tuple:
    """The effect formulas, each naming one of the covariates (parsed in full by the fit)."""
    if isinstance(effects, str) or not isinstance(effects, (tuple, list)):
        raise TypeError(f"effects must be a sequence of formulas, got {effects!r}")
    for formula in effects:
        if not isinstance(formula, str) or "~" not in formula:
            raise ValueError(f"effects: {formula!r} is not a formula '<parameter> ~ <covariate>'")
        covariate = formula.split("~", 1)[1].split("/", 1)[0].strip()
        if covariate not in covariates:
            raise ValueError(
                f"effects: {formula!r} names {covariate!r}, not one of the covariates "
                f"{list(covariates)}"
            )
    return tuple(effects)


def _check_column_names(required: dict, optional: dict) -> None:
    """Refuse a role that names no column (an optional role may be None)."""
    for name, value in required.items():
        _column_name(value, name)
    for name, value in optional.items():
        if value is not None:
            _column_name(value, name)


def _refuse_shared_columns(required: dict, optional: dict, baseline: tuple) -> None:
    """Refuse one column named for two event roles, or for an event role and a covariate or
    keep column (the nominal time may be the time column itself, the weight is a covariate)."""
    events = {**required, **optional}
    events = {role: column for role, column in events.items() if column is not None}
    events.pop("weight", None)
    if events.get("nominal_time") == events["time"]:
        events.pop("nominal_time")
    roles_of: dict[str, list[str]] = {}
    for role, column in events.items():
        roles_of.setdefault(column, []).append(role)
    for column in baseline:
        roles_of.setdefault(column, []).append("a covariate or keep column")
    shared = {column: roles for column, roles in roles_of.items() if len(roles) > 1}
    if shared:
        column, roles = next(iter(shared.items()))
        raise ValueError(
            f"column {column!r} is named for two roles ({' and '.join(roles)}): each role needs "
            "its own column"
        )


def _role_columns(roles: PmxRoles) -> tuple[dict, dict, tuple]:
    """The required and optional event roles of ``roles`` and its covariate and keep columns,
    as :func:`_refuse_shared_columns` reads them."""
    required = {role: getattr(roles, role) for role in ("id", "time", "dv", "amt", "evid")}
    optional = {role: getattr(roles, role) for role in _OPTIONAL_ROLES}
    return required, optional, tuple(roles.covariates) + tuple(roles.keep)


def _covariate_roles(covariates: object, categorical: object, weight: str | None) -> tuple:
    """The covariates and the categorical ones, checked, with the weight among the covariates."""
    covariates = tuple(_column_name(c, "covariates") for c in _as_names(covariates, "covariates"))
    categorical = tuple(
        _column_name(c, "categorical") for c in _as_names(categorical, "categorical")
    )
    if not set(categorical) <= set(covariates):
        raise ValueError(f"categorical must be a subset of covariates, got {categorical}")
    if weight is not None and weight not in covariates:
        raise ValueError(f"weight must be one of the covariates, got {weight!r}")
    return covariates, categorical


def _check_pk_roles(pk_endpoint: object, log_dv: object, model: object) -> None:
    """Refuse a PK endpoint, log flag or PK model of the wrong type."""
    if pk_endpoint is not None and not isinstance(pk_endpoint, str):
        raise TypeError(f"pk_endpoint must be a string, got {pk_endpoint!r}")
    if not isinstance(log_dv, bool):
        raise TypeError(f"log_dv must be a bool, got {log_dv!r}")
    if model is not None and not isinstance(model, PkModel):
        raise TypeError(f"model must be a PkModel, got {type(model).__name__}")


def _keep_columns(keep: object, covariates: tuple) -> tuple:
    """The keep columns, checked, none of them a covariate."""
    keep = tuple(_column_name(c, "keep") for c in _as_names(keep, "keep"))
    if set(keep) & set(covariates):
        raise ValueError(
            f"keep columns must not be covariates, got {sorted(set(keep) & set(covariates))}"
        )
    return keep


def _graded_endpoints(graded: object, pk_endpoint: str | None) -> tuple:
    """The graded endpoints, checked, the PK endpoint not among them."""
    if isinstance(graded, str) or not isinstance(graded, list | tuple):
        raise TypeError(f"graded must be a list or tuple of endpoint names, got {graded!r}")
    graded = tuple(graded)
    if not all(isinstance(e, str) and e for e in graded):
        raise TypeError(f"graded must hold endpoint names (non-empty strings), got {graded!r}")
    if pk_endpoint is not None and pk_endpoint in graded:
        raise ValueError(f"the PK endpoint {pk_endpoint!r} cannot be graded")
    return graded


def _as_names(value: object, name: str) -> tuple:
    if isinstance(value, str) or not isinstance(value, list | tuple):
        raise TypeError(f"{name} must be a list or tuple of column names, got {value!r}")
    return tuple(value)


# --- Validation and arrangement ---------------------------------------------------------------


@dataclass(frozen=True)
class StudyEvents:
    """A checked event table, arranged for estimation and summaries.

    Attributes
    ----------
    roles : PmxRoles
        The roles the table was read with.
    ids : numpy.ndarray
        The source subject identifiers, one per patient, in order of first appearance.
    covariates : pandas.DataFrame
        Baseline covariates and keep columns, one row per patient (index: patient position
        0..n-1).
    arms : pandas.Series
        Each patient's arm (``"all"`` without an arm column).
    doses : pandas.DataFrame
        One row per dose, additional doses (ADDL/II) written out: ``patient`` (position),
        ``period``, ``time``, ``amount``, ``duration`` (0 for a bolus or oral dose),
        ``central`` (into the central compartment: every dose of an IV model) and
        ``interval`` (the II of a steady-state dose, 0 for the others).
    observations : pandas.DataFrame
        One row per observation: ``patient``, ``period``, ``endpoint``, ``time``, ``visit``
        (nominal time or observation index within the endpoint), ``dv``.
    dose_time, dose_amount, dose_duration, dose_period : numpy.ndarray
        Padded ``(n, max doses)`` arrays (padding: amount 0).
    obs_time, obs_dv, obs_period : numpy.ndarray
        Padded ``(n, max observations)`` arrays of the PK endpoint's observations.
    obs_mask : numpy.ndarray
        True where ``obs_time``/``obs_dv`` hold a real observation.
    dose_central : numpy.ndarray or None
        Padded ``(n, max doses)`` flags of the doses into the central compartment under an
        oral model (IV doses, ``roles.cmt`` 2); None where there are none.
    obs_censored : numpy.ndarray or None
        Padded ``(n, max observations)`` flags of the PK observations below the limit of
        quantification (``roles.cens`` 1, ``obs_dv`` the limit); None where there are none.
    dose_interval : numpy.ndarray or None
        Padded ``(n, max doses)`` dosing intervals of the steady-state doses (``roles.ss`` 1:
        the dose and its infinite past every II hours), 0 for the others; None where there
        are none.
    """

    roles: PmxRoles
    ids: np.ndarray
    covariates: pd.DataFrame
    arms: pd.Series
    doses: pd.DataFrame
    observations: pd.DataFrame
    dose_time: np.ndarray
    dose_amount: np.ndarray
    dose_duration: np.ndarray
    dose_period: np.ndarray
    obs_time: np.ndarray
    obs_dv: np.ndarray
    obs_period: np.ndarray
    obs_mask: np.ndarray
    dose_central: np.ndarray | None = None
    obs_censored: np.ndarray | None = None
    dose_interval: np.ndarray | None = None

    @property
    def n_patients(self) -> int:
        """Number of patients."""
        return len(self.ids)

    @property
    def pk_endpoint(self) -> str | None:
        """The endpoint the PK model is fitted to (None for a study without a PK fit)."""
        return _pk_endpoint(self.roles, self.observations["endpoint"].unique())

    def subset(self, keep: np.ndarray) -> StudyEvents:
        """The study restricted to the patients where ``keep`` (boolean, per patient) is True."""
        keep = np.asarray(keep, dtype=bool)
        positions = np.flatnonzero(keep)
        renumber = pd.Series(np.arange(positions.size), index=positions)

        def rows(table: pd.DataFrame) -> pd.DataFrame:
            kept = table[table["patient"].isin(positions)].copy()
            kept["patient"] = renumber.loc[kept["patient"]].to_numpy()
            return kept.reset_index(drop=True)

        return StudyEvents(
            roles=self.roles,
            ids=self.ids[keep],
            covariates=self.covariates[keep].reset_index(drop=True),
            arms=self.arms[keep].reset_index(drop=True),
            doses=rows(self.doses),
            observations=rows(self.observations),
            **{
                name: getattr(self, name)[keep]
                for name in (
                    "dose_time",
                    "dose_amount",
                    "dose_duration",
                    "dose_period",
                    "obs_time",
                    "obs_dv",
                    "obs_period",
                    "obs_mask",
                )
            },
            dose_central=None if self.dose_central is None else self.dose_central[keep],
            obs_censored=None if self.obs_censored is None else self.obs_censored[keep],
            dose_interval=None if self.dose_interval is None else self.dose_interval[keep],
        )


def _pk_endpoint(roles: PmxRoles, endpoints: np.ndarray) -> str | None:
    if not roles.fit_pk:
        return None
    if roles.pk_endpoint is not None:
        if roles.pk_endpoint not in set(endpoints):
            raise ValueError(
                f"pk_endpoint {roles.pk_endpoint!r} is not an endpoint of the data "
                f"({sorted(map(str, endpoints))})"
            )
        return roles.pk_endpoint
    if len(endpoints) != 1:
        raise ValueError(
            f"the data has several endpoints ({sorted(map(str, endpoints))}): name the "
            "concentrations with pmx_roles(pk_endpoint=...)"
        )
    return str(endpoints[0])


def _numeric(data: pd.DataFrame, column: str, role: str) -> np.ndarray:
    if column not in data.columns:
        raise ValueError(f"data has no column {column!r} (the {role} column)")
    if not pd.api.types.is_numeric_dtype(data[column]) or pd.api.types.is_bool_dtype(data[column]):
        raise TypeError(f"column {column!r} (the {role} column) must be numeric")
    values = data[column].to_numpy(dtype=float)
    if role != "dv" and not np.all(np.isfinite(values)):
        raise ValueError(f"column {column!r} (the {role} column) has missing or infinite values")
    return values


def _value_codes(column: pd.Series, *, as_text: bool = False) -> np.ndarray:
    """A code for each of ``column``'s values, every missing value one code; with
    ``as_text``, an object column's values by their text (``1`` and ``"1"`` alike)."""
    if as_text and column.dtype == object:
        column = column.astype(str).where(column.notna())
    return pd.factorize(column, use_na_sentinel=False)[0]


def _groups(*keys: np.ndarray) -> np.ndarray:
    """Each row's group, rows equal in every key together, numbered in order of first
    appearance (``pandas.factorize`` of the keys' rows, without building a MultiIndex)."""
    groups = np.zeros(len(keys[0]), dtype=np.int64)
    for key in keys:
        codes, uniques = pd.factorize(key)
        # Renumbered at each key, so the combined number stays below the rows squared.
        groups = pd.factorize(groups * (len(uniques) + 1) + codes)[0]
    return groups


def _sorted_groups(groups: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The stable order that sorts ``groups``, and where each group starts in that order."""
    order = np.argsort(groups, kind="stable")
    ordered = groups[order]
    return order, np.flatnonzero(np.r_[True, ordered[1:] != ordered[:-1]][: groups.size])


def _rank_within(groups: np.ndarray) -> np.ndarray:
    """Each row's place among the rows of its group, in order (``groupby(...).cumcount()``)."""
    order, starts = _sorted_groups(groups)
    rank = np.empty(groups.size, dtype=np.int64)
    rank[order] = np.arange(groups.size) - np.repeat(starts, np.diff(np.r_[starts, groups.size]))
    return rank


def _group_minima(groups: np.ndarray, values: np.ndarray, largest: int) -> np.ndarray:
    """The smallest of ``values`` in each group ``0..largest``; NaN in a group without rows."""
    minima = np.full(largest + 1, np.nan)
    order, starts = _sorted_groups(groups)
    if groups.size:
        minima[groups[order][starts]] = np.minimum.reduceat(values[order], starts)
    return minima


def _block_firsts(codes: np.ndarray) -> np.ndarray:
    """For each row of contiguous blocks of ``codes``, the position of its block's first row."""
    starts = np.r_[True, codes[1:] != codes[:-1]][: codes.size]
    return np.maximum.accumulate(np.where(starts, np.arange(codes.size), 0))


def _row_labels(labels: pd.Index, shown: int = 6) -> str:
    """Row labels for a message: the first few, and how many more."""
    first = ", ".join(map(str, labels[:shown]))
    return first + (f" (and {len(labels) - shown} more)" if len(labels) > shown else "")


def identifier_key(value: object) -> tuple:
    """An identifier or label as it reads: numbers by value, text without case or surrounding
    spaces (so that ``101``, ``"101"`` and ``" 101 "`` are one key)."""
    if isinstance(value, numbers.Real) and not isinstance(value, bool) and np.isfinite(value):
        return ("number", float(value))
    text = str(value).strip().casefold()
    try:
        number = float(text)
    except ValueError:
        return ("text", text)
    return ("number", number) if np.isfinite(number) else ("text", text)


def _refuse_ids_that_read_alike(ids: np.ndarray) -> None:
    """Refuse distinct identifiers that read as the same one (``101``, ``"101"``, ``" 101"``).

    Each would count as a patient of its own, so that one patient entered under three spellings
    would pass for the three patients every threshold of the release asks for.
    """
    keys = pd.Series([identifier_key(value) for value in ids])
    alike = keys.duplicated(keep=False).to_numpy()
    if alike.any():
        first = keys[alike].iloc[0]
        spellings = [value for value, key in zip(ids, keys, strict=True) if key == first]
        raise ValueError(
            f"data has subject IDs that read as one: {spellings!r} (type, case or spaces "
            "differ); give each patient one ID"
        )


def _refuse_copies(
    data: pd.DataFrame,
    roles: PmxRoles,
    codes: np.ndarray,
    ids: np.ndarray,
    period: np.ndarray,
    *,
    measured: np.ndarray,
) -> None:
    """Refuse duplicated rows within a dosing period, and records entered twice.

    Rows equal in every column the roles name are duplicates when they fall in the same
    dosing period (a dose given twice would double the exposure); in different periods they are
    a crossover's repeated doses. A patient's period whose rows, measured values included,
    equal row for row those of another patient's period (or of another period of the same
    patient) is a record entered twice: under a second ID it would count as a second patient
    and help a value that one patient holds past every threshold, and hide that patient's
    influence from the leave-one-out readings.
    """
    within = _groups(*(_value_codes(data[c]) for c in roles.columns), np.asarray(period))
    duplicated = np.bincount(within)[within] > 1
    if duplicated.any():
        raise ValueError(
            f"data has duplicated rows {_row_labels(data.index[duplicated])} (equal in every "
            "column the roles name, in the same dosing period): remove the copies"
        )
    # By their text: the engine reads an arm or an endpoint 1 and "1" alike (astype(str)).
    spelled = [_value_codes(data[c], as_text=True) for c in roles.columns if c != roles.id]
    rows = _groups(*spelled)
    records = _period_records(codes, np.asarray(period), rows, np.asarray(measured, bool))
    # Only blocks with a measured value can be told apart from a design that repeats itself.
    records = records[records["measured"]]
    copied = records["rows"].duplicated(keep=False).to_numpy()
    if copied.any():
        first = records.loc[copied, "rows"].iloc[0]
        twins = records[copied & (records["rows"] == first).to_numpy()]
        named = ", ".join(
            f"patient {ids[p]!r} period {q + 1}"
            for p, q in zip(twins["patient"], twins["period"], strict=True)
        )
        raise ValueError(
            f"data has one record entered twice: {named} have the same rows in every column "
            "the roles name except the ID (the same patient under two IDs?); remove the copy"
        )


def _period_records(
    codes: np.ndarray, period: np.ndarray, rows: np.ndarray, measured: np.ndarray
) -> pd.DataFrame:
    """Each patient's period in order of first appearance: ``patient``, ``period``, its rows
    in order (``rows``: each row's number among the distinct rows, as bytes) and whether it
    holds a measured value."""
    order, starts = _sorted_groups(_groups(codes, period))
    rows = rows[order]
    ends = np.r_[starts[1:], rows.size]
    return pd.DataFrame(
        {
            "patient": codes[order][starts],
            "period": period[order][starts],
            "rows": [rows[a:b].tobytes() for a, b in zip(starts, ends, strict=True)],
            "measured": np.logical_or.reduceat(measured[order], starts),
        }
    )


def _padded(table: pd.DataFrame, columns: list[str], n: int, fill: float) -> list[np.ndarray]:
    """Per-patient rows of ``table`` as ``(n, max rows)`` arrays, padded with ``fill``."""
    position = _rank_within(table["patient"].to_numpy())
    width = max(int(position.max()) + 1 if len(table) else 1, 1)
    patient = table["patient"].to_numpy()
    arrays = []
    for column in columns:
        array = np.full((n, width), fill, dtype=float)
        array[patient, position] = table[column].to_numpy(dtype=float)
        arrays.append(array)
    return arrays


def _refuse_unpaired_interval(addl: str | None, ii: str | None, ss: str | None) -> None:
    """Refuse ADDL without II, and II with neither ADDL nor SS: either would be misread."""
    if addl is not None and ii is None:
        raise ValueError(
            f"addl needs ii: NONMEM's additional doses (ADDL, column {addl!r}) are given "
            "every II hours; name the interval column as ii"
        )
    if ii is not None and addl is None and ss is None:
        raise ValueError(
            f"ii (column {ii!r}) is read with addl (additional doses) or ss (a steady-state "
            "dose): name one of them, or drop ii (the engine does not ignore it)"
        )


def prepare_study(data: pd.DataFrame, roles: PmxRoles, *, min_patients: int = 3) -> StudyEvents:
    """Check an event table against its roles and arrange it for estimation.

    Parameters
    ----------
    data : pandas.DataFrame
        The event table, one row per event, rows of each patient in time order within each
        dosing period.
    roles : PmxRoles
        Which column is which (:func:`pmx_roles`).
    min_patients : int, default 3
        The fewest patients a study may have.

    Returns
    -------
    StudyEvents
        The checked, arranged study.

    Raises
    ------
    ValueError
        One column named for two roles (also on roles made by ``dataclasses.replace``), a
        missing column, a column named like a NONMEM data item (ADDL, II, SS, CMT, BLQ, LLOQ,
        CENS, ..., or a name starting BLQ, LLOQ or CENS) that no role maps, missing or
        infinite times, doses or codes, an unknown event code, a negative time or dose, a dose
        past 1e15, an amount on an observation row,
        a steady-state dose the engine does not model (SS other than 0 and 1, SS 1 without a
        positive II, on an infusion, under a lag time, or after an earlier dose of its period),
        additional doses without a positive interval, a dose into a compartment the model has no
        route for, a time that goes back within a patient at a row that is not a dose (rows out
        of order, or two patients under one ID), a baseline covariate or keep column that
        changes within a patient (unless declared ``varying``), a negative concentration of the
        PK endpoint on a linear scale (unless ``negative_dv``), a censoring flag (``cens``)
        other than 0 and 1, or set on a row that is not an observation of the PK endpoint, or on
        a limit that is not positive on a linear scale, a missing or infinite value on an
        observation row that is not flagged missing (MDV 0), subject IDs that read as one
        (``101`` and ``"101 "``), a patient whose rows are split into separate blocks (two
        patients sharing an ID, or rows out of order), duplicated rows (equal in every column
        the roles name within one dosing period: a dose given twice would double the patient's
        exposure), a record entered twice (a patient's period equal, row for row, to another's),
        an observation before the patient's first dose, a patient with no observation of the PK
        endpoint (unless ``roles.fit_pk`` is False), or fewer than ``min_patients`` patients.
        Each message names the rows by their index labels.
    TypeError
        A non-numeric time, value, amount, code, rate or continuous covariate column.
    """
    if not isinstance(data, pd.DataFrame):
        raise TypeError(f"data must be a pandas DataFrame, got {type(data).__name__}")
    if not isinstance(roles, PmxRoles):
        raise TypeError(f"roles must be a PmxRoles (see pmx_roles), got {type(roles).__name__}")
    min_patients = check_count(min_patients, "min_patients", minimum=1)
    # Again here: roles changed with dataclasses.replace never passed through pmx_roles.
    _refuse_shared_columns(*_role_columns(roles))
    _refuse_unpaired_interval(roles.addl, roles.ii, roles.ss)
    _refuse_unread_columns(data, roles)
    values = _role_values(data, roles)
    is_dose, is_obs = _event_rows(data, roles, values)
    codes, ids = _patients(data, roles)
    n = len(ids)
    if n < min_patients:
        raise ValueError(f"data has {n} patients; at least {min_patients} are needed")
    period = _dosing_periods(data, values["time"], is_dose, codes, ids)
    _refuse_changing_baseline(data, roles, codes, ids)
    _refuse_copies(data, roles, codes, ids, period, measured=is_obs & (values["dv"] != 0))
    doses = _dose_table(values, is_dose, codes, period, roles.model.route, data.index)
    _refuse_doses_before_steady_state(roles, doses, ids)
    doses = doses.reset_index(drop=True)
    observations = _observation_table(data, roles, values, is_obs, codes, period)
    _refuse_early_observations(doses, observations, ids)
    pk = _pk_endpoint(roles, observations["endpoint"].unique())
    _refuse_patients_without_pk(observations, pk, ids)
    _refuse_negative_concentrations(data, roles, observations, is_obs, pk)
    _refuse_unmodelled_censoring(data, roles, values, is_obs, observations, pk)
    if roles.nominal_time:
        observations["visit"] = _numeric(data, roles.nominal_time, "nominal_time")[is_obs]
    else:
        # Counted afresh in each period: a visit is (period, visit), and counting on across
        # periods would set a patient's second period apart by their first one's samples.
        observations["visit"] = _rank_within(
            _groups(*(observations[c].to_numpy() for c in ("patient", "period", "endpoint")))
        )
    if roles.fit_pk and roles.model.route == "oral":
        depot = ~doses["central"].to_numpy()
        if (doses["duration"].to_numpy()[depot] > 0).any():
            raise ValueError(
                "an oral model takes no infusions into the depot: the rate column has positive "
                "rates on doses that are not into the central compartment (roles.cmt)"
            )
    covariates, arms = _baseline(data, roles, codes)
    return _arranged(roles, ids, covariates, arms, doses, observations, pk)


def _refuse_unread_columns(data: pd.DataFrame, roles: PmxRoles) -> None:
    """Refuse a missing role column, an empty table, and a column named like a NONMEM data
    item (ADDL, CMT, BLQ, ...) that no role maps: the engine would ignore it."""
    for column in roles.columns:
        if column not in data.columns:
            raise ValueError(f"data has no column {column!r} (named in roles)")
    if data.empty:
        raise ValueError("data has no rows")
    mapped = set(roles.columns)
    for column in data.columns:
        item = _nonmem_item(column)
        if item is not None and column not in mapped:
            advice = _ITEM_ADVICE.get(
                item, f"name its role in pmx_roles ({item.lower()}=...) or drop the column"
            )
            raise ValueError(
                f"column {column!r} reads as NONMEM's {item} data item, and no role maps it: "
                f"{advice}; the engine does not ignore it"
            )


def _nonmem_item(column: object) -> str | None:
    """The NONMEM data item a column name reads as (case-insensitive), or None."""
    name = str(column).strip().upper()
    if name in _NONMEM_ITEMS:
        return name
    return next((p for p in _CENSORING_PREFIXES if name.startswith(p)), None)


def _role_values(data: pd.DataFrame, roles: PmxRoles) -> dict[str, np.ndarray]:
    """The time, value, amount, event-code, rate and MDV columns as numbers, checked (rate and
    MDV 0 where the roles name none); the ID column checked for missing values."""
    values = {
        role: _numeric(data, getattr(roles, role), role) for role in ("time", "dv", "amt", "evid")
    }
    values["rate"] = _numeric(data, roles.rate, "rate") if roles.rate else np.zeros(len(data))
    values["mdv"] = _numeric(data, roles.mdv, "mdv") if roles.mdv else np.zeros(len(data))
    for role in ("addl", "ii", "ss", "cmt", "cens"):
        column = getattr(roles, role)
        values[role] = _numeric(data, column, role) if column else np.zeros(len(data))
    if not roles.cmt:
        values["cmt"] = np.where(np.isin(values["evid"], _DOSE_CODES), 1.0, 0.0)
    if data[roles.id].isna().any():
        raise ValueError(f"column {roles.id!r} (the id column) has missing values")
    return values


def _event_rows(
    data: pd.DataFrame, roles: PmxRoles, values: dict[str, np.ndarray]
) -> tuple[np.ndarray, np.ndarray]:
    """Which rows are doses and which observations, with their codes, times, doses, rates and
    observed values checked."""
    time, dv, amt, evid, rate = (values[k] for k in ("time", "dv", "amt", "evid", "rate"))
    unknown = sorted(set(np.unique(evid)) - {_OBSERVATION, *_DOSE_CODES})
    if unknown:
        raise ValueError(f"column {roles.evid!r} has unsupported event codes {unknown}")
    if np.any(time < 0):
        raise ValueError(f"column {roles.time!r} has negative times")
    # An rxode2 infusion's end is a row with negative rate and amount: drop it.
    ends = (evid == _INFUSION_BY_RATE) & (rate < 0)
    is_dose = np.isin(evid, _DOSE_CODES) & ~ends
    if np.any(amt[is_dose] <= 0):
        raise ValueError(f"column {roles.amt!r} has dose rows with a dose that is not positive")
    _refuse_rows(
        data, is_dose & (amt > _MAX_DOSE), roles.amt,
        f"doses above {_MAX_DOSE:g}, past the engine's floating-point range",
    )  # fmt: skip
    _refuse_rows(
        data, (evid == _OBSERVATION) & (amt != 0), roles.amt,
        f"an amount on observation rows ({roles.evid} 0): code a dose with a dose event code",
    )  # fmt: skip
    if np.any(rate[is_dose] < 0):
        raise ValueError(f"column {roles.rate!r} has negative rates on dose rows")
    _refuse_dose_items(data, roles, values, is_dose)
    is_obs = (evid == _OBSERVATION) & (values["mdv"] == 0)
    if not np.all(np.isfinite(dv[is_obs])):
        rows = _row_labels(data.index[is_obs & ~np.isfinite(dv)])
        raise ValueError(
            f"column {roles.dv!r} has missing or infinite values on observation rows {rows}: "
            "flag a missing observation with MDV 1 (roles.mdv)"
        )
    return is_dose, is_obs


def _refuse_rows(data: pd.DataFrame, bad: np.ndarray, column: str | None, what: str) -> None:
    """Refuse the rows where ``bad``, naming the column and the rows' index labels."""
    if np.any(bad):
        raise ValueError(f"column {column!r} has {what}: rows {_row_labels(data.index[bad])}")


def _refuse_dose_items(
    data: pd.DataFrame, roles: PmxRoles, values: dict[str, np.ndarray], is_dose: np.ndarray
) -> None:
    """Refuse what the engine does not model in NONMEM's ADDL, II, SS and CMT items."""
    addl, ii, cmt = (values[k] for k in ("addl", "ii", "cmt"))
    _refuse_steady_state(data, roles, values, is_dose)
    _refuse_rows(
        data, (addl < 0) | (addl != np.round(addl)) | (~is_dose & (addl != 0)), roles.addl,
        "values that are not a whole number of additional doses on a dose row",
    )  # fmt: skip
    _refuse_rows(
        data, (ii < 0) | (is_dose & (addl > 0) & (ii <= 0)), roles.ii,
        "additional doses (ADDL > 0) without a positive interval, or a negative interval",
    )  # fmt: skip
    if roles.fit_pk:
        route = roles.model.route
        known = np.isin(cmt, [c for r, c in _INTO_CENTRAL if r == route])
        _refuse_rows(
            data, is_dose & ~known, roles.cmt,
            f"doses into a compartment a {route} model has no dosing route for (NONMEM's "
            "numbering: oral 1 depot, 2 central; IV 1 central)",
        )  # fmt: skip


def _refuse_steady_state(
    data: pd.DataFrame, roles: PmxRoles, values: dict[str, np.ndarray], is_dose: np.ndarray
) -> None:
    """Refuse the steady-state doses the closed forms do not give: SS other than 0 or 1 (SS=2
    adds a steady state to the doses before it), SS on a row that is not a dose, without a
    positive interval, on an infusion, or under a model with a lag time."""
    ss, ii, rate = values["ss"], values["ii"], values["rate"]
    steady = ss == 1
    _refuse_rows(
        data, ~np.isin(ss, (0, 1)), roles.ss,
        "steady-state values other than 0 and 1 (SS=2, a steady state added to earlier "
        "doses, is not modelled)",
    )  # fmt: skip
    _refuse_rows(data, steady & ~is_dose, roles.ss, "SS 1 on rows that are not doses")
    _refuse_rows(
        data, steady & (ii <= 0), roles.ss,
        f"steady-state doses (SS 1) without a positive dosing interval (II, column {roles.ii!r})",
    )  # fmt: skip
    _refuse_rows(
        data, steady & (rate > 0), roles.rate,
        "steady-state infusions (SS 1 with a positive rate), which are not modelled",
    )  # fmt: skip
    if roles.fit_pk and roles.model.lag:
        _refuse_rows(
            data, steady, roles.ss,
            "steady-state doses (SS 1) under a model with a lag time, which are not modelled",
        )  # fmt: skip


def _refuse_doses_before_steady_state(
    roles: PmxRoles, doses: pd.DataFrame, ids: np.ndarray
) -> None:
    """Refuse a steady-state dose after another dose of its patient and period: NONMEM's SS=1
    resets the system there, which the engine does not model. ``doses`` is indexed by the
    data's row labels."""
    later = _rank_within(_groups(doses["patient"].to_numpy(), doses["period"].to_numpy())) > 0
    bad = later & (doses["interval"].to_numpy() > 0)
    if bad.any():
        patient = ids[doses.loc[bad, "patient"].iloc[0]]
        raise ValueError(
            f"column {roles.ss!r} has steady-state doses (SS 1) after an earlier dose of the "
            f"same patient and period: rows {_row_labels(doses.index[bad])} (first: patient "
            f"{patient!r}); the reset this implies is not modelled: start the period with the "
            "steady-state dose"
        )


def _dosing_periods(
    data: pd.DataFrame, time: np.ndarray, is_dose: np.ndarray, codes: np.ndarray, ids: np.ndarray
) -> np.ndarray:
    """Each row's dosing period: a time that goes back within a patient starts a new one after
    a washout, and only at a dose (as NONMEM, times may not otherwise decrease)."""
    back = np.r_[False, (np.diff(time) < 0) & (codes[1:] == codes[:-1])]
    disordered = back & ~is_dose
    if disordered.any():
        raise ValueError(
            f"time goes back within patient {ids[codes[np.argmax(disordered)]]!r} at rows "
            f"{_row_labels(data.index[disordered])}, which are not doses: sort each patient's "
            "rows by time (a new dosing period after a washout starts again with a dose), or "
            "give two patients sharing this ID their own IDs"
        )
    # A patient's rows are one block (_patients), and time cannot go back at its first row.
    started = np.cumsum(back)
    return started - started[_block_firsts(codes)]


def _refuse_changing_baseline(
    data: pd.DataFrame, roles: PmxRoles, codes: np.ndarray, ids: np.ndarray
) -> None:
    """Refuse a baseline covariate or keep column whose value changes within a patient: it is
    read at the first row, and a later value would be ignored (two patients under one ID, or a
    time-varying covariate the engine does not model). The arm may change between the dosing
    periods of a crossover; it is read at the first row."""
    firsts = _block_firsts(codes)  # a patient's rows are one block (_patients)
    for column in [c for c in roles.covariates + roles.keep if c not in roles.varying]:
        values = pd.factorize(data[column], use_na_sentinel=False)[0]  # a missing value is one
        changes = np.bincount(codes, weights=values != values[firsts], minlength=len(ids)) > 0
        if changes.any():
            raise ValueError(
                f"covariate {column!r} changes within patient {ids[np.argmax(changes)]!r}: "
                "baseline covariates take one value per patient (time-varying covariates are "
                "not modelled: declare it in pmx_roles(varying=...) to use its baseline value; "
                "two patients sharing one ID need their own IDs)"
            )


def _refuse_negative_concentrations(
    data: pd.DataFrame,
    roles: PmxRoles,
    observations: pd.DataFrame,
    is_obs: np.ndarray,
    pk: str | None,
) -> None:
    """Refuse negative concentrations of the PK endpoint on a linear scale (a below-LOQ
    marker such as -0.5 would be fitted as a measured value)."""
    if pk is None or roles.log_dv or roles.negative_dv:
        return
    negative = np.zeros(len(data), dtype=bool)
    negative[np.flatnonzero(is_obs)] = (observations["endpoint"].to_numpy() == pk) & (
        observations["dv"].to_numpy() < 0
    )
    _refuse_rows(
        data, negative, roles.dv,
        f"negative concentrations of the PK endpoint {pk!r} on a linear scale (a below-LOQ "
        "marker is not a measurement; flag such rows with MDV 1)",
    )  # fmt: skip


def _refuse_unmodelled_censoring(
    data: pd.DataFrame,
    roles: PmxRoles,
    values: dict[str, np.ndarray],
    is_obs: np.ndarray,
    observations: pd.DataFrame,
    pk: str | None,
) -> None:
    """Refuse CENS values Beal's M3 does not model here: other than 0 and 1 (-1 flags a value
    above a limit), on rows that are not observations, on endpoints other than the PK one,
    and limits that are not positive on a linear scale."""
    if not roles.cens:
        return
    cens = values["cens"]
    _refuse_rows(
        data, ~np.isin(cens, (0, 1)), roles.cens,
        "values other than 0 and 1 (only censoring below a limit, CENS 1, is modelled)",
    )  # fmt: skip
    _refuse_rows(
        data, (cens == 1) & ~is_obs, roles.cens,
        "CENS 1 on rows that are not observations (doses, or MDV 1)",
    )  # fmt: skip
    censored = np.zeros(len(data), dtype=bool)
    censored[np.flatnonzero(is_obs)] = observations["censored"].to_numpy(dtype=bool)
    endpoint = np.full(len(data), pk, dtype=object)
    endpoint[np.flatnonzero(is_obs)] = observations["endpoint"].to_numpy()
    _refuse_rows(
        data, censored & (endpoint != pk), roles.cens,
        f"censored observations of endpoints other than the PK endpoint {pk!r}, which are "
        "not modelled",
    )  # fmt: skip
    if not roles.log_dv:
        _refuse_rows(
            data, censored & (values["dv"] <= 0), roles.dv,
            "censored observations (CENS 1) whose limit, the DV, is not positive",
        )  # fmt: skip


def _patients(data: pd.DataFrame, roles: PmxRoles) -> tuple[np.ndarray, np.ndarray]:
    """Each row's patient (position) and the source IDs, refusing IDs that read as one and a
    patient whose rows are split into separate blocks."""
    codes, ids = pd.factorize(data[roles.id], sort=False)
    ids = np.array(ids.tolist(), dtype=object)  # plain Python IDs for messages and reports
    _refuse_ids_that_read_alike(ids)
    starts = np.r_[True, codes[1:] != codes[:-1]]
    if starts.sum() > len(ids):
        block = pd.Series(np.cumsum(starts)).groupby(codes).transform("nunique").to_numpy()
        split = ids[codes[np.argmax(block > 1)]]
        rows = data.index[(codes == codes[np.argmax(block > 1)]) & starts]
        raise ValueError(
            f"patient {split!r} has rows in separate blocks, starting at rows "
            f"{_row_labels(rows)}: two patients share an ID, or the rows are out of order "
            "(keep each patient's rows together)"
        )
    return codes, ids


def _dose_table(
    values: dict[str, np.ndarray],
    is_dose: np.ndarray,
    codes: np.ndarray,
    period: np.ndarray,
    route: str,
    labels: pd.Index,
) -> pd.DataFrame:
    """One row per dose, additional doses (ADDL/II) written out: its duration amount / rate
    for an infusion and 0 otherwise, and whether it goes into the central compartment;
    indexed by the ``labels`` of the data rows the doses come from."""
    amt, rate = values["amt"], values["rate"]
    with np.errstate(divide="ignore", invalid="ignore"):
        duration = np.where(rate > 0, amt / np.where(rate > 0, rate, 1), 0.0)
    central = np.array([_INTO_CENTRAL.get((route, c), False) for c in values["cmt"][is_dose]])
    given = pd.DataFrame(
        {
            "patient": codes[is_dose],
            "period": period[is_dose],
            "time": values["time"][is_dose],
            "amount": amt[is_dose],
            "duration": duration[is_dose],
            "central": central,
        },
        index=labels[is_dose],
    )
    # A steady-state dose (SS 1) carries its interval: it stands for the doses before it.
    given["interval"] = np.where(values["ss"][is_dose] == 1, values["ii"][is_dose], 0.0)
    # ADDL = k: the dose and k more, every II hours, in the same dosing period.
    repeats = values["addl"][is_dose].astype(int) + 1
    doses = given.iloc[np.repeat(np.arange(len(given)), repeats)].copy()
    later = np.arange(len(doses)) - np.repeat(np.cumsum(repeats) - repeats, repeats)
    doses["time"] += later * np.repeat(values["ii"][is_dose], repeats)
    doses.loc[later > 0, "interval"] = 0.0  # the additional doses are ordinary ones
    return doses.sort_values(["patient", "period", "time"], kind="stable")


def _observation_table(
    data: pd.DataFrame,
    roles: PmxRoles,
    values: dict[str, np.ndarray],
    is_obs: np.ndarray,
    codes: np.ndarray,
    period: np.ndarray,
) -> pd.DataFrame:
    """One row per observation, its endpoint ``"DV"`` without a ``dvid`` column; with a
    ``cens`` role, whether it is censored (``censored``, its ``dv`` the limit)."""
    endpoint = data[roles.dvid].astype(str).to_numpy() if roles.dvid else np.full(len(data), "DV")
    table = pd.DataFrame(
        {
            "patient": codes[is_obs],
            "period": period[is_obs],
            "endpoint": endpoint[is_obs],
            "time": values["time"][is_obs],
            "dv": values["dv"][is_obs],
        }
    )
    if roles.cens:
        table["censored"] = values["cens"][is_obs] == 1
    return table


def _refuse_early_observations(
    doses: pd.DataFrame, observations: pd.DataFrame, ids: np.ndarray
) -> None:
    """Refuse observations before the first dose of their patient and period."""
    groups = _groups(*(np.r_[doses[c], observations[c]] for c in ("patient", "period")))
    first = _group_minima(groups[: len(doses)], doses["time"].to_numpy(), groups.max(initial=-1))
    early = ~(observations["time"].to_numpy() >= first[groups[len(doses) :]])  # NaN: no dose
    if early.any():
        bad = ids[observations.loc[early, "patient"].iloc[0]]
        raise ValueError(
            f"{int(early.sum())} observations come before any dose of their patient "
            f"and period (first: patient {bad!r})"
        )


def _refuse_patients_without_pk(
    observations: pd.DataFrame, pk: str | None, ids: np.ndarray
) -> None:
    """Refuse a patient with no observation of the PK endpoint (none is needed without one)."""
    observed = np.bincount(
        observations.loc[observations["endpoint"] == pk, "patient"], minlength=len(ids)
    )
    if pk is not None and np.any(observed == 0):
        raise ValueError(
            f"patient {ids[np.argmax(observed == 0)]!r} has no observation of the PK endpoint "
            f"{pk!r}"
        )


def _baseline(
    data: pd.DataFrame, roles: PmxRoles, codes: np.ndarray
) -> tuple[pd.DataFrame, pd.Series]:
    """Each patient's covariates and keep columns, and arm (``"all"`` without an arm column),
    read at their first row; the covariates checked."""
    first_rows = np.unique(codes, return_index=True)[1]
    covariates = data.iloc[first_rows][list(roles.covariates + roles.keep)].reset_index(drop=True)
    for column in roles.covariates:
        if column not in roles.categorical and pd.api.types.is_numeric_dtype(covariates[column]):
            values = covariates[column].to_numpy(dtype=float)
            if not np.all(np.isfinite(values) & (values > 0)):
                raise ValueError(f"covariate {column!r} must be positive and not missing")
        elif covariates[column].isna().any():
            raise ValueError(f"covariate {column!r} has missing values")
    arms = (
        data.iloc[first_rows][roles.arm].astype(str).reset_index(drop=True)
        if roles.arm
        else pd.Series(["all"] * len(first_rows))
    )
    return covariates, arms


def _arranged(
    roles: PmxRoles,
    ids: np.ndarray,
    covariates: pd.DataFrame,
    arms: pd.Series,
    doses: pd.DataFrame,
    observations: pd.DataFrame,
    pk: str | None,
) -> StudyEvents:
    """The checked study, with padded per-patient arrays of the doses and of the PK endpoint's
    observations."""
    n = len(ids)
    pk_obs = observations[observations["endpoint"] == pk]
    dose_arrays = _padded(
        doses, ["time", "amount", "duration", "period", "central", "interval"], n, 0.0
    )
    into_central = roles.fit_pk and roles.model.route == "oral" and doses["central"].any()
    obs_arrays = _padded(pk_obs, ["time", "dv", "period"], n, np.nan)
    obs_mask = np.isfinite(obs_arrays[1])
    obs_time, obs_dv, obs_period = (np.where(obs_mask, a, 0.0) for a in obs_arrays)
    obs_censored = None
    if "censored" in pk_obs and pk_obs["censored"].any():
        obs_censored = _padded(pk_obs, ["censored"], n, 0.0)[0] > 0
    return StudyEvents(
        roles=roles,
        ids=ids,
        covariates=covariates,
        arms=arms,
        doses=doses,
        observations=observations,
        dose_time=dose_arrays[0],
        dose_amount=dose_arrays[1],
        dose_duration=dose_arrays[2],
        dose_period=dose_arrays[3].astype(int),
        obs_time=obs_time,
        obs_dv=obs_dv,
        obs_period=obs_period.astype(int),
        obs_mask=obs_mask,
        dose_central=dose_arrays[4].astype(bool) if into_central else None,
        obs_censored=obs_censored,
        dose_interval=dose_arrays[5] if (dose_arrays[5] > 0).any() else None,
    )


# --- The shipped datasets ---------------------------------------------------------------------

_NM = {"id": "ID", "time": "TIME", "dv": "DV", "amt": "AMT", "evid": "EVID"}


def _simulated_roles(model: PkModel) -> PmxRoles:
    """The roles of the simulated designs' files, which share their columns."""
    return pmx_roles(
        **_NM,
        dvid="DVID",
        nominal_time="TIME",
        rate="RATE",
        cmt="CMT",
        arm="DOSE",
        covariates=["WT", "AGE", "SEX"],
        categorical=["SEX"],
        weight="WT",
        pk_endpoint="cp",
        negative_dv=True,  # simulated with additive error, as theo_md: a value below 0 is noise
        model=model,
    )


#: The shipped studies, each a CSV file name and its roles; provenance in
#: ``synpmx_lite/data/README.md``.
#:
#: :meta hide-value:
DATASETS: dict[str, tuple[str, PmxRoles]] = {
    "warfarin": (
        "warfarin.csv",
        pmx_roles(
            id="id",
            time="time",
            dv="dv",
            amt="amt",
            evid="evid",
            dvid="dvid",
            nominal_time="time",
            covariates=["wt", "age", "sex"],
            weight="wt",
            pk_endpoint="cp",
            model=PkModel(compartments=1, route="oral"),
        ),
    ),
    "theo_sd": (
        "theo_sd.csv",
        pmx_roles(
            **_NM, cmt="CMT", covariates=["WT"], weight="WT", model=PkModel(route="oral")
        ),
    ),
    "theo_md": (
        "theo_md.csv",
        pmx_roles(
            **_NM,
            cmt="CMT",
            covariates=["WT"],
            weight="WT",
            negative_dv=True,  # simulated with additive error: its one negative DV is noise
            model=PkModel(route="oral"),
        ),
    ),
    "pheno_sd": (
        "pheno_sd.csv",
        pmx_roles(
            **_NM, mdv="MDV", covariates=["WT", "APGR"], weight="WT", model=PkModel(route="iv")
        ),
    ),
    "mavoglurant": (
        "mavoglurant.csv",
        pmx_roles(
            **_NM,
            mdv="MDV",
            rate="RATE",
            cmt="CMT",
            arm="DOSE",
            covariates=["AGE", "SEX", "WT", "HT"],
            categorical=["SEX"],
            weight="WT",
            model=PkModel(compartments=2, route="iv"),
        ),
    ),
    "nimoData": (
        "nimoData.csv",
        pmx_roles(
            **_NM,
            mdv="MDV",
            rate="RATE",
            arm="DOS",
            covariates=["WGT", "BSA", "AGE", "HGT"],
            varying=["WGT"],  # recorded at later cycles for 6 patients: the baseline is read
            weight="WGT",
            log_dv=True,
            model=PkModel(compartments=2, route="iv"),
        ),
    ),
    "wbcSim": (
        "wbcSim.csv",
        pmx_roles(**_NM, rate="RATE", cmt="CMT", fit_pk=False),
    ),
    # The seed's four simulated designs (synpmx_lite.pmx.simulated_designs).
    "mad_sim": ("mad_sim.csv", _simulated_roles(PkModel(route="oral"))),
    "pkpd_sim": ("pkpd_sim.csv", _simulated_roles(PkModel(route="oral"))),
    "mixroute_sim": ("mixroute_sim.csv", _simulated_roles(PkModel(route="oral"))),
    "onc_sim": ("onc_sim.csv", _simulated_roles(PkModel(route="iv"))),
}


def load_dataset(name: str) -> tuple[pd.DataFrame, PmxRoles]:
    """Read one of the studies shipped with the package, with its roles.

    Parameters
    ----------
    name : str
        One of ``"warfarin"``, ``"theo_sd"``, ``"theo_md"``, ``"pheno_sd"``,
        ``"mavoglurant"``, ``"nimoData"``, ``"wbcSim"`` (public data), or one of the seed's
        simulated designs ``"mad_sim"``, ``"pkpd_sim"``, ``"mixroute_sim"``, ``"onc_sim"``
        (:mod:`synpmx_lite.pmx.simulated_designs`); see ``synpmx_lite/data/README.md`` for
        provenance.

    Returns
    -------
    data : pandas.DataFrame
        The event table, as shipped (no row or value changed).
    roles : PmxRoles
        Its column roles and the PK model it calls for: warfarin one compartment with
        first-order absorption (concentrations ``cp``; ``pca`` is a PD endpoint; an absorption
        lag lowers the OFV further but its random effects shrink by about two thirds),
        theophylline one compartment oral, phenobarbital one compartment IV bolus,
        mavoglurant and nimotuzumab two compartments with zero-order infusions
        (nimotuzumab's DV are log concentrations: they rise by about log 2 per doubling of
        the dose, and some are negative), and wbcSim no PK model (its white-cell counts are
        its one endpoint, a PD endpoint; the individual PK parameters it carries are not
        read). The simulated designs: one compartment with first-order absorption (mad_sim,
        pkpd_sim, and mixroute_sim, whose IV doses enter the central compartment, CMT 2), or
        IV (onc_sim); concentrations ``cp``, their PD endpoint ``pd`` or ``sld``.

    Examples
    --------
    >>> data, roles = load_dataset("theo_sd")
    >>> data[roles.id].nunique(), roles.model.parameters
    (12, ('cl', 'v', 'ka'))
    """
    if not isinstance(name, str):
        raise TypeError(f"name must be a string, got {type(name).__name__}")
    if name not in DATASETS:
        raise ValueError(f"name must be one of {sorted(DATASETS)}, got {name!r}")
    file, roles = DATASETS[name]
    with resources.files("synpmx_lite").joinpath("data", file).open("r") as handle:
        data = pd.read_csv(handle)
    return data, roles
