"""Small studies simulated from a hand-made fingerprint, shared by the tests.

Synthetic identifiers (``syn-0001``, ...) are reserved for synthetic data, and the estimation
refuses a study carrying them, so the simulated patients are renumbered 101, 102, ...
"""

import dataclasses

from synpmx_lite.generator.generate import synpmx_model_generate
from synpmx_lite.generator.release import Fingerprint
from synpmx_lite.pmx.pk import PkModel
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
                "doses": [{"period": 0, "index": 0, "time": 0.0, "amount": 100.0, "duration": 0.0}],
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
