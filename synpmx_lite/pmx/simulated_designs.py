"""The four simulated designs of the seed's ten studies, made by the engine's own models.

The seed's evaluation checks ten studies; six are public data shipped in ``synpmx_lite/data/``
and four are simulated designs with no public data behind them. This module simulates studies
of those four designs, seeded, and writes them as CSV files in the package's data folder::

    python -m synpmx_lite.pmx.simulated_designs

* ``mad_sim``: a multiple ascending dose study, four cohorts of 15 (10 to 300 mg once a day
  for a week, oral), concentrations on the first and last day, and a continuous biomarker
  that falls to a plateau, deeper with the dose (an Emax relation of the dose level);
* ``pkpd_sim``: a PK/PD study, 180 patients in three single oral dose arms, concentrations
  with a few samples missed, and a PD endpoint that falls and recovers, further with the
  dose (an Emax relation of the dose level);
* ``mixroute_sim``: 90 patients given the drug either as an IV bolus (30) or orally (60);
* ``onc_sim``: an oncology study, 200 patients given a one-hour infusion every three weeks for
  eight cycles, trough and peak concentrations, and the sum of the longest tumour diameters
  (SLD, mm) at scans every six weeks, with scans missed as patients leave the study.

The data follow the model classes the engine fits (linear PK with log-normal between-subject
variability and combined additive and proportional error; a PD baseline with a normal
between-subject spread, a shape of :data:`synpmx_lite.pmx.pd.PD_SHAPES` and additive error),
so a fit to them is well specified; real studies are not. The parameter values are set to be
plausible for an oral or intravenous small-molecule drug and a solid-tumour endpoint, with
weight on clearance and volume by allometric exponents (0.75 and 1; Anderson and Holford
2008), and the oncology study's clearance and volume of the order reported for monoclonal
antibodies (Dirks and Meibohm 2010). They are not any drug's estimates.

Anderson BJ, Holford NHG. Mechanism-based concepts of size and maturity in pharmacokinetics.
Annu Rev Pharmacol Toxicol 2008;48:303-332.

Dirks NL, Meibohm B. Population pharmacokinetics of therapeutic monoclonal antibodies. Clin
Pharmacokinet 2010;49:633-659.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from .._validation import check_rng
from .pd import pd_response
from .pk import PkModel, predict_concentrations

__all__ = ["SIMULATED_DESIGNS", "SimulatedDesign", "design_csv", "simulate_design"]

# Significant figures written: the files must be byte-identical when the script runs again,
# and a value printed to four figures does not depend on the last bits of the arithmetic.
_FIGURES = 4
_COLUMNS = ["ID", "TIME", "DV", "AMT", "EVID", "CMT", "RATE", "DVID", "DOSE", "WT", "AGE", "SEX"]
_REFERENCE_WEIGHT = 70.0
_DAY = 24.0


@dataclass(frozen=True)
class _Pk:
    """Typical values (by parameter name), between-subject SDs of their logs, the combined
    residual error (additive SD in mg/L, proportional fraction), and the model."""

    model: PkModel
    typical: dict[str, float]
    omega_sd: dict[str, float]
    additive: float
    proportional: float


@dataclass(frozen=True)
class _Pd:
    """A PD endpoint: its shape's parameters, baseline, its between-subject SD and the
    additive error, in the endpoint's units; ``ed50`` (mg), where given, scales the shape's
    ``plateau`` with the dose by an Emax relation, ``plateau * dose / (ed50 + dose)`` (the
    ``plateau`` is then the largest effect, that of an infinite dose)."""

    shape: str
    parameters: dict[str, float]
    baseline: float
    baseline_sd: float
    residual: float
    ed50: float | None = None


def _covariates(rng: np.random.Generator, n: int) -> pd.DataFrame:
    """Weight (kg, log-normal), age (years) and sex (0 male, 1 female) of ``n`` adults."""
    return pd.DataFrame(
        {
            "WT": np.round(75.0 * np.exp(rng.normal(0.0, 0.18, n)), 1),
            "AGE": rng.integers(18, 76, n),
            "SEX": rng.integers(0, 2, n),
        }
    )


def _individual(rng: np.random.Generator, pk: _Pk, weight: np.ndarray) -> np.ndarray:
    """Each patient's PK parameters ``(n, p)``, in the order of the model's parameters."""
    size = weight / _REFERENCE_WEIGHT
    exponents = {"cl": 0.75, "q": 0.75, "v": 1.0, "vp": 1.0}
    columns = [
        pk.typical[name]
        * size ** exponents.get(name, 0.0)
        * np.exp(rng.normal(0.0, pk.omega_sd.get(name, 0.0), weight.size))
        for name in pk.model.parameters
    ]
    return np.column_stack(columns)


def _concentrations(rng, pk: _Pk, parameters, doses: pd.DataFrame, times: np.ndarray):
    """Observed concentrations ``(n, t)`` at ``times`` ``(n, t)`` after ``doses`` (columns
    patient, time, amt, duration, central), with combined error."""
    n = parameters.shape[0]
    per = doses.groupby("patient").cumcount().to_numpy()
    shape = (n, int(per.max()) + 1)
    arrays = {k: np.zeros(shape) for k in ("time", "amt", "duration")}
    central = np.zeros(shape, dtype=bool)
    rows = (doses["patient"].to_numpy(), per)
    for key, array in arrays.items():
        array[rows] = doses[key].to_numpy(float)
    central[rows] = doses["central"].to_numpy(bool)
    predicted = predict_concentrations(
        pk.model, parameters, arrays["time"], arrays["amt"], arrays["duration"], times,
        dose_central=central if pk.model.route == "oral" else None,
    )  # fmt: skip
    sd = np.hypot(pk.additive, pk.proportional * predicted)
    return predicted + sd * rng.standard_normal(predicted.shape)


def _pd_values(rng, pd_model: _Pd, times: np.ndarray, dose: np.ndarray | None = None) -> np.ndarray:
    """Observed PD values ``(n, t)`` at hours ``times`` ``(n, t)`` since the first dose, for
    patients given ``dose`` (mg, ``(n,)``; needed where the model's effect depends on it)."""
    baseline = pd_model.baseline + pd_model.baseline_sd * rng.standard_normal((times.shape[0], 1))
    if pd_model.ed50 is None:
        shape = pd_response(pd_model.shape, pd_model.parameters, times)
    else:
        shape = np.empty(times.shape)
        for level in np.unique(dose):  # one effect per dose level
            effect = pd_model.parameters["plateau"] * level / (pd_model.ed50 + level)
            parameters = {**pd_model.parameters, "plateau": float(effect)}
            shape[dose == level] = pd_response(pd_model.shape, parameters, times[dose == level])
    return baseline * shape + pd_model.residual * rng.standard_normal(times.shape)


def _observation_rows(values, times, endpoint: str, cmt: int, kept=None) -> pd.DataFrame:
    """Long observation rows from ``(n, t)`` values at ``(n, t)`` times; ``kept`` marks the
    samples taken (default all)."""
    n, t = values.shape
    kept = np.ones((n, t), dtype=bool) if kept is None else kept
    patient = np.repeat(np.arange(n), t).reshape(n, t)
    return pd.DataFrame(
        {
            "patient": patient[kept],
            "TIME": times[kept],
            "DV": values[kept],
            "EVID": 0,
            "CMT": cmt,
            "DVID": endpoint,
        }
    )


def _dose_rows(doses: pd.DataFrame) -> pd.DataFrame:
    duration = doses["duration"].to_numpy(float)
    amount = doses["amt"].to_numpy(float)
    rate = np.divide(amount, duration, out=np.zeros_like(amount), where=duration > 0)
    return pd.DataFrame(
        {
            "patient": doses["patient"],
            "TIME": doses["time"],
            "DV": 0.0,
            "AMT": doses["amt"],
            "EVID": 1,
            "CMT": doses["cmt"],
            "RATE": rate,
            "DVID": "cp",  # as in warfarin's file: a dose row carries the PK endpoint
        }
    )


def _table(doses: pd.DataFrame, observations: list, people: pd.DataFrame, arm) -> pd.DataFrame:
    """The event table: doses before observations at the same time, each patient's covariates
    and arm on every row, values to :data:`_FIGURES` significant figures."""
    rows = pd.concat([_dose_rows(doses), *observations], ignore_index=True)
    rows["order"] = (rows["EVID"] == 0).astype(int)
    rows = rows.sort_values(["patient", "TIME", "order"], kind="stable").reset_index(drop=True)
    rows["ID"] = rows["patient"] + 1
    rows["DOSE"] = np.asarray(arm)[rows["patient"]]
    for column in people:
        rows[column] = people[column].to_numpy()[rows["patient"]]
    rows[["AMT", "RATE"]] = rows[["AMT", "RATE"]].fillna(0.0)
    rows["DV"] = [float(f"{v:.{_FIGURES}g}") for v in rows["DV"]]
    return rows[_COLUMNS]


def _schedule(n: int, hours) -> np.ndarray:
    """The same sampling hours ``(n, t)`` for every patient."""
    return np.tile(np.asarray(hours, dtype=float), (n, 1))


def _daily_doses(amounts: np.ndarray, days: int, cmt: int) -> pd.DataFrame:
    n = amounts.size
    return pd.DataFrame(
        {
            "patient": np.repeat(np.arange(n), days),
            "time": np.tile(_DAY * np.arange(days), n),
            "amt": np.repeat(amounts, days),
            "duration": 0.0,
            "central": cmt == 2,
            "cmt": cmt,
        }
    )


_MAD_PK = _Pk(PkModel(route="oral"), {"cl": 4.0, "v": 60.0, "ka": 1.2},
              {"cl": 0.3, "v": 0.2, "ka": 0.4}, 0.01, 0.15)  # fmt: skip
# The biomarker's fall grows with the dose: a fifth of the largest at 10 mg, nine tenths at 300.
_MAD_PD = _Pd("plateau", {"plateau": -0.6, "rate": 0.03}, 100.0, 15.0, 6.0, ed50=35.0)


def _mad(rng: np.random.Generator) -> pd.DataFrame:
    """Four cohorts of 15, 10 to 300 mg once a day for seven days."""
    cohorts = np.repeat([10.0, 30.0, 100.0, 300.0], 15)
    people = _covariates(rng, cohorts.size)
    doses = _daily_doses(cohorts, 7, cmt=1)
    parameters = _individual(rng, _MAD_PK, people["WT"].to_numpy())
    day_1 = [0.5, 1, 2, 4, 8, 12]
    pk_times = _schedule(cohorts.size, day_1 + [6 * _DAY + h for h in [0.5, 1, 2, 4, 8, 12, 24]])
    pd_times = _schedule(cohorts.size, [0, 24, 72, 120, 168])
    concentrations = _concentrations(rng, _MAD_PK, parameters, doses, pk_times)
    observations = [
        _observation_rows(concentrations, pk_times, "cp", 2),
        _observation_rows(_pd_values(rng, _MAD_PD, pd_times, cohorts), pd_times, "pd", 3),
    ]
    return _table(doses, observations, people, cohorts)


_PKPD_PK = _Pk(PkModel(route="oral"), {"cl": 2.5, "v": 35.0, "ka": 0.8},
               {"cl": 0.25, "v": 0.15, "ka": 0.5}, 0.005, 0.12)  # fmt: skip
# The largest fall, -0.7 of the baseline, halved at 100 mg (the middle arm).
_PKPD_PD = _Pd(
    "transient", {"plateau": -0.7, "rate": 0.08, "recovery": 0.02}, 80.0, 12.0, 5.0, ed50=100.0
)


def _pkpd(rng: np.random.Generator) -> pd.DataFrame:
    """Three single oral dose arms of 60; one PK sample in twenty is missed."""
    arms = np.repeat([50.0, 100.0, 200.0], 60)
    people = _covariates(rng, arms.size)
    doses = _daily_doses(arms, 1, cmt=1)
    parameters = _individual(rng, _PKPD_PK, people["WT"].to_numpy())
    pk_times = _schedule(arms.size, [1, 2, 4, 8, 24, 48])
    pd_times = _schedule(arms.size, [0, 12, 24, 48, 72, 120])
    concentrations = _concentrations(rng, _PKPD_PK, parameters, doses, pk_times)
    taken = rng.random(pk_times.shape) >= 0.05
    observations = [
        _observation_rows(concentrations, pk_times, "cp", 2, kept=taken),
        _observation_rows(_pd_values(rng, _PKPD_PD, pd_times, arms), pd_times, "pd", 3),
    ]
    return _table(doses, observations, people, arms)


_MIXROUTE_PK = _Pk(PkModel(route="oral"), {"cl": 6.0, "v": 80.0, "ka": 1.5},
                   {"cl": 0.25, "v": 0.2, "ka": 0.45}, 0.005, 0.1)  # fmt: skip


def _mixroute(rng: np.random.Generator) -> pd.DataFrame:
    """A 100 mg IV bolus (CMT 2) for 30 patients and a 200 mg oral dose (CMT 1) for 60."""
    amounts = np.repeat([100.0, 200.0], [30, 60])
    cmt = np.where(amounts == 100.0, 2, 1)
    people = _covariates(rng, amounts.size)
    doses = _daily_doses(amounts, 1, cmt=1).assign(cmt=cmt, central=cmt == 2)
    parameters = _individual(rng, _MIXROUTE_PK, people["WT"].to_numpy())
    times = _schedule(amounts.size, [0.25, 0.5, 1, 2, 4, 6, 8, 12, 24])
    concentrations = _concentrations(rng, _MIXROUTE_PK, parameters, doses, times)
    observations = [_observation_rows(concentrations, times, "cp", 2)]
    return _table(doses, observations, people, amounts)


# Clearance and volume of the order reported for monoclonal antibodies (Dirks and Meibohm 2010).
_ONC_PK = _Pk(PkModel(route="iv"), {"cl": 0.009, "v": 3.5}, {"cl": 0.3, "v": 0.2}, 1.0, 0.15)
# Tumour size shrinks by about a fifth over the 24 weeks (a slope per hour).
_ONC_PD = _Pd("slope", {"slope": -5e-5}, 70.0, 18.0, 3.0)
_CYCLE = 21 * _DAY


def _oncology(rng: np.random.Generator) -> pd.DataFrame:
    """A one-hour infusion of 400 mg every three weeks for eight cycles; peaks and troughs of
    the first four cycles; scans every six weeks, stopping when a patient leaves."""
    n = 200
    people = _covariates(rng, n)
    doses = _daily_doses(np.full(n, 400.0), 8, cmt=1)
    doses = doses.assign(time=doses["time"] / _DAY * _CYCLE, duration=1.0)
    parameters = _individual(rng, _ONC_PK, people["WT"].to_numpy())
    pk_times = _schedule(n, [c * _CYCLE + h for c in range(4) for h in (1.0, _CYCLE - 1.0)])
    scans = _schedule(n, 6 * 7 * _DAY * np.arange(5))
    # Each patient leaves after a geometric number of scans (one in eight per scan); a PK
    # sample is missed one time in ten.
    stays = rng.geometric(1 / 8, n)[:, None] > np.arange(5)
    observations = [
        _observation_rows(
            _concentrations(rng, _ONC_PK, parameters, doses, pk_times), pk_times, "cp", 1,
            kept=rng.random(pk_times.shape) >= 0.1,
        ),
        _observation_rows(_pd_values(rng, _ONC_PD, scans), scans, "sld", 2, kept=stays),
    ]  # fmt: skip
    return _table(doses, observations, people, np.full(n, 400.0))


@dataclass(frozen=True)
class SimulatedDesign:
    """One simulated design: its CSV file, patients, seed and simulator."""

    file: str
    patients: int
    seed: int
    simulate: Callable[[np.random.Generator], pd.DataFrame]


#: The four simulated designs by name, each with its file, size and seed.
SIMULATED_DESIGNS: dict[str, SimulatedDesign] = {
    "mad_sim": SimulatedDesign("mad_sim.csv", 60, 20260601, _mad),
    "pkpd_sim": SimulatedDesign("pkpd_sim.csv", 180, 20260602, _pkpd),
    "mixroute_sim": SimulatedDesign("mixroute_sim.csv", 90, 20260603, _mixroute),
    "onc_sim": SimulatedDesign("onc_sim.csv", 200, 20260604, _oncology),
}


def simulate_design(name: str) -> pd.DataFrame:
    """Simulate one design with its own seed: the event table shipped as its CSV.

    Parameters
    ----------
    name : str
        A key of :data:`SIMULATED_DESIGNS`.

    Returns
    -------
    pandas.DataFrame
        Columns ID, TIME, DV, AMT, EVID, CMT, RATE, DVID (``cp`` concentrations, ``pd`` or
        ``sld`` the PD endpoint; dose rows carry ``cp``), DOSE (the arm), WT, AGE, SEX.
    """
    if not isinstance(name, str) or name not in SIMULATED_DESIGNS:
        raise ValueError(f"name must be one of {sorted(SIMULATED_DESIGNS)}, got {name!r}")
    design = SIMULATED_DESIGNS[name]
    return design.simulate(check_rng(np.random.default_rng(design.seed)))


def design_csv(name: str) -> str:
    """The CSV text of :func:`simulate_design` ``(name)``, exactly as shipped."""
    return simulate_design(name).to_csv(index=False, lineterminator="\n", float_format="%.6g")


def main(argv: list[str] | None = None) -> None:
    """Write every simulated design's CSV to a folder (default the package's data folder)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    default = Path(__file__).resolve().parent.parent / "data"
    parser.add_argument("--out", type=Path, default=default, help="folder to write to")
    out = parser.parse_args(argv).out
    for name, design in SIMULATED_DESIGNS.items():
        (out / design.file).write_text(design_csv(name))
        print(f"wrote {out / design.file}")


if __name__ == "__main__":
    main()
