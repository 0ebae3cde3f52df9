"""Beal's M3 beside M1 on simulated studies with a third of the concentrations censored.

Each replicate draws a one-compartment oral study (:func:`synpmx_lite.pmx.blq.simulate_blq_study`:
40 patients, 100 at time 0, eight samples to 36 h, typical CL 2, V 20, ka 1.2), censors every
concentration below the limit (1.5, about a third of them), and fits it twice under the
error model it was drawn with: by M3 (the censored rows enter as the probability of a value
below the limit) and by M1 (the censored rows discarded). It prints, per error model, the
share censored, each method's mean relative bias of every estimate with its Monte Carlo
standard error over the replicates, and how many fits converged.

Run from the repository's root::

    .venv/bin/python benchmarks/bench_m3.py                  # 50 replicates
    .venv/bin/python benchmarks/bench_m3.py --replicates 10  # quicker
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np
import pandas as pd

from synpmx_lite.pmx.blq import BLQ_TRUTH, compare_blq_methods
from synpmx_lite.pmx.population import FitWarning

_PATIENTS = 40
_LIMIT = 1.5


def bias_table(error: str, replicates: int) -> tuple[pd.DataFrame, float, dict]:
    """Mean relative bias (and its SE) of M3 and M1 over ``replicates`` seeded studies."""
    relative, shares, converged = [], [], {"M3": 0, "M1": 0}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FitWarning)
        for seed in range(replicates):
            run = compare_blq_methods(n=_PATIENTS, lloq=_LIMIT, error=error, rng=seed)
            estimates = run.estimates
            relative.append((estimates.loc[["M3", "M1"]] / estimates.loc["truth"] - 1).stack())
            shares.append(run.censored_share)
            for name, ok in run.converged.items():
                converged[name] += ok
    runs = pd.concat(relative, axis=1)
    table = pd.DataFrame(
        {"bias": runs.mean(axis=1), "se": runs.std(axis=1, ddof=1) / np.sqrt(replicates)}
    ).unstack(0)
    return table, float(np.mean(shares)), converged


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--replicates", type=int, default=50)
    replicates = parser.parse_args(argv).replicates
    print(f"{replicates} replicates of {_PATIENTS} patients, limit {_LIMIT}; relative bias (SE)")
    for error in BLQ_TRUTH["residual"]:
        start = time.perf_counter()
        table, share, converged = bias_table(error, replicates)
        seconds = time.perf_counter() - start
        shown = pd.DataFrame(
            {
                method: [
                    f"{bias:+.3f} ({se:.3f})"
                    for bias, se in zip(
                        table[("bias", method)], table[("se", method)], strict=True
                    )
                ]
                for method in ("M3", "M1")
            },
            index=table.index,
        )
        print(
            f"\n{error} error: {100 * share:.1f} % censored; converged M3 {converged['M3']}, "
            f"M1 {converged['M1']} of {replicates}; {seconds:.1f} s"
        )
        print(shown.to_string())


if __name__ == "__main__":
    main()
