"""The PD models beside R's nlme, and the cost of their leave-one-out refits, in one run.

The engine fits each continuous PD endpoint by its closed-form marginal likelihood
(:func:`synpmx_lite.pmx.pd.fit_pd_endpoint`): the random baseline enters linearly and the error is
additive, so FOCE-I's approximation is exact. nlme fits the same model (``random = b0 ~ 1``,
maximum likelihood), whose Lindstrom-Bates approximation is then exact too: the two OFVs must
agree. Printed per endpoint: both OFVs and estimates, both fits' median seconds, and the
engine's batched leave-one-out refits (one per patient) beside the time of refitting patient
by patient.

Run from the repository's root::

    .venv/bin/python benchmarks/bench_pd.py

R 4.2 with nlme runs the R side (``Rscript benchmarks/nlme_pd.R``, called by this script);
without ``Rscript`` the engine's figures are printed alone. The last line,
``pd_ofv_largest_difference: X``, is the largest OFV difference between the engine and nlme.
"""

import shutil
import statistics
import subprocess
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

from synpmx_lite.pmx.pd import fit_pd_endpoint, pd_loo_refits
from synpmx_lite.pmx.study import load_dataset, prepare_study

REPEATS = 5
R_SCRIPT = Path(__file__).with_name("nlme_pd.R")
ENDPOINTS = {"warfarin_pca": ("warfarin", "pca"), "wbcSim_DV": ("wbcSim", "DV")}


def timed(function, *args, **options):
    function(*args, **options)  # warm-up
    seconds = []
    for _ in range(REPEATS):
        start = time.perf_counter()
        function(*args, **options)
        seconds.append(time.perf_counter() - start)
    return statistics.median(seconds)


def since_first_dose(study, endpoint):
    rows = study.observations[study.observations["endpoint"] == endpoint]
    first = study.doses.groupby(["patient", "period"])["time"].min()
    key = pd.MultiIndex.from_arrays([rows["patient"], rows["period"]])
    return pd.DataFrame(
        {
            "id": rows["patient"].to_numpy() + 1,
            "time": rows["time"].to_numpy() - first.reindex(key).to_numpy(),
            "dv": rows["dv"].to_numpy(),
        }
    )


def main() -> None:
    warnings.simplefilter("ignore")
    directory = Path(tempfile.mkdtemp(prefix="bench_pd_"))
    engine, requests = {}, []
    for name, (dataset, endpoint) in ENDPOINTS.items():
        study = prepare_study(*load_dataset(dataset))
        fit = fit_pd_endpoint(study, endpoint)
        seconds = timed(fit_pd_endpoint, study, endpoint, shapes=(fit.shape,))
        loo_seconds = timed(pd_loo_refits, fit)
        one_by_one = time.perf_counter()
        keep = np.ones(study.n_patients, dtype=bool)
        for position in range(3):
            keep[:] = True
            keep[position] = False
            fit_pd_endpoint(study.subset(keep), endpoint, shapes=(fit.shape,))
        per_refit = (time.perf_counter() - one_by_one) / 3
        engine[name] = (fit, seconds, loo_seconds, per_refit * fit.n_patients)
        since_first_dose(study, endpoint).to_csv(directory / f"{name}.csv", index=False)
        start = {"p": np.nan, "lk": np.nan, "lr": np.nan, "s": np.nan, "d": np.nan, "lt": np.nan}
        parameters = fit.parameters
        if fit.shape == "slope":
            start["s"] = parameters["slope"]
        elif fit.shape == "nadir":
            start["d"], start["lt"] = parameters["depth"], np.log(parameters["nadir_time"])
        else:
            start["p"], start["lk"] = parameters["plateau"], np.log(parameters["rate"])
            if fit.shape == "transient":
                start["lr"] = np.log(parameters["recovery"])
        requests.append(
            {"name": name, "shape": fit.shape, "baseline": fit.baseline, **start,
             "repeats": REPEATS}
        )  # fmt: skip
    pd.DataFrame(requests).to_csv(directory / "pd_fits.csv", index=False)
    nlme = None
    if shutil.which("Rscript"):
        subprocess.run(["Rscript", str(R_SCRIPT), str(directory)], check=True)
        nlme = pd.read_csv(directory / "nlme_pd_results.csv").set_index("name")
    else:
        print("Rscript not found: the engine's figures alone")
    differences = []
    for name, (fit, seconds, loo_seconds, serial_seconds) in engine.items():
        print(f"{name}: {fit.shape} shape, {fit.n_patients} patients, {fit.n_observations} obs")
        print(
            f"  engine: OFV {fit.ofv:.3f}, baseline {fit.baseline:.4g}, between-subject SD "
            f"{fit.baseline_sd:.4g}, residual {fit.residual:.4g}; {seconds:.3f} s per fit"
        )
        print(
            f"  leave-one-out refits, batched: {loo_seconds:.3f} s for {fit.n_patients}; "
            f"one by one: about {serial_seconds:.2f} s"
        )
        if nlme is not None:
            row = nlme.loc[name]
            if isinstance(row["error"], str) and row["error"]:
                print(f"  nlme:   no optimum from the engine's estimates: {row['error']}")
                continue
            differences.append(abs(fit.ofv - row["ofv"]))
            print(
                f"  nlme:   OFV {row['ofv']:.3f}, baseline {row['baseline']:.4g}, "
                f"between-subject SD {row['baseline_sd']:.4g}, residual {row['residual']:.4g}; "
                f"{row['seconds']:.3f} s per fit ({row['cpu_seconds']:.3f} s CPU)"
            )
    if differences:
        print(f"pd_ofv_largest_difference: {max(differences):.4f}")


if __name__ == "__main__":
    main()
