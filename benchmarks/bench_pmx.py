"""Time the PMX engine: each study's fit, the misdosed warfarin case, and the full warfarin run.

Each study is fitted with its default model and error (two compartments for mavoglurant and
nimoData, whose budget is 3 s each), and the three one-compartment studies once more with
additive error, the fits ``benchmarks/bench_nlme.py`` times beside R's nlme. The full warfarin
run is what the model generator does with a study: the FOCE-I fit, the influence rounds, the
fingerprint, checks P1-P5 and one synthetic dataset. The issue's budget for it is 60 s on a
2-core machine. The misdosed case (one patient's concentrations times 1000) needs a second
round with that patient left out.

Run from the repository's root::

    .venv/bin/python benchmarks/bench_pmx.py

Each figure is the median of the timed repeats after one warm-up run; the last line,
``warfarin_full_run_seconds: X``, is the headline figure.
"""

import statistics
import time
import warnings

import numpy as np

from synpmx_lite.estimation import fit_population
from synpmx_lite.fingerprint import model_fingerprint, model_privacy_checks, synpmx_model_estimate
from synpmx_lite.generate import synpmx_model_generate
from synpmx_lite.study import DATASETS, load_dataset, prepare_study

REPEATS = 3
BUDGET_SECONDS = 60.0
TWO_COMPARTMENT_BUDGET_SECONDS = 3.0
ONE_COMPARTMENT = ("theo_sd", "warfarin", "pheno_sd")


def full_run(data, roles):
    fit = synpmx_model_estimate(data, roles, seed=1)
    model_fingerprint(fit).to_json()
    model_privacy_checks(fit)
    synpmx_model_generate(fit, seed=11)
    return fit


def timed(function, *args, **options):
    function(*args, **options)  # warm-up
    seconds = []
    for _ in range(REPEATS):
        start = time.perf_counter()
        function(*args, **options)
        seconds.append(time.perf_counter() - start)
    return statistics.median(seconds)


def main() -> None:
    data, roles = load_dataset("warfarin")
    misdosed = data.copy()
    patient = np.sort(data["id"].unique())[4]
    on_cp = (misdosed["id"] == patient) & (misdosed["evid"] == 0) & (misdosed["dvid"] == "cp")
    misdosed.loc[on_cp, "dv"] *= 1000
    warnings.simplefilter("ignore")  # each fit's diagnostics are printed below
    print(f"one FOCE-I fit per study, default error model (median of {REPEATS}):")
    for name in DATASETS:
        study = prepare_study(*load_dataset(name))
        fit = fit_population(study)
        seconds = timed(fit_population, study)
        budget = ""
        if fit.model.compartments == 2:
            budget = f" (budget {TWO_COMPARTMENT_BUDGET_SECONDS:.0f} s)"
        status = "converged" if fit.converged else "NOT converged: " + "; ".join(fit.diagnostics)
        print(
            f"  {name:12s} {study.n_patients:4d} patients {fit.n_observations:5d} observations "
            f"{fit.model}, {fit.error} error: {seconds:.2f} s{budget}, {status}"
        )
    total = 0.0
    for name in ONE_COMPARTMENT:
        total += timed(fit_population, prepare_study(*load_dataset(name)), error="additive")
    print(
        f"the three one-compartment fits with additive error: {total:.2f} s together "
        "(benchmarks/bench_nlme.py times nlme beside them)"
    )
    misdosed_seconds = timed(full_run, misdosed, roles)
    rounds = full_run(misdosed, roles).privacy.left_out.rounds
    print(f"misdosed warfarin, full run ({rounds} rounds): {misdosed_seconds:.2f} s")
    seconds = timed(full_run, data, roles)
    print(f"budget: {BUDGET_SECONDS:.0f} s; used {100 * seconds / BUDGET_SECONDS:.0f} %")
    print(f"warfarin_full_run_seconds: {seconds:.3f}")


if __name__ == "__main__":
    main()
