"""The engine beside R's nlme on the same population PK models, in one run.

Both fit the same closed-form models to the same observations (exported from
:func:`synpmx_lite.pmx.study.prepare_study`): diagonal random effects on every log parameter,
additive residual error, maximum likelihood. The engine's objective is FOCE-I; nlme's is
Lindstrom-Bates, its first-order conditional approximation, so the OFVs agree closely but not
to the digit. Three parts:

1. Speed: the three one-compartment studies (theo_sd, warfarin cp, pheno_sd), nlme from the
   engine's naive pooled start (the engine finds its own: its time includes that search);
   median wall-clock and CPU seconds over repeats. Then each side's OFV beside the exact
   -2 log-likelihood at each side's estimates by importance sampling: FOCE-I's and
   Lindstrom-Bates' objectives are different approximations, so a lower OFV on one side does
   not by itself mean a better optimum.
2. Standard errors on theo_sd: the engine's (inverse Hessian and sandwich) beside nlme's
   (``summary()`` for the typical values, ``intervals()`` for the SDs, on the log scale).
3. The two-compartment studies (mavoglurant, nimoData), additive error: nlme from a grid of
   dispersed starts, and the engine; the best optimum of each, and the exact -2 log-likelihood
   at both by importance sampling (:func:`synpmx_lite.pmx.population.importance_sampling_ofv`),
   which decides between them without either method's approximation.
4. The covariate fit on warfarin (runs with ``--quick`` too): additive error, CL and V each a
   power of weight over 70 kg (``effects=("cl ~ wt/70", "v ~ wt/70")``), the engine beside
   nlme (``fixed = list(lcl ~ lwt, lv ~ lwt, lka ~ 1)``): OFV, the exponents with their SEs,
   and wall-clock and CPU time.
5. Chosen random effects (runs with ``--quick`` too): warfarin, additive error, random
   effects on CL and V only (``random=("cl", "v")``; nlme's ``random = pdDiag(lcl + lv ~ 1)``),
   ka a typical value shared by every patient; and nimoData without an eta on Q
   (``random=("cl", "v", "vp")``), whose pooled starts all reach a local optimum and whose
   best optimum the engine finds from the full model's estimates, nlme from the grid of
   part 3 (best start reported): the OFVs, estimates and CPU time side by side. The engine
   reports that fit not converged: its between-subject SD of Vp, about 3.3 on the log scale,
   passes ``WIDEST_OMEGA_SD`` (a factor of e^2 per SD is not a population).
6. A correlated pair on warfarin (runs with ``--quick`` too): additive error, the etas of CL
   and V correlated (``correlated=("cl", "v")``; nlme's ``random = pdBlocked(list(pdSymm(lcl
   + lv ~ 1), pdDiag(lka ~ 1)))``): the OFVs, the correlation and the estimates side by side.

R 4.2 with nlme runs the R side (``Rscript benchmarks/nlme_fits.R``, called by this script;
``apt-get install r-base-core`` brings both). Without ``Rscript`` on the PATH the script says
so, skips R and prints the engine's figures alone.

Run from the repository's root::

    .venv/bin/python benchmarks/bench_nlme.py            # all three parts (R takes minutes)
    .venv/bin/python benchmarks/bench_nlme.py --quick    # parts 1 and 2 only

``--reference`` also writes nlme's theo_sd estimates and standard errors to
``tests/pmx/data/nlme_theo_sd_additive.csv``, the reference of the engine's standard-error test.

Both sides run single-threaded, and both wall-clock and CPU seconds are printed. The last
line, ``engine_over_nlme_one_compartment: X``, is the engine's total CPU time on the three
one-compartment fits over nlme's (below 1: the engine is faster): on a machine shared with
other work the CPU time is the steadier measure. Without R it is
``engine_one_compartment_cpu_seconds: X``.
"""

import argparse
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import warnings
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd

from synpmx_lite.pmx.population import fit_population, importance_sampling_ofv
from synpmx_lite.pmx.study import load_dataset, prepare_study

