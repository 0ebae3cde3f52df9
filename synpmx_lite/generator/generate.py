"""Synthetic PK data simulated from a fingerprint and random numbers alone.

:func:`synpmx_model_generate` reads nothing but a :class:`synpmx_lite.generator.release.Fingerprint`
(a fit is first reduced to its fingerprint), so the synthetic data discloses nothing the
fingerprint does not. Each synthetic patient gets:

* a new identifier ``"syn-0001"``, ``"syn-0002"``, ...
  (:func:`synpmx_lite.generator.release.synthetic_id`):
  the estimation refuses a study with an identifier that reads like one, so a synthetic
  patient can never carry a source identifier;
* an arm (its released label, ``arm 1``, ...), drawn in proportion to the released arm sizes,
  its planned doses and its keep columns' values (missing where withheld); a share
  ``dose_change_rate`` of patients have their dose halved from a random dose on;
* covariates: continuous ones log-normal with the released trimmed mean and SD, categorical
  ones from the released level frequencies (a folded level can never appear);
* random effects from the released omega, individual parameters
  ``typical * exp(eta)``, and concentrations of the released model at the released visits;
* missed visits: each visit after a dose of its period attended with the endpoint's
  attendance rate (at least one kept);
* residual error of the released model; a value below the released LOQ is reported as 0;
* for each yes/no or graded endpoint, levels drawn at its released visits with the released
  frequencies;
* for each released PD model, observations at that endpoint's released visits (attended with
  its attendance rate, as the PK visits): a baseline drawn around the released one with the
  released between-subject SD, times the released shape at the time since the patient's
  first dose of the period, plus additive residual error.

Random numbers are drawn in a fixed order that depends on the fingerprint's content alone
(covariates by name), not on the order its fields were written or read in, so a fingerprint
and the one read back from its JSON give the same data for the same seed.

Endpoints with neither a PK nor a PD model are not simulated.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import pandas as pd

from .._validation import check_rng
from ..pmx.pd import pd_response
from ..pmx.pk import predict_concentrations
from ..rounding import round_significant
from .estimate import ModelFit, model_fingerprint
from .release import Fingerprint, synthetic_id

__all__ = ["synpmx_model_generate"]

_COLUMNS = ("id", "time", "amt", "dv", "evid", "mdv", "rate", "dvid", "nominal_time", "arm")
# NONMEM items written only where the source's roles name them: no additional doses, no steady
# state, each dose into the compartment of its released route and observations in the central
# one.
_NONMEM_COLUMNS = ("addl", "ii", "ss", "cmt")


def _column_names(fit: ModelFit | None, routes: bool) -> dict[str, str]:
    """Output columns and their names: the source's (from its roles) for a fit; for a
    fingerprint alone, ``cmt`` too where ``routes`` (IV doses under an oral model)."""
    if fit is None:
        return {c: c for c in _COLUMNS + (("cmt",) if routes else ())}
    names: dict[str, str] = {}
    for column in _COLUMNS + _NONMEM_COLUMNS:
        name = getattr(fit.roles, column)
        # One source column may play two roles (warfarin's time is its nominal time).
        if name is not None and name not in names.values():
            names[column] = name
    return names


def _draw_covariates(fingerprint: Fingerprint, n: int, rng: np.random.Generator) -> dict:
    drawn = {}
    for name, summary in sorted(fingerprint.covariates.items()):
        log_mean = np.log(summary["geometric_mean"])
        values = np.exp(log_mean + summary["sdlog"] * rng.standard_normal(n))
        drawn[name] = round_significant(values, 3)
    for name, levels in sorted(fingerprint.categories.items()):
        frequency = np.array([f for _, f in levels], dtype=float)
        index = rng.choice(len(levels), size=n, p=frequency / frequency.sum())
        drawn[name] = np.array([level for level, _ in levels], dtype=object)[index]
    return drawn


def _covariate_shift(fingerprint: Fingerprint, covariates: dict, model) -> np.ndarray:
    """What the released covariate effects add to each synthetic patient's log parameters,
    from their synthetic covariates: ``estimate * log(x / reference)`` for a continuous one,
    ``log(estimate)`` at the level for a categorical one."""
    n = fingerprint.cohort_size
    shift = np.zeros((n, len(model.parameters)))
    for effect in fingerprint.effects:
        values = covariates.get(effect["covariate"])
        if values is None:
            raise ValueError(f"effect on {effect['covariate']!r}: the covariate is not released")
        column = model.parameters.index(effect["parameter"])
        if effect["reference"] is None:
            shift[:, column] += np.log(effect["estimate"]) * (values == effect["level"])
        else:
            ratio = np.asarray(values, dtype=float) / effect["reference"]
            shift[:, column] += effect["estimate"] * np.log(ratio)
    return shift


def _random_effects(fingerprint: Fingerprint, model, n: int, rng: np.random.Generator):
    """Each synthetic patient's etas ``(n, parameters)``: normal with the released variances,
    correlated where the fingerprint releases a pair's correlation; 0 for a parameter
    without a released variance."""
    random = [p for p in model.parameters if p in fingerprint.omega]
    omega = np.array([fingerprint.omega[p] for p in random])
    eta = np.zeros((n, len(model.parameters)))
    draws = rng.standard_normal((n, omega.size))
    if fingerprint.correlation:
        ((pair, rho),) = fingerprint.correlation.items()
        a, b = (random.index(name) for name in pair.split(","))
        correlation = np.eye(omega.size)
        correlation[a, b] = correlation[b, a] = rho
        sd = np.sqrt(omega)
        root = np.linalg.cholesky(sd[:, None] * correlation * sd[None, :])
        eta[:, np.isin(model.parameters, random)] = draws @ root.T
    else:
        eta[:, np.isin(model.parameters, random)] = np.sqrt(omega) * draws
    return eta


class _Doses(NamedTuple):
    """Padded dose arrays ``(n, d)`` of the synthetic patients (an amount of 0 pads)."""

    time: np.ndarray
    amount: np.ndarray
    duration: np.ndarray
    period: np.ndarray
    #: Whether the dose is an IV dose under an oral model (given into the central compartment).
    central: np.ndarray


def _dose_table(fingerprint: Fingerprint, arm_of: np.ndarray, rng: np.random.Generator) -> _Doses:
    """The doses of the patients' arms, with dose changes applied."""
    arms = fingerprint.arms
    width = max(len(arm["doses"]) for arm in arms)
    fields = ("time", "amount", "duration", "period")
    planned = np.zeros((len(arms), 5, width))
    oral_model = fingerprint.model is not None and fingerprint.model["route"] == "oral"
    for a, arm in enumerate(arms):
        for k, dose in enumerate(arm["doses"]):
            central = oral_model and dose["route"] == "iv"
            planned[a, :, k] = [*(dose[f] for f in fields), central]
    time, amount, duration, period, central = (planned[arm_of, i] for i in range(5))
    count = np.array([len(arm["doses"]) for arm in arms])[arm_of]
    changed = rng.random(arm_of.size) < fingerprint.dose_change_rate
    start = np.floor(rng.random(arm_of.size) * count).astype(int)
    halve = changed[:, None] & (np.arange(width)[None, :] >= start[:, None])
    amount = np.where(halve, amount / 2, amount)
    return _Doses(time, amount, duration, period.astype(int), central.astype(bool))


