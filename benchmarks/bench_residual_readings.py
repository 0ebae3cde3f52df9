"""What reading each patient's move of the residual errors does, off against on (the default).

``synpmx_model_estimate(..., residual_readings=True)`` holds the residual errors to the
influence screen (infinitesimal jackknife, exact refits near the bar, the SE bar of the PD
shape parameters). It is on by default; this script measures what it changes, with the
package as it stands:

1. Every shipped study, with the readings off and on: seconds of the estimation, patients
   left out, rounds, and the checks' P5 verdict.
2. The audit's shadow cohorts (the first ``--cohorts`` of each study's, drawn exactly as
   :mod:`synpmx_lite.attacks.shadow_releases` draws them): how many of their PK fits can be
   trusted (no diagnostic), and how many end with the additive part of the combined error at
   a bound of its search, with the readings off and on. The membership audit keeps only the
   trusted fits, and needs at least ten per rerun group.

Run from the repository's root::

    .venv/bin/python benchmarks/bench_residual_readings.py [--cohorts 20] [--studies warfarin]

The last line is ``trusted_shadow_fits_off_on: <study> a/n b/n ...``.
"""

import argparse
import time
import warnings

import numpy as np
import pandas as pd

from synpmx_lite.attacks.membership_generator import _shadow_cohort_size, _shadow_cohorts
from synpmx_lite.attacks.shadow_releases import SHADOW_FRACTION, SHADOW_SEED
from synpmx_lite.generator.estimate import model_privacy_checks, synpmx_model_estimate
from synpmx_lite.pmx.population import FitWarning
from synpmx_lite.pmx.study import DATASETS, load_dataset, prepare_study

AT_BOUND = "residual additive sits at a bound"


def estimate(data: pd.DataFrame, roles, readings: bool):
    """The generator's estimation, its warnings silenced (the fit's diagnostics say it)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FitWarning)
        return synpmx_model_estimate(data, roles, residual_readings=readings)


def studies_table() -> pd.DataFrame:
    """Part 1: each shipped study with the readings off and on."""
    rows = []
    for name in DATASETS:
        data, roles = load_dataset(name)
        row = {"study": name}
        for readings, label in ((False, "off"), (True, "on")):
            start = time.perf_counter()
            fit = estimate(data, roles, readings)
            row[f"{label} s"] = round(time.perf_counter() - start, 2)
            row[f"{label} left out"] = fit.privacy.left_out.patients
            row[f"{label} rounds"] = fit.privacy.left_out.rounds
            row[f"{label} P5"] = model_privacy_checks(fit).set_index("check").loc["P5", "verdict"]
        rows.append(row)
        print(f"  {name} done", flush=True)
    return pd.DataFrame(rows)


def shadow_trust(name: str, cohorts: int) -> dict:
    """Part 2: trusted PK fits, and additive errors at a bound, among a study's shadow cohorts."""
    data, roles = load_dataset(name)
    study = prepare_study(data, roles)
    m = _shadow_cohort_size(name, study.n_patients, SHADOW_FRACTION)
    drawn, _ = _shadow_cohorts(np.random.default_rng(SHADOW_SEED), cohorts, study.n_patients, m)
    counts = {}
    for readings, label in ((False, "off"), (True, "on")):
        fits = [
            estimate(data[data[roles.id].isin(study.ids[cohort])], roles, readings)
            for cohort in drawn
        ]
        counts[f"{label} trusted"] = sum(f.pk.converged and not f.pk.diagnostics for f in fits)
        counts[f"{label} additive at bound"] = sum(
            any(d.startswith(AT_BOUND) for d in f.pk.diagnostics) for f in fits
        )
        left_out = [f.privacy.left_out.patients for f in fits]
        counts[f"{label} mean left out"] = float(np.mean(left_out))
    return {"study": name, "cohorts": cohorts, **counts}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cohorts", type=int, default=20)
    parser.add_argument("--studies", nargs="+", default=["warfarin", "pheno_sd", "mavoglurant"])
    args = parser.parse_args()
    pd.set_option("display.width", 200)
    print("1. Each shipped study, residual readings off and on")
    print(studies_table().to_string(index=False))
    print(f"\n2. The first {args.cohorts} shadow cohorts of each audited study")
    shadows = pd.DataFrame([shadow_trust(name, args.cohorts) for name in args.studies])
    print(shadows.to_string(index=False))
    pairs = " ".join(
        f"{r['study']} {r['off trusted']}/{r['cohorts']} {r['on trusted']}/{r['cohorts']}"
        for _, r in shadows.iterrows()
    )
    print(f"trusted_shadow_fits_off_on: {pairs}")


if __name__ == "__main__":
    main()
