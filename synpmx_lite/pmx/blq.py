"""Data below the limit of quantification: a simulated censored study, fitted by M3 and M1.

:func:`simulate_blq_study` draws a one-compartment oral study from known parameters, seeded,
and censors every concentration below a limit as NONMEM's M3 convention writes it (``CENS``
1, ``DV`` the limit). :func:`compare_blq_methods` fits it twice, by Beal's M3 (the censored
rows enter as :math:`P(y < L)`, ``synpmx_lite.pmx._censored``) and by M1 (the censored
rows discarded), and returns both estimates beside the truth: the experiment behind
``benchmarks/bench_m3.py``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from .._validation import check_count, check_rng
from .pk import PkModel, predict_concentrations
from .population import fit_population
from .study import StudyEvents, pmx_roles, prepare_study

__all__ = ["BLQ_TRUTH", "BlqComparison", "compare_blq_methods", "simulate_blq_study"]

# The truth of the simulated study: typical CL (L/h), V (L) and ka (1/h), their
# between-subject SDs (log scale), and the residual error of each model.
BLQ_TRUTH = {
    "typical": {"cl": 2.0, "v": 20.0, "ka": 1.2},
    "omega_sd": {"cl": 0.3, "v": 0.2, "ka": 0.3},
    "residual": {
        "additive": {"additive": 0.3},
        "proportional": {"proportional": 0.3},
        "combined": {"additive": 0.1, "proportional": 0.25},
        "log": {"additive": 0.3},
    },
}
_TIMES = (0.5, 1.0, 2.0, 4.0, 8.0, 12.0, 24.0, 36.0)
_DOSE = 100.0


def _check_error(error: object) -> str:
    if error not in BLQ_TRUTH["residual"]:
        raise ValueError(f"error must be one of {list(BLQ_TRUTH['residual'])}, got {error!r}")
    return error


def simulate_blq_study(
    *, n: int, lloq: float, error: str, rng: np.random.Generator | int
) -> tuple[pd.DataFrame, dict]:
    """A one-compartment oral study (100 at time 0, eight samples to 36 h), censored at ``lloq``.

    Parameters
    ----------
    n : int
        Patients.
    lloq : float
        The limit of quantification (concentration units): every value drawn below it is
        written as ``CENS`` 1 with ``DV`` the limit.
    error : {"additive", "proportional", "combined", "log"}
        The residual error the data are drawn with (``"log"``: an additive error on log
        concentrations, the data then logarithms).
    rng : numpy.random.Generator or int
        The randomness (a seed gives the same study).

    Returns
    -------
    tuple of pandas.DataFrame and dict
        The event table (columns ID, TIME, DV, AMT, EVID, CENS) and the keyword arguments of
        :func:`synpmx_lite.pmx.study.pmx_roles` that read it.
    """
    n, error, lloq = _checked(n, error, lloq)
    return _event_table(_drawn_values(n, error, check_rng(rng)), error, lloq)


def _checked(n: object, error: object, lloq: object) -> tuple[int, str, float]:
    n = check_count(n, "n", minimum=3)
    error = _check_error(error)
    if not (isinstance(lloq, float | int) and np.isfinite(lloq) and lloq > 0):
        raise ValueError(f"lloq must be a positive number, got {lloq!r}")
    return n, error, float(lloq)


def _drawn_values(n: int, error: str, rng: np.random.Generator) -> np.ndarray:
    """Each patient's values ``(n, samples)`` at the sampling times, before any censoring (on
    the log scale for ``"log"``)."""
    model = PkModel(route="oral")
    typical = np.array([BLQ_TRUTH["typical"][p] for p in model.parameters])
    sd = np.array([BLQ_TRUTH["omega_sd"][p] for p in model.parameters])
    theta = typical * np.exp(sd * rng.standard_normal((n, typical.size)))
    times = np.broadcast_to(np.asarray(_TIMES), (n, len(_TIMES)))
    f = predict_concentrations(
        model, theta, np.zeros((n, 1)), np.full((n, 1), _DOSE), np.zeros((n, 1)), times
    )
    residual = BLQ_TRUTH["residual"][error]
    noise = rng.standard_normal(f.shape)
    if error == "log":
        return np.log(f) + residual["additive"] * noise
    scale = np.hypot(residual.get("additive", 0.0), residual.get("proportional", 0.0) * f)
    return f + scale * noise


def _event_table(dv: np.ndarray, error: str, lloq: float | None) -> tuple[pd.DataFrame, dict]:
    """The event table of drawn values and its roles: every value below ``lloq`` censored,
    or none for ``lloq`` None (values below 0 then kept as measurements)."""
    n = dv.shape[0]
    log = error == "log"
    limit = -np.inf if lloq is None else np.log(lloq) if log else lloq
    censored = dv < limit
    dv = np.where(censored, limit, dv)
    times = np.broadcast_to(np.asarray(_TIMES), dv.shape)
    columns = {
        "ID": np.repeat(np.arange(1, n + 1), len(_TIMES) + 1),
        "TIME": np.column_stack([np.zeros(n), times]).ravel(),
        "DV": np.column_stack([np.zeros(n), dv]).ravel(),
        "AMT": np.column_stack([np.full(n, _DOSE), np.zeros(times.shape)]).ravel(),
        "EVID": np.tile(np.r_[1, np.zeros(len(_TIMES), dtype=int)], n),
        "CENS": np.column_stack([np.zeros(n), censored]).ravel().astype(int),
    }
    roles = dict(
        id="ID", time="TIME", dv="DV", amt="AMT", evid="EVID", cens="CENS",
        model=PkModel(route="oral"), log_dv=log,
    )  # fmt: skip
    if lloq is None and not log:
        roles["negative_dv"] = True  # additive noise draws some values below 0: measurements
    return pd.DataFrame(columns), roles


@dataclass(frozen=True)
class BlqComparison:
    """One simulated censored study fitted by Beal's M3 and by M1.

    Attributes
    ----------
    censored_share : float
        The share of the concentrations below the limit.
    estimates : pandas.DataFrame
        Rows ``truth``, ``M3``, ``M1`` (and ``uncensored`` where asked); columns the typical
        values and the residual error's components.
    converged : dict
        Whether each fit (``"M3"``, ``"M1"``, ``"uncensored"``) converged.
    """

    censored_share: float
    estimates: pd.DataFrame
    converged: dict


def _m1_study(data: pd.DataFrame, roles: dict) -> StudyEvents:
    """The study with its censored rows discarded (Beal's M1)."""
    kept = data[data["CENS"] == 0].drop(columns="CENS").reset_index(drop=True)
    return prepare_study(kept, pmx_roles(**{k: v for k, v in roles.items() if k != "cens"}))


def compare_blq_methods(
    *, n: int, lloq: float, error: str, rng: np.random.Generator | int, uncensored: bool = False
) -> BlqComparison:
    """Simulate a censored study (:func:`simulate_blq_study`) and fit it by M3 and by M1.

    Parameters are those of :func:`simulate_blq_study`; the fits use the error model the data
    were drawn with (additive on the log scale for ``"log"``). With ``uncensored`` the same
    drawn values are fitted a third time with nothing censored (``"uncensored"``): the bias
    the estimator has without a limit, against which M3's and M1's read. With ``"combined"``
    the M3 fit is refused (:func:`~synpmx_lite.pmx.population.fit_population` raises
    ``ValueError``: censoring hides what determines the additive part of the error).

    Returns
    -------
    BlqComparison
        The share censored, and the estimates of each method beside the truth.
    """
    n, error, lloq = _checked(n, error, lloq)
    if not isinstance(uncensored, bool):
        raise TypeError(f"uncensored must be a bool, got {uncensored!r}")
    values = _drawn_values(n, error, check_rng(rng))
    data, roles = _event_table(values, error, lloq)
    fit_error = "additive" if error == "log" else error
    fits = {
        "M3": fit_population(prepare_study(data, pmx_roles(**roles)), error=fit_error),
        "M1": fit_population(_m1_study(data, roles), error=fit_error),
    }
    if uncensored:
        whole, whole_roles = _event_table(values, error, None)
        fits["uncensored"] = fit_population(_m1_study(whole, whole_roles), error=fit_error)
    truth = {**BLQ_TRUTH["typical"], **BLQ_TRUTH["residual"][error]}
    rows = {"truth": pd.Series(truth)}
    for name, fit in fits.items():
        rows[name] = pd.concat([fit.typical, fit.residual])
    estimates = pd.DataFrame(rows).T[list(truth)]
    observations = data["EVID"] == 0
    share = float(data.loc[observations, "CENS"].mean())
    converged = {name: bool(fit.converged) for name, fit in fits.items()}
    return BlqComparison(censored_share=share, estimates=estimates, converged=converged)
