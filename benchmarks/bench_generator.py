"""The whole generator's cost per patient at 100, 400, 1,600 and 6,400 simulated patients.

Each size is a one-compartment IV study simulated from the tests' hand-made fingerprint
(``tests.simulated.known_fingerprint``: CL and V with between-subject variability, combined
error, weight and sex, four samples), with the patients renumbered 101, 102, ...
(synthetic identifiers are refused as a source). The
generator runs end to end on it: :func:`synpmx_lite.generator.estimate.synpmx_model_estimate`
(the fit, each patient's influence readings, the rounds), then
:func:`~synpmx_lite.generator.estimate.model_fingerprint` (which runs the checks P4 and P5)
and :func:`synpmx_lite.generator.generate.synpmx_model_generate`. A flat cost per patient
means the generator is linear in the study's size. The ``again s`` column times a second
:func:`~synpmx_lite.generator.estimate.model_fingerprint` of the same fit, which returns a copy
of the release kept from the first (the checks and the chapters ask for it again); it is left
out of the total.

Run from the repository's root::

    PYTHONPATH=$PWD .venv/bin/python benchmarks/bench_generator.py [--sizes 100 400]
    PYTHONPATH=$PWD .venv/bin/python benchmarks/bench_generator.py --random cl

``--random cl`` fits a random effect on CL only: V is then a typical value without one,
whose moves the influence readings take from the infinitesimal jackknife (and exact refits
of the patients whose reading reaches half the review bar).

The last line, ``generator_cost_ratio_largest_over_smallest: X``, is the cost per patient of
the largest study over the smallest's (near 1: flat).
"""

import argparse
import sys
import time
import warnings

import pandas as pd

from synpmx_lite.generator.estimate import model_fingerprint, synpmx_model_estimate
from synpmx_lite.generator.generate import synpmx_model_generate
from tests.simulated import SIMULATED_ROLES, known_fingerprint

SIZES = (100, 400, 1600, 6400)


def source_study(n: int) -> pd.DataFrame:
    data = synpmx_model_generate(known_fingerprint(n), seed=n)
    number = {syn: 101 + i for i, syn in enumerate(data["id"].unique())}
    return data.assign(id=data["id"].map(number))


def timed(function, *arguments, **options):
    start, start_cpu = time.perf_counter(), time.process_time()
    result = function(*arguments, **options)
    return result, time.perf_counter() - start, time.process_time() - start_cpu


def run(n: int, random: list[str] | None = None) -> dict:
    data = source_study(n)
    fit, estimate_s, estimate_cpu = timed(
        synpmx_model_estimate, data, SIMULATED_ROLES, random=random
    )
    released, release_s, release_cpu = timed(model_fingerprint, fit)
    _, again_s, _ = timed(model_fingerprint, fit)  # the release kept: what the checks reuse
    _, generate_s, generate_cpu = timed(synpmx_model_generate, released, seed=1)
    cpu = estimate_cpu + release_cpu + generate_cpu
    return {
        "patients": n,
        "estimate s": estimate_s,
        "fingerprint s": release_s,
        "again s": again_s,
        "generate s": generate_s,
        "total CPU s": cpu,
        "CPU ms per patient": 1000 * cpu / n,
        "rounds": fit.privacy.left_out.rounds,
        "converged": fit.pk.converged,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=list(SIZES))
    parser.add_argument("--random", nargs="+", help="the parameters with a random effect")
    arguments = parser.parse_args()
    warnings.simplefilter("ignore")  # diagnostics are in the table
    rows = []
    for n in arguments.sizes:
        rows.append(run(n, arguments.random))
        print(pd.DataFrame(rows[-1:]).to_string(index=False, float_format=lambda v: f"{v:.3f}"))
    table = pd.DataFrame(rows).set_index("patients")
    print("\nThe whole generator (estimate, fingerprint with checks, generate):")
    print(table.to_string(float_format=lambda v: f"{v:.3f}"))
    per_patient = table["CPU ms per patient"]
    ratio = per_patient.iloc[-1] / per_patient.iloc[0]
    print(f"generator_cost_ratio_largest_over_smallest: {ratio:.3f}")


if __name__ == "__main__":
    sys.exit(main())
