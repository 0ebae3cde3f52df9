"""Time the real generator's shadow releases and their audit, and print what the audit finds.

Run from the repository's root::

    PYTHONPATH=$PWD .venv/bin/python benchmarks/bench_membership_real.py [replicates]

For each audited study it prints the seconds per shadow release (a run of the whole
generator, from ``replicates`` fresh ones, default 4, so the regeneration command's cost can be
foreseen), the seconds of the audit of the stored shadow releases at every rounding, and the
AUC ± SE and true-positive rate at 1 % false positives of each attack as released, with the
epsilon lower bound.
"""

import sys
import time

import pandas as pd

from synpmx_lite.attacks.audit import audit_shadows, pk_width
from synpmx_lite.attacks.shadow_releases import (
    RELEASE_LEVELS,
    SHADOW_REPLICATES,
    _shadow_arrays,
    shadow_releases,
    shadow_settings,
)


def main() -> None:
    fresh = int(sys.argv[1]) if len(sys.argv) > 1 else 4
    pd.set_option("display.width", 200)
    foreseen = 0.0
    for name, replicates in SHADOW_REPLICATES.items():
        settings = dict(shadow_settings(name, replicates=replicates), replicates=fresh)
        start = time.perf_counter()
        _shadow_arrays(settings, lambda done, total: None)
        per_release = (time.perf_counter() - start) / fresh
        foreseen += per_release * replicates
        stored = shadow_releases(name)
        start = time.perf_counter()
        audits = {
            level: audit_shadows(stored.arrays, level, pk_width=pk_width(name))
            for level in RELEASE_LEVELS
        }
        audit_seconds = time.perf_counter() - start
        print(
            f"\n{name}: {per_release:.2f} s a shadow release ({fresh} fresh, whole-study fit "
            f"included); audit of {replicates} stored at {len(RELEASE_LEVELS)} roundings "
            f"{audit_seconds:.2f} s; excluded {audits['1 figure'].excluded}"
        )
        table = audits["1 figure"].summary[["attack", "auc", "auc_se", "tpr_1", "epsilon"]]
        print(table.round(3).to_string(index=False))
    print(f"\nshadow_regeneration_foreseen_seconds: {foreseen:.0f}")


if __name__ == "__main__":
    main()
