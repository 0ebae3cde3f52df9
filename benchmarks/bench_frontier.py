"""Time the stored refits' regeneration at reduced settings and extrapolate to the defaults.

Run from the repository's root::

    PYTHONPATH=$PWD /work/venv/bin/python benchmarks/bench_frontier.py [draws ...]

``python -m synpmx_lite.generator.frontier`` computes every study's precision refits and, per
epsilon, ``dp_draws`` private releases with ``dp_replicates`` refits each, in
:data:`~synpmx_lite.generator.frontier.WORKERS` processes. Its cost is linear in the draws:
this script runs the default settings with a few small numbers of draws (default 1 and 3),
fits the line through their wall-clock times and prints it at the default number of draws.
The load average is printed beside it, since the machine is shared.
"""

import os
import sys
import time

import numpy as np

from synpmx_lite.generator.frontier import DEFAULT_SETTINGS, WORKERS, _work


def timed(draws: int) -> float:
    """Seconds to compute the default settings with ``draws`` private releases per epsilon."""
    settings = {**DEFAULT_SETTINGS, "dp_draws": draws}
    started = time.perf_counter()
    _work(settings, workers=WORKERS)(lambda done, total: None)
    return time.perf_counter() - started


def main(draws: list[int]) -> None:
    seconds = []
    for d in draws:
        seconds.append(timed(d))
        print(f"dp_draws={d}: {seconds[-1]:.0f} s (load {os.getloadavg()[0]:.1f})", flush=True)
    slope, intercept = np.polyfit(draws, seconds, 1)
    full = DEFAULT_SETTINGS["dp_draws"]
    print(
        f"per draw {slope:.1f} s, fixed {intercept:.0f} s: dp_draws={full} "
        f"(dp_replicates={DEFAULT_SETTINGS['dp_replicates']}, {WORKERS} workers) "
        f"~{intercept + slope * full:.0f} s"
    )


if __name__ == "__main__":
    main([int(a) for a in sys.argv[1:]] or [1, 3])
