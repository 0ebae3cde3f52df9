"""Small studies simulated from a hand-made fingerprint, shared by the tests.

Synthetic identifiers (``syn-0001``, ...) are reserved for synthetic data, and the estimation
refuses a study carrying them, so the simulated patients are renumbered 101, 102, ...
"""

import dataclasses

import numpy as np
import pandas as pd

from synpmx_lite.generator.generate import synpmx_model_generate
from synpmx_lite.generator.release import Fingerprint
from synpmx_lite.pmx.pk import PkModel, predict_concentrations
from synpmx_lite.pmx.study import pmx_roles

SIMULATED_ROLES = pmx_roles(
    id="id",
    time="time",
    dv="dv",
    amt="amt",
    evid="evid",
    mdv="mdv",
    rate="rate",
    dvid="dvid",
    nominal_time="nominal_time",
    arm="arm",
    covariates=["WT", "SEX"],
    weight="WT",
    model=PkModel(route="iv"),
)


#: The patients the screen leaves out of warfarin by itself: each moves the proportional
#: residual error past the review bar (13 in the first round, 14 once 13 is out).
WARFARIN_LEFT_OUT = (13, 14)


def known_fingerprint(n=12, **changes):
    fingerprint = Fingerprint(
        cohort_size=n,
        model={"compartments": 1, "route": "iv", "lag": False},
        pk_endpoint="DV",
        log_dv=False,
        error="combined",
        typical={"cl": 1.0, "v": 10.0},
        omega={"cl": 0.09, "v": 0.04},
        residual={"additive": 0.05, "proportional": 0.1},
        pd={},
        graded={},
        covariates={"WT": {"geometric_mean": 70.0, "sdlog": 0.2}},
        categories={"SEX": [["F", 0.5], ["M", 0.5]]},
        reference_weight=70.0,
        arms=[
            {
                "arm": "all",
                "patients": n,
                "doses": [
                    {
                        "period": 0,
                        "index": 0,
                        "time": 0.0,
                        "amount": 100.0,
                        "duration": 0.0,
                        "route": "iv",
                    }
                ],
                "keep": {},
            }
        ],
        dose_change_rate=0.0,
        endpoints={
            "DV": {
                "attendance": 1.0,
                "visits": [[0, 0.5], [0, 2.0], [0, 6.0], [0, 12.0]],
                "loq": None,
            }
        },
        checks={"P4": "pass", "P5": "pass"},
    )
    return dataclasses.replace(fingerprint, **changes)


def small_study(n=12, seed=1):
    """A study simulated from the known fingerprint, its patients renumbered 101, 102, ...
    (synthetic IDs are reserved: a study carrying them is refused)."""
    data = synpmx_model_generate(known_fingerprint(n), seed=seed)
    number = {syn: 101 + i for i, syn in enumerate(data["id"].unique())}
    return data.assign(id=data["id"].map(number))


#: The exponents of weight on CL and V in :func:`weight_data`.
EXPONENTS = {"cl": 0.75, "v": 1.0}


def weight_data(n=60, seed=3, effects=()):
    """One-compartment IV study whose CL and V scale with weight by ``EXPONENTS``, and CL of
    the level ``"F"`` of SEX by a factor 0.8; typical CL 1 and V 10 at 70 kg, proportional
    error 0.1. Returns the event table and its roles (carrying ``effects``)."""
    rng = np.random.default_rng(seed)
    weight = 70 * np.exp(0.25 * rng.standard_normal(n))
    sex = np.where(rng.random(n) < 0.35, "F", "M")
    typical = np.column_stack(
        [
            1.0 * (weight / 70) ** EXPONENTS["cl"] * np.where(sex == "F", 0.8, 1.0),
            10.0 * (weight / 70) ** EXPONENTS["v"],
        ]
    )
    theta = typical * np.exp(np.array([0.25, 0.15]) * rng.standard_normal((n, 2)))
    times = np.broadcast_to([0.5, 2.0, 6.0, 12.0, 24.0], (n, 5))
    f = predict_concentrations(
        PkModel(route="iv"), theta, np.zeros((n, 1)), np.full((n, 1), 100.0),
        np.zeros((n, 1)), times,
    )  # fmt: skip
    dv = f * (1 + 0.1 * rng.standard_normal(f.shape))
    rows = times.shape[1] + 1
    data = pd.DataFrame(
        {
            "ID": np.repeat(np.arange(101, 101 + n), rows),
            "TIME": np.column_stack([np.zeros(n), times]).ravel(),
            "AMT": np.column_stack([np.full(n, 100.0), np.zeros(times.shape)]).ravel(),
            "DV": np.column_stack([np.zeros(n), dv]).ravel(),
            "EVID": np.tile(np.r_[1, np.zeros(times.shape[1], dtype=int)], n),
            "WT": np.repeat(weight, rows),
            "SEX": np.repeat(sex, rows),
        }
    )
    roles = pmx_roles(
        id="ID", time="TIME", dv="DV", amt="AMT", evid="EVID", covariates=["WT", "SEX"],
        weight="WT", model=PkModel(route="iv"), effects=effects,
    )  # fmt: skip
    return data, roles