def _attendance(dosed: np.ndarray, rate: float, rng: np.random.Generator) -> np.ndarray:
    """Visits attended: each open visit with probability ``rate``, at least one per patient."""
    n = dosed.shape[0]
    draws = rng.random((2, *dosed.shape))
    attended = dosed & (draws[0] < rate)
    # A patient who missed every visit keeps one of those open to them, drawn at random.
    first = np.argmax(np.where(dosed, draws[1], -1.0), axis=1)
    attended[np.arange(n), first] |= ~attended.any(axis=1)
    return attended


def _open_visits(name, fingerprint, n, dose_time, dose_amount, dose_period, rng):
    """An endpoint's visit times and periods ``(n, v)``, each patient's first dose of the
    visit's period, whether it is open (after that dose) and whether it was attended."""
    endpoint = fingerprint.endpoints[name]
    visits = np.array(endpoint["visits"], dtype=float).reshape(-1, 2)
    times = np.broadcast_to(visits[:, 1], (n, len(visits)))
    periods = np.broadcast_to(visits[:, 0].astype(int), (n, len(visits)))
    in_period = (dose_period[:, :, None] == periods[:, None, :]) & (dose_amount[:, :, None] > 0)
    first_dose = np.where(in_period, dose_time[:, :, None], np.inf).min(axis=1)
    dosed = np.isfinite(first_dose) & (first_dose <= times)
    attended = _attendance(dosed, endpoint["attendance"], rng)
    return times, periods, first_dose, dosed, attended


