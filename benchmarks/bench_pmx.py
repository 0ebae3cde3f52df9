"""Time the PMX engine: each study's fit, the misdosed warfarin case, and the full warfarin run.

Each study is fitted with its default model and error (two compartments for mavoglurant and
nimoData, whose budget is 3 s each), and the three one-compartment studies once more with
additive error, the fits ``benchmarks/bench_nlme.py`` times beside R's nlme. The full warfarin
run is what the model generator does with a study: the FOCE-I fit, the influence rounds, the
fingerprint, checks P1-P5 and one synthetic dataset, with the PD model of ``pca`` and its
leave-one-out refits. The budget for it is 10 s on a 2-core machine. The misdosed case (one
patient's concentrations times 1000) needs a second round with that patient left out; wbcSim
is the full run of a study with a PD endpoint and no PK model.

Run from the repository's root::

    .venv/bin/python benchmarks/bench_pmx.py

Each figure is the median of the timed repeats after one warm-up run, in wall-clock seconds
and CPU seconds (the steadier on a machine shared with other work; the fits are
single-threaded); the last line, ``warfarin_full_run_seconds: X`` (wall clock), is the
headline figure.
"""

import statistics
import time
import warnings

import numpy as np

from synpmx_lite.generator.estimate import (
    model_fingerprint,
    model_privacy_checks,
    synpmx_model_estimate,
)
from synpmx_lite.generator.generate import synpmx_model_generate
from synpmx_lite.pmx.population import fit_population
from synpmx_lite.pmx.study import DATASETS, load_dataset, prepare_study

REPEATS = 3
BUDGET_SECONDS = 10.0
TWO_COMPARTMENT_BUDGET_SECONDS = 3.0
ONE_COMPARTMENT = ("theo_sd", "warfarin", "pheno_sd")


def full_run(data, roles):
    fit = synpmx_model_estimate(data, roles, seed=1)
    model_fingerprint(fit).to_json()
    model_privacy_checks(fit)
    synpmx_model_generate(fit, seed=11)
    return fit


def timed(function, *args, **options) -> tuple[float, float]:
    """Median wall-clock and CPU seconds of ``REPEATS`` calls after a warm-up call."""
    function(*args, **options)  # warm-up
    seconds, cpu = [], []
    for _ in range(REPEATS):
        start, start_cpu = time.perf_counter(), time.process_time()
        function(*args, **options)
        seconds.append(time.perf_counter() - start)
        cpu.append(time.process_time() - start_cpu)
    return statistics.median(seconds), statistics.median(cpu)


def main() -> None:
    data, roles = load_dataset("warfarin")
    misdosed = data.copy()
    patient = np.sort(data["id"].unique())[4]
    on_cp = (misdosed["id"] == patient) & (misdosed["evid"] == 0) & (misdosed["dvid"] == "cp")
    misdosed.loc[on_cp, "dv"] *= 1000
    warnings.simplefilter("ignore")  # each fit's diagnostics are printed below
    print(f"one FOCE-I fit per study, default error model (median of {REPEATS}):")
    for name in (name for name, (_, roles) in DATASETS.items() if roles.fit_pk):
        study = prepare_study(*load_dataset(name))
        fit = fit_population(study)
        seconds, cpu = timed(fit_population, study)
        budget = ""
        if fit.model.compartments == 2:
            budget = f" (budget {TWO_COMPARTMENT_BUDGET_SECONDS:.0f} s)"
        status = "converged" if fit.converged else "NOT converged: " + "; ".join(fit.diagnostics)
        print(
            f"  {name:12s} {study.n_patients:4d} patients {fit.n_observations:5d} observations "
            f"{fit.model}, {fit.error} error: {seconds:.2f} s ({cpu:.2f} s CPU){budget}, {status}"
        )
    one = [
        timed(fit_population, prepare_study(*load_dataset(name)), error="additive")
        for name in ONE_COMPARTMENT
    ]
    print(
        f"the three one-compartment fits with additive error: {sum(s for s, _ in one):.2f} s "
        f"({sum(c for _, c in one):.2f} s CPU) together (benchmarks/bench_nlme.py times nlme "
        "beside them)"
    )
    misdosed_seconds, misdosed_cpu = timed(full_run, misdosed, roles)
    rounds = full_run(misdosed, roles).privacy.left_out.rounds
    print(
        f"misdosed warfarin, full run ({rounds} rounds): {misdosed_seconds:.2f} s "
        f"({misdosed_cpu:.2f} s CPU)"
    )
    wbc_seconds, wbc_cpu = timed(full_run, *load_dataset("wbcSim"))
    print(
        f"wbcSim (one PD endpoint, no PK model), full run: {wbc_seconds:.2f} s "
        f"({wbc_cpu:.2f} s CPU)"
    )
    seconds, cpu = timed(full_run, data, roles)
    print(f"warfarin full run: {seconds:.2f} s ({cpu:.2f} s CPU)")
    print(f"budget: {BUDGET_SECONDS:.0f} s; used {100 * seconds / BUDGET_SECONDS:.0f} %")
    print(f"warfarin_full_run_seconds: {seconds:.3f}")


if __name__ == "__main__":
    main()