ONE_COMPARTMENT = ("theo_sd", "warfarin", "pheno_sd")
TWO_COMPARTMENTS = ("mavoglurant", "nimoData")
REPEATS = 7
R_SCRIPT = Path(__file__).with_name("nlme_fits.R")
NLME_NAMES = {"cl": "lcl", "v": "lv", "q": "lq", "vp": "lvp", "ka": "lka"}
IMPORTANCE_DRAWS = 4000
WEIGHT_EFFECTS = ("cl ~ wt/70", "v ~ wt/70")
COVARIATE_FIT = "warfarin_wt"  # the covariate fit's name beside the plain warfarin fit
RANDOM_FIT = "warfarin_cl_v"  # warfarin with random effects on CL and V only
RANDOM = ("cl", "v")
RANDOM_TWO_FIT = "nimoData_no_q"  # nimoData without an eta on Q
RANDOM_TWO = ("cl", "v", "vp")
CORRELATED_FIT = "warfarin_block"  # warfarin with the etas of CL and V correlated
CORRELATED = ("cl", "v")


def nlme_model(study) -> str:
    model = study.roles.model
    return {(1, "oral"): "oral1", (1, "iv"): "iv1", (2, "iv"): "iv2"}[
        (model.compartments, model.route)
    ]


def export(directory: Path, name: str, study, starts: pd.DataFrame) -> None:
    """The observations, the (dose, observation) pairs and the starts, for nlme_fits.R."""
    patient, slot = np.nonzero(study.obs_mask)
    rows = np.arange(patient.size) + 1
    pd.DataFrame(
        {
            "row": rows,
            "id": patient + 1,
            "time": study.obs_time[patient, slot],
            "dv": study.obs_dv[patient, slot],
            "lwt": log_weight(study)[patient],
        }
    ).to_csv(directory / f"{name}_obs.csv", index=False)
    elapsed = study.obs_time[patient, slot][:, None] - study.dose_time[patient]
    reaches = (
        (elapsed >= 0)
        & (study.dose_amount[patient] > 0)
        & (study.dose_period[patient] == study.obs_period[patient, slot][:, None])
    )
    obs, dose = np.nonzero(reaches)
    pd.DataFrame(
        {
            "row": rows[obs],
            "amount": study.dose_amount[patient[obs], dose],
            "elapsed": elapsed[obs, dose],
            "duration": study.dose_duration[patient[obs], dose],
        }
    ).to_csv(directory / f"{name}_pairs.csv", index=False)
    starts.to_csv(directory / f"{name}_starts.csv", index=False)


def two_compartment_grid(fit) -> pd.DataFrame:
    """nlme's starts for a two-compartment fit: the engine's pooled start, with Q and Vp
    on a grid around CL and V."""
    base = pooled_start(fit)
    return pd.DataFrame(
        [
            base | {"lq": base["lcl"] + np.log(q), "lvp": base["lv"] + np.log(vp)}
            for q in (0.3, 1.0, 3.0)
            for vp in (1.0, 3.0, 10.0)
        ]
    )


def log_weight(study) -> np.ndarray:
    """Each patient's log(weight / 70): 0 for a study without a weight."""
    if study.roles.weight is None:
        return np.zeros(study.n_patients)
    return np.log(study.covariates[study.roles.weight].to_numpy(dtype=float) / 70)


def pooled_start(fit) -> dict:
    """The engine's starting typical values (its naive pooled fit), as nlme's log names."""
    first = fit.starts.iloc[0]
    return {NLME_NAMES[k]: float(np.log(first[f"start {k}"])) for k in fit.model.parameters}


def run_nlme(specs: list[dict], starts: dict, studies: dict) -> pd.DataFrame | None:
    if shutil.which("Rscript") is None:
        print("Rscript is not on the PATH: the nlme side is skipped (apt-get install r-base-core)")
        return None
    with tempfile.TemporaryDirectory() as folder:
        directory = Path(folder)
        for spec in specs:
            export(directory, spec["study"], studies[spec["study"]], starts[spec["study"]])
        pd.DataFrame(specs).to_csv(directory / "studies.csv", index=False)
        subprocess.run(["Rscript", str(R_SCRIPT), str(directory)], check=True)
        return pd.read_csv(directory / "nlme_results.csv")