def _observation_rows(
    name: str,
    ids: np.ndarray,
    periods: np.ndarray,
    times: np.ndarray,
    values: np.ndarray,
    attended: np.ndarray,
) -> pd.DataFrame:
    """Event rows of one endpoint's observations at the (patient, visit) cells attended."""
    patient, visit = np.nonzero(attended)
    return pd.DataFrame(
        {
            "id": ids[patient],
            "period": periods[patient, visit],
            "time": times[patient, visit],
            "amt": 0.0,
            "dv": values[patient, visit],
            "evid": 0,
            "rate": 0.0,
            "patient": patient,
            "dvid": name,
        }
    )


def _graded_observations(
    name: str,
    levels: list,
    fingerprint: Fingerprint,
    ids: np.ndarray,
    dose_time: np.ndarray,
    dose_amount: np.ndarray,
    dose_period: np.ndarray,
    rng: np.random.Generator,
) -> pd.DataFrame:
    """Synthetic observations of a yes/no or graded endpoint: levels drawn at its visits with
    the released frequencies (a folded level can never appear)."""
    if not fingerprint.endpoints[name]["visits"]:
        return pd.DataFrame()
    times, periods, _, _, attended = _open_visits(
        name, fingerprint, ids.size, dose_time, dose_amount, dose_period, rng
    )
    values = np.array([level for level, _ in levels], dtype=float)
    frequency = np.array([f for _, f in levels], dtype=float)
    drawn = values[rng.choice(values.size, size=times.shape, p=frequency / frequency.sum())]
    return _observation_rows(name, ids, periods, times, drawn, attended)


def _pd_observations(
    name: str,
    model: dict,
    fingerprint: Fingerprint,
    ids: np.ndarray,
    dose_time: np.ndarray,
    dose_amount: np.ndarray,
    dose_period: np.ndarray,
    rng: np.random.Generator,
) -> pd.DataFrame:
    """Synthetic observations of one PD endpoint at its released visits."""
    n = ids.size
    if not fingerprint.endpoints[name]["visits"]:
        return pd.DataFrame()
    times, periods, first_dose, dosed, attended = _open_visits(
        name, fingerprint, n, dose_time, dose_amount, dose_period, rng
    )
    baseline = model["baseline"] + model["baseline_sd"] * rng.standard_normal((n, 1))
    since = np.where(dosed, times - np.where(dosed, first_dose, 0.0), 0.0)
    values = baseline * pd_response(model["shape"], model["parameters"], since)
    values = values + model["residual"] * rng.standard_normal(values.shape)
    return _observation_rows(name, ids, periods, times, values, attended)


