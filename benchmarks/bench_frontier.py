"""Time the stored refits' regeneration at reduced settings and extrapolate to the defaults.

Run from the repository's root::

    PYTHONPATH=$PWD /work/venv/bin/python benchmarks/bench_frontier.py [draws ...]

``python -m synpmx_lite.generator.frontier`` computes every study's precision refits and, per
epsilon, ``dp_draws`` private releases with ``dp_replicates`` refits each, in
:data:`~synpmx_lite.generator.frontier.WORKERS` processes. Its cost is linear in the draws:
this script runs the default settings with a few small numbers of draws (default 0 and 1),
fits the line through their times and prints it at the default number of draws: the
wall-clock time, and the CPU time of this process and its workers over the number of workers,
which is what the wall-clock time would be on an idle machine with perfect balance (the
machine is shared; the load average is printed beside each run).
"""

import os
import resource
import sys
import time

import numpy as np

from synpmx_lite.generator.frontier import DEFAULT_SETTINGS, WORKERS, _work


def _cpu() -> float:
    """CPU seconds of this process and of its finished workers."""
    own, workers = (resource.getrusage(w) for w in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN))
    return own.ru_utime + own.ru_stime + workers.ru_utime + workers.ru_stime


def timed(draws: int) -> tuple[float, float]:
    """Wall-clock seconds, and CPU seconds over the workers, of the default settings with
    ``draws`` private releases per epsilon."""
    settings = {**DEFAULT_SETTINGS, "dp_draws": draws}
    started, cpu = time.perf_counter(), _cpu()
    _work(settings, workers=WORKERS)(lambda done, total: None)
    return time.perf_counter() - started, (_cpu() - cpu) / WORKERS


def main(draws: list[int]) -> None:
    times = []
    for d in draws:
        times.append(timed(d))
        wall, cpu = times[-1]
        print(
            f"dp_draws={d}: {wall:.0f} s wall, {cpu:.0f} s CPU per worker "
            f"(load {os.getloadavg()[0]:.1f})",
            flush=True,
        )
    full = DEFAULT_SETTINGS["dp_draws"]
    for label, seconds in zip(("wall", "CPU per worker"), zip(*times, strict=True), strict=True):
        slope, intercept = np.polyfit(draws, seconds, 1)
        print(
            f"{label}: {slope:.1f} s per draw, {intercept:.0f} s fixed; dp_draws={full} "
            f"(dp_replicates={DEFAULT_SETTINGS['dp_replicates']}, {WORKERS} workers) "
            f"~{intercept + slope * full:.0f} s"
        )


if __name__ == "__main__":
    main([int(a) for a in sys.argv[1:]] or [0, 1])