def timed_fit(study, repeats: int, **options):
    """The fit, and the median wall-clock and CPU seconds of ``repeats`` fits."""
    fit_population(study, **options)  # warm-up
    seconds, cpu = [], []
    for _ in range(repeats):
        start, start_cpu = time.perf_counter(), time.process_time()
        fit = fit_population(study, **options)
        seconds.append(time.perf_counter() - start)
        cpu.append(time.process_time() - start_cpu)
    return fit, statistics.median(seconds), statistics.median(cpu)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="one-compartment parts only")
    parser.add_argument("--reference", action="store_true", help="write the SE test's reference")
    arguments = parser.parse_args()
    warnings.simplefilter("ignore")  # diagnostics are reported in the tables below
    two = () if arguments.quick else TWO_COMPARTMENTS
    studies = {name: prepare_study(*load_dataset(name)) for name in ONE_COMPARTMENT + two}
    engine = {}
    for name in ONE_COMPARTMENT:
        engine[name] = timed_fit(studies[name], REPEATS, error="additive")
    for name in two:
        engine[name] = timed_fit(studies[name], 3, error="additive")
    starts, specs = {}, []
    for name in ONE_COMPARTMENT:
        starts[name] = pd.DataFrame([pooled_start(engine[name][0])])
        specs.append({"study": name, "model": nlme_model(studies[name]), "repeats": REPEATS})
    for name in two:
        starts[name] = two_compartment_grid(engine[name][0])
        specs.append({"study": name, "model": "iv2", "repeats": 1})
    studies[COVARIATE_FIT] = studies["warfarin"]
    engine[COVARIATE_FIT] = timed_fit(
        studies["warfarin"], REPEATS, error="additive", effects=WEIGHT_EFFECTS
    )
    starts[COVARIATE_FIT] = pd.DataFrame([pooled_start(engine[COVARIATE_FIT][0])])
    specs.append(
        {"study": COVARIATE_FIT, "model": "oral1", "repeats": REPEATS, "weight_on": "lcl lv"}
    )
    studies[RANDOM_FIT] = studies["warfarin"]
    engine[RANDOM_FIT] = timed_fit(studies["warfarin"], 3, error="additive", random=RANDOM)
    starts[RANDOM_FIT] = pd.DataFrame([pooled_start(engine[RANDOM_FIT][0])])
    specs.append({"study": RANDOM_FIT, "model": "oral1", "repeats": 3, "random_on": "lcl lv"})
    studies[RANDOM_TWO_FIT] = prepare_study(*load_dataset("nimoData"))
    engine[RANDOM_TWO_FIT] = timed_fit(
        studies[RANDOM_TWO_FIT], 3, error="additive", random=RANDOM_TWO
    )
    starts[RANDOM_TWO_FIT] = two_compartment_grid(engine[RANDOM_TWO_FIT][0])
    specs.append({"study": RANDOM_TWO_FIT, "model": "iv2", "repeats": 1, "random_on": "lcl lv lvp"})
    studies[CORRELATED_FIT] = studies["warfarin"]
    engine[CORRELATED_FIT] = timed_fit(
        studies["warfarin"], 3, error="additive", correlated=CORRELATED
    )
    starts[CORRELATED_FIT] = pd.DataFrame([pooled_start(engine[CORRELATED_FIT][0])])
    specs.append({"study": CORRELATED_FIT, "model": "oral1", "repeats": 3, "block": "lcl lv"})
    for spec in specs:
        spec["log_dv"] = studies[spec["study"]].roles.log_dv
    nlme = run_nlme(specs, starts, studies)
    report_speed(engine, nlme)
    report_objectives(engine, nlme, studies)
    report_standard_errors(engine["theo_sd"][0], nlme)
    if two:
        report_two_compartments(engine, nlme, studies)
    report_covariates(engine[COVARIATE_FIT], nlme)
    report_random(engine[RANDOM_FIT], nlme, RANDOM_FIT, "Warfarin")
    report_random(engine[RANDOM_TWO_FIT], nlme, RANDOM_TWO_FIT, "nimoData")
    report_correlated(engine[CORRELATED_FIT], nlme)
    if arguments.reference and nlme is not None:
        write_reference(nlme[nlme["study"] == "theo_sd"].iloc[0])
    total = sum(engine[n][2] for n in ONE_COMPARTMENT)
    if nlme is None:
        print(f"engine_one_compartment_cpu_seconds: {total:.3f}")
    else:
        found = nlme.set_index("study").loc[list(ONE_COMPARTMENT)]
        wall = sum(engine[n][1] for n in ONE_COMPARTMENT) / found["seconds"].sum()
        print(f"engine over nlme, wall clock: {wall:.3f}")
        print(f"engine_over_nlme_one_compartment: {total / found['cpu'].sum():.3f}")