def _pk_observations(
    fingerprint: Fingerprint,
    theta: np.ndarray,
    ids: np.ndarray,
    doses_of: _Doses,
    rng: np.random.Generator,
) -> pd.DataFrame:
    """Synthetic observations of the PK endpoint at its released visits."""
    model = fingerprint.pk_model
    dose_time, dose_amount, dose_duration, dose_period, dose_central = doses_of
    n = ids.size
    endpoint = fingerprint.endpoints[fingerprint.pk_endpoint]
    visits = np.array(endpoint["visits"], dtype=float).reshape(-1, 2)
    if not len(visits):
        raise ValueError("the fingerprint has no PK visit with enough patients to simulate")
    times = np.broadcast_to(visits[:, 1], (n, len(visits)))
    periods = np.broadcast_to(visits[:, 0].astype(int), (n, len(visits)))
    # A visit can be attended only after a dose of its period (arms differ in periods).
    dosed = (
        (dose_period[:, :, None] == periods[:, None, :])
        & (dose_amount[:, :, None] > 0)
        & (dose_time[:, :, None] <= times[:, None, :])
    ).any(axis=1)
    attended = _attendance(dosed, endpoint["attendance"], rng)
    f = predict_concentrations(
        model,
        theta,
        dose_time,
        dose_amount,
        dose_duration,
        times,
        dose_period=dose_period,
        time_period=periods,
        dose_central=dose_central if dose_central.any() else None,
    )
    residual = fingerprint.residual
    sd = np.sqrt(residual.get("additive", 0.0) ** 2 + (residual.get("proportional", 0.0) * f) ** 2)
    noise = rng.standard_normal(f.shape)
    if fingerprint.log_dv:
        dv = np.log(np.maximum(f, 1e-300)) + sd * noise
    else:
        dv = f + sd * noise
        if endpoint["loq"] is not None:
            dv = np.where(dv < endpoint["loq"], 0.0, dv)

    return _observation_rows(fingerprint.pk_endpoint, ids, periods, times, dv, attended)


def synpmx_model_generate(fit: ModelFit | Fingerprint, *, seed: object = None) -> pd.DataFrame:
    """Simulate a synthetic study from a fingerprint alone.

    Parameters
    ----------
    fit : ModelFit or Fingerprint
        A fit (reduced to its fingerprint first) or a fingerprint, e.g. one read back with
        :meth:`synpmx_lite.generator.release.Fingerprint.from_json`.
    seed : int, numpy.random.Generator or None
        Randomness; default the fit's ``seed`` (None for a fingerprint: fresh entropy).

    Returns
    -------
    pandas.DataFrame
        An event table of ``cohort_size`` synthetic patients, one row per dose (``evid`` 1)
        and per PK or PD observation (``evid`` 0, endpoint in ``dvid``), with covariates.
        For a fit the columns carry the source's names, so that
        ``prepare_study(synthetic, fit.roles)`` reads it.
    """
    if isinstance(fit, ModelFit):
        fingerprint, source = model_fingerprint(fit), fit
        seed = fit.seed if seed is None else seed
    elif isinstance(fit, Fingerprint):
        fingerprint, source = fit, None
    else:
        raise TypeError(f"fit must be a ModelFit or a Fingerprint, got {type(fit).__name__}")
    rng = check_rng(seed, "seed")
    if not fingerprint.arms:
        raise ValueError("the fingerprint has no arm with enough patients to simulate")
    n = fingerprint.cohort_size
    sizes = np.array([arm["patients"] for arm in fingerprint.arms], dtype=float)
    arm_of = rng.choice(sizes.size, size=n, p=sizes / sizes.sum())
    covariates = _draw_covariates(fingerprint, n, rng)
    theta = _patient_parameters(fingerprint, covariates, rng)
    doses_of = _dose_table(fingerprint, arm_of, rng)
    ids = np.array([synthetic_id(i) for i in range(n)], dtype=object)
    observations = _observation_records(fingerprint, theta, ids, doses_of, rng)
    table = _event_table(fingerprint, [_dose_records(fingerprint, ids, doses_of), *observations])
    table["arm"] = np.array([arm["arm"] for arm in fingerprint.arms], dtype=object)[arm_of][
        table["patient"].to_numpy()
    ]
    for name, values in covariates.items():
        table[name] = values[table["patient"].to_numpy()]
    keep = _kept_columns(fingerprint, arm_of[table["patient"].to_numpy()])
    table = table.assign(**keep)
    names = _column_names(source, bool(doses_of.central.any()))
    columns = list(names) + list(covariates) + list(keep)
    return table[columns].rename(columns=names).reset_index(drop=True)


