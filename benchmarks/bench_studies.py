"""The cost of the chapters' slowest common step: every shipped study fitted, released and checked.

The privacy chapter's across-studies table and the utility chapter both fit each shipped study
with :func:`synpmx_lite.generator.estimate.synpmx_model_estimate` (the fit, the PD models, each
patient's influence readings and the rounds), and release it with
:func:`~synpmx_lite.generator.estimate.model_fingerprint`, which runs the checks on the draft;
:func:`~synpmx_lite.generator.estimate.model_privacy_checks` runs them again on the release as it
leaves. This script times the three per study, CPU and wall clock, in one process.

Run from the repository's root::

    .venv/bin/python benchmarks/bench_studies.py
    .venv/bin/python benchmarks/bench_studies.py --studies warfarin pkpd_sim

To compare two versions of the package, run it with each on ``PYTHONPATH`` (a ``git worktree``
of the other commit), one after the other on an idle machine. The last line is
``studies_cpu_seconds: X``, the CPU seconds of every study together.
"""

import argparse
import time
import warnings

import pandas as pd

from synpmx_lite.generator.estimate import (
    model_fingerprint,
    model_privacy_checks,
    release_refusal,
    synpmx_model_estimate,
)
from synpmx_lite.pmx.study import DATASETS, load_dataset, prepare_study

SEED = 1  # the chapters' estimation seed


def timed_study(name: str) -> dict | None:
    """One study's seconds (CPU and wall) to fit, release and check; None if it is refused."""
    data, roles = load_dataset(name)
    if release_refusal(prepare_study(data, roles)) is not None:
        return None
    row = {"study": name}
    start_cpu, start = time.process_time(), time.perf_counter()
    fit = synpmx_model_estimate(data, roles, seed=SEED)
    row["estimate s"] = time.process_time() - start_cpu
    model_fingerprint(fit)
    row["fingerprint s"] = time.process_time() - start_cpu - row["estimate s"]
    model_privacy_checks(fit)
    row["checks s"] = time.process_time() - start_cpu - row["estimate s"] - row["fingerprint s"]
    row["CPU s"] = time.process_time() - start_cpu
    row["wall s"] = time.perf_counter() - start
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--studies", nargs="+", default=list(DATASETS), choices=list(DATASETS))
    arguments = parser.parse_args()
    warnings.simplefilter("ignore")  # fit diagnostics are the chapters' concern, not the clock's
    rows = [row for name in arguments.studies if (row := timed_study(name)) is not None]
    table = pd.DataFrame(rows).set_index("study")
    print(table.round(2).to_string())
    print(f"studies_cpu_seconds: {table['CPU s'].sum():.1f}")


if __name__ == "__main__":
    main()