def write_reference(found: pd.Series) -> None:
    """nlme's theo_sd log-scale estimates and SEs, for tests/pmx/test_population.py."""
    rows = []
    for name in ("cl", "v", "ka"):
        key = NLME_NAMES[name]
        rows.append(("typical", name, found[f"{key}_est"], found[f"{key}_se"]))
        rows.append(("omega_sd", name, np.log(found[f"sd_{key}_est"]), found[f"sd_{key}_logse"]))
    rows.append(("residual", "additive", np.log(found["sigma_est"]), found["sigma_logse"]))
    path = Path(__file__).parents[1] / "tests" / "pmx" / "data" / "nlme_theo_sd_additive.csv"
    table = pd.DataFrame(rows, columns=["kind", "parameter", "log_estimate", "log_se"])
    table["ofv"] = found["ofv"]
    table.to_csv(path, index=False, float_format="%.6g")
    print(f"wrote {path}")


def report_speed(engine: dict, nlme: pd.DataFrame | None) -> None:
    rows = []
    for name in ONE_COMPARTMENT:
        _, seconds, cpu = engine[name]
        row = {"study": name, "engine wall s": seconds, "engine CPU s": cpu}
        if nlme is not None:
            found = nlme[nlme["study"] == name].iloc[0]
            row |= {"nlme wall s": found["seconds"], "nlme CPU s": found["cpu"]}
        rows.append(row)
    table = pd.DataFrame(rows).set_index("study")
    table.loc["total"] = table.sum()
    # A fit that stopped without converging would be timed short: say which did.
    table["engine converged"] = [engine[n][0].converged for n in ONE_COMPARTMENT] + [""]
    if nlme is not None:
        done = nlme.set_index("study").loc[list(ONE_COMPARTMENT), "converged"].astype(bool)
        table["nlme converged"] = [*done, ""]
    print(f"\nOne-compartment fits, additive error (median of {REPEATS} runs):")
    print(table.to_string(float_format=lambda v: f"{v:.3f}"))


def report_objectives(engine: dict, nlme: pd.DataFrame | None, studies: dict) -> None:
    """Each side's OFV, and the exact one (importance sampling) at each side's estimates."""
    rows = []
    for name in ONE_COMPARTMENT:
        fit = engine[name][0]
        ofv, error = importance_sampling_ofv(studies[name], fit, draws=IMPORTANCE_DRAWS)
        row = {"study": name, "engine FOCE-I": fit.ofv, "exact at engine's": ofv}
        if nlme is not None:
            found = nlme[nlme["study"] == name].iloc[0]
            at_nlme = fit_from_estimates(fit, nlme_estimates(fit, found))
            row |= {"nlme LB": found["ofv"]}
            row["exact at nlme's"] = importance_sampling_ofv(
                studies[name], at_nlme, draws=IMPORTANCE_DRAWS
            )[0]
        row["Monte Carlo SE"] = error
        rows.append(row)
    print(
        "\nOne-compartment fits: OFV (-2 log-likelihood less N log 2 pi) of each method, and "
        f"the exact one by importance sampling ({IMPORTANCE_DRAWS} draws per patient):"
    )
    print(pd.DataFrame(rows).set_index("study").to_string(float_format=lambda v: f"{v:.2f}"))


def nlme_estimates(fit, found: pd.Series) -> list[float]:
    """nlme's typical values, SDs and residual SD, in the order of ``fit_from_estimates``."""
    names = list(fit.model.parameters)
    values = [np.exp(found[f"{NLME_NAMES[n]}_est"]) for n in names]
    return values + [found[f"sd_{NLME_NAMES[n]}_est"] for n in names] + [found["sigma_est"]]


def report_standard_errors(fit, nlme: pd.DataFrame | None) -> None:
    """theo_sd: log-scale SEs (= RSE / 100) of the engine beside nlme's."""
    hessian = fit.summary("hessian")["rse_percent"] / 100
    sandwich = fit.summary("sandwich")["rse_percent"] / 100
    table = pd.DataFrame({"engine (Hessian)": hessian, "engine (sandwich)": sandwich})
    if nlme is not None:
        found = nlme[nlme["study"] == "theo_sd"].iloc[0]
        reference = {}
        for kind, name in table.index:
            key = NLME_NAMES.get(name)
            if kind == "typical":
                reference[(kind, name)] = found[f"{key}_se"]
            elif kind == "omega_sd":
                reference[(kind, name)] = found[f"sd_{key}_logse"]
            else:
                reference[(kind, name)] = found["sigma_logse"]
        table["nlme"] = pd.Series(reference)
        table["Hessian / nlme"] = table["engine (Hessian)"] / table["nlme"]
    print("\ntheo_sd, additive error: standard errors of the log estimates (RSE % / 100):")
    print(table.to_string(float_format=lambda v: f"{v:.4f}"))


