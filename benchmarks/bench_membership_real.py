"""Time ``generator_membership_attack()`` on the public studies, and print what it finds.

Run from the repository's root::

    PYTHONPATH=$PWD .venv/bin/python benchmarks/bench_membership_real.py [replicates ...]

With no arguments each study runs at the membership chapter's replicate counts. For each study
it prints the seconds of the whole attack (median of ``REPEATS`` runs after a warm-up on the
smallest study), the seconds per replicate (one run of the generator: fit, influence rounds,
fingerprint), and the AUC ± SE and true-positive rates of every release, reference and score.
"""

import statistics
import sys
import time

import pandas as pd

from synpmx_lite import generator_membership_attack

#: The chapter's replicate counts (book/membership_inference.md, REAL_REPLICATES).
REPLICATES = {"warfarin": 30, "pheno_sd": 30, "mavoglurant": 20}
REPEATS = 3
SEED = 20261002


def main() -> None:
    counts = dict(REPLICATES)
    if len(sys.argv) > 1:
        counts = dict(zip(REPLICATES, map(int, sys.argv[1:]), strict=False))
    generator_membership_attack("warfarin", replicates=4, seed=SEED)  # warm-up
    pd.set_option("display.width", 200)
    total = 0.0
    for name, replicates in counts.items():
        seconds = []
        for _ in range(REPEATS if replicates <= 20 else 1):
            start = time.perf_counter()
            attack = generator_membership_attack(name, replicates=replicates, seed=SEED)
            seconds.append(time.perf_counter() - start)
        median = statistics.median(seconds)
        total += median
        print(
            f"\n{name}: {attack.patients} patients, {attack.members} per cohort, "
            f"{replicates} replicates: {median:.2f} s ({median / replicates:.3f} s a replicate; "
            f"runs {', '.join(f'{s:.2f}' for s in seconds)})"
        )
        print(
            f"  shares scored {attack.shares}, random effects {attack.random_effects}, "
            f"left out per cohort {attack.left_out:.2f}, fits flagged {attack.unconverged}"
        )
        print(attack.summary.round(3).to_string(index=False))
        print(attack.rounding_change.round(4).to_string(index=False))
    print(f"\nmembership_real_seconds: {total:.2f}")


if __name__ == "__main__":
    main()