def _patient_parameters(
    fingerprint: Fingerprint, covariates: dict[str, np.ndarray], rng: np.random.Generator
) -> np.ndarray | None:
    """Each synthetic patient's PK parameters ``(n, p)``: the typical values moved by the
    covariate effects and the patient's random effects; None without a PK model."""
    model = fingerprint.pk_model
    if model is None:
        return None
    typical = np.array([fingerprint.typical[p] for p in model.parameters])
    eta = _random_effects(fingerprint, model, fingerprint.cohort_size, rng)
    return typical * np.exp(_covariate_shift(fingerprint, covariates, model) + eta)


def _observation_records(
    fingerprint: Fingerprint,
    theta: np.ndarray | None,
    ids: np.ndarray,
    doses_of: _Doses,
    rng: np.random.Generator,
) -> list[pd.DataFrame]:
    """The synthetic patients' observation records. They are drawn PK first, then every graded
    endpoint (in the order of their names), then every PD endpoint (likewise), and returned PK,
    PD, then graded (the order of the event table's rows before sorting)."""
    dose_time, dose_amount, _, dose_period, _ = doses_of
    pk = (
        _pk_observations(fingerprint, theta, ids, doses_of, rng)
        if theta is not None
        else pd.DataFrame()
    )
    graded = [
        _graded_observations(
            name, levels, fingerprint, ids, dose_time, dose_amount, dose_period, rng
        )
        for name, levels in sorted(fingerprint.graded.items())
    ]
    pd_rows = [
        _pd_observations(name, pd_model, fingerprint, ids, dose_time, dose_amount, dose_period, rng)
        for name, pd_model in sorted(fingerprint.pd.items())
    ]
    return [pk, *pd_rows, *graded]


def _dose_records(fingerprint: Fingerprint, ids: np.ndarray, doses_of: _Doses) -> pd.DataFrame:
    """One record per dose given (``evid`` 1), with its rate and NONMEM's compartment: the
    depot (1) of an oral model, or its central one (2)."""
    dose_time, dose_amount, dose_duration, dose_period, dose_central = doses_of
    given = dose_amount > 0
    duration = dose_duration[given]
    patient, _ = np.nonzero(given)
    doses = pd.DataFrame(
        {
            "id": ids[patient],
            "period": dose_period[given],
            "time": dose_time[given],
            "amt": dose_amount[given],
            "dv": 0.0,
            "evid": 1,
            "rate": dose_amount[given] / np.where(duration > 0, duration, np.inf),
            "patient": patient,
            "cmt": np.where(dose_central[given], 2, 1),
        }
    )
    doses["dvid"] = fingerprint.pk_endpoint or ""
    return doses


def _event_table(fingerprint: Fingerprint, records: list[pd.DataFrame]) -> pd.DataFrame:
    """The records in NONMEM's order (each patient's doses before the observations at their
    time), with MDV, no ADDL, II or SS, the compartment each observation is read in and the
    nominal times."""
    table = pd.concat(records, ignore_index=True)
    if not (table["evid"] == 0).any():
        raise ValueError("the fingerprint has no visit with enough patients to simulate")
    table = table.sort_values(
        ["patient", "period", "time", "evid", "dvid"], ascending=[1, 1, 1, 0, 1], kind="stable"
    )
    table["mdv"] = table["evid"]
    table[["addl", "ii", "ss"]] = 0
    oral = fingerprint.model is not None and fingerprint.model["route"] == "oral"
    observed_in = 2 if oral else 1  # NONMEM's central compartment of the released model
    table["cmt"] = np.where(table["evid"] == 1, table["cmt"], observed_in).astype(int)
    table["nominal_time"] = table["time"]
    return table


def _kept_columns(fingerprint: Fingerprint, arm_of_row: np.ndarray) -> dict[str, np.ndarray]:
    """The columns released per arm (``keep``), each row given its arm's value."""
    keep = {}
    for column in sorted({c for arm in fingerprint.arms for c in arm["keep"]}):
        values = np.array([arm["keep"].get(column) for arm in fingerprint.arms], dtype=object)
        keep[column] = values[arm_of_row]
    return keep