def report_two_compartments(engine: dict, nlme: pd.DataFrame | None, studies: dict) -> None:
    print("\nTwo-compartment studies, additive error:")
    for name in TWO_COMPARTMENTS:
        fit, seconds, cpu = engine[name]
        names = list(fit.model.parameters)
        table = pd.DataFrame(
            {"engine": np.r_[fit.typical.to_numpy(), fit.omega_sd.to_numpy(), fit.residual]},
            index=[*names, *(f"sd {n}" for n in names), "additive"],
        )
        ofv = {"engine": fit.ofv}
        exact = {"engine": importance_sampling_ofv(studies[name], fit, draws=IMPORTANCE_DRAWS)}
        status = "converged" if fit.converged else "NOT converged"
        line = f"  {name}: engine {seconds:.2f} s wall, {cpu:.2f} s CPU, {status}"
        if nlme is not None:
            runs = nlme[(nlme["study"] == name) & nlme["ofv"].notna()]
            best = runs.loc[runs["ofv"].idxmin()]
            ofvs = np.round(np.sort(runs["ofv"].to_numpy()), 2)
            line += (
                f"; nlme {len(runs)} of {int((nlme['study'] == name).sum())} starts ended, "
                f"{int(runs['converged'].sum())} converged, OFVs {ofvs}"
            )
            values = nlme_estimates(fit, best)
            table["nlme (best start)"] = values
            ofv["nlme (best start)"] = best["ofv"]
            at_nlme = fit_from_estimates(fit, values)
            exact["nlme (best start)"] = importance_sampling_ofv(
                studies[name], at_nlme, draws=IMPORTANCE_DRAWS
            )
        print(line)
        print(table.to_string(float_format=lambda v: f"{v:.4g}"))
        objectives = pd.DataFrame(
            {
                "OFV (FOCE-I / nlme's)": pd.Series(ofv),
                "OFV by importance sampling": pd.Series({k: v[0] for k, v in exact.items()}),
                "its Monte Carlo SE": pd.Series({k: v[1] for k, v in exact.items()}),
            }
        ).T
        print(objectives.to_string(float_format=lambda v: f"{v:.2f}"))


def report_covariates(engine: tuple, nlme: pd.DataFrame | None) -> None:
    """Warfarin with CL and V on weight: the engine's OFV, exponents and time beside nlme's."""
    fit, seconds, cpu = engine
    table = fit.summary()
    rows = {"OFV": [fit.ofv, np.nan], "wall s": [seconds, np.nan], "CPU s": [cpu, np.nan]}
    for name in ("cl", "v"):
        row = table.loc[("effect", f"{name} ~ wt/70")]
        rows[f"exponent of {name}"] = [row["estimate"], row["se"]]
        rows[f"typical {name}"] = [fit.typical[name], table.loc[("typical", name), "se"]]
    frame = pd.DataFrame(rows, index=["engine", "engine SE"]).T
    if nlme is not None:
        found = nlme[nlme["study"] == COVARIATE_FIT].iloc[0]
        values, errors = [found["ofv"], found["seconds"], found["cpu"]], [np.nan] * 3
        for name in ("cl", "v"):
            typical = np.exp(found[f"l{name}_est"])  # nlme estimates log CL: delta method
            values += [found[f"l{name}_wt_est"], typical]
            errors += [found[f"l{name}_wt_se"], typical * found[f"l{name}_se"]]
        frame["nlme"], frame["nlme SE"] = values, errors
    print_beside(
        f"Warfarin, additive error, CL and V on weight ({', '.join(WEIGHT_EFFECTS)}; engine "
        f"{status_of(fit)}, median of {REPEATS} runs):",
        frame,
    )
    if nlme is not None:
        print(f"covariate_fit_engine_over_nlme_cpu: {cpu / found['cpu']:.3f}")


def report_random(engine: tuple, nlme: pd.DataFrame | None, name: str, title: str) -> None:
    """A fit with chosen random effects: the engine's OFV and estimates beside those of
    nlme's best start."""
    fit, seconds, cpu = engine
    rows = {"OFV": [fit.ofv], "wall s": [seconds], "CPU s": [cpu]}
    rows |= {f"typical {p}": [fit.typical[p]] for p in fit.model.parameters}
    rows |= {f"omega_sd {p}": [fit.omega_sd[p]] for p in fit.random}
    rows["additive"] = [fit.residual["additive"]]
    frame = pd.DataFrame(rows, index=["engine"]).T
    if nlme is not None:
        runs = nlme[(nlme["study"] == name) & nlme["ofv"].notna()]
        found = runs.loc[runs["ofv"].idxmin()]
        frame["nlme"] = (
            [found["ofv"], found["seconds"], found["cpu"]]
            + [np.exp(found[f"{NLME_NAMES[p]}_est"]) for p in fit.model.parameters]
            + [found[f"sd_{NLME_NAMES[p]}_est"] for p in fit.random]
            + [found["sigma_est"]]
        )
        ofvs = np.round(np.sort(runs["ofv"].to_numpy()), 2)
        title += (
            f" (nlme: best of {len(runs)} starts, converged {bool(found['converged'])}, "
            f"OFVs {ofvs})"
        )
    print_beside(
        f"{title}, additive error, random effects on {', '.join(fit.random)} only (engine "
        f"{status_of(fit)}; {', '.join(fit.diagnostics) or 'no diagnostics'}):",
        frame,
    )
    if nlme is not None:
        print(f"random_fit_ofv_engine_minus_nlme[{name}]: {fit.ofv - found['ofv']:.3f}")


def report_correlated(engine: tuple, nlme: pd.DataFrame | None) -> None:
    """Warfarin with the etas of CL and V correlated: the engine beside nlme's pdBlocked."""
    fit, seconds, cpu = engine
    label = ",".join(CORRELATED)
    table = fit.summary()
    rows = {"OFV": [fit.ofv, np.nan], "wall s": [seconds, np.nan], "CPU s": [cpu, np.nan]}
    rows[f"correlation {label}"] = [fit.correlation[label], table.loc[("correlation", label), "se"]]
    rows |= {f"typical {p}": [fit.typical[p], np.nan] for p in fit.model.parameters}
    rows |= {f"omega_sd {p}": [fit.omega_sd[p], np.nan] for p in fit.random}
    rows["additive"] = [fit.residual["additive"], np.nan]
    frame = pd.DataFrame(rows, index=["engine", "engine SE"]).T
    if nlme is not None:
        found = nlme[nlme["study"] == CORRELATED_FIT].iloc[0]
        frame["nlme"] = (
            [found["ofv"], found["seconds"], found["cpu"], found["corr_est"]]
            + [np.exp(found[f"{NLME_NAMES[p]}_est"]) for p in fit.model.parameters]
            + [found[f"sd_{NLME_NAMES[p]}_est"] for p in fit.random]
            + [found["sigma_est"]]
        )
    print_beside(
        f"Warfarin, additive error, the etas of {' and '.join(CORRELATED)} correlated (engine "
        f"{status_of(fit)}):",
        frame,
    )
    if nlme is not None:
        print(f"correlated_fit_ofv_engine_minus_nlme: {fit.ofv - found['ofv']:.3f}")
        gap = fit.correlation[label] - found["corr_est"]
        print(f"correlated_fit_rho_engine_minus_nlme: {gap:.4f}")


def status_of(fit) -> str:
    return "converged" if fit.converged else "NOT converged"


def print_beside(heading: str, frame: pd.DataFrame) -> None:
    """A heading and the engine's figures beside nlme's."""
    print(f"\n{heading}")
    print(frame.to_string(float_format=lambda v: f"{v:.4g}", na_rep="-"))


def fit_from_estimates(fit, values):
    """A copy of ``fit`` holding other typical values, SDs and residual error."""
    p = len(fit.model.parameters)
    return replace(
        fit,
        typical=pd.Series(values[:p], index=fit.typical.index),
        omega=pd.Series(np.square(values[p : 2 * p]), index=fit.omega.index),
        residual=pd.Series(values[2 * p :], index=fit.residual.index),
    )


if __name__ == "__main__":
    sys.exit(main())
